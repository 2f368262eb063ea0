"""The catalogue: every property, the design and configuration it is checked on, how, and the
mutation that must break it; and the two runs, :func:`check_property` and
:func:`check_mutation`.

Configurations are small (short lines, small ``W``, few regions) so that the solver finishes;
every width, latency, lane count and register of a harness is read from the configuration and
the design, so a property is stated once for every configuration. Depths are derived from the
designs' own latencies:

- datapath properties: k-induction of depth ``latency + 2`` (the pipeline holds nothing older
  than ``latency`` clocks, so the induction closes);
- lock and W1C: k-induction of depth ``WRITE_LATENCY + 2`` (a bus write lands
  ``WRITE_LATENCY`` clocks after its strobe);
- APPLY: bounded, ``apply_cycles`` plus ``APPLY_MARGIN`` clocks from reset: every trace in which
  up to about ``APPLY_MARGIN`` clocks of register writes are followed by a whole APPLY;
- the controller's responder: bounded, ``RESPONDER_DEPTH`` clocks;
- the whole controller at its ports (:mod:`formal.controller`): bounded, at the depths of
  ``PORT_DEPTHS``: deep enough for its mutation's counterexample, shallow enough for the
  solver (with a free host, its time per clock roughly triples each clock beyond 15 on the
  whole controller; a harness may narrow the host to go deeper);
- the slot pool at its ports (:mod:`formal.slots`): bounded, at the depths of
  ``POOL_DEPTHS``.

``fast`` properties (and their mutations) run in ``make test``, a few minutes in all; the rest
only in ``make formal``.
"""

import gc
import warnings
from dataclasses import dataclass
from pathlib import Path

from amaranth.hdl import UnusedElaboratable

from hdl.control import ControlRegisters
from hdl.csr import WRITE_LATENCY
from hdl.slots import PoolSlice
from spec.params import ControllerParams, DatapathParams

from .controller import EveryRequestAnsweredOnce, IdentityWriteChangesOnlyItsLine
from .datapath import DATAPATH_PROPERTIES
from .mutations import MUTATIONS
from .registers import (
    ApplyInstallsOnlyValidTables,
    FlagsClearOnlyWhereWrittenOne,
    LockKeepsRegionsReadOnly,
    RejectedApplyKeepsTable,
)
from .responder import ResponsesOncePerCompletionInOrder
from .sby import Check, prepare, solve
from .slots import LineCountExactThroughEvictions, ReadReflectsEveryContribution

__all__ = ["DATAPATH_CONFIGS", "CONTROLLER_CONFIGS", "APPLY_MARGIN", "RESPONDER_DEPTH",
           "PORT_CONFIG", "PORT_DEPTHS", "POOL_DEPTHS",
           "Property", "PROPERTIES",
           "prepare_property", "prepare_mutation", "check_property", "check_mutation"]

#: Datapath configurations: the shortest line at two counter widths, the deepest and a short
#: pipeline.
DATAPATH_CONFIGS = (DatapathParams(line_bits=16, counter_width=2, latency=5),
                    DatapathParams(line_bits=16, counter_width=3, latency=2))

#: The control registers' configurations, at the shortest controller line and a 16-bit address
#: space: one region (the APPLY with a single region step; the generated Verilog once missed its
#: staged values, :func:`hdl.pipeline.register_selected`) and two (the fewest with region
#: pairs to check).
CONTROLLER_CONFIGS = tuple(
    ControllerParams(DatapathParams(line_bits=32, counter_width=2, latency=1), regions=regions,
                     address_bits=16, slots=2) for regions in (1, 2))

#: Clocks an APPLY check runs beyond one whole APPLY: time to program the registers first.
APPLY_MARGIN = 14

#: The engine of every check (:mod:`formal.sby`).
ENGINE = "smtbmc boolector"


@dataclass(frozen=True)
class Property:
    """A property harness class at one configuration: ``check`` for the design, ``mutant``
    for its mutation (a bounded check deep enough for the mutation's counterexample);
    ``fast`` ones run in ``make test``."""

    harness: type
    params: object
    check: Check
    mutant: Check
    fast: bool

    @property
    def name(self):
        return f"{self.harness.__name__}_{self.params.name}"

    @property
    def statement(self):
        """The property, in words: its harness's docstring, on one line, in Markdown."""
        return " ".join(self.harness.__doc__.split()).replace("``", "`")

    @property
    def design(self):
        """The class name of the design under test."""
        return self.harness.design.__name__

    @property
    def mutation(self):
        return MUTATIONS[self.harness.__name__]


def _datapath_properties():
    for index, params in enumerate(DATAPATH_CONFIGS):
        depth = params.latency + 2
        for harness in DATAPATH_PROPERTIES:
            yield Property(harness, params, Check("prove", depth, ENGINE),
                           Check("bmc", depth, ENGINE), fast=index == 0)


