"""The NEURON-Fabric CXL.mem controller: host channels in, device memory (AXI4) out.

Requests move through a pipeline of components, one per clock while nothing downstream holds
them up (the same diagram is in the README and ``docs/controller.md``)::

    M2S Req, M2S RwD                                                     S2M NDR, S2M DRS
           |                                                                     ^
           v                                                                     |
    +---------+   +----------------+   +----------+      completions    +------------------+
    | Ingress |-->| AddressDecoder |-->| Dispatch |-------------------->| Responder        |
    +---------+   | + HintSource   |   +----------+                     | + DevLoadMeter   |
                  +----------------+     |   |   |                      +------------------+
          contributions, result reads    |   |   |  identity reads,       ^ the answers of the
                +------------------------+   |   +----------+ writes      | SlotPool, the
                |                   register |              |              | RegisterWindow and
                v                   accesses v              v              | the IdentityPath
    +-----------------------+   +------------------+   +--------------+
    | SlotPool              |   | RegisterWindow   |   | IdentityPath |
    |  PoolSlice:           |   | ControlRegisters |   +--------------+
    |   TagCheck            |   +------------------+     ^         |
    |   FillHints           |                  |         |         |
    |   SlotUpdate          |     flush, clear |         | zero    |
    |   MissHandler         |                  v         | writes  |
    |    + FillReader       |   +------------------+     |         |
    |   OutputCredit        |<--| ScanTasks        |-----+         |
    |   AggregationDatapath |   +------------------+               |
    +-----------------------+ scan ops                             |
        | fills, write-backs                                       | reads, writes
        v                                                          v
    +----------------------------------------------------------------------------------+
    | AxiMemoryPort: AXI4 to device memory (accumulators of aggregating lines, FP32)   |
    +----------------------------------------------------------------------------------+

Dispatch takes the decoded requests in order and queues each one's response with the
:class:`~hdl.responder.Responder`, which answers them in that order. Register commands that
work on the slots (``CTRL.FLUSH``, ``CTRL.CLEAR``) and the accesses to accumulator memory run
between requests (``docs/controller.md``, "Hazards").
"""

import types

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from spec.cxl import (
    TAG_BITS,
    m2s_req_layout,
    m2s_rwd_layout,
    s2m_drs_layout,
    s2m_ndr_layout,
)
from spec.params import ControllerParams, aggregates

from .axi import RESP_OKAY, AxiMemoryPort, axi4_signature
from .bram import PRIMITIVES
from .control import ControlRegisters
from .credit import CreditSender, credit_loop
from .csr import csr_bus_signature
from .decode import AddressDecoder, decoded_layout
from .devload import DevLoadMeter
from .dispatch import DISPATCH_EVENTS, ROUTES, Dispatch, route_of
from .identity import IdentityPath
from .ingress import Ingress, Operation, request_fields_layout, request_layout, request_line_layout
from .pipeline import EagerFIFO, delayed, register_copies
from .prefetch import HintSource
from .responder import Responder
from .scan_tasks import ScanTasks
from .slot_ops import SlotOp
from .slots import SlotPool
from .window import RegisterWindow

__all__ = ["CxlMemController"]


