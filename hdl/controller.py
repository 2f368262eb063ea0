"""The NEURON-Fabric CXL.mem controller: host channels in, device memory (AXI4) out.

Requests move through a pipeline, one per clock while nothing downstream holds them up::

    m2s_req, m2s_rwd -> Ingress -> AddressDecoder -> dispatch -+-> SlotPool -------+
                                                               +-> AxiMemoryPort --+-> Responder
                                                               +-> RegisterWindow -+   -> s2m_ndr,
                                                               +-> (bad input) ----+      s2m_drs

Dispatch takes the decoded requests in order and queues each one's response with the
:class:`~hdl.responder.Responder`, which answers them in that order. Register commands that
work on the slots (``CTRL.FLUSH``, ``CTRL.CLEAR``) and the accesses to accumulator memory run
between requests (``docs/controller.md``, "Hazards").
"""

from amaranth import Cat, Const, Module, Mux, ResetSignal, Signal
from amaranth.lib import data, enum, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from spec.cxl import (
    TAG_BITS,
    DevLoad,
    m2s_req_layout,
    m2s_rwd_layout,
    s2m_drs_layout,
    s2m_ndr_layout,
)
from spec.params import ControllerParams, aggregates

from .axi import RESP_OKAY, AxiMemoryPort, axi4_signature
from .bram import PRIMITIVES
from .control import ControlRegisters
from .csr import csr_bus_signature
from .decode import AddressDecoder, decoded_layout
from .ingress import Ingress, Operation, request_layout
from .pipeline import EagerFIFO, out_of_reset, register_copies
from .responder import Responder, Source
from .slot_ops import SlotOp
from .slots import SlotPool
from .window import RegisterWindow

__all__ = ["CxlMemController"]


class _Route(enum.Enum, shape=4):
    """Where dispatch sends a decoded request: the first that applies, in this order. A
    request carries its route one-hot (:data:`_ROUTES`)."""
    IGNORE = 0        # MemSpecRd, a hint: no access, no response
    BAD_OPCODE = 1    # an unsupported opcode: Cmp, STATUS.BAD_OPCODE
    NO_ACCESS = 2     # an invalidate: Cmp
    BAD_READ = 3      # a read beyond the address bits: MemData-NXM, STATUS.BAD_ADDRESS
    BAD_WRITE = 4     # a write beyond the address bits: Cmp, STATUS.BAD_ADDRESS
    POISONED = 5      # a poisoned write: Cmp, STATUS.POISON, dropped
    WINDOW = 6        # the register window
    POOL = 7          # an aggregating region: the slot pool
    RAW_READ = 8      # identity, in accumulator memory: the slots are written back first
    RAW_WRITE = 9     # identity, in accumulator memory: the slots are written back and emptied
    LINE_READ = 10    # identity
    LINE_WRITE = 11   # identity


#: A route, one-hot: a flag per :class:`_Route`, named after it; and ``now``, whether it is one
#: of the routes answered at once (:data:`_ANSWERED_NOW`), a flag of its own for dispatch.
_ROUTES = data.StructLayout({**{route.name.lower(): 1 for route in _Route}, "now": 1})

#: The routes of bad input and of MemInv: answered at once, with no access.
_ANSWERED_NOW = (_Route.BAD_OPCODE, _Route.NO_ACCESS, _Route.BAD_READ, _Route.BAD_WRITE,
                 _Route.POISONED)


class _Task(enum.Enum, shape=2):
    """Work on the slots that runs between requests."""
    FLUSH = 0         # CTRL.FLUSH, or before a raw read: write every dirty slot back
    EVICT = 1         # before a raw write: write every dirty slot back and empty them all
    CLEAR = 2         # CTRL.CLEAR: empty the region's slots, zero its accumulators


#: The phases of a task (``_tasks``): none, the scan of every slot, waiting for the pool to settle,
#: a clear's zero writes, waiting for their responses.
_PHASES = ("idle", "scan", "settle", "zero", "zero_wait")

#: AXI IDs: the host's identity accesses, and the slot pool's fills and write-backs (with the
#: clear's zero writes), whose write responses the pool waits for.
_HOST_ID, _POOL_ID = 0, 1

#: Identity reads in flight at once: the responder's queue of their lines.
_READS_IN_FLIGHT = 8

#: Identity reads (and writes) dispatched and not yet taken by the AXI port: the queue between.
_HOST_QUEUE = 2


