"""The cocotb regressions of the datapath, the controller and the AXI4 reducer, under each
simulator and configuration (:mod:`bench.configs`; the full-size ones in the slow tier); the
tests themselves are in ``cocotb_datapath.py``, ``cocotb_controller.py`` and
``cocotb_reducer.py`` beside this file."""

import pytest

from bench.configs import CONTROLLER_CONFIGS, DATAPATH_CONFIGS, tiered
from bench.simulators import SIMULATORS, run_regression


@pytest.mark.cocotb
@pytest.mark.parametrize("params", tiered(DATAPATH_CONFIGS))
@pytest.mark.parametrize("simulator", SIMULATORS)
def test_datapath(simulator, params):
    run_regression(simulator, "datapath", params, "verif.hdl.cocotb_datapath",
                   knobs={"NF_RANDOM_LINES": "200"})


@pytest.mark.cocotb
@pytest.mark.parametrize("params", tiered(CONTROLLER_CONFIGS))
@pytest.mark.parametrize("simulator", SIMULATORS)
def test_controller(simulator, params):
    run_regression(simulator, "controller", params, "verif.hdl.cocotb_controller",
                   knobs={"NF_SYSTEM_LINES": None, "NF_IDENTITY_OPS": None})


@pytest.mark.cocotb
@pytest.mark.parametrize("params", tiered(CONTROLLER_CONFIGS))
@pytest.mark.parametrize("simulator", SIMULATORS)
def test_axi_reducer(simulator, params):
    run_regression(simulator, "axi_reducer", params, "verif.hdl.cocotb_reducer",
                   knobs={"NF_REDUCER_LINES": "16"})
