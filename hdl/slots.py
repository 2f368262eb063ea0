"""The slot pool: on-chip accumulators, one read-modify-write per clock.

Every aggregating line that receives contributions lives, while it is being aggregated, in a
*slot*: one word of an on-chip memory holding the line's state (lanes and ``n``), the address
of its accumulator in device memory (the slot's *tag*), whether memory is behind the slot
(*dirty*), and the mode and threshold its result line is made with. The controller picks the
slot of a line (its index) and the pool compares the tag: a contribution to a resident line
never touches device memory.

Pipeline (one op per clock, in order; ``docs/controller.md``, "Slot pool")::

    op -> intake -> T0 --read slot--> TA --tag check--> T1 --P2--> accumulate, write slot
                                                         | miss            |
                                                         v                 v register
                                         drain, evict, fill, install   result unit
                                                                       (AggregationDatapath,
                                            result stream <---+-------  line = 0)
                                                              +---> write_back

- The slots are block RAM whose data comes two clocks after its address, from the RAM's
  output register (:class:`hdl.bram.RegisteredMemory`: a block RAM's data straight from its
  array would use most of a clock period). The slots' valid bits and tags are kept again in a
  small memory read without a clock (``tags``), for the hit check: it is read as an op enters
  TA, into a register. P2's changes to it are written a clock late, from registers
  (``tag_late``), so that its write enables have no logic in front of them; the op entering
  TA on that clock takes the late write as a change of its slot's line.
- Ops enter through ``intake``, a skid buffer (:class:`hdl.pipeline.SkidBuffer`), so that
  ``op.ready`` is a register, and wait in **T0**, a register, so that the pool's logic
  starts from registers, not from its caller's. An op's line of data does not travel with
  it (pipeline rule 1): it is written on arrival to ``op_data``, a small memory written
  every clock, and P2 reads it there.
- **TA** holds an op whose slot is being read, and checks its tag in ``tags``. **T1** holds
  the op with the result of that check, a register kept exact by every write to the slot
  since (``hit_after_edge``): the decision to move on or to miss has no logic in front of it
  (pipeline rule 3). While ``t1_data_ok``, the slot's word is ``current``: the word read, or
  P2's word of the slot on one of the three clock edges the read could not see (``W1`` on
  the last, ``W2`` on the one before, ``W3`` on the one before that: P2's word is written to
  the slot a clock late, from ``W1``, so that P2's additions end at registers beside them).
  An op whose word is not in (after a miss, say) reads its slot again before it moves on
  (``reread``).
- **P2** adds a contribution in one clock. It starts from T1's ``current``, or from ``W1``
  if the op ahead was on the same slot (W1 took its word on the edge P2 took the op). This
  is how contributions to one line are accepted on consecutive clocks and each counted once.
- **Column groups** (pipeline rule 2). The lanes of each ``control_copy_bits`` line bits are
  a group. The selects of ``current``, of the word P2 takes (the fill's, in INSTALL) and of
  P2's word are registered in one copy per group, plus one for the word's other fields. So
  is what steers P2's lanes: whether the op may add, whether it is G-Ternary, and whether the
  word it starts from is full, each made from the same terms as P2's own decision, a clock
  early. The one-clock loop of a group (its select, its adders, ``W1``) has no net that
  spans the line.
- **Slices** (:class:`SlotPool`): the pool is built in slices of ``POOL_SLICE_BITS`` line
  bits (:class:`PoolSlice`), each with the lanes of its columns and a whole copy of the
  control described here, so that no decision reaches block RAM columns beyond its slice's.
- Room in the output queues (the pool's result queue, ``results_held``, and for write-backs
  the memory port's W buffer, ``write_backs_held``) is taken when an op leaves ``intake``
  (``room_take``), so no op ever waits in T1 for room: only a miss stops it.
- A miss waits in T1. The line's read starts at once (:class:`FillReader`: its ``n`` line,
  and its ``W`` bit-plane lines only if ``n`` is not 0), unless a write may be to the line's
  own accumulator (see *Fills and writes* below): then it starts once every write is
  acknowledged. Meanwhile P2 drains, T1's slot is read again and its occupant is written
  back if it is dirty (an eviction). When the state is in, the op moves to P2 with the
  filled word, which P2 writes to the slot whatever the op does; the op behind it moves into
  T1 on the next edge (an install empties T1, so that no stage's enable waits for the fill
  reader), and hits if it is the same line. A result read of a line that is not
  resident takes no slot: its read is of the line's result line (one line), and its answer
  leaves after the ops ahead of it.
- When a contribution makes ``n`` reach the region's ``EXPECTED``, the line is *complete*: its
  state and result line are written back at once and it stays resident, clean.
- Scan ops (``FLUSH``, ``EVICT``, ``CLEAR``) name a slot rather than a line. They may follow
  any ops, but no op may follow them until the pool is ``idle`` (the controller waits for it):
  an op right behind a scan of its slot would not see what the scan did to it. After reset
  the pool scans every slot itself (``DROP``) before it takes an op: a reset loses the state
  of dirty slots, and ``events.dropped`` counts each.

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
under ``If(live)``, where ``live`` is the inverse of a register that copies the reset a clock
late (:func:`hdl.pipeline.out_of_reset`), which every simulation changes at its start; a comb
signal that would otherwise be driven by such a block alone (a constant, or a choice between
two values) is one ``Mux`` or ``Cat``, a continuous assignment.
"""

import dataclasses

from amaranth import Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from spec.params import (
    POOL_SLICE_BITS,
    REGISTER_BITS,
    TERNARY_INVALID,
    ControllerParams,
    Mode,
    Reason,
    aggregates,
)

from .bram import PRIMITIVES, READ_LATENCY, RegisteredMemory, address_copies
from .datapath import (
    AggregationDatapath,
    decision_inputs,
    decision_inputs_layout,
    n_line,
    planes_of_state,
    state_layout,
    state_of_planes,
)
from .pipeline import (
    EagerFIFO,
    PipelineRegister,
    SkidBuffer,
    column_slices,
    out_of_reset,
    register_copies,
)

__all__ = ["SlotOp", "slot_op_layout", "slot_entry_layout", "slot_result_layout",
           "write_back_layout", "slice_write_back_layout", "fill_line_layout", "pool_fill_layout",
           "slot_event_layout", "accumulate", "FillReader", "PoolSlice", "SlotPool"]


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
    accumulator byte of the range ``[tag, high)``); ``index`` the slot the controller chose,
    the same for every op on a line. Two lines given the same slot must differ in ``tag`` at
    or above bit ``log2(accumulator_bytes_per_line * slots)``: the hit check compares no
    lower bit. The controller's do: it takes the index from the tag's bits just above the
    accumulator, which is aligned to its size."""
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


def slice_write_back_layout(params):
    """A write-back as a slice of the pool makes it (:class:`PoolSlice`; ``params`` with its
    ``line_bits``): the result line and the state's bit planes in the slice's columns
    (:func:`hdl.datapath.planes_of_state`), and the count (``n``), which the ``n`` line holds
    alone."""
    p = params.datapath
    return data.StructLayout({
        "address": unsigned(params.address_bits),
        "lines": unsigned((1 + p.counter_width) * p.line_bits),
        "n": unsigned(p.counter_width),
    })


def _slice_params(params, line_bits):
    """``params`` with a datapath of ``line_bits``: the widths of a slice of the pool."""
    return dataclasses.replace(params, datapath=dataclasses.replace(params.datapath,
                                                                   line_bits=line_bits))


def fill_command_layout(params):
    """A read of ``beats`` consecutive lines of device memory from byte ``address``."""
    return data.StructLayout({"address": unsigned(params.address_bits),
                              "beats": unsigned(params.datapath.counter_width.bit_length())})


def fill_line_layout(lanes):
    """A line of a fill as a slice of the pool takes it (:class:`FillReader`): the slice's
    ``lanes.line_bits`` columns of the line (``data``), the line's first ``W`` bits, which
    are the count in a state's ``n`` line (``n``), and whether memory answered with an error
    (both are 0 then)."""
    return data.StructLayout({"data": lanes.line_bits, "n": lanes.counter_width, "error": 1})


def pool_fill_layout(params, slices):
    """A line of a fill or result read as the pool takes it, on the clock it arrives: the
    line (``data``, 0 with an error), and whether it arrives (``valid``) and came with an
    error (``error``) once per slice, all alike, each copy a register of its own, so that
    every slice's reader is steered from beside it (pipeline rule 2)."""
    return data.StructLayout({"data": params.datapath.line_bits, "valid": slices,
                              "error": slices})


#: What the pool reports, one strobe each per clock at most.
SLOT_EVENTS = ("accepted", "rejected", "capacity", "partial", "invalid", "completed", "hits",
               "fills", "evictions", "write_backs", "mem_error", "dropped")


def slot_event_layout():
    return data.StructLayout({name: 1 for name in SLOT_EVENTS})


