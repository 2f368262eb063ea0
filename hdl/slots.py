"""The slot pool: on-chip accumulators, one read-modify-write per clock.

Every aggregating line that receives contributions lives, while it is being aggregated, in a
*slot*: one word of an on-chip memory holding the line's state (lanes and ``n``), the address
of its accumulator in device memory (the slot's *tag*), whether memory is behind the slot
(*dirty*), and the mode and threshold its result line is made with. The controller picks the
slot of a line (its index) and the pool compares the tag: a contribution to a resident line
never touches device memory.

Pipeline (one op per clock, in order; ``docs/controller.md``, "Slot pool")::

    op --T0--> read slot --T1--> hit? --P2--> accumulate, write slot --> result unit
                                  | miss                                  (AggregationDatapath,
                                  v                                        contribute = 0)
                         drain, evict, fill, install                          |
                                                            result stream <---+---> write_back

- **T1** holds an op with the slot word read for it on the clock before (*fresh*). An op that
  waits in T1 reads its slot again before it moves on, so it never moves with a stale word.
- **P2** adds a contribution in one clock. The word it starts from is the one T1 read, unless
  one of the two ops before it wrote the same slot on the two clock edges that read could not
  see (the memory's read port is not transparent): then it takes that op's written word, kept
  in the forwarding registers ``W1`` and ``W2``. This is how contributions to one line are
  accepted on consecutive clocks and each counted once.
- A miss waits in T1. The line's read starts at once (:class:`FillReader`: its ``n`` line,
  and its ``W`` bit-plane lines only if ``n`` is not 0), unless a write may be to the line's
  own accumulator (see *Fills and writes* below): then it starts once every write is
  acknowledged. Meanwhile the pool drains, T1 reads its slot again and the occupant is
  written back if it is dirty (an eviction). When the state is in, the op moves to P2 with
  the filled word, which P2 writes to the slot whatever the op does. A result read of a line
  that is not resident takes no slot: its read is of the line's result line (one line), and
  its answer leaves after the ops ahead of it.
- When a contribution makes ``n`` reach the region's ``EXPECTED``, the line is *complete*: its
  state and result line are written back at once and it stays resident, clean.
- Scan ops (``FLUSH``, ``EVICT``, ``CLEAR``) name a slot rather than a line; the controller
  sends them with nothing else in flight. After reset the pool scans every slot itself
  (``DROP``) before it takes an op: a reset loses the state of dirty slots, and
  ``events.dropped`` counts each.

*Fills and writes.* AXI orders neither a read after a write nor writes of two IDs, so a fill
(or result read) of line ``X`` must not overtake a write of ``X``'s accumulator. A write-back
of ``X`` can be outstanding while ``X`` is not resident only if ``X`` left its slot (an
eviction, a clear, a drop) after it was made. ``departed`` records that some line left its
slot, and is cleared when every write is done; a miss waits for every write only if
``departed`` was set before its own eviction (which writes another line), or while a host
write is outstanding (it may be a raw write of accumulator memory). A completed line's
write-back therefore does not hold up the fill of the next line. Every write-back goes out
with one AXI ID, so memory applies a line's write-backs in the order they were made.

Each result leaves in op order. Write-backs leave in the order they are made, each the
accumulator image of one line: its result line, then its state's memory image
(:func:`hdl.datapath.planes_of_state`).

Icarus Verilog: a comb ``Switch`` becomes an ``always @*`` block, which Icarus first runs only
when a signal it reads changes, so its outputs read X until then, and a register that takes one
(an AXI valid, say) holds X. The Switches here and in the controller that drive outputs sit
under ``If(~ResetSignal())``, which every simulation changes at its start; a comb signal that
would otherwise be driven by such a block alone (a constant, or a choice between two values)
is one ``Mux`` or ``Cat``, a continuous assignment.
"""

import dataclasses

from amaranth import Cat, Const, Module, Mux, ResetSignal, Signal, unsigned
from amaranth.lib import data, enum, fifo, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from spec.params import TERNARY_INVALID, ControllerParams, Mode, Reason, aggregates

from .datapath import AggregationDatapath, planes_of_state, state_layout, state_of_planes

__all__ = ["SlotOp", "slot_op_layout", "slot_entry_layout", "slot_result_layout",
           "write_back_layout", "slot_event_layout", "accumulate", "SlotPool"]


