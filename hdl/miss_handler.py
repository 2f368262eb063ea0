"""The slot pool's miss handler: the steps of an op whose line is not in its slot
(:mod:`hdl.slots`, the module docstring)."""

import types

from amaranth import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from spec.params import Mode, Reason

from .datapath import state_of_planes
from .fill_reader import FillReader
from .pipeline import out_of_reset
from .prefetch import prefetch_layout
from .slot_ops import (
    SlotOp,
    fill_command_layout,
    fill_line_layout,
    slot_entry_layout,
    slot_result_layout,
)

__all__ = ["MissStep", "MISS_EVENTS", "miss_op_layout", "MissHandler"]

#: The pool's events (:data:`hdl.slot_ops.SLOT_EVENTS`) that the miss handler makes.
MISS_EVENTS = ("mem_error", "fills")


class MissStep(enum.Enum, shape=3):
    """The miss handler's steps (``RUN``: no miss)."""
    RUN = 0
    DRAIN = 1
    DECIDE = 2
    WAIT_WRITES = 3
    INSTALL = 4
    READ_ANSWER = 5
    READ_AFTER_WRITES = 6


def miss_op_layout(params, user_width):
    """What the miss handler reads of T1's op: its fields, and ``first``, the address its
    read starts from (:meth:`hdl.fill_reader.FillReader.first_line`, made a clock early)."""
    return data.StructLayout({
        "kind": SlotOp,
        "tag": unsigned(params.address_bits),
        "mode": Mode,
        "threshold": unsigned(params.datapath.counter_width),
        "user": unsigned(user_width),
        "first": unsigned(params.address_bits),
    })


