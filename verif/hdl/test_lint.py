"""The generated Verilog passes ``verilator --lint-only -Wall`` with only the waivers in
``hdl/waivers.vlt``."""

import subprocess

import pytest

from bench import builds
from bench.configs import CONTROLLER_CONFIGS, tiered
from bench.simulators import LINT_WAIVERS
from spec.params import DatapathParams


def lint(path):
    result = subprocess.run(["verilator", "--lint-only", "-Wall", str(LINT_WAIVERS), str(path)],
                            capture_output=True, text=True)
    findings = [line for line in result.stderr.splitlines() if line.startswith("%")]
    assert result.returncode == 0 and not findings, \
        f"{path}: verilator lint reported:\n" + "\n".join(findings[:30])


@pytest.mark.parametrize("params", tiered([DatapathParams(),
                                           DatapathParams(line_bits=128, counter_width=5,
                                                          latency=2),
                                           DatapathParams(line_bits=16, counter_width=1,
                                                          latency=1)]))
def test_datapath_lints_clean(params):
    lint(builds.verilog("datapath", params))


@pytest.mark.parametrize("params", tiered(CONTROLLER_CONFIGS))
@pytest.mark.parametrize("design", ["controller", "axi_reducer"])
def test_controller_lints_clean(design, params):
    lint(builds.verilog(design, params))
