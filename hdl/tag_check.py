"""The slot pool's tag check: whether T1's op's line is in its slot (:mod:`hdl.slots`)."""

import types

from amaranth import Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .bram import PRIMITIVES, READ_LATENCY, RegisteredMemory

__all__ = ["TagCheck"]


class TagCheck(wiring.Component):
    """The slots' valid bits and tags, and the hit check of the op that moves from T0 through
    TA into T1, kept exact by every change P2 makes to a slot's line since.

    The tags are in block RAM (:class:`hdl.bram.RegisteredMemory`, read two clocks after its
    address), read at T0's slot of after the edge (``t0_next_index``), so that the word of
    an op's slot is out on the clock it enters TA, and kept in a register from then while
    the op stays. P2's changes to it (a *retag*: an install gives a slot a line, an
    eviction, drop or covering clear takes it out) are written a clock late, from registers,
    so that the memory's write enables have no logic in front of them. The read misses the
    writes of the two edges before the op enters TA and of that edge: the op entering TA
    takes the retags those writes carry (P2's of the three clocks before) as retags of its
    slot, the newest first. T1's ``hit`` is a register, so that the pool's decision to move
    on or to miss has no logic in front of it (pipeline rule 3). Block RAM rather than LUT
    RAM: the cells that can hold LUT RAM are few on the die, and the controller's queues
    need most of them (``make report``'s placement logs count them).

    A tag is compared above the slot index only: a slot only holds lines whose index is its
    own, and accumulators are aligned to their size, so the bits below are the same for every
    line a slot can hold.

    Parameters
    ----------
    params : ControllerParams
        ``slots``, ``address_bits``, and the accumulator's size.
    primitives : None or "ecp5"
        How the tags' block RAM is made (:class:`hdl.bram.RegisteredMemory`).
    probes : int
        Look-ups for a prefetch (``probe_*``) on every clock.

    Members
    -------
    t0_tag : In(address_bits)
        T0's op's line.
    t0_next_index : In(slot_index_bits)
        T0's slot after this clock edge.
    ta_tag, t1_tag : In(address_bits)
        TA's and T1's ops' lines.
    ta_loads : In(1)
        TA takes T0's op on this edge (whether or not the op is taken).
    ta_moves : In(1)
        T1 takes TA's op on this edge.
    p2_index, p2_tag : In(slot_index_bits), In(address_bits)
        P2's op's slot and line.
    p2_install : In(1)
        P2's op installs its line in its slot (with ``retag``).
    retag : In(1)
        P2's op gives its slot another line, or none.
    p2_on_t0, p2_on_ta, p2_on_t1 : In(1)
        P2's slot is T0's, TA's, T1's.
    t1_installs : In(1)
        T1's op moves into P2 on this edge with its line's fill (a fast install,
        :class:`hdl.miss_handler.MissHandler`), giving its slot that line.
    t1_on_ta : In(1)
        T1's slot is TA's.
    hit : Out(1)
        T1's op's line is in its slot (a register).
    hit_next : Out(1)
        ``hit`` after this edge.
    occupied : Out(1)
        T1's op's slot holds a line, its own or another (a register, kept as ``hit`` is, but
        for P2's op of the clock): the valid bit of T1's slot word, which P2's op of the
        clock is not in, without the slot's block RAM in front of the decisions made of it.
    probe_index, probe_tag : In(ArrayLayout(slot_index_bits, probes)), In(ArrayLayout(...))
        Lines to look up for a prefetch (:class:`hdl.prefetch.FillHints`), each on a read
        port of its own.
    probe_resident : Out(probes)
        Bit ``k``: the tags, as the memory holds them (a clock or two behind P2's retags), put
        line ``probe_tag[k]`` in slot ``probe_index[k]``, by its lowest ``PROBE_BITS`` tag
        bits: a memory of those bits and the valid bit, read without a clock (LUT RAM, a
        copy per look-up), written as the block RAM is.
    """

    #: Tag bits (the lowest) that a look-up for a prefetch compares: a line that shares them
    #: with its slot's line is taken as resident and not read ahead, and Yosys keeps only
    #: these bits of the look-up's copy of the LUT RAM.
    PROBE_BITS = 7

    def __init__(self, params, *, primitives=None, probes=1):
        if primitives not in PRIMITIVES:
            raise ValueError(f"primitives must be one of {PRIMITIVES}, not {primitives!r}")
        if not isinstance(probes, int) or probes < 1:
            raise ValueError(f"probes must be a positive integer, not {probes!r}")
        self._params = params
        self._primitives = primitives
        index_bits, address_bits = params.slot_index_bits, params.address_bits
        #: The lowest tag bit compared: bits below are the same for every line of a slot.
        self.tag_lsb = params.accumulator_line_lsb + index_bits
        self.tag_layout = data.StructLayout({
            "valid": 1, "tag": unsigned(max(0, address_bits - self.tag_lsb))})
        super().__init__({
            "t0_tag": In(address_bits),
            "t0_next_index": In(index_bits),
            "ta_tag": In(address_bits), "t1_tag": In(address_bits),
            "ta_loads": In(1), "ta_moves": In(1),
            "p2_index": In(index_bits), "p2_tag": In(address_bits),
            "p2_install": In(1), "retag": In(1),
            "p2_on_t0": In(1), "p2_on_ta": In(1), "p2_on_t1": In(1),
            "t1_installs": In(1), "t1_on_ta": In(1),
            "hit": Out(1), "hit_next": Out(1), "occupied": Out(1),
            "probe_index": In(data.ArrayLayout(index_bits, probes)),
            "probe_tag": In(data.ArrayLayout(address_bits, probes)),
            "probe_resident": Out(probes),
        })

    def elaborate(self, platform):
        m = Module()
        lsb, retag = self.tag_lsb, self.retag
        assert READ_LATENCY == 2        # the retags the read misses, below
        m.submodules.tags = tags = RegisteredMemory(
            width=self.tag_layout.size, depth=self._params.slots, primitives=self._primitives)
        # The write the memory takes on the next clock edge: P2's retag of the last.
        late = Signal(data.StructLayout({"en": 1, "addr": len(self.p2_index),
                                         "data": self.tag_layout}))
        m.d.sync += [late.en.eq(retag), late.addr.eq(self.p2_index),
                     late.data.valid.eq(self.p2_install), late.data.tag.eq(self.p2_tag[lsb:])]
        m.d.comb += [tags.write_en.eq(late.en), tags.write_addr[0].eq(late.addr),
                     tags.write_data.eq(late.data), tags.read_addr[0].eq(self.t0_next_index)]
        self._probe(m, late)

        # TA's slot's word as the memory stood two edges before the op entered TA (the block
        # RAM's word on TA's first clock, ``fresh``, and a register of it after), unless P2
        # has given the slot another line or none since, on the edge the op entered TA
        # included (``ta_retagged``).
        fresh = Signal()
        kept = Signal(self.tag_layout)
        m.d.sync += fresh.eq(self.ta_loads)
        with m.If(fresh):
            m.d.sync += kept.eq(tags.read_data)
        ta_word = self.tag_layout(Mux(fresh, tags.read_data, kept))
        ta_retagged = Signal()
        # The memory's writes on the next edge (``late``, P2's retag of the last clock) and
        # on the one after it (``late_after``, this clock's), made registers of whether they
        # are to T0's slot a clock before: from P2's slot (or ``late``'s) and T0's next.
        late_on_t0, earlier_on_t0 = Signal(), Signal()
        earlier = Signal.like(late.data)
        m.d.sync += [late_on_t0.eq(retag & (self.p2_index == self.t0_next_index)),
                     earlier_on_t0.eq(late.en & (late.addr == self.t0_next_index)),
                     earlier.eq(late.data)]
        with m.If(self.ta_loads):
            m.d.sync += ta_retagged.eq((retag & self.p2_on_t0) | late_on_t0 | earlier_on_t0)
        with m.Elif(retag & self.p2_on_ta):
            m.d.sync += ta_retagged.eq(1)
        slots = types.SimpleNamespace(ta_word=ta_word, ta_retagged=ta_retagged,
                                      late_on_t0=late_on_t0, late=late.data, earlier=earlier)

        # T1's line in its slot: P2's op installs the line, a word holds it.
        def installs_line(tag):
            return self.p2_install & (self.p2_tag[lsb:] == tag[lsb:])

        def holds_line(word, tag):
            return word.valid & (word.tag == tag[lsb:])

        self._t1_flag(m, slots, "hit", self.hit, self.hit_next, installs_line, holds_line,
                      behind_install=self.t1_tag[lsb:] == self.ta_tag[lsb:])
        # T1's slot occupied: any install fills it, a valid word holds a line. Behind a fast
        # install, the slot is as P2 finds it (empty: a fast install is into an empty slot),
        # as T1's slot word is: P2's op of the clock is not in it.
        self._t1_flag(m, slots, "occupied", self.occupied, Signal(name="occupied_next"),
                      lambda tag: self.p2_install, lambda word, tag: word.valid,
                      behind_install=0)
        return m

    def _t1_flag(self, m, slots, name, flag, flag_next, installs, holds, behind_install):
        """A register ``flag`` (and its next value ``flag_next``) of what T1's slot holds,
        kept exact as the op moves from T0 through TA into T1 and P2 retags slots:
        ``installs(tag)``, whether P2's retag makes the slot hold what the op with line
        ``tag`` looks for; ``holds(word, tag)``, whether a tag memory word does;
        ``behind_install``, what an op holds that moves into T1 behind a fast install of its
        slot (``t1_installs``). ``slots``: what every flag shares (TA's word and whether it
        was retagged since it was read, and the memory's writes on its way)."""
        retag = self.retag

        def after_edge(on_slot, tag, before):
            """The flag of a slot after this edge, given that it was ``before`` until it, and
            whether P2's op is on it (``on_slot``)."""
            return Mux(retag & on_slot, installs(tag), before)

        # TA's flag: from its slot's word, or, once retagged, from the newest retag
        # (``retag_flag``).
        retag_flag = Signal(name=f"ta_retag_{name}")
        ta_flag = Mux(slots.ta_retagged, retag_flag, holds(slots.ta_word, self.ta_tag))
        newest = Mux(slots.late_on_t0, holds(slots.late, self.t0_tag),
                     holds(slots.earlier, self.t0_tag))
        with m.If(self.ta_loads):
            m.d.sync += retag_flag.eq(Mux(retag & self.p2_on_t0, installs(self.t0_tag), newest))
        with m.Elif(retag & self.p2_on_ta):
            m.d.sync += retag_flag.eq(installs(self.ta_tag))
        # An op that moves into T1 behind a fast install of its slot: the slot holds T1's line
        # from this edge on.
        behind = self.t1_installs & self.t1_on_ta
        m.d.comb += flag_next.eq(Mux(
            self.ta_moves,
            Mux(behind, behind_install, after_edge(self.p2_on_ta, self.ta_tag, ta_flag)),
            after_edge(self.p2_on_t1, self.t1_tag, flag)))
        m.d.sync += flag.eq(flag_next)

    def _probe(self, m, late):
        """``probe_resident``: a memory of the valid bits and the lowest ``PROBE_BITS`` tag
        bits, read without a clock, written with the block RAM's writes."""
        lsb = self.tag_lsb
        probe_bits = min(self.PROBE_BITS, len(late.data.tag))
        layout = data.StructLayout({"valid": 1, "tag": unsigned(probe_bits)})
        m.submodules.probe_tags = tags = Memory(shape=layout, depth=self._params.slots,
                                                init=[], attrs={"ram_style": "distributed"})
        write = tags.write_port()
        m.d.comb += [write.en.eq(late.en), write.addr.eq(late.addr),
                     write.data.valid.eq(late.data.valid),
                     write.data.tag.eq(late.data.tag[:probe_bits])]
        for k, (index, tag) in enumerate(zip(self.probe_index, self.probe_tag)):
            read = tags.read_port(domain="comb")
            m.d.comb += [read.addr.eq(index), self.probe_resident[k].eq(
                read.data.valid & (read.data.tag == tag[lsb:][:probe_bits]))]
