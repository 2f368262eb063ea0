"""P2 of the slot pool: what an op does to its slot's word (:mod:`hdl.slots`)."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from spec.params import Mode, Reason, aggregates

from .datapath import request_layout
from .pipeline import out_of_reset
from .slot_ops import (
    SlotOp,
    accumulate,
    invalid_codes,
    is_scan,
    lane_groups,
    side_layout,
    slot_entry_layout,
    slot_op_layout,
    unit_settings,
)

__all__ = ["UPDATE_EVENTS", "SlotUpdate"]

#: The pool's events (:data:`hdl.slot_ops.SLOT_EVENTS`) that P2's op makes.
UPDATE_EVENTS = ("accepted", "rejected", "capacity", "partial", "invalid", "completed",
                 "evictions", "dropped")


class SlotUpdate(wiring.Component):
    """What an op does to its slot, combinational: the slot's word after the op, its request
    to the result unit and its events. The pool's P2 register holds the op and the word; the
    decisions that steer the line-wide lanes come in as copies made a clock earlier, one per
    column group (pipeline rule 2), so that nothing here starts from a net that spans the line.

    Parameters
    ----------
    params : ControllerParams
        The slice's (``line_bits`` of the slice's columns).
    user_width : int
        Width of the opaque ``user`` field an op carries to its result.

    Members
    -------
    op : In(slot_op_layout(params, user_width))
        P2's op, valid while ``valid``.
    valid : In(1)
    word : In(slot_entry_layout(params))
        The op's slot's word (a fill's after an install).
    may_add : In(1)
        The op is a contribution in an aggregating mode to a whole line.
    full : In(1)
        ``word``'s count is ``capacity``.
    last : In(1)
        ``word``'s count is the op's ``EXPECTED - 1``: an accepted contribution completes it.
    covered : In(1)
        ``word``'s tag is in a ``CLEAR``'s range.
    before_last, two_before : In(counter_width + 1)
        ``EXPECTED - 1`` and ``EXPECTED - 2`` of the op behind (all ones for ``EXPECTED`` = 0,
        above every count; ``EXPECTED - 2`` likewise for 1).
    adds, ternary : In(control_copies)
        Copies of the op's ``accepted`` and of whether it is G-Ternary: bit ``k`` steers the
        lanes of column group ``k``.
    new : Out(slot_entry_layout(params))
        The slot's word after this edge, for every valid op (an op that leaves the slot alone
        gives ``word`` itself), so that the pool writes the slot for every valid op and its
        reads forward the word without waiting for the op's decisions.
    after : Out(StructLayout({"full": 1, "last": 1}))
        Whether the count written is ``capacity``, and whether it is the op behind's
        ``EXPECTED - 1``: what the op behind starts from, made without the count's adder.
    request : Out(stream.Signature(request_layout(...), always_ready=True))
        To the result unit: a result for a ``CONTRIBUTE`` or ``READ``, a write-back for a
        contribution that completes its line, a ``FLUSH`` or an ``EVICT`` of a dirty slot.
        Its ``user`` is a :func:`hdl.slot_ops.side_layout`. The unit counts an accepted
        contribution itself, from the count P2 starts from (``state.n``); the lanes are the
        new ones (the request's line is 0).
    events : Out(StructLayout({name: 1 for name in UPDATE_EVENTS}))
        Strobes, one clock each, while ``valid``.
    """

    def __init__(self, params, user_width):
        p = params.datapath
        self._params = params
        self._user_width = user_width
        self._side = side_layout(params, user_width)
        copies = p.control_copies
        super().__init__({
            "op": In(slot_op_layout(params, user_width)),
            "valid": In(1),
            "word": In(slot_entry_layout(params)),
            "may_add": In(1),
            "full": In(1),
            "last": In(1),
            "covered": In(1),
            "before_last": In(p.counter_width + 1),
            "two_before": In(p.counter_width + 1),
            "adds": In(copies),
            "ternary": In(copies),
            "new": Out(slot_entry_layout(params)),
            "after": Out(data.StructLayout({"full": 1, "last": 1})),
            "request": Out(stream.Signature(request_layout(p, self._side.size),
                                            always_ready=True)),
            "events": Out(data.StructLayout({name: 1 for name in UPDATE_EVENTS})),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params.datapath
        op, word, valid, events = self.op, self.word, self.valid, self.events
        live = out_of_reset(m)      # hdl.slots, Icarus
        n = word.state.n
        contribute = op.kind == SlotOp.CONTRIBUTE
        accepted = self.may_add & ~self.full
        complete = accepted & self.last
        write_back = Signal()
        new = self.new
        m.d.comb += new.eq(word)
        with m.If(live), m.Switch(op.kind):  # hdl.slots, Icarus
            with m.Case(SlotOp.CONTRIBUTE):
                with m.If(accepted):
                    m.d.comb += [
                        new.dirty.eq(~complete), new.mode.eq(op.mode),
                        new.threshold.eq(op.threshold), new.state.n.eq(n + 1),
                        write_back.eq(complete)]
            with m.Case(SlotOp.FLUSH):
                m.d.comb += [new.dirty.eq(word.dirty & ~word.valid),
                             write_back.eq(word.valid & word.dirty)]
            with m.Case(SlotOp.EVICT):
                m.d.comb += [new.valid.eq(0), write_back.eq(word.valid & word.dirty),
                             events.evictions.eq(valid & word.valid)]
            with m.Case(SlotOp.CLEAR):
                m.d.comb += new.valid.eq(word.valid & ~self.covered)
            with m.Case(SlotOp.DROP):
                m.d.comb += [new.valid.eq(0),
                             events.dropped.eq(valid & word.valid & word.dirty)]
        groups = zip(self.adds, self.ternary, lane_groups(p, word.state.lanes),
                     lane_groups(p, op.data, p.control_copy_bits))
        # A group that does not add adds a line of zeros: the gate is on the addend, not a
        # select after the adders.
        m.d.comb += new.state.lanes.eq(Cat(
            accumulate(p, lanes, line & add.replicate(len(line)), is_ternary)
            for add, is_ternary, lanes, line in groups))
        m.d.comb += [self.after.full.eq(Mux(live & accepted, n == p.capacity - 1, self.full)),
                     self.after.last.eq(Mux(live & accepted, n == self.two_before,
                                            n == self.before_last))]
        # A G-Ternary contribution accepted with a lane of the invalid code (counted as 0).
        invalid = Signal()
        m.d.comb += invalid.eq(accepted & (op.mode == Mode.GTERNARY) & invalid_codes(p, op.data))
        self._status(m, contribute, accepted, complete, invalid)
        self._request(m, contribute, accepted, write_back, invalid)
        return m

    def _status(self, m, contribute, accepted, complete, invalid):
        """The events of the op's accept status."""
        op, valid, events = self.op, self.valid, self.events
        bad_mode, partial = ~aggregates(op.mode), ~op.full_line
        m.d.comb += [
            events.accepted.eq(valid & accepted),
            events.rejected.eq(valid & contribute & ~accepted),
            events.capacity.eq(valid & contribute & ~bad_mode & ~partial & self.full),
            events.partial.eq(valid & contribute & ~bad_mode & partial),
            events.invalid.eq(valid & invalid),
            events.completed.eq(valid & complete),
        ]

    def _request(self, m, contribute, accepted, write_back, invalid):
        """The request to the result unit, with what travels beside it (``side``)."""
        op, word, request = self.op, self.word, self.request
        emit_result = contribute | (op.kind == SlotOp.READ)
        reason = Mux(~aggregates(op.mode), Reason.MODE,
                     Mux(~op.full_line, Reason.PARTIAL,
                         Mux(self.full, Reason.CAPACITY, Reason.NONE)))
        side = Signal(self._side)
        mode, threshold = unit_settings(is_scan(op.kind), op, word.mode, word.threshold)
        m.d.comb += [
            side.result.eq(emit_result), side.write_back.eq(write_back),
            side.address.eq(word.tag), side.user.eq(op.user),
            side.accepted.eq(~contribute | accepted),
            side.reason.eq(Mux(contribute, reason, Reason.NONE)),
            side.invalid.eq(invalid),
            request.valid.eq(self.valid & (emit_result | write_back)),
            request.payload.state.lanes.eq(self.new.state.lanes),
            request.payload.state.n.eq(word.state.n),
            request.payload.contribute.eq(accepted),
            request.payload.mode.eq(mode), request.payload.threshold.eq(threshold),
            request.payload.byte_enable.eq(-1),
            request.payload.user.eq(side),
        ]
