"""Deliberately broken variants of the designs: each property must fail on its mutation.

A mutation replaces one small definition of a design's module (a method, a constant, a stage
class) while the harness is converted to RTLIL, and restores it afterwards: the design under
test is the real one with one fault, and nothing in ``hdl/`` exists for the proofs' sake.
Each mutation is a context manager factory (:attr:`Mutation.applied`).
"""

from contextlib import contextmanager
from dataclasses import dataclass
from unittest import mock

from amaranth import Cat, Const, Mux

import hdl.control
import hdl.controller
import hdl.csr
import hdl.datapath
import hdl.slots
from hdl.axi import AxiMemoryPort
from hdl.control import ControlRegisters
from hdl.csr import RegisterBlock
from hdl.datapath import Add, Decode, Select
from hdl.dispatch import ROUTES, route_of
from hdl.pipeline import PipelineRegister
from hdl.responder import Responder
from hdl.slot_ops import SlotOp
from hdl.slot_update import SlotUpdate
from spec.params import TERNARY_MINUS
from spec.regmap import Access

__all__ = ["Mutation", "MUTATIONS"]


@dataclass(frozen=True)
class Mutation:
    """A broken variant: ``name``, what is broken (``fault``), and the replacement
    (``target``'s attribute ``attribute`` becomes ``replacement``; a dict ``target`` takes
    ``replacement``, a dict, into it)."""

    name: str
    fault: str
    target: object
    attribute: str | None
    replacement: object

    @contextmanager
    def applied(self):
        """The design's module with the fault in it, for the duration of the block."""
        if self.attribute is None:
            with mock.patch.dict(self.target, self.replacement):
                yield
        else:
            with mock.patch.object(self.target, self.attribute, self.replacement):
                yield


_decide = Decode._decide


def _decide_as_if_not_full(self, *, n, **inputs):
    # A line at capacity is decided as if one short of it: the contribution is taken, n wraps.
    capacity = self._params.capacity
    return _decide(self, n=Mux(n == capacity, capacity - 1, n), **inputs)


_add_compute = Add.compute


def _add_counting_twice(self, m, work, out):
    _add_compute(self, m, work, out)
    with m.If(self._controls(work)[0].add):
        m.d.comb += out.state.n.eq(work.state.n + 2)


_select_compute = Select.compute


def _select_setting_byte_enable_0(self, m, verdict, out):
    _select_compute(self, m, verdict, out)
    m.d.comb += out.byte_enable[0].eq(1)


def _gate_without_sign(bounds):
    # s <= -T reads +1 (01) instead of -1 (11).
    return Cat(Cat(~bounds[k] | bounds[k + 1], Const(0, 1)) for k in range(0, len(bounds), 2))