def accumulate(params, lanes, line, ternary):
    """The lanes after adding contribution ``line`` (combinational, one adder per lane pair):
    G-Binary adds line bit ``k`` to the ``W``-bit count of lane ``k``; G-Ternary (``ternary``)
    adds lane ``k``'s code (``01`` +1, ``11`` -1, ``00`` and the invalid ``10`` 0) to its
    ``2W``-bit sum, which sits where G-Binary lanes ``2k`` and ``2k + 1`` do. ``line`` may be
    any even number of a line's bits, and ``lanes`` their lanes."""
    width = params.counter_width
    count = len(line) // 2
    pairs = data.ArrayLayout(unsigned(2 * width), count)(lanes)
    out = []
    for k in range(count):
        low, high = line[2 * k], line[2 * k + 1]
        binary = Cat((pairs[k][:width] + low)[:width], (pairs[k][width:] + high)[:width])
        signed_sum = (pairs[k] + Cat(low, (low & high).replicate(2 * width - 1)))[:2 * width]
        out.append(Mux(ternary, signed_sum, binary))
    return Cat(out)


def _lane_groups(params, value, size=None):
    """``value`` cut into the column groups of pipeline rule 2, each ``size`` bits (by default
    the lanes of ``control_copy_bits`` line bits: a state's lanes are cut into groups)."""
    size = params.control_copy_bits * params.counter_width if size is None else size
    return [value[k * size:(k + 1) * size] for k in range(params.control_copies)]


def _by_group(m, params, layout, selects, if_one, if_zero, name):
    """A signal ``name`` of ``layout`` (:func:`slot_entry_layout`): ``if_one`` where the
    select that steers a bit is 1, ``if_zero`` elsewhere. ``selects`` are copies of one select
    (:func:`hdl.pipeline.register_copies`): copy ``k`` steers column group ``k`` of the
    state's lanes, the last copy every other field. One ``Cat`` of ``Mux`` es, a continuous
    assignment (module docstring, Icarus), into a signal: Amaranth's simulator would repeat
    the whole expression for each slice that reads it."""
    one, zero = Value.cast(if_one), Value.cast(if_zero)
    start = layout["state"].offset + state_layout(params)["lanes"].offset
    end = start + params.state_lanes_bits
    rest = selects[-1]
    out = Signal(layout, name=name)
    m.d.comb += out.eq(Cat(Mux(rest, one[:start], zero[:start]),
                           *(Mux(select, a, b) for select, a, b in zip(
                               selects, _lane_groups(params, one[start:end]),
                               _lane_groups(params, zero[start:end]))),
                           Mux(rest, one[end:], zero[end:])))
    return out


def invalid_codes(params, line):
    """Whether ``line`` holds a G-Ternary lane with the invalid code ``10``."""
    return Cat(line[2 * k:2 * k + 2] == TERNARY_INVALID
               for k in range(params.gternary_lanes)).any()


def _is_scan(kind):
    """Whether an op of ``kind`` names a slot (a scan) rather than a line."""
    return (kind != SlotOp.CONTRIBUTE) & (kind != SlotOp.READ)


