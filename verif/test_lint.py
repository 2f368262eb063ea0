"""The generated Verilog passes ``verilator --lint-only -Wall`` with only the waivers in
``verif/lint/waivers.vlt``."""

import subprocess

import pytest

from amaranth.back import verilog as amaranth_verilog

from hdl.control import ControlRegisters
from hdl.decode import AddressDecoder
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


@pytest.mark.parametrize("component", [ControlRegisters, AddressDecoder],
                         ids=lambda c: c.__name__)
def test_controller_parts_lint_clean(component):
    path = BUILD / "lint" / f"{component.__name__}.v"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(amaranth_verilog.convert(component(ControllerParams()),
                                             name=component.__name__, emit_src=False))
    lint(path)