class MissHandler(wiring.Component):
    """The steps of a miss of T1's op, with the :class:`hdl.fill_reader.FillReader` that reads
    the line from device memory.

    The line's read starts at once, unless a write may be to the line's own accumulator
    (*Fills and writes*, :mod:`hdl.slots`): then once every write is acknowledged. Meanwhile
    P2 drains and the slot is read again; the handler evicts the slot's occupant into P2 if
    it holds a line (``evict``), then, with the state in, sends T1's op into P2 with the filled
    word (``install``). A result read of a line that is not resident takes no slot: it is
    answered here with the line's result line (``answering``), as is a contribution whose
    fill memory answered with an error. An eviction is made while P2 is empty and ``room``
    holds, an install while P2 is empty; an answer waits until the pool is drained (the
    result unit gives nothing on that clock, so the result queue's data is chosen by the
    unit's valid alone).

    *Prefetch.* While no miss is handled, the reader may read the line :class:`FillHints`
    offers (``prefetch``), under the rule a miss's read starts by at once. The read is
    *live* until a line leaves its slot, a host write is pending or ``hold_prefetch`` is
    high: then memory may have changed under it. When the op of a live prefetch's line
    reaches T1 and misses, and no op of the line has hit since the read started, it takes the
    read as its own. Unless T1's data is in and says the
    slot holds a line, the op waits in T1 without the miss's steps; on the clock the read
    and T1's data are in, the slot is empty and P2 is not on it, the op moves into P2 with
    the filled word (``fast_install``), and the op behind it into T1, as after a hit: the
    :class:`hdl.slots.PoolSlice` selects that make P2 take the filled word are registers,
    so the fast install is foreseen a clock early, from the reader's next step
    (``install_due``: T1 holds an op that fast-installs or moves nowhere on this clock).
    Otherwise the miss takes its steps, with the read started. A prefetch nobody takes is
    dropped (the reader's ``cancel``: its lines still to come are skipped) when it is not
    live, an op of its line hits, or another line misses: that miss starts its own read on
    the next clock.

    Parameters
    ----------
    params : ControllerParams
        The slice's (``line_bits`` of its columns).
    whole : ControllerParams
        The whole line's: addresses and device memory's lines.
    user_width : int
        Width of the opaque ``user`` field an op carries to its result.
    queue_depth : int
        Entries of the pool's result queue.

    Members
    -------
    op : In(miss_op_layout(params, user_width))
        T1's op.
    miss : In(1)
        T1's op needs its slot and its line is not there: the handler leaves ``RUN``.
    data_ok : In(1)
        T1's slot's word is ``occupant_valid``'s, as it stands.
    occupant_valid : In(1)
        T1's slot holds a line.
    p2_valid : In(1)
    unit_empty : In(1)
        No op in the result unit or its input register.
    room : In(1)
        The output queues have room for an eviction and every op in flight.
    departure : In(1)
        P2 takes a line out of its slot on this clock.
    writes_pending, host_writes_pending : In(1)
        Writes to device memory not yet acknowledged, and host writes among them.
    results_held : In(range(queue_depth + 1))
        Results the pool's result queue holds, as of the last clock edge.
    t1_hit : In(1)
        T1 holds an op whose line is in its slot.
    p2_on_t1 : In(1)
        P2's slot is T1's.
    prefetch : In(stream.Signature(prefetch_layout(whole)))
        A line to read ahead (:class:`hdl.prefetch.FillHints`).
    hold_prefetch : In(1)
        No prefetch may start, and one under way is not live (a scan task may write memory).
    next_prefetched : In(1)
        T1's op after this edge may be a whole-line contribution in an aggregating mode, of
        line ``prefetch_tag`` as it stood a clock before, that misses its slot (a guess that
        may be high when it is not: a fast install is then foreseen for nothing, and T1's op
        waits a clock).
    t1_prefetched : In(1)
        T1 holds a whole-line contribution in an aggregating mode, of line ``prefetch_tag`` as
        it stood a clock before: the only op a fast install may take.
    t1_of_prefetch_line : In(1)
        T1's op is of line ``prefetch_tag``: a register, which the owner sets on each edge from
        T1's op after the edge and ``prefetch_tag`` after it (``prefetch``'s tag when
        ``prefetch_starting``), so that no address compare is in front of the handler's
        decisions.
    prefetch_tag : Out(address_bits)
    prefetch_starting : Out(1)
        A prefetch starts on this clock: ``prefetch_tag`` is ``prefetch``'s tag from the edge.
    prefetch_busy : Out(1)
        A prefetch's read is under way, or the lines of a dropped one are still to come.
    fill_read : Out(stream.Signature(fill_command_layout(whole)))
    fill_data : In(stream.Signature(fill_line_layout(params.datapath), always_ready=True))
        The reader's (:class:`hdl.fill_reader.FillReader`).
    next_step : Out(MissStep)
        The step after this clock edge.
    evict : Out(1)
        P2 takes the eviction of T1's slot's occupant.
    install : Out(1)
        P2 takes T1's op with the word ``filled``; T1 is empty on the next clock.
    fast_install : Out(1)
        P2 takes T1's op with the word ``filled`` of a prefetch; TA's op may move into T1.
    install_due : Out(1)
        A register: T1's op may not move on as a hit on this clock.
    fill_next : Out(1)
        P2 is to take the word ``filled`` on the next clock if it takes one; made of the step
        and registers, not of ``next_step``, which waits for the queues' levels.
    dropped : Out(1)
        T1's op is answered here (``answer``, while ``answering``) and leaves.
    answering : Out(1)
    answer : Out(slot_result_layout(params, user_width))
    filled : Out(slot_entry_layout(params))
        The word the fill makes: T1's line, mode and threshold, the state read.
    events : Out(StructLayout({name: 1 for name in MISS_EVENTS}))
    """

    def __init__(self, params, whole, *, user_width, queue_depth):
        self._params = params
        self._whole = whole
        self._queue_depth = queue_depth
        super().__init__({
            "op": In(miss_op_layout(params, user_width)),
            "miss": In(1),
            "data_ok": In(1),
            "occupant_valid": In(1),
            "p2_valid": In(1),
            "unit_empty": In(1),
            "room": In(1),
            "departure": In(1),
            "writes_pending": In(1),
            "host_writes_pending": In(1),
            "results_held": In(range(queue_depth + 1)),
            "t1_hit": In(1),
            "p2_on_t1": In(1),
            "prefetch": In(stream.Signature(prefetch_layout(whole))),
            "hold_prefetch": In(1),
            "next_prefetched": In(1),
            "t1_prefetched": In(1),
            "t1_of_prefetch_line": In(1),
            "prefetch_tag": Out(whole.address_bits),
            "prefetch_starting": Out(1),
            "prefetch_busy": Out(1),
            "fill_read": Out(stream.Signature(fill_command_layout(whole))),
            "fill_data": In(stream.Signature(fill_line_layout(params.datapath),
                                             always_ready=True)),
            "next_step": Out(MissStep),
            "evict": Out(1),
            "install": Out(1),
            "fast_install": Out(1),
            "install_due": Out(1),
            "fill_next": Out(1),
            "dropped": Out(1),
            "answering": Out(1),
            "answer": Out(slot_result_layout(params, user_width)),
            "filled": Out(slot_entry_layout(params)),
            "events": Out(data.StructLayout({name: 1 for name in MISS_EVENTS})),
        })

    def elaborate(self, platform):
        m = Module()
        op = self.op
        m.submodules.fill_reader = reader = FillReader(self._whole, self._params.datapath)
        wiring.connect(m, reader.fill_read, wiring.flipped(self.fill_read))
        wiring.connect(m, wiring.flipped(self.fill_data), reader.fill_data)
        is_read = op.kind == SlotOp.READ
        step = Signal(MissStep)
        m.d.comb += self.next_step.eq(step)
        m.d.sync += step.eq(self.next_step)
        started = Signal()          # the reader has this miss's read
        live = out_of_reset(m)      # hdl.slots, Icarus
        pf = self._prefetch(m, step, reader, live)
        m.d.comb += [reader.start.payload.first.eq(Mux(pf.starting, self.prefetch.payload.first,
                                                       op.first)),
                     reader.start.payload.tag.eq(Mux(pf.starting, self.prefetch.payload.tag,
                                                     op.tag)),
                     reader.start.payload.state.eq(pf.starting | ~is_read)]
        # The answer when the pool gives it itself: the line of a result read, and whether
        # memory failed; and the filled word. Continuous assignments: a Verilog block that
        # only sets constant fields would never run in Icarus Verilog (hdl.slots).
        m.d.comb += [
            self.answer.eq(Cat(op.user, reader.line, is_read,
                               Const(Reason.NONE.value, Reason.as_shape()), Const(0, 1),
                               reader.error)),
            self.filled.eq(Cat(Const(1, 1), Const(0, 1), op.tag, op.mode, op.threshold,
                               state_of_planes(self._params.datapath, reader.image))),
        ]
        # ``fill_next`` is high on every clock before P2 may install (in INSTALL, entered from
        # DECIDE or READ_AFTER_WRITES, and in RUN before a fast install) and low on every
        # clock before P2 may take another word (in RUN, and the eviction in DECIDE). It may
        # also be high before a clock on which P2 takes nothing (WAIT_WRITES,
        # READ_AFTER_WRITES, READ_ANSWER, RUN after an answer in INSTALL has dropped T1's op,
        # when T1 is empty, and RUN with ``install_due`` when the fast install fails).
        m.d.comb += self.fill_next.eq(live & (((step == MissStep.DECIDE) & self.data_ok
                                               & started)
                                              | (step == MissStep.WAIT_WRITES)
                                              | (step == MissStep.READ_AFTER_WRITES)
                                              | ((step == MissStep.INSTALL) & ~self.install)
                                              | pf.fast_next))
        drained = ~self.p2_valid & self.unit_empty
        writes = self._writes_gate(m, drained)
        with m.If(live):  # hdl.slots, Icarus
            self._steps(m, step, reader, started, drained, writes, pf)
        return m

    def _prefetch(self, m, step, reader, live):
        """The state of a prefetch (the class docstring), and the fast install."""
        pf = types.SimpleNamespace()
        pf.prefetching = Signal()   # the reader's read is a prefetch that no miss has taken
        pf.live = Signal()
        pf.passed = Signal()        # an op of its line has hit in T1 since it started
        pf.starting = Signal()
        pf.fast_next = Signal()
        m.d.comb += [self.prefetch_busy.eq((pf.prefetching & ~reader.held) | reader.skipping),
                     self.prefetch_starting.eq(pf.starting)]
        # A prefetch of a line an op has hit since it started (``passed``) is of no use: no
        # miss takes it, and no op is installed from it.
        pf.fresh = pf.prefetching & pf.live & ~pf.passed
        usable = pf.fresh & reader.held & ~reader.failed
        # P2 takes the filled word on this clock (``install_due``, foreseen a clock ago) if
        # T1's op is of the prefetch's line (the guess that foresaw it may have been of
        # another op, which moved on or stayed in T1), the slot's word is in and empty and P2
        # is not on the slot: then the op needs no eviction, and its word comes from
        # ``filled``, not from W1.
        m.d.comb += self.fast_install.eq(live & self.install_due & usable & self.t1_prefetched
                                         & self.data_ok & ~self.occupant_valid
                                         & ~(self.p2_valid & self.p2_on_t1))
        of_t1 = self.t1_of_prefetch_line
        pf.claim = pf.fresh & of_t1 & (self.op.kind != SlotOp.READ)
        # T1's op missed, its prefetch is under way, and its slot may be empty: it waits in
        # T1, without the miss's steps, for the fast install.
        pf.waiting = Signal()
        m.d.comb += pf.waiting.eq(self.miss & pf.claim & ~reader.failed & ~self.fast_install
                                  & ~(self.data_ok & self.occupant_valid))
        # Foreseen from the reader's next step: the read may be in on the clock it is used.
        # From registers and the reader's lines only, as it steers P2's word in every column
        # group: not from T1's miss or slot word, nor on a clock a fast install may take
        # place (it finishes the read). It may then be high before a clock on which P2
        # takes nothing: T1's op misses (it waits for the fill, or takes the miss's steps:
        # DRAIN next), or the fast install fails (an occupant: the miss's steps; the slot's
        # word not in: it is foreseen again a clock later). On the clock after a prefetch
        # starts, ``next_prefetched`` is of the line before; the reader is then in its
        # state read's first line, and ``held_next`` low.
        m.d.comb += pf.fast_next.eq((step == MissStep.RUN) & ~self.install_due
                                    & pf.fresh & reader.held_next
                                    & ~reader.failed & self.next_prefetched)
        m.d.sync += self.install_due.eq(live & pf.fast_next)
        with m.If(self.departure | self.host_writes_pending | self.hold_prefetch):
            m.d.sync += pf.live.eq(0)
        # An op of the line hits: the line is resident, and the prefetch of no use.
        with m.If(pf.prefetching & self.t1_hit & of_t1):
            m.d.sync += pf.passed.eq(1)
        with m.If(pf.starting):
            # A line leaving its slot on this clock may be the line: its write-back is to come.
            m.d.sync += [pf.prefetching.eq(1), pf.live.eq(~self.departure), pf.passed.eq(0),
                         self.prefetch_tag.eq(self.prefetch.payload.tag)]
        # A prefetch nobody will take is dropped (``cancel``: its lines still to come are
        # skipped), unless its command is being offered (it is dropped a clock later): when
        # it is not live, an op of its line hit, or a miss does not take it (that miss waits
        # in RUN until the reader is idle: ``in_the_way``). A miss takes only a live
        # prefetch, of a line that is not resident.
        pf.in_the_way = pf.prefetching & ~pf.claim
        cancellable = ~reader.fill_read.valid | reader.fill_read.ready
        taken = (step == MissStep.RUN) & self.miss & pf.claim
        with m.If(pf.prefetching & cancellable & ~taken
                  & (~pf.live | pf.passed | self.miss | (step != MissStep.RUN))):
            m.d.comb += reader.cancel.eq(1)
            m.d.sync += pf.prefetching.eq(0)
        with m.If(self.fast_install):
            m.d.comb += [reader.finish.eq(1), self.events.fills.eq(1)]
            m.d.sync += pf.prefetching.eq(0)
        return pf

    def _writes_gate(self, m, drained):
        """Fills and writes (:mod:`hdl.slots`): whether a line has left its slot since every
        write was last done (``departed``), and whether a read that waited for writes may
        start (``may_read``)."""
        # A write-back is pending from the clock after the unit gives it (``writes_pending``).
        writes_done = drained & ~self.writes_pending
        departed = Signal()
        # ``departed`` as it stood before this miss's own eviction.
        wait_for_writes = Signal()
        with m.If(self.departure):
            m.d.sync += departed.eq(1)
        with m.Elif(writes_done):
            m.d.sync += departed.eq(0)
        may_read = drained & (writes_done | ~(wait_for_writes | self.host_writes_pending))
        return departed, wait_for_writes, may_read

    def _steps(self, m, step, reader, started, drained, writes, pf):
        """The step machine: from ``step`` to ``next_step``; ``drained``: P2 and the result
        unit are empty; ``writes``: what :meth:`_writes_gate` returns; ``pf``: what
        :meth:`_prefetch` returns."""
        departed, wait_for_writes, may_read = writes
        # An answer the pool gives itself leaves after every op ahead has left the result
        # unit, so that answers keep op order.
        answer_room = drained & (self.results_held < self._queue_depth)
        is_read = self.op.kind == SlotOp.READ

        def answer_and_drop():
            """Answer T1's op with ``answer`` (there is room) and drop it."""
            m.d.comb += [self.answering.eq(1), reader.finish.eq(1),
                         self.events.mem_error.eq(reader.error), self.dropped.eq(1),
                         self.next_step.eq(MissStep.RUN)]

        with m.Switch(step):
            with m.Case(MissStep.RUN):
                # The line's read starts at once unless a write may be to its line; the ops
                # ahead drain meanwhile, and a result read takes no slot. No line leaves its
                # slot in P2 on this clock (the handler evicts in DECIDE, and no op follows a
                # scan), so ``departed`` says whether one has left.
                # A live prefetch of the line is taken as the miss's read; any other is dropped
                # (``_prefetch``) and the miss is seen again on the next clock.
                may_read_now = ~departed & ~self.host_writes_pending
                read_now = may_read_now & ~pf.prefetching
                with m.If(self.miss & ~self.fast_install & ~pf.waiting & ~pf.in_the_way):
                    m.d.comb += reader.start.valid.eq(read_now)
                    m.d.sync += started.eq(read_now | pf.claim)
                    m.d.comb += self.next_step.eq(Mux(read_now & is_read, MissStep.READ_ANSWER,
                                                      MissStep.DRAIN))
                    with m.If(pf.claim):
                        m.d.sync += pf.prefetching.eq(0)
                with m.Elif(~self.miss & self.prefetch.valid & may_read_now
                            & ~self.hold_prefetch & ~pf.prefetching & reader.start.ready):
                    m.d.comb += [reader.start.valid.eq(1), pf.starting.eq(1),
                                 self.prefetch.ready.eq(1)]
            with m.Case(MissStep.DRAIN):
                # Only P2 writes slots; the ops in the result unit go on meanwhile. An
                # eviction will need room in the output queues.
                with m.If(~self.p2_valid & self.room):
                    m.d.comb += self.next_step.eq(MissStep.DECIDE)
            with m.Case(MissStep.DECIDE):
                # The slot is read while the pool misses: once its word is in, the occupant is
                # the slot as it stands. Nothing is in P2, so departed is final until the
                # eviction below.
                with m.If(self.data_ok):
                    m.d.comb += self.evict.eq(~is_read & self.occupant_valid)
                    m.d.sync += wait_for_writes.eq(departed)
                    m.d.comb += self.next_step.eq(Mux(started, MissStep.INSTALL,
                                                      MissStep.WAIT_WRITES))
            with m.Case(MissStep.WAIT_WRITES):
                # The read starts on the next clock, from the step alone: the reader offers
                # its command on the clock it starts, and ``may_read`` compares levels. A
                # prefetch nobody took is dropped first (no prefetch starts outside RUN).
                with m.If(may_read & reader.start.ready):
                    m.d.comb += self.next_step.eq(MissStep.READ_AFTER_WRITES)
            with m.Case(MissStep.READ_AFTER_WRITES):
                m.d.comb += [reader.start.valid.eq(1),
                             self.next_step.eq(Mux(is_read, MissStep.READ_ANSWER,
                                                   MissStep.INSTALL))]
            with m.Case(MissStep.READ_ANSWER):
                with m.If(reader.done & answer_room):
                    answer_and_drop()
            with m.Case(MissStep.INSTALL):
                with m.If(reader.held & reader.failed & answer_room):
                    # The state is unknown: the contribution is answered, not counted.
                    answer_and_drop()
                with m.If(reader.held & ~reader.failed & ~self.p2_valid):
                    # The op moves on with the filled word, which P2 writes to the slot. It
                    # has had room since it was taken, and the filled word comes from the
                    # reader's registers (``held``): ``install`` steers P2's word and T1's
                    # valid, so it is decided from registers (pipeline rule 3), not after the
                    # answer's room above (``If``, not ``Elif``: the two exclude each other
                    # by ``reader.failed``).
                    m.d.comb += [self.install.eq(1), reader.finish.eq(1),
                                 self.events.fills.eq(1), self.next_step.eq(MissStep.RUN)]
