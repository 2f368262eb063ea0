"""Fill hints: the line whose fill the slot pool may read before its op reaches T1
(:mod:`hdl.slots`, "Prefetch")."""

from amaranth import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["hint_layout", "prefetch_layout", "same_line", "HintSource", "FillHints"]


def same_line(params, tag, other):
    """Whether accumulator addresses ``tag`` and ``other`` are of the same line: accumulators
    are aligned to their size, so only the bits above it are compared."""
    lsb = params.accumulator_line_lsb
    return tag[lsb:] == other[lsb:]


def hint_layout(params):
    """A hint: a whole-line contribution to the line whose accumulator is at ``tag`` (its first
    byte), in slot ``index``, is on its way to the pool; ``repeat``: the hint before it was of
    the same line."""
    return data.StructLayout({"tag": unsigned(params.address_bits),
                              "index": unsigned(params.slot_index_bits), "repeat": 1})


def prefetch_layout(params):
    """A line the miss handler may read ahead (:class:`hdl.miss_handler.MissHandler`): its
    accumulator's first byte (``tag``) and the address of its ``n`` line (``first``)."""
    return data.StructLayout({"tag": unsigned(params.address_bits),
                              "first": unsigned(params.address_bits)})


class HintSource(wiring.Component):
    """The controller's hints to the slot pool (:class:`FillHints`), from registers: a hint of
    the line whose accumulator is at ``line.payload`` on the clock after ``line.valid`` (a
    whole-line contribution to it left the address decoder), flagged ``repeat`` when the line
    hinted before it was the same. The lines are compared here, beside the hint's register,
    so that the pool's queues of hints steer by a flip-flop.

    Members
    -------
    line : In(stream.Signature(address_bits, always_ready=True))
    hint : Out(stream.Signature(hint_layout(params), always_ready=True))
    """

    def __init__(self, params):
        self._params = params
        super().__init__({
            "line": In(stream.Signature(params.address_bits, always_ready=True)),
            "hint": Out(stream.Signature(hint_layout(params), always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        params, line, hint = self._params, self.line, self.hint
        last = Signal(params.address_bits)      # the line hinted last
        last_valid = Signal()
        with m.If(line.valid):
            m.d.sync += [last.eq(line.payload), last_valid.eq(1)]
        m.d.sync += [hint.valid.eq(line.valid),
                     hint.payload.tag.eq(line.payload),
                     hint.payload.index.eq(line.payload[params.accumulator_line_lsb:]),
                     hint.payload.repeat.eq(last_valid & same_line(params, line.payload, last))]
        return m


class FillHints(wiring.Component):
    """Keeps the hinted lines, oldest first, and offers the oldest, the *candidate*, to the
    miss handler for a prefetch while it seems worth reading: the tags do not put it in its
    slot, and its op has not reached T1 (a miss there reads the line itself).

    The controller hints every whole-line contribution to an aggregating region as it leaves
    the address decoder, clocks before it reaches the pool. A line's contributions come in
    runs, and only a run's first can miss, so a hint that repeats the line hinted before it
    (``repeat``: the controller compares the lines beside its hint's register, so that no
    compare is in front of the queue's enables) is dropped, as is a hint that finds the queue
    full (``DEPTH`` lines, in registers). Each line is looked up
    in the tags (``probe_*``) as it enters, and the head again on every clock, each look-up
    on a port of its own (``LOOK_UPS``) addressed straight from a register; the candidate is
    offered (``candidate.valid``, from registers) from the clock after its hint while its
    last look-up says it is not resident, and leaves the queue on the clock after the miss
    handler takes it (not offered again meanwhile), or when a look-up finds it resident or its
    op in T1 (a clock before).
    The tags are a clock or two behind P2's changes, so a line may be offered a clock after it
    became resident: a prefetch is a guess, which the miss handler checks before it uses one.

    Parameters
    ----------
    params : ControllerParams
        Addresses, slots and the accumulator's layout.

    Members
    -------
    hint : In(stream.Signature(hint_layout(params), always_ready=True))
    probe_index, probe_tag : Out(ArrayLayout(slot_index_bits, LOOK_UPS)), Out(ArrayLayout(...))
        The lines to look up in the tags (:class:`hdl.tag_check.TagCheck`): the hint's
        (look-up 0) and the head's (look-up 1).
    probe_resident : In(LOOK_UPS)
        Bit ``k``: the tags put ``probe_tag[k]`` in slot ``probe_index[k]``.
    t1_valid, t1_tag : In(1), In(address_bits)
        T1's op, and its line.
    candidate : Out(stream.Signature(prefetch_layout(params)))
        Taken when the miss handler starts the candidate's read.
    """

    #: Lines the queue keeps: the ones whose ops can be on their way between the decoder and
    #: T1 at once, in runs of a few contributions each.
    DEPTH = 2

    #: Look-ups in the tags on every clock: a hint's, and the head's.
    LOOK_UPS = 2

    def __init__(self, params):
        self._params = params
        p = params.datapath
        self._n_line_offset = p.state_lines * p.line_bytes
        assert self._n_line_offset < params.accumulator_bytes_per_line
        super().__init__({
            "hint": In(stream.Signature(hint_layout(params), always_ready=True)),
            "probe_index": Out(data.ArrayLayout(params.slot_index_bits, self.LOOK_UPS)),
            "probe_tag": Out(data.ArrayLayout(params.address_bits, self.LOOK_UPS)),
            "probe_resident": In(self.LOOK_UPS),
            "t1_valid": In(1),
            "t1_tag": In(params.address_bits),
            "candidate": Out(stream.Signature(prefetch_layout(params))),
        })

    def elaborate(self, platform):
        m = Module()
        params, hint, candidate = self._params, self.hint, self.candidate
        lsb = params.accumulator_line_lsb
        entry = data.StructLayout({"line": hint_layout(params), "resident": 1})
        # Two look-ups a clock: of the hint, kept with it if it is fresh, and of the head.
        pop = Signal()
        head, held = self._queue(m, entry, hint.valid & ~hint.payload.repeat,
                                 Cat(hint.payload, self.probe_resident[0]), pop)
        for k, line in enumerate((hint.payload, head.line)):
            m.d.comb += [self.probe_index[k].eq(line.index), self.probe_tag[k].eq(line.tag)]
        kept = Signal()             # the head is the one of a clock ago
        resident = Signal()         # the tags put the head in its slot, a clock ago
        arrived = Signal()          # its op was in T1, a clock ago
        m.d.sync += [kept.eq(held & ~pop), resident.eq(self.probe_resident[1]),
                     arrived.eq(self.t1_valid & same_line(params, self.t1_tag, head.line.tag))]
        # A new head goes by its look-up on entry.
        seen_resident = Mux(kept, resident, head.resident)
        gone = kept & arrived
        # The read starts at the state's n line: the tag's low bits are 0, so its offset is
        # put there, with no adder (FillReader.first_line).
        first = Cat(Const(self._n_line_offset, lsb), head.line.tag[lsb:])
        # A candidate taken leaves the queue on the next clock, by a register, and is not
        # offered meanwhile: the miss handler's decision to take it (made late in the clock,
        # from the tags and the stages) reaches no entry of the queue within a clock. The
        # reader it starts is busy for longer than that, so no prefetch waits for it.
        taken = Signal()
        m.d.sync += taken.eq(candidate.valid & candidate.ready)
        m.d.comb += [candidate.payload.tag.eq(head.line.tag),
                     candidate.payload.first.eq(first),
                     candidate.valid.eq(held & ~seen_resident & ~gone & ~taken),
                     pop.eq(taken | (held & (seen_resident | gone)))]
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
