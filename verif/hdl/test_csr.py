"""amaranth.sim tests of the register block generated from the register map."""

import pytest
from amaranth import Signal
from amaranth.hdl import ResetInserter

from bench.sim import bus_read, bus_reads, bus_write, read_fields, simulate, write_fields
from hdl.control import region_rows
from hdl.csr import TABLE_READ_LATENCY, WRITE_LATENCY, RegisterBlock, RegisterTable
from spec.params import REGISTER_BITS, ControllerParams, DatapathParams
from spec.regmap import Access, register_map

PARAMS = DatapathParams(line_bits=64, counter_width=3, latency=1)
#: A register word of all ones.
ONES = (1 << REGISTER_BITS) - 1


def make_block(regions=2):
    """The controller's block: the region registers in its table."""
    regmap = register_map(ControllerParams(PARAMS, regions=regions))
    return RegisterBlock(regmap, lock=("CTRL", "LOCK"), table=region_rows(regmap, regions))


def pattern(n):
    """A register word that differs in every bit position from its neighbours'."""
    return (0x9E3779B9 * (n + 1)) & ONES


def test_every_register_reads_its_reset_value():
    block = make_block()

    async def testbench(ctx):
        for reg in block.regmap:
            ws = sum(f.mask for f in reg.fields if f.access == Access.WS)
            got = await bus_read(ctx, block.bus, reg.offset)
            assert got == reg.reset & ~ws, f"{reg.name} at {reg.offset:#x}: read {got:#x}, " \
                                           f"reset is {reg.reset:#x}"
        got = await bus_read(ctx, block.bus, 0xFFC)
        assert got == 0, f"unmapped word at 0xffc read {got:#x}, not 0"

    simulate(block, testbench)


def test_rw_fields_store_only_their_bits_and_r_fields_ignore_writes():
    block = make_block()

    async def testbench(ctx):
        for reg in block.regmap:
            before = await bus_read(ctx, block.bus, reg.offset)
            if any(f.access == Access.RW1S or f.access == Access.WS for f in reg.fields):
                continue                        # commands and the lock: tested below
            await bus_write(ctx, block.bus, reg.offset, ONES)
            rw = sum(f.mask for f in reg.fields if f.access == Access.RW)
            r_only = sum(f.mask for f in reg.fields if f.access == Access.R)
            want = (ONES & rw) | (before & r_only)
            got = await bus_read(ctx, block.bus, reg.offset)
            assert got == want, f"{reg.name}: wrote all ones, read {got:#x}, want {want:#x}"

    simulate(block, testbench)


def test_sticky_flags_set_by_hardware_clear_by_writing_one():
    block = make_block()
    regmap = block.regmap
    strobe = block.set_strobe("STATUS", "CAPACITY")

    async def testbench(ctx):
        async def capacity():
            return (await read_fields(ctx, block.bus, regmap, "STATUS"))["CAPACITY"]

        ctx.set(strobe, 1)
        await ctx.tick()
        ctx.set(strobe, 0)
        assert await capacity(), "STATUS.CAPACITY not set by its set strobe"
        await write_fields(ctx, block.bus, regmap, "STATUS", POISON=1)   # clears another flag
        assert await capacity(), "STATUS.CAPACITY cleared by writing 1 to STATUS.POISON"
        # A set in the same cycle as the clear wins: the set strobe goes with the clock at
        # which the write reaches the register.
        await write_fields(ctx, block.bus, regmap, "STATUS", CAPACITY=1, wait=False)
        await ctx.tick().repeat(WRITE_LATENCY - 2)
        ctx.set(strobe, 1)
        await ctx.tick()
        ctx.set(strobe, 0)
        assert await capacity(), "STATUS.CAPACITY: a set in the clock of a clearing write lost"
        await write_fields(ctx, block.bus, regmap, "STATUS", CAPACITY=1)
        assert not await capacity(), "STATUS.CAPACITY not cleared by writing 1"

    simulate(block, testbench)


