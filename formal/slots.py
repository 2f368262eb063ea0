"""Property harnesses of the slot pool (:class:`hdl.slots.SlotPool`) at its ports: ops in,
results and write-backs out, device memory behind ``fill_read``/``fill_data`` and the
write-backs. The pool is where a line lives while it is aggregated, where it is evicted, filled,
written back and flushed, so a line's count and result line are checked here, without the
ingress, decoder and AXI port that take the whole controller's first 8 clocks of every request.

One line, its accumulator at ``line`` (chosen by the solver), is watched. The harness keeps
its reference: the count ``n`` and lane counts that device memory holds for it at the start
(any state a line can have: each lane count at most ``n``), plus every contribution to it that
the contract accepts (a whole line, ``n`` below the capacity). The environment, and every
assumption it makes:

- **Ops**, as the controller sends them (``docs/controller.md``, "Slot pool"): on every clock,
  a free ``CONTRIBUTE``, ``READ``, ``FLUSH`` or ``EVICT`` (no ``CLEAR``, so ``high`` is 0) of
  one of the first :data:`LINES` lines, with any data and ``full_line``, on the slot its
  address names; one G-Binary region whose ``EXPECTED`` the solver picks. No op follows a
  scan until the pool is ``idle``. The harness writes its own marks into ``user`` (whether
  the op is to the watched line, and the answer the reference expects), so each result is
  checked against the op it answers.
- **Backpressure**: ``result.ready`` is free on every clock. Write-backs are taken on every
  clock they are valid, as the memory port takes them, into a queue whose level is
  ``write_backs_held``; the pool must never make one while the queue is full (``WRITE_BACKS``
  of them, asserted in every harness).
- **Device memory** holds the watched line's accumulator image (its result line, bit planes
  and ``n`` line, ``docs/formats.md``). A fill or result read is taken when the memory
  chooses, one at a time, and its lines come back one per clock on the clocks it chooses; a
  line of any other accumulator has a free value and may come back with an error. A
  write-back is applied, and acknowledged (``writes_pending`` falls once none is left), when
  the memory chooses, in order; until then a read sees the old value. No host writes.
- **No hints** (``hint`` and ``hold_prefetch`` low): the pool reads no line ahead.

Reset is held low after the initial state. Each harness is a bounded check from reset
(:mod:`formal.properties` gives the depth).
"""

from amaranth import Cat, Const, Elaboratable, Module, Mux, ResetSignal, Signal
from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assert, Assume
from amaranth.lib import data

from hdl.slot_ops import SlotOp
from hdl.slots import SlotPool
from spec.params import Mode, Reason

from .history import queue, starting_at

__all__ = ["LINES", "LineCountExactThroughEvictions", "ReadReflectsEveryContribution"]

#: Lines the ops address: the first ones of device memory, twice as many as the slots of the
#: configurations checked, so that lines share slots.
LINES = 4


def _marks_layout(params):
    """What the harness writes into an op's ``user``: the op is a ``CONTRIBUTE`` or ``READ``
    of the watched line, and what the reference says its result must be."""
    return data.StructLayout({"watched": 1, "read": 1, "accepted": 1, "reason": Reason,
                              "line": params.datapath.line_bits})


