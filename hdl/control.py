"""The controller's control registers: the register block plus what the registers do.

- ``CTRL.APPLY`` validates the staged region registers, one region pair at a time, in the
  order of :func:`golden.config.validate`, then copies them into the applied table one region
  at a time (:attr:`ControlRegisters.apply_cycles` clocks in all, ``STATUS.APPLY_BUSY``
  meanwhile; writes to the region registers are ignored and flagged ``LOCKED_WRITE`` while it
  runs, and ``table_ready`` is low while the copy runs). On the first fault
  ``STATUS.CFG_ERROR`` is set, ``CFG_ERROR`` says which region and why, ``CNT_CFG_ERRORS``
  counts it, and the previous table stays in force.
- Event strobes from the datapath side set the sticky ``STATUS`` flags and count the
  ``CNT_*`` counters.
- ``CTRL.CLEAR`` starts the clear engine on ``CTRL.CLEAR_REGION``; ``CTRL.FLUSH`` the
  write-back of every dirty slot. Both report busy and done in ``STATUS``.
"""

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from spec.params import RESERVED_MODE, ControllerParams, Mode, aggregates
from spec.regmap import COUNTERS, STATUS_FLAGS, ConfigError, controller_events, register_map

from .arith import registered_order, times_constant
from .csr import TABLE_READ_LATENCY, RegisterBlock, csr_bus_signature

__all__ = ["region_layout", "region_rows", "event_layout", "ControlRegisters"]

def region_layout(params):
    """An applied region: the controller's decode reads ``base <= address < end``."""
    return data.StructLayout({
        "enable": 1,
        "mode": Mode,
        "base": unsigned(params.address_bits),
        "end": unsigned(params.address_bits + 1),
        "acc": unsigned(params.address_bits),
        # acc - base * accumulator_lines modulo 2**address_bits: the accumulator of line
        # address x sits at x * accumulator_lines + state_offset (see hdl.decode)
        "state_offset": unsigned(params.address_bits),
        "acc_end": unsigned(params.address_bits + 1),   # the end of the accumulators

        "threshold": unsigned(params.datapath.counter_width),
        "expected": unsigned(params.datapath.counter_width),
    })


def event_layout():
    """One strobe per event the controller reports (:func:`spec.regmap.controller_events`);
    each sets its flag or counts, one clock after its strobe (the strobes are registered
    first: they are made where the pipeline's handshakes meet, and a counter's enable and
    carry chain stay out of those paths)."""
    return data.StructLayout({name: 1 for name in controller_events()})


def region_rows(regmap, regions):
    """The region registers as the rows of the block's :class:`hdl.csr.RegisterTable`:
    ``{"BASE_LO": "R<r>_BASE_LO", ...}`` for each region ``r``."""
    return [{reg.name.removeprefix(f"R{r}_"): reg.name for reg in regmap
             if reg.name.startswith(f"R{r}_")} for r in range(regions)]


