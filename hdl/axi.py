"""AXI4 master toward device memory, moving whole lines.

The port uses the AXI4 signal names (``awaddr``, ``wdata``, ``rready``, ...), so a vendor wrapper
or cocotbext-axi's ``AxiBus.from_prefix(dut, "axi", bus_separator="__")`` binds it directly.
"""

from amaranth import Array, Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .pipeline import SkidBuffer, column_slices, register_copies

__all__ = ["axi4_signature", "read_command_layout", "write_command_layout", "AxiMemoryPort"]

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


def write_command_layout(*, address_bits, id_bits, line_bits, max_beats):
    """A write burst: ``beats`` lines (1 to ``max_beats``) of ``lines`` (line 0 first) from
    line-aligned byte ``address``; line 0's byte enables are ``strobe``, the others' all set."""
    return data.StructLayout({"id": unsigned(id_bits), "address": unsigned(address_bits),
                              "beats": unsigned(max_beats.bit_length()),
                              "lines": unsigned(max_beats * line_bits),
                              "strobe": unsigned(line_bits // 8)})


class AxiMemoryPort(wiring.Component):
    """Device memory through an AXI4 port: read and write bursts of whole lines, several in
    flight, each with the ID its owner gives.

    - ``read_command`` issues one AR per command (``ARLEN = beats - 1``); the lines come back
      on ``read_data``, one per clock that it is valid, with the read's ID and ``error`` when
      the memory answered anything but OKAY (the line's ``data`` is then 0). ``RREADY`` is
      always high: an owner issues a read only when it will take every line of it. Lines of
      one ID come back in order.
    - ``write_command`` takes a whole burst (address, lines, first line's strobe): its AW into
      the AW register (through a skid buffer), its lines into the *W buffer*, where
      ``W_BURSTS`` bursts wait in order, so that one-line writes go at one per clock even to
      a memory that takes a burst's W only after its AW. A command is taken when the skid
      buffer is empty and the W buffer has room for a burst. The AR side has a skid buffer
      too: the command streams' ``ready`` come from registers, and ``ARREADY`` and
      ``AWREADY`` reach no logic of the owner.
      ``write_response`` is valid for a clock per B response, with its ID and ``error``.
    - The W buffer keeps line ``b`` of every burst in bank ``b``, so that a command writes
      all its lines on one clock and no register spans a burst. Each bank is cut into the
      column groups of pipeline rule 2 (``CONTROL_COPY_BITS`` line bits each), with their own
      copies of the read address and of the beat number that selects the bank: ``WDATA`` is
      a bank's line read without a clock, through one mux per group (it and ``WSTRB`` and
      ``WLAST`` are not registers).

    A burst must not cross a 4 KiB boundary (AXI4): the controller's bursts are single lines
    or an accumulator aligned to its power-of-two size.

    Parameters
    ----------
    line_bits, address_bits, id_bits : int
    max_beats : int
        The longest write burst.

    Members
    -------
    axi : Out(axi4_signature(...))
    read_command : In(stream.Signature(read_command_layout(...)))
    read_data : Out(stream.Signature({"id", "data", "error"}, always_ready=True))
    write_command : In(stream.Signature(write_command_layout(...)))
    write_response : Out(stream.Signature({"id", "error"}, always_ready=True))
    """

    #: Bursts the W buffer holds (a power of two): the one being sent, and those whose AW
    #: went ahead of their W.
    W_BURSTS = 4

    def __init__(self, *, line_bits, address_bits, id_bits, max_beats):
        for name, value, low in (("line_bits", line_bits, 8), ("address_bits", address_bits, 8),
                                 ("id_bits", id_bits, 1), ("max_beats", max_beats, 1)):
            if not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer of at least {low}, not {value!r}")
        if line_bits & (line_bits - 1) or line_bits > 1024:
            raise ValueError(f"line_bits must be a power of two up to 1024 (the widest AXI4 "
                             f"transfer), not {line_bits}")
        if max_beats > 256:
            raise ValueError(f"max_beats must be at most 256 (AXI4 INCR bursts), "
                             f"not {max_beats}")
        self._line_bits = line_bits
        super().__init__({
            "axi": Out(axi4_signature(address_bits=address_bits, data_bits=line_bits,
                                      id_bits=id_bits)),
            "read_command": In(stream.Signature(read_command_layout(
                address_bits=address_bits, id_bits=id_bits))),
            "read_data": Out(stream.Signature(data.StructLayout({
                "id": unsigned(id_bits), "data": unsigned(line_bits), "error": 1}),
                always_ready=True)),
            "write_command": In(stream.Signature(write_command_layout(
                address_bits=address_bits, id_bits=id_bits, line_bits=line_bits,
                max_beats=max_beats))),
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

        # A command's lines go into the W buffer as it is taken, its AW through a skid
        # buffer into the AW register (refilled on the clock it moves): ``AWREADY`` reaches
        # no logic of the owner.
        job = self.write_command
        aw_layout = data.StructLayout({"id": len(job.payload.id),
                                       "address": len(job.payload.address),
                                       "beats": len(job.payload.beats)})
        m.submodules.aw_skid = aw_skid = SkidBuffer(aw_layout)
        self._address_register(m, "aw", aw_skid.source)
        # The W buffer is written at ``produce`` on every clock, taken or not (its write
        # enables then wait for no handshake), so it has twice the entries it may hold: the
        # entry at ``produce`` is never one waiting to be sent.
        entries = 2 * self.W_BURSTS
        queued = Signal(range(self.W_BURSTS + 1))     # bursts in the W buffer
        # Each column group of the buffer is written at a copy of ``produce`` of its own.
        groups = column_slices(line_bits)
        next_produce = Signal(range(entries))
        produce = register_copies(m, next_produce, len(groups), "w_produce", reset=True)
        m.d.comb += job.ready.eq(aw_skid.sink.ready & (queued != self.W_BURSTS))
        take = job.valid & job.ready
        m.d.comb += [aw_skid.sink.valid.eq(take), aw_skid.sink.payload.id.eq(job.payload.id),
                     aw_skid.sink.payload.address.eq(job.payload.address),
                     aw_skid.sink.payload.beats.eq(job.payload.beats)]
        m.d.comb += next_produce.eq(produce[0] + take)

        # The W buffer's read side: the burst at ``consume``, its beat ``beat``. Each column
        # group reads with copies of their next values (registers equal to ``consume`` and
        # ``beat``; while the buffer is empty after a reset, they may differ for a clock).
        beats = len(job.payload.lines) // line_bits
        consume = Signal(range(entries))
        beat = Signal(range(beats))
        head_layout = data.StructLayout({"strobe": len(job.payload.strobe),
                                         "beats": len(job.payload.beats)})
        m.submodules.heads = heads = Memory(shape=head_layout, depth=entries, init=[])
        head_write, head_read = heads.write_port(), heads.read_port(domain="comb")
        head = head_read.data
        w_moves = axi.wvalid & axi.wready
        last_moves = w_moves & axi.wlast
        next_consume = Signal.like(consume)
        next_beat = Signal.like(beat)
        m.d.comb += [next_consume.eq(consume + last_moves),
                     next_beat.eq(Mux(w_moves, Mux(axi.wlast, 0, beat + 1), beat)),
                     head_write.en.eq(1), head_write.addr.eq(produce[0]),
                     head_write.data.eq(Cat(job.payload.strobe, job.payload.beats)),
                     head_read.addr.eq(consume),
                     axi.wvalid.eq(queued != 0), axi.wlast.eq(beat == head.beats - 1),
                     axi.wstrb.eq(Mux(beat == 0, head.strobe, -1))]
        m.d.sync += [consume.eq(next_consume), beat.eq(next_beat),
                     queued.eq(queued + take - last_moves)]
        consume_copies = register_copies(m, next_consume, len(groups), "w_consume")
        beat_copies = register_copies(m, next_beat, len(groups), "w_beat")
        wdata = []
        for g, bits in enumerate(groups):
            lines = []
            for b in range(beats):
                m.submodules[f"w_bank{b}_group{g}"] = bank = Memory(
                    shape=bits.stop - bits.start, depth=entries, init=[])
                write, read = bank.write_port(), bank.read_port(domain="comb")
                line = job.payload.lines[b * line_bits:(b + 1) * line_bits]
                m.d.comb += [write.en.eq(1),
                             write.addr.eq(produce[g]),
                             write.data.eq(line[bits]),
                             read.addr.eq(consume_copies[g])]
                lines.append(read.data)
            wdata.append(Array(lines)[beat_copies[g]])
        m.d.comb += axi.wdata.eq(Cat(wdata))
        return m

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