def test_write_strobe_pulses_once_and_reads_zero():
    block = make_block()
    regmap = block.regmap
    apply = block.field("CTRL", "APPLY")

    async def testbench(ctx):
        await write_fields(ctx, block.bus, regmap, "CTRL", APPLY=1)
        assert ctx.get(apply) == 1, f"CTRL.APPLY did not pulse {WRITE_LATENCY} cycles after " \
                                    f"the write"
        await ctx.tick()
        assert ctx.get(apply) == 0, "CTRL.APPLY lasted more than one cycle"
        assert not (await read_fields(ctx, block.bus, regmap, "CTRL"))["APPLY"], \
            "CTRL.APPLY (a write-1 strobe) does not read 0"

    simulate(block, testbench)


def test_lock_freezes_region_registers_until_reset():
    block = make_block()
    regmap = block.regmap
    base = regmap["R1_BASE_LO"].offset

    async def testbench(ctx):
        await bus_write(ctx, block.bus, base, 0x1000)
        await write_fields(ctx, block.bus, regmap, "CTRL", LOCK=1)
        await write_fields(ctx, block.bus, regmap, "CTRL", LOCK=0)          # 0 does not unlock
        assert (await read_fields(ctx, block.bus, regmap, "CTRL"))["LOCK"], \
            "CTRL.LOCK cleared by writing 0"
        await bus_write(ctx, block.bus, base, 0x2000)
        assert ctx.get(block.locked_write) == 1, "locked write to R1_BASE_LO not reported"
        got = await bus_read(ctx, block.bus, base)
        assert got == 0x1000, f"locked R1_BASE_LO changed: reads {got:#x}, was 0x1000"
        await write_fields(ctx, block.bus, regmap, "CTRL", LOCK=1, ENABLE=1)
        assert (await read_fields(ctx, block.bus, regmap, "CTRL"))["ENABLE"], \
            "CTRL.ENABLE not written under the lock: CTRL is not a region register and must " \
            "stay writable"
        assert ctx.get(block.locked_write) == 0, "a write to CTRL under the lock was reported"

    simulate(block, testbench)


def test_lock_must_be_a_set_once_field():
    with pytest.raises(ValueError, match=r"lock field CTRL.ENABLE must be RW1S"):
        RegisterBlock(register_map(ControllerParams(PARAMS)), lock=("CTRL", "ENABLE"))


def test_back_to_back_reads_across_groups_and_sets():
    """One read strobe per clock, hopping between the read groups and sets of eight regions'
    map: each read returns what the same register returns read alone."""
    block = make_block(regions=8)
    regs = sorted(block.regmap, key=lambda reg: (reg.offset * 37) % 1024)   # scattered order

    async def testbench(ctx):
        for n, reg in enumerate(regs):
            await bus_write(ctx, block.bus, reg.offset, pattern(n))
        alone = {reg.name: await bus_read(ctx, block.bus, reg.offset) for reg in regs}
        words = await bus_reads(ctx, block.bus, [reg.offset for reg in regs])
        got = {reg.name: word for reg, word in zip(regs, words)}
        wrong = {name: (hex(got[name]), hex(value)) for name, value in alone.items()
                 if got[name] != value}
        assert not wrong, f"back-to-back read differs from a lone read (got, alone): {wrong}"

    simulate(block, testbench)


def _rw_value(reg, word):
    """What ``reg`` holds after a write of ``word`` (its RW bits)."""
    return word & sum(f.mask for f in reg.fields if f.access == Access.RW)


