"""The datapath's cocotb regression under each simulator and configuration."""

import os

import pytest

from hdl.generate import DATAPATH_TOP, write_datapath
from hdl.params import DatapathParams
from verif.simulators import BUILD, SIMULATORS, run_cocotb

CONFIGS = [
    DatapathParams(),                                           # the default: L512_W4_D5
    DatapathParams(line_bits=128, counter_width=3, latency=2),
    DatapathParams(line_bits=64, counter_width=5, latency=1),
]


@pytest.mark.cocotb
@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: p.name)
@pytest.mark.parametrize("simulator", SIMULATORS)
def test_datapath(simulator, params):
    out = BUILD / "sim" / "datapath" / params.name / simulator
    verilog = write_datapath(params, out / "rtl")
    run_cocotb(simulator, sources=[verilog], top=DATAPATH_TOP,
               test_module="verif.cocotb_datapath", build_dir=out,
               extra_env={"NF_FACTS": str(out / "rtl" / f"{DATAPATH_TOP}.json"),
                          "NF_RANDOM_LINES": os.environ.get("NF_RANDOM_LINES", "200")})
