"""Property harnesses of the control registers (:class:`hdl.control.ControlRegisters` and its
:class:`hdl.csr.RegisterBlock`), ``docs/spec.md`` section 8.

Every input of the design is free on every clock (``AnySeq``): the CSR bus (reads and writes
of any word, any data), the event strobes and the clear and flush handshakes. Reset is held
low after the initial state (the reset values), so "until reset" is the whole trace.
"""

from amaranth import Cat, Elaboratable, Module, ResetSignal, Signal, Value
from amaranth.asserts import AnySeq
from amaranth.hdl import Assert, Assume

from hdl.control import ControlRegisters
from hdl.csr import WRITE_LATENCY, RegisterBlock
from spec.params import RESERVED_MODE, Mode, aggregates
from spec.regmap import REGISTER_BYTES, Access, register_map

from .history import delayed, started

__all__ = ["FlagsClearOnlyWhereWrittenOne", "LockKeepsRegionsReadOnly",
           "ApplyInstallsOnlyValidTables", "RejectedApplyKeepsTable", "REGISTER_PROPERTIES"]


def _drive_free(m, ports):
    """Drive every input signal of ``ports`` (a list of signals) with a free value."""
    m.d.comb += [port.eq(AnySeq(len(Value.cast(port)))) for port in ports]


def _lock_field(regmap):
    """``(register, field)`` of the map's lock: its one set-once (``RW1S``) field."""
    fields = [(reg.name, f.name) for reg in regmap for f in reg.fields if f.access == Access.RW1S]
    if len(fields) != 1:
        raise ValueError(f"the register map must have exactly one RW1S field, not {fields}")
    return fields[0]


class _ControlHarness(Elaboratable):
    """:class:`ControlRegisters` with every input free; :meth:`check` asserts. The register
    block is the design's own (``_block``): the harness reads its fields."""

    #: The design under test.
    design = ControlRegisters

    def __init__(self, params):
        self.params = params

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.design(self.params)
        _drive_free(m, [dut.bus.addr, dut.bus.r_stb, dut.bus.w_stb, dut.bus.w_data,
                        dut.events.as_value(), dut.clear_busy, dut.clear_done, dut.flush_busy,
                        dut.flush_done])
        m.d.comb += Assume(~ResetSignal())
        self.check(m, dut, dut._block)
        return m

    def check(self, m, dut, block):
        raise NotImplementedError


class FlagsClearOnlyWhereWrittenOne(Elaboratable):
    """Every ``RW1C`` field of the register map: its set strobe sets it; otherwise a bus write
    clears exactly the bits written with 1 (``WRITE_LATENCY`` clocks later); otherwise it keeps
    its value. A set in the same clock as a clearing write wins."""

    #: The design under test, on the controller's register map.
    design = RegisterBlock

    def __init__(self, params):
        self.params = params

    def elaborate(self, platform):
        m = Module()
        regmap = register_map(self.params)
        m.submodules.block = block = self.design(regmap)
        bus = block.bus
        _drive_free(m, [bus.addr, bus.r_stb, bus.w_stb, bus.w_data, block.hold])
        m.d.comb += Assume(~ResetSignal())
        after_start = started(m)
        for reg in regmap:
            flags = [f for f in reg.fields if f.access == Access.RW1C]
            if not flags:
                continue
            word = reg.offset // REGISTER_BYTES
            name = reg.name.lower()
            written = delayed(m, bus.w_stb & (bus.addr == word), WRITE_LATENCY, f"{name}_write")
            data = delayed(m, bus.w_data, WRITE_LATENCY, f"{name}_data")
            for f in flags:
                strobe = block.set_strobe(reg.name, f.name)
                m.d.comb += strobe.eq(AnySeq(1))
                value = block.field(reg.name, f.name)
                what = f"{reg.name}.{f.name}"
                before = delayed(m, value, 1, f"{name}_{f.name.lower()}")
                was_set = delayed(m, strobe, 1, f"{name}_{f.name.lower()}_set")
                ones = data[f.offset:f.offset + f.width]
                with m.If(after_start):
                    with m.If(was_set):
                        m.d.comb += Assert(value == 1, f"{what} not set by its strobe")
                    with m.Elif(written):
                        m.d.comb += Assert(value == (before & ~ones),
                                           f"{what}: a write cleared other than its 1 bits")
                    with m.Else():
                        m.d.comb += Assert(value == before, f"{what} changed with no write")
        return m