def _apply_cycles(params):
    """``ControlRegisters.apply_cycles`` of ``params``, from a design built only to ask it (and
    collected at once, without the warning that it was never elaborated)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        cycles = ControlRegisters(params).apply_cycles
        gc.collect()
    return cycles


def _register_properties():
    write = Check("prove", WRITE_LATENCY + 2, ENGINE)
    # A write of the lock, then a write of a region register after it: two write latencies.
    written_twice = Check("bmc", 2 * WRITE_LATENCY + 3, ENGINE)
    for harness in (FlagsClearOnlyWhereWrittenOne, LockKeepsRegionsReadOnly):
        yield Property(harness, CONTROLLER_CONFIGS[-1], write, written_twice, fast=True)
    for index, params in enumerate(CONTROLLER_CONFIGS):
        apply = Check("bmc", _apply_cycles(params) + APPLY_MARGIN, ENGINE)
        # Every installed table takes minutes at one region; at two, whose APPLY is three times
        # as long, the solver had not finished in an hour.
        if index == 0:
            yield Property(ApplyInstallsOnlyValidTables, params, apply, apply, fast=False)
        yield Property(RejectedApplyKeepsTable, params, apply, apply, fast=index == 0)


#: Clocks of the responder's bounded check: up to that many completions queued and answered
#: in any order of backpressure (the solver's time grows fast beyond it).
RESPONDER_DEPTH = 12


def _controller_properties():
    check = Check("bmc", RESPONDER_DEPTH, ENGINE)
    yield Property(ResponsesOncePerCompletionInOrder, CONTROLLER_CONFIGS[0], check, check,
                   fast=False)


#: The whole controller's configuration at its ports: the shortest controller line, ``W`` = 2
#: (three contributions per line), one region, two slots (the harnesses' region has
#: ``formal.controller.REGION_LINES`` lines, so lines share slots), the shallowest ingress
#: queues, and the two AXI IDs the controller uses.
PORT_CONFIG = ControllerParams(DatapathParams(line_bits=32, counter_width=2, latency=1),
                               regions=1, address_bits=16, slots=2, queue_depth=2,
                               axi_id_bits=1)

#: ``(depth, fast)`` of each port property: a bounded check of that many clocks from reset, of
#: the property and of its mutation. A request needs about 8 clocks from M2S to dispatch
#: (ingress, the decoder's 5 steps, the decoded queue) and at least 4 more to its response,
#: so the first responses leave at clock 12: a MemInv never answered while one taken after it
#: is shows at clock 13. An identity write to the line before a read's shows only once it is
#: in memory, which takes it across the whole controller (the memory port's record of its
#: take, ``AxiMemoryPort.TAKE_LAG``, among the clocks), and the read's beat has come back
#: behind it: clock 22, so a depth of 23 (``verif/formal/test_formal.py`` simulates that
#: race and fails when a lag moves it beyond this depth). The solver's time per clock
#: roughly triples each clock beyond 15 on the whole controller with a free host; the
#: identity property's narrower host keeps it to a minute or two a clock.
PORT_DEPTHS = {
    EveryRequestAnsweredOnce: (15, True),
    IdentityWriteChangesOnlyItsLine: (23, False),
}


#: ``(depth, fast)`` of each slot pool property (:mod:`formal.slots`), at ``PORT_CONFIG``: a
#: bounded check of that many clocks from reset, of the property and of its mutation. The
#: pool moves its first op into T0 at clock 8 (after its scan of the slots), a miss fills and
#: installs it by about clock 14 (an install then empties T1 for a clock), a read right
#: behind it is answered at about clock 19, ``PoolSlice.RESULT_WRITE_LAG`` clocks more (the
#: result queue is written that late; the read property's depth counts them, so that the
#: answer stays in reach: ``verif/formal/test_formal.py`` simulates that race and fails when
#: it moves), and an eviction of it is in memory with the pool idle about a clock later.
#: The solver's time per clock roughly triples beyond 17, and a read's answer (every lane
#: against the reference) costs it more than a count: these are the depths each finishes in
#: minutes. A second miss of the same line (about 10 clocks more) is out of reach.
POOL_DEPTHS = {
    LineCountExactThroughEvictions: (20, False),
    ReadReflectsEveryContribution: (20 + PoolSlice.RESULT_WRITE_LAG, False),
}


def _port_properties():
    for harness, (depth, fast) in (*PORT_DEPTHS.items(), *POOL_DEPTHS.items()):
        check = Check("bmc", depth, ENGINE)
        yield Property(harness, PORT_CONFIG, check, check, fast=fast)


#: Every property, in report order.
PROPERTIES = (*_datapath_properties(), *_register_properties(), *_controller_properties(),
              *_port_properties())


def prepare_property(prop, build):
    """Write the check of ``prop`` on its design into ``<build>/formal/<name>/``, for
    :func:`formal.sby.solve`; returns the folder."""
    return prepare(prop.harness(prop.params), prop.check, Path(build) / "formal" / prop.name)


def prepare_mutation(prop, build):
    """Write the check of ``prop`` on its mutation into
    ``<build>/formal/<name>--<mutation>/``, for :func:`formal.sby.solve`; returns the folder.
    The mutation is applied while its harness is elaborated, here, and only then."""
    folder = Path(build) / "formal" / f"{prop.name}--{prop.mutation.name}"
    with prop.mutation.applied():
        return prepare(prop.harness(prop.params), prop.mutant, folder)


def check_property(prop, build):
    """Check ``prop`` on its design in ``<build>/formal/<name>/``."""
    return solve(prepare_property(prop, build))


def check_mutation(prop, build):
    """Check ``prop`` on its mutation in ``<build>/formal/<name>--<mutation>/``: it must
    fail."""
    return solve(prepare_mutation(prop, build))