def _unit_settings(scan, op, mode, threshold):
    """The mode and threshold the result unit makes ``op``'s result line with: the op's own,
    or, for a scan (``scan``: it writes back what the slot keeps), ``mode`` and
    ``threshold``, the slot word's."""
    return Mux(scan, mode, op.mode), Mux(scan, threshold, op.threshold)


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
    DECIDE = 2
    WAIT_WRITES = 3
    INSTALL = 4
    READ_ANSWER = 5
    READ_AFTER_WRITES = 6


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
    first command is offered on ``fill_read`` from the clock it starts, at the address the
    owner gives (``first``, from registers: no adder in front of the port's command mux).
    ``held`` rises on the clock after the last line arrives, a register, and stays high,
    with ``line``, ``image`` and ``error`` held, until the owner strobes ``finish``; the
    reader is idle from the next clock. A result read's line may be taken a clock earlier:
    ``done`` is ``held``, or a result read's line arriving (``line`` and ``error`` are then
    read from it). A state read is done only when held. Whether it reads the planes is
    decided on the clock after its ``n`` line, from the register that took it: a clock more
    for a state of ``n`` = 0, and no line's data in front of the reader's step.

    The lines are captured by column group (pipeline rule 2): each group of ``first`` and of
    the planes has its own copies of the reader's step and plane count, so the capture
    enables and ``line``'s select have no net that spans the line. A register takes the bus
    on every clock of its step, whether a line arrives or not: the line that arrives is the
    last it takes there, and no enable waits for the line's valid.

    Parameters
    ----------
    params : ControllerParams
        The addresses and lines of device memory.
    lanes : DatapathParams
        The columns the reader keeps of each line (``line_bits`` of them: a slice's,
        :class:`PoolSlice`).

    Members
    -------
    start : In(stream.Signature({"tag": address_bits, "first": address_bits, "state": 1}))
        ``tag``: the accumulator's first byte; ``state``: read the state, not the result line;
        ``first``: the address of the read's first line (:meth:`first_line`).
    fill_read : Out(stream.Signature(fill_command_layout(params)))
    fill_data : In(stream.Signature({"data": lanes.line_bits, "n": W, "error": 1},
                                    always_ready=True))
        The lines of ``fill_read``'s reads, in order: the reader's columns of each
        (``data``), and the line's first ``W`` bits (``n``: the count, in a state's ``n``
        line); both 0 with ``error``.
    done : Out(1)
    held : Out(1)
    finish : In(1)
        Strobed only while ``done``.
    line : Out(lanes.line_bits)
        The result line of a result read (0 after an error).
    image : Out(state_lines * lanes.line_bits)
        While ``held``: the state's memory image in the reader's columns, the bit planes,
        then the ``n`` line as :func:`hdl.datapath.planes_of_state` makes it (``n`` alone;
        planes 0 when ``n`` is 0; unspecified after an error).
    error : Out(1)
        Device memory answered a line of this read with an error.
    """

    def __init__(self, params, lanes):
        self._params = params
        self._lanes = lanes
        super().__init__({
            "start": In(stream.Signature(data.StructLayout({
                "tag": unsigned(params.address_bits), "first": unsigned(params.address_bits),
                "state": 1}))),
            "fill_read": Out(stream.Signature(fill_command_layout(params))),
            "fill_data": In(stream.Signature(fill_line_layout(lanes), always_ready=True)),
            "done": Out(1),
            "held": Out(1),
            "finish": In(1),
            "line": Out(lanes.line_bits),
            "image": Out(lanes.state_lines * lanes.line_bits),
            "error": Out(1),
        })

    @staticmethod
    def first_line(params, tag, state):
        """The address of a read's first line: the ``n`` line of the state at ``tag`` while
        ``state``, else its result line."""
        p = params.datapath
        return Mux(state, tag + p.state_lines * p.line_bytes, tag)

    def elaborate(self, platform):
        m = Module()
        p, lanes = self._params.datapath, self._lanes
        width = p.counter_width
        step = Signal(_Step)
        next_step = Signal(_Step)
        # The planes' read address, a register (no adder in front of the port's command mux).
        planes_address = Signal.like(self.start.payload.tag)
        first_address = Signal.like(self.start.payload.first)
        state = Signal()
        beats = Signal(range(width + 1))   # planes arrived
        next_beats = Signal.like(beats)
        error = Signal()
        planes = Signal(width * lanes.line_bits, reset_less=True)
        first = Signal(lanes.line_bits, reset_less=True)    # the result line, or the n line
        fill_n = Signal(width, reset_less=True)             # the n line's count
        beat = self.fill_data.payload
        arriving = self.fill_data.valid
        held = step == _Step.DONE
        idle = step == _Step.IDLE
        # A state read goes on to the planes if its n line came without an error and says
        # n != 0: decided on the clock after that line, from the register that took it (0
        # after an error), so that no line's data reaches the step (and its copies).
        has_planes = fill_n.any()
        last_plane = (step == _Step.PLANES) & arriving & (beats == width - 1)
        m.d.comb += [
            self.start.ready.eq(idle),
            self.done.eq(held | ((step == _Step.FIRST) & arriving & ~state)),
            self.held.eq(held),
            self.error.eq(Mux(held, error, error | beat.error)),
            self.image.eq(Cat(planes, fill_n)),
            self.fill_read.valid.eq((step == _Step.ISSUE_FIRST)
                                    | ((step == _Step.ISSUE_PLANES) & has_planes)
                                    | (idle & self.start.valid)),
            self.fill_read.payload.address.eq(Mux(
                step == _Step.ISSUE_PLANES, planes_address,
                Mux(idle, self.start.payload.first, first_address))),
            self.fill_read.payload.beats.eq(Mux(step == _Step.ISSUE_PLANES, width, 1)),
        ]
        m.d.comb += [next_step.eq(step), next_beats.eq(beats)]
        m.d.sync += [step.eq(next_step), beats.eq(next_beats)]
        live = out_of_reset(m)
        with m.If(live), m.Switch(step):  # see the module docstring, Icarus
            with m.Case(_Step.IDLE):
                with m.If(self.start.valid):
                    m.d.sync += [planes_address.eq(self.start.payload.tag + p.line_bytes),
                                 first_address.eq(self.start.payload.first),
                                 state.eq(self.start.payload.state), error.eq(0)]
                    m.d.comb += next_beats.eq(0)
                    m.d.comb += next_step.eq(Mux(self.fill_read.ready, _Step.FIRST,
                                                 _Step.ISSUE_FIRST))
            with m.Case(_Step.ISSUE_FIRST):
                with m.If(self.fill_read.ready):
                    m.d.comb += next_step.eq(_Step.FIRST)
            with m.Case(_Step.FIRST):
                with m.If(arriving):
                    m.d.sync += error.eq(beat.error)
                    m.d.comb += next_step.eq(Mux(state, _Step.ISSUE_PLANES, _Step.DONE))
            with m.Case(_Step.ISSUE_PLANES):
                with m.If(~has_planes):
                    m.d.comb += next_step.eq(_Step.DONE)
                with m.Elif(self.fill_read.ready):
                    m.d.comb += next_step.eq(_Step.PLANES)
            with m.Case(_Step.PLANES):
                with m.If(arriving):
                    m.d.sync += error.eq(self.error)
                    m.d.comb += next_beats.eq(beats + 1)
                    with m.If(last_plane):
                        m.d.comb += next_step.eq(_Step.DONE)
        with m.If(self.finish):
            m.d.comb += next_step.eq(_Step.IDLE)

        # The lines, by column group, each with its own copies of the step and plane count:
        # ``first`` takes the line of FIRST, plane ``k`` the ``k``-th line of PLANES; the
        # planes are zero while the reader is idle (a read of ``n`` = 0 reads no plane).
        group_bits = lanes.control_copy_bits
        steps = register_copies(m, next_step, lanes.control_copies, "reader_step")
        counts = register_copies(m, next_beats, lanes.control_copies, "reader_beats")
        with m.If(steps[0] == _Step.FIRST):
            m.d.sync += fill_n.eq(beat.n)
        line = []
        for g, (copy, count) in enumerate(zip(steps, counts)):
            bits = slice(g * group_bits, (g + 1) * group_bits)
            with m.If(copy == _Step.FIRST):
                m.d.sync += first[bits].eq(beat.data[bits])
            plane = [planes[k * lanes.line_bits:(k + 1) * lanes.line_bits][bits]
                     for k in range(width)]
            with m.If(copy == _Step.IDLE):
                m.d.sync += [bits_of_plane.eq(0) for bits_of_plane in plane]
            with m.Elif(copy == _Step.PLANES):
                for k, bits_of_plane in enumerate(plane):
                    with m.If(count == k):
                        m.d.sync += bits_of_plane.eq(beat.data[bits])
            line.append(Mux(copy == _Step.DONE, first[bits], beat.data[bits]))
        m.d.comb += self.line.eq(Cat(line))
        return m


class PoolSlice(wiring.Component):
    """The slot pool in the lanes of some of the line's columns (``columns``): every slot's
    lanes there, and a whole copy of the pool's control (see the module docstring), with a
    one-clock read-modify-write. :class:`SlotPool` puts slices side by side; every slice takes
    the same ops, fill lines and handshakes, so all decide alike on every clock.

    Parameters
    ----------
    params : ControllerParams
        ``slots`` words; lines, ``W`` and the result unit's latency from ``params.datapath``.
    columns : range
        The line bits whose lanes the slice keeps (``lanes`` of them, whole column groups).
    user_width : int
        Width of the opaque ``user`` field an op carries to its result.
    primitives : None or "ecp5"
        How the slots' block RAM is made (:class:`hdl.bram.RegisteredMemory`).

    Members
    -------
    Those of :class:`SlotPool`, with the same timing, in the slice's columns: ``op``'s
    ``data``, ``result``'s ``line`` and ``invalid``, and ``events.invalid`` are the slice's
    own; ``write_back`` is a :func:`slice_write_back_layout`; ``fill_data`` a
    :func:`fill_line_layout`, with the line's count beside the slice's columns. But
    ``result`` has no ``ready``: it goes into the pool's result queue on every clock it is
    valid, and the slice makes one only while that queue has room for it, by
    ``results_held`` (the results the queue holds as of the last clock edge, ``QUEUE_DEPTH``
    at most), as it does a write-back by ``write_backs_held``.
    """

    def __init__(self, params, *, columns, user_width=1, primitives=None):
        assert READ_LATENCY == 2, "the pool's forwarding is built for a two-clock slot read"
        self._params = params
        self._slice = _slice_params(params, len(columns))
        self._user_width = user_width
        self._primitives = primitives
        lanes = self._slice.datapath
        super().__init__({
            "op": In(stream.Signature(slot_op_layout(self._slice, user_width))),
            "result": Out(stream.Signature(slot_result_layout(self._slice, user_width),
                                           always_ready=True)),
            "results_held": In(range(self.QUEUE_DEPTH + 1)),
            "write_back": Out(stream.Signature(slice_write_back_layout(self._slice),
                                               always_ready=True)),
            "write_backs_held": In(range(self.QUEUE_DEPTH + 1)),
            "fill_read": Out(stream.Signature(fill_command_layout(params))),
            "fill_data": In(stream.Signature(fill_line_layout(lanes), always_ready=True)),
            "writes_pending": In(1),
            "host_writes_pending": In(1),
            "idle": Out(1),
            "events": Out(slot_event_layout()),
        })

    #: Stages an op is in from its slot's read to the result unit: one per clock of the read
    #: (TA, T1), then P2. The forwarding (``W1``-``W3``, ``ra_index``, ``rd_index``) is built
    #: for a read of two clocks.
    STAGES = READ_LATENCY + 1

    #: Entries of each output queue beyond the ops that can be in the stages and the result
    #: unit: the two that ``room_take``, made from the queues' claims two clocks late, does not
    #: see, and two so that the intake does not stop while the results are taken every clock
    #: (an entry is read from the clock after its write). Write-backs leave more slowly, a
    #: line per clock: the memory port's bandwidth, not these entries, bounds them.
    SPARE = 4

    #: Entries of ``op_data``, where an op's line waits until P2 (a power of two, so that
    #: ``data_slot`` wraps): the intake's, T0's, TA's, T1's, and the one being written.
    DATA_SLOTS = 8

    #: Pipeline registers of the result unit (at most the datapath's ``latency``): it only
    #: reads states back (majority, gate), from a register of its own (``unit_input``), so
    #: one is enough, and each one is a clock on every result read.
    RESULT_LATENCY = 1

    #: Entries of each output queue: every op from TA on (the stages, the unit's input register
    #: and the unit) and ``SPARE``. The write-backs wait in the memory port
    #: (:class:`hdl.axi.AxiMemoryPort`), which holds this many of them.
    QUEUE_DEPTH = STAGES + 1 + RESULT_LATENCY + SPARE

    #: Clock edges from the one that takes a hit's op on ``op`` to the first that can take its
    #: result on ``result``, with nothing else in the pool: T0, the stages, the unit's input
    #: register, the unit, and the result queue (written on one edge, read from the next).
    HIT_LATENCY = 1 + STAGES + 1 + RESULT_LATENCY + 1

    def elaborate(self, platform):
        m = Module()
        # Widths are the slice's; addresses and the memory's lines are the whole line's
        # (``whole``: the tag's compare, the fill reader).
        params, whole, u = self._slice, self._params, self._user_width
        p = params.datapath
        op_layout = slot_op_layout(params, u)
        entry_layout = slot_entry_layout(params)
        side_layout = _side_layout(params, u)
        index_bits = params.slot_index_bits
        events = self.events
        live = out_of_reset(m)     # module docstring, Icarus

        # The slots: block RAM, read two clocks after its address (hdl.bram); their tags and
        # valid bits again in a memory read without a clock, for the hit check. A tag is
        # checked above the slot index only: a slot only holds lines whose index is its own,
        # and accumulators are aligned to their size, so the bits below are the same for
        # every line a slot can hold.
        m.submodules.slots = slots = RegisteredMemory(
            width=entry_layout.size, depth=params.slots, primitives=self._primitives,
            copies=address_copies(entry_layout.size))
        tag_lsb = whole.accumulator_bytes_per_line.bit_length() - 1 + index_bits
        tag_layout = data.StructLayout({
            "valid": 1, "tag": unsigned(max(0, params.address_bits - tag_lsb))})

        def same_line(tag, other):
            return tag[tag_lsb:] == other[tag_lsb:]

        # In LUT RAM, whose data comes soon after its address: Yosys would otherwise take it
        # with TA's register as a block RAM without an output register (slow, hdl.bram).
        m.submodules.tags = tags = Memory(shape=tag_layout, depth=params.slots, init=[],
                                          attrs={"ram_style": "distributed"})
        tag_read = tags.read_port(domain="comb")
        tag_write = tags.write_port()
        # The write the tag memory takes on the next clock edge: P2's retag of the last.
        tag_late = Signal(data.StructLayout({"en": 1, "addr": index_bits, "data": tag_layout}))
        write = Signal(data.StructLayout({"data": entry_layout}))   # P2's (``_update``)
        # The slot P2 writes is written a clock later, from W1 (below), so that P2's additions
        # end at registers beside them rather than at the block RAM's far columns.
        rdata = entry_layout(slots.read_data)

        unit_params = dataclasses.replace(p, latency=min(p.latency, self.RESULT_LATENCY))
        m.submodules.result_unit = unit = AggregationDatapath(
            unit_params, user_width=side_layout.size, replicated_inputs=True)
        # P2's new word goes to the unit's input register (beside W1) and to the unit's
        # request on the next clock, so that the unit's decisions (which read the new ``n``)
        # do not follow P2's additions within one clock: a clock on every result read from a
        # slot (a result read that misses is answered by the miss handler).
        m.submodules.unit_input = unit_input = PipelineRegister(unit.request.payload.shape())
        wiring.connect(m, unit_input.source, unit.request)
        # Beside that register, each control copy of the unit has registers of its own with
        # the fields its decisions are made of (``unit_decision``, made in P2).
        depth = self.QUEUE_DEPTH
        result_layout = slot_result_layout(params, u)
        # Results leave the result unit's registers into the pool's result queue
        # (:class:`SlotPool`), which holds ``results_held`` of them; write-backs, whole
        # states, into the memory port's W buffer, which device memory empties a line per
        # clock: a queue here would hold every one a second time.

        # An op's line of data does not travel with it (pipeline rule 1): it is written to
        # ``op_data`` on every clock at ``arrival_slot``, which moves on when an op enters, and
        # the op carries its ``data_slot`` instead, through the stages to P2, which reads the
        # line there (``op_line``) at T1's. The op enters through a skid buffer (``op.ready``
        # is a register) and waits in T0, a register: the pool's logic starts from registers,
        # not from the payload of its caller. ``op_data`` is cut into the column groups of
        # rule 2, each written and read at copies of the two slots of its own (registers
        # that take their next values).
        stage_fields = [name for name in op_layout.members if name != "data"]
        stage_layout = data.StructLayout({**{name: op_layout.members[name]
                                             for name in stage_fields},
                                          "data_slot": range(self.DATA_SLOTS)})
        data_groups = column_slices(p.line_bits)
        arrival_slot = Signal(range(self.DATA_SLOTS))
        next_arrival = Signal.like(arrival_slot)
        m.d.comb += next_arrival.eq(arrival_slot + (self.op.valid & self.op.ready))
        m.d.sync += arrival_slot.eq(next_arrival)
        arrival_copies = register_copies(m, next_arrival, len(data_groups), "arrival_slot",
                                         reset=True)
        t1_data_slot = Signal.like(arrival_slot)        # T1's data_slot after the edge
        t1_data_copies = register_copies(m, t1_data_slot, len(data_groups), "t1_data_slot")
        op_line = Signal(p.line_bits)
        for g, bits in enumerate(data_groups):
            m.submodules[f"op_data{g}"] = op_data = Memory(
                shape=len(op_line[bits]), depth=self.DATA_SLOTS, init=[])
            data_write = op_data.write_port()
            data_read = op_data.read_port(domain="comb")
            m.d.comb += [data_write.en.eq(1), data_write.addr.eq(arrival_copies[g]),
                         data_write.data.eq(self.op.payload.data[bits]),
                         data_read.addr.eq(t1_data_copies[g]), op_line[bits].eq(data_read.data)]
        m.submodules.intake = intake = SkidBuffer(stage_layout)
        m.d.comb += [intake.sink.valid.eq(self.op.valid), self.op.ready.eq(intake.sink.ready),
                     intake.sink.payload.eq(Cat(*(self.op.payload[name]
                                                  for name in stage_fields), arrival_slot))]

        # After reset: a DROP of every slot before any op (see the module docstring), and no
        # op until the last DROP has written its slot (``settling``).
        scanning = Signal(init=1)
        settling = Signal(init=1)
        scan_index = Signal(index_bits)
        # T0: the op about to be taken, from the scan or from the intake (one Mux each, so
        # that they are continuous assignments: see the module docstring, Icarus). A DROP
        # reads only its kind and index, so the scan chooses those alone: its other fields are
        # the intake's, whatever they are.
        t0 = Signal(stage_layout)
        t0_valid = Signal()
        t0_next = Signal(stage_layout)
        m.d.comb += [t0_next.eq(intake.source.payload),
                     t0_next.kind.eq(Mux(scanning, SlotOp.DROP, intake.source.payload.kind)),
                     t0_next.index.eq(Mux(scanning, scan_index, intake.source.payload.index))]

        # P2 (below): its op, and whether it writes a fill to its slot in any case. Its word
        # after the edge (``write.data``) is the slot's word after the edge whether the slot
        # is written or not (``_update``), so the forwarding below follows ``p2_valid`` and
        # the slot index, not P2's write enable, which comes after its additions.
        p2 = Signal(op_layout, reset_less=True)
        p2_valid = Signal()
        p2_install = Signal()
        retag = Signal()                    # P2's op gives its slot another line, or none

        # The reads. The slots are read every clock; ``current`` is the word of slot
        # ``rd_index`` as it stands: the data read, or P2's word of the slot on one of the
        # three clock edges whose writes the read could not see (W1: the last edge, W2: the
        # one before, W3: the one before that, whose write lands on the read's own edge).
        read_addr = Signal(index_bits)
        reread = Signal()                   # the read is T1's slot's again, not T0's
        ra_index = Signal(index_bits)       # the slot read on the last edge
        rd_index = Signal(index_bits)       # the slot read on the edge before: its data is in
        ra_valid = Signal()
        # P2's op on the edge of ra's read was on its slot, and the op before it (``w3_index``
        # while ``w3_valid``) was (compared with both slots the read may be of, in parallel
        # with the choice between them).
        collided = Signal()
        collided_w3 = Signal()
        w3_index = Signal(index_bits)
        w3_valid = Signal()
        # Whether P2's slot is T1's, TA's, T0's, and the one read on the last edge: registers
        # made a clock early, from T1's slot (P2's next) and the next values of the others
        # (P2's slot reaches every copy of the tag memory's write port: no compare starts
        # from it).
        p2_on_t1, p2_on_ta, p2_on_t0, p2_on_read = Signal(), Signal(), Signal(), Signal()
        w1 = Signal(entry_layout, reset_less=True)
        w2 = Signal(entry_layout, reset_less=True)
        w3 = Signal(entry_layout, reset_less=True)
        m.d.comb += slots.write_data.eq(w1)
        m.d.sync += [ra_index.eq(read_addr), ra_valid.eq(1), rd_index.eq(ra_index),
                     w3.eq(w2), w2.eq(w1), w1.eq(write.data),
                     w3_valid.eq(p2_valid), w3_index.eq(p2.index)]
        # The selects of a slot's word, one copy per column group (pipeline rule 2).
        groups = p.control_copies
        copies = groups + 1                 # and one for the word's other fields
        sel_w1 = register_copies(m, p2_valid & p2_on_read, copies, "sel_w1")
        sel_w2 = register_copies(m, collided, copies, "sel_w2")
        sel_w3 = register_copies(m, collided_w3, copies, "sel_w3")
        w3_or_read = _by_group(m, p, entry_layout, sel_w3, w3, rdata, "w3_or_read")
        current = _by_group(m, p, entry_layout, sel_w1, w1,
                            _by_group(m, p, entry_layout, sel_w2, w2, w3_or_read, "w2_or_read"),
                            "current")

        def installs(tag):
            """Whether P2's op installs line ``tag`` in its slot."""
            return p2_install & same_line(p2.tag, tag)

        def hit_after_edge(on_slot, tag, before):
            """Whether a slot holds line ``tag`` after this clock edge, given that it did
            (``before``) until it, and whether P2's op is on it (``on_slot``): P2's op decides
            if it gives its slot another line or none (``retag``), from P2's registers (P2's
            write enable comes after its additions). A contribution or a flush keeps its
            slot's line."""
            return Mux(retag & on_slot, installs(tag), before)

        def needs_slot(op):
            return (((op.kind == SlotOp.CONTRIBUTE) & aggregates(op.mode) & op.full_line)
                    | (op.kind == SlotOp.READ))

        # TA: the op whose slot was read on the last edge (if it was taken while the read port
        # was free: ``reread``); its hit check, from registers: its slot's tag as the tag
        # memory stood when the op entered TA (``ta_tag``), unless P2 has given the slot
        # another line or none since, on that edge included, or the memory's late write on
        # that edge was to the slot (``ta_retagged``; then ``ta_retag_hit`` says whether the
        # slot's line is the op's).
        ta = Signal(stage_layout)
        ta_valid = Signal()
        ta_tag = Signal(tag_layout)
        ta_retagged = Signal()
        ta_retag_hit = Signal()
        m.d.comb += tag_read.addr.eq(t0.index)
        ta_hit = Mux(ta_retagged, ta_retag_hit,
                     ta_tag.valid & (ta_tag.tag == ta.tag[tag_lsb:]))
        # T1: the op whose slot word is ``current`` while ``t1_data_ok``. Its hit check was
        # made in TA and is kept exact by every write since (registers: it steers the pipeline
        # without logic in front of it, pipeline rule 3).
        t1 = Signal(stage_layout)
        t1_valid = Signal()
        t1_hit = Signal()
        t1_data_ok = Signal()
        t1_needs_slot = Signal()
        t1_first_line = Signal(params.address_bits)     # where a miss's read starts
        # ``EXPECTED - 1`` and ``- 2`` of T1's op, in a bit more than a count (all ones, above
        # every count, for 0; and ``- 2`` for 1): P2 compares counts with them, no adder.
        t1_before_last = Signal(p.counter_width + 1)
        t1_two_before = Signal(p.counter_width + 1)
        state = Signal(_Fsm)
        next_state = Signal(_Fsm)           # the miss handler's state after this clock
        # ``state == RUN``, a register of its own: it steers the slot read's address.
        running = Signal(init=1)
        # No op is taken while the miss handler may inject its eviction into P2 (room): the
        # state is neither DRAIN nor DECIDE, a register of its own too.
        may_take = Signal(init=1)
        m.d.sync += may_take.eq((next_state != _Fsm.DRAIN) & (next_state != _Fsm.DECIDE))
        miss = t1_valid & running & t1_needs_slot & ~t1_hit
        advance = t1_valid & running & t1_data_ok & (t1_hit | ~t1_needs_slot)
        # From the miss handler.
        evict = Signal()
        install = Signal()
        dropped = Signal()
        # TA moves into an empty T1 or behind an op that advances, all registers; not on an
        # install or an answer, which empty T1 for a clock (they are made of the miss
        # handler's state, and ``ta_moves`` enables every stage register).
        ta_moves = ta_valid & (~t1_valid | advance)
        room_take = Signal()
        take = t0_valid & room_take & (~ta_valid | ta_moves) & may_take
        # T0 loads whenever it is free or taken.
        t0_loads = ~t0_valid | take
        # ``ra_valid & (ra_index == t1.index)``, a register made from the two's next values
        # (``ra_valid`` is low only on the first clock, and so is the register). The read
        # address is T1's or T0's slot, so the compares are made between the stage registers
        # themselves, and ``reread`` and ``ta_moves`` choose among them last: the choice of
        # the read address does not come back into it.
        t1_read_landing = Signal()
        t1_on_t0 = t1.index == t0.index
        # What the slot read's address is chosen by, with the values those registers take on
        # this clock edge: the registers take them, and so does a copy of them per group of
        # the slot RAM's block columns (pipeline rule 2), from which that group's address is
        # chosen beside its blocks. (T1 and T0 reset to 0, their slots with them.)
        choosers = {
            "running": (running, next_state == _Fsm.RUN),
            "t1_valid": (t1_valid, Mux(ta_moves, 1, t1_valid & ~(advance | install | dropped))),
            "t1_data_ok": (t1_data_ok, Mux(ta_moves, ra_valid & (ra_index == ta.index),
                                           t1_read_landing)),
            "t1_read_landing": (t1_read_landing, Mux(
                ta_moves, Mux(reread, t1.index == ta.index, t0.index == ta.index),
                reread | t1_on_t0)),
            "t1_slot": (t1.index, Mux(ta_moves, ta.index, t1.index)),
            "t0_slot": (t0.index, Mux(t0_loads, t0_next.index, t0.index)),
        }
        m.d.sync += [register.eq(value) for name, (register, value) in choosers.items()
                     if name not in ("t1_slot", "t0_slot")]     # T1 and T0 load below

        def read_choice(running, t1_valid, t1_data_ok, t1_read_landing, t1_slot, t0_slot):
            """Whether the slot read is T1's slot's again (``reread``), and its address."""
            reread = ~running | (t1_valid & ~t1_data_ok & ~t1_read_landing)
            return reread, Mux(reread, t1_slot, t0_slot)

        master = read_choice(*(register for register, _ in choosers.values()))
        m.d.comb += [reread.eq(master[0]), read_addr.eq(master[1])]
        group_copies = zip(*(register_copies(m, value, len(slots.write_en), f"read_{name}",
                                             reset=True, init=getattr(register, "init", 0))
                             for name, (register, value) in choosers.items()))
        m.d.comb += [slots.read_addr[k].eq(read_choice(*copy)[1])
                     for k, copy in enumerate(group_copies)]
        m.d.sync += [collided.eq(p2_valid & Mux(reread, p2_on_t1, p2_on_t0)),
                     collided_w3.eq(w3_valid & Mux(reread, w3_index == t1.index,
                                                   w3_index == t0.index))]
        m.d.sync += [p2_on_t1.eq(Mux(ta_moves, t1.index == ta.index, 1)),
                     p2_on_ta.eq(Mux(~ta_valid | ta_moves, t1_on_t0, t1.index == ta.index)),
                     p2_on_t0.eq(Mux(t0_loads, t1.index == t0_next.index, t1_on_t0)),
                     p2_on_read.eq(reread | t1_on_t0)]
        m.d.comb += intake.source.ready.eq(t0_loads & ~scanning & ~settling)
        with m.If(t0_loads):
            m.d.sync += [t0.eq(t0_next),
                         t0_valid.eq(scanning | (intake.source.valid & ~settling))]
        # Whether the tag memory's late write (on the next clock edge) is to T0's slot: a
        # register made from P2's slot and T0's next (as ``p2_on_t0``).
        late_on_t0 = Signal()
        m.d.sync += late_on_t0.eq(retag & (p2.index == choosers["t0_slot"][1]))
        late_hit = tag_late.data.valid & (tag_late.data.tag == t0.tag[tag_lsb:])
        # TA loads T0 whenever it is free, taken or not (its enables then do not wait for
        # the conditions of ``take``).
        with m.If(~ta_valid | ta_moves):
            m.d.sync += [ta.eq(t0),
                         ta_valid.eq(take), ta_tag.eq(tag_read.data),
                         ta_retagged.eq((retag & p2_on_t0) | late_on_t0),
                         ta_retag_hit.eq(Mux(retag & p2_on_t0, installs(t0.tag), late_hit))]
        with m.Elif(retag & p2_on_ta):
            m.d.sync += [ta_retagged.eq(1), ta_retag_hit.eq(installs(ta.tag))]
        with m.If(t0_loads & scanning):
            m.d.sync += [scan_index.eq(scan_index + 1),
                         scanning.eq(scan_index != params.slots - 1)]
        with m.If(ta_moves):
            m.d.sync += [t1.eq(ta), t1_needs_slot.eq(needs_slot(ta)),
                         t1_first_line.eq(FillReader.first_line(whole, ta.tag,
                                                                ta.kind != SlotOp.READ)),
                         t1_before_last.eq(ta.expected - 1), t1_two_before.eq(ta.expected - 2),
                         t1_hit.eq(hit_after_edge(p2_on_ta, ta.tag, ta_hit))]
        with m.Else():
            m.d.sync += t1_hit.eq(hit_after_edge(p2_on_t1, t1.tag, t1_hit))
        m.d.comb += events.hits.eq(advance & t1_needs_slot)

        # P2: the op of T1 with its slot's word (or the op with its fill, or the eviction of
        # T1's slot's occupant); the word starts from W1 if P2's op was on the slot on the edge
        # P2 took it.
        p2_word = Signal(entry_layout, reset_less=True)
        filled = Signal(entry_layout)
        # Ops in the result unit, counted from its input register's valid (a register, not
        # P2's decision to send one); with that register's op, ``in_flight``.
        in_unit = Signal(range(depth + 1))
        queued = unit_input.source.valid
        in_flight = in_unit + queued
        # No op in the unit or its input register: a register made of their next values, so
        # that no adder is in front of the miss handler's decisions (pipeline rule 3).
        unit_empty = Signal(init=1)
        fwd1 = register_copies(m, p2_valid & p2_on_t1, copies, "fwd1")
        word = _by_group(m, p, entry_layout, fwd1, w1, p2_word, "word")
        # P2 takes a fill only in INSTALL, and nothing else then: the word it takes is the
        # filled one throughout INSTALL, chosen by copies (pipeline rule 2) of the miss
        # handler's ``fill_next``.
        fill_next = Signal()
        installing = register_copies(m, fill_next, copies, "installing")
        next_word = _by_group(m, p, entry_layout, installing, filled, current, "next_word")
        # A CLEAR's range check, made in T1 for both words P2 may start from (pipeline rule
        # 3: a carry chain over the address stays out of P2's write enable). The word
        # written on this edge keeps the tag of P2's ``word``: no op changes a slot's tag.
        covered_read = Signal()
        covered_w1 = Signal()
        last_taken = Signal()       # the count of the word P2 takes is its op's EXPECTED - 1

        def in_clear_range(entry):
            return (entry.tag >= t1.tag) & (entry.tag < t1.high)

        # The slot RAM's write enable and address are P2's valid and slot a clock late (with
        # W1, P2's word), in copies of their own, one per group of its block columns
        # (hdl.bram); the enables reset with P2.
        ram_copies = len(slots.write_en)
        m.d.comb += [
            slots.write_en.eq(Cat(register_copies(m, p2_valid, ram_copies, "slot_write_en",
                                                  reset=True))),
            *(slots.write_addr[k].eq(copy) for k, copy in enumerate(
                register_copies(m, p2.index, ram_copies, "slot_write_addr")))]
        m.d.sync += [
            p2_valid.eq(advance | evict | install),
            *(p2[name].eq(t1[name]) for name in stage_fields),
            p2.data.eq(op_line),
            p2.kind.eq(Mux(evict, SlotOp.EVICT, t1.kind)),
            p2_word.eq(next_word), p2_install.eq(install),
            covered_read.eq(in_clear_range(next_word)), covered_w1.eq(in_clear_range(word)),
            last_taken.eq(next_word.state.n == t1_before_last),
        ]
        m.d.comb += t1_data_slot.eq(Mux(ta_moves, ta.data_slot, t1.data_slot))
        # P2 gives its slot another line (an install) or none (an eviction, a drop, a clear
        # of a line in its range: a slot already empty stays so).
        covered = Signal()
        m.d.comb += [covered.eq(Mux(fwd1[-1], covered_w1, covered_read)),
                     retag.eq(p2_valid & (p2_install | (p2.kind == SlotOp.EVICT)
                                          | (p2.kind == SlotOp.DROP)
                                          | ((p2.kind == SlotOp.CLEAR) & covered)))]
        # The tag memory changes only with a slot's line, so it is written on a retag alone
        # (P2's write enable comes after its additions), a clock late, from ``tag_late``: a
        # retag is made of P2's kind and CLEAR range check, which would otherwise reach the
        # write enables of every LUT RAM of the memory within the clock. TA, loading on the
        # clock of the late write, takes it as a retag (``late_on_t0``, above).
        m.d.sync += [tag_late.en.eq(retag), tag_late.addr.eq(p2.index),
                     tag_late.data.valid.eq(p2_install),
                     tag_late.data.tag.eq(p2.tag[tag_lsb:])]
        m.d.comb += [tag_write.en.eq(tag_late.en), tag_write.addr.eq(tag_late.addr),
                     tag_write.data.eq(tag_late.data)]
        # P2's decision to accept a contribution, made of registers (pipeline rule 3), one
        # copy per column group to steer its lanes (rule 2) and one for the rest of its word:
        # whether the op is a contribution that may be accepted, and whether the word it
        # starts from (W1 or the one taken) is at capacity. And whether it is G-Ternary.
        may_add = register_copies(
            m, ((Mux(evict, SlotOp.EVICT, t1.kind) == SlotOp.CONTRIBUTE)
                & aggregates(t1.mode) & t1.full_line), copies, "may_add")
        ternary = register_copies(m, t1.mode == Mode.GTERNARY, groups, "ternary")
        full_taken = register_copies(m, next_word.state.n == p.capacity, copies,
                                     "full_taken")
        # What P2's word tells the op behind it, made without P2's adder: whether the count
        # written is ``capacity`` (``full``), and whether it is the op's ``EXPECTED - 1``
        # (``last``: its contribution would complete the line).
        after = Signal(data.StructLayout({"full": 1, "last": 1}))
        full_w1 = register_copies(m, after.full, copies, "full_w1")
        full = [Mux(fwd, at_w1, taken) for fwd, at_w1, taken in zip(fwd1, full_w1, full_taken)]
        last_w1 = Signal()
        m.d.sync += last_w1.eq(after.last)
        last = Mux(fwd1[-1], last_w1, last_taken)
        adds = [add & ~at_capacity for add, at_capacity in zip(may_add[:groups], full)]
        # The fields the unit's decisions are made of, as ``_update`` gives them to the unit
        # (the count P2 starts from, whether it accepts the contribution, the mode and
        # threshold: the op's, or for a scan the slot's; and the terms that follow from them
        # by an adder, ``decision_inputs``), registered once per control copy of the unit
        # (rule 2), each made in its column group from the group's copies of P2's selects:
        # the unit has one clock from them to its result, and a value made in one place would
        # reach every copy by one net across the line.
        # Whether P2's op is a scan, in copies (from P2's next kind) beside the decisions.
        scans = register_copies(m, evict | _is_scan(t1.kind), groups, "p2_scan")
        for k, (into, fwd, add, scan) in enumerate(zip(unit.decision_inputs, fwd1, adds,
                                                       scans)):
            decision = Signal(decision_inputs_layout(p), name=f"unit_decision_{k}",
                              reset_less=True)
            mode, threshold = _unit_settings(scan, p2, Mux(fwd, w1.mode, p2_word.mode),
                                             Mux(fwd, w1.threshold, p2_word.threshold))
            # The unit's request has every byte enable.
            fields = decision_inputs(p, n=Mux(fwd, w1.state.n, p2_word.state.n), mode=mode,
                                     threshold=threshold, contribute=add, full_line=1)
            m.d.sync += [decision[name].eq(value) for name, value in fields.items()]
            m.d.comb += into.eq(decision)
        # P2 takes a line out of its slot: a retag that installs none, of a slot that held
        # one (from registers and the forwarding select, as ``retag``).
        departure = Signal()
        m.d.comb += departure.eq(retag & ~p2_install & word.valid)
        self._update(m, p2, p2_valid, word, may_add[-1], full[-1], last, covered, write,
                     after, (t1_before_last, t1_two_before), unit_input.sink, side_layout,
                     events, adds, ternary, live)

        # Room in the output queues for every op from TA on and one more. Each queue's level
        # (the results the pool's queue holds, the write-backs the memory port holds) plus
        # the ops from TA on (its *claim*) is summed into a register, so that no adder is in
        # front of a decision (pipeline rule 3), and compared with constants. A claim grows
        # by one op an edge at most (an op taken, or the miss handler's eviction, which is
        # made only while no op is taken), so a claim a clock old is short by one at most:
        # ``room`` (the eviction, in DRAIN) allows for it, and ``room_take``, a register, for
        # the one more it does not see.
        in_pipe = ta_valid + t1_valid + p2_valid + in_flight
        claims = [Signal(range(2 * depth + 1), name=f"{queue}_claim")
                  for queue in ("results", "write_backs")]
        m.d.sync += [claim.eq(level + in_pipe)
                     for claim, level in zip(claims, (self.results_held,
                                                      self.write_backs_held))]
        room = Signal()
        m.d.comb += room.eq(Cat(claim < depth - 1 for claim in claims).all())
        m.d.sync += room_take.eq(Cat(claim < depth - 2 for claim in claims).all())

        # The result unit's output goes to the queues.
        side = side_layout(unit.response.payload.user)
        response = unit.response
        result = Signal(result_layout)
        answer = Signal(result_layout)      # from the miss handler, when the unit is empty
        answering = Signal()
        m.d.comb += [
            result.user.eq(side.user), result.line.eq(response.payload.line),
            result.accepted.eq(side.accepted), result.reason.eq(side.reason),
            result.invalid.eq(side.invalid),
            self.result.valid.eq((response.valid & side.result) | answering),
            self.write_back.payload.eq(Cat(
                side.address, response.payload.line,
                planes_of_state(p, response.payload.state)[:p.counter_width * p.line_bits],
                response.payload.state.n)),
            self.write_back.valid.eq(response.valid & side.write_back),
            events.write_backs.eq(response.valid & side.write_back),
        ]
        next_in_unit = Signal.like(in_unit)
        m.d.comb += next_in_unit.eq(in_unit + queued - response.valid)
        m.d.sync += [in_unit.eq(next_in_unit),
                     unit_empty.eq((next_in_unit == 0) & ~unit_input.sink.valid)]
        # The unit's valid chooses the queue's data in the queue's column groups, each by a
        # copy of its own (rule 2), the last copy the groups past the copies'.
        valid_copies = unit.response_valid_copies
        result_bits, answer_bits = Value.cast(result), Value.cast(answer)
        m.d.comb += self.result.payload.eq(Cat(
            Mux(valid_copies[min(k, len(valid_copies) - 1)], result_bits[bits], answer_bits[bits])
            for k, bits in enumerate(column_slices(len(result_bits)))))

        m.submodules.fill_reader = reader = FillReader(whole, p)
        wiring.connect(m, reader.fill_read, wiring.flipped(self.fill_read))
        wiring.connect(m, wiring.flipped(self.fill_data), reader.fill_data)
        m.d.comb += reader.start.payload.first.eq(t1_first_line)
        self._miss_handler(m, state, next_state, t1, miss, t1_data_ok, current, p2_valid,
                           unit_empty, room, answer, answering, events,
                           departure, reader, evict, install, filled, dropped, fill_next, live)
        with m.If(~scanning & ~t0_valid & ~ta_valid & ~t1_valid & ~p2_valid):
            m.d.sync += settling.eq(0)
        m.d.comb += self.idle.eq(~settling & ~intake.full & ~t0_valid & ~ta_valid & ~t1_valid
                                 & ~p2_valid & unit_empty & running & ~self.writes_pending)
        return m

    def _update(self, m, op, valid, word, may_add, full, last, covered, write, after, behind,
                request, side_layout, events, adds, ternary_copies, live):
        """P2: what ``op`` (valid while ``valid``) does to its slot, whose word is ``word``
        (a fill's after an install); ``may_add``: the op is a contribution in an aggregating
        mode to a whole line; ``full``: ``word``'s count is ``capacity``; ``last``: it is
        ``op.expected - 1``; ``covered``: the word's tag is in a ``CLEAR``'s range;
        ``behind``: ``EXPECTED - 1`` and ``EXPECTED - 2`` of the op behind (all ones for
        ``EXPECTED`` = 0, above every count; ``EXPECTED - 2`` likewise for 1). Drives
        ``write.data`` (W1 takes it, and the slot is written from W1 on the next clock),
        ``after`` (whether the count written is ``capacity``, and the op behind's
        ``EXPECTED - 1``) and ``request`` (to the result unit, through its input register).
        ``write.data`` is the slot's word after this edge (a word the op leaves alone is
        ``word`` itself), so the slot is written for every valid op (its write enables are
        copies of ``valid`` a clock late, registers that steer the block RAM's write ports
        without logic in front of them), and the reads forward the word without waiting for
        the op's decisions. Column group ``k`` of
        the lanes takes the op's line while ``adds[k]`` (a copy of the op's ``accepted``),
        G-Ternary while ``ternary_copies[k]``."""
        p = self._slice.datapath
        n = word.state.n
        before_last, two_before = behind
        kind = op.kind
        contribute = kind == SlotOp.CONTRIBUTE
        bad_mode = ~aggregates(op.mode)
        partial = ~op.full_line
        accepted = may_add & ~full
        ternary = op.mode == Mode.GTERNARY
        complete = accepted & last
        new = Signal.like(word)
        m.d.comb += new.eq(word)
        write_back = Signal()
        emit_result = contribute | (kind == SlotOp.READ)
        with m.If(live), m.Switch(kind):  # see the module docstring, Icarus
            with m.Case(SlotOp.CONTRIBUTE):
                with m.If(accepted):
                    m.d.comb += [
                        new.dirty.eq(~complete), new.mode.eq(op.mode),
                        new.threshold.eq(op.threshold), new.state.n.eq(n + 1),
                        write_back.eq(complete)]
            with m.Case(SlotOp.FLUSH):
                m.d.comb += [new.dirty.eq(word.dirty & ~word.valid),
                             write_back.eq(word.valid & word.dirty)]
            with m.Case(SlotOp.EVICT):
                m.d.comb += [new.valid.eq(0), write_back.eq(word.valid & word.dirty),
                             events.evictions.eq(valid & word.valid)]
            with m.Case(SlotOp.CLEAR):
                m.d.comb += new.valid.eq(word.valid & ~covered)
            with m.Case(SlotOp.DROP):
                m.d.comb += [new.valid.eq(0),
                             events.dropped.eq(valid & word.valid & word.dirty)]
        groups = zip(adds, ternary_copies, _lane_groups(p, word.state.lanes),
                     _lane_groups(p, op.data, p.control_copy_bits))
        m.d.comb += new.state.lanes.eq(Cat(
            Mux(add, accumulate(p, lanes, line, is_ternary), lanes)
            for add, is_ternary, lanes, line in groups))
        m.d.comb += [write.data.eq(new),
                     after.full.eq(Mux(live & accepted, n == p.capacity - 1, full)),
                     after.last.eq(Mux(live & accepted, n == two_before, n == before_last))]

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
        mode, threshold = _unit_settings(_is_scan(kind), op, word.mode, word.threshold)
        m.d.comb += [
            side.result.eq(emit_result), side.write_back.eq(write_back),
            side.address.eq(word.tag), side.user.eq(op.user),
            side.accepted.eq(~contribute | accepted),
            side.reason.eq(Mux(contribute, reason, Reason.NONE)),
            side.invalid.eq(accepted & ternary & invalid_codes(p, op.data)),
            request.valid.eq(valid & (emit_result | write_back)),
            # The unit counts an accepted contribution itself, from the count P2 starts from
            # (its line is 0: P2 has added the lanes), so that its decisions, whose copies
            # span the line (see ``unit_decision``), follow P2's registers by little logic.
            request.payload.state.lanes.eq(new.state.lanes), request.payload.state.n.eq(n),
            request.payload.contribute.eq(accepted),
            request.payload.mode.eq(mode), request.payload.threshold.eq(threshold),
            request.payload.byte_enable.eq(-1),
            request.payload.user.eq(side),
        ]

    def _miss_handler(self, m, state, next_state, t1, miss, t1_data_ok, occupant, p2_valid,
                      unit_empty, room, answer, answering, events,
                      departure, reader, evict, install, filled, dropped, fill_next, live):
        """The steps of a miss of T1's op (see the module docstring), from ``state`` to
        ``next_state``, which the handler drives and ``state`` takes on the clock edge. Drives
        ``evict`` (P2 takes the eviction of T1's slot's occupant, ``occupant``), ``install``
        (P2 takes T1's op with the word ``filled``), ``dropped`` (T1's op is answered here
        and leaves), ``answer`` and ``answering`` (the result queue takes ``answer``), and
        ``fill_next``: P2 is to take the word ``filled`` on the next clock if it takes one.
        An eviction is made while P2 is empty and ``room`` (the output queues have room for
        it and every op in flight) holds, an install while P2 is empty; an answer given here
        waits until the pool is drained (the result unit gives nothing on that clock, so the
        result queue's data is chosen by the unit's valid alone)."""
        params = self._slice
        drained = ~p2_valid & unit_empty
        # A write-back is pending from the clock after the unit gives it (``writes_pending``).
        writes_done = drained & ~self.writes_pending
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
        answer_room = drained & (self.results_held < self.QUEUE_DEPTH)
        is_read = t1.kind == SlotOp.READ
        m.d.comb += [reader.start.payload.tag.eq(t1.tag), reader.start.payload.state.eq(~is_read)]
        # The answer to T1's op when the pool gives it itself: the line of a result read, and
        # whether memory failed; a continuous assignment (a Verilog block that only sets the
        # constant fields would never run in Icarus Verilog: module docstring).
        m.d.comb += answer.eq(Cat(t1.user, reader.line, is_read,
                                  Const(Reason.NONE.value, Reason.as_shape()), Const(0, 1),
                                  reader.error))
        # The filled word (a continuous assignment, as ``answer``).
        m.d.comb += filled.eq(Cat(Const(1, 1), Const(0, 1), t1.tag, t1.mode, t1.threshold,
                                  state_of_planes(params.datapath, reader.image)))

        def answer_and_drop():
            """Answer T1's op with ``answer`` (there is room) and drop it."""
            m.d.comb += [answering.eq(1), reader.finish.eq(1),
                         events.mem_error.eq(reader.error), dropped.eq(1)]
            m.d.comb += next_state.eq(_Fsm.RUN)

        m.d.comb += next_state.eq(state)
        m.d.sync += state.eq(next_state)
        # ``fill_next`` is high on every clock before P2 may install (in INSTALL, entered from
        # DECIDE or READ_AFTER_WRITES) and low on every clock before P2 may take another word
        # (in RUN, and the eviction in DECIDE). It is made of the state and registers rather
        # than of ``next_state``, which waits for the queues' levels: it may also be high
        # before a clock on which P2 takes nothing (WAIT_WRITES, READ_AFTER_WRITES,
        # READ_ANSWER, and RUN after an answer in INSTALL has dropped T1's op, when T1 is
        # empty).
        m.d.comb += fill_next.eq(live & (((state == _Fsm.DECIDE) & t1_data_ok & started)
                                         | (state == _Fsm.WAIT_WRITES)
                                         | (state == _Fsm.READ_AFTER_WRITES)
                                         | ((state == _Fsm.INSTALL) & ~install)))
        with m.If(live), m.Switch(state):  # see the module docstring, Icarus
            with m.Case(_Fsm.RUN):
                # The line's read starts at once unless a write may be to its line; the ops
                # ahead drain meanwhile, and a result read takes no slot. No line leaves its
                # slot in P2 on this clock (the miss handler evicts in DECIDE, and no op
                # follows a scan), so ``departed`` says whether one has left.
                read_now = ~departed & ~self.host_writes_pending
                with m.If(miss):
                    m.d.comb += reader.start.valid.eq(read_now)
                    m.d.sync += started.eq(read_now)
                    m.d.comb += next_state.eq(Mux(read_now & is_read, _Fsm.READ_ANSWER,
                                                  _Fsm.DRAIN))
            with m.Case(_Fsm.DRAIN):
                # Only P2 writes slots; the ops in the result unit go on meanwhile. An
                # eviction will need room in the output queues.
                with m.If(~p2_valid & room):
                    m.d.comb += next_state.eq(_Fsm.DECIDE)
            with m.Case(_Fsm.DECIDE):
                # The slot is read while the pool misses: once its word is in, ``occupant``
                # is the slot as it stands. Nothing is in P2, so departed is final until the
                # eviction below.
                with m.If(t1_data_ok):
                    m.d.comb += evict.eq(~is_read & occupant.valid)
                    m.d.sync += wait_for_writes.eq(departed)
                    m.d.comb += next_state.eq(Mux(started, _Fsm.INSTALL, _Fsm.WAIT_WRITES))
            with m.Case(_Fsm.WAIT_WRITES):
                # The read starts on the next clock, from the state alone: the reader offers
                # its command on the clock it starts, and ``may_read`` compares levels.
                with m.If(may_read):
                    m.d.comb += next_state.eq(_Fsm.READ_AFTER_WRITES)
            with m.Case(_Fsm.READ_AFTER_WRITES):
                m.d.comb += reader.start.valid.eq(1)
                m.d.comb += next_state.eq(Mux(is_read, _Fsm.READ_ANSWER, _Fsm.INSTALL))
            with m.Case(_Fsm.READ_ANSWER):
                with m.If(reader.done & answer_room):
                    answer_and_drop()
            with m.Case(_Fsm.INSTALL):
                with m.If(reader.held & reader.error & answer_room):
                    # The state is unknown: the contribution is answered, not counted.
                    answer_and_drop()
                with m.If(reader.held & ~reader.error & ~p2_valid):
                    # The op moves on with the filled word, which P2 writes to the slot. It
                    # has had room since it was taken, and the filled word comes from the
                    # reader's registers (``held``): ``install`` steers P2's word and T1's
                    # valid, so it is decided from registers (pipeline rule 3), not after the
                    # answer's room above (``If``, not ``Elif``: the two exclude each other
                    # by ``reader.error``).
                    m.d.comb += [install.eq(1), reader.finish.eq(1), events.fills.eq(1)]
                    m.d.comb += next_state.eq(_Fsm.RUN)