class SlotOp(enum.Enum, shape=3):
    """What an op asks of the pool."""
    CONTRIBUTE = 0   # add ``data`` to the line ``tag`` (result: accept status)
    READ = 1         # the line's result line (result: ``line``)
    FLUSH = 2        # slot ``index``: write it back if dirty; it stays resident, clean
    EVICT = 3        # slot ``index``: write it back if dirty, and empty it
    CLEAR = 4        # slot ``index``: empty it, without write-back, if ``low <= tag < high``
    DROP = 5         # slot ``index``: empty it (the pool's own scan after reset)


def slot_op_layout(params, user_width):
    """An op. ``tag`` is the byte address of the line's accumulator (for ``CLEAR``, the first
    accumulator byte of the range ``[tag, high)``); ``index`` the slot the controller chose."""
    p = params.datapath
    return data.StructLayout({
        "kind": SlotOp,
        "index": unsigned(params.slot_index_bits),
        "tag": unsigned(params.address_bits),
        "high": unsigned(params.address_bits + 1),
        "data": unsigned(p.line_bits),
        "full_line": 1,
        "mode": Mode,
        "threshold": unsigned(p.counter_width),
        "expected": unsigned(p.counter_width),
        "user": unsigned(user_width),
    })


def slot_entry_layout(params):
    """One slot: what the pool's memory holds per word."""
    p = params.datapath
    return data.StructLayout({
        "valid": 1,
        "dirty": 1,
        "tag": unsigned(params.address_bits),
        "mode": Mode,
        "threshold": unsigned(p.counter_width),
        "state": state_layout(p),
    })


def slot_result_layout(params, user_width):
    """The answer to a ``CONTRIBUTE`` or ``READ``: the accept status (``reason``, ``invalid``
    as the datapath gives them), the result line of a read, and ``error`` when device memory
    answered the fill or result read with an error (nothing changed; a read's line is 0)."""
    return data.StructLayout({
        "user": unsigned(user_width),
        "line": unsigned(params.datapath.line_bits),
        "accepted": 1,
        "reason": Reason,
        "invalid": 1,
        "error": 1,
    })


def write_back_layout(params):
    """A line's accumulator image for device memory, to write from ``address`` on: the result
    line, then the state's ``state_lines`` lines."""
    p = params.datapath
    return data.StructLayout({
        "address": unsigned(params.address_bits),
        "lines": unsigned((1 + p.state_lines) * p.line_bits),
    })


def fill_command_layout(params):
    """A read of ``beats`` consecutive lines of device memory from byte ``address``."""
    return data.StructLayout({"address": unsigned(params.address_bits),
                              "beats": unsigned(params.datapath.counter_width.bit_length())})


#: What the pool reports, one strobe each per clock at most.
SLOT_EVENTS = ("accepted", "rejected", "capacity", "partial", "invalid", "completed", "hits",
               "fills", "evictions", "write_backs", "mem_error", "dropped")


def slot_event_layout():
    return data.StructLayout({name: 1 for name in SLOT_EVENTS})


def accumulate(params, lanes, line, ternary):
    """The lanes after adding contribution ``line`` (combinational, one adder per lane pair):
    G-Binary adds line bit ``k`` to the ``W``-bit count of lane ``k``; G-Ternary (``ternary``)
    adds lane ``k``'s code (``01`` +1, ``11`` -1, ``00`` and the invalid ``10`` 0) to its
    ``2W``-bit sum, which sits where G-Binary lanes ``2k`` and ``2k + 1`` do."""
    width = params.counter_width
    pairs = data.ArrayLayout(unsigned(2 * width), params.gternary_lanes)(lanes)
    out = []
    for k in range(params.gternary_lanes):
        low, high = line[2 * k], line[2 * k + 1]
        binary = Cat((pairs[k][:width] + low)[:width], (pairs[k][width:] + high)[:width])
        signed_sum = (pairs[k] + Cat(low, (low & high).replicate(2 * width - 1)))[:2 * width]
        out.append(Mux(ternary, signed_sum, binary))
    return Cat(out)


def invalid_codes(params, line):
    """Whether ``line`` holds a G-Ternary lane with the invalid code ``10``."""
    return Cat(line[2 * k:2 * k + 2] == TERNARY_INVALID
               for k in range(params.gternary_lanes)).any()


