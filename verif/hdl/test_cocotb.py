"""The cocotb regressions of the datapath, the controller and the AXI4 reducer, under each
simulator and configuration (:mod:`bench.configs`); the quick tier runs each design's small
configurations on one simulator (:data:`QUICK_SIMULATOR`), the slow tier every other pairing.
The tests themselves are in ``cocotb_datapath.py``, ``cocotb_controller.py`` and
``cocotb_reducer.py`` beside this file."""

import re
import xml.etree.ElementTree as ET

import pytest

from bench.configs import CONTROLLER_CONFIGS, DATAPATH_CONFIGS, full_size
from bench.controller_bench import TRAFFIC
from bench.simulators import SIMULATORS, env_flag, run_regression

#: Random traffic's parameter in a cocotb test name (cocotb names a parameter longer than
#: ten characters by its index).
_RANDOM = f"traffic={list(TRAFFIC).index('everything_random')}"

#: The cocotb tests that Icarus runs at full size, by design. Icarus simulates the 512-bit
#: controller tens of times slower than Verilator (the ``time`` of each test in the two
#: simulators' ``results.xml``), and the whole regressions there would take most of CI's
#: hour. So at full size Icarus runs the system test under random traffic (host idle,
#: backpressure and memory latency at once), the bad-input outcomes and a flush; Verilator
#: runs every test at full size, and both simulators every test at the small configuration.
#: ``NF_ICARUS_ALL=1`` runs every test on Icarus at full size too.
ICARUS_FULL_SIZE = {
    "controller": (f"system_vs_golden/{_RANDOM}", "bad_input_outcomes",
                   "flush_writes_exact_accumulators/traffic=1"),     # everything_random
    "axi_reducer": (f"reducer_against_golden/{_RANDOM}", "bursts_it_does_not_serve_are_refused"),
}


#: The simulator that runs each design's small configurations in the quick tier (``make
#: test``). A simulator build takes most of a small regression's time, and a Verilator build
#: of a design several times an Icarus one; so the quick tier builds one Verilator model, the
#: controller's, and runs the other designs on Icarus. The slow tier (``make test-all``) runs
#: every design on both simulators at every configuration.
QUICK_SIMULATOR = {"datapath": "icarus", "controller": "verilator", "axi_reducer": "icarus"}


def runs(design, configs):
    """``(simulator, params)`` pytest parameters of ``design``'s regressions: each simulator
    at each of ``configs``, named ``<simulator>-<config>``; marked ``slow`` unless
    ``params`` is small and ``simulator`` is the design's :data:`QUICK_SIMULATOR`."""
    return [pytest.param(simulator, params, id=f"{simulator}-{params.name}",
                         marks=[pytest.mark.slow]
                         if full_size(params) or simulator != QUICK_SIMULATOR[design] else [])
            for params in configs for simulator in SIMULATORS]


def _named(name):
    """A pattern of the cocotb test ``name``, or of each parameter of it (no ``/``)."""
    return rf"{re.escape(name)}(/|$)"


def _selection(names):
    """A cocotb test filter (of full names) that picks the tests ``names``."""
    return "|".join(rf"\.{_named(name)}" for name in names)


def _ran(results):
    """The names of the cocotb tests in the JUnit file ``results``."""
    return [case.get("name") for case in ET.parse(results).getroot().iter("testcase")]


@pytest.mark.cocotb
@pytest.mark.parametrize(("simulator", "params"), runs("datapath", DATAPATH_CONFIGS))
def test_datapath(simulator, params):
    run_regression(simulator, "datapath", params, "verif.hdl.cocotb_datapath",
                   knobs={"NF_RANDOM_LINES": "200"})


def _regression(simulator, design, params, test_module, knobs):
    """Run ``design``'s regression; Icarus at full size runs :data:`ICARUS_FULL_SIZE` only
    (unless ``NF_ICARUS_ALL`` is set and not ``0``), and each of them must have run."""
    chosen = ICARUS_FULL_SIZE[design] \
        if simulator == "icarus" and full_size(params) and not env_flag("NF_ICARUS_ALL") \
        else None
    results = run_regression(simulator, design, params, test_module, knobs=knobs,
                             test_filter=chosen and _selection(chosen))
    if chosen:
        ran = _ran(results)
        missing = [n for n in chosen if not any(re.match(_named(n), r) for r in ran)]
        assert not missing, f"{simulator} {params.name}: {missing} did not run (ran {ran})"


@pytest.mark.cocotb
@pytest.mark.parametrize(("simulator", "params"), runs("controller", CONTROLLER_CONFIGS))
def test_controller(simulator, params):
    _regression(simulator, "controller", params, "verif.hdl.cocotb_controller",
                {"NF_SYSTEM_LINES": None, "NF_IDENTITY_OPS": None})


@pytest.mark.cocotb
@pytest.mark.parametrize(("simulator", "params"), runs("axi_reducer", CONTROLLER_CONFIGS))
def test_axi_reducer(simulator, params):
    _regression(simulator, "axi_reducer", params, "verif.hdl.cocotb_reducer",
                {"NF_REDUCER_LINES": "16"})
