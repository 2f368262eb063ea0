"""The cocotb regressions of the datapath, the controller and the AXI4 reducer, under each
simulator and configuration (:mod:`bench.configs`; the full-size ones in the slow tier); the
tests themselves are in ``cocotb_datapath.py``, ``cocotb_controller.py`` and
``cocotb_reducer.py`` beside this file."""

import re
import xml.etree.ElementTree as ET

import pytest

from bench.configs import CONTROLLER_CONFIGS, DATAPATH_CONFIGS, full_size, tiered
from bench.controller_bench import TRAFFIC
from bench.simulators import SIMULATORS, run_regression

#: The controller's cocotb tests that Icarus runs at full size. Icarus simulates the 512-bit
#: controller tens of times slower than Verilator (the ``time`` of each test in the two
#: simulators' ``results.xml``), and the whole regression there would take most of CI's hour.
#: So at full size Icarus runs the system test under random traffic (host idle, backpressure
#: and memory latency at once), the bad-input outcomes, one line hammered and the flushes;
#: Verilator runs every test at full size, and both simulators run every test at the small
#: configuration. (cocotb names a parameter longer than ten characters by its index.)
ICARUS_FULL_SIZE = (
    f"system_vs_golden/traffic={list(TRAFFIC).index('everything_random')}",
    "bad_input_outcomes",
    "hammer_one_line",
    "flush_writes_exact_accumulators",
)


def _selection(names):
    """A cocotb test filter that picks the tests ``names`` (a name without ``/`` takes every
    parameter of that test)."""
    return "|".join(rf"\.{re.escape(name)}(/|$)" for name in names)


def _ran(results):
    """The names of the cocotb tests in the JUnit file ``results``."""
    return [case.get("name") for case in ET.parse(results).getroot().iter("testcase")]


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
    chosen = simulator == "icarus" and full_size(params)
    results = run_regression(simulator, "controller", params, "verif.hdl.cocotb_controller",
                             knobs={"NF_SYSTEM_LINES": None, "NF_IDENTITY_OPS": None},
                             test_filter=_selection(ICARUS_FULL_SIZE) if chosen else None)
    if chosen:
        ran = _ran(results)
        missing = [n for n in ICARUS_FULL_SIZE if not any(re.match(rf"{re.escape(n)}(/|$)", r)
                                                         for r in ran)]
        assert not missing, f"{simulator} {params.name}: {missing} did not run (ran {ran})"


@pytest.mark.cocotb
@pytest.mark.parametrize("params", tiered(CONTROLLER_CONFIGS))
@pytest.mark.parametrize("simulator", SIMULATORS)
def test_axi_reducer(simulator, params):
    run_regression(simulator, "axi_reducer", params, "verif.hdl.cocotb_reducer",
                   knobs={"NF_REDUCER_LINES": "16"})
