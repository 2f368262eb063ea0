"""The controller's cocotb system regression under each simulator and configuration."""

import os

import pytest

from hdl.generate import CONTROLLER_TOP, write_controller
from hdl.params import ControllerParams, DatapathParams
from verif.simulators import BUILD, SIMULATORS, run_cocotb

CONFIGS = [
    ControllerParams(),                                                  # the default
    ControllerParams(DatapathParams(line_bits=64, counter_width=2, latency=1), regions=4,
                     address_bits=32, queue_depth=4, slots=4),
]


@pytest.mark.cocotb
@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: p.name)
@pytest.mark.parametrize("simulator", SIMULATORS)
def test_controller(simulator, params):
    out = BUILD / "sim" / "controller" / params.name / simulator
    verilog = write_controller(params, out / "rtl")
    run_cocotb(simulator, sources=[verilog], top=CONTROLLER_TOP,
               test_module="verif.cocotb_controller", build_dir=out,
               extra_env={"NF_FACTS": str(out / "rtl" / f"{CONTROLLER_TOP}.json"),
                          **{name: os.environ[name] for name in
                             ("NF_SYSTEM_LINES", "NF_IDENTITY_OPS") if name in os.environ}})
