"""AXI4 master toward device memory, moving whole lines.

The port uses the AXI4 signal names (``awaddr``, ``wdata``, ``rready``, ...), so a vendor wrapper
or cocotbext-axi's ``AxiBus.from_prefix(dut, "axi", bus_separator="__")`` binds it directly.
"""

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .pipeline import register_copies

__all__ = ["axi4_signature", "line_command_layout", "write_command_layout", "AxiLineMaster"]

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


def line_command_layout(address_bits):
    """``beats`` consecutive lines starting at line-aligned byte ``address``."""
    return data.StructLayout({"address": unsigned(address_bits),
                              "beats": unsigned(address_bits)})


def write_command_layout(address_bits):
    """A line command, and ``fill``: write every line of the run with the owner's line as it
    is, taking none (:class:`AxiLineMaster`)."""
    return data.StructLayout({**line_command_layout(address_bits).members, "fill": 1})


class AxiLineMaster(wiring.Component):
    """Reads and writes runs of consecutive lines through an AXI4 port.

    Every line is its own single-beat transaction (``xLEN = 0``, full-width ``xSIZE``), all with
    ID 0, so the memory returns read data and write responses in issue order, and no transaction
    ever crosses a 4 KiB boundary whatever the run's alignment. Addresses are issued as fast as
    the memory takes them. Each command waits one clock in a one-entry register on its way in
    (its ``ready`` is that register being empty), so no path runs from the owner's command
    logic to the address counters.

    Both data channels pass registers, so a wide owner (a state buffer that shifts with every
    beat) sees no path from the AXI port:

    - read data waits one clock in a register and is the owner's that clock: ``read_data``
      has no ``ready`` and ``rready`` is always high, so the owner issues a read command only
      when it will take every line of it;
    - write data enters a two-entry skid buffer, which keeps one line per clock moving. It is
      kept in ``copies`` groups of columns, each with a handshake of its own (``write_valid``
      and ``write_ready``, one bit per group) and flags of its own, computed from that group's
      valid and ``WREADY`` only: an owner whose groups each decide from registers beside them
      is then never waiting on a flag across the line.

    - ``read_command``: issues one read per line; the lines come back, in order, on
      ``read_data``, each valid for one clock (``error`` when the memory answered anything but
      OKAY). Both commands need ``beats`` >= 1.
    - ``write_command``: issues one write per line. Without ``fill``, the owner supplies the
      ``beats`` lines on ``write_data``, in order: group ``g`` of a line is taken on a clock
      when ``write_valid[g]`` and ``write_ready[g]`` are both high, and every group must offer
      the same lines on the same clocks (the AXI W channel follows group 0). With ``fill``, the
      owner offers no line (``write_valid`` low) and every line of the run is written with
      ``write_data`` as it is, which the owner holds steady from the clock it makes the command
      valid to ``write_done``.
      ``write_done`` pulses once, after the last write response, with ``write_error`` set if any
      response was not OKAY. ``write_busy`` is high from the command to ``write_done``; a new
      command waits until it is low.
    - ``read_valid_copies``: ``copies`` copies of ``read_data.valid``, each a flip-flop of its
      own, for an owner whose column groups each take a line on a local enable.

    Parameters
    ----------
    line_bits : int
        Data width of the port and of a line.
    address_bits : int
    id_bits : int
    copies : int
        Column groups of the owner's line, a power of two of at most ``line_bits // 8``: the
        copies of ``read_data.valid`` (``read_valid_copies``) and the groups of the write
        data's handshake (``write_valid``, ``write_ready``).

    Members
    -------
    axi : Out(axi4_signature(...))
    read_command : In(stream.Signature(line_command_layout(address_bits)))
    write_command : In(stream.Signature(write_command_layout(address_bits)))
    read_data : Out(stream.Signature({"data": line_bits, "error": 1}, always_ready=True))
    write_data : In({"data": line_bits, "strobe": line_bits // 8})
    write_valid : In(copies)
    write_ready : Out(copies)
    write_busy, write_done, write_error : Out(1)
    read_valid_copies : Out(copies)
    """

    def __init__(self, *, line_bits, address_bits, id_bits=8, copies=1):
        for name, value, low in (("line_bits", line_bits, 8), ("address_bits", address_bits, 8),
                                 ("id_bits", id_bits, 1), ("copies", copies, 1)):
            if not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer of at least {low}, not {value!r}")
        if line_bits & (line_bits - 1) or line_bits > 1024:
            raise ValueError(f"line_bits must be a power of two up to 1024 (the widest AXI4 "
                             f"transfer), not {line_bits}")
        if copies & (copies - 1) or copies > line_bits // 8:
            raise ValueError(f"copies must be a power of two of at most line_bits // 8 "
                             f"({line_bits // 8}), not {copies}")
        self._line_bits = line_bits
        self._copies = copies
        command = line_command_layout(address_bits)
        super().__init__({
            "axi": Out(axi4_signature(address_bits=address_bits, data_bits=line_bits,
                                      id_bits=id_bits)),
            "read_command": In(stream.Signature(command)),
            "read_data": Out(stream.Signature(data.StructLayout({"data": line_bits,
                                                                   "error": 1}),
                                              always_ready=True)),
            "write_command": In(stream.Signature(write_command_layout(address_bits))),
            "write_data": In(data.StructLayout({"data": line_bits, "strobe": line_bits // 8})),
            "write_valid": In(copies),
            "write_ready": Out(copies),
            "write_busy": Out(1),
            "write_done": Out(1),
            "write_error": Out(1),
            "read_valid_copies": Out(copies),
        })

    def elaborate(self, platform):
        m = Module()
        axi = self.axi
        line_bytes = self._line_bits // 8
        size = line_bytes.bit_length() - 1
        m.d.comb += [axi.awsize.eq(size), axi.arsize.eq(size), axi.awburst.eq(BURST_INCR),
                     axi.arburst.eq(BURST_INCR), axi.wlast.eq(1)]

        # Read: one address per line while lines remain; data passes one register, with no
        # enable (the owner takes every line).
        width = len(self.read_command.payload.beats)
        ar = _Countdown(m, width, "ar")
        read = _CommandRegister(m, self.read_command, "read_command")
        m.d.comb += [
            read.take.eq(read.valid & ~ar.more),
            axi.arvalid.eq(ar.more),
            axi.rready.eq(1),
        ]
        m.d.comb += self.read_valid_copies.eq(
            Cat(register_copies(m, axi.rvalid, self._copies, "read_valid_copy")))
        m.d.sync += [self.read_data.valid.eq(axi.rvalid),
                     self.read_data.payload.data.eq(axi.rdata),
                     self.read_data.payload.error.eq(axi.rresp != RESP_OKAY)]
        # Between runs, the address and count follow the held command (see _Countdown.load).
        with m.If(~ar.more):
            m.d.sync += [axi.araddr.eq(read.payload.address), *ar.load(read)]
        with m.Elif(axi.arready):
            m.d.sync += [axi.araddr.eq(axi.araddr + line_bytes), *ar.step()]
        with m.If(read.take):
            m.d.sync += ar.start(read)

        # Write: addresses and data move independently; count a fill run's W beats (an owner's
        # run ends with its last line) and the responses back.
        aw, w, b = (_Countdown(m, width, name) for name in ("aw", "w", "b"))
        write = _CommandRegister(m, self.write_command, "write_command")
        filling = Signal()
        m.d.comb += [
            write.take.eq(write.valid & ~b.more),
            self.write_busy.eq(write.valid | b.more),
            axi.awvalid.eq(aw.more),
            axi.bready.eq(b.more),
        ]
        beat = _GroupedSkidBuffer(m, self.write_data, self.write_valid, self.write_ready,
                                  axi.wready, self._copies, "write_data")
        m.d.comb += [axi.wvalid.eq(beat.valid | (filling & w.more)),
                     axi.wdata.eq(beat.payload.data), axi.wstrb.eq(beat.payload.strobe)]
        # Between runs (no response outstanding, so no address or fill beat either), the
        # address and counts follow the held command (see _Countdown.load).
        with m.If(~b.more):
            m.d.sync += [axi.awaddr.eq(write.payload.address),
                         *aw.load(write), *w.load(write), *b.load(write)]
        with m.If(write.take):
            m.d.sync += [filling.eq(write.payload.fill), *aw.start(write), *w.start(write),
                         *b.start(write), self.write_error.eq(0)]
        with m.If(axi.awvalid & axi.awready):
            m.d.sync += [axi.awaddr.eq(axi.awaddr + line_bytes), *aw.step()]
        with m.If(filling & w.more & axi.wready):
            m.d.sync += w.step()
        m.d.sync += self.write_done.eq(0)
        with m.If(axi.bvalid & axi.bready):
            m.d.sync += b.step()
            with m.If(axi.bresp != RESP_OKAY):
                m.d.sync += self.write_error.eq(1)
            with m.If(b.last):
                m.d.sync += self.write_done.eq(1)
        return m


class _CommandRegister:
    """A one-entry register in front of the command stream ``command``: ``command.ready`` while
    it is empty. ``valid`` and ``payload`` are the held command; ``take`` empties it.
    ``rest_zero`` says whether the command's ``beats`` is below ``2 ** _Countdown.LOW_BITS``
    (worked out as the command is taken in, for :meth:`_Countdown.load`)."""

    def __init__(self, m, command, name):
        self.valid = Signal(name=f"{name}_held")
        self.payload = Signal(command.payload.shape(), name=f"{name}_payload")
        self.rest_zero = Signal(name=f"{name}_rest_zero")
        self.take = Signal(name=f"{name}_take")
        m.d.comb += command.ready.eq(~self.valid)
        with m.If(~self.valid):
            m.d.sync += [self.valid.eq(command.valid), self.payload.eq(command.payload),
                         self.rest_zero.eq(command.payload.beats[_Countdown.LOW_BITS:] == 0)]
        with m.Elif(self.take):
            m.d.sync += self.valid.eq(0)


class _GroupedSkidBuffer:
    """Two registers between the owner's line ``payload`` and the AXI W channel, in ``groups``
    groups of columns, each with its own handshake (``valid[g]``, ``ready[g]``) and its own
    flags: whether its output register holds a line and whether its spare does. ``ready[g]`` is
    the spare being empty, so lines still move at one per clock while ``wready`` stalls.

    A group's flags follow its own ``valid[g]`` and ``wready`` alone, so every enable of the
    group's registers, and ``ready[g]``, come from flip-flops of the group (a flag for the whole
    line, in front of every group's enable, was the controller's worst path). The groups take
    the same lines on the same clocks, so their flags are equal: ``valid`` is group 0's (the
    output registers hold a line), ``payload`` the output registers."""

    def __init__(self, m, payload, valid, ready, wready, groups, name):
        self.payload = Signal(payload.shape(), name=f"{name}_out")
        spare = Signal(payload.shape(), name=f"{name}_spare")
        flags = []
        for g in range(groups):
            held = Signal(name=f"{name}_out_held_{g}")
            spare_held = Signal(name=f"{name}_spare_held_{g}")
            flags.append(held)
            m.d.comb += ready[g].eq(~spare_held)
            taken = valid[g] & ~spare_held
            with m.If(~held | wready):
                m.d.sync += [held.eq(spare_held | taken), spare_held.eq(0)]
            with m.Elif(taken):
                m.d.sync += spare_held.eq(1)
            for field in ("data", "strobe"):
                width = len(payload[field]) // groups
                columns = slice(g * width, (g + 1) * width)
                with m.If(~held | wready):
                    m.d.sync += self.payload[field][columns].eq(
                        Mux(spare_held, spare[field][columns], payload[field][columns]))
                with m.If(~spare_held):
                    m.d.sync += spare[field][columns].eq(payload[field][columns])
        self.valid = flags[0]


class _Countdown:
    """Lines left of a run, with ``more`` (any left) and ``last`` (exactly one left) read from
    registers and a few bits, never from a compare of the whole count: the count is kept as its
    low ``LOW_BITS`` bits (``<name>_low``) and the rest (``<name>_rest``), and
    ``<name>_rest_zero`` (the rest is zero) follows the rest a clock late. The rest changes
    only when the low bits wrap to all ones, after which the low bits read 1 (the only time
    ``rest_zero`` counts) no sooner than ``2 ** LOW_BITS - 2`` steps later: two clocks at least,
    so ``rest_zero`` has settled by then. A load takes ``rest_zero`` from the command register,
    which works it out as it takes the command in."""

    #: Bits of the count kept apart from the rest (at least 2: see above).
    LOW_BITS = 2

    def __init__(self, m, width, name):
        self.low = Signal(self.LOW_BITS, name=f"{name}_low")
        self.rest = Signal(width - self.LOW_BITS, name=f"{name}_rest")
        self.rest_zero = Signal(init=1, name=f"{name}_rest_zero")
        self.more = Signal(name=f"{name}_more")
        self.last = self.rest_zero & (self.low == 1)
        m.d.sync += self.rest_zero.eq(self.rest == 0)     # a load below takes precedence

    def load(self, command):
        """Statements that load the count of ``command`` (a :class:`_CommandRegister`) but not
        ``more``: the owner loads it on every clock it has no run, so that the count's enable
        is a flip-flop rather than the decision to take a command."""
        beats = command.payload.beats
        return [self.low.eq(beats[:self.LOW_BITS]), self.rest.eq(beats[self.LOW_BITS:]),
                self.rest_zero.eq(command.rest_zero)]

    def start(self, command):
        """Statements that start the run of ``command``, whose count is being loaded."""
        return [self.more.eq(~command.rest_zero | command.payload.beats[:self.LOW_BITS].any())]

    def step(self):
        """Statements that count one line off (``more`` must be high)."""
        return [self.low.eq(self.low - 1), self.more.eq(~self.last),
                self.rest.eq(Mux(self.low == 0, self.rest - 1, self.rest))]
