"""The cocotb regressions of the datapath and of the controller, under each simulator and
configuration (:mod:`bench.configs`); the tests themselves are in ``cocotb_datapath.py`` and
``cocotb_controller.py`` beside this file."""

import pytest

from bench.configs import CONTROLLER_CONFIGS, DATAPATH_CONFIGS
from bench.simulators import SIMULATORS, run_regression
from hdl.generate import CONTROLLER_TOP, DATAPATH_TOP, write_controller, write_datapath


@pytest.mark.cocotb
@pytest.mark.parametrize("params", DATAPATH_CONFIGS, ids=lambda p: p.name)
@pytest.mark.parametrize("simulator", SIMULATORS)
def test_datapath(simulator, params):
    run_regression(simulator, "datapath", params, write_datapath, DATAPATH_TOP,
                   "verif.hdl.cocotb_datapath", knobs={"NF_RANDOM_LINES": "200"})


@pytest.mark.cocotb
@pytest.mark.parametrize("params", CONTROLLER_CONFIGS, ids=lambda p: p.name)
@pytest.mark.parametrize("simulator", SIMULATORS)
def test_controller(simulator, params):
    run_regression(simulator, "controller", params, write_controller, CONTROLLER_TOP,
                   "verif.hdl.cocotb_controller",
                   knobs={"NF_SYSTEM_LINES": None, "NF_SYSTEM_CONTRIBUTIONS": None,
                          "NF_IDENTITY_OPS": None})
