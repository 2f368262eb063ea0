"""The controller's work on the slots between requests: flush, clear and evict scans
(``docs/controller.md``, "Hazards")."""

import types

from amaranth import Module, Mux, ResetSignal, Signal
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from spec.params import aggregates

from .axi import write_line_layout
from .control import region_layout
from .pipeline import out_of_reset
from .slot_ops import SlotOp

__all__ = ["Task", "PHASES", "scan_layout", "ScanTasks"]


class Task(enum.Enum, shape=2):
    """Work on the slots that runs between requests."""
    FLUSH = 0         # CTRL.FLUSH, or before a raw read: write every dirty slot back
    EVICT = 1         # before a raw write: write every dirty slot back and empty them all
    CLEAR = 2         # CTRL.CLEAR: empty the region's slots, zero its accumulators


#: The phases of a task: none, the scan of every slot, waiting for the pool to settle, a
#: clear's zero writes, waiting for their responses.
PHASES = ("idle", "scan", "settle", "zero", "zero_wait")


def scan_layout(params):
    """A scan's op for the pool, while ``valid``: ``kind`` of slot ``index`` (a clear's range
    ``[low, high)``)."""
    return data.StructLayout({"valid": 1, "kind": SlotOp, "index": params.slot_index_bits,
                              "low": params.address_bits, "high": params.address_bits + 1})


