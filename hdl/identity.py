"""The identity path: the host's plain reads and writes of device memory, between dispatch,
the memory port and the responder (``docs/controller.md``)."""

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .axi import AxiMemoryPort, read_command_layout, write_line_layout
from .pipeline import EagerFIFO, register_copies, register_tree

__all__ = ["host_write_layout", "IdentityPath"]


def host_write_layout(params):
    """An identity write as dispatch hands it over: the line, its byte enables (``strobe``)
    and its byte address."""
    p = params.datapath
    return data.StructLayout({"address": params.address_bits, "line": p.line_bits,
                              "strobe": p.line_bytes})


class IdentityPath(wiring.Component):
    """The host's identity reads and writes on their way to and from the memory port.

    Dispatch hands reads and writes to two small queues (``QUEUE`` entries) read without a
    clock, whose ``ready`` are registers: its decision does not wait for the port or the pool,
    and the port's command muxes read the queues' heads. The lines read come back through a
    register stage without an enable (pipeline rule 1) into a queue of ``READS_IN_FLIGHT``
    entries, read without a clock, whose read moves only its pointer (a head register would be
    enabled by the responder's decision); a read is taken only while that queue has room for
    it and every read in flight. (The queue takes a line as it is returned and writes it a
    clock later, from that register, at copies of its write pointer: its ``write_lag``.)

    The one-line write port is shared with a clear's zero writes: chosen by the zero phase of
    the last clock, so that the line's mux (the port's W buffer input, spread over the die) is
    steered by registers, one copy per column group of the line (pipeline rule 2, through a
    tree) and one for the other fields and the handshakes. The zero writes start a clock into
    the phase, and the port stays without a write for a clock after it. A write's line and
    byte enables go to the port ``AxiMemoryPort.LINE_LAG`` clocks after its take, as the port
    reads them: the write queue gives them that much later, through a register tree of its
    read pointer (its ``lag``), and each column group's mux is steered by its copy of the
    phase that much later.

    Parameters
    ----------
    params : ControllerParams
    host_id : int
        The AXI ID of the host's accesses.
    line_lag : int
        Clocks from a write's take on ``write`` to its ``line`` and ``strobe`` there, at most
        ``AxiMemoryPort.LINE_LAG``: the write queue writes them at copies of its write
        pointer that come through a tree, and reads them that much later anyway, so a late
        line costs no clock.

    Members
    -------
    read : In(stream.Signature(read_command_layout(...)))
        From dispatch: a one-line read (``ready``: the queue has room).
    read_room : Out(1)
        A read may be taken: the queue has room, and the lines' queue for every read in flight.
    read_command : Out(stream.Signature(read_command_layout(...)))
        To the memory port (which the owner shares with the slot pool's reads).
    read_data : In(stream.Signature({"id", "data", "error"}, always_ready=True))
        The memory port's lines; those of ``host_id`` are the host's.
    lines : Out(stream.Signature({"data": line_bits, "error": 1}))
        The host's lines, in order, to the responder.
    write : In(stream.Signature(host_write_layout(params)))
        From dispatch: a one-line write (``ready``: the queue has room); its ``line`` and
        ``strobe`` ``line_lag`` clocks after the take.
    zero_phase : In(1)
        A clear's zero writes own the write port (from the next clock on).
    zero_write : In(stream.Signature(write_line_layout(...)))
    write_line : Out(stream.Signature(write_line_layout(...)))
        To the memory port. On both, ``line`` and ``strobe`` come ``AxiMemoryPort.LINE_LAG``
        clocks after the take.
    """

    #: Identity reads (and writes) dispatched and not yet taken by the memory port.
    QUEUE = 2

    #: Identity reads in flight at once: the entries of the returned lines' queue.
    READS_IN_FLIGHT = 8

    def __init__(self, params, *, host_id, line_lag=0):
        if not isinstance(line_lag, int) or not 0 <= line_lag <= AxiMemoryPort.LINE_LAG:
            raise ValueError(f"line_lag must be an integer from 0 to {AxiMemoryPort.LINE_LAG} "
                             f"(the memory port's LINE_LAG), not {line_lag!r}")
        self._line_lag = line_lag
        p = params.datapath
        self._params = params
        self._host_id = host_id
        ids = params.axi_id_bits
        read_layout = read_command_layout(address_bits=params.address_bits, id_bits=ids)
        line_layout = write_line_layout(address_bits=params.address_bits, id_bits=ids,
                                        line_bits=p.line_bits)
        super().__init__({
            "read": In(stream.Signature(read_layout)),
            "read_room": Out(1),
            "read_command": Out(stream.Signature(read_layout)),
            "read_data": In(stream.Signature(data.StructLayout({
                "id": unsigned(ids), "data": unsigned(p.line_bits), "error": 1}),
                always_ready=True)),
            "lines": Out(stream.Signature(data.StructLayout({
                "data": unsigned(p.line_bits), "error": 1}))),
            "write": In(stream.Signature(host_write_layout(params))),
            "zero_phase": In(1),
            "zero_write": In(stream.Signature(line_layout)),
            "write_line": Out(stream.Signature(line_layout)),
        })

    def elaborate(self, platform):
        m = Module()
        self._reads(m)
        self._writes(m)
        return m

    def _reads(self, m):
        m.submodules.read_queue = queue = EagerFIFO(shape=self.read.payload.shape(),
                                                    depth=self.QUEUE)
        wiring.connect(m, wiring.flipped(self.read), queue.w_stream)
        wiring.connect(m, queue.r_stream, wiring.flipped(self.read_command))
        reads_in_flight = Signal(range(self.READS_IN_FLIGHT + 1))
        taken = self.read.valid & self.read.ready
        m.d.comb += self.read_room.eq(queue.w_rdy & (reads_in_flight < self.READS_IN_FLIGHT))
        returned = self.read_data
        # A line is taken into the queue on the clock it is returned, and written there from
        # a register a clock later (``write_lag``), at copies of the write pointer that come
        # through a tree: the port's valid reaches no line column within a clock.
        line = Signal(self.lines.payload.shape(), reset_less=True)
        m.d.sync += [line.data.eq(returned.payload.data), line.error.eq(returned.payload.error)]
        m.submodules.lines = lines = EagerFIFO(shape=self.lines.payload.shape(),
                                               depth=self.READS_IN_FLIGHT, write_lag=(0, 1))
        m.d.comb += [lines.w_en.eq(returned.valid & (returned.payload.id == self._host_id)),
                     lines.w_data.eq(line)]
        wiring.connect(m, lines.r_stream, wiring.flipped(self.lines))
        m.d.sync += reads_in_flight.eq(reads_in_flight + taken - (lines.r_rdy & lines.r_en))

    def _writes(self, m):
        p = self._params.datapath
        layout = host_write_layout(self._params)
        lag = AxiMemoryPort.LINE_LAG
        line_offset = layout["line"].offset
        m.submodules.write_queue = queue = EagerFIFO(
            shape=layout, depth=self.QUEUE, lag=(line_offset, lag),
            write_lag=(line_offset, self._line_lag))
        wiring.connect(m, wiring.flipped(self.write), queue.w_stream)
        head = queue.r_stream.payload
        zero, write = self.zero_write.payload, self.write_line
        groups = p.control_copies
        zeroing, = register_copies(m, self.zero_phase, 1, "write_zeroing")
        # The phase of the line's take, ``lag`` clocks later, in a copy for each column group
        # and one for the byte enables, through a tree of ``1 + lag`` levels from the phase.
        late = register_tree(m, self.zero_phase, 1 + lag, groups + 1, "write_zeroing_late")
        m.d.comb += [
            write.payload.id.eq(Mux(zeroing, zero.id, self._host_id)),
            write.payload.address.eq(Mux(zeroing, zero.address, head.address)),
            write.payload.strobe.eq(Mux(late[-1], zero.strobe, head.strobe)),
        ]
        bits = p.control_copy_bits
        m.d.comb += write.payload.line.eq(Cat(
            Mux(zero_copy, zero.line[g * bits:(g + 1) * bits], head.line[g * bits:(g + 1) * bits])
            for g, zero_copy in enumerate(late[:groups])))
        m.d.comb += [write.valid.eq(Mux(zeroing, self.zero_write.valid, queue.r_rdy)),
                     queue.r_en.eq(write.ready & ~zeroing),
                     self.zero_write.ready.eq(write.ready & zeroing)]