class _DroppingRegister(PipelineRegister):
    """A pipeline register that loses the second of two back-to-back requests."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.sync += self.source.valid.eq(self.sink.valid & ~self.source.valid)
        return m


class _UnlockedBlock(RegisterBlock):
    """A register block that takes a lock field and ignores it."""

    def __init__(self, regmap, *, lock=None, table=None):
        super().__init__(regmap, table=table)


def _clear_on_any_write(m, value, bits, hit, set_strobe):
    with m.If(set_strobe):
        m.d.sync += value.eq(1)
    with m.Elif(hit):
        m.d.sync += value.eq(0)


_first_fault = ControlRegisters._first_fault


def _first_fault_but_mode(m, fault, checks):
    # The first check of a region (its mode) is never reported.
    _first_fault(m, fault, checks[1:])


_elaborate_apply = ControlRegisters._elaborate_apply


def _elaborate_apply_dropping_region_0(self, m, block, cfg_error_event):
    _elaborate_apply(self, m, block, cfg_error_event)
    with m.If(cfg_error_event):
        region = self.regions[0]
        m.d.sync += region.enable.eq(~region.enable)


_responder_elaborate = Responder.elaborate


def _responder_popping_unsent(self, platform):
    # The queue of completions moves on whenever a response is offered, taken or not.
    m = _responder_elaborate(self, platform)
    queue = m.submodules.queue
    m.d.comb += queue.r_en.eq(queue.r_rdy & (self.s2m_ndr.valid | self.s2m_drs.valid))
    return m


def _route_invalidate_as_hint(request, decoded):
    # A MemInv is dispatched as a MemSpecRd: taken, never answered. The route is one-hot: the
    # hint's flag takes the invalidate's, which clears its own (and "now").
    layout = ROUTES
    route = layout(route_of(request, decoded))
    return Cat(Mux(route.no_access, name == "ignore", route[name]) for name, _ in layout)


class _MisaddressingPort(AxiMemoryPort):
    """A memory port that writes the host's lines one line further on."""

    def _address_register(self, m, channel, command):
        super()._address_register(m, channel, command)
        if channel == "aw":
            with m.If(command.ready & (command.payload.id == hdl.controller._HOST_ID)):
                m.d.sync += self.axi.awaddr.eq(command.payload.address
                                               + len(self.axi.wdata) // 8)


class _UpdateLeavingSlotsClean(SlotUpdate):
    """Every slot write marks the slot clean: a line that was contributed to and not yet
    complete is never written back when it is evicted or flushed."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.new.dirty.eq(0)
        return m


class _UpdateKeepingOldLanes(SlotUpdate):
    """A contribution's slot write counts it in n but keeps the lane counts it had: the
    contribution's own answer is right, and every later read of the line is not."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        with m.If(self.op.kind == SlotOp.CONTRIBUTE):
            m.d.comb += self.new.state.lanes.eq(self.word.state.lanes)
        return m


#: The mutation of each property, by the property's harness class name.
MUTATIONS = {
    "ContributionAddsItsLanes": Mutation(
        "n_counted_twice", "an accepted contribution increments n by 2",
        Add, "compute", _add_counting_twice),
    "FullLineRejectsWhole": Mutation(
        "counter_wraps", "a line at capacity takes the contribution and n wraps to 0",
        Decode, "_decide", _decide_as_if_not_full),
    "InvalidCodesCountZero": Mutation(
        "wrong_invalid_code", "the invalid-code detector looks for 11 instead of 10",
        hdl.datapath, "TERNARY_INVALID", TERNARY_MINUS),
    "IdentityPassesThrough": Mutation(
        "byte_enable_stuck", "byte enable 0 of every response reads 1",
        Select, "compute", _select_setting_byte_enable_0),
    "ReadBackIsMajorityOrGate": Mutation(
        "gate_loses_sign", "a G-Ternary lane with s <= -T reads +1",
        Select, "_gated", staticmethod(_gate_without_sign)),
    "ResponsesInOrderWithTags": Mutation(
        "response_dropped", "a pipeline register drops the second of back-to-back requests",
        hdl.datapath, "PipelineRegister", _DroppingRegister),
    "FlagsClearOnlyWhereWrittenOne": Mutation(
        "w1c_clears_all", "any write to a flag's register clears the flag",
        hdl.csr._WRITES, None, {Access.RW1C: _clear_on_any_write}),
    "LockKeepsRegionsReadOnly": Mutation(
        "lock_leaks", "the register block ignores the lock field",
        hdl.control, "RegisterBlock", _UnlockedBlock),
    "ApplyInstallsOnlyValidTables": Mutation(
        "mode_unchecked", "APPLY never reports a reserved mode",
        ControlRegisters, "_first_fault", staticmethod(_first_fault_but_mode)),
    "RejectedApplyKeepsTable": Mutation(
        "rejection_toggles_region_0", "a rejected APPLY toggles region 0's enable",
        ControlRegisters, "_elaborate_apply", _elaborate_apply_dropping_region_0),
    "ResponsesOncePerCompletionInOrder": Mutation(
        "response_lost_under_backpressure",
        "a completion leaves the queue when its response is offered, even if not taken",
        Responder, "elaborate", _responder_popping_unsent),
    "EveryRequestAnsweredOnce": Mutation(
        "invalidate_unanswered", "dispatch takes a MemInv for a MemSpecRd: it is never answered",
        hdl.controller, "route_of", _route_invalidate_as_hint),
    "IdentityWriteChangesOnlyItsLine": Mutation(
        "host_write_to_next_line", "an identity write lands on the line after its own",
        hdl.controller, "AxiMemoryPort", _MisaddressingPort),
    "LineCountExactThroughEvictions": Mutation(
        "slots_never_dirty", "every slot write marks the slot clean: an evicted or flushed "
        "line's contributions are never written back",
        hdl.slots, "SlotUpdate", _UpdateLeavingSlotsClean),
    "ReadReflectsEveryContribution": Mutation(
        "lanes_not_written", "a contribution's slot write counts it in n but keeps the lane "
        "counts from before it",
        hdl.slots, "SlotUpdate", _UpdateKeepingOldLanes),
}