class ScanTasks(wiring.Component):
    """``CTRL.FLUSH``, ``CTRL.CLEAR``, the scan a raw access of accumulator memory asks for,
    and the eviction of every slot after an APPLY has copied its table (a slot may hold a line
    of a region the new table drops or moves, whose old accumulators are now ordinary memory).

    Each task sends one scan op per slot to the pool and waits until the pool is idle
    (``pool_idle``: every write-back acknowledged); a clear then writes zeros over the region's
    accumulators, a line per write (``zero_write``, during ``zero_phase``; the memory port
    takes them a clock into it), and waits until no write is pending. A request for a task
    waits while another runs; a clear of a region that is not enabled and aggregating ends at
    once.

    Parameters
    ----------
    params : ControllerParams
    region_bits : int
        Width of ``CTRL.CLEAR_REGION``.
    id_bits : int
        Width of the AXI IDs; the zero writes go out with ``zero_id``.
    zero_id : int

    Members
    -------
    flush_start, clear_start : In(1)
        One-clock requests from :class:`hdl.control.ControlRegisters`.
    clear_region : In(region_bits)
    table_ready : In(1)
        Low while an APPLY copies the staged regions into ``regions``; its fall asks for an
        eviction of every slot, which starts once it is high again.
    regions : In(ArrayLayout(region_layout(params), params.regions))
    flush_busy, clear_busy, flush_done, clear_done : Out(1)
        To :class:`hdl.control.ControlRegisters`.
    raw_start : In(1)
        Dispatch's raw access asks for a scan of kind ``raw_task`` (FLUSH or EVICT).
    raw_task : In(Task)
    pool_ready : In(1)
        The pool takes the scan's op on this clock.
    pool_idle : In(1)
        The pool is idle, from a register.
    pool_accepted, pool_fills : In(1)
        The pool's events: it made a slot dirty, or gave a slot a line.
    writes_pending : In(1)
        Writes to device memory not yet acknowledged.
    any_dirty, any_resident : Out(1)
        The slots may hold lines memory lacks, or lines at all: set as the pool makes them,
        cleared as a scan that removes them starts.
    blocked : Out(1)
        A register: a task runs or waits to, or the reset was high on the last edge; dispatch
        holds the next request meanwhile.
    scan : Out(scan_layout(params))
    zero_phase : Out(1)
    zero_write : Out(stream.Signature(write_line_layout(...)))
        A clear's zero writes, one line each: a line of zeros, every byte enabled, on every
        clock (as late after a take as :class:`hdl.axi.AxiMemoryPort` reads them).
    """

    def __init__(self, params, *, region_bits, id_bits, zero_id):
        self._params = params
        self._zero_id = zero_id
        super().__init__({
            "flush_start": In(1), "clear_start": In(1), "clear_region": In(region_bits),
            "table_ready": In(1),
            "regions": In(data.ArrayLayout(region_layout(params), params.regions)),
            "flush_busy": Out(1), "clear_busy": Out(1),
            "flush_done": Out(1), "clear_done": Out(1),
            "raw_start": In(1), "raw_task": In(Task),
            "pool_ready": In(1), "pool_idle": In(1),
            "pool_accepted": In(1), "pool_fills": In(1),
            "writes_pending": In(1),
            "any_dirty": Out(1), "any_resident": Out(1),
            "blocked": Out(1),
            "scan": Out(scan_layout(params)),
            "zero_phase": Out(1),
            "zero_write": Out(stream.Signature(write_line_layout(
                address_bits=params.address_bits, id_bits=id_bits,
                line_bits=params.datapath.line_bits))),
        })

    def elaborate(self, platform):
        m = Module()
        # The tasks waiting to start, and the phase of the one running, one-hot: each phase is
        # a flip-flop of its own, so a test of it (the scan's valid steers the pool's op
        # fields, the zero writes' valid the write command's) is a register, not a compare.
        # Both are set from their values after the edge (``*_next``), so that ``blocked`` is
        # a register too.
        pending = Signal(data.StructLayout({"flush": 1, "clear": 1, "evict": 1}))
        phase = Signal(data.StructLayout({name: 1 for name in PHASES}), init={"idle": 1})
        pending_next = Signal.like(pending)
        phase_next = Signal.like(phase)
        m.d.comb += [pending_next.eq(pending), phase_next.eq(phase)]
        blocked = Signal(init=1, reset_less=True)
        m.d.sync += [pending.eq(pending_next), phase.eq(phase_next),
                     blocked.eq(ResetSignal() | ~phase_next.idle | pending_next.as_value().any())]
        m.d.comb += self.blocked.eq(blocked)
        with m.If(self.pool_accepted):
            m.d.sync += self.any_dirty.eq(1)
        with m.If(self.pool_fills):
            m.d.sync += self.any_resident.eq(1)
        task = Signal(Task)
        command = Signal()                   # a register command (not a raw access's scan)
        running = ~phase.idle
        m.d.comb += [
            self.flush_busy.eq(pending.flush | (running & command & (task == Task.FLUSH))),
            self.clear_busy.eq(pending.clear | (running & command & (task == Task.CLEAR))),
        ]
        clear = self._requests(m, pending_next)
        steps = _Steps(self, m, phase_next, task, command)
        m.d.comb += [self.scan.valid.eq(phase.scan), self.zero_phase.eq(phase.zero)]
        with m.If(out_of_reset(m, "tasks_in_reset")):  # see the hdl.slots docstring, Icarus
            self._start(m, steps, phase, pending, pending_next, clear)
            self._phases(m, steps, phase)
        return m

    def _requests(self, m, pending_next):
        """The requests for tasks; returns the clear's: whether its region was named on the
        last edge (``fresh``), and whether it is enabled and aggregating (``wanted``), with
        its accumulators' range (``low``, ``high``), as the applied table stands."""
        params = self._params
        region_number = Signal.like(self.clear_region)
        clear_fresh = Signal()                  # region_number was loaded on the last edge
        m.d.sync += clear_fresh.eq(self.clear_start)
        with m.If(self.flush_start):
            m.d.comb += pending_next.flush.eq(1)
        with m.If(self.clear_start):
            m.d.comb += pending_next.clear.eq(1)
            m.d.sync += region_number.eq(self.clear_region)
        table_was_ready = Signal(init=1)
        m.d.sync += table_was_ready.eq(self.table_ready)
        with m.If(table_was_ready & ~self.table_ready):
            m.d.comb += pending_next.evict.eq(1)
        # In registers a clock behind ``region_number`` (``clear_fresh`` holds the clear that
        # long): the mux over the regions stays out of the task's start, which steers every
        # phase register.
        region = self.regions[region_number[:max(1, (params.regions - 1).bit_length())]]
        clear = types.SimpleNamespace(fresh=clear_fresh, wanted=Signal(),
                                      low=Signal.like(region.acc),
                                      high=Signal.like(region.acc_end))
        m.d.sync += [clear.wanted.eq((region_number < params.regions) & region.enable
                                     & aggregates(region.mode)),
                     clear.low.eq(region.acc), clear.high.eq(region.acc_end)]
        return clear

    def _start(self, m, steps, phase, pending, pending_next, clear):
        """In the idle phase: the next task, a clear first, then a flush, an eviction after
        an APPLY, and a raw access's scan."""
        with m.If(phase.idle):
            with m.If(pending.clear):
                with m.If(~clear.fresh):
                    m.d.comb += pending_next.clear.eq(0)
                    m.d.sync += [steps.low.eq(clear.low), steps.high.eq(clear.high)]
                    with m.If(clear.wanted):
                        steps.start(Task.CLEAR, 1)
                    with m.Else():
                        m.d.comb += self.clear_done.eq(1)
            with m.Elif(pending.flush):
                m.d.comb += pending_next.flush.eq(0)
                steps.start(Task.FLUSH, 1)
            with m.Elif(pending.evict & self.table_ready):
                m.d.comb += pending_next.evict.eq(0)
                steps.start(Task.EVICT, 0)
            with m.Elif(self.raw_start):
                with m.If(self.raw_task == Task.EVICT):
                    steps.start(Task.EVICT, 0)
                with m.Else():
                    steps.start(Task.FLUSH, 0)

    def _phases(self, m, steps, phase):
        """The phases after the start, one block each (they are one-hot: no priority chain
        between them)."""
        params = self._params
        zero_address = Signal(params.address_bits + 1)
        zero_left = Signal()                 # zero_address < high (a register: it is a valid)
        zero = self.zero_write
        with m.If(phase.scan):
            with m.If(self.pool_ready):
                m.d.sync += steps.index.eq(steps.index + 1)
                with m.If(steps.index == params.slots - 1):
                    steps.enter("settle")
        with m.If(phase.settle):
            with m.If(self.pool_idle):
                with m.If(steps.task == Task.CLEAR):
                    steps.enter("zero")
                    m.d.sync += [zero_address.eq(steps.low), zero_left.eq(steps.low < steps.high)]
                with m.Else():
                    steps.finish()
        # The line and its byte enables are the same on every clock, so they are there
        # ``AxiMemoryPort.LINE_LAG`` clocks after any take.
        m.d.comb += [zero.payload.strobe.eq(-1), zero.payload.line.eq(0)]
        with m.If(phase.zero):
            m.d.comb += [zero.valid.eq(zero_left), zero.payload.id.eq(self._zero_id),
                         zero.payload.address.eq(zero_address)]
            following = zero_address + params.datapath.line_bytes
            with m.If(zero.valid & zero.ready):
                m.d.sync += [zero_address.eq(following), zero_left.eq(following < steps.high)]
            with m.If(~zero_left):
                steps.enter("zero_wait")
        with m.If(phase.zero_wait):
            with m.If(~self.writes_pending):
                steps.finish()


