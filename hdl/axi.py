"""AXI4 master toward device memory, moving whole lines.

The port uses the AXI4 signal names (``awaddr``, ``wdata``, ``rready``, ...), so a vendor wrapper
or cocotbext-axi's ``AxiBus.from_prefix(dut, "axi", bus_separator="__")`` binds it directly.
"""

from amaranth import Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

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
      the memory answered anything but OKAY. ``RREADY`` is always high: an owner issues a read
      only when it will take every line of it. Lines of one ID come back in order.
    - ``write_command`` takes a whole burst (address, lines, first line's strobe): its AW into
      the AW register, its lines into the W burst register, which shifts them out beat by beat
      (``WLAST`` on the last). Behind the W burst waits at most one one-line write whose AW has
      gone ahead, so that one-line writes go at one per clock even to a memory that takes a
      burst's W only after its AW. A command is taken when the AW register is free (or moves
      on that clock) and its lines have room.
      ``write_response`` is valid for a clock per B response, with its ID and ``error``.

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

        # AR: a register in front of the channel, refilled on the clock it moves.
        command = self.read_command
        m.d.comb += command.ready.eq(~axi.arvalid | axi.arready)
        with m.If(command.ready):
            m.d.sync += [axi.arvalid.eq(command.valid), axi.arid.eq(command.payload.id),
                         axi.araddr.eq(command.payload.address),
                         axi.arlen.eq(command.payload.beats - 1)]
        m.d.sync += [self.read_data.valid.eq(axi.rvalid),
                     self.read_data.payload.id.eq(axi.rid),
                     self.read_data.payload.data.eq(axi.rdata),
                     self.read_data.payload.error.eq(axi.rresp != RESP_OKAY),
                     self.write_response.valid.eq(axi.bvalid),
                     self.write_response.payload.id.eq(axi.bid),
                     self.write_response.payload.error.eq(axi.bresp != RESP_OKAY)]

        # AW in a register; W: the current burst in a register, its lines shifting out beat by
        # beat, and behind it at most one one-line write (``next_*``), whose AW may go ahead.
        job = self.write_command
        lines = Signal.like(job.payload.lines)
        strobe = Signal.like(job.payload.strobe)
        left = Signal.like(job.payload.beats)       # W beats of the current burst still to send
        next_valid = Signal()
        next_line = Signal(line_bits)
        next_strobe = Signal.like(job.payload.strobe)
        aw_moves = axi.awvalid & axi.awready
        w_moves = axi.wvalid & axi.wready
        aw_free = ~axi.awvalid | aw_moves
        current_free = (left == 0) | ((left == 1) & w_moves)   # empty after this clock
        next_moves = current_free & next_valid                 # next becomes the current burst
        to_current = current_free & ~next_valid
        to_next = (job.payload.beats == 1) & (~next_valid | next_moves) & ~to_current
        m.d.comb += [job.ready.eq(aw_free & (to_current | to_next)),
                     axi.wvalid.eq(left != 0), axi.wlast.eq(left == 1),
                     axi.wdata.eq(lines[:line_bits]), axi.wstrb.eq(strobe)]
        with m.If(aw_moves):
            m.d.sync += axi.awvalid.eq(0)
        with m.If(w_moves):
            m.d.sync += [lines.eq(lines >> line_bits), strobe.eq(-1), left.eq(left - 1)]
        with m.If(next_moves):
            m.d.sync += [lines.eq(next_line), strobe.eq(next_strobe), left.eq(1),
                         next_valid.eq(0)]
        with m.If(job.valid & job.ready):
            m.d.sync += [axi.awvalid.eq(1), axi.awid.eq(job.payload.id),
                         axi.awaddr.eq(job.payload.address),
                         axi.awlen.eq(job.payload.beats - 1)]
            with m.If(to_current):
                m.d.sync += [lines.eq(job.payload.lines), strobe.eq(job.payload.strobe),
                             left.eq(job.payload.beats)]
            with m.Else():
                m.d.sync += [next_valid.eq(1), next_line.eq(job.payload.lines[:line_bits]),
                             next_strobe.eq(job.payload.strobe)]
        return m