class LockKeepsRegionsReadOnly(_ControlHarness):
    """Once the lock (``CTRL.LOCK``) is set it stays set, and no region register
    (``R<n>_*``, the map's ``lockable`` registers) changes again: no lockable register in
    flip-flops changes, and no row of the block's table (where the region registers live) is
    written."""

    def check(self, m, dut, block):
        regmap = dut.regmap
        lock = block.field(*_lock_field(regmap))
        table = block.table_names
        registers = Cat(block.field(reg.name, f.name) for reg in regmap
                        if reg.lockable and reg.name not in table for f in reg.fields)
        was_locked = delayed(m, lock, 1, "lock")
        registers_before = delayed(m, registers, 1, "registers")
        with m.If(was_locked):
            m.d.comb += [Assert(lock, "the lock was cleared"),
                         Assert(registers == registers_before,
                                "a lockable register changed while locked"),
                         Assert(~block.table_written, "a region register written while locked")]


def _overlap(a, b):
    """Whether the address ranges ``a`` and ``b`` (``(start, end)`` pairs) overlap."""
    return (a[0] < b[1]) & (b[0] < a[1])


class ApplyInstallsOnlyValidTables(_ControlHarness):
    """Whenever the applied table is complete (``table_ready``), every enabled region in it
    passes every check of ``docs/spec.md`` section 8, alone and against each other region.
    The checks are written here from the specification, on the applied table's fields
    (``base``, ``end``, ``acc``, ``acc_end``, mode, threshold, expected)."""

    def check(self, m, dut, block):
        p = self.params
        line_mask = p.datapath.line_bytes - 1
        acc_mask = p.accumulator_bytes_per_line - 1
        space = 1 << p.address_bits
        window = (p.window_base, p.window_base + p.window_bytes)
        capacity = p.datapath.capacity
        regions = list(dut.regions)
        for r, region in enumerate(regions):
            own, acc = (region.base, region.end), (region.acc, region.acc_end)
            aggregating = aggregates(region.mode)
            faults = {
                "reserved mode": region.mode.as_value() == RESERVED_MODE,
                "misaligned": ((region.base | region.end) & line_mask) != 0,
                "zero or negative size": region.end <= region.base,
                "out of range": region.end > space,
                "covers the window": _overlap(own, window),
                "bad threshold": (region.mode == Mode.GTERNARY)
                & ((region.threshold == 0) | (region.threshold > capacity)),
                "over capacity": aggregating & (region.expected > capacity),
                "accumulators misaligned": aggregating & ((region.acc & acc_mask) != 0),
                "accumulators out of range": aggregating & (region.acc_end > space),
                "accumulators overlap the window": aggregating & _overlap(acc, window),
                "accumulators overlap the region": aggregating & _overlap(acc, own),
            }
            for s, other in enumerate(regions):
                if s == r:
                    continue
                both = other.enable
                faults[f"overlaps region {s}"] = both & _overlap(own, (other.base, other.end))
                faults[f"accumulators overlap region {s}"] = \
                    both & aggregating & _overlap(acc, (other.base, other.end))
                faults[f"accumulators overlap those of region {s}"] = \
                    both & aggregating & aggregates(other.mode) \
                    & _overlap(acc, (other.acc, other.acc_end))
            with m.If(dut.table_ready & region.enable):
                m.d.comb += [Assert(~fault, f"applied region {r}: {what}")
                             for what, fault in faults.items()]


class RejectedApplyKeepsTable(_ControlHarness):
    """The applied table changes only while an APPLY copies it (``table_ready`` low), and a
    rejected APPLY (``STATUS.CFG_ERROR`` set) leaves the table it started with in force."""

    def check(self, m, dut, block):
        table = dut.regions.as_value()
        busy = block.field("STATUS", "APPLY_BUSY")
        # The table in force when the APPLY began (APPLY_BUSY rose).
        start_table = Signal(len(table), name="start_table")
        with m.If(busy & ~delayed(m, busy, 1, "busy")):
            m.d.sync += start_table.eq(table)
        rejected = delayed(m, block.set_strobe("STATUS", "CFG_ERROR"), 1, "rejected")
        m.d.comb += Assert(~rejected | (table == start_table),
                           "a rejected APPLY changed the applied table")
        was_ready = delayed(m, dut.table_ready, 1, "ready")
        table_before = delayed(m, table, 1, "table")
        with m.If(started(m) & was_ready):
            m.d.comb += Assert(table == table_before,
                               "the applied table changed outside an APPLY's copy")


REGISTER_PROPERTIES = (FlagsClearOnlyWhereWrittenOne, LockKeepsRegionsReadOnly,
                       ApplyInstallsOnlyValidTables, RejectedApplyKeepsTable)
