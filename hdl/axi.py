"""AXI4 master toward device memory, moving whole lines.

The port uses the AXI4 signal names (``awaddr``, ``wdata``, ``rready``, ...), so a vendor wrapper
or cocotbext-axi's ``AxiBus.from_prefix(dut, "axi", bus_separator="__")`` binds it directly.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .pipeline import SkidBuffer, column_slices, register_copies

__all__ = ["axi4_signature", "read_command_layout", "write_burst_layout",
           "write_line_layout", "AxiMemoryPort"]

#: AXI4 ``xBURST`` code of an incrementing burst and ``xRESP`` of a good response.
BURST_INCR = 0b01
RESP_OKAY = 0b00


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
      is valid: it has no ``ready``. Its owner keeps at most ``bursts`` of them in the port,
      by ``bursts_held``, a register: the bursts in the W buffer (below) as of the last clock
      edge, those whose AW has not left for the AW register or whose W has not all gone. So
      a slot pool's write-backs leave its result unit straight into the port, and wait
      nowhere else.
    - ``write_line`` (one line, with its byte enables) is taken while ``ready``, a register
      that falls once ``LINE_WRITES`` one-line writes are held, on the same clock as a burst
      or not.
    - Every write waits in the *W buffer*, a ring of entries taken in order (a clock's burst
      first, then its line), until its AW and its W beats have gone, each channel in ring
      order: W may go ahead of AW (AXI4 allows it), so one-line writes go at one per clock
      even to a memory that takes a burst's W only after its AW. A burst's line ``b`` waits
      in bank ``b``, a one-line write's line in a bank of its own, so that a take moves only
      a pointer: each bank is written on every clock at the next free entry, taken or not,
      and cut into the column groups of pipeline rule 2 (``CONTROL_COPY_BITS`` line bits
      each), with copies of its own of the entry it writes, the entry W reads and the bank W
      reads. ``WDATA`` is a bank's line read without a clock, through one mux per group.
    - AW and W leave from registers or memories read without a clock: ``AWREADY`` and
      ``WREADY`` reach no logic of the owner. ``write_response`` is valid for a clock per B
      response, with its ID and ``error``.

    A burst must not cross a 4 KiB boundary (AXI4): the controller's bursts are an accumulator
    aligned to its power-of-two size.

    Parameters
    ----------
    line_bits, address_bits, id_bits : int
    burst_beats : int
        Lines of a ``write_burst``.
    bursts : int
        Write bursts the owner may have in the port at once.

    Members
    -------
    axi : Out(axi4_signature(...))
    read_command : In(stream.Signature(read_command_layout(...)))
    read_data : Out(stream.Signature({"id", "data", "error"}, always_ready=True))
    write_burst : In(stream.Signature(write_burst_layout(...), always_ready=True))
    bursts_held : Out(range(bursts + 1))
    write_line : In(stream.Signature(write_line_layout(...)))
    write_response : Out(stream.Signature({"id", "error"}, always_ready=True))
    """

    #: One-line writes the W buffer holds: enough to send one per clock while each waits a
    #: clock or two for its AW to go.
    LINE_WRITES = 4

    def __init__(self, *, line_bits, address_bits, id_bits, burst_beats, bursts):
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
        self._line_bits = line_bits
        self._burst_beats = burst_beats
        # Entries of the W buffer: a power of two (the pointers wrap), with two free beyond
        # what may be held, the two a clock's takes are written to on every clock.
        self._entries = 1 << (bursts + self.LINE_WRITES + 1).bit_length()
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
            "bursts_held": Out(range(bursts + 1)),
            "write_line": In(stream.Signature(write_line_layout(
                address_bits=address_bits, id_bits=id_bits, line_bits=line_bits))),
            "write_response": Out(stream.Signature(data.StructLayout({
                "id": unsigned(id_bits), "error": 1}), always_ready=True)),
        })

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
        groups = column_slices(line_bits)
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
        self._write_side(m, groups)
        return m

    def _write_side(self, m, groups):
        """The W buffer (see the class docstring), AW and W."""
        axi, burst, line = self.axi, self.write_burst, self.write_line
        entries, beats = self._entries, self._burst_beats
        line_taken = line.valid & line.ready

        # Takes: a burst at ``produce``, a line after it. Each column group of a bank writes
        # at copies of its own (rule 2) of ``produce`` and ``produce + 1``.
        next_produce = Signal(range(entries))
        produce = register_copies(m, next_produce, len(groups) + 1, "w_produce", reset=True)
        m.d.comb += next_produce.eq(produce[-1] + burst.valid + line_taken)
        following = register_copies(m, (next_produce + 1)[:len(next_produce)], len(groups),
                                    "w_following", reset=True, init=1)
        line_entry = Signal.like(next_produce)
        m.d.comb += line_entry.eq(Mux(burst.valid, produce[-1] + 1, produce[-1]))
        # Whether each entry holds a one-line write (else a burst's lines).
        is_line = Signal(entries)
        with m.If(burst.valid):
            m.d.sync += is_line.bit_select(produce[-1], 1).eq(0)
        with m.If(line_taken):
            m.d.sync += is_line.bit_select(line_entry, 1).eq(1)

        # What each kind of write has waiting, for AW and for W (taken, not yet sent: a
        # burst's W is sent with its last beat). Both channels go in ring order, so the
        # writes of a kind not yet sent on both are as many as the larger of its two counts.
        aw_moves, aw_line = Signal(), Signal()
        last_moves, w_line = Signal(), Signal()
        counts = {}
        for kind, taken, is_kind in (("burst", burst.valid, Const(0)),
                                     ("line", line_taken, Const(1))):
            for channel, sent, sent_line in (("aw", aw_moves, aw_line), ("w", last_moves, w_line)):
                count = Signal(range(entries), name=f"{kind}_{channel}_waiting")
                next_count = Signal.like(count, name=f"{kind}_{channel}_next")
                m.d.comb += next_count.eq(count + taken - (sent & (sent_line == is_kind)))
                m.d.sync += count.eq(next_count)
                counts[kind, channel] = count, next_count
        held = {kind: Mux(counts[kind, "aw"][1] > counts[kind, "w"][1], counts[kind, "aw"][1],
                          counts[kind, "w"][1]) for kind in ("burst", "line")}
        line_room = Signal(init=1)
        m.d.sync += [self.bursts_held.eq(held["burst"]),
                     line_room.eq(held["line"] < self.LINE_WRITES)]
        m.d.comb += line.ready.eq(line_room)

        # AW: the register in front of the channel, refilled from the oldest entry whose AW
        # has not gone (``aw_entry``): its ID and address from the memory of its kind.
        aw_entry = Signal(range(entries))
        m.d.sync += aw_entry.eq(aw_entry + aw_moves)
        address_layout = data.StructLayout({"id": len(burst.payload.id),
                                            "address": len(burst.payload.address)})
        addresses = {}
        for kind, payload, at in (("burst", burst.payload, produce[-1]),
                                  ("line", line.payload, line_entry)):
            m.submodules[f"{kind}_addresses"] = memory = Memory(
                shape=address_layout, depth=entries, init=[])
            write, read = memory.write_port(), memory.read_port(domain="comb")
            m.d.comb += [write.en.eq(1), write.addr.eq(at),
                         write.data.eq(Cat(payload.id, payload.address)), read.addr.eq(aw_entry)]
            addresses[kind] = read.data
        aw_command = stream.Signature(data.StructLayout({
            "id": len(burst.payload.id), "address": len(burst.payload.address),
            "beats": range(1, beats + 1)})).create()
        chosen = address_layout(Mux(aw_line, addresses["line"], addresses["burst"]))
        m.d.comb += [aw_line.eq(is_line.bit_select(aw_entry, 1)),
                     aw_command.valid.eq((counts["burst", "aw"][0] != 0)
                                         | (counts["line", "aw"][0] != 0)),
                     aw_command.payload.id.eq(chosen.id),
                     aw_command.payload.address.eq(chosen.address),
                     aw_command.payload.beats.eq(Mux(aw_line, 1, beats)),
                     aw_moves.eq(aw_command.valid & aw_command.ready)]
        self._address_register(m, "aw", aw_command)

        # W: the entry at ``consume``, its beat ``beat``.
        consume = Signal(range(entries))
        beat = Signal(range(max(beats, 2)))
        w_moves = axi.wvalid & axi.wready
        next_consume = Signal.like(consume)
        next_beat = Signal.like(beat)
        m.submodules.strobes = strobes = Memory(shape=len(line.payload.strobe), depth=entries,
                                                init=[])
        strobe_write, strobe_read = strobes.write_port(), strobes.read_port(domain="comb")
        m.d.comb += [w_line.eq(is_line.bit_select(consume, 1)),
                     axi.wvalid.eq((counts["burst", "w"][0] != 0) | (counts["line", "w"][0] != 0)),
                     axi.wlast.eq(w_line | (beat == beats - 1)),
                     last_moves.eq(w_moves & axi.wlast),
                     next_consume.eq(consume + last_moves),
                     next_beat.eq(Mux(w_moves, Mux(axi.wlast, 0, beat + 1), beat)),
                     strobe_write.en.eq(1), strobe_write.addr.eq(line_entry),
                     strobe_write.data.eq(line.payload.strobe), strobe_read.addr.eq(consume),
                     axi.wstrb.eq(Mux(w_line, strobe_read.data, -1))]
        m.d.sync += [consume.eq(next_consume), beat.eq(next_beat)]
        # The bank W reads after this edge: the line bank (number ``beats``) for a one-line
        # write, else the beat's; the entry's kind is the one written on this edge if it is
        # taken now (W then reads it on the next clock).
        next_is_line = Signal()
        m.d.comb += next_is_line.eq(Mux(burst.valid & (produce[-1] == next_consume), 0,
                                        Mux(line_taken & (line_entry == next_consume), 1,
                                            is_line.bit_select(next_consume, 1))))
        bank_copies = register_copies(m, Mux(next_is_line, beats, next_beat), len(groups),
                                      "w_bank")
        consume_copies = register_copies(m, next_consume, len(groups), "w_consume")
        wdata = []
        for g, bits in enumerate(groups):
            lines = []
            sources = [(f"w_bank{b}", burst.payload.lines[b * self._line_bits:][:self._line_bits],
                        produce[g]) for b in range(beats)]
            sources.append(("w_line", line.payload.line, Mux(burst.valid, following[g],
                                                             produce[g])))
            for name, source, at in sources:
                m.submodules[f"{name}_group{g}"] = bank = Memory(
                    shape=bits.stop - bits.start, depth=entries, init=[])
                write, read = bank.write_port(), bank.read_port(domain="comb")
                m.d.comb += [write.en.eq(1), write.addr.eq(at), write.data.eq(source[bits]),
                             read.addr.eq(consume_copies[g])]
                lines.append(read.data)
            wdata.append(Array(lines)[bank_copies[g]])
        m.d.comb += axi.wdata.eq(Cat(wdata))

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
