"""The slot pool: on-chip accumulators, one read-modify-write per clock.

Every aggregating line that receives contributions lives, while it is being aggregated, in a
*slot*: one word of an on-chip memory holding the line's state (lanes and ``n``), the address
of its accumulator in device memory (the slot's *tag*), whether memory is behind the slot
(*dirty*), and the mode and threshold its result line is made with. The controller picks the
slot of a line (its index) and the pool compares the tag: a contribution to a resident line
never touches device memory.

Pipeline (one op per clock, in order; ``docs/controller.md``, "Slot pool")::

    op -> intake -> T0 --read slot--> TA --TagCheck--> T1 --P2: SlotUpdate--> write slot
           ^                                           | miss               |
      OutputCredit                                     v                    v register
      (room taken                            MissHandler (FillReader)   result unit
       as an op enters)                      drain, evict, fill,        (AggregationDatapath,
                                             install              result stream, write_back

The boxes named in capitals are components of their own, each with its test:
:class:`hdl.tag_check.TagCheck`, :class:`hdl.slot_update.SlotUpdate`,
:class:`hdl.miss_handler.MissHandler` with :class:`hdl.fill_reader.FillReader`, and
:class:`hdl.output_credit.OutputCredit`; :mod:`hdl.slot_ops` holds the formats they share.

- The slots are block RAM whose data comes two clocks after its address, from the RAM's
  output register (:class:`hdl.bram.RegisteredMemory`: a block RAM's data straight from its
  array would use most of a clock period). The slots' valid bits and tags are kept again in a
  small block RAM (``TagCheck``), for the hit check: it is read a clock ahead of the slots,
  so that its word is out as an op enters TA. P2's changes to it are written a clock late,
  from registers, so that its write enables have no logic in front of them; the op entering
  TA takes the writes its read missed as changes of its slot's line.
- Ops arrive over a credit link (:mod:`hdl.credit`): :class:`SlotPool` takes an op while it
  holds a credit (``op.ready`` is a register) and relays it to every slice through a register
  of its own, into ``intake``, a queue that passes an op on at once when it is empty; each op
  T0 takes from it sends a credit back. The op then waits in **T0**, a register, so that the
  pool's logic starts from registers, not from its caller's. An op's line of data does not
  travel with it (pipeline rule 1): it is written on arrival to ``op_data``, a small memory
  written every clock, and read from there while the op is in T1 into a register of P2.
- **TA** holds an op whose slot is being read, and checks its tag. **T1** holds the op with
  the result of that check, a register kept exact by every write to the slot since: the
  decision to move on or to miss has no logic in front of it
  (pipeline rule 3). While ``t1_data_ok``, the slot's word is ``current``: the word read, or
  P2's word of the slot on one of the three clock edges the read could not see (``W1`` on
  the last, ``W2`` on the one before, ``W3`` on the one before that, whose write lands on
  the read's own edge: P2's word is written to its slot from ``W1``, on the edge after
  ``W1`` takes it, so that the block RAM's data pins are driven by registers, not by P2's
  adders).
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
- *Prefetch.* The controller hints the line of each whole-line contribution as it is decoded
  (``hint``, from :class:`hdl.prefetch.HintSource` to :class:`hdl.prefetch.FillHints`,
  through a register in each slice); while no
  miss is handled, the miss handler reads the oldest hinted line that is not resident, and
  its op, when it misses in T1, takes that read as its own. Into an empty slot, the op
  waits in T1 for the read and moves into P2 with the filled word on the clock it is in,
  TA's op into T1 behind it (``fast_install``, foreseen a clock early: ``installing``
  selects P2's word, and ``install_due`` keeps T1's op from moving on as a hit meanwhile);
  the tag check takes the install as a retag of the slot for the op behind.
  A prefetch is dropped, unused, when memory may have changed under it (a line left its slot,
  a host write, ``hold_prefetch``) or an op of its line hits
  (:class:`hdl.miss_handler.MissHandler`).
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
(an AXI valid, say) holds X. The Switches of the pool's components (the slot update, the miss
handler, the fill reader) and of the scan tasks that drive outputs sit under ``If(live)``, where
``live`` is the inverse of a register that copies the reset a clock late
(:func:`hdl.pipeline.out_of_reset`), which every simulation changes at its start; a comb signal
that would otherwise be driven by such a block alone (a constant, or a choice between two
values) is one ``Mux`` or ``Cat``, a continuous assignment.
"""

import dataclasses
import types

from amaranth import Cat, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from spec.params import POOL_SLICE_BITS, REGISTER_BITS, ControllerParams, Mode, aggregates

from .axi import AxiMemoryPort
from .bram import PRIMITIVES, READ_LATENCY, RegisteredMemory, address_copies
from .credit import CreditReceiver, CreditRelay, CreditSender, CreditSignature, credit_loop
from .datapath import (
    AggregationDatapath,
    decision_inputs,
    decision_inputs_layout,
    n_line,
    planes_of_state,
)
from .fill_reader import FillReader
from .miss_handler import MISS_EVENTS, MissHandler, MissStep
from .output_credit import OutputCredit
from .pipeline import (
    EagerFIFO,
    PipelineRegister,
    column_slices,
    delayed,
    register_copies,
    register_tree,
)
from .prefetch import FillHints, hint_layout, same_line
from .slot_ops import (
    SlotOp,
    by_group,
    fill_command_layout,
    fill_line_layout,
    is_scan,
    pool_fill_layout,
    side_layout,
    slice_params,
    slice_write_back_layout,
    slot_entry_layout,
    slot_event_layout,
    slot_op_layout,
    slot_result_layout,
    unit_settings,
    write_back_layout,
)
from .slot_update import UPDATE_EVENTS, SlotUpdate
from .tag_check import TagCheck

__all__ = ["PoolSlice", "SlotPool"]


def _checked_data_lag(data_lag, most):
    """``data_lag`` of :class:`PoolSlice` or :class:`SlotPool` (``most`` at most), or a
    ValueError."""
    if not isinstance(data_lag, int) or not 0 <= data_lag <= most:
        raise ValueError(f"data_lag must be an integer from 0 to {most} (the clocks before "
                         f"an op's line is read for P2), not {data_lag!r}")
    return data_lag


def _of_current(n, test):
    """``test`` (a compare of a slot word's tag or count) of T1's slot's word
    (``n.current``), made of ``test`` of each word it is chosen from, by the last copies of
    their selects: each compare starts from registers (the slot RAM's output register, W1,
    W2, W3) and only a bit goes through the selects, not a carry chain behind the muxes of a
    whole word."""
    return Mux(n.sel_w1[-1], test(n.w1), Mux(n.sel_w2[-1], test(n.w2),
                                              Mux(n.sel_w3[-1], test(n.w3), test(n.rdata))))