class SlotPool(wiring.Component):
    """On-chip accumulator slots with a one-clock read-modify-write (see the module docstring),
    in slices of the line: a :class:`PoolSlice` per ``slice_bits`` line bits, side by side.

    Each slice keeps its lanes of every slot and a whole copy of the pool's control, so that
    every decision of the pool is made beside the block RAM columns it steers. The slices take
    the same ops (each its columns of the line), the same fill lines and handshakes, so they
    decide alike on every clock: slice 0 speaks for all of them (``op.ready``, the valids, the
    fill reads, ``idle``, the events). The lines of the results and write-backs are the
    slices' columns side by side; a G-Ternary line is invalid if a slice's columns are. The
    results wait in one queue of ``QUEUE_DEPTH`` (``results``, read without a clock: a head
    register as wide as a line would be enabled by the taker's ``ready``, rule 1), so that
    ``result.ready`` steers the pointers of one queue, not a queue in every slice. The ports
    and their timing are a slice's.

    Parameters
    ----------
    params : ControllerParams
        ``slots`` words; lines, ``W`` and the result unit's latency from ``params.datapath``.
    user_width : int
        Width of the opaque ``user`` field an op carries to its result.
    primitives : None or "ecp5"
        How the slots' block RAM is made (:class:`hdl.bram.RegisteredMemory`).
    slice_bits : int
        Line bits per slice, a power of two of at least ``REGISTER_BITS``; a line of no more
        bits is one slice. By default ``POOL_SLICE_BITS`` (:mod:`spec.params`).

    Members
    -------
    op : In(stream.Signature(slot_op_layout(params, user_width)))
        ``ready`` while ``intake`` is empty: low from the clock after an op could not enter,
        while the pool scans its slots after reset, handles a miss, or waits for room in its
        outputs.
    result : Out(stream.Signature(slot_result_layout(params, user_width)))
        One per ``CONTRIBUTE`` and ``READ``, in op order.
    write_back : Out(stream.Signature(write_back_layout(params), always_ready=True))
        Taken on every clock it is valid: into the memory port's W buffer
        (:class:`hdl.axi.AxiMemoryPort`).
    write_backs_held : In(range(QUEUE_DEPTH + 1))
        Write-backs the memory port holds, as of the last clock edge: the pool makes one only
        while it has room for it there, ``QUEUE_DEPTH`` in all.
    fill_read : Out(stream.Signature(fill_command_layout(params)))
        Device-memory reads of a fill or of a result line; the lines come back on
        ``fill_data`` in order, and the pool takes each on the clock it is valid.
    fill_data : In(pool_fill_layout(params, slices))
        The lines of ``fill_read``'s reads, in order, each taken on the clock its ``valid``
        copies are high (copy ``k`` steers slice ``k``).
    writes_pending : In(slices)
        Writes to device memory (the pool's and the host's) not yet acknowledged.
    host_writes_pending : In(slices)
        Host writes among them. A fill or result read waits for every write while there is one
        (see *Fills and writes*). Both once per slice, all alike, as ``fill_data``'s ``valid``.
    idle : Out(1)
        No op in the pool, none of its outputs waiting, no write-back pending: a scan or a
        register command may start, and device memory holds every write-back made so far.
    events : Out(slot_event_layout())
        Slice 0's, but ``invalid``: whether any slice's lanes held an invalid code, a clock
        after the others, from a register beside each slice (it is only counted).
    """

    #: A slice's (:class:`PoolSlice`): the slices add no register.
    HIT_LATENCY = PoolSlice.HIT_LATENCY

    #: Write-backs the pool may have in the memory port at once (a slice's).
    QUEUE_DEPTH = PoolSlice.QUEUE_DEPTH

    def __init__(self, params=ControllerParams(), *, user_width=1, primitives=None,
                 slice_bits=POOL_SLICE_BITS):
        if not isinstance(params, ControllerParams):
            raise TypeError(f"params must be a ControllerParams, not {params!r}")
        if not isinstance(user_width, int) or user_width < 1:
            raise ValueError(f"user_width must be a positive integer, not {user_width!r}")
        if primitives not in PRIMITIVES:
            raise ValueError(f"primitives must be one of {PRIMITIVES}, not {primitives!r}")
        if (not isinstance(slice_bits, int) or slice_bits < REGISTER_BITS
                or slice_bits & (slice_bits - 1)):
            raise ValueError(f"slice_bits must be a power of two of at least {REGISTER_BITS}, "
                             f"not {slice_bits!r}")
        self._params = params
        self._user_width = user_width
        self._primitives = primitives
        line_bits = params.datapath.line_bits
        step = min(slice_bits, line_bits)
        self._columns = [range(k, k + step) for k in range(0, line_bits, step)]
        super().__init__({
            "op": In(stream.Signature(slot_op_layout(params, user_width))),
            "result": Out(stream.Signature(slot_result_layout(params, user_width))),
            "write_back": Out(stream.Signature(write_back_layout(params), always_ready=True)),
            "write_backs_held": In(range(self.QUEUE_DEPTH + 1)),
            "fill_read": Out(stream.Signature(fill_command_layout(params))),
            "fill_data": In(pool_fill_layout(params, self.slices)),
            "writes_pending": In(self.slices),
            "host_writes_pending": In(self.slices),
            "idle": Out(1),
            "events": Out(slot_event_layout()),
        })

    @property
    def slices(self):
        """How many :class:`PoolSlice` the line is cut into."""
        return len(self._columns)

    def elaborate(self, platform):
        m = Module()
        params = self._params
        p = params.datapath
        slices = []
        for k, columns in enumerate(self._columns):
            m.submodules[f"slice{k}"] = pool = PoolSlice(
                params, columns=columns, user_width=self._user_width,
                primitives=self._primitives)
            bits = slice(columns.start, columns.stop)
            m.d.comb += [
                pool.op.valid.eq(self.op.valid),
                *(pool.op.payload[name].eq(self.op.payload[name])
                  for name in slot_op_layout(params, 1).members if name != "data"),
                pool.op.payload.data.eq(self.op.payload.data[bits]),
                pool.write_backs_held.eq(self.write_backs_held),
                pool.fill_read.ready.eq(self.fill_read.ready),
                pool.fill_data.valid.eq(self.fill_data.valid[k]),
                pool.fill_data.payload.data.eq(self.fill_data.data[bits]),
                pool.fill_data.payload.n.eq(self.fill_data.data[:p.counter_width]),
                pool.fill_data.payload.error.eq(self.fill_data.error[k]),
                pool.writes_pending.eq(self.writes_pending[k]),
                pool.host_writes_pending.eq(self.host_writes_pending[k]),
            ]
            slices.append(pool)
        first = slices[0]
        m.submodules.results = results = EagerFIFO(width=self.result.payload.shape().size,
                                                   depth=self.QUEUE_DEPTH)
        result = self.result.payload.shape()(results.w_data)
        write_back = self.write_back.payload
        m.d.comb += [results.w_en.eq(first.result.valid),
                     *(pool.results_held.eq(results.level) for pool in slices),
                     self.result.valid.eq(results.r_rdy), self.result.payload.eq(results.r_data),
                     results.r_en.eq(self.result.ready)]
        width = len(self._columns[0])                   # line bits per slice
        invalid = [Signal(name=f"invalid{k}") for k in range(len(slices))]
        m.d.sync += [flag.eq(pool.events.invalid) for flag, pool in zip(invalid, slices)]

        def side_by_side(stream_name, field, line):
            """Line ``line`` of ``field`` of every slice's ``stream_name``, side by side."""
            return Cat(getattr(pool, stream_name).payload[field][line * width:][:width]
                       for pool in slices)

        m.d.comb += [
            self.op.ready.eq(first.op.ready),
            self.idle.eq(first.idle),
            self.events.eq(first.events),
            self.events.invalid.eq(Cat(invalid).any()),
            self.fill_read.valid.eq(first.fill_read.valid),
            self.fill_read.payload.eq(first.fill_read.payload),
            *(result[name].eq(first.result.payload[name])
              for name in ("user", "accepted", "reason", "error")),
            result.line.eq(side_by_side("result", "line", 0)),
            result.invalid.eq(Cat(pool.result.payload.invalid for pool in slices).any()),
            self.write_back.valid.eq(first.write_back.valid),
            write_back.address.eq(first.write_back.payload.address),
            # The result line and the planes, then the n line, rebuilt from slice 0's count.
            write_back.lines.eq(Cat(*(side_by_side("write_back", "lines", line)
                                      for line in range(1 + p.counter_width)),
                                    n_line(p, first.write_back.payload.n))),
        ]
        return m