class CxlMemController(wiring.Component):
    """A CXL.mem Type-3 memory expander that aggregates low-bit gradient lines on chip.

    See ``docs/controller.md`` for the behaviour per opcode, path and bad input, the slot pool,
    the register window, clear, flush and DevLoad.

    Parameters
    ----------
    params : ControllerParams
    primitives : None or "ecp5"
        How the slot pool's block RAM is made (:class:`hdl.bram.RegisteredMemory`): inferred
        (portable Verilog, what the simulations run), or LFE5U DP16KD blocks with their
        output registers.

    Members
    -------
    m2s_req : In(stream.Signature(m2s_req_layout()))
    m2s_rwd : In(stream.Signature(m2s_rwd_layout(line_bits)))
    s2m_ndr : Out(stream.Signature(s2m_ndr_layout()))
    s2m_drs : Out(stream.Signature(s2m_drs_layout(line_bits)))
        The CXL.mem channels; ``ready`` stands in for link-layer credits.
    axi : Out(axi4_signature(...))
        Device memory, ``line_bits`` wide.
    csr : In(csr_bus_signature(...))
        The control registers' own bus. It has priority over the register window.
    """

    def __init__(self, params=ControllerParams(), *, primitives=None):
        if not isinstance(params, ControllerParams):
            raise TypeError(f"params must be a ControllerParams, not {params!r}")
        if primitives not in PRIMITIVES:
            raise ValueError(f"primitives must be one of {PRIMITIVES}, not {primitives!r}")
        self._params = params
        self._primitives = primitives
        p = params.datapath
        self._control = ControlRegisters(params)
        super().__init__({
            "m2s_req": In(stream.Signature(m2s_req_layout())),
            "m2s_rwd": In(stream.Signature(m2s_rwd_layout(p.line_bits))),
            "s2m_ndr": Out(stream.Signature(s2m_ndr_layout())),
            "s2m_drs": Out(stream.Signature(s2m_drs_layout(p.line_bits))),
            "axi": Out(axi4_signature(address_bits=params.address_bits, data_bits=p.line_bits,
                                      id_bits=params.axi_id_bits)),
            "csr": In(csr_bus_signature(len(self._control.bus.addr))),
        })

    @property
    def params(self):
        return self._params

    @property
    def regmap(self):
        return self._control.regmap

    def elaborate(self, platform):
        m = Module()
        params = self._params
        p = params.datapath
        control = self._control
        m.submodules.control = control
        m.submodules.ingress = ingress = Ingress(params)
        m.submodules.decoder = decoder = AddressDecoder(params)
        m.submodules.pool = pool = SlotPool(params, user_width=TAG_BITS,
                                                    primitives=self._primitives)
        m.submodules.memory = memory = AxiMemoryPort(
            line_bits=p.line_bits, address_bits=params.address_bits,
            id_bits=params.axi_id_bits, burst_beats=1 + p.state_lines,
            bursts=SlotPool.QUEUE_DEPTH)
        m.submodules.responder = responder = Responder(params)
        m.submodules.window = window = RegisterWindow(params, addr_width=len(self.csr.addr))
        wiring.connect(m, wiring.flipped(self.m2s_req), ingress.m2s_req)
        wiring.connect(m, wiring.flipped(self.m2s_rwd), ingress.m2s_rwd)
        wiring.connect(m, responder.s2m_ndr, wiring.flipped(self.s2m_ndr))
        wiring.connect(m, responder.s2m_drs, wiring.flipped(self.s2m_drs))
        wiring.connect(m, memory.axi, wiring.flipped(self.axi))
        events = control.events
        head, head_valid, pop = self._decode(m, ingress, decoder, control)
        request, decoded, route = head.request, head.decoded, head.route

        # The register bus: the csr port first, the window when the port leaves it free.
        external = self.csr.r_stb | self.csr.w_stb
        m.d.comb += [
            control.bus.addr.eq(Mux(external, self.csr.addr, window.bus.addr)),
            control.bus.r_stb.eq(self.csr.r_stb | window.bus.r_stb),
            control.bus.w_stb.eq(self.csr.w_stb | window.bus.w_stb),
            control.bus.w_data.eq(Mux(external, self.csr.w_data, window.bus.w_data)),
            self.csr.r_data.eq(control.bus.r_data),
            window.bus.r_data.eq(control.bus.r_data),
            window.bus_free.eq(~external),
        ]

        # Device memory: reads and writes of the host (ID _HOST_ID) and of the slot pool
        # (_POOL_ID), the pool's first. Dispatch hands the host's to two small queues read
        # without a clock, whose ``w_rdy`` come from registers: its decision does not wait for
        # the port or the pool, and the port's command muxes read the queues' heads.
        read_layout = memory.read_command.payload.shape()
        m.submodules.host_read_queue = host_read_queue = EagerFIFO(
            width=read_layout.size, depth=_HOST_QUEUE)
        host_read = Signal(read_layout)
        host_read_valid = Signal()
        host_read_taken = host_read_valid & host_read_queue.w_rdy
        m.d.comb += [
            host_read_queue.w_en.eq(host_read_taken), host_read_queue.w_data.eq(host_read),
            memory.read_command.valid.eq(pool.fill_read.valid | host_read_queue.r_rdy),
            memory.read_command.payload.eq(host_read_queue.r_data),
            pool.fill_read.ready.eq(memory.read_command.ready),
            host_read_queue.r_en.eq(memory.read_command.ready & ~pool.fill_read.valid),
        ]
        with m.If(pool.fill_read.valid):
            m.d.comb += [memory.read_command.payload.id.eq(_POOL_ID),
                         memory.read_command.payload.address.eq(pool.fill_read.payload.address),
                         memory.read_command.payload.beats.eq(pool.fill_read.payload.beats)]

        returned = memory.read_data
        # The host's lines: a register stage without an enable (rule 1), then a queue read
        # without a clock, whose read moves only its pointer (a head register would be
        # enabled by the responder's decision).
        host_line = Signal(p.line_bits + 1, reset_less=True)
        host_line_valid = Signal()
        m.d.sync += [host_line_valid.eq(returned.valid & (returned.payload.id == _HOST_ID)),
                     host_line.eq(returned.payload.as_value()[len(returned.payload.id):])]
        # The pool's lines: ``returned`` is the R channel registered (AxiMemoryPort), and so
        # are the copies of its valid and error the pool's slices take, made here from R on
        # the same edge, one per slice: each is placed beside its slice, not one register
        # steering all of them across the device (pipeline rule 2).
        axi = self.axi
        m.d.comb += [
            pool.fill_data.valid.eq(Cat(register_copies(
                m, axi.rvalid & (axi.rid == _POOL_ID), pool.slices, "pool_line_valid",
                reset=True))),
            pool.fill_data.error.eq(Cat(register_copies(
                m, axi.rresp != RESP_OKAY, pool.slices, "pool_line_error")))]
        m.submodules.host_lines = host_lines = EagerFIFO(
            width=p.line_bits + 1, depth=_READS_IN_FLIGHT)
        m.d.comb += [
            pool.fill_data.data.eq(returned.payload.data),
            host_lines.w_en.eq(host_line_valid), host_lines.w_data.eq(host_line),
            responder.memory_data.valid.eq(host_lines.r_rdy),
            responder.memory_data.payload.eq(host_lines.r_data),
            host_lines.r_en.eq(responder.memory_data.ready),
        ]
        reads_in_flight = Signal(range(_READS_IN_FLIGHT + 1))
        m.d.sync += reads_in_flight.eq(reads_in_flight + host_read_taken
                                       - (host_lines.r_rdy & host_lines.r_en))

        # The pool's write-backs go to the port on the clock they leave the pool (the port
        # holds as many as the pool may make); the host's writes and a clear's zero writes
        # are one-line writes, which wait for ``write_line.ready``.
        m.d.comb += [memory.write_burst.valid.eq(pool.write_back.valid),
                     memory.write_burst.payload.id.eq(_POOL_ID),
                     memory.write_burst.payload.address.eq(pool.write_back.payload.address),
                     memory.write_burst.payload.lines.eq(pool.write_back.payload.lines),
                     pool.write_backs_held.eq(memory.bursts_held)]
        write = memory.write_line
        host_write_layout = data.StructLayout({"address": params.address_bits,
                                               "line": p.line_bits, "strobe": p.line_bytes})
        m.submodules.host_write_queue = host_write_queue = EagerFIFO(
            width=host_write_layout.size, depth=_HOST_QUEUE)
        host_write = Signal(host_write_layout)
        host_write_valid = Signal()
        host_write_taken = host_write_valid & host_write_queue.w_rdy
        host_write_head = host_write_layout(host_write_queue.r_data)
        m.d.comb += [host_write_queue.w_en.eq(host_write_taken),
                     host_write_queue.w_data.eq(host_write)]
        zero_write = Signal(write.payload.shape())
        zero_write_valid = Signal()
        zero_phase = Signal()           # the clear's zero phase runs (a register)
        # The one-line write's source: a clear's zero write or the host's queue head, chosen
        # by the zero phase of the last clock, so that the line's mux (the W buffer's input,
        # spread over the die) is steered by registers that copy a register: one copy of the
        # choice per column group of the line (pipeline rule 2), and one for the other fields
        # and the handshakes. The zero writes start a clock into the phase, and the port
        # stays without a write for a clock after it.
        groups = p.control_copies
        zeroing = register_copies(m, zero_phase, groups + 1, "write_zeroing")
        with m.If(zeroing[-1]):
            m.d.comb += [write.payload.id.eq(zero_write.id),
                         write.payload.address.eq(zero_write.address),
                         write.payload.strobe.eq(zero_write.strobe)]
        with m.Else():
            m.d.comb += [write.payload.id.eq(_HOST_ID),
                         write.payload.address.eq(host_write_head.address),
                         write.payload.strobe.eq(host_write_head.strobe)]
        bits = p.control_copy_bits
        m.d.comb += write.payload.line.eq(Cat(
            Mux(zero_copy, zero_write.line[g * bits:(g + 1) * bits],
                host_write_head.line[g * bits:(g + 1) * bits])
            for g, zero_copy in enumerate(zeroing[:groups])))
        m.d.comb += [write.valid.eq(Mux(zeroing[-1], zero_write_valid, host_write_queue.r_rdy)),
                     host_write_queue.r_en.eq(write.ready & ~zeroing[-1])]
        zero_write_taken = zero_write_valid & write.ready & zeroing[-1]
        response = memory.write_response
        # Writes not yet acknowledged: the pool's (write-backs, zero writes), and the host's
        # (from dispatch on: queued ones too).
        # A fill or result read waits for both: it must not overtake a write-back, nor a
        # host's raw write of accumulator memory (AXI orders neither a read after a write nor
        # writes of two IDs), and a clear's zero writes must not either.
        # Each count's ``!= 0`` is a register too, as dispatch and the pool steer by it: one
        # for dispatch, and one per slice of the pool (as its lines' valid, above).
        pool_taken = (memory.write_burst.valid
                      + (write.valid & write.ready & (write.payload.id == _POOL_ID)))
        writing = {}
        for taken, number in ((pool_taken, _POOL_ID), (host_write_taken, _HOST_ID)):
            count = Signal(range(1 << 16), name=f"writes_of_id{number}")
            done = response.valid & (response.payload.id == number)
            following = (count + taken - done)[:len(count)]
            m.d.sync += count.eq(following)
            writing[number] = register_copies(m, following != 0, 1 + pool.slices,
                                              f"writing_id{number}", reset=True)
        writes_pending = writing[_POOL_ID][0] | writing[_HOST_ID][0]
        m.d.comb += [
            pool.writes_pending.eq(Cat(pool_copy | host_copy for pool_copy, host_copy
                                       in zip(writing[_POOL_ID][1:], writing[_HOST_ID][1:]))),
            pool.host_writes_pending.eq(Cat(writing[_HOST_ID][1:])),
            responder.memory_written.eq(response.valid & (response.payload.id == _HOST_ID)),
            events.mem_error.eq((returned.valid & returned.payload.error)
                                | (response.valid & response.payload.error)
                                | pool.events.mem_error),
        ]

        # Responses. DevLoad follows the requests the device holds: taken from the host and
        # not yet answered (a MemSpecRd, which gets no answer, until dispatch drops it), a
        # clock late: the handshakes are registered before the count adds them.
        light, optimal, moderate = params.devload_limits
        held = Signal(range(1 << 8))
        taken, answered = Signal(range(3)), Signal(range(3))
        ignored, was_ignored = Signal(), Signal()
        m.d.sync += [
            taken.eq(sum(channel.valid & channel.ready
                         for channel in (self.m2s_req, self.m2s_rwd))),
            answered.eq(sum(channel.valid & channel.ready
                            for channel in (self.s2m_ndr, self.s2m_drs))),
            was_ignored.eq(ignored),
            held.eq(held + taken - answered - was_ignored),
        ]
        m.d.comb += [
            responder.dev_load.eq(Mux(held <= light, DevLoad.LIGHT,
                                      Mux(held <= optimal, DevLoad.OPTIMAL,
                                          Mux(held <= moderate, DevLoad.MODERATE,
                                              DevLoad.SEVERE)))),
            responder.pool_result.valid.eq(pool.result.valid),
            responder.pool_result.payload.eq(pool.result.payload),
            pool.result.ready.eq(responder.pool_result.ready),
            responder.window_result.valid.eq(window.result.valid),
            responder.window_result.payload.eq(window.result.payload),
            window.result.ready.eq(responder.window_result.ready),
            events.reads.eq(responder.sent_read),
            events.writes.eq(responder.sent_write),
        ]
        for name in ("accepted", "rejected", "capacity", "partial", "completed", "hits",
                     "fills", "evictions", "write_backs", "dropped"):
            m.d.comb += events[name].eq(pool.events[name])
        m.d.comb += [events.invalid_code.eq(pool.events.invalid),
                     events.invalid_lines.eq(pool.events.invalid)]

        # Whether the slots may hold lines that memory lacks (dirty) or lines at all: set as
        # the pool makes them, cleared as a scan that removes them starts (see _tasks).
        any_dirty, any_resident = Signal(), Signal()
        with m.If(pool.events.accepted):
            m.d.sync += any_dirty.eq(1)
        with m.If(pool.events.fills):
            m.d.sync += any_resident.eq(1)
        # Whether the pool is idle, from a register (its ``idle`` is a wide AND of its
        # stages): the last clock's, unless an op or a host write went in on it, which
        # makes the pool, or memory, busy on this clock.
        pool_idle = Signal()
        m.d.sync += pool_idle.eq(pool.idle & ~(pool.op.valid & pool.op.ready)
                                 & ~host_write_taken)
        raw_start = Signal()
        raw_task = Signal(_Task)
        task_blocked, scan = self._tasks(m, control, pool, pool_idle, raw_start, raw_task,
                                         any_dirty, any_resident, zero_write, zero_write_valid,
                                         zero_phase, zero_write_taken, writes_pending)

        # Dispatch: the head request goes where its route says once everything it needs has
        # room, and its response is queued with the responder on the same clock.
        completion = responder.completion
        is_read = request.operation == Operation.READ
        is_write = request.operation == Operation.WRITE
        m.d.comb += [completion.payload.tag.eq(request.tag),
                     completion.payload.ld_id.eq(request.ld_id),
                     completion.payload.data.eq(is_read),
                     completion.payload.write.eq(is_write)]
        # Every destination's payload is the head's, whatever the route (only the valids
        # depend on it): a route deciding a line-wide payload would reach every bit of it.
        # The pool's fields come from a task's scan while one runs.
        op = pool.op.payload
        index_lsb = params.accumulator_bytes_per_line.bit_length() - 1
        m.d.comb += [
            window.request.payload.read.eq(is_read),
            window.request.payload.word.eq(
                request.address[2:params.window_bytes.bit_length() - 1]),
            window.request.payload.data.eq(request.data),
            window.request.payload.byte_enable.eq(request.byte_enable),
            op.kind.eq(Mux(scan.valid, scan.kind,
                           Mux(is_read, SlotOp.READ, SlotOp.CONTRIBUTE))),
            op.index.eq(Mux(scan.valid, scan.index, decoded.state_address[index_lsb:])),
            op.tag.eq(Mux(scan.valid, scan.low, decoded.state_address)),
            op.high.eq(scan.high), op.data.eq(request.data),
            op.full_line.eq(request.full_line), op.mode.eq(decoded.mode),
            op.threshold.eq(decoded.threshold), op.expected.eq(decoded.expected),
            op.user.eq(request.tag),          # for a reader of waveforms
            host_read.id.eq(_HOST_ID), host_read.address.eq(request.address),
            host_read.beats.eq(1),
            host_write.address.eq(request.address), host_write.line.eq(request.data),
            host_write.strobe.eq(request.byte_enable),
        ]
        # The decision is a sum of products of registers: the route is one-hot (chosen as the
        # request entered the queue), and each route's product names what it needs.
        # Accumulator memory is read only once memory holds every slot's state and no
        # write-back is on its way, and written only with no slot resident; until then a raw
        # access starts the task that makes it so (``raw_start``), and waits.
        now = route.now
        answered = completion.ready
        read_room = reads_in_flight < _READS_IN_FLIGHT
        line_read_ready = answered & host_read_queue.w_rdy & read_room
        line_write_ready = answered & host_write_queue.w_rdy
        raw_read_clean = ~any_dirty & pool_idle
        raw_write_clean = ~any_dirty & ~any_resident & pool_idle
        ready = ((route.ignore)
                 | (now & answered)
                 | (route.window & answered & window.request.ready)
                 | (route.pool & answered & pool.op.ready)
                 | (route.line_read & line_read_ready)
                 | (route.raw_read & line_read_ready & raw_read_clean)
                 | (route.line_write & line_write_ready)
                 | (route.raw_write & line_write_ready & raw_write_clean))
        free = ~task_blocked & head_valid
        fire = free & ready
        go = free & answered
        m.d.comb += [
            window.request.valid.eq(go & route.window),
            host_read_valid.eq(go & (route.line_read | (route.raw_read & raw_read_clean))
                               & read_room),
            host_write_valid.eq(go & (route.line_write | (route.raw_write & raw_write_clean))),
            raw_start.eq(free & ((route.raw_read & any_dirty)
                                 | (route.raw_write & (any_dirty | any_resident)))),
            raw_task.eq(Mux(route.raw_write, _Task.EVICT, _Task.FLUSH)),
            completion.payload.source.eq(Mux(now, Source.NOW, Mux(
                route.window, Source.WINDOW, Mux(route.pool, Source.POOL, Source.MEMORY)))),
            completion.payload.nxm.eq(route.bad_read),
            events.bad_opcode.eq(fire & route.bad_opcode),
            events.bad_address.eq(fire & (route.bad_read | route.bad_write)),
            events.poison.eq(fire & route.poisoned),
            completion.valid.eq(fire & ~route.ignore), pop.eq(fire),
            ignored.eq(fire & route.ignore),
        ]
        # The pool's op is the scan's while a task runs (``_tasks``).
        m.d.comb += pool.op.valid.eq(scan.valid | (go & route.pool))
        return m

    def _decode(self, m, ingress, decoder, control):
        """Requests from ``ingress`` through the address decoder, into a queue of decoded
        requests; returns its head (``request``, ``decoded``, and its ``route``, chosen as it
        enters the queue so that dispatch starts from registers), whether there is one, and
        the signal that pops it. A request's line and byte enables wait in a queue of their
        own, read without a clock, so that a pop moves only its pointer (rule 1: a head
        register of them would be enabled by dispatch's decision). The decoder is a pipeline
        of ``LATENCY`` steps; the request travels beside it in registers. A request enters
        only while the queue has room for it and every request in the decoder, and while the
        region table is applied (``table_ready``, through a register: it falls clocks before
        the table changes, more than a request needs to leave the decoder)."""
        latency = AddressDecoder.LATENCY
        p = self._params.datapath
        full = request_layout(self._params)
        lines = ("byte_enable", "data")
        narrow = data.StructLayout({name: field.shape for name, field in full
                                    if name not in lines})
        entry = data.StructLayout({"request": narrow, "decoded": decoded_layout(self._params),
                                   "route": _ROUTES})
        m.submodules.decoded = queue = fifo.SyncFIFOBuffered(width=entry.size,
                                                             depth=latency + 3)
        m.submodules.decoded_lines = line_queue = EagerFIFO(
            width=p.line_bytes + p.line_bits, depth=queue.depth)
        table_ready = Signal()
        m.d.sync += table_ready.eq(control.table_ready)
        in_decoder = Signal(range(latency + 1))
        request = ingress.request
        m.d.comb += [request.ready.eq(table_ready & (queue.level + in_decoder < queue.depth)),
                     decoder.address.eq(request.payload.address),
                     decoder.enable.eq(control.enable), decoder.regions.eq(control.regions)]
        valid = request.valid & request.ready
        payload = request.payload
        for step in range(latency):
            next_valid = Signal(name=f"decoding_valid_{step}")
            next_payload = Signal.like(payload, name=f"decoding_{step}", reset_less=True)
            m.d.sync += [next_valid.eq(valid), next_payload.eq(payload)]
            valid, payload = next_valid, next_payload
        m.d.sync += in_decoder.eq(in_decoder + (request.valid & request.ready) - valid)
        pop = Signal()
        m.d.comb += [queue.w_en.eq(valid),
                     queue.w_data.eq(Cat(*(payload[name] for name in narrow.members),
                                         decoder.decoded,
                                         self._route(payload, decoder.decoded))),
                     queue.r_en.eq(pop),
                     line_queue.w_en.eq(valid),
                     line_queue.w_data.eq(Cat(*(payload[name] for name in lines))),
                     line_queue.r_en.eq(pop)]
        # The head: the narrow queue's register, and the line queue's entry of the same
        # request (the two take and lose entries together, and the line queue's are readable
        # a clock earlier).
        narrow_head = entry(queue.r_data)
        head = Signal(data.StructLayout({"request": full, "decoded": entry["decoded"].shape,
                                         "route": _ROUTES}))
        line_head = Signal(data.StructLayout({name: full[name].shape for name in lines}))
        m.d.comb += [*(head.request[name].eq(narrow_head.request[name])
                       for name in narrow.members),
                     line_head.eq(line_queue.r_data),
                     *(head.request[name].eq(line_head[name]) for name in lines),
                     head.decoded.eq(narrow_head.decoded), head.route.eq(narrow_head.route)]
        return head, queue.r_rdy, pop

    @staticmethod
    def _route(request, decoded):
        """The route of a request, one-hot: the first in order whose condition holds."""
        operation = request.operation
        read = operation == Operation.READ
        conditions = {
            _Route.IGNORE: operation == Operation.SPECULATIVE,
            _Route.BAD_OPCODE: operation == Operation.UNSUPPORTED,
            _Route.NO_ACCESS: operation == Operation.INVALIDATE,
            _Route.BAD_READ: request.out_of_range & read,
            _Route.BAD_WRITE: request.out_of_range,
            _Route.POISONED: request.poison,
            _Route.WINDOW: decoded.window,
            _Route.POOL: aggregates(decoded.mode),
            _Route.RAW_READ: decoded.accumulator & read,
            _Route.RAW_WRITE: decoded.accumulator,
            _Route.LINE_READ: read,
            _Route.LINE_WRITE: 1,
        }
        flags = {}
        taken = Const(0)                    # an earlier route applies
        for route in _Route:
            flags[route] = conditions[route] & ~taken
            taken = taken | conditions[route]
        return Cat(*flags.values(), Cat(flags[route] for route in _ANSWERED_NOW).any())

    def _tasks(self, m, control, pool, pool_idle, raw_start, raw_task, any_dirty,
               any_resident, zero_write, zero_write_valid, zero_phase, zero_write_taken,
               writes_pending):
        """The work on the slots that runs between requests: ``CTRL.FLUSH``, ``CTRL.CLEAR``,
        the scan a raw access asks for (``raw_start``, ``raw_task``), and the eviction of every
        slot after an APPLY has copied its table (a slot may hold a line of a region the new
        table drops or moves, whose old accumulators are now ordinary memory). Each sends one
        scan op per slot to the pool and waits until the pool is idle (``pool_idle``, a
        register: every write-back acknowledged); a clear then writes zeros over the region's
        accumulators, a line per write (``zero_write``, during ``zero_phase``; the port takes
        them a clock into it), and waits for their write responses.
        Returns whether a task runs or waits to, or the reset was high on the last edge
        (dispatch holds the next request meanwhile; a register), and the scan: while
        ``scan.valid``, the pool's op is ``scan.kind`` of slot ``scan.index`` (a clear's range
        ``[scan.low, scan.high)``)."""
        params = self._params
        p = params.datapath
        # The tasks waiting to start, and the phase of the one running, one-hot: each phase is
        # a flip-flop of its own, so a test of it (the scan's valid steers the pool's op
        # fields, the zero writes' valid the write command's) is a register, not a compare.
        # Both are set from their values after the edge (``*_next``, assigned below where the
        # registers would be), so that whether dispatch is held (``blocked``: a task runs or
        # waits, or the reset was high on the last edge) is a register too.
        pending = Signal(data.StructLayout({"flush": 1, "clear": 1, "evict": 1}))
        phase = Signal(data.StructLayout({name: 1 for name in _PHASES}), init={"idle": 1})
        pending_next = Signal.like(pending)
        phase_next = Signal.like(phase)
        blocked = Signal(init=1, reset_less=True)
        m.d.comb += [pending_next.eq(pending), phase_next.eq(phase)]
        m.d.sync += [pending.eq(pending_next), phase.eq(phase_next),
                     blocked.eq(ResetSignal() | ~phase_next.idle
                                | pending_next.as_value().any())]
        region_number = Signal.like(control.clear_region)
        clear_fresh = Signal()               # region_number was loaded on the last edge
        m.d.sync += clear_fresh.eq(control.clear_start)
        with m.If(control.flush_start):
            m.d.comb += pending_next.flush.eq(1)
        with m.If(control.clear_start):
            m.d.comb += pending_next.clear.eq(1)
            m.d.sync += region_number.eq(control.clear_region)
        table_was_ready = Signal(init=1)
        m.d.sync += table_was_ready.eq(control.table_ready)
        with m.If(table_was_ready & ~control.table_ready):
            m.d.comb += pending_next.evict.eq(1)
        # The clear's region as the applied table stands, in registers a clock behind
        # ``region_number`` (``clear_fresh`` holds the clear that long): the mux over the
        # regions stays out of the task's start, which steers every phase register.
        region = control.regions[region_number[:max(1, (params.regions - 1).bit_length())]]
        wanted = Signal()
        region_low = Signal.like(region.acc)
        region_high = Signal.like(region.acc_end)
        m.d.sync += [wanted.eq((region_number < params.regions) & region.enable
                               & aggregates(region.mode)),
                     region_low.eq(region.acc), region_high.eq(region.acc_end)]

        task = Signal(_Task)
        command = Signal()                   # a register command (not a raw access's scan)
        scan = Signal(data.StructLayout({
            "valid": 1, "kind": SlotOp, "index": params.slot_index_bits,
            "low": params.address_bits, "high": params.address_bits + 1}))
        index = Signal(params.slot_index_bits)
        low = Signal(params.address_bits)
        high = Signal(params.address_bits + 1)
        zero_address = Signal(params.address_bits + 1)
        zero_left = Signal()                 # zero_address < high (a register: it is a valid)
        running = ~phase.idle
        m.d.comb += [
            control.flush_busy.eq(pending.flush | (running & command & (task == _Task.FLUSH))),
            control.clear_busy.eq(pending.clear | (running & command & (task == _Task.CLEAR))),
        ]

        def enter(name):
            m.d.comb += [phase_next[other].eq(other == name) for other in _PHASES]

        def start(kind, is_command):
            enter("scan")
            m.d.sync += [task.eq(kind), command.eq(is_command), index.eq(0)]
            if kind != _Task.CLEAR:
                m.d.sync += any_dirty.eq(0)
            if kind == _Task.EVICT:
                m.d.sync += any_resident.eq(0)

        def finish():
            enter("idle")
            with m.If(command):
                m.d.comb += [control.flush_done.eq(task == _Task.FLUSH),
                             control.clear_done.eq(task == _Task.CLEAR)]

        m.d.comb += [scan.valid.eq(phase.scan), scan.index.eq(index), scan.low.eq(low),
                     scan.high.eq(high),
                     scan.kind.eq(Mux(task == _Task.CLEAR, SlotOp.CLEAR,
                                      Mux(task == _Task.EVICT, SlotOp.EVICT, SlotOp.FLUSH)))]
        # One block per phase (they are one-hot: no priority chain between them).
        m.d.comb += zero_phase.eq(phase.zero)
        with m.If(out_of_reset(m, "tasks_in_reset")):  # see the hdl.slots docstring, Icarus
            with m.If(phase.idle):
                with m.If(pending.clear):
                    with m.If(~clear_fresh):
                        m.d.comb += pending_next.clear.eq(0)
                        m.d.sync += [low.eq(region_low), high.eq(region_high)]
                        with m.If(wanted):
                            start(_Task.CLEAR, 1)
                        with m.Else():
                            m.d.comb += control.clear_done.eq(1)
                with m.Elif(pending.flush):
                    m.d.comb += pending_next.flush.eq(0)
                    start(_Task.FLUSH, 1)
                with m.Elif(pending.evict & control.table_ready):
                    m.d.comb += pending_next.evict.eq(0)
                    start(_Task.EVICT, 0)
                with m.Elif(raw_start):
                    with m.If(raw_task == _Task.EVICT):
                        start(_Task.EVICT, 0)
                    with m.Else():
                        start(_Task.FLUSH, 0)
            with m.If(phase.scan):
                with m.If(pool.op.ready):
                    m.d.sync += index.eq(index + 1)
                    with m.If(index == params.slots - 1):
                        enter("settle")
            with m.If(phase.settle):
                with m.If(pool_idle):
                    with m.If(task == _Task.CLEAR):
                        enter("zero")
                        m.d.sync += [zero_address.eq(low), zero_left.eq(low < high)]
                    with m.Else():
                        finish()
            with m.If(phase.zero):
                m.d.comb += [
                    zero_write_valid.eq(zero_left),
                    zero_write.id.eq(_POOL_ID), zero_write.address.eq(zero_address),
                    zero_write.strobe.eq(-1), zero_write.line.eq(0),
                ]
                following = zero_address + p.line_bytes
                with m.If(zero_write_taken):
                    m.d.sync += [zero_address.eq(following), zero_left.eq(following < high)]
                with m.If(~zero_left):
                    enter("zero_wait")
            with m.If(phase.zero_wait):
                with m.If(~writes_pending):
                    finish()
        return blocked, scan