class _Steps:
    """What a task's phases do, for :class:`ScanTasks`: enter a phase, start a task, finish
    it; and the scan's registers (the slot, the clear's range), which drive ``tasks.scan``."""

    def __init__(self, tasks, m, phase_next, task, command):
        params = tasks._params
        self.tasks, self.m, self.phase_next = tasks, m, phase_next
        self.task, self.command = task, command
        self.index = Signal(params.slot_index_bits)
        self.low = Signal(params.address_bits)
        self.high = Signal(params.address_bits + 1)
        scan = tasks.scan
        m.d.comb += [scan.index.eq(self.index), scan.low.eq(self.low), scan.high.eq(self.high),
                     scan.kind.eq(Mux(task == Task.CLEAR, SlotOp.CLEAR,
                                      Mux(task == Task.EVICT, SlotOp.EVICT, SlotOp.FLUSH)))]

    def enter(self, name):
        self.m.d.comb += [self.phase_next[other].eq(other == name) for other in PHASES]

    def start(self, kind, is_command):
        self.enter("scan")
        self.m.d.sync += [self.task.eq(kind), self.command.eq(is_command), self.index.eq(0)]
        if kind != Task.CLEAR:
            self.m.d.sync += self.tasks.any_dirty.eq(0)
        if kind == Task.EVICT:
            self.m.d.sync += self.tasks.any_resident.eq(0)

    def finish(self):
        self.enter("idle")
        with self.m.If(self.command):
            self.m.d.comb += [self.tasks.flush_done.eq(self.task == Task.FLUSH),
                              self.tasks.clear_done.eq(self.task == Task.CLEAR)]