def _side_layout(params, user_width):
    """What travels beside a state through the result unit."""
    return data.StructLayout({
        "result": 1,            # answers a CONTRIBUTE or READ
        "write_back": 1,
        "address": unsigned(params.address_bits),
        "user": unsigned(user_width),
        "accepted": 1,
        "reason": Reason,
        "invalid": 1,
    })


class _Fsm(enum.Enum, shape=3):
    """The miss handler's steps (``RUN``: no miss)."""
    RUN = 0
    DRAIN = 1
    REFRESH = 2
    DECIDE = 3
    WAIT_WRITES = 4
    INSTALL = 5
    READ_ANSWER = 6


class _Step(enum.Enum, shape=3):
    """The fill reader's steps."""
    IDLE = 0
    ISSUE_FIRST = 1
    FIRST = 2
    ISSUE_PLANES = 3
    PLANES = 4
    DONE = 5


class FillReader(wiring.Component):
    """Reads a line's accumulator from device memory for the pool: its result line (a result
    read of a line that is not resident), or its state (a fill): the ``n`` line, then the
    ``W`` bit-plane lines only if ``n`` is not 0 (a fresh or cleared line costs one line).

    One read at a time: ``start`` is ready only while the reader is idle, and the read's
    first command is offered on ``fill_read`` on the clock it starts. ``done`` rises on
    the clock the last line arrives (the answer is then read from the arriving line) and
    stays high, with ``line``, ``image`` and ``error`` held, until the owner strobes
    ``finish``; the reader is idle from the next clock.

    Parameters
    ----------
    params : ControllerParams

    Members
    -------
    start : In(stream.Signature({"tag": address_bits, "state": 1}))
        ``tag``: the accumulator's first byte; ``state``: read the state, not the result line.
    fill_read : Out(stream.Signature(fill_command_layout(params)))
    fill_data : In(stream.Signature({"data": line_bits, "error": 1}, always_ready=True))
        The lines of ``fill_read``'s reads, in order.
    done : Out(1)
    finish : In(1)
    line : Out(line_bits)
        The result line (0 after an error).
    image : Out(state_lines * line_bits)
        The state's memory image: the bit planes, then the ``n`` line (planes 0 when ``n`` is
        0 or memory failed).
    error : Out(1)
        Device memory answered a line of this read with an error.
    """

    def __init__(self, params):
        p = params.datapath
        self._params = params
        super().__init__({
            "start": In(stream.Signature(data.StructLayout({
                "tag": unsigned(params.address_bits), "state": 1}))),
            "fill_read": Out(stream.Signature(fill_command_layout(params))),
            "fill_data": In(stream.Signature(data.StructLayout({"data": p.line_bits,
                                                                  "error": 1}),
                                             always_ready=True)),
            "done": Out(1),
            "finish": In(1),
            "line": Out(p.line_bits),
            "image": Out(p.state_lines * p.line_bits),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params.datapath
        width = p.counter_width
        step = Signal(_Step)
        tag = Signal.like(self.start.payload.tag)
        state = Signal()
        beats = Signal(range(width + 1))
        error = Signal()
        planes = Signal(width * p.line_bits)
        first = Signal(p.line_bits)             # the result line, or the n line
        beat = self.fill_data.payload
        arriving = self.fill_data.valid
        done = step == _Step.DONE
        idle = step == _Step.IDLE
        # The first read is issued on the clock the read starts, from ``start``'s payload.
        first_tag = Mux(idle, self.start.payload.tag, tag)
        first_state = Mux(idle, self.start.payload.state, state)
        # The last line of the read arrives on this clock.
        last_first = (step == _Step.FIRST) & arriving & (
            ~state | beat.error | (beat.data[:width] == 0))
        last_plane = (step == _Step.PLANES) & arriving & (beats == width - 1)
        arriving_error = error | beat.error
        m.d.comb += [
            self.start.ready.eq(idle),
            self.done.eq(done | last_first | last_plane),
            self.error.eq(Mux(done, error, arriving_error)),
            self.line.eq(Mux(self.error, 0, Mux(done, first, beat.data))),
            self.image.eq(Mux(done, Cat(planes, first),
                              Mux(last_plane, Cat(planes[p.line_bits:], beat.data, first),
                                  Cat(Const(0, width * p.line_bits), beat.data)))),
            self.fill_read.valid.eq((idle & self.start.valid) | (step == _Step.ISSUE_FIRST)
                                    | (step == _Step.ISSUE_PLANES)),
            self.fill_read.payload.address.eq(Mux(
                step == _Step.ISSUE_PLANES, tag + p.line_bytes,
                Mux(first_state, first_tag + p.state_lines * p.line_bytes, first_tag))),
            self.fill_read.payload.beats.eq(Mux(step == _Step.ISSUE_PLANES, width, 1)),
        ]
        with m.If(~ResetSignal()), m.Switch(step):  # see the module docstring, Icarus
            with m.Case(_Step.IDLE):
                with m.If(self.start.valid):
                    m.d.sync += [tag.eq(self.start.payload.tag),
                                 state.eq(self.start.payload.state), error.eq(0), beats.eq(0),
                                 planes.eq(0),
                                 step.eq(Mux(self.fill_read.ready, _Step.FIRST,
                                             _Step.ISSUE_FIRST))]
            with m.Case(_Step.ISSUE_FIRST, _Step.ISSUE_PLANES):
                with m.If(self.fill_read.ready):
                    m.d.sync += step.eq(Mux(step == _Step.ISSUE_FIRST, _Step.FIRST,
                                            _Step.PLANES))
            with m.Case(_Step.FIRST):
                with m.If(arriving):
                    m.d.sync += [first.eq(beat.data), error.eq(beat.error),
                                 step.eq(Mux(last_first, _Step.DONE, _Step.ISSUE_PLANES))]
            with m.Case(_Step.PLANES):
                with m.If(arriving):
                    m.d.sync += [planes.eq(Cat(planes[p.line_bits:], beat.data)),
                                 beats.eq(beats + 1), error.eq(arriving_error)]
                    with m.If(last_plane):
                        m.d.sync += step.eq(_Step.DONE)
        with m.If(self.done & self.finish):
            m.d.sync += step.eq(_Step.IDLE)
        return m


class SlotPool(wiring.Component):
    """On-chip accumulator slots with a one-clock read-modify-write (see the module docstring).

    Parameters
    ----------
    params : ControllerParams
        ``slots`` words; lines, ``W`` and the result unit's latency from ``params.datapath``.
    user_width : int
        Width of the opaque ``user`` field an op carries to its result.

    Members
    -------
    op : In(stream.Signature(slot_op_layout(params, user_width)))
        Low ``ready`` while the pool scans its slots after reset, handles a miss, or waits for
        room in its outputs.
    result : Out(stream.Signature(slot_result_layout(params, user_width)))
        One per ``CONTRIBUTE`` and ``READ``, in op order.
    write_back : Out(stream.Signature(write_back_layout(params)))
    fill_read : Out(stream.Signature(fill_command_layout(params)))
        Device-memory reads of a fill or of a result line; the lines come back on
        ``fill_data`` in order, and the pool takes each on the clock it is valid.
    fill_data : In(stream.Signature({"data": line_bits, "error": 1}, always_ready=True))
    writes_pending : In(1)
        Writes to device memory (the pool's and the host's) not yet acknowledged.
    host_writes_pending : In(1)
        Host writes among them. A fill or result read waits for every write while there is one
        (see *Fills and writes*).
    idle : Out(1)
        No op in the pool, none of its outputs waiting, no write-back pending: a scan or a
        register command may start, and device memory holds every write-back made so far.
    events : Out(slot_event_layout())
    """

    def __init__(self, params=ControllerParams(), *, user_width=1):
        if not isinstance(params, ControllerParams):
            raise TypeError(f"params must be a ControllerParams, not {params!r}")
        if not isinstance(user_width, int) or user_width < 1:
            raise ValueError(f"user_width must be a positive integer, not {user_width!r}")
        self._params = params
        self._user_width = user_width
        p = params.datapath
        super().__init__({
            "op": In(stream.Signature(slot_op_layout(params, user_width))),
            "result": Out(stream.Signature(slot_result_layout(params, user_width))),
            "write_back": Out(stream.Signature(write_back_layout(params))),
            "fill_read": Out(stream.Signature(fill_command_layout(params))),
            "fill_data": In(stream.Signature(data.StructLayout({"data": p.line_bits,
                                                                  "error": 1}),
                                             always_ready=True)),
            "writes_pending": In(1),
            "host_writes_pending": In(1),
            "idle": Out(1),
            "events": Out(slot_event_layout()),
        })

    #: Entries of each output queue beyond the ops that can be in P2 and the result unit.
    SPARE = 2

    #: Pipeline registers of the result unit (at most the datapath's ``latency``): it only
    #: reads states back (majority, gate), so it needs fewer than a datapath that adds, and
    #: each one is a clock on every result read.
    RESULT_LATENCY = 2

    def elaborate(self, platform):
        m = Module()
        params, u = self._params, self._user_width
        p = params.datapath
        op_layout = slot_op_layout(params, u)
        entry_layout = slot_entry_layout(params)
        side_layout = _side_layout(params, u)
        events = self.events

        m.submodules.slots = slots = Memory(shape=entry_layout, depth=params.slots, init=[])
        read = slots.read_port()
        write = slots.write_port()
        rdata = read.data

        unit_params = dataclasses.replace(p, latency=min(p.latency, self.RESULT_LATENCY))
        m.submodules.result_unit = unit = AggregationDatapath(unit_params,
                                                              user_width=side_layout.size)
        depth = 1 + unit_params.latency + self.SPARE
        result_layout = slot_result_layout(params, u)
        m.submodules.results = results = fifo.SyncFIFOBuffered(width=result_layout.size,
                                                               depth=depth)
        m.submodules.write_backs = write_backs = fifo.SyncFIFOBuffered(
            width=write_back_layout(params).size, depth=depth)
        m.d.comb += [self.result.payload.eq(results.r_data), self.result.valid.eq(results.r_rdy),
                     results.r_en.eq(self.result.ready),
                     self.write_back.payload.eq(write_backs.r_data),
                     self.write_back.valid.eq(write_backs.r_rdy),
                     write_backs.r_en.eq(self.write_back.ready)]

        # Ops in P2 and the result unit; an op moves into P2 only while both output queues have
        # room for everything in flight, so the result unit (no backpressure) never overflows.
        in_flight = Signal(range(depth + 1))
        room = Signal()

        # After reset: a DROP of every slot before any op (see the module docstring), and no
        # op until the last DROP has written its slot (``settling``): T1's hit check reads the
        # slot's word as memory holds it, so it must not run ahead of a write that changes
        # tags or valid bits. (A miss drains the pool for the same reason.)
        scanning = Signal(init=1)
        settling = Signal(init=1)
        scan_index = Signal(params.slot_index_bits)
        # T0: the op about to enter, from the scan or from ``op`` (one Mux each, so that they
        # are continuous assignments: see the module docstring, Icarus).
        t0 = Signal(op_layout)
        t0_valid = Signal()
        drop = Cat(Const(SlotOp.DROP.value, SlotOp.as_shape()), scan_index)
        m.d.comb += [t0_valid.eq(Mux(scanning, 1, self.op.valid & ~settling)),
                     t0.eq(Mux(scanning, drop, self.op.payload))]

        # The forwarding registers: what was written to the slots on the last two clock edges.
        w1, w2 = Signal(entry_layout), Signal(entry_layout)
        w1_index, w2_index = Signal(params.slot_index_bits), Signal(params.slot_index_bits)
        w1_valid, w2_valid = Signal(), Signal()
        m.d.sync += [w2.eq(w1), w2_index.eq(w1_index), w2_valid.eq(w1_valid),
                     w1.eq(write.data), w1_index.eq(write.addr), w1_valid.eq(write.en)]

        # T1. Its tag check sees the slot as it stands: the word read on the last clock edge,
        # or the one written to the slot on that same edge (``W1``, then): a fill's.
        state = Signal(_Fsm)
        t1 = Signal(op_layout)
        t1_valid = Signal()
        t1_fresh = Signal()          # rdata is t1's slot, read on the last clock edge
        t1_written = Signal()        # and W1 was written to it on that edge
        seen = entry_layout(Mux(t1_written, w1, rdata))
        hit = seen.valid & (seen.tag == t1.tag)
        contributes = aggregates(t1.mode) & t1.full_line
        needs_slot = ((t1.kind == SlotOp.CONTRIBUTE) & contributes) | (t1.kind == SlotOp.READ)
        miss = t1_valid & t1_fresh & needs_slot & ~hit
        running = state == _Fsm.RUN
        advance = t1_valid & t1_fresh & running & room & ~miss
        refresh = Signal()
        take = t0_valid & running & ~refresh & (~t1_valid | advance)
        m.d.comb += [
            refresh.eq((running & t1_valid & ~t1_fresh) | (state == _Fsm.REFRESH)),
            read.addr.eq(Mux(refresh, t1.index, t0.index)),
            self.op.ready.eq(take & ~settling),
        ]
        m.d.sync += [t1_fresh.eq(take | refresh),
                     t1_written.eq(write.en & (write.addr == read.addr))]
        with m.If(take):
            m.d.sync += [t1.eq(t0), t1_valid.eq(1)]
            with m.If(scanning):
                m.d.sync += [scan_index.eq(scan_index + 1),
                             scanning.eq(scan_index != params.slots - 1)]
        with m.Elif(advance):
            m.d.sync += t1_valid.eq(0)
        m.d.comb += events.hits.eq(advance & needs_slot)

        # P2.
        p2 = Signal(op_layout)
        p2_valid = Signal()
        p2_word = Signal(entry_layout)          # the slot as T1 read it (or as injected)
        p2_install = Signal()                   # p2_word is a fill: write it in any case
        fwd1, fwd2 = Signal(), Signal()
        m.d.sync += p2_valid.eq(advance)
        # Room for the advancing op, the one in P2 and those in the result unit.
        m.d.comb += room.eq((results.level + in_flight + p2_valid < depth)
                            & (write_backs.level + in_flight + p2_valid < depth))
        with m.If(advance):
            m.d.sync += [p2.eq(t1), p2_word.eq(rdata), p2_install.eq(0),
                         fwd1.eq(write.en & (write.addr == t1.index)),
                         fwd2.eq(w1_valid & (w1_index == t1.index))]

        word = Signal(entry_layout)
        m.d.comb += word.eq(Mux(fwd1, w1, Mux(fwd2, w2, p2_word)))
        departure = Signal()        # P2 takes a line out of its slot
        self._update(m, p2, p2_valid, p2_install, word, write, unit, side_layout, events,
                     departure)

        # The result unit's output goes to the queues.
        side = side_layout(unit.response.payload.user)
        response = unit.response
        result = Signal(result_layout)
        m.d.comb += [
            result.user.eq(side.user), result.line.eq(response.payload.line),
            result.accepted.eq(side.accepted), result.reason.eq(side.reason),
            result.invalid.eq(side.invalid),
            results.w_data.eq(result), results.w_en.eq(response.valid & side.result),
            write_backs.w_data.eq(Cat(side.address, response.payload.line,
                                      planes_of_state(p, response.payload.state))),
            write_backs.w_en.eq(response.valid & side.write_back),
            events.write_backs.eq(response.valid & side.write_back),
        ]
        m.d.sync += in_flight.eq(in_flight + unit.request.valid - response.valid)

        m.submodules.fill_reader = reader = FillReader(params)
        wiring.connect(m, reader.fill_read, wiring.flipped(self.fill_read))
        wiring.connect(m, wiring.flipped(self.fill_data), reader.fill_data)
        self._miss_handler(m, state, t1, t1_valid, miss, rdata, p2, p2_valid, p2_word,
                           p2_install, fwd1, fwd2, in_flight, room, results, write_backs,
                           result_layout, events, departure, reader)
        with m.If(~scanning & ~t1_valid & ~p2_valid):
            m.d.sync += settling.eq(0)
        m.d.comb += self.idle.eq(~settling & ~t1_valid & ~p2_valid & (in_flight == 0)
                                 & running & (write_backs.level == 0) & ~self.writes_pending)
        return m

    def _update(self, m, op, valid, install, word, write, unit, side_layout, events, departure):
        """P2: what ``op`` (valid while ``valid``) does to its slot, whose word is ``word``
        (a fill's, to be written whatever the op does, while ``install``); drives the slot's
        write port, the result unit's request and ``departure`` (a line leaves its slot)."""
        p = self._params.datapath
        n = word.state.n
        kind = op.kind
        contribute = kind == SlotOp.CONTRIBUTE
        bad_mode = ~aggregates(op.mode)
        partial = ~op.full_line
        full = n == p.capacity
        accepted = contribute & ~(bad_mode | partial | full)
        ternary = op.mode == Mode.GTERNARY
        complete = accepted & (n + 1 == op.expected)
        new = Signal.like(word)
        m.d.comb += new.eq(word)
        write_back = Signal()
        emit_result = contribute | (kind == SlotOp.READ)
        in_range = (word.tag >= op.tag) & (word.tag < op.high)
        with m.If(~ResetSignal()), m.Switch(kind):  # see the module docstring, Icarus
            with m.Case(SlotOp.CONTRIBUTE):
                with m.If(accepted):
                    m.d.comb += [
                        new.dirty.eq(~complete), new.mode.eq(op.mode),
                        new.threshold.eq(op.threshold), new.state.n.eq(n + 1),
                        new.state.lanes.eq(accumulate(p, word.state.lanes, op.data, ternary)),
                        write.en.eq(valid), write_back.eq(complete)]
            with m.Case(SlotOp.FLUSH):
                m.d.comb += [new.dirty.eq(0), write.en.eq(valid & word.valid & word.dirty),
                             write_back.eq(word.valid & word.dirty)]
            with m.Case(SlotOp.EVICT):
                m.d.comb += [new.valid.eq(0), write.en.eq(valid & word.valid),
                             write_back.eq(word.valid & word.dirty),
                             events.evictions.eq(valid & word.valid)]
            with m.Case(SlotOp.CLEAR):
                m.d.comb += [new.valid.eq(0), write.en.eq(valid & word.valid & in_range)]
            with m.Case(SlotOp.DROP):
                m.d.comb += [new.valid.eq(0), write.en.eq(valid & word.valid),
                             events.dropped.eq(valid & word.valid & word.dirty)]
        with m.If(install):
            m.d.comb += write.en.eq(valid)
        m.d.comb += [write.addr.eq(op.index), write.data.eq(new),
                     departure.eq(write.en & word.valid & ~new.valid)]

        reason = Mux(bad_mode, Reason.MODE, Mux(partial, Reason.PARTIAL,
                                                 Mux(full, Reason.CAPACITY, Reason.NONE)))
        m.d.comb += [
            events.accepted.eq(valid & accepted),
            events.rejected.eq(valid & contribute & ~accepted),
            events.capacity.eq(valid & contribute & ~bad_mode & ~partial & full),
            events.partial.eq(valid & contribute & ~bad_mode & partial),
            events.invalid.eq(valid & accepted & ternary & invalid_codes(p, op.data)),
            events.completed.eq(valid & complete),
        ]
        side = Signal(side_layout)
        # A scan writes back with the mode and threshold the slot keeps; an op with its own.
        scan = ~emit_result
        m.d.comb += [
            side.result.eq(emit_result), side.write_back.eq(write_back),
            side.address.eq(word.tag), side.user.eq(op.user),
            side.accepted.eq(~contribute | accepted),
            side.reason.eq(Mux(contribute, reason, Reason.NONE)),
            side.invalid.eq(accepted & ternary & invalid_codes(p, op.data)),
            unit.request.valid.eq(valid & (emit_result | write_back)),
            unit.request.payload.state.eq(new.state),
            unit.request.payload.mode.eq(Mux(scan, word.mode, op.mode)),
            unit.request.payload.threshold.eq(Mux(scan, word.threshold, op.threshold)),
            unit.request.payload.byte_enable.eq(-1),
            unit.request.payload.user.eq(side),
        ]

    def _miss_handler(self, m, state, t1, t1_valid, miss, rdata, p2, p2_valid, p2_word,
                      p2_install, fwd1, fwd2, in_flight, room, results, write_backs,
                      result_layout, events, departure, reader):
        """The steps of a miss (see the module docstring). A step that injects an op into P2
        does so while P2 is empty and ``room`` (the output queues have room for it and every
        op in the result unit) holds; an answer given here waits until the pool is drained."""
        params = self._params
        drained = ~p2_valid & (in_flight == 0)
        # The queue's level, not its r_rdy: a write-back is in the buffered FIFO a clock
        # before r_rdy shows it.
        writes_done = drained & (write_backs.level == 0) & ~self.writes_pending
        # Fills and writes (module docstring): a line left its slot since every write was last
        # done; and that, as it stood before this miss's own eviction.
        departed = Signal()
        wait_for_writes = Signal()
        with m.If(departure):
            m.d.sync += departed.eq(1)
        with m.Elif(writes_done):
            m.d.sync += departed.eq(0)
        may_read = drained & (writes_done | ~(wait_for_writes | self.host_writes_pending))
        started = Signal()          # the reader has this miss's read
        # An answer the pool gives itself leaves after every op ahead has left the result
        # unit, so that answers keep op order.
        answer_room = drained & (results.level < results.depth)
        is_read = t1.kind == SlotOp.READ
        m.d.comb += [reader.start.payload.tag.eq(t1.tag), reader.start.payload.state.eq(~is_read)]
        # The answer to T1's op when the pool gives it itself: the line of a result read, and
        # whether memory failed; a continuous assignment (a Verilog block that only sets the
        # constant fields would never run in Icarus Verilog: module docstring).
        answer = Signal(result_layout)
        m.d.comb += answer.eq(Cat(t1.user, reader.line, is_read,
                                  Const(Reason.NONE.value, Reason.as_shape()), Const(0, 1),
                                  reader.error))

        def answer_and_drop():
            """Answer T1's op with ``answer`` (there is room) and drop it."""
            m.d.comb += [results.w_data.eq(answer), results.w_en.eq(1), reader.finish.eq(1),
                         events.mem_error.eq(reader.error)]
            m.d.sync += [t1_valid.eq(0), state.eq(_Fsm.RUN)]

        with m.If(~ResetSignal()), m.Switch(state):  # see the module docstring, Icarus
            with m.Case(_Fsm.RUN):
                # The line's read starts at once unless a write may be to its line; the ops
                # ahead drain meanwhile, and a result read takes no slot.
                read_now = ~departed & ~departure & ~self.host_writes_pending
                with m.If(miss):
                    m.d.comb += reader.start.valid.eq(read_now)
                    m.d.sync += [started.eq(read_now),
                                 state.eq(Mux(read_now & is_read, _Fsm.READ_ANSWER,
                                              _Fsm.DRAIN))]
            with m.Case(_Fsm.DRAIN):
                # Only P2 writes slots; the ops in the result unit go on meanwhile. An
                # eviction will need room in the output queues.
                with m.If(~p2_valid & room):
                    m.d.sync += state.eq(_Fsm.REFRESH)      # T1 reads its slot again
            with m.Case(_Fsm.REFRESH):
                m.d.sync += state.eq(_Fsm.DECIDE)
            with m.Case(_Fsm.DECIDE):
                # Nothing is in P2, so departed is final until the eviction below.
                m.d.sync += wait_for_writes.eq(departed)
                # rdata is the occupant, as it stands.
                with m.If(~is_read & rdata.valid):
                    m.d.sync += [p2_valid.eq(1), p2.eq(t1), p2.kind.eq(SlotOp.EVICT),
                                 p2_word.eq(rdata), p2_install.eq(0), fwd1.eq(0), fwd2.eq(0)]
                m.d.sync += state.eq(Mux(started, _Fsm.INSTALL, _Fsm.WAIT_WRITES))
            with m.Case(_Fsm.WAIT_WRITES):
                with m.If(may_read):
                    m.d.comb += reader.start.valid.eq(1)
                    m.d.sync += state.eq(Mux(is_read, _Fsm.READ_ANSWER, _Fsm.INSTALL))
            with m.Case(_Fsm.READ_ANSWER):
                with m.If(reader.done & answer_room):
                    answer_and_drop()
            with m.Case(_Fsm.INSTALL):
                with m.If(reader.done & reader.error & answer_room):
                    # The state is unknown: the contribution is answered, not counted.
                    answer_and_drop()
                with m.Elif(reader.done & ~reader.error & ~p2_valid & room):
                    # The op moves on with the filled word, which P2 writes to the slot.
                    word = Signal(slot_entry_layout(params))
                    m.d.comb += [word.eq(0), word.valid.eq(1), word.tag.eq(t1.tag),
                                 word.mode.eq(t1.mode), word.threshold.eq(t1.threshold),
                                 word.state.eq(state_of_planes(params.datapath,
                                                               reader.image)),
                                 reader.finish.eq(1), events.fills.eq(1)]
                    m.d.sync += [p2_valid.eq(1), p2.eq(t1), p2_word.eq(word),
                                 p2_install.eq(1), fwd1.eq(0), fwd2.eq(0),
                                 t1_valid.eq(0), state.eq(_Fsm.RUN)]
