"""AXI4 master toward device memory, moving whole lines.

The port uses the AXI4 signal names (``awaddr``, ``wdata``, ``rready``, ...), so a vendor wrapper
or cocotbext-axi's ``AxiBus.from_prefix(dut, "axi", bus_separator="__")`` binds it directly.
"""

import types

from amaranth import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .bram import (
    PRIMITIVES,
    READ_LATENCY,
    Interleave,
    RegisteredMemory,
    address_copies,
    copy_slices,
)
from .credit import CreditReceiver, CreditSender, credit_loop
from .pipeline import (
    PipelineRegister,
    SkidBuffer,
    column_slices,
    delayed,
    register_copies,
    register_tree,
)

__all__ = ["axi4_signature", "read_command_layout", "write_burst_layout",
           "write_line_layout", "AxiMemoryPort"]

#: AXI4 ``xBURST`` code of an incrementing burst, and the ``xRESP`` codes of a good response,
#: a subordinate's refusal (SLVERR) and an address with no data (DECERR).
BURST_INCR = 0b01
RESP_OKAY = 0b00
RESP_SLVERR = 0b10
RESP_DECERR = 0b11


def axi4_signature(*, address_bits, data_bits, id_bits):
    """An AXI4 manager port (the subset of signals a memory needs)."""
    return wiring.Signature({
        "awaddr": Out(address_bits), "awid": Out(id_bits), "awlen": Out(8), "awsize": Out(3),
        "awburst": Out(2), "awvalid": Out(1), "awready": In(1),
        "wdata": Out(data_bits), "wstrb": Out(data_bits // 8), "wlast": Out(1),
        "wvalid": Out(1), "wready": In(1),
        "bid": In(id_bits), "bresp": In(2), "bvalid": In(1), "bready": Out(1),
        "araddr": Out(address_bits), "arid": Out(id_bits), "arlen": Out(8), "arsize": Out(3),
        "arburst": Out(2), "arvalid": Out(1), "arready": In(1),
        "rdata": In(data_bits), "rid": In(id_bits), "rresp": In(2), "rlast": In(1),
        "rvalid": In(1), "rready": Out(1),
    })


def read_command_layout(*, address_bits, id_bits):
    """A read burst: ``beats`` lines (1 to 256) from line-aligned byte ``address``."""
    return data.StructLayout({"id": unsigned(id_bits), "address": unsigned(address_bits),
                              "beats": unsigned(9)})


def write_burst_layout(*, address_bits, id_bits, line_bits, beats):
    """A write burst of ``beats`` whole lines (``lines``, line 0 first) from line-aligned byte
    ``address``, every byte enabled."""
    return data.StructLayout({"id": unsigned(id_bits), "address": unsigned(address_bits),
                              "lines": unsigned(beats * line_bits)})


#: What a W beat read from the banks carries to the W queue beside its line: whether it is
#: its write's last (``WLAST``) and of a one-line write.
_BEAT_FLAGS = data.StructLayout({"last": 1, "line": 1})


def _w_beat_layout(line_bits):
    """A W beat in the W queue: its line and byte enables, and :data:`_BEAT_FLAGS`."""
    return data.StructLayout({"data": unsigned(line_bits), "strobe": unsigned(line_bits // 8),
                              **_BEAT_FLAGS.members})


def write_line_layout(*, address_bits, id_bits, line_bits):
    """A write of one line at line-aligned byte ``address``, its byte enables ``strobe``."""
    return data.StructLayout({"id": unsigned(id_bits), "address": unsigned(address_bits),
                              "line": unsigned(line_bits), "strobe": unsigned(line_bits // 8)})


class AxiMemoryPort(wiring.Component):
    """Device memory through an AXI4 port: read bursts of whole lines, write bursts of a fixed
    number of lines and one-line writes, several in flight, each with the ID its owner gives.

    - ``read_command`` issues one AR per command (``ARLEN = beats - 1``); the lines come back
      on ``read_data``, one per clock that it is valid, with the read's ID and ``error`` when
      the memory answered anything but OKAY (the line's ``data`` is then 0). ``RREADY`` is
      always high: an owner issues a read only when it will take every line of it. Lines of
      one ID come back in order. The AR side has a skid buffer: ``read_command.ready`` is a
      register, and ``ARREADY`` reaches no logic of the owner.
    - ``write_burst`` (``burst_beats`` lines, every byte enabled) is taken on every clock it
      is valid: it has no ``ready``. Its owner keeps ``bursts_held`` at most ``bursts``: a
      register, the bursts in the W buffer (below) taken up to ``TAKE_LAG`` edges before the
      last one, less those whose AW had left for the AW register and whose W had all gone
      by the edge before it (``HELD_LAG``: no channel's ready reaches it). The port has room
      for the ``TAKE_LAG`` clocks' more. So a slot pool's write-backs leave its result unit
      straight into the port, and wait nowhere else.
    - ``write_line`` (one line, with its byte enables) is taken while ``ready``, a register
      that falls once ``LINE_WRITES`` one-line writes may be held, counted as
      ``bursts_held`` counts bursts, on the same clock as a burst or not. Its ``line`` and
      ``strobe`` come ``LINE_LAG`` clocks after the take, its ``id`` and ``address`` on the
      take's clock.
    - Every write waits in the *W buffer* until its AW and its W beats have gone, each
      channel in the order the writes were taken (a clock's burst first, then its line): W
      may go ahead of AW (AXI4 allows it), so one-line writes go at one per clock even to a
      memory that takes a burst's W only after its AW. Each kind of write has a ring of its
      own, a burst's lines in the burst bank, a one-line write's line and byte enables in
      the line bank, and a ring of one bit per write keeps their order. The banks are block
      RAM (:class:`hdl.bram.RegisteredMemory`, read two clocks after the address): a line
      queue of LUT RAM is a hundred cells spread over the die, a block RAM column is 36 bits.
      The burst bank holds a burst's lines interleaved (:class:`hdl.bram.Interleave`): each
      block column holds the same bits of every beat, so that the beat W sends is chosen
      beside each block, from its own outputs (with a bank per beat, each bit's choice
      gathered the outputs of blocks spread over the die, and routing failed there).
      A take moves only pointers: each bank is written on every clock at its ring's next
      free entry, taken or not (the line bank ``LINE_LAG`` clocks late, when the owner gives
      the line, at copies of the entry it was taken at), so that no bank's address depends
      on the other kind's take, with copies of the entry it writes and the entry it reads
      for each group of its block columns (a burst bank's: ``bank_groups``). The rest of the
      port (the order ring, the counts, the AW addresses) keeps a record of the takes
      ``TAKE_LAG`` clocks late, from registers beside it.
    - W's beats are read from the banks in order into the *W queue* (``W_QUEUE`` beats),
      which W leaves from: a read needs a credit of the queue (:mod:`hdl.credit`), so
      ``WREADY`` moves the queue's pointers and the counts of what waits (which
      ``bursts_held`` follows a clock later), never the entries the banks are read at. The
      banks read a write from the second clock after its record, as AW sends it (from its
      register, refilled on the edge after the record's), when the order ring already says
      which bank holds it, so that no take reaches the choice of the bank; its first beat is
      on W ``FIRST_W`` clocks after the take.
    - AW leaves from a register and W from the W queue, read without a clock: ``AWREADY``
      and ``WREADY`` reach no logic of the owner. ``write_response`` is valid for a clock per
      B response, with its ID and ``error``.

    A burst must not cross a 4 KiB boundary (AXI4): the controller's bursts are an accumulator
    aligned to its power-of-two size.

    Parameters
    ----------
    line_bits, address_bits, id_bits : int
    burst_beats : int
        Lines of a ``write_burst``.
    bursts : int
        Write bursts the owner may have in the port at once.
    primitives : None or "ecp5"
        How the banks' block RAM is made (:class:`hdl.bram.RegisteredMemory`).

    Members
    -------
    axi : Out(axi4_signature(...))
    read_command : In(stream.Signature(read_command_layout(...)))
    read_data : Out(stream.Signature({"id", "data", "error"}, always_ready=True))
    write_burst : In(stream.Signature(write_burst_layout(...), always_ready=True))
    write_burst_copies : In(len(bank_groups))
        ``write_burst.valid`` again, a copy for each address group of the W banks
        (:attr:`bank_groups`), which the owner keeps equal to it: group ``g``'s block columns
        take a burst by copy ``g`` alone, so that an owner whose lines come from several
        places can make each group's copy beside that group's lines (pipeline rule 2).
    bursts_held : Out(range(bursts + TAKE_LAG + 1))
    write_line : In(stream.Signature(write_line_layout(...)))
    write_response : Out(stream.Signature({"id", "error"}, always_ready=True))
    """

    #: Clocks from a beat's read of the banks to its entry in the W queue's memory, beyond the
    #: banks' ``READ_LATENCY``: the beat (the line chosen among the burst's beats and the
    #: line bank) is registered beside the banks and written at copies of the queue's write
    #: pointer that come through a tree (:class:`hdl.credit.CreditReceiver`'s ``write_lag``),
    #: so that neither the beat's mux nor the queue's valid reaches the queue's far columns
    #: within a clock.
    W_WRITE_LAG = 1

    #: Clocks from a write's take to the port's record of it (the order ring, the counts, the
    #: AW address memories): each kind's take, ID and address go through a register beside
    #: the port first, so that neither owner's valid reaches them within a clock. Only the
    #: banks' write pointers, each group's copy, move on the take's own clock.
    TAKE_LAG = 1

    #: Clocks from a write's take to its first W beat, with nothing ahead of it: the banks read
    #: it from the second clock after its record (``TAKE_LAG``), their data comes
    #: ``READ_LATENCY`` clocks after the address, it goes into the W queue ``W_WRITE_LAG``
    #: clocks later, and the queue gives an entry from the clock after that.
    FIRST_W = TAKE_LAG + 2 + READ_LATENCY + W_WRITE_LAG + 1

    #: Clock edges from a write's last move (its AW into the AW register or its last W beat)
    #: to the one after which ``bursts_held`` and ``write_line.ready`` no longer count it:
    #: the counts' registers, then the room's. The room is made from the counts' registers
    #: and the clock's takes alone, so that neither ``AWREADY`` and ``WREADY`` nor the
    #: channels' moves reach the owner within a clock.
    HELD_LAG = 2

    #: One-line writes the W buffer holds: one for each clock from a take until the room it
    #: held is back (``FIRST_W``, then ``HELD_LAG``), so that they go at one per clock to a
    #: memory that takes each W beat as it comes. The room is made from the port's record,
    #: which misses the takes of the last ``TAKE_LAG`` clocks: ``ready`` falls that many
    #: entries early.
    LINE_WRITES = FIRST_W + HELD_LAG

    #: Clocks from a one-line write's take to its line and byte enables: they go straight to
    #: the W banks' column groups, and an owner may read them from a queue through a register
    #: tree of its read pointer (:class:`hdl.pipeline.EagerFIFO`'s ``lag``), so that no take
    #: reaches a column group within its clock. At least ``TAKE_LAG``: the line goes to the
    #: entry the port's record of the take gives.
    LINE_LAG = 1
    assert LINE_LAG >= TAKE_LAG

    #: Beats the W queue holds: W reads a beat from the banks only with a credit of the queue,
    #: and a credit comes back from a register a clock after W takes a beat, so the queue has
    #: an entry for each clock of that loop (:func:`hdl.credit.credit_loop`: the banks'
    #: :data:`hdl.bram.READ_LATENCY` forward, none back, an entry readable ``W_WRITE_LAG + 1``
    #: clocks after its write) and W can send a beat on every clock.
    W_QUEUE = credit_loop(READ_LATENCY, back=0, queue=1 + W_WRITE_LAG)

    def __init__(self, *, line_bits, address_bits, id_bits, burst_beats, bursts,
                 primitives=None):
        for name, value, low in (("line_bits", line_bits, 8), ("address_bits", address_bits, 8),
                                 ("id_bits", id_bits, 1), ("burst_beats", burst_beats, 1),
                                 ("bursts", bursts, 1)):
            if not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer of at least {low}, not {value!r}")
        if line_bits & (line_bits - 1) or line_bits > 1024:
            raise ValueError(f"line_bits must be a power of two up to 1024 (the widest AXI4 "
                             f"transfer), not {line_bits}")
        if burst_beats > 256:
            raise ValueError(f"burst_beats must be at most 256 (AXI4 INCR bursts), "
                             f"not {burst_beats}")
        if primitives not in PRIMITIVES:
            raise ValueError(f"primitives must be one of {PRIMITIVES}, not {primitives!r}")
        self._line_bits = line_bits
        self._burst_beats = burst_beats
        self._primitives = primitives
        # Copies of the entries the one-line bank (a line and its byte enables) is written and
        # read at: one per group of its block columns.
        self._line_copies = address_copies(line_bits + line_bits // 8)
        # A burst's lines in one word of the burst bank, each block column holding the same
        # bits of every beat.
        self._interleave = Interleave(width=line_bits, ways=burst_beats)
        # Entries of each kind's ring: a power of two (the pointers wrap), with one free
        # beyond what may be held, the one written on every clock (the bursts: ``bursts`` and
        # those taken since ``bursts_held`` was made). The order ring has room for every
        # write held and the two a clock may take.
        held_bursts = bursts + self.TAKE_LAG
        self._entries = {"burst": 1 << held_bursts.bit_length(),
                         "line": 1 << self.LINE_WRITES.bit_length()}
        self._orders = 1 << (held_bursts + self.LINE_WRITES + 1).bit_length()
        super().__init__({
            "axi": Out(axi4_signature(address_bits=address_bits, data_bits=line_bits,
                                      id_bits=id_bits)),
            "read_command": In(stream.Signature(read_command_layout(
                address_bits=address_bits, id_bits=id_bits))),
            "read_data": Out(stream.Signature(data.StructLayout({
                "id": unsigned(id_bits), "data": unsigned(line_bits), "error": 1}),
                always_ready=True)),
            "write_burst": In(stream.Signature(write_burst_layout(
                address_bits=address_bits, id_bits=id_bits, line_bits=line_bits,
                beats=burst_beats), always_ready=True)),
            "write_burst_copies": In(len(self.bank_groups)),
            "bursts_held": Out(range(held_bursts + 1)),
            "write_line": In(stream.Signature(write_line_layout(
                address_bits=address_bits, id_bits=id_bits, line_bits=line_bits))),
            "write_response": Out(stream.Signature(data.StructLayout({
                "id": unsigned(id_bits), "error": 1}), always_ready=True)),
        })

    @property
    def groups(self):
        """The column groups of R's lines and of the line W's banks give: slices of a line's
        bits, ``CONTROL_COPY_BITS`` each (:func:`hdl.pipeline.column_slices`)."""
        return column_slices(self._line_bits)

    @property
    def banks(self):
        """The W banks by name: ``(kind, width, depth)`` of each, the bursts' (kind
        ``"burst"``: a burst's lines interleaved) and the one-line writes' (``"line"``: a line
        and its byte enables)."""
        line_bits = self._line_bits
        return {"w_bursts": ("burst", self._interleave.word_bits, self._entries["burst"]),
                "w_line": ("line", line_bits + line_bits // 8, self._entries["line"])}

    @property
    def bank_groups(self):
        """The address groups of the burst bank: the slices of a line's bits (of every beat)
        that one copy of the bank's write and read entries reaches
        (:func:`hdl.bram.copy_slices`)."""
        word_bits = self._interleave.word_bits
        return [self._interleave.value_bits(bits)
                for bits in copy_slices(word_bits, address_copies(word_bits))]

    def elaborate(self, platform):
        m = Module()
        axi = self.axi
        line_bits = self._line_bits
        size = (line_bits // 8).bit_length() - 1
        m.d.comb += [axi.awsize.eq(size), axi.arsize.eq(size), axi.awburst.eq(BURST_INCR),
                     axi.arburst.eq(BURST_INCR), axi.rready.eq(1), axi.bready.eq(1)]

        # AR: a register in front of the channel, refilled on the clock it moves, behind a
        # skid buffer: ``read_command.ready`` is a register, and ``ARREADY`` reaches no logic
        # of the owner.
        m.submodules.ar_skid = ar_skid = SkidBuffer(self.read_command.payload.shape())
        wiring.connect(m, wiring.flipped(self.read_command), ar_skid.sink)
        self._address_register(m, "ar", ar_skid.source)
        # R: registered. A line answered with an error is zeroed in each column group by a
        # copy of the error of its own (rule 2), so that no taker masks a line by one net.
        r_error = axi.rresp != RESP_OKAY
        rdata = Signal.like(axi.rdata, reset_less=True)
        groups = self.groups
        r_errors = register_copies(m, r_error, len(groups), "r_error")
        m.d.comb += self.read_data.payload.data.eq(Cat(
            Mux(error, 0, rdata[bits]) for error, bits in zip(r_errors, groups)))
        m.d.sync += [self.read_data.valid.eq(axi.rvalid),
                     self.read_data.payload.id.eq(axi.rid),
                     rdata.eq(axi.rdata),
                     self.read_data.payload.error.eq(r_error),
                     self.write_response.valid.eq(axi.bvalid),
                     self.write_response.payload.id.eq(axi.bid),
                     self.write_response.payload.error.eq(axi.bresp != RESP_OKAY)]
        self._write_side(m)
        return m

    def _write_side(self, m):
        """The W buffer (see the class docstring), AW and W. ``w`` holds what the sections
        share: the port's record of the takes (``TAKE_LAG`` clocks late, with each kind's ID
        and address), the rings' pointers, and the channels' moves."""
        burst, line = self.write_burst, self.write_line
        taken = {"burst": burst.valid, "line": line.valid & line.ready}
        w = types.SimpleNamespace(
            recorded={kind: register_tree(m, valid, self.TAKE_LAG, 1, f"{kind}_recorded",
                                          reset=True)[0] for kind, valid in taken.items()},
            address_records={
                kind: delayed(m, Cat(payload.id, payload.address), self.TAKE_LAG,
                              f"{kind}_address_recorded")
                for kind, payload in (("burst", burst.payload), ("line", line.payload))},
            aw_moves=Signal(), aw_line=Signal(), last_moves=Signal(), w_line=Signal(),
            read_last=Signal(), read_line=Signal())
        self._write_rings(m, w)
        self._write_waiting(m, w)
        self._aw_channel(m, w)
        self._w_reads(m, w)
        self._w_banks(m, w)

    def _write_rings(self, m, w):
        """The order of the writes and each kind's ring pointer (``w.is_line``,
        ``w.produce``), from the port's record of the takes."""
        taken = w.recorded          # each kind's take, TAKE_LAG clocks late
        # The order of the writes, a bit per write (1: a one-line write), in a ring of its
        # own: a clock's burst first, then its line. Only these narrow flags depend on both
        # takes; each kind's banks and memories are written at its own pointer.
        order_produce = Signal(range(self._orders))
        line_order = Signal.like(order_produce)
        w.is_line = is_line = Signal(self._orders)
        m.d.comb += line_order.eq(order_produce + taken["burst"])
        m.d.sync += order_produce.eq(line_order + taken["line"])
        with m.If(taken["burst"]):
            m.d.sync += is_line.bit_select(order_produce, 1).eq(0)
        with m.If(taken["line"]):
            m.d.sync += is_line.bit_select(line_order, 1).eq(1)

        def after_takes(entry):
            """The ring's bit at ``entry`` after this clock's takes."""
            return Mux(taken["line"] & (line_order == entry), 1,
                       Mux(taken["burst"] & (order_produce == entry), 0,
                           is_line.bit_select(entry, 1)))
        w.after_takes = after_takes
        # Each kind's ring: its banks are written on every clock at the next free entry,
        # ``produce``, in a copy for each of the banks' address groups (rule 2) and one for
        # the rest, which moves with the record of the takes (its AW address memory is
        # written from the recorded ID and address). A burst's lines come from registers of
        # the pool, a burst's worth of them: they are not staged again, and each group's copy
        # of its pointer counts the group's copy of the burst's valid on the take's clock. A
        # one-line write's line and byte enables come ``LINE_LAG`` clocks after its take and go
        # to their bank at copies of the entry it was recorded at, rooted at the recorded
        # pointer's next value: the owner's valid, which comes late in the clock, moves one
        # register, not a copy in every group.
        w.produce = produce = {}
        produce["burst"] = []
        for g, burst_taken in enumerate([*self.write_burst_copies, taken["burst"]]):
            pointer = Signal(range(self._entries["burst"]), name=f"burst_produce_{g}")
            m.d.sync += pointer.eq(pointer + burst_taken)
            produce["burst"].append(pointer)
        line_produce = Signal(range(self._entries["line"]))
        next_line_produce = Signal.like(line_produce)
        m.d.comb += next_line_produce.eq(line_produce + taken["line"])
        m.d.sync += line_produce.eq(next_line_produce)
        staged = register_tree(m, next_line_produce, 1 + self.LINE_LAG - self.TAKE_LAG,
                               self._line_copies, "line_staged_at", reset=True)
        produce["line"] = [*staged, line_produce]

    def _write_waiting(self, m, w):
        """What each kind of write has waiting for AW, for W and for W's reads of the banks
        (taken, not yet sent: a burst's W is sent with its last beat): ``w.waiting``,
        ``bursts_held`` and the room for one-line writes. Both channels go in order, so the
        writes of a kind not yet sent on both are as many as the larger of its two counts."""
        counts, unsent = {}, {}
        for kind, is_kind in (("burst", Const(0)), ("line", Const(1))):
            for channel, sent, sent_line in (("aw", w.aw_moves, w.aw_line),
                                             ("w", w.last_moves, w.w_line),
                                             ("read", w.read_last, w.read_line)):
                count = Signal(range(self._orders), name=f"{kind}_{channel}_waiting")
                next_count = Signal.like(count, name=f"{kind}_{channel}_next")
                # The writes recorded before this clock and not sent on it (W's reads read
                # them).
                unsent[kind, channel] = count - (sent & (sent_line == is_kind))
                m.d.comb += next_count.eq(unsent[kind, channel] + w.recorded[kind])
                m.d.sync += count.eq(next_count)
                counts[kind, channel] = count, next_count
        # What each kind holds after this clock's record, at most (``HELD_LAG``): the larger
        # count as of the last edge, and this clock's record. The takes of the last
        # ``TAKE_LAG`` clocks are not in it (``LINE_WRITES``, ``bursts``).
        held = {kind: Mux(counts[kind, "aw"][0] > counts[kind, "w"][0], counts[kind, "aw"][0],
                          counts[kind, "w"][0]) + w.recorded[kind] for kind in ("burst", "line")}
        # Whether any write waits for AW and for W's reads: registers (AW's valid and W's
        # reads, which W's pointers follow, start from a flip-flop). AW's is made from the
        # counts' next values; the reads' leaves out the writes recorded on this clock, so that
        # a write is read from the second clock after its record, when the order ring says
        # which bank it is in: the bank read next is then chosen without the takes
        # (``next_is_line``).
        w.waiting = waiting = {channel: Signal(name=f"{channel}_waiting")
                               for channel in ("aw", "read")}
        m.d.sync += [waiting["aw"].eq((counts["burst", "aw"][1] != 0)
                                      | (counts["line", "aw"][1] != 0)),
                     waiting["read"].eq((unsent["burst", "read"] != 0)
                                        | (unsent["line", "read"] != 0))]
        line_room = Signal(init=1)
        m.d.sync += [self.bursts_held.eq(held["burst"]),
                     line_room.eq(held["line"] < self.LINE_WRITES - self.TAKE_LAG)]
        m.d.comb += self.write_line.ready.eq(line_room)

    def _aw_channel(self, m, w):
        """AW: the register in front of the channel, refilled from the oldest write whose AW
        has not gone (``aw_order``): its ID and address from the memory of its kind, at that
        kind's own AW pointer."""
        burst = self.write_burst
        aw_order = Signal(range(self._orders))
        aw_order_ahead = Signal(range(self._orders), init=1)
        next_aw_order = Signal.like(aw_order)
        m.d.comb += next_aw_order.eq(aw_order + w.aw_moves)
        m.d.sync += [aw_order.eq(next_aw_order), aw_order_ahead.eq(next_aw_order + 1),
                     # Whether the write at ``aw_order`` is a one-line write: a register, read
                     # from the ring after this clock's takes at the entry the pointer is at
                     # after the edge, so that AW's choices (its address, its counts, its
                     # valid) start from a flip-flop, not from a select over the ring.
                     w.aw_line.eq(Mux(w.aw_moves, w.after_takes(aw_order_ahead),
                                      w.after_takes(aw_order)))]
        address_layout = data.StructLayout({"id": len(burst.payload.id),
                                            "address": len(burst.payload.address)})
        addresses = {}
        for kind, is_kind in (("burst", ~w.aw_line), ("line", w.aw_line)):
            aw_entry = Signal(range(self._entries[kind]), name=f"{kind}_aw_entry")
            m.d.sync += aw_entry.eq(aw_entry + (w.aw_moves & is_kind))
            m.submodules[f"{kind}_addresses"] = memory = Memory(
                shape=address_layout, depth=self._entries[kind], init=[])
            write, read = memory.write_port(), memory.read_port(domain="comb")
            m.d.comb += [write.en.eq(1), write.addr.eq(w.produce[kind][-1]),
                         write.data.eq(w.address_records[kind]), read.addr.eq(aw_entry)]
            addresses[kind] = read.data
        beats = self._burst_beats
        aw_command = stream.Signature(data.StructLayout({
            "id": len(burst.payload.id), "address": len(burst.payload.address),
            "beats": range(1, beats + 1)})).create()
        chosen = address_layout(Mux(w.aw_line, addresses["line"], addresses["burst"]))
        m.d.comb += [aw_command.valid.eq(w.waiting["aw"]),
                     aw_command.payload.id.eq(chosen.id),
                     aw_command.payload.address.eq(chosen.address),
                     aw_command.payload.beats.eq(Mux(w.aw_line, 1, beats)),
                     w.aw_moves.eq(aw_command.valid & aw_command.ready)]
        self._address_register(m, "aw", aw_command)

    def _w_reads(self, m, w):
        """W's reads of the banks, a beat on each clock that one waits and the W queue has a
        credit for it (``w.read``): the write at ``w_order``, its beat ``beat``, each kind's
        banks at that kind's own pointer (``w.read_at``, copies for the banks' address groups).
        Whether the write is a one-line write (``w.read_line``), and the one after it, are
        registers, so that the order ring's read is not in front of the reads' moves. The
        beat's flags (``last``, ``line``) go with the read to the queue."""
        beats = self._burst_beats
        m.submodules.w_credits = credits = CreditSender(_BEAT_FLAGS, credits=self.W_QUEUE)
        w.read = credits.source
        w_order = Signal(range(self._orders))
        w_order_ahead = Signal(range(self._orders), init=1)      # ``w_order + 1``
        w_order_ahead2 = Signal(range(self._orders), init=2)     # ``w_order + 2``
        beat = Signal(range(max(beats, 2)))
        last = w.read_line | (beat == beats - 1)
        next_w_order = Signal.like(w_order)
        next_beat = Signal.like(beat)
        m.d.comb += [credits.sink.valid.eq(w.waiting["read"]),
                     credits.sink.payload.last.eq(last),
                     credits.sink.payload.line.eq(w.read_line),
                     w.read_last.eq(w.read.valid & last),
                     next_w_order.eq(w_order + w.read_last),
                     next_beat.eq(Mux(w.read.valid, Mux(last, 0, beat + 1), beat))]
        m.d.sync += [w_order.eq(next_w_order), w_order_ahead.eq(next_w_order + 1),
                     w_order_ahead2.eq(next_w_order + 2), beat.eq(next_beat)]
        w.read_at = {}
        for kind, is_kind, copies in (("burst", ~w.read_line, len(self.bank_groups)),
                                      ("line", w.read_line, self._line_copies)):
            entry = Signal(range(self._entries[kind]), name=f"{kind}_w_entry")
            next_entry = Signal.like(entry, name=f"{kind}_w_entry_next")
            m.d.comb += next_entry.eq(entry + (w.read_last & is_kind))
            m.d.sync += entry.eq(next_entry)
            w.read_at[kind] = register_copies(m, next_entry, copies, f"{kind}_w_entry")
        # The kinds of the writes at ``w_order`` and after it, as the ring stands after the
        # last clock's takes (registers, read from the ring at the entries the reads may be at
        # after the edge): a write read was taken two clocks before or earlier (``waiting``).
        line_ahead = Signal()
        m.d.sync += [
            w.read_line.eq(Mux(w.read_last, w.after_takes(w_order_ahead),
                               w.after_takes(w_order))),
            line_ahead.eq(Mux(w.read_last, w.after_takes(w_order_ahead2),
                              w.after_takes(w_order_ahead)))]
        # The line read: the line bank's (number ``beats``) for a one-line write, else the
        # burst bank's beat; a copy for each column group of the banks' data, in step with the
        # data (:data:`hdl.bram.READ_LATENCY`), through a tree of that many levels.
        w.bank_copies = register_tree(m, Mux(w.read_line, beats, beat), READ_LATENCY,
                                      len(self.groups), "w_bank")

    def _w_banks(self, m, w):
        """The banks, the bursts' (a burst's lines interleaved) and the one-line writes' (a
        line and its byte enables), block RAM read :data:`hdl.bram.READ_LATENCY` clocks after
        its address; the line read, chosen in each column group by the group's copy of the
        beat (the line bank: number ``burst_beats``), joins its beat's flags, and the W queue
        (:class:`hdl.credit.CreditReceiver`) that W leaves from."""
        line_bits, interleave = self._line_bits, self._interleave
        burst_lines = self.write_burst.payload.lines
        sources = {"w_bursts": interleave.pack(burst_lines[b * line_bits:][:line_bits]
                                               for b in range(self._burst_beats)),
                   "w_line": Cat(self.write_line.payload.line, self.write_line.payload.strobe)}
        outputs = []
        for name, (kind, width, depth) in self.banks.items():
            source = sources[name]
            copies = len(w.read_at[kind])
            m.submodules[name] = bank = RegisteredMemory(
                width=width, depth=depth, primitives=self._primitives, copies=copies)
            m.d.comb += [bank.write_data.eq(source), bank.write_en.eq((1 << copies) - 1),
                         *(bank.write_addr[k].eq(w.produce[kind][k]) for k in range(copies)),
                         *(bank.read_addr[k].eq(w.read_at[kind][k]) for k in range(copies))]
            outputs += ([interleave.unpack(bank.read_data, b) for b in range(self._burst_beats)]
                        if kind == "burst" else [bank.read_data])
        # The read's flags, in step with its line.
        flags = w.read
        for k in range(READ_LATENCY):
            m.submodules[f"w_read{k}"] = stage = PipelineRegister(_BEAT_FLAGS)
            m.d.comb += [stage.sink.valid.eq(flags.valid), stage.sink.payload.eq(flags.payload)]
            flags = stage.source
        layout = _w_beat_layout(line_bits)
        m.submodules.w_queue = queue = CreditReceiver(layout, depth=self.W_QUEUE,
                                                      write_lag=self.W_WRITE_LAG)
        entry = Signal(layout)
        m.d.comb += [
            queue.sink.valid.eq(flags.valid), entry.last.eq(flags.payload.last),
            entry.line.eq(flags.payload.line), w.read.credit.eq(queue.sink.credit),
            entry.data.eq(Cat(Array(out[bits] for out in outputs)[copy]
                              for bits, copy in zip(self.groups, w.bank_copies))),
            entry.strobe.eq(Mux(flags.payload.line, outputs[-1][line_bits:], -1))]
        # The beat, ``W_WRITE_LAG`` clocks after its valid.
        m.d.comb += queue.sink.payload.eq(delayed(m, entry, self.W_WRITE_LAG, "w_beat_late"))
        axi, head = self.axi, queue.source
        m.d.comb += [axi.wvalid.eq(head.valid), axi.wdata.eq(head.payload.data),
                     axi.wstrb.eq(head.payload.strobe), axi.wlast.eq(head.payload.last),
                     head.ready.eq(axi.wready),
                     w.last_moves.eq(head.valid & axi.wready & head.payload.last),
                     w.w_line.eq(head.payload.line)]

    def _address_register(self, m, channel, command):
        """The AR or AW register (``channel``: "ar" or "aw"), refilled from ``command`` (a
        stream of ``id``, ``address`` and ``beats``) on the clock it moves."""
        axi = self.axi
        valid, ready = getattr(axi, f"{channel}valid"), getattr(axi, f"{channel}ready")
        m.d.comb += command.ready.eq(~valid | ready)
        with m.If(command.ready):
            m.d.sync += [valid.eq(command.valid),
                         getattr(axi, f"{channel}id").eq(command.payload.id),
                         getattr(axi, f"{channel}addr").eq(command.payload.address),
                         getattr(axi, f"{channel}len").eq(command.payload.beats - 1)]