def _of_next_word(n, test):
    """``test`` of the word P2 takes from T1 (``n.next_word``: the filled word while
    ``installing``, else ``current``), as :func:`_of_current` makes it."""
    return Mux(n.installing[-1], test(n.miss.filled), _of_current(n, test))


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
    data_lag : int
        As :class:`SlotPool`'s.

    Members
    -------
    Those of :class:`SlotPool`, with the same timing, in the slice's columns, but ``op``,
    which is a :class:`hdl.credit.CreditSignature` (the ops :class:`SlotPool` relays, each
    ``data_lag`` clocks before its line; a credit back for each op the intake frees): ``op``'s
    ``data``, ``result``'s ``line`` and ``invalid``, and ``events.invalid`` are the slice's
    own; ``write_back`` is a :func:`slice_write_back_layout`; ``fill_data`` a
    :func:`fill_line_layout`, with the line's count beside the slice's columns. But
    ``result`` has no ``ready``: it goes into the pool's result queue on every clock it is
    valid, and the slice makes one only while that queue has room for it, by
    ``results_held`` (the results the queue holds as of the last clock edge, ``QUEUE_DEPTH``
    at most), as it does a write-back by ``write_backs_held``.
    """

    def __init__(self, params, *, columns, user_width=1, primitives=None, data_lag=0):
        assert READ_LATENCY == 2, "the pool's forwarding is built for a two-clock slot read"
        self._data_lag = _checked_data_lag(data_lag, self.DATA_LAG)
        self._params = params
        self._slice = slice_params(params, len(columns))
        self._user_width = user_width
        self._primitives = primitives
        lanes = self._slice.datapath
        super().__init__({
            "op": In(CreditSignature(slot_op_layout(self._slice, user_width))),
            "result": Out(stream.Signature(slot_result_layout(self._slice, user_width),
                                           always_ready=True)),
            "results_held": In(range(self.QUEUE_DEPTH + 1)),
            "write_back": Out(stream.Signature(slice_write_back_layout(self._slice),
                                               always_ready=True)),
            "write_backs_held": In(range(self.WRITE_BACKS + 1)),
            "fill_read": Out(stream.Signature(fill_command_layout(params))),
            "fill_data": In(stream.Signature(fill_line_layout(lanes), always_ready=True)),
            "writes_pending": In(1),
            "host_writes_pending": In(1),
            "hint": In(stream.Signature(hint_layout(params), always_ready=True)),
            "hold_prefetch": In(1),
            "clear_high": In(params.address_bits + 1),
            "idle": Out(1),
            "events": Out(slot_event_layout()),
        })

    #: Stages an op is in from its slot's read to the result unit: one per clock of the read
    #: (TA, T1), then P2. The forwarding (``W1`` to ``W3``, ``ra_index``, ``rd_index``) is built
    #: for a read of two clocks.
    STAGES = READ_LATENCY + 1

    #: Clocks from a result's write into the result queue to its piece's memory: each piece's
    #: column groups are written at copies of its write pointer that come through a tree
    #: (:class:`hdl.pipeline.EagerFIFO`'s ``write_lag``), so that no slice's valid reaches its
    #: piece's far columns within a clock.
    RESULT_WRITE_LAG = 1

    #: Entries of the result queue beyond the ops that can be in the stages and the result
    #: unit: the two that ``room_take``, made from the queues' claims two clocks late, does not
    #: see, and two and ``RESULT_WRITE_LAG`` so that the intake does not stop while the results
    #: are taken every clock (an entry is read from the ``RESULT_WRITE_LAG + 1``-th clock after
    #: its write). The write-backs' room has these and the memory port's latency
    #: (``WRITE_BACKS``); they leave more slowly, a line per clock: the port's bandwidth, not
    #: these entries, bounds them.
    SPARE = 4 + RESULT_WRITE_LAG

    #: Registers an op passes from :class:`SlotPool`'s ``op`` to each slice's intake (a
    #: :class:`hdl.credit.CreditRelay` per slice), so that the pool's caller's decision to send
    #: reaches no slice within a clock.
    OP_RELAY = 1

    #: Entries of the intake, a :class:`hdl.credit.CreditReceiver` that passes an op on at once
    #: when it is empty: the credit loop through ``OP_RELAY`` registers each way, so that an op
    #: may enter on every clock.
    INTAKE_DEPTH = credit_loop(OP_RELAY, queue=0)

    #: The most clocks an op's line may come after the op: P2's line is read from ``op_data``
    #: while the op is in T1, into a register of P2 (so that no LUT RAM read is in front of
    #: P2's adders), from the clock after the edge T1 takes the op; the op reaches T1 on the
    #: third edge after the one that writes its intake entry (T0, TA, T1).
    DATA_LAG = STAGES - 1

    #: Entries of ``op_data``, where an op's line waits until it is read for P2 (in T1): a
    #: power of two (so that ``data_slot`` wraps) above the ops that may wait, the intake's,
    #: T0's, TA's and T1's, for the one being written.
    DATA_SLOTS = 1 << (INTAKE_DEPTH + 1 + STAGES - 1).bit_length()

    #: Pipeline registers of the result unit (at most the datapath's ``latency``): it only
    #: reads states back (majority, gate), from a register of its own (``unit_input``), so
    #: one is enough, and each one is a clock on every result read.
    RESULT_LATENCY = 1

    #: Entries of the result queue: every op from TA on (the stages, the unit's input register
    #: and the unit) and ``SPARE``.
    QUEUE_DEPTH = STAGES + 1 + RESULT_LATENCY + SPARE

    #: Write-backs the memory port (:class:`hdl.axi.AxiMemoryPort`) holds for the pool, the
    #: queue they wait in: as many as the result queue's entries, and one for each clock from
    #: the port's take of a write-back to its first W beat (``FIRST_W``) and from its last
    #: beat to its room's return (``HELD_LAG``), so that the port's latency takes no room from
    #: the ops.
    WRITE_BACKS = QUEUE_DEPTH + AxiMemoryPort.FIRST_W + AxiMemoryPort.HELD_LAG

    #: Clock edges from the one that takes a hit's op on ``op`` to the first that can take its
    #: result on ``result``, with nothing else in the pool: T0, the stages, the unit's input
    #: register, the unit, and the result queue (written on one edge, in its memory
    #: ``RESULT_WRITE_LAG`` edges later, read from the next).
    HIT_LATENCY = 1 + STAGES + 1 + RESULT_LATENCY + 1 + RESULT_WRITE_LAG

    def elaborate(self, platform):
        m = Module()
        params, whole, u = self._slice, self._params, self._user_width
        p = params.datapath
        n = self._nets()
        # The slots: block RAM, read two clocks after its address (hdl.bram).
        m.submodules.slots = n.slots = RegisteredMemory(
            width=n.entry_layout.size, depth=params.slots, primitives=self._primitives,
            copies=address_copies(n.entry_layout.size))
        # The result unit only reads states back; P2's new word goes to the unit on the next
        # clock, so that the unit's decisions (which read the new ``n``) do not follow P2's
        # additions within one clock: a clock on every result read from a slot. Its
        # comparisons are carry chains, as the datapath's: made of LUT logic (git history:
        # e553630), they packed into fewer cells but left the placement too congested to route.
        unit_params = dataclasses.replace(p, latency=min(p.latency, self.RESULT_LATENCY))
        m.submodules.result_unit = n.unit = AggregationDatapath(
            unit_params, user_width=side_layout(params, u).size, replicated_inputs=True,
            primitives=self._primitives)
        m.submodules.update = n.update = SlotUpdate(params, u)
        self._unit_input(m, n)
        m.submodules.tag_check = n.tag_check = TagCheck(whole, primitives=self._primitives,
                                                        probes=FillHints.LOOK_UPS)
        m.submodules.miss_handler = n.miss = MissHandler(params, whole, user_width=u,
                                                         queue_depth=self.QUEUE_DEPTH)
        m.submodules.output_credit = n.credit = OutputCredit(self.QUEUE_DEPTH, self.WRITE_BACKS)
        m.submodules.hints = n.hints = FillHints(whole)
        self._op_intake(m, n)
        self._stages(m, n)
        self._slot_reads(m, n)
        self._p2(m, n)
        self._p2_decisions(m, n)
        self._outputs(m, n)
        self._miss(m, n)
        return m

    def _unit_input(self, m, n):
        """The unit's input register: P2's request to the result unit, a clock later, but its
        lanes. The request's lanes are P2's new ones (:class:`hdl.slot_update.SlotUpdate`),
        which W1 takes on the same edge (every edge, as this register): the unit reads them
        from W1, not from a line-wide register of its own."""
        request, unit = n.update.request, n.unit.request
        fields = [name for name in request.payload.shape().members if name != "state"]
        layout = request.payload.shape()
        held = data.StructLayout({**{name: layout[name].shape for name in fields},
                                  "n": layout["state"].shape["n"].shape})
        m.submodules.unit_input = unit_input = PipelineRegister(held)
        m.d.comb += [
            unit_input.sink.valid.eq(request.valid),
            *(unit_input.sink.payload[name].eq(request.payload[name]) for name in fields),
            unit_input.sink.payload.n.eq(request.payload.state.n),
            unit.valid.eq(unit_input.source.valid),
            *(unit.payload[name].eq(unit_input.source.payload[name]) for name in fields),
            unit.payload.state.n.eq(unit_input.source.payload.n),
            unit.payload.state.lanes.eq(n.w1.state.lanes),
        ]
        n.queued = unit_input.source.valid
        n.unit_input_valid = unit_input.sink.valid

    def _nets(self):
        """The nets the sections of :meth:`elaborate` share, each driven by one section."""
        params, u = self._slice, self._user_width
        index_bits = params.slot_index_bits
        n = types.SimpleNamespace()
        n.op_layout = slot_op_layout(params, u)
        n.entry_layout = slot_entry_layout(params)
        n.stage_fields = [name for name in n.op_layout.members if name != "data"]
        n.stage_layout = data.StructLayout({
            **{name: n.op_layout.members[name] for name in n.stage_fields},
            "data_slot": range(self.DATA_SLOTS)})
        # The stages (``_stages``); T1's slot word is ``current`` while ``t1_data_ok``.
        n.t0, n.ta, n.t1 = (Signal(n.stage_layout, name=name) for name in ("t0", "ta", "t1"))
        n.t0_valid, n.ta_valid, n.t1_valid = Signal(), Signal(), Signal()
        n.t0_next = Signal(n.stage_layout)
        n.t1_data_ok = Signal()
        n.t1_read_landing = Signal()
        # ``state == RUN``, a register of its own: it steers the slot read's address.
        n.running = Signal(init=1)
        n.ta_moves, n.t0_loads, n.advance = Signal(), Signal(), Signal()
        # Whether P2's slot is T1's, TA's, T0's, and the one read on the last edge: registers
        # made a clock early (P2's slot reaches every copy of the tag memory's write port).
        n.p2_on_t1, n.p2_on_ta, n.p2_on_t0, n.p2_on_read = Signal(), Signal(), Signal(), Signal()
        # The reads (``_slot_reads``): the slot read on the last edge, and whether the read
        # is T1's slot's again rather than T0's.
        n.reread = Signal()
        n.ra_index = Signal(index_bits)
        n.ra_valid = Signal()
        n.w1 = Signal(n.entry_layout, reset_less=True)
        # Whether W1 holds a word P2 made, and of which slot: its write is on the next edge.
        n.w1_valid, n.w1_index = Signal(), Signal(index_bits)
        # P2 (``_p2``): its op (its line read from ``op_data``, ``_op_intake``), and whether
        # it writes a fill to its slot in any case.
        n.p2 = Signal(n.op_layout)
        n.p2_fields = Signal(data.StructLayout({name: n.op_layout.members[name]
                                                for name in n.stage_fields}), reset_less=True)
        n.p2_valid = Signal()
        n.p2_install = Signal()
        n.retag = Signal()          # P2's op gives its slot another line, or none
        # Ops in the result unit, counted from its input register's valid (``_outputs``).
        n.in_unit = Signal(range(self.QUEUE_DEPTH + 1))
        # No op in the unit or its input register: a register made of their next values, so
        # that no adder is in front of the miss handler's decisions (pipeline rule 3).
        n.unit_empty = Signal(init=1)
        return n

    def _op_intake(self, m, n):
        """The op's way in. An op's line of data does not travel with it (pipeline rule 1): it
        is written to ``op_data`` on every clock at ``arrival_slot``, which moves on when an op
        enters, and the op carries its ``data_slot`` instead, through the stages to T1. The
        line is read there at copies of T1's data slot, one per column group, which load with
        T1, into ``n.p2.data``, a register that P2 takes with T1's op on every edge: P2's adders
        start from a flip-flop, not from a LUT RAM's read. The op arrives over a
        credit link (``op``) into ``n.intake``, a queue of ``INTAKE_DEPTH`` that passes it on
        at once when it is empty. ``op_data`` is cut into the
        column groups of rule 2, each written and read at copies of the two slots of its
        own; a line that comes ``data_lag`` clocks after its op is written at copies of the
        arrival slot that come through a tree of ``data_lag + 1`` levels, so that the op's
        take reaches no column group within a clock."""
        p = self._slice.datapath
        data_groups = column_slices(p.line_bits)
        arrival_slot = Signal(range(self.DATA_SLOTS))
        next_arrival = Signal.like(arrival_slot)
        m.d.comb += next_arrival.eq(arrival_slot + self.op.valid)
        m.d.sync += arrival_slot.eq(next_arrival)
        arrival_copies = register_tree(m, next_arrival, 1 + self._data_lag, len(data_groups),
                                       "arrival_slot", reset=True)
        t1_data_copies = register_copies(
            m, Mux(n.ta_moves, n.ta.data_slot, n.t1.data_slot), len(data_groups), "t1_data_slot")
        p2_data = Signal.like(n.p2.data, reset_less=True)
        m.d.comb += n.p2.data.eq(p2_data)
        for g, bits in enumerate(data_groups):
            m.submodules[f"op_data{g}"] = op_data = Memory(
                shape=bits.stop - bits.start, depth=self.DATA_SLOTS, init=[])
            data_write = op_data.write_port()
            data_read = op_data.read_port(domain="comb")
            m.d.comb += [data_write.en.eq(1), data_write.addr.eq(arrival_copies[g]),
                         data_write.data.eq(self.op.payload.data[bits]),
                         data_read.addr.eq(t1_data_copies[g])]
            m.d.sync += p2_data[bits].eq(data_read.data)
        m.submodules.intake = n.intake = CreditReceiver(n.stage_layout, depth=self.INTAKE_DEPTH,
                                                        bypass=True)
        m.d.comb += [n.intake.sink.valid.eq(self.op.valid),
                     self.op.credit.eq(n.intake.sink.credit),
                     n.intake.sink.payload.eq(Cat(*(self.op.payload[name]
                                                    for name in n.stage_fields), arrival_slot))]

    def _stages(self, m, n):
        """T0, TA and T1, and the pool's own scan after reset (a ``DROP`` of every slot before
        any op, and no op until the last has written its slot: ``settling``). Makes
        ``n.choosers``: the registers the slot read's address is chosen by, with the values
        they take on this edge."""
        params, whole, intake = self._slice, self._params, n.intake
        t0, ta, t1, miss = n.t0, n.ta, n.t1, n.miss
        n.scanning, n.settling = Signal(init=1), Signal(init=1)
        scan_index = Signal(params.slot_index_bits)
        # T0's next op, from the scan or from the intake (one Mux each, continuous
        # assignments: module docstring, Icarus). A DROP reads only its kind and index.
        m.d.comb += [n.t0_next.eq(intake.source.payload),
                     n.t0_next.kind.eq(Mux(n.scanning, SlotOp.DROP, intake.source.payload.kind)),
                     n.t0_next.index.eq(Mux(n.scanning, scan_index, intake.source.payload.index))]
        # No op is taken while the miss handler may inject its eviction into P2: the step is
        # neither DRAIN nor DECIDE, a register of its own.
        may_take = Signal(init=1)
        m.d.sync += may_take.eq((miss.next_step != MissStep.DRAIN)
                                & (miss.next_step != MissStep.DECIDE))
        t1_needs_slot = Signal()
        n.miss_now = n.t1_valid & n.running & t1_needs_slot & ~n.tag_check.hit
        # A hit moves on unless P2 is to take a fill on this clock (``install_due``).
        m.d.comb += [
            n.advance.eq(n.t1_valid & n.running & n.t1_data_ok & ~miss.install_due
                         & (n.tag_check.hit | ~t1_needs_slot)),
            # TA moves into an empty T1 or behind an op that advances or fast-installs; not on
            # an install or an answer, which empty T1 for a clock.
            n.ta_moves.eq(n.ta_valid & (~n.t1_valid | n.advance | miss.fast_install))]
        take = (n.t0_valid & n.credit.room_take & (~n.ta_valid | n.ta_moves) & may_take)
        m.d.comb += n.t0_loads.eq(~n.t0_valid | take)
        t1_on_t0 = t1.index == t0.index
        n.choosers = {
            "running": (n.running, miss.next_step == MissStep.RUN),
            "t1_valid": (n.t1_valid, Mux(n.ta_moves, 1, n.t1_valid & ~(
                n.advance | miss.install | miss.fast_install | miss.dropped))),
            "t1_data_ok": (n.t1_data_ok, Mux(n.ta_moves, n.ra_valid & (n.ra_index == ta.index),
                                             n.t1_read_landing)),
            "t1_read_landing": (n.t1_read_landing, Mux(
                n.ta_moves, Mux(n.reread, t1.index == ta.index, t0.index == ta.index),
                n.reread | t1_on_t0)),
            "t1_slot": (t1.index, Mux(n.ta_moves, ta.index, t1.index)),
            "t0_slot": (t0.index, Mux(n.t0_loads, n.t0_next.index, t0.index)),
        }
        m.d.sync += [register.eq(value) for name, (register, value) in n.choosers.items()
                     if name not in ("t1_slot", "t0_slot")]     # T1 and T0 load below
        m.d.sync += [n.p2_on_t1.eq(Mux(n.ta_moves, t1.index == ta.index, 1)),
                     n.p2_on_ta.eq(Mux(~n.ta_valid | n.ta_moves, t1_on_t0,
                                       t1.index == ta.index)),
                     n.p2_on_t0.eq(Mux(n.t0_loads, t1.index == n.t0_next.index, t1_on_t0)),
                     n.p2_on_read.eq(n.reread | t1_on_t0)]
        m.d.comb += intake.source.ready.eq(n.t0_loads & ~n.scanning & ~n.settling)
        with m.If(n.t0_loads):
            m.d.sync += [t0.eq(n.t0_next),
                         n.t0_valid.eq(n.scanning | (intake.source.valid & ~n.settling))]
        # TA loads T0 whenever it is free, taken or not (its enables then do not wait for
        # the conditions of ``take``).
        with m.If(~n.ta_valid | n.ta_moves):
            m.d.sync += [ta.eq(t0), n.ta_valid.eq(take)]
        with m.If(n.t0_loads & n.scanning):
            m.d.sync += [scan_index.eq(scan_index + 1),
                         n.scanning.eq(scan_index != params.slots - 1)]
        # T1: ``EXPECTED - 1`` and ``- 2`` of its op, in a bit more than a count (all ones,
        # above every count, for 0; and ``- 2`` for 1): P2 compares counts with them, no
        # adder; and where a miss's read starts.
        p = params.datapath
        n.t1_before_last = Signal(p.counter_width + 1)
        n.t1_two_before = Signal(p.counter_width + 1)
        n.t1_first_line = Signal(params.address_bits)
        with m.If(n.ta_moves):
            m.d.sync += [t1.eq(ta), t1_needs_slot.eq(_needs_slot(ta)),
                         n.t1_first_line.eq(FillReader.first_line(whole, ta.tag,
                                                                  ta.kind != SlotOp.READ)),
                         n.t1_before_last.eq(ta.expected - 1), n.t1_two_before.eq(ta.expected - 2)]
        m.d.comb += self.events.hits.eq(n.advance & t1_needs_slot)
        self._prefetch_flags(m, n)
        self._tag_check(m, n)

    def _prefetch_flags(self, m, n):
        """The registers that say whether the ops in TA and T1 are of the prefetch's line, for
        the miss handler."""
        whole, t0, ta, t1, miss = self._params, n.t0, n.ta, n.t1, n.miss
        # Whether T1's op after this edge may be one a prefetch fast-installs: TA's op or
        # T1's is a whole-line contribution of the prefetch's line. It steers P2's word in
        # every column group (through the miss handler's ``fill_next``), so it is made of
        # flags that move with the ops, each set from a compare of the op with the line as it
        # stood a clock before (T0's as TA takes it); whether T1 takes TA's op, and hits,
        # comes later. T1's flag also says whether T1's op is one (``t1_prefetched``): a
        # fast install takes no other.
        def of_prefetch(op):
            return ((op.kind == SlotOp.CONTRIBUTE) & aggregates(op.mode) & op.full_line
                    & same_line(whole, op.tag, miss.prefetch_tag))

        ta_of_prefetch, t1_of_prefetch = Signal(), Signal()
        m.d.sync += [ta_of_prefetch.eq(Mux(~n.ta_valid | n.ta_moves, of_prefetch(t0),
                                           of_prefetch(ta))),
                     t1_of_prefetch.eq(Mux(n.ta_moves, of_prefetch(ta), of_prefetch(t1)))]
        m.d.comb += [miss.t1_prefetched.eq(n.t1_valid & t1_of_prefetch),
                     miss.next_prefetched.eq((n.ta_valid & ta_of_prefetch)
                                             | miss.t1_prefetched)]

        # Whether T1's op is of the prefetch's line, exactly (the miss handler's claim): from
        # the ops and the line after this edge, each compare made before the late selects.
        def of_line_after_edge(op):
            return Mux(miss.prefetch_starting, same_line(whole, op.tag, miss.prefetch.payload.tag),
                       same_line(whole, op.tag, miss.prefetch_tag))

        m.d.sync += miss.t1_of_prefetch_line.eq(Mux(n.ta_moves, of_line_after_edge(ta),
                                                    of_line_after_edge(t1)))

    def _tag_check(self, m, n):
        """The tag check's ports (:class:`hdl.tag_check.TagCheck`)."""
        check = n.tag_check
        m.d.comb += [
            check.t0_tag.eq(n.t0.tag),
            check.t0_next_index.eq(n.choosers["t0_slot"][1]),
            check.ta_tag.eq(n.ta.tag), check.t1_tag.eq(n.t1.tag),
            check.ta_loads.eq(~n.ta_valid | n.ta_moves), check.ta_moves.eq(n.ta_moves),
            check.p2_index.eq(n.p2.index), check.p2_tag.eq(n.p2.tag),
            check.p2_install.eq(n.p2_install), check.retag.eq(n.retag),
            check.p2_on_t0.eq(n.p2_on_t0), check.p2_on_ta.eq(n.p2_on_ta),
            check.p2_on_t1.eq(n.p2_on_t1),
            check.t1_installs.eq(n.miss.fast_install),
            check.t1_on_ta.eq(n.t1.index == n.ta.index),
        ]
        hints = n.hints
        # The hint is registered on its way in, in each slice: one register in the controller
        # cannot reach the look-ups and queues of four slices across the die in one clock.
        m.d.sync += [hints.hint.valid.eq(self.hint.valid),
                     hints.hint.payload.eq(self.hint.payload)]
        m.d.comb += [check.probe_index.eq(hints.probe_index), check.probe_tag.eq(hints.probe_tag),
                     hints.probe_resident.eq(check.probe_resident),
                     hints.t1_valid.eq(n.t1_valid), hints.t1_tag.eq(n.t1.tag)]

    def _slot_reads(self, m, n):
        """The slot reads. The slots are read every clock; ``n.current`` is the word of slot
        ``rd_index`` as it stands: the data read, or P2's word of the slot on one of the three
        clock edges whose writes the read could not see (W1: the last edge, W2: the one
        before, W3: the one before that, whose write, from W1 a clock late, lands on the
        read's own edge). The read's
        address is chosen from ``n.choosers``, and again from copies of them per group of the
        slot RAM's block columns (pipeline rule 2), beside its blocks."""
        p, slots = self._slice.datapath, n.slots
        read_addr = Signal.like(n.ra_index)
        rd_index = Signal.like(n.ra_index)  # the slot read on the edge before: its data is in
        # P2's op on the edge of ra's read was on its slot (compared with both slots the read
        # may be of, in parallel with the choice between them).
        collided = Signal()
        n.w2, n.w3 = (Signal(n.entry_layout, name=name, reset_less=True) for name in ("w2", "w3"))
        m.d.sync += [n.ra_index.eq(read_addr), n.ra_valid.eq(1), rd_index.eq(n.ra_index),
                     n.w3.eq(n.w2), n.w2.eq(n.w1), n.w1.eq(n.update.new)]

        def read_choice(running, t1_valid, t1_data_ok, t1_read_landing, t1_slot, t0_slot):
            """Whether the slot read is T1's slot's again (``reread``), and its address."""
            reread = ~running | (t1_valid & ~t1_data_ok & ~t1_read_landing)
            return reread, Mux(reread, t1_slot, t0_slot)

        master = read_choice(*(register for register, _ in n.choosers.values()))
        m.d.comb += [n.reread.eq(master[0]), read_addr.eq(master[1])]
        group_copies = zip(*(register_copies(m, value, len(slots.write_en), f"read_{name}",
                                             reset=True, init=getattr(register, "init", 0))
                             for name, (register, value) in n.choosers.items()))
        m.d.comb += [slots.read_addr[k].eq(read_choice(*copy)[1])
                     for k, copy in enumerate(group_copies)]
        m.d.sync += collided.eq(n.p2_valid & Mux(n.reread, n.p2_on_t1, n.p2_on_t0))
        # W1's op was on the slot read on this edge: the write of W3 that lands on it.
        collided_w1 = Signal()
        m.d.sync += collided_w1.eq(n.w1_valid & Mux(n.reread, n.w1_index == n.t1.index,
                                                   n.w1_index == n.t0.index))
        # The selects of a slot's word, one copy per column group (pipeline rule 2), and one
        # for the word's other fields.
        copies = p.control_copies + 1
        n.sel_w1 = register_copies(m, n.p2_valid & n.p2_on_read, copies, "sel_w1")
        n.sel_w2 = register_copies(m, collided, copies, "sel_w2")
        n.sel_w3 = register_copies(m, collided_w1, copies, "sel_w3")
        n.rdata = n.entry_layout(slots.read_data)
        w3_or_read = by_group(m, p, n.entry_layout, n.sel_w3, n.w3, n.rdata, "w3_or_read")
        w2_or_read = by_group(m, p, n.entry_layout, n.sel_w2, n.w2, w3_or_read, "w2_or_read")
        n.current = by_group(m, p, n.entry_layout, n.sel_w1, n.w1, w2_or_read, "current")

    def _p2(self, m, n):
        """P2's registers: the op of T1 with its slot's word (or the op with its fill, or
        the eviction of T1's slot's occupant); the word starts from W1 if P2's op was on the
        slot on the edge P2 took it (``n.fwd1``, ``n.word``). Its retag, its CLEAR's range
        check, and the slot RAM's write of P2's word, on the edge W1 takes it."""
        p, t1, miss, slots = self._slice.datapath, n.t1, n.miss, n.slots
        copies = p.control_copies + 1
        p2_word = Signal(n.entry_layout, reset_less=True)
        n.p2_word = p2_word
        n.fwd1 = register_copies(m, n.p2_valid & n.p2_on_t1, copies, "fwd1")
        n.word = by_group(m, p, n.entry_layout, n.fwd1, n.w1, p2_word, "word")
        # P2 takes a fill only in INSTALL, and nothing else then: the word it takes is the
        # filled one throughout INSTALL, chosen by copies of the miss handler's
        # ``fill_next``.
        n.installing = register_copies(m, miss.fill_next, copies, "installing")
        n.next_word = by_group(m, p, n.entry_layout, n.installing, miss.filled, n.current,
                               "next_word")
        # A CLEAR's range check, made in T1 for both words P2 may start from (pipeline rule
        # 3: a carry chain over the address stays out of P2's write enable).
        covered_read, covered_w1 = Signal(), Signal()
        n.last_taken = Signal()     # the count of the word P2 takes is its op's EXPECTED - 1

        def in_clear_range(entry):
            return (entry.tag >= t1.tag) & (entry.tag < self.clear_high)

        # P2's word is written to its slot from W1, on the edge after W1 takes it, with W1's
        # valid and slot in copies of their own, one per group of the slot RAM's block
        # columns (hdl.bram): a read made on that edge takes the word from W3 instead
        # (``_slot_reads``).
        p2_next = n.advance | miss.evict | miss.install | miss.fast_install
        ram_copies = len(slots.write_en)
        m.d.comb += [
            slots.write_data.eq(n.w1),
            slots.write_en.eq(Cat(register_copies(m, n.p2_valid, ram_copies, "slot_write_en",
                                                  reset=True))),
            *(slots.write_addr[k].eq(copy) for k, copy in enumerate(
                register_copies(m, n.p2.index, ram_copies, "slot_write_addr")))]
        m.d.sync += [
            n.w1_valid.eq(n.p2_valid), n.w1_index.eq(n.p2.index),
            n.p2_valid.eq(p2_next),
            *(n.p2_fields[name].eq(t1[name]) for name in n.stage_fields),
            n.p2_fields.kind.eq(Mux(miss.evict, SlotOp.EVICT, t1.kind)),
            p2_word.eq(n.next_word), n.p2_install.eq(miss.install | miss.fast_install),
            # P2 takes a CLEAR only while not ``installing``: its word is ``current``.
            covered_read.eq(_of_current(n, in_clear_range)),
            covered_w1.eq(Mux(n.fwd1[-1], in_clear_range(n.w1), in_clear_range(p2_word))),
            n.last_taken.eq(_of_next_word(n, lambda word: word.state.n == n.t1_before_last)),
        ]
        m.d.comb += [n.p2[name].eq(n.p2_fields[name]) for name in n.stage_fields]
        # P2 gives its slot another line (an install) or none (an eviction, a drop, a clear
        # of a line in its range: a slot already empty stays so).
        n.covered = Signal()
        m.d.comb += [n.covered.eq(Mux(n.fwd1[-1], covered_w1, covered_read)),
                     n.retag.eq(n.p2_valid & (n.p2_install | (n.p2.kind == SlotOp.EVICT)
                                              | (n.p2.kind == SlotOp.DROP)
                                              | ((n.p2.kind == SlotOp.CLEAR) & n.covered)))]

    def _p2_decisions(self, m, n):
        """P2's decision to accept a contribution, made of registers (pipeline rule 3), one
        copy per column group to steer its lanes (rule 2) and one for the rest of its word;
        the fields the result unit's decisions are made of, registered once per control copy
        of the unit; and P2's op into :class:`hdl.slot_update.SlotUpdate`."""
        p, t1, miss, update = self._slice.datapath, n.t1, n.miss, n.update
        groups = p.control_copies
        copies = groups + 1
        may_add = register_copies(
            m, ((Mux(miss.evict, SlotOp.EVICT, t1.kind) == SlotOp.CONTRIBUTE)
                & aggregates(t1.mode) & t1.full_line), copies, "may_add")
        ternary = register_copies(m, t1.mode == Mode.GTERNARY, groups, "ternary")
        full_taken = register_copies(
            m, _of_next_word(n, lambda word: word.state.n == p.capacity), copies, "full_taken")
        # What P2's word tells the op behind it, made without P2's adder (``update.after``).
        full_w1 = register_copies(m, update.after.full, copies, "full_w1")
        full = [Mux(fwd, at_w1, taken) for fwd, at_w1, taken in zip(n.fwd1, full_w1,
                                                                     full_taken)]
        last_w1 = Signal()
        m.d.sync += last_w1.eq(update.after.last)
        adds = [add & ~at_capacity for add, at_capacity in zip(may_add[:groups], full)]
        # Each control copy of the unit has registers of its own with the fields its
        # decisions are made of, made in its column group from the group's copies of P2's
        # selects: a value made in one place would reach every copy by one net across the line.
        scans = register_copies(m, miss.evict | is_scan(t1.kind), groups, "p2_scan")
        for k, (into, fwd, add, scan) in enumerate(zip(n.unit.decision_inputs, n.fwd1, adds,
                                                       scans)):
            decision = Signal(decision_inputs_layout(p), name=f"unit_decision_{k}",
                              reset_less=True)
            mode, threshold = unit_settings(scan, n.p2, Mux(fwd, n.w1.mode, n.p2_word.mode),
                                            Mux(fwd, n.w1.threshold, n.p2_word.threshold))
            # The unit's request has every byte enable.
            fields = decision_inputs(p, n=Mux(fwd, n.w1.state.n, n.p2_word.state.n), mode=mode,
                                     threshold=threshold, contribute=add, full_line=1)
            m.d.sync += [decision[name].eq(value) for name, value in fields.items()]
            m.d.comb += into.eq(decision)
        m.d.comb += [
            update.op.eq(n.p2), update.valid.eq(n.p2_valid), update.word.eq(n.word),
            update.may_add.eq(may_add[-1]), update.full.eq(full[-1]),
            update.last.eq(Mux(n.fwd1[-1], last_w1, n.last_taken)),
            update.covered.eq(n.covered),
            update.before_last.eq(n.t1_before_last), update.two_before.eq(n.t1_two_before),
            update.adds.eq(Cat(adds)), update.ternary.eq(Cat(ternary)),
            *(self.events[name].eq(update.events[name]) for name in UPDATE_EVENTS),
        ]

    def _outputs(self, m, n):
        """The result unit's output into the result queue and the write-backs, and the room
        in both that an op takes as it enters (:class:`hdl.output_credit.OutputCredit`)."""
        p, unit, credit, miss = self._slice.datapath, n.unit, n.credit, n.miss
        in_flight = n.in_unit + n.queued
        m.d.comb += [credit.results_held.eq(self.results_held),
                     credit.write_backs_held.eq(self.write_backs_held),
                     credit.in_pipe.eq(n.ta_valid + n.t1_valid + n.p2_valid + in_flight)]
        side = side_layout(self._slice, self._user_width)(unit.response.payload.user)
        response = unit.response
        result = Signal(slot_result_layout(self._slice, self._user_width))
        m.d.comb += [
            result.user.eq(side.user), result.line.eq(response.payload.line),
            result.accepted.eq(side.accepted), result.reason.eq(side.reason),
            result.invalid.eq(side.invalid),
            self.result.valid.eq((response.valid & side.result) | miss.answering),
            self.write_back.payload.eq(Cat(
                side.address, response.payload.line,
                planes_of_state(p, response.payload.state)[:p.counter_width * p.line_bits],
                response.payload.state.n)),
            self.write_back.valid.eq(response.valid & side.write_back),
            self.events.write_backs.eq(response.valid & side.write_back),
        ]
        next_in_unit = Signal.like(n.in_unit)
        m.d.comb += next_in_unit.eq(n.in_unit + n.queued - response.valid)
        m.d.sync += [n.in_unit.eq(next_in_unit),
                     n.unit_empty.eq((next_in_unit == 0) & ~n.unit_input_valid)]
        # The unit's valid chooses the queue's data in the queue's column groups, each by a
        # copy of its own (rule 2), the last copy the groups past the copies'.
        valid_copies = unit.response_valid_copies
        result_bits, answer_bits = Value.cast(result), Value.cast(miss.answer)
        m.d.comb += self.result.payload.eq(Cat(
            Mux(valid_copies[min(k, len(valid_copies) - 1)], result_bits[bits], answer_bits[bits])
            for k, bits in enumerate(column_slices(len(result_bits)))))

    def _miss(self, m, n):
        """The miss handler's ports (:class:`hdl.miss_handler.MissHandler`), and ``idle``."""
        miss, t1 = n.miss, n.t1
        wiring.connect(m, miss.fill_read, wiring.flipped(self.fill_read))
        wiring.connect(m, wiring.flipped(self.fill_data), miss.fill_data)
        m.d.comb += [
            *(miss.op[name].eq(t1[name]) for name in ("kind", "tag", "mode", "threshold",
                                                        "user")),
            miss.op.first.eq(n.t1_first_line),
            miss.miss.eq(n.miss_now), miss.data_ok.eq(n.t1_data_ok),
            # Whether T1's slot holds a line: the tag check's register, equal to the slot
            # word's valid bit once the word is in, so that no decision that moves the stages
            # waits for the slot's block RAM (read through the forwarding selects).
            miss.occupant_valid.eq(n.tag_check.occupied), miss.p2_valid.eq(n.p2_valid),
            miss.unit_empty.eq(n.unit_empty), miss.room.eq(n.credit.room),
            # P2 takes a line out of its slot: a retag that installs none, of a slot that
            # held one (from registers and the forwarding select, as ``retag``).
            miss.departure.eq(n.retag & ~n.p2_install & n.word.valid),
            miss.writes_pending.eq(self.writes_pending),
            miss.host_writes_pending.eq(self.host_writes_pending),
            miss.results_held.eq(self.results_held),
            miss.t1_hit.eq(n.t1_valid & n.tag_check.hit), miss.p2_on_t1.eq(n.p2_on_t1),
            miss.hold_prefetch.eq(self.hold_prefetch),
            *(self.events[name].eq(miss.events[name]) for name in MISS_EVENTS),
        ]
        wiring.connect(m, n.hints.candidate, miss.prefetch)
        with m.If(~n.scanning & ~n.t0_valid & ~n.ta_valid & ~n.t1_valid & ~n.p2_valid):
            m.d.sync += n.settling.eq(0)
        m.d.comb += self.idle.eq(~n.settling & ~n.intake.source.valid & ~n.t0_valid & ~n.ta_valid
                                 & ~n.t1_valid & ~n.p2_valid & n.unit_empty & n.running
                                 & ~self.writes_pending & ~miss.prefetch_busy)