class _Staged:
    """The staged region (a row of the register block's table) selected by the signal
    ``index``, with full 64-bit values and the sums the checks and the applied table need,
    through ``STAGES`` registers: the table's read (``TABLE_READ_LATENCY``), the products
    (``end``, ``base * accumulator_lines``, the accumulator span), then ``acc_end`` and
    ``state_offset``. The values are those of ``index`` ``STAGES`` clocks earlier, with no more
    than one adder between two registers."""

    STAGES = TABLE_READ_LATENCY + 2

    def __init__(self, m, block, params, index, name):
        def stage(value, what):
            out = Signal(len(value), name=f"{name}_{what}")
            m.d.sync += out.eq(value)
            return out

        m.d.comb += block.table_index.eq(index)
        row = block.table_row
        raw = {"base": Cat(row.BASE_LO.ADDR, row.BASE_HI.ADDR),
               "size": Cat(row.SIZE_LO.BYTES, row.SIZE_HI.BYTES),
               "acc": Cat(row.ACC_LO.ADDR, row.ACC_HI.ADDR),
               "enable": row.CFG.ENABLE, "mode": row.CFG.MODE,
               "threshold": row.AGG.THRESHOLD, "expected": row.AGG.EXPECTED}
        # A register address plus a register size, with its carry.
        sum_bits = max(len(raw["base"]), len(raw["size"])) + 1
        lines = raw["size"] >> (params.datapath.line_bytes.bit_length() - 1)
        end = stage((raw["base"] + raw["size"])[:sum_bits], "end_q")
        span = stage(times_constant(lines, params.accumulator_bytes_per_line)[:sum_bits + 8],
                     "span_q")
        scaled_base = stage(times_constant(raw["base"], params.datapath.accumulator_lines)
                            [:params.address_bits], "scaled_base_q")
        raw = {field: stage(value, f"{field}_d_q") for field, value in raw.items()}
        self.end = stage(end, "end_d_q")
        self.acc_end = stage((raw["acc"] + span)[:sum_bits + 8], "acc_end_q")
        # The state of line address ``x`` of the region sits at
        # ``x * accumulator_lines + state_offset`` (modulo the address space).
        self.state_offset = stage((raw["acc"] - scaled_base)[:params.address_bits],
                                  "state_offset_q")
        for field, value in raw.items():
            setattr(self, field, stage(value, f"{field}_d_d_q"))
        self.aggregating = aggregates(self.mode)


class _Held:
    """The fields of a :class:`_Staged` region that the checks read, in registers that take
    the pipeline's values on the clocks of ``load``: the first region of a pair, held while
    the second passes the same pipeline (one pipeline and one set of region muxes serve
    both)."""

    FIELDS = ("enable", "mode", "base", "size", "end", "acc", "acc_end", "threshold",
              "expected")

    def __init__(self, m, staged, load, name):
        for field in self.FIELDS:
            value = getattr(staged, field)
            held = Signal(len(value), name=f"{name}_{field}")
            with m.If(load):
                m.d.sync += held.eq(value)
            setattr(self, field, held)
        self.aggregating = aggregates(self.mode)


#: Registered steps of an APPLY check's address order (``registered_order``'s ``levels``): its
#: operands come from registers across the register block, so each part's equality is a
#: short tree.
_ORDER_LEVELS = 2

#: Clocks an APPLY step waits for its region pair: the _Staged pipeline, the registered
#: compares (``_ORDER_LEVELS`` steps for an order), the registered check results, the
#: registered first fault, then the registered decision to end the APPLY on it.
_SETTLE_CLOCKS = _Staged.STAGES + _ORDER_LEVELS + 3


def _overlap(a_start, a_end, b_start, b_end, ordered):
    """Whether ``[a_start, a_end)`` and ``[b_start, b_end)`` overlap, from the two compares
    ``ordered(low, high)`` (``low < high``, registered)."""
    return ordered(a_start, b_end) & ordered(b_start, a_end)


