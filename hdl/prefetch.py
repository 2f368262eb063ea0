"""Fill hints: the line whose fill the slot pool may read before its op reaches T1
(:mod:`hdl.slots`, "Prefetch")."""

from amaranth import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["hint_layout", "prefetch_layout", "same_line", "FillHints"]


def same_line(params, tag, other):
    """Whether accumulator addresses ``tag`` and ``other`` are of the same line: accumulators
    are aligned to their size, so only the bits above it are compared."""
    lsb = params.accumulator_line_lsb
    return tag[lsb:] == other[lsb:]


def hint_layout(params):
    """A hint: a whole-line contribution to the line whose accumulator is at ``tag`` (its first
    byte), in slot ``index``, is on its way to the pool."""
    return data.StructLayout({"tag": unsigned(params.address_bits),
                              "index": unsigned(params.slot_index_bits)})


def prefetch_layout(params):
    """A line the miss handler may read ahead (:class:`hdl.miss_handler.MissHandler`): its
    accumulator's first byte (``tag``) and the address of its ``n`` line (``first``)."""
    return data.StructLayout({"tag": unsigned(params.address_bits),
                              "first": unsigned(params.address_bits)})


class FillHints(wiring.Component):
    """Keeps the hinted lines, oldest first, and offers the oldest, the *candidate*, to the
    miss handler for a prefetch while it seems worth reading: the tags do not put it in its
    slot, and its op has not reached T1 (a miss there reads the line itself).

    The controller hints every whole-line contribution to an aggregating region as it leaves
    the address decoder, clocks before it reaches the pool. A line's contributions come in
    runs, and only a run's first can miss, so a hint of the line hinted last is dropped, as
    is a hint that finds the queue full (``DEPTH`` lines, in registers). Each line is looked up
    in the tags (``probe_*``, one look-up a clock) as it enters, and the head again on every
    clock no hint comes (a repeat's look-up takes the clock, so that the choice is a
    register's); the candidate is offered (``candidate.valid``, from registers) from the clock after
    its hint while its last look-up says it is not resident, and leaves the queue when the
    miss handler takes it, or a look-up finds it resident or its op in T1 (a clock before).
    The tags are a clock or two behind P2's changes, so a line may be offered a clock after it
    became resident: a prefetch is a guess, which the miss handler checks before it uses one.

    Parameters
    ----------
    params : ControllerParams
        Addresses, slots and the accumulator's layout.

    Members
    -------
    hint : In(stream.Signature(hint_layout(params), always_ready=True))
    probe_index, probe_tag : Out(slot_index_bits), Out(address_bits)
        The candidate, to look up in the tags (:class:`hdl.tag_check.TagCheck`).
    probe_resident : In(1)
        The tags put ``probe_tag`` in slot ``probe_index``.
    t1_valid, t1_tag : In(1), In(address_bits)
        T1's op, and its line.
    candidate : Out(stream.Signature(prefetch_layout(params)))
        Taken when the miss handler starts the candidate's read.
    """

    #: Lines the queue keeps: the ones whose ops can be on their way between the decoder and
    #: T1 at once, in runs of a few contributions each.
    DEPTH = 2

    def __init__(self, params):
        self._params = params
        p = params.datapath
        self._n_line_offset = p.state_lines * p.line_bytes
        assert self._n_line_offset < params.accumulator_bytes_per_line
        super().__init__({
            "hint": In(stream.Signature(hint_layout(params), always_ready=True)),
            "probe_index": Out(params.slot_index_bits),
            "probe_tag": Out(params.address_bits),
            "probe_resident": In(1),
            "t1_valid": In(1),
            "t1_tag": In(params.address_bits),
            "candidate": Out(stream.Signature(prefetch_layout(params))),
        })

    def elaborate(self, platform):
        m = Module()
        params, hint, candidate = self._params, self.hint, self.candidate
        lsb = params.accumulator_line_lsb
        entry = data.StructLayout({"line": hint_layout(params), "resident": 1})
        last = Signal(params.address_bits)      # the line hinted last
        last_valid = Signal()
        fresh = hint.valid & ~(last_valid & same_line(params, hint.payload.tag, last))
        with m.If(hint.valid):
            m.d.sync += [last.eq(hint.payload.tag), last_valid.eq(1)]
        # One look-up a clock: of a hint, kept with it if it is fresh, else of the head (the
        # choice by the hint's valid, a register, not by the compare that makes ``fresh``).
        pop = Signal()
        head, held = self._queue(m, entry, fresh, Cat(hint.payload, self.probe_resident), pop)
        looked_at = hint_layout(params)(Mux(hint.valid, hint.payload, head.line))
        m.d.comb += [self.probe_index.eq(looked_at.index), self.probe_tag.eq(looked_at.tag)]
        kept = Signal()             # the head is the one of a clock ago
        looked_up = Signal()        # and ``resident`` is of it
        resident = Signal()         # the tags put the head in its slot, a clock ago
        arrived = Signal()          # its op was in T1, a clock ago
        m.d.sync += [kept.eq(held & ~pop), looked_up.eq(~hint.valid),
                     resident.eq(self.probe_resident),
                     arrived.eq(self.t1_valid & same_line(params, self.t1_tag, head.line.tag))]
        # A new head (or one whose look-up gave way to a hint) goes by its look-up on entry.
        seen_resident = Mux(kept & looked_up, resident, head.resident)
        gone = kept & arrived
        # The read starts at the state's n line: the tag's low bits are 0, so its offset is
        # put there, with no adder (FillReader.first_line).
        first = Cat(Const(self._n_line_offset, lsb), head.line.tag[lsb:])
        m.d.comb += [candidate.payload.tag.eq(head.line.tag),
                     candidate.payload.first.eq(first),
                     candidate.valid.eq(held & ~seen_resident & ~gone),
                     pop.eq((candidate.valid & candidate.ready)
                            | (held & (seen_resident | gone)))]
        return m

    def _queue(self, m, entry, push, value, pop):
        """The lines, oldest first, in ``DEPTH`` registers (``value`` of ``entry``'s layout
        taken while ``push`` and there is room, the head dropped while ``pop``): the head
        and whether there is one, both registers."""
        entries = [Signal(entry, name=f"line{k}") for k in range(self.DEPTH)]
        count = Signal(range(self.DEPTH + 1))
        room = count != self.DEPTH
        taken = push & room
        after_pop = count - pop             # where a pushed line goes
        for k, current in enumerate(entries):
            behind = entries[k + 1] if k + 1 < self.DEPTH else current
            with m.If(taken & (after_pop == k)):
                m.d.sync += current.eq(value)
            with m.Elif(pop):
                m.d.sync += current.eq(behind)
        held = Signal()
        following = count - pop + taken
        m.d.sync += [count.eq(following), held.eq(following != 0)]
        return entries[0], held