#: AXI IDs: the host's identity accesses, and the slot pool's fills and write-backs (with the
#: clear's zero writes), whose write responses the pool waits for.
_HOST_ID, _POOL_ID = 0, 1


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
    csr_refused : Out(1)
        A register write was refused (a lockable register while locked), ``WRITE_LATENCY``
        clocks after its strobe (:mod:`hdl.csr`): one of ``csr``'s on that clock if it made
        one (the window waits while ``csr`` strobes).
    """

    #: Clocks from dispatch's decision to the head request's line and byte enables at its
    #: destination (the pool, the identity write queue, the register window): the decoded
    #: line queue's column groups are read at copies of its read pointer that come through a
    #: tree of ``DISPATCH_LINE_LAG + 1`` levels, so that dispatch's pop reaches no line column
    #: within a clock, and each destination takes the line that late (its ``data_lag`` or
    #: ``line_lag``), at no clock of its own.
    DISPATCH_LINE_LAG = 1

    #: Clocks from a request's valid at the decoder's last step to its line in the decoded
    #: line queue's columns: they are written from a register of the line, at copies of the
    #: write pointer that come through a tree (``EagerFIFO``'s ``write_lag``), so that the
    #: decoder's valid reaches none of the columns within a clock. No more than
    #: ``DISPATCH_LINE_LAG``: read at least as late, an entry is readable as soon as without.
    DECODED_LINE_WRITE_LAG = 1

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
            "csr_refused": Out(1),
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
        c = types.SimpleNamespace(control=self._control)
        m.submodules.control = c.control
        m.submodules.ingress = c.ingress = Ingress(params)
        m.submodules.decoder = c.decoder = AddressDecoder(params)
        lag = self.DISPATCH_LINE_LAG
        m.submodules.pool = c.pool = SlotPool(params, user_width=TAG_BITS,
                                              primitives=self._primitives, data_lag=lag)
        m.submodules.memory = c.memory = AxiMemoryPort(
            line_bits=p.line_bits, address_bits=params.address_bits,
            id_bits=params.axi_id_bits, burst_beats=1 + p.state_lines,
            bursts=SlotPool.WRITE_BACKS, primitives=self._primitives)
        m.submodules.responder = c.responder = Responder(params)
        m.submodules.window = c.window = RegisterWindow(params, addr_width=len(self.csr.addr),
                                                        data_lag=lag)
        m.submodules.identity = c.identity = IdentityPath(params, host_id=_HOST_ID,
                                                          line_lag=lag)
        m.submodules.tasks = c.tasks = ScanTasks(
            params, region_bits=len(c.control.clear_region), id_bits=params.axi_id_bits,
            zero_id=_POOL_ID)
        m.submodules.dispatch = c.dispatch = Dispatch()
        m.submodules.devload = c.devload = DevLoadMeter(params)
        wiring.connect(m, wiring.flipped(self.m2s_req), c.ingress.m2s_req)
        wiring.connect(m, wiring.flipped(self.m2s_rwd), c.ingress.m2s_rwd)
        wiring.connect(m, c.responder.s2m_ndr, wiring.flipped(self.s2m_ndr))
        wiring.connect(m, c.responder.s2m_drs, wiring.flipped(self.s2m_drs))
        wiring.connect(m, c.memory.axi, wiring.flipped(self.axi))
        wiring.connect(m, c.identity.lines, c.responder.memory_data)
        self._register_bus(m, c)
        self._memory_clients(m, c)
        writes_pending = self._writes_pending(m, c)
        self._responses(m, c)
        self._scan_tasks(m, c, writes_pending)
        self._dispatch(m, c, self._decode(m, c))
        return m

    def _register_bus(self, m, c):
        """The register bus: the csr port first, the window when the port leaves it free."""
        control, window = c.control, c.window
        external = self.csr.r_stb | self.csr.w_stb
        m.d.comb += [
            control.bus.addr.eq(Mux(external, self.csr.addr, window.bus.addr)),
            control.bus.r_stb.eq(self.csr.r_stb | window.bus.r_stb),
            control.bus.w_stb.eq(self.csr.w_stb | window.bus.w_stb),
            control.bus.w_data.eq(Mux(external, self.csr.w_data, window.bus.w_data)),
            self.csr.r_data.eq(control.bus.r_data),
            self.csr_refused.eq(control.locked_write),
            window.bus.r_data.eq(control.bus.r_data),
            window.bus_free.eq(~external),
        ]

    def _memory_clients(self, m, c):
        """Device memory's clients: the slot pool (ID ``_POOL_ID``), whose reads go first,
        and the identity path (``_HOST_ID``). The pool's write-backs go to the port on the
        clock they leave the pool (the port holds as many as the pool may make); the host's
        writes and a clear's zero writes are one-line writes."""
        memory, pool, identity = c.memory, c.pool, c.identity
        command = memory.read_command
        m.d.comb += [
            command.valid.eq(pool.fill_read.valid | identity.read_command.valid),
            command.payload.eq(identity.read_command.payload),
            pool.fill_read.ready.eq(command.ready),
            identity.read_command.ready.eq(command.ready & ~pool.fill_read.valid),
            identity.read_data.valid.eq(memory.read_data.valid),
            identity.read_data.payload.eq(memory.read_data.payload),
            pool.fill_data.data.eq(memory.read_data.payload.data),
        ]
        with m.If(pool.fill_read.valid):
            m.d.comb += [command.payload.id.eq(_POOL_ID),
                         command.payload.address.eq(pool.fill_read.payload.address),
                         command.payload.beats.eq(pool.fill_read.payload.beats)]
        # The pool's lines: the port's ``read_data`` is the R channel registered, and so are
        # the copies of its valid and error the pool's slices take, made here from R on the
        # same edge, one per slice: each is placed beside its slice, not one register
        # steering all of them across the device (pipeline rule 2).
        axi = self.axi
        m.d.comb += [
            pool.fill_data.valid.eq(Cat(register_copies(
                m, axi.rvalid & (axi.rid == _POOL_ID), pool.slices, "pool_line_valid",
                reset=True))),
            pool.fill_data.error.eq(Cat(register_copies(
                m, axi.rresp != RESP_OKAY, pool.slices, "pool_line_error")))]
        # Each W bank group takes a write-back by the valid of the slice that makes its first
        # lines.
        m.d.comb += [memory.write_burst.valid.eq(pool.write_back.valid),
                     *(copy.eq(pool.write_back_copies[pool.slice_of(bits.start)])
                       for copy, bits in zip(memory.write_burst_copies, memory.bank_groups)),
                     memory.write_burst.payload.id.eq(_POOL_ID),
                     memory.write_burst.payload.address.eq(pool.write_back.payload.address),
                     memory.write_burst.payload.lines.eq(pool.write_back.payload.lines),
                     pool.write_backs_held.eq(memory.bursts_held)]
        # The port counts up to ``AxiMemoryPort.TAKE_LAG`` bursts beyond the pool's
        # ``WRITE_BACKS``; the count must still fit the pool's input, not wrap in it.
        assert len(memory.bursts_held) == len(pool.write_backs_held)
        wiring.connect(m, identity.write_line, memory.write_line)
        wiring.connect(m, c.tasks.zero_write, identity.zero_write)
        m.d.comb += identity.zero_phase.eq(c.tasks.zero_phase)

    def _writes_pending(self, m, c):
        """Writes not yet acknowledged: the pool's (write-backs, zero writes), and the host's
        (from dispatch on: queued ones too). A fill or result read waits for both: it must not
        overtake a write-back, nor a host's raw write of accumulator memory (AXI orders
        neither a read after a write nor writes of two IDs), and a clear's zero writes must
        not either. Each count's ``!= 0`` is a register, as dispatch and the pool steer by it:
        one for the tasks, and one per slice of the pool. Returns the tasks' copy."""
        memory, pool, identity = c.memory, c.pool, c.identity
        write, response = memory.write_line, memory.write_response
        pool_taken = (memory.write_burst.valid
                      + (write.valid & write.ready & (write.payload.id == _POOL_ID)))
        host_taken = identity.write.valid & identity.write.ready
        writing = {}
        for taken, number in ((pool_taken, _POOL_ID), (host_taken, _HOST_ID)):
            count = Signal(range(1 << 16), name=f"writes_of_id{number}")
            done = response.valid & (response.payload.id == number)
            following = (count + taken - done)[:len(count)]
            # Whether the count was 0 or 1: a response answers a write taken on an earlier
            # clock, so the count stays above 0 unless nothing is taken and it equals
            # ``done``. The copies' inputs are then a gate or two behind the takes, with no
            # adder or compare of the count.
            was = {value: Signal(name=f"writes_of_id{number}_were_{value}", init=value == 0)
                   for value in (0, 1)}
            m.d.sync += [count.eq(following),
                         *(flag.eq(following == value) for value, flag in was.items())]
            pending = (taken != 0) | ~Mux(done, was[1], was[0])
            writing[number] = register_copies(m, pending, 1 + pool.slices,
                                              f"writing_id{number}", reset=True)
        m.d.comb += [
            pool.writes_pending.eq(Cat(pool_copy | host_copy for pool_copy, host_copy
                                       in zip(writing[_POOL_ID][1:], writing[_HOST_ID][1:]))),
            pool.host_writes_pending.eq(Cat(writing[_HOST_ID][1:])),
            c.responder.memory_written.eq(response.valid & (response.payload.id == _HOST_ID)),
        ]
        return writing[_POOL_ID][0] | writing[_HOST_ID][0]

    def _responses(self, m, c):
        """The responder's sources and DevLoad, and the events counted from them."""
        responder, pool, window, events = c.responder, c.pool, c.window, c.control.events
        returned, response = c.memory.read_data, c.memory.write_response
        m.d.comb += [
            c.devload.taken.eq(sum(channel.valid & channel.ready
                                   for channel in (self.m2s_req, self.m2s_rwd))),
            c.devload.answered.eq(sum(channel.valid & channel.ready
                                      for channel in (self.s2m_ndr, self.s2m_drs))),
            c.devload.ignored.eq(c.dispatch.ignored),
            responder.dev_load.eq(c.devload.dev_load),
            responder.pool_result.valid.eq(pool.result.valid),
            responder.pool_result.payload.eq(pool.result.payload),
            pool.result.ready.eq(responder.pool_result.ready),
            responder.window_result.valid.eq(window.result.valid),
            responder.window_result.payload.eq(window.result.payload),
            window.result.ready.eq(responder.window_result.ready),
            events.reads.eq(responder.sent_read),
            events.writes.eq(responder.sent_write),
            events.mem_error.eq((returned.valid & returned.payload.error)
                                | (response.valid & response.payload.error)
                                | pool.events.mem_error),
            events.invalid_code.eq(pool.events.invalid),
            events.invalid_lines.eq(pool.events.invalid),
            *(events[name].eq(pool.events[name])
              for name in ("accepted", "rejected", "capacity", "partial", "completed", "hits",
                           "fills", "evictions", "write_backs", "dropped")),
            *(events[name].eq(c.dispatch.events[name]) for name in DISPATCH_EVENTS),
        ]

    def _scan_tasks(self, m, c, writes_pending):
        """The scan tasks' ports (:class:`hdl.scan_tasks.ScanTasks`). The pool is idle by a
        register (its ``idle`` is a wide AND of its stages): the last clock's, unless an op or
        a host write went in on it, which makes the pool, or memory, busy on this clock."""
        tasks, control, pool = c.tasks, c.control, c.pool
        c.pool_idle = Signal()
        m.d.sync += c.pool_idle.eq(pool.idle & ~(pool.op.valid & pool.op.ready)
                                   & ~(c.identity.write.valid & c.identity.write.ready))
        m.d.comb += [
            *(getattr(tasks, name).eq(getattr(control, name))
              for name in ("flush_start", "clear_start", "clear_region", "table_ready",
                           "regions")),
            *(getattr(control, name).eq(getattr(tasks, name))
              for name in ("flush_busy", "clear_busy", "flush_done", "clear_done")),
            tasks.raw_start.eq(c.dispatch.raw_start), tasks.raw_task.eq(c.dispatch.raw_task),
            tasks.pool_ready.eq(pool.op.ready), tasks.pool_idle.eq(c.pool_idle),
            tasks.pool_accepted.eq(pool.events.accepted), tasks.pool_fills.eq(pool.events.fills),
            tasks.writes_pending.eq(writes_pending),
        ]

    def _dispatch(self, m, c, decoded_head):
        """Dispatch's ports (:class:`hdl.dispatch.Dispatch`), and the head request's payload
        to every destination, whatever the route (its line ``DISPATCH_LINE_LAG`` clocks
        late); the pool's comes from a task's scan while one runs."""
        head, head_valid, pop = decoded_head
        dispatch, identity, scan = c.dispatch, c.identity, c.tasks.scan
        request, decoded = head.request, head.decoded
        wiring.connect(m, dispatch.completion, c.responder.completion)
        m.d.comb += [
            dispatch.route.eq(head.route), dispatch.head_valid.eq(head_valid),
            dispatch.operation.eq(request.operation), dispatch.tag.eq(request.tag),
            dispatch.ld_id.eq(request.ld_id), dispatch.blocked.eq(c.tasks.blocked),
            dispatch.window_ready.eq(c.window.request.ready),
            dispatch.pool_ready.eq(c.pool.op.ready),
            dispatch.read_room.eq(identity.read_room),
            dispatch.write_room.eq(identity.write.ready),
            dispatch.any_dirty.eq(c.tasks.any_dirty),
            dispatch.any_resident.eq(c.tasks.any_resident),
            dispatch.pool_idle.eq(c.pool_idle), pop.eq(dispatch.pop),
            c.window.request.valid.eq(dispatch.window_valid),
            c.pool.op.valid.eq(scan.valid | dispatch.pool_valid),
            # A clear's range end, held by the task from its start until the pool is idle.
            c.pool.clear_high.eq(scan.high),
            identity.read.valid.eq(dispatch.read_valid),
            identity.write.valid.eq(dispatch.write_valid),
        ]
        params = self._params
        window, op = c.window.request.payload, c.pool.op.payload
        is_read = request.operation == Operation.READ
        index_lsb = params.accumulator_line_lsb
        m.d.comb += [
            window.read.eq(is_read),
            window.word.eq(request.address[2:params.window_bytes.bit_length() - 1]),
            window.data.eq(request.data), window.byte_enable.eq(request.byte_enable),
            op.kind.eq(Mux(scan.valid, scan.kind,
                           Mux(is_read, SlotOp.READ, SlotOp.CONTRIBUTE))),
            op.index.eq(Mux(scan.valid, scan.index, decoded.state_address[index_lsb:])),
            op.tag.eq(Mux(scan.valid, scan.low, decoded.state_address)),
            op.data.eq(request.data),
            op.full_line.eq(request.full_line), op.mode.eq(decoded.mode),
            op.threshold.eq(decoded.threshold), op.expected.eq(decoded.expected),
            op.user.eq(request.tag),          # for a reader of waveforms
            identity.read.payload.id.eq(_HOST_ID),
            identity.read.payload.address.eq(request.address),
            identity.read.payload.beats.eq(1),
            identity.write.payload.address.eq(request.address),
            identity.write.payload.line.eq(request.data),
            identity.write.payload.strobe.eq(request.byte_enable),
        ]

    def _decode(self, m, c):
        """Requests from ``ingress`` through the address decoder, into a queue of decoded
        requests; returns its head (``request``, ``decoded``, and its ``route``, chosen as it
        enters the queue so that dispatch starts from registers), whether there is one, and
        the signal that pops it. A request's line and byte enables wait in a queue of their
        own, read without a clock, so that a pop moves only its pointer (rule 1: a head
        register of them would be enabled by dispatch's decision), and the head's line comes
        ``DISPATCH_LINE_LAG`` clocks after the rest of it. The decoder is a pipeline
        of ``LATENCY`` steps; the request travels beside it in registers. A request enters
        with a credit (:class:`hdl.credit.CreditSender`: one per entry of the queue, back
        from a register a clock after dispatch pops one), so the ingress queues are steered
        by a register rather than by the queue's level, and while the region table is
        applied (``table_ready``, through a register: it falls clocks before the table
        changes, more than a request needs to leave the decoder). Each whole-line contribution
        to an aggregating region is hinted to the pool on the clock it enters the queue, from
        its last step (:meth:`_fill_hint`)."""
        ingress, decoder, control = c.ingress, c.decoder, c.control
        latency = AddressDecoder.LATENCY
        full = request_layout(self._params)
        narrow = request_fields_layout(self._params)
        line_layout = request_line_layout(self._params)
        entry = data.StructLayout({"request": narrow, "decoded": decoded_layout(self._params),
                                   "route": ROUTES})
        # Enough entries for a request on every clock: the credit loop through the decoder's
        # steps (forward only: the credit comes back from a register beside dispatch) and
        # the buffered queue, whose head register makes an entry readable two clocks after
        # its write.
        m.submodules.decoded = queue = fifo.SyncFIFOBuffered(
            width=entry.size, depth=credit_loop(latency, back=0, queue=2))
        write_lag = self.DECODED_LINE_WRITE_LAG
        assert write_lag <= self.DISPATCH_LINE_LAG
        m.submodules.decoded_lines = line_queue = EagerFIFO(
            width=line_layout.size, depth=queue.depth, lag=(0, self.DISPATCH_LINE_LAG),
            write_lag=(0, write_lag))
        request = ingress.request
        m.submodules.decode_credits = credits = CreditSender(request.payload.shape(),
                                                             credits=queue.depth)
        table_ready = Signal()
        m.d.sync += table_ready.eq(control.table_ready)
        m.d.comb += [credits.sink.valid.eq(request.valid & table_ready),
                     credits.sink.payload.eq(request.payload),
                     request.ready.eq(credits.sink.ready & table_ready),
                     decoder.address.eq(request.payload.address),
                     decoder.enable.eq(control.enable), decoder.regions.eq(control.regions)]
        valid, payload = credits.source.valid, credits.source.payload
        # The line joins its request at step ``Ingress.LINE_LAG``: it leaves the ingress queue
        # that many clocks after the request.
        assert latency > Ingress.LINE_LAG
        line = ingress.line
        for step in range(latency):
            if step == latency - 1:
                self._fill_hint(m, c, valid, payload)
            next_valid = Signal(name=f"decoding_valid_{step}")
            next_payload = Signal.like(payload, name=f"decoding_{step}", reset_less=True)
            m.d.sync += [next_valid.eq(valid), next_payload.eq(payload)]
            valid, payload = next_valid, next_payload
            if step >= Ingress.LINE_LAG:
                next_line = Signal.like(line, name=f"decoding_line_{step}", reset_less=True)
                m.d.sync += next_line.eq(line)
                line = next_line
        pop = Signal()
        m.d.sync += credits.source.credit.eq(pop)
        m.d.comb += [queue.w_en.eq(valid),
                     queue.w_data.eq(Cat(*(payload[name] for name in narrow.members),
                                         decoder.decoded,
                                         route_of(payload, decoder.decoded))),
                     queue.r_en.eq(pop),
                     line_queue.w_en.eq(valid),
                     line_queue.w_data.eq(delayed(m, line, write_lag, "decoded_line_late")),
                     line_queue.r_en.eq(pop)]
        # The head: the narrow queue's register, and the line queue's entry of the same
        # request ``DISPATCH_LINE_LAG`` clocks later (the two take and lose entries together,
        # and the line queue's are readable a clock earlier).
        narrow_head = entry(queue.r_data)
        head = Signal(data.StructLayout({"request": full, "decoded": entry["decoded"].shape,
                                         "route": ROUTES}))
        line_head = Signal(line_layout)
        m.d.comb += [*(head.request[name].eq(narrow_head.request[name])
                       for name in narrow.members),
                     line_head.eq(line_queue.r_data),
                     *(head.request[name].eq(line_head[name]) for name in line_layout.members),
                     head.decoded.eq(narrow_head.decoded), head.route.eq(narrow_head.route)]
        return head, queue.r_rdy, pop

    def _fill_hint(self, m, c, valid, request):
        """The pool's hint (:mod:`hdl.prefetch`), from a register: a whole-line write to an
        aggregating region (``request``, in the decoder's last step, whose mode and state
        address are ``c.decoder.ahead``) enters the decoded queue on the next clock, clocks
        before dispatch sends it to the pool. (A hint is a guess: a poisoned or out-of-range
        write is hinted too, and goes elsewhere.) A prefetch may start while no scan task runs
        (``hold_prefetch``: a clear's zero writes change accumulator memory)."""
        pool, ahead = c.pool, c.decoder.ahead
        m.submodules.hints = hints = HintSource(self._params)
        m.d.comb += [hints.line.valid.eq(valid & aggregates(ahead.mode)
                                         & (request.operation == Operation.WRITE)
                                         & request.full_line),
                     hints.line.payload.eq(ahead.state_address)]
        wiring.connect(m, hints.hint, pool.hint)
        m.d.comb += pool.hold_prefetch.eq(c.tasks.blocked)