def test_table_rows_read_their_reset_values_again_after_a_reset():
    """A reset does not reach the table's memory: a row's flag makes it read its reset values
    until its next write, which keeps the row's other registers at theirs, and a read right
    behind a write (the next clock's strobe) reads the written value."""
    block = make_block(regions=3)
    regmap = block.regmap
    reset = Signal()
    dut = ResetInserter(reset)(block)
    table = [regmap[name] for row in region_rows(regmap, 3) for name in row.values()]

    async def testbench(ctx):
        for n, reg in enumerate(table):
            await bus_write(ctx, block.bus, reg.offset, pattern(n))
        ctx.set(reset, 1)
        await ctx.tick()
        ctx.set(reset, 0)
        for reg in table:
            got = await bus_read(ctx, block.bus, reg.offset)
            assert got == reg.reset, f"{reg.name} after a reset: read {got:#x}, reset is " \
                                     f"{reg.reset:#x}"
        written, other = regmap["R1_SIZE_HI"], regmap["R1_AGG"]
        await bus_write(ctx, block.bus, written.offset, pattern(7), wait=False)
        got = (await bus_reads(ctx, block.bus, [written.offset, other.offset]))
        assert got == [_rw_value(written, pattern(7)), other.reset], \
            f"R1_SIZE_HI written then R1_AGG read back to back, after a reset: read " \
            f"{[hex(g) for g in got]}, want [{_rw_value(written, pattern(7)):#x}, " \
            f"{other.reset:#x}]"

    simulate(dut, testbench)


def test_owner_reads_a_whole_row_by_index():
    """``table_row`` holds the row at ``table_index`` of ``TABLE_READ_LATENCY`` clocks before:
    written rows as written, unwritten ones at their reset values."""
    block = make_block(regions=4)
    regmap = block.regmap
    rows = region_rows(regmap, 4)

    async def testbench(ctx):
        for r in (0, 2):
            for c, name in enumerate(rows[r].values()):
                await bus_write(ctx, block.bus, regmap[name].offset, pattern(8 * r + c))
        for r in (2, 1, 0, 3, 2):
            ctx.set(block.table_index, r)
            await ctx.tick().repeat(TABLE_READ_LATENCY)
            row = ctx.get(block.table_row)
            for c, (column, name) in enumerate(rows[r].items()):
                reg = regmap[name]
                want = reg.unpack(_rw_value(reg, pattern(8 * r + c)) if r in (0, 2)
                                  else reg.reset)
                got = {f.name: int(getattr(getattr(row, column), f.name)) for f in reg.fields}
                assert got == want, f"table row {r} column {column} ({name}): {got}, want {want}"

    simulate(block, testbench)


@pytest.mark.parametrize("rows, message", [
    ([{"A": "R0_BASE_LO", "B": "R0_SIZE_LO"}],
     r"table register R0_SIZE_LO is at word 0x42; row 0 column 1 must be at word 0x41"),
    ([{"A": "R0_BASE_LO"}, {"A": "R1_BASE_LO"}, {"A": "R1_SIZE_LO"}],
     r"row 2 column 0 must be at word 0x60"),
    ([{"A": "R0_BASE_LO"}, {"A": "R1_CFG"}],
     r"table rows are 22 words apart; they must be a power of two"),
    ([{"A": "CTRL"}], r"table register CTRL: field LOCK is RW1S; a table holds RW fields only"),
    ([{"A": "R0_BASE_LO"}, {"B": "R1_BASE_LO"}], r"each with the same column names"),
])
def test_table_layout_errors_name_the_register(rows, message):
    regmap = register_map(ControllerParams(PARAMS, regions=2))
    with pytest.raises(ValueError, match=message):
        RegisterTable(regmap, rows)


def test_one_row_table_of_three_columns_takes_a_stride_of_four():
    regmap = register_map(ControllerParams(PARAMS, regions=1))
    table = RegisterTable(regmap, [{"A": "R0_BASE_LO", "B": "R0_BASE_HI", "C": "R0_SIZE_LO"}])
    assert (table.column_bits, table.first_row) == (2, 0x40 // 4), \
        f"one row of 3 columns at word 0x40: column bits {table.column_bits}, first row " \
        f"{table.first_row:#x}; want 2 and 0x10"
