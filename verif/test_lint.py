"""The generated Verilog passes ``verilator --lint-only -Wall`` with only the waivers in
``verif/lint/waivers.vlt``."""

import subprocess

import pytest

from hdl.generate import write_datapath
from hdl.params import DatapathParams
from verif.simulators import BUILD, LINT_WAIVERS


@pytest.mark.parametrize("params", [DatapathParams(),
                                    DatapathParams(line_bits=128, counter_width=5, latency=2),
                                    DatapathParams(line_bits=16, counter_width=1, latency=1)],
                         ids=lambda p: p.name)
def test_datapath_lints_clean(params):
    verilog = write_datapath(params, BUILD / "lint" / params.name)
    result = subprocess.run(["verilator", "--lint-only", "-Wall", str(LINT_WAIVERS),
                             str(verilog)], capture_output=True, text=True)
    findings = [line for line in result.stderr.splitlines() if line.startswith("%")]
    assert result.returncode == 0 and not findings, \
        f"{verilog}: verilator lint reported:\n" + "\n".join(findings[:30])