class _PoolHarness(Elaboratable):
    """The pool in the module docstring's environment, with the watched line's reference; a
    subclass states its property in :meth:`check`."""

    #: The design under test.
    design = SlotPool

    def __init__(self, params):
        self.params = params

    def image(self, n, lanes):
        """The accumulator image of a G-Binary state in device memory, from the contract:
        the result line (lane bit 1 iff ``2c > n``), bit plane ``b`` (bit ``b`` of every lane
        count) for each ``b < W``, then ``n`` alone in a line."""
        p = self.params.datapath
        width = p.counter_width
        counts = [lanes[k * width:(k + 1) * width] for k in range(p.gbinary_lanes)]
        result = Cat((count << 1) > n for count in counts)
        planes = [Cat(count[b] for count in counts) for b in range(width)]
        return Cat(result, *planes, n, Const(0, p.line_bits - width))

    def elaborate(self, platform):
        m = Module()
        params = self.params
        p = params.datapath
        width = p.counter_width
        marks = _marks_layout(params)
        m.submodules.dut = dut = self.design(params, user_width=marks.size)
        m.d.comb += Assume(~ResetSignal())

        # The watched line and its reference, from any state a line can have.
        acc_bytes = params.accumulator_bytes_per_line
        acc_lsb = acc_bytes.bit_length() - 1
        line = Cat(Const(0, acc_lsb), AnyConst(LINES.bit_length() - 1))
        initial_n, initial_lanes = AnyConst(width), AnyConst(p.gbinary_lanes * width)
        m.d.comb += Assume(Cat(initial_lanes[k * width:(k + 1) * width] <= initial_n
                               for k in range(p.gbinary_lanes)).all())
        n, n_kept = starting_at(m, initial_n, "reference_n")
        lanes, lanes_kept = starting_at(m, initial_lanes, "reference_lanes")
        self.reference = self.image(n, lanes)

        # Ops.
        op = dut.op.payload
        expected = AnyConst(width)
        m.d.comb += Assume((expected >= 1) & (expected <= p.capacity))
        m.d.comb += [dut.op.valid.eq(AnySeq(1)), op.kind.eq(AnySeq(len(op.kind.as_value()))),
                     op.tag.eq(Cat(Const(0, acc_lsb), AnySeq(LINES.bit_length() - 1))),
                     op.data.eq(AnySeq(len(op.data))), op.full_line.eq(AnySeq(1)),
                     op.index.eq(op.tag[acc_lsb:]), op.mode.eq(Mode.GBINARY),
                     op.threshold.eq(1), op.expected.eq(expected)]
        scan = (op.kind == SlotOp.FLUSH) | (op.kind == SlotOp.EVICT)
        m.d.comb += Assume((op.kind == SlotOp.CONTRIBUTE) | (op.kind == SlotOp.READ) | scan)
        taken = dut.op.valid & dut.op.ready
        scan_open = Signal()
        with m.If(taken & scan):
            m.d.sync += scan_open.eq(1)
        with m.Elif(dut.idle):
            m.d.sync += scan_open.eq(0)
        m.d.comb += Assume(~(dut.op.valid & scan_open & ~dut.idle))

        # Each op's marks, from the reference before the op; an accepted contribution to the
        # watched line enters the reference as the op is taken (results keep op order).
        mark = marks(op.user)
        contribute = op.kind == SlotOp.CONTRIBUTE
        full = n == p.capacity
        m.d.comb += [mark.watched.eq((op.tag == line) & (contribute | (op.kind == SlotOp.READ))),
                     mark.read.eq(op.kind == SlotOp.READ),
                     mark.accepted.eq(~contribute | (op.full_line & ~full)),
                     mark.reason.eq(Mux(~contribute, Reason.NONE,
                                        Mux(~op.full_line, Reason.PARTIAL,
                                            Mux(full, Reason.CAPACITY, Reason.NONE)))),
                     mark.line.eq(self.reference[:p.line_bits])]
        self.contributed = taken & mark.watched & contribute
        with m.If(self.contributed & mark.accepted):
            m.d.sync += [n_kept.eq(n + 1), lanes_kept.eq(Cat(
                (lanes[k * width:(k + 1) * width] + op.data[k])[:width]
                for k in range(p.gbinary_lanes)))]
        self.scan_of_line = taken & scan & (op.index == line[acc_lsb:][:len(op.index)])

        m.d.comb += [dut.result.ready.eq(AnySeq(1)), dut.host_writes_pending.eq(0)]
        # No hints: with the watched line hinted on any clock, the solver's steps beyond 16
        # take minutes each instead of seconds, and the depths here are out of reach. The
        # prefetch is checked in simulation (verif/hdl/test_slots.py, hints free or ahead;
        # the controller's tests, and the soak, with the controller's hints).
        m.d.comb += [dut.hint.valid.eq(0), dut.hold_prefetch.eq(0)]
        self.memory = self._memory(m, dut, line, acc_lsb)
        result = dut.result.payload
        self.answered = dut.result.valid & dut.result.ready & marks(result.user).watched
        self.answer_marks = marks(result.user)
        self.check(m, dut)
        return m

    def _memory(self, m, dut, line, acc_lsb):
        """Drive the memory side of the pool as the module docstring says; returns the
        watched line's accumulator image as memory holds it."""
        p = self.params.datapath
        offset_bits = p.line_bytes.bit_length() - 1
        stored, stored_kept = starting_at(m, self.reference, "memory_line")

        def watched(address):
            return address[acc_lsb:] == line[acc_lsb:]

        # Reads: one at a time, a line per chosen clock.
        busy = Signal()
        address = Signal.like(dut.fill_read.payload.address)
        left = Signal.like(dut.fill_read.payload.beats)
        lines = data.ArrayLayout(p.line_bits, len(stored) // p.line_bits)(stored)
        m.d.comb += dut.fill_read.ready.eq(AnySeq(1) & ~busy)
        with m.If(dut.fill_read.valid & dut.fill_read.ready):
            m.d.sync += [busy.eq(1), address.eq(dut.fill_read.payload.address),
                         left.eq(dut.fill_read.payload.beats)]
        beat = dut.fill_data
        failed = AnySeq(1) & ~watched(address)
        arrives = busy & AnySeq(1)
        m.d.comb += [beat.valid.eq(arrives.replicate(dut.slices)),
                     beat.data.eq(Mux(failed, 0, Mux(watched(address),
                                                     lines[address[offset_bits:acc_lsb]],
                                                     AnySeq(p.line_bits)))),
                     beat.error.eq(failed.replicate(dut.slices))]
        with m.If(arrives):
            m.d.sync += [address.eq(address + p.line_bytes), left.eq(left - 1),
                         busy.eq(left != 1)]

        # Write-backs: taken whenever valid, held as the memory port holds them, applied in
        # order when the memory chooses; the pool must leave room for each.
        write = dut.write_back.payload
        apply = Signal(name="write_back_apply")
        level, head = queue(m, SlotPool.WRITE_BACKS, 1 + len(write.lines), dut.write_back.valid,
                            Cat(watched(write.address), write.lines), apply, "write_back")
        m.d.comb += [apply.eq(AnySeq(1) & (level != 0)),
                     dut.write_backs_held.eq(level),
                     dut.writes_pending.eq((level != 0).replicate(dut.slices))]
        with m.If(dut.write_back.valid):
            m.d.comb += Assert(level < SlotPool.WRITE_BACKS,
                               "a write-back made while the memory port held WRITE_BACKS")
        with m.If(apply & head[0]):
            m.d.sync += stored_kept.eq(head[1:])
        return stored

    def check(self, m, dut):
        raise NotImplementedError


class LineCountExactThroughEvictions(_PoolHarness):
    """For the watched line, every contribution is accepted or rejected (with its reason) as
    its count says, whatever evicted, filled or wrote the line back before it: the count the
    pool holds, on chip or in memory, is the number of contributions accepted. And once a
    ``FLUSH`` or ``EVICT`` of the line's slot has been taken, with no contribution to the line
    since, device memory holds the line's exact accumulator image (count, lane counts and
    result line) whenever the pool is ``idle``."""

    def check(self, m, dut):
        result, marks = dut.result.payload, self.answer_marks
        with m.If(self.answered & ~marks.read):
            m.d.comb += [Assert(~result.error, "the watched line's fill failed"),
                         Assert(result.accepted == marks.accepted,
                                "a contribution to the watched line accepted or rejected "
                                "against its count"),
                         Assert(result.reason == marks.reason,
                                "a contribution to the watched line with the wrong reason")]
        written = Signal()
        with m.If(self.contributed):
            m.d.sync += written.eq(0)
        with m.Elif(self.scan_of_line):
            m.d.sync += written.eq(1)
        with m.If(written & dut.idle):
            m.d.comb += Assert(self.memory == self.reference,
                               "memory after a flush or eviction is not the watched line's "
                               "count, lanes and result line")


class ReadReflectsEveryContribution(_PoolHarness):
    """A ``READ`` of the watched line answers its result line (the majority of its lane counts)
    with every contribution accepted before the read in it: whether the line is on chip, being
    filled, or in memory after it completed and was written back or evicted."""

    def check(self, m, dut):
        result, marks = dut.result.payload, self.answer_marks
        with m.If(self.answered & marks.read):
            m.d.comb += [Assert(~result.error, "the watched line's read failed"),
                         Assert(result.line == marks.line,
                                "a read of the watched line is not its result line")]
