"""The generated Verilog passes ``verilator --lint-only -Wall`` with only the waivers in
``verif/lint/waivers.vlt``."""

import subprocess

import pytest

from amaranth.back import verilog as amaranth_verilog

from hdl.control import ControlRegisters
from hdl.generate import write_datapath
from hdl.params import ControllerParams, DatapathParams
from verif.simulators import BUILD, LINT_WAIVERS


def lint(path):
    result = subprocess.run(["verilator", "--lint-only", "-Wall", str(LINT_WAIVERS), str(path)],
                            capture_output=True, text=True)
    findings = [line for line in result.stderr.splitlines() if line.startswith("%")]
    assert result.returncode == 0 and not findings, \
        f"{path}: verilator lint reported:\n" + "\n".join(findings[:30])


@pytest.mark.parametrize("params", [DatapathParams(),
                                    DatapathParams(line_bits=128, counter_width=5, latency=2),
                                    DatapathParams(line_bits=16, counter_width=1, latency=1)],
                         ids=lambda p: p.name)
def test_datapath_lints_clean(params):
    lint(write_datapath(params, BUILD / "lint" / params.name))


def test_control_registers_lint_clean():
    path = BUILD / "lint" / "nf_control_registers.v"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(amaranth_verilog.convert(ControlRegisters(ControllerParams()),
                                             name="nf_control_registers", emit_src=False))
    lint(path)