def _needs_slot(op):
    """Whether ``op`` needs its line in its slot: a whole-line contribution in an aggregating
    mode, or a result read."""
    return (((op.kind == SlotOp.CONTRIBUTE) & aggregates(op.mode) & op.full_line)
            | (op.kind == SlotOp.READ))


class SlotPool(wiring.Component):
    """On-chip accumulator slots with a one-clock read-modify-write (see the module docstring),
    in slices of the line: a :class:`PoolSlice` per ``slice_bits`` line bits, side by side.

    Each slice keeps its lanes of every slot and a whole copy of the pool's control, so that
    every decision of the pool is made beside the block RAM columns it steers. The slices take
    the same ops (each its columns of the line), the same fill lines and handshakes, so they
    decide alike on every clock: slice 0 speaks for all of them (``op.ready``, the valids, the
    fill reads, ``idle``, the events). The lines of the results and write-backs are the
    slices' columns side by side; a G-Ternary line is invalid if a slice's columns are. The
    results wait in a queue of ``QUEUE_DEPTH`` cut into a piece beside each slice
    (:meth:`_result_queue`, read without a clock: a head register as wide as a line would
    be enabled by the taker's ``ready``, rule 1), each piece written by its own slice. The
    ports and their timing are a slice's.

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
    data_lag : int
        Clocks from an op's take to its ``data`` on ``op``, from 0 to ``DATA_LAG``: the line
        waits in a memory until it is read for P2, at least ``DATA_LAG`` clocks after the
        take, so a late line costs no clock.

    Members
    -------
    op : In(stream.Signature(slot_op_layout(params, user_width)))
        ``ready`` (a register) while the pool holds a credit for it: the ops taken wait in
        each slice's intake, ``PoolSlice.INTAKE_DEPTH`` of them, which they reach
        ``PoolSlice.OP_RELAY`` clocks after the take, so that the caller's decision to send
        reaches no slice within a clock; an op may be taken on every clock while the pool
        keeps up. Its ``data`` comes ``data_lag`` clocks after the take.
    result : Out(stream.Signature(slot_result_layout(params, user_width)))
        One per ``CONTRIBUTE`` and ``READ``, in op order.
    write_back : Out(stream.Signature(write_back_layout(params), always_ready=True))
        Taken on every clock it is valid: into the memory port's W buffer
        (:class:`hdl.axi.AxiMemoryPort`).
    write_back_copies : Out(slices)
        ``write_back.valid`` again, as each slice makes it: copy ``k`` beside slice ``k``'s
        columns of the lines (:meth:`slice_of`), for a taker that steers those columns by a
        copy of its own (pipeline rule 2).
    write_backs_held : In(range(WRITE_BACKS + 1))
        Write-backs the memory port holds, at most (``AxiMemoryPort.bursts_held``: a
        write-back's room comes back ``HELD_LAG`` clocks after its last move): the pool makes
        one only while it has room for it there, ``WRITE_BACKS`` in all.
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
    hint : In(stream.Signature(hint_layout(params), always_ready=True))
        A whole-line contribution on its way, whose line the pool may read ahead
        (*Prefetch*); any hint is safe, a wrong one costs a read.
    hold_prefetch : In(1)
        High while memory may change under a prefetch other than by the pool's write-backs
        and host writes (the controller's scan tasks: a clear's zero writes), from a clock
        before it may change: it reaches each slice through a register.
    clear_high : In(address_bits + 1)
        The end of the range of the ``CLEAR`` ops in the pool (``[tag, clear_high)``), the
        same for all of them: held from the take of a ``CLEAR`` until ``idle``. It reaches each
        slice through a register, so an op's fields need no room for it.
    idle : Out(1)
        No op in the pool, none of its outputs waiting, no write-back pending: a scan or a
        register command may start, and device memory holds every write-back made so far.
    events : Out(slot_event_layout())
        Slice 0's, but ``invalid``: whether any slice's lanes held an invalid code, a clock
        after the others, from a register beside each slice (it is only counted).
    """

    #: A slice's (:class:`PoolSlice`) and the relay's to it.
    HIT_LATENCY = PoolSlice.OP_RELAY + PoolSlice.HIT_LATENCY

    #: Entries of the result queue (a slice's).
    QUEUE_DEPTH = PoolSlice.QUEUE_DEPTH

    #: Write-backs the pool may have in the memory port at once (a slice's).
    WRITE_BACKS = PoolSlice.WRITE_BACKS

    #: The most clocks ``op``'s line may come after its take: a slice's, and the relay's.
    DATA_LAG = PoolSlice.OP_RELAY + PoolSlice.DATA_LAG

    def __init__(self, params=ControllerParams(), *, user_width=1, primitives=None,
                 slice_bits=POOL_SLICE_BITS, data_lag=0):
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
        self._data_lag = _checked_data_lag(data_lag, self.DATA_LAG)
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
            "write_back_copies": Out(self.slices),
            "write_backs_held": In(range(self.WRITE_BACKS + 1)),
            "fill_read": Out(stream.Signature(fill_command_layout(params))),
            "fill_data": In(pool_fill_layout(params, self.slices)),
            "writes_pending": In(self.slices),
            "host_writes_pending": In(self.slices),
            "hint": In(stream.Signature(hint_layout(params), always_ready=True)),
            "hold_prefetch": In(1),
            "clear_high": In(params.address_bits + 1),
            "idle": Out(1),
            "events": Out(slot_event_layout()),
        })

    @property
    def slices(self):
        """How many :class:`PoolSlice` the line is cut into."""
        return len(self._columns)

    def slice_of(self, bit):
        """The slice whose columns hold bit ``bit`` of a line (of the result line, of each
        plane, and of each line of an op's data)."""
        if not isinstance(bit, int) or not 0 <= bit < self._params.datapath.line_bits:
            raise ValueError(f"bit must be a line bit, from 0 to "
                             f"{self._params.datapath.line_bits - 1}, not {bit!r}")
        return bit // len(self._columns[0])

    def elaborate(self, platform):
        m = Module()
        params = self._params
        p = params.datapath
        relay = PoolSlice.OP_RELAY
        slices = []
        for k, columns in enumerate(self._columns):
            m.submodules[f"slice{k}"] = pool = PoolSlice(
                params, columns=columns, user_width=self._user_width,
                primitives=self._primitives, data_lag=max(0, self._data_lag - relay))
            bits = slice(columns.start, columns.stop)
            m.d.comb += [
                pool.write_backs_held.eq(self.write_backs_held),
                pool.fill_read.ready.eq(self.fill_read.ready),
                pool.fill_data.valid.eq(self.fill_data.valid[k]),
                pool.fill_data.payload.data.eq(self.fill_data.data[bits]),
                pool.fill_data.payload.n.eq(self.fill_data.data[:p.counter_width]),
                pool.fill_data.payload.error.eq(self.fill_data.error[k]),
                pool.writes_pending.eq(self.writes_pending[k]),
                pool.host_writes_pending.eq(self.host_writes_pending[k]),
                pool.hint.valid.eq(self.hint.valid), pool.hint.payload.eq(self.hint.payload),
            ]
            # Through a register beside each slice: the range's end is held while a clear
            # runs, and the hold on prefetches comes clocks before memory changes under one.
            m.d.sync += [pool.clear_high.eq(self.clear_high),
                         pool.hold_prefetch.eq(self.hold_prefetch)]
            slices.append(pool)
        self._relay_ops(m, slices)
        first = slices[0]
        self._result_queue(m, slices)
        write_back = self.write_back.payload
        width = len(self._columns[0])                   # line bits per slice
        invalid = [Signal(name=f"invalid{k}") for k in range(len(slices))]
        m.d.sync += [flag.eq(pool.events.invalid) for flag, pool in zip(invalid, slices)]

        def side_by_side(stream_name, field, line):
            """Line ``line`` of ``field`` of every slice's ``stream_name``, side by side."""
            return Cat(getattr(pool, stream_name).payload[field][line * width:][:width]
                       for pool in slices)

        # An op taken is on the slices' intakes the clock after, where their ``idle`` sees it:
        # a longer relay would hold ops no slice's ``idle`` sees.
        assert relay == 1
        m.d.comb += [
            self.idle.eq(first.idle),
            self.events.eq(first.events),
            self.events.invalid.eq(Cat(invalid).any()),
            self.fill_read.valid.eq(first.fill_read.valid),
            self.fill_read.payload.eq(first.fill_read.payload),
            self.write_back.valid.eq(first.write_back.valid),
            self.write_back_copies.eq(Cat(pool.write_back.valid for pool in slices)),
            write_back.address.eq(first.write_back.payload.address),
            # The result line and the planes, then the n line, rebuilt from slice 0's count.
            write_back.lines.eq(Cat(*(side_by_side("write_back", "lines", line)
                                      for line in range(1 + p.counter_width)),
                                    n_line(p, first.write_back.payload.n))),
        ]
        return m

    def _relay_ops(self, m, slices):
        """The ops' way to the slices. ``op`` is taken while the pool holds a credit (a
        :class:`hdl.credit.CreditSender`, one credit per entry of a slice's intake: slice 0's
        intake returns them, and all slices take and free theirs alike), and relayed to each
        slice through registers of its own (a :class:`hdl.credit.CreditRelay` per slice,
        ``PoolSlice.OP_RELAY`` stages), without its line. The line reaches each slice
        ``data_lag`` clocks after the take, so ``data_lag - OP_RELAY`` clocks after the op (a
        line that comes sooner waits in registers)."""
        relay = PoolSlice.OP_RELAY
        layout = slot_op_layout(self._params, self._user_width)
        fields = data.StructLayout({name: layout[name].shape for name in layout.members
                                    if name != "data"})
        m.submodules.op_credits = sender = CreditSender(fields, credits=PoolSlice.INTAKE_DEPTH)
        m.d.comb += [sender.sink.valid.eq(self.op.valid), self.op.ready.eq(sender.sink.ready),
                     *(sender.sink.payload[name].eq(self.op.payload[name])
                       for name in fields.members)]
        line_wait = max(0, relay - self._data_lag)
        for k, (pool, columns) in enumerate(zip(slices, self._columns)):
            m.submodules[f"op_relay{k}"] = op_relay = CreditRelay(fields, stages=relay)
            m.d.comb += [
                op_relay.sink.valid.eq(sender.source.valid),
                op_relay.sink.payload.eq(sender.source.payload),
                pool.op.valid.eq(op_relay.source.valid),
                op_relay.source.credit.eq(pool.op.credit),
                *(pool.op.payload[name].eq(op_relay.source.payload[name])
                  for name in fields.members),
                pool.op.payload.data.eq(delayed(
                    m, self.op.payload.data[columns.start:columns.stop], line_wait,
                    f"data{k}_late")),
            ]
            if k == 0:
                m.d.comb += sender.source.credit.eq(op_relay.sink.credit)

    def _result_queue(self, m, slices):
        """The result queue, a piece beside each slice (``results<k>``, ``QUEUE_DEPTH``
        entries): slice ``k``'s columns of the line and its ``invalid`` flag, and in slice 0's
        piece the other fields. Each slice writes its own piece, by its own ``result.valid``,
        and steers by that piece's level (``results_held``), so that no slice's decision
        reaches another's columns; the taker's ``ready`` moves every piece's pointers. The
        pieces are written and read alike, so they hold the same results."""
        layout = self.result.payload.shape()
        others = data.StructLayout({name: layout[name].shape
                                    for name in ("user", "accepted", "reason", "error")})
        width = len(self._columns[0])
        pieces, heads = [], []
        for k, pool in enumerate(slices):
            piece_layout = data.StructLayout({"line": width, "invalid": 1,
                                              **({"others": others} if k == 0 else {})})
            lag = PoolSlice.RESULT_WRITE_LAG
            m.submodules[f"results{k}"] = piece = EagerFIFO(
                shape=piece_layout, depth=self.QUEUE_DEPTH, write_lag=(0, lag))
            result, entry = pool.result.payload, Signal(piece_layout)
            m.d.comb += [piece.w_en.eq(pool.result.valid), piece.r_en.eq(self.result.ready),
                         pool.results_held.eq(piece.level),
                         entry.line.eq(result.line), entry.invalid.eq(result.invalid)]
            if k == 0:
                m.d.comb += [entry.others[name].eq(result[name]) for name in others.members]
            # The entry, ``lag`` clocks after the write.
            m.d.comb += piece.w_data.eq(delayed(m, entry, lag, f"result{k}_late"))
            pieces.append(piece)
            heads.append(piece.r_stream.payload)
        m.d.comb += [self.result.valid.eq(pieces[0].r_rdy),
                     *(self.result.payload[name].eq(heads[0].others[name])
                       for name in others.members),
                     self.result.payload.line.eq(Cat(head.line for head in heads)),
                     self.result.payload.invalid.eq(Cat(head.invalid for head in heads).any())]
