"""amaranth.sim tests of the control registers: APPLY validation against the golden model,
the applied table, the lock, sticky flags, counters and the clear command."""

import numpy as np
import pytest

from golden.config import Region, state_offset, validate
from hdl.control import ControlRegisters
from hdl.params import ControllerParams, DatapathParams, Mode
from hdl.regmap import ConfigError
from verif.test_csr import bus_read, bus_write, run

PARAMS = ControllerParams(datapath=DatapathParams(line_bits=64, counter_width=3),
                          regions=4, address_bits=20)
LINE = PARAMS.datapath.line_bytes
ACC_SPAN = PARAMS.accumulator_bytes_per_line
SEED = 11


def good_regions():
    """Two aggregation regions and one identity region, accumulators high in memory."""
    return [
        Region(True, Mode.GBINARY.value, 0x0000, 0x400, 0x80000, 1, 7),
        Region(True, Mode.GTERNARY.value, 0x1000, 0x200, 0x90000, 3, 5),
        Region(True, Mode.IDENTITY.value, 0x2000, 0x100, 0, 1, 0),
        Region(False, Mode.GBINARY.value, 0x0000, 0x400, 0, 0, 0),
    ]


def with_region(index, **changes):
    regions = good_regions()
    regions[index] = Region(**{**regions[index].__dict__, **changes})
    return regions