class ControlRegisters(wiring.Component):
    """Control registers of the controller (``docs/spec.md`` section 8).

    Parameters
    ----------
    params : ControllerParams

    Members
    -------
    bus : In(csr_bus_signature(...))
        The plain CSR bus (the CXL.mem register window drives it too).
    enable : Out(1)
        ``CTRL.ENABLE``: applied regions are in force.
    regions : Out(data.ArrayLayout(region_layout(params), params.regions))
        The applied region table.
    events : In(event_layout())
    clear_start : Out(1)
        One-cycle pulse: clear the accumulators of region ``clear_region``.
    clear_region : Out(width of ``CTRL.CLEAR_REGION``)
    clear_busy : In(1)
    clear_done : In(1)
        One-cycle pulse when a clear finishes.
    flush_start : Out(1)
        One-cycle pulse: write every dirty slot back.
    flush_busy : In(1)
    flush_done : In(1)
        One-cycle pulse when a flush finishes.
    table_ready : Out(1)
        Low while an APPLY copies the staged regions into ``regions`` (a mix of old and new).
        It falls ``_SETTLE_CLOCKS`` clocks (at least 4) before the first region changes, so a
        user may read it through a register.
    locked_write : Out(1)
        A write to a lockable register was refused (``STATUS.LOCKED_WRITE``), ``WRITE_LATENCY``
        clocks after its strobe on ``bus`` (:mod:`hdl.csr`).
    """

    def __init__(self, params=ControllerParams()):
        if not isinstance(params, ControllerParams):
            raise TypeError(f"params must be a ControllerParams, not {params!r}")
        self._params = params
        self._regmap = register_map(params)
        self._block = RegisterBlock(self._regmap, lock=("CTRL", "LOCK"),
                                    table=region_rows(self._regmap, params.regions))
        super().__init__({
            "bus": In(csr_bus_signature(len(self._block.bus.addr))),
            "enable": Out(1),
            "regions": Out(data.ArrayLayout(region_layout(params), params.regions)),
            "events": In(event_layout()),
            "clear_start": Out(1),
            "clear_region": Out(self._regmap["CTRL"].field("CLEAR_REGION").width),
            "clear_busy": In(1),
            "clear_done": In(1),
            "flush_start": Out(1),
            "flush_busy": In(1),
            "flush_done": In(1),
            "table_ready": Out(1),
            "locked_write": Out(1),
        })

    @property
    def regmap(self):
        return self._regmap

    @property
    def apply_step_cycles(self):
        """Cycles of each step of an APPLY."""
        return _SETTLE_CLOCKS + 1

    @property
    def apply_cycles(self):
        """Cycles an APPLY takes, at most: a step for each region held and checked against
        every region, then a step for each region copied."""
        regions = self._params.regions
        return self.apply_step_cycles * (regions + regions ** 2 + regions)

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = block = self._block
        wiring.connect(m, wiring.flipped(self.bus), block.bus)

        m.d.comb += [
            self.enable.eq(block.field("CTRL", "ENABLE")),
            self.clear_region.eq(block.field("CTRL", "CLEAR_REGION")),
            block.set_strobe("STATUS", "LOCKED_WRITE").eq(block.locked_write),
            self.locked_write.eq(block.locked_write),
        ]
        for command in ("CLEAR", "FLUSH"):
            lower = command.lower()
            m.d.comb += [
                getattr(self, f"{lower}_start").eq(block.field("CTRL", command)),
                # Busy reads high from the command's own pulse on, so that a read right after
                # the command sees it.
                block.field("STATUS", f"{command}_BUSY").eq(getattr(self, f"{lower}_busy")
                                                            | block.field("CTRL", command)),
                block.set_strobe("STATUS", f"{command}_DONE").eq(getattr(self, f"{lower}_done")),
            ]
        events = Signal.like(self.events)
        m.d.sync += events.eq(self.events)
        for flag in STATUS_FLAGS:
            if flag.from_controller:
                m.d.comb += block.set_strobe("STATUS", flag.name).eq(events[flag.name.lower()])
        cfg_error_event = Signal()
        own_strobes = {"CFG_ERRORS": cfg_error_event}       # the counters this block strobes
        for counter in COUNTERS:
            count = block.field(f"CNT_{counter.name}", "COUNT")
            with m.If(events[counter.name.lower()] if counter.from_controller
                      else own_strobes[counter.name]):
                m.d.sync += count.eq(count + 1)

        self._elaborate_apply(m, block, cfg_error_event)
        return m

    def _elaborate_apply(self, m, block, cfg_error_event):
        """APPLY: each region held, checked against every region, then the table copied if no
        check failed (the module docstring)."""
        p = self._params
        last = p.regions - 1

        i = Signal(range(p.regions))
        j = Signal(range(p.regions))
        busy = Signal()
        holding = Signal()                 # a step that loads region i into ``a``
        copying = Signal()                 # validation passed: copying region i
        m.d.comb += [block.field("STATUS", "APPLY_BUSY").eq(busy | block.field("CTRL", "APPLY")),
                     block.hold.eq(busy), self.table_ready.eq(~copying)]
        # i and j hold while the pair's values pass the pipeline and the compares, the check
        # results, the first fault and the fault step are registered (_SETTLE_CLOCKS), then the
        # step acts: one more clock.
        settle = Signal(range(_SETTLE_CLOCKS + 1))
        # The clock before a step acts: what acts on the step is registered on this one.
        before_step = settle == _SETTLE_CLOCKS - 1
        settled = Signal()              # settle == _SETTLE_CLOCKS, as a register
        m.d.sync += settled.eq(busy & before_step)
        # One pipeline for both regions of a pair: region i passes it on a holding step, at
        # whose end ``a`` takes it, then each region j does (``b``), and region i again on
        # its copying step. The APPLY is not in a hurry, and the region muxes of a second
        # pipeline made the densest tangle of wires on the die (router2's congestion map).
        b = _Staged(m, block, p, Mux(holding | copying, i, j), "region")
        a = _Held(m, b, settled & holding, "region_i")
        # What the checks and the step read of i and j, in registers beside them: i and j hold
        # for _SETTLE_CLOCKS clocks before anything reads these.
        distinct, first_pair, i_last, j_last = (Signal(name=name) for name in
                                                ("distinct", "first_pair", "i_last", "j_last"))
        m.d.sync += [distinct.eq(i != j), first_pair.eq(j == 0),
                     i_last.eq(i == last), j_last.eq(j == last)]
        checks = self._apply_checks(m, a, b, distinct, first_pair)
        failed = [Signal(name=f"failed_{k}") for k in range(len(checks))]
        m.d.sync += [f.eq(c & a.enable) for f, (c, _) in zip(failed, checks)]
        first = Signal(ConfigError)
        fault = Signal(ConfigError)
        faulted = Signal()          # fault != NONE, a register of its own for the step below
        self._first_fault(m, first, [(f, e) for f, (_, e) in zip(failed, checks)])
        m.d.sync += [fault.eq(first), faulted.eq(first != ConfigError.NONE)]
        # The step that ends the APPLY on a fault, decided a clock ahead into a register of its
        # own (faulted has settled by then), which alone sets STATUS.CFG_ERROR and counts.
        fault_step = Signal()
        m.d.sync += fault_step.eq(busy & ~copying & ~holding & faulted & before_step)

        # Region r takes its staged values on the copying step with i == r. The step's
        # condition is registered one clock ahead, one flag per region, so that each region's
        # flip-flop enables come straight from a flip-flop rather than through the step decode.
        # (``copying`` is only ever high while ``busy``.)
        load = Signal(p.regions)
        m.d.sync += load.eq(Mux(copying & before_step,
                                Cat(i == r for r in range(p.regions)), 0))
        for r, region in enumerate(self.regions):
            with m.If(load[r]):
                m.d.sync += [region[name].eq(getattr(b, name)) for name, _ in region_layout(p)]

        # settle counts the clocks of each step while busy, and is zero on the clock after a
        # step (which starts the next) and while idle: it reads nothing but busy, settled and
        # itself.
        m.d.sync += settle.eq(Mux(busy & ~settled, settle + 1, 0))
        # fault_step is high only on a settled step of the checks (busy, not copying).
        with m.If(fault_step):
            m.d.sync += [
                busy.eq(0),
                block.field("CFG_ERROR", "REGION").eq(i),
                block.field("CFG_ERROR", "REASON").eq(fault),
            ]
            m.d.comb += [block.set_strobe("STATUS", "CFG_ERROR").eq(1), cfg_error_event.eq(1)]
        with m.Elif(~busy):
            with m.If(block.field("CTRL", "APPLY")):
                m.d.sync += [busy.eq(1), holding.eq(1), i.eq(0), j.eq(0)]
        with m.Elif(settled):
            with m.If(copying):
                with m.If(i_last):
                    m.d.sync += [busy.eq(0), copying.eq(0)]
                with m.Else():
                    m.d.sync += i.eq(i + 1)
            with m.Elif(holding):
                m.d.sync += holding.eq(0)
            with m.Elif(i_last & j_last):
                m.d.sync += [
                    copying.eq(1), i.eq(0), j.eq(0),
                    block.field("CFG_ERROR", "REGION").eq(0),
                    block.field("CFG_ERROR", "REASON").eq(ConfigError.NONE),
                ]
            with m.Elif(j_last):
                m.d.sync += [i.eq(i + 1), j.eq(0), holding.eq(1)]
            with m.Else():
                m.d.sync += j.eq(j + 1)

    def _apply_checks(self, m, a, b, distinct, first_pair):
        """The checks of an APPLY as ``(condition, ConfigError)`` pairs: region ``a``'s own
        (on the first pair of a step, ``first_pair``) and ``a`` against ``b`` (``distinct``:
        they are two regions), each compare in registers of its own."""
        p = self._params
        space = 1 << p.address_bits
        window_start, window_end = p.window_base, p.window_base + p.window_bytes
        line_mask = p.datapath.line_bytes - 1
        acc_mask = p.accumulator_bytes_per_line - 1
        compares = []

        def compared(value):
            """``value``, a compare (of addresses up to 72 bits wide, or of a region's counts
            against its limits), in a register of its own, so that the check that reads it has
            no carry chain in front of it."""
            compares.append(Signal(name=f"compare_{len(compares)}"))
            m.d.sync += compares[-1].eq(value)
            return compares[-1]

        def ordered(low, high):
            """``low < high`` of two addresses, as :func:`compared` does it but, unless one is
            a constant, in parts (:func:`registered_order`), so that no carry chain spans
            the address."""
            if isinstance(low, int) or isinstance(high, int):
                return compared(low < high)
            compares.append(registered_order(m, low, high, f"compare_{len(compares)}",
                                             levels=_ORDER_LEVELS))
            return compares[-1]

        own_checks = [
            (a.mode == RESERVED_MODE, ConfigError.RESERVED_MODE),
            (((a.base | a.size) & line_mask) != 0, ConfigError.MISALIGNED),
            (compared(a.size == 0), ConfigError.ZERO_SIZE),
            (compared(a.end > space), ConfigError.OUT_OF_RANGE),
            (_overlap(a.base, a.end, window_start, window_end, ordered),
             ConfigError.COVERS_WINDOW),
            (compared((a.mode == Mode.GTERNARY) & ((a.threshold == 0)
                                                   | (a.threshold > p.datapath.capacity))),
             ConfigError.BAD_THRESHOLD),
            (compared(a.aggregating & (a.expected > p.datapath.capacity)),
             ConfigError.OVER_CAPACITY),
            (a.aggregating & ((a.acc & acc_mask) != 0), ConfigError.ACC_MISALIGNED),
            (a.aggregating & compared(a.acc_end > space), ConfigError.OUT_OF_RANGE),
            (a.aggregating & _overlap(a.acc, a.acc_end, window_start, window_end, ordered),
             ConfigError.ACC_OVERLAP),
        ]
        pair_checks = [
            (distinct & _overlap(a.base, a.end, b.base, b.end, ordered), ConfigError.OVERLAP),
            (a.aggregating & (_overlap(a.acc, a.acc_end, b.base, b.end, ordered)
                              | (distinct & b.aggregating
                                 & _overlap(a.acc, a.acc_end, b.acc, b.acc_end, ordered))),
             ConfigError.ACC_OVERLAP),
        ]
        return ([(c & first_pair, e) for c, e in own_checks]
                + [(c & b.enable, e) for c, e in pair_checks])

    @staticmethod
    def _first_fault(m, fault, checks):
        for k, (failed, error) in enumerate(checks):
            with (m.If if k == 0 else m.Elif)(failed):
                m.d.comb += fault.eq(error)