BAD_CASES = {
    ConfigError.RESERVED_MODE: with_region(0, mode=3),
    ConfigError.MISALIGNED: with_region(1, base=0x1000 + LINE // 2),
    ConfigError.ZERO_SIZE: with_region(2, size=0),
    ConfigError.OUT_OF_RANGE: with_region(2, base=(1 << 20) - 0x2000, size=0x4000),
    ConfigError.COVERS_WINDOW: with_region(2, base=PARAMS.window_base - LINE, size=2 * LINE),
    ConfigError.BAD_THRESHOLD: with_region(1, threshold=0),
    ConfigError.OVER_CAPACITY: with_region(0, expected=PARAMS.datapath.capacity + 1),
    ConfigError.ACC_MISALIGNED: with_region(0, acc=0x80000 + 1),
    ConfigError.OVERLAP: with_region(2, base=0x1100, size=0x200),
    ConfigError.ACC_OVERLAP: with_region(1, acc=0x2000),
}


def region_writes(regmap, regions):
    writes = []
    for r, reg in enumerate(regions):
        writes += [
            (f"R{r}_BASE_LO", reg.base & 0xFFFF_FFFF), (f"R{r}_BASE_HI", reg.base >> 32),
            (f"R{r}_SIZE_LO", reg.size & 0xFFFF_FFFF), (f"R{r}_SIZE_HI", reg.size >> 32),
            (f"R{r}_ACC_LO", reg.acc & 0xFFFF_FFFF), (f"R{r}_ACC_HI", reg.acc >> 32),
            (f"R{r}_CFG", int(reg.enable) | reg.mode << 1),
            (f"R{r}_AGG", reg.threshold | reg.expected << 16),
        ]
    return [(regmap[name].offset, value) for name, value in writes]


async def apply(ctx, dut, regions):
    """Program ``regions``, APPLY, wait for validation; returns (error, region, flag)."""
    regmap = dut.regmap
    for offset, value in region_writes(regmap, regions):
        await bus_write(ctx, dut.bus, offset, value)
    await bus_write(ctx, dut.bus, regmap["CTRL"].offset, regmap["CTRL"].field("APPLY").mask)
    await ctx.tick().repeat(2)             # the APPLY pulse, then APPLY_BUSY rises
    status = regmap["STATUS"]
    for _ in range(dut.apply_cycles + 4):
        if not await bus_read(ctx, dut.bus, status.offset) & status.field("APPLY_BUSY").mask:
            break
    else:
        raise AssertionError(f"APPLY still busy after {dut.apply_cycles + 4} reads")
    info = await bus_read(ctx, dut.bus, regmap["CFG_ERROR"].offset)
    flag = bool(await bus_read(ctx, dut.bus, status.offset)
                & status.field("CFG_ERROR").mask)
    await bus_write(ctx, dut.bus, status.offset, status.field("CFG_ERROR").mask)
    return ConfigError((info >> 8) & 0xF), info & 0xFF, flag


def applied_table(ctx, dut):
    return [(ctx.get(r.enable), ctx.get(r.mode), ctx.get(r.base), ctx.get(r.end),
             ctx.get(r.acc), ctx.get(r.state_offset)) for r in dut.regions]


def expected_table(regions):
    return [(int(r.enable), Mode(r.mode) if r.mode != 3 else 3, r.base, r.base + r.size, r.acc,
             state_offset(PARAMS, r)) for r in regions]


def test_good_configuration_is_applied():
    dut = ControlRegisters(PARAMS)

    async def testbench(ctx):
        assert validate(PARAMS, good_regions()) == (ConfigError.NONE, 0)
        error, region, flag = await apply(ctx, dut, good_regions())
        assert (error, flag) == (ConfigError.NONE, False), f"refused: {error.name} in {region}"
        assert applied_table(ctx, dut) == expected_table(good_regions())

    run(dut, testbench)


@pytest.mark.parametrize("error", list(BAD_CASES), ids=lambda e: e.name)
def test_each_bad_configuration_is_refused_and_the_old_one_stays(error):
    dut = ControlRegisters(PARAMS)
    bad = BAD_CASES[error]
    want_error, want_region = validate(PARAMS, bad)
    assert want_error == error, f"golden says {want_error.name} for the {error.name} case"

    async def testbench(ctx):
        await apply(ctx, dut, good_regions())
        before = applied_table(ctx, dut)
        got_error, got_region, flag = await apply(ctx, dut, bad)
        assert (got_error, got_region) == (want_error, want_region), \
            f"{error.name}: hardware says {got_error.name} in region {got_region}, golden " \
            f"says {want_error.name} in region {want_region}"
        assert flag, f"{error.name}: STATUS.CFG_ERROR not set"
        assert applied_table(ctx, dut) == before, f"{error.name}: applied table changed"
        assert await bus_read(ctx, dut.bus, dut.regmap["CNT_CFG_ERRORS"].offset) == 1

    run(dut, testbench)


@pytest.mark.parametrize("regions", [4, 5, 8])
def test_random_configurations_match_golden(regions):
    """Four regions make one set of APPLY's two-step region pick; five leave the second set
    part empty; eight are the default."""
    params = ControllerParams(datapath=PARAMS.datapath, regions=regions,
                              address_bits=PARAMS.address_bits)
    rng = np.random.default_rng(SEED)
    dut = ControlRegisters(params)
    cases = []
    for _ in range(40):
        regions = []
        for _ in range(params.regions):
            base = int(rng.integers(0, 64)) * 0x400 + int(rng.choice([0, 0, 0, LINE // 2]))
            mode = int(rng.choice(4, p=[0.3, 0.33, 0.33, 0.04]))
            regions.append(Region(bool(rng.random() < 0.7), mode, base,
                                  int(rng.integers(0, 4)) * 0x200,
                                  0x80000 + int(rng.integers(0, 8)) * 0x8000,
                                  int(rng.integers(0, 9)), int(rng.integers(0, 9))))
        cases.append(regions)

    async def testbench(ctx):
        for n, regions in enumerate(cases):
            want = validate(params, regions)
            got = (await apply(ctx, dut, regions))[:2]
            assert got == want, f"seed {SEED}, {params.regions} regions, case {n}: hardware " \
                                f"{got[0].name} in region {got[1]}, golden {want[0].name} in " \
                                f"region {want[1]}: {regions}"

    run(dut, testbench)


def test_lock_keeps_the_applied_configuration():
    dut = ControlRegisters(PARAMS)
    regmap = dut.regmap

    async def testbench(ctx):
        await apply(ctx, dut, good_regions())
        await bus_write(ctx, dut.bus, regmap["CTRL"].offset, regmap["CTRL"].field("LOCK").mask)
        error, _, _ = await apply(ctx, dut, BAD_CASES[ConfigError.OVERLAP])
        assert error == ConfigError.NONE, "locked region registers were changed"
        assert applied_table(ctx, dut) == expected_table(good_regions())
        status = await bus_read(ctx, dut.bus, regmap["STATUS"].offset)
        assert status & regmap["STATUS"].field("LOCKED_WRITE").mask

    run(dut, testbench)


def test_events_set_flags_and_count():
    dut = ControlRegisters(PARAMS)
    regmap = dut.regmap

    async def testbench(ctx):
        for _ in range(3):
            ctx.set(dut.events.accepted, 1)
            ctx.set(dut.events.capacity, 1)
            await ctx.tick()
            ctx.set(dut.events.capacity, 0)
        ctx.set(dut.events.accepted, 0)
        assert await bus_read(ctx, dut.bus, regmap["CNT_ACCEPTED"].offset) == 3
        assert await bus_read(ctx, dut.bus, regmap["CNT_REJECTED"].offset) == 0
        status = await bus_read(ctx, dut.bus, regmap["STATUS"].offset)
        assert status & regmap["STATUS"].field("CAPACITY").mask
        assert not status & regmap["STATUS"].field("POISON").mask

    run(dut, testbench)


def test_clear_command_reaches_the_clear_engine():
    dut = ControlRegisters(PARAMS)
    ctrl = dut.regmap["CTRL"]

    async def testbench(ctx):
        await bus_write(ctx, dut.bus, ctrl.offset,
                        ctrl.field("CLEAR").mask | (2 << ctrl.field("CLEAR_REGION").offset))
        assert (ctx.get(dut.clear_start), ctx.get(dut.clear_region)) == (1, 2)
        await ctx.tick()
        assert ctx.get(dut.clear_start) == 0
        ctx.set(dut.clear_busy, 1)
        status = dut.regmap["STATUS"]
        assert await bus_read(ctx, dut.bus, status.offset) & status.field("CLEAR_BUSY").mask
        ctx.set(dut.clear_busy, 0)
        ctx.set(dut.clear_done, 1)
        await ctx.tick()
        ctx.set(dut.clear_done, 0)
        assert await bus_read(ctx, dut.bus, status.offset) & status.field("CLEAR_DONE").mask

    run(dut, testbench)


def test_region_writes_during_apply_are_ignored_and_flagged():
    """While APPLY runs, a write to a region register is ignored and sets LOCKED_WRITE; the
    applied table is the configuration that was validated. ``table_ready`` is low only while
    the validated regions are copied."""
    dut = ControlRegisters(PARAMS)
    regmap, status = dut.regmap, dut.regmap["STATUS"]
    base = regmap["R1_BASE_LO"]

    async def testbench(ctx):
        for offset, value in region_writes(regmap, good_regions()):
            await bus_write(ctx, dut.bus, offset, value)
        await bus_write(ctx, dut.bus, regmap["CTRL"].offset, regmap["CTRL"].field("APPLY").mask)
        await ctx.tick()
        assert ctx.get(dut.table_ready), "table not ready before the copy"
        await bus_write(ctx, dut.bus, base.offset, 0x3000)          # would overlap region 2
        flags = await bus_read(ctx, dut.bus, status.offset)
        assert flags & status.field("APPLY_BUSY").mask, "APPLY finished too early for the test"
        assert flags & status.field("LOCKED_WRITE").mask, "ignored write not flagged"
        not_ready = 0
        for _ in range(dut.apply_cycles):
            not_ready += not ctx.get(dut.table_ready)
            await ctx.tick()
        copy_cycles = dut.apply_cycles // (PARAMS.regions + 1)    # one step per region
        assert not_ready == copy_cycles, \
            f"table_ready low for {not_ready} cycles, expected {copy_cycles} (the copy)"
        assert ctx.get(dut.table_ready)
        assert not await bus_read(ctx, dut.bus, status.offset) & status.field("APPLY_BUSY").mask
        assert await bus_read(ctx, dut.bus, base.offset) == good_regions()[1].base & 0xFFFF_FFFF
        assert applied_table(ctx, dut) == expected_table(good_regions())

    run(dut, testbench)
