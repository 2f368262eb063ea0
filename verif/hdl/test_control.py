"""amaranth.sim tests of the control registers: APPLY validation against the golden model,
the applied table, the lock, sticky flags, counters and the clear command."""

import numpy as np
import pytest

from bench.regions import PARAMS, good_regions, region_writes, with_region
from bench.sim import bus_reads, bus_write, read_fields, simulate, write_fields
from golden.config import state_offset, validate
from hdl.control import ControlRegisters
from spec.params import REGISTER_BITS, RESERVED_MODE, ControllerParams, Mode
from spec.regmap import ConfigError, Region

LINE = PARAMS.datapath.line_bytes
SEED = 11


BAD_CASES = {
    ConfigError.RESERVED_MODE: with_region(0, mode=RESERVED_MODE),
    ConfigError.MISALIGNED: with_region(1, base=0x1000 + LINE // 2),
    ConfigError.ZERO_SIZE: with_region(2, size=0),
    ConfigError.OUT_OF_RANGE: with_region(2, base=(1 << PARAMS.address_bits) - 0x2000,
                                          size=0x4000),
    ConfigError.COVERS_WINDOW: with_region(2, base=PARAMS.window_base - LINE, size=2 * LINE),
    ConfigError.BAD_THRESHOLD: with_region(1, threshold=0),
    ConfigError.OVER_CAPACITY: with_region(0, expected=PARAMS.datapath.capacity + 1),
    ConfigError.ACC_MISALIGNED: with_region(0, acc=0x80000 + 1),
    ConfigError.OVERLAP: with_region(2, base=0x1100, size=0x200),
    ConfigError.ACC_OVERLAP: with_region(1, acc=0x2000),
}


async def program(ctx, dut, regions):
    """Write the region registers of ``regions``."""
    for offset, value in region_writes(dut.regmap, regions):
        await bus_write(ctx, dut.bus, offset, value)


async def apply(ctx, dut, regions):
    """Program ``regions``, APPLY, wait for validation; returns (error, region, flag)."""
    regmap = dut.regmap
    await program(ctx, dut, regions)
    await write_fields(ctx, dut.bus, regmap, "CTRL", APPLY=1)
    await ctx.tick().repeat(2)             # the APPLY pulse, then APPLY_BUSY rises
    for _ in range(dut.apply_cycles + 4):
        if not (await read_fields(ctx, dut.bus, regmap, "STATUS"))["APPLY_BUSY"]:
            break
    else:
        raise AssertionError(f"APPLY still busy after {dut.apply_cycles + 4} reads of STATUS")
    info = await read_fields(ctx, dut.bus, regmap, "CFG_ERROR")
    flag = bool((await read_fields(ctx, dut.bus, regmap, "STATUS"))["CFG_ERROR"])
    await write_fields(ctx, dut.bus, regmap, "STATUS", CFG_ERROR=1)
    return ConfigError(info["REASON"]), info["REGION"], flag


#: The fields of an applied region that the tests compare.
TABLE_FIELDS = ("enable", "mode", "base", "end", "acc", "state_offset")


def applied_table(ctx, dut):
    return [{name: ctx.get(getattr(r, name)) for name in TABLE_FIELDS} for r in dut.regions]


def expected_table(regions):
    return [{"enable": int(r.enable), "mode": Mode(r.mode) if r.mode != RESERVED_MODE else r.mode,
             "base": r.base, "end": r.base + r.size, "acc": r.acc,
             "state_offset": state_offset(PARAMS, r)} for r in regions]


def table_differences(got, want):
    """``"region r field: got x, expected y"`` for every field in which two tables differ."""
    return [f"region {r} {name}: got {g[name]}, expected {w[name]}"
            for r, (g, w) in enumerate(zip(got, want)) for name in TABLE_FIELDS
            if g[name] != w[name]]


def test_good_configuration_is_applied():
    dut = ControlRegisters(PARAMS)

    async def testbench(ctx):
        want = validate(PARAMS, good_regions())
        assert want == (ConfigError.NONE, 0), \
            f"golden refuses the good table: {want[0].name} in region {want[1]}"
        error, region, flag = await apply(ctx, dut, good_regions())
        assert (error, flag) == (ConfigError.NONE, False), \
            f"good table refused: {error.name} in region {region}, STATUS.CFG_ERROR {flag}"
        wrong = table_differences(applied_table(ctx, dut), expected_table(good_regions()))
        assert not wrong, "applied table differs from the good table: " + "; ".join(wrong)

    simulate(dut, testbench)


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
        wrong = table_differences(applied_table(ctx, dut), before)
        assert not wrong, f"{error.name}: applied table changed: " + "; ".join(wrong)
        count = (await read_fields(ctx, dut.bus, dut.regmap, "CNT_CFG_ERRORS"))["COUNT"]
        assert count == 1, f"{error.name}: CNT_CFG_ERRORS.COUNT reads {count}, expected 1"

    simulate(dut, testbench)


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

    simulate(dut, testbench)


async def apply_busy_clocks(ctx, dut, regions):
    """Program ``regions`` and APPLY them, reading ``STATUS`` on every clock from the clock
    after the APPLY write on; returns the clocks ``STATUS.APPLY_BUSY`` reads high. A read sees
    every earlier write, so the first read sees the APPLY command's own pulse (from which
    ``APPLY_BUSY`` is high): the count starts at the command."""
    regmap = dut.regmap
    await program(ctx, dut, regions)
    await write_fields(ctx, dut.bus, regmap, "CTRL", APPLY=1, wait=False)
    # Enough back-to-back reads for the slowest APPLY, and then some.
    words = await bus_reads(ctx, dut.bus, [regmap["STATUS"].offset] * (dut.apply_cycles + 8))
    busy = [regmap["STATUS"].unpack(word)["APPLY_BUSY"] for word in words]
    assert busy[0], f"{regions}: STATUS.APPLY_BUSY not set in the read right after the APPLY"
    assert 0 in busy, f"{regions}: STATUS.APPLY_BUSY still high {len(busy)} clocks after the APPLY"
    return busy.index(0)


@pytest.mark.parametrize("case", ["good"] + [e.name for e in BAD_CASES])
def test_apply_takes_apply_cycles(case):
    """``apply_cycles`` (what the driver and the controller allow an APPLY) against the
    APPLY's measured duration, the clocks ``STATUS.APPLY_BUSY`` reads high from the APPLY
    command's pulse on. The APPLY runs steps of equal length, ``apply_cycles`` clocks for all
    of them: for each region i in turn, a step that holds it, then a region pair checked per
    step (pairs (i, 0) to (i, regions - 1)); then a region copied per step. A good table runs
    every step: one clock of the command, then exactly ``apply_cycles``. A refused table ends
    with the step that found the fault, one of the pairs of the region at fault."""
    dut = ControlRegisters(PARAMS)
    regions = good_regions() if case == "good" else BAD_CASES[ConfigError[case]]
    count = PARAMS.regions
    step = dut.apply_step_cycles

    async def testbench(ctx):
        clocks = await apply_busy_clocks(ctx, dut, regions)
        if case == "good":
            assert clocks == 1 + dut.apply_cycles, \
                f"good table: STATUS.APPLY_BUSY high for {clocks} clocks, expected 1 (the " \
                f"command) + apply_cycles = {1 + dut.apply_cycles}"
            return
        _, at_fault = validate(PARAMS, regions)
        # Region r's steps: its holding step, number r * (count + 1) + 1, then its pairs.
        steps = range(at_fault * (count + 1) + 2, (at_fault + 1) * (count + 1) + 1)
        allowed = [1 + k * step for k in steps]
        assert clocks in allowed, \
            f"{case} table (fault in region {at_fault}): STATUS.APPLY_BUSY high for {clocks} " \
            f"clocks, expected 1 (the command) + {step} clocks (one step) times one of " \
            f"{list(steps)} (to the end of one of region {at_fault}'s pairs): {allowed}; " \
            f"apply_cycles is {dut.apply_cycles}"

    simulate(dut, testbench)


def test_lock_keeps_the_applied_configuration():
    dut = ControlRegisters(PARAMS)
    regmap = dut.regmap

    async def testbench(ctx):
        await apply(ctx, dut, good_regions())
        await write_fields(ctx, dut.bus, regmap, "CTRL", LOCK=1)
        error, region, _ = await apply(ctx, dut, BAD_CASES[ConfigError.OVERLAP])
        assert error == ConfigError.NONE, \
            f"locked region registers were changed: APPLY says {error.name} in region {region}"
        wrong = table_differences(applied_table(ctx, dut), expected_table(good_regions()))
        assert not wrong, "applied table changed under the lock: " + "; ".join(wrong)
        status = await read_fields(ctx, dut.bus, regmap, "STATUS")
        assert status["LOCKED_WRITE"], f"STATUS.LOCKED_WRITE not set by locked writes: {status}"

    simulate(dut, testbench)


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
        for name, want in (("CNT_ACCEPTED", 3), ("CNT_REJECTED", 0)):
            got = (await read_fields(ctx, dut.bus, regmap, name))["COUNT"]
            assert got == want, f"{name}.COUNT reads {got} after 3 accepted events, " \
                                f"expected {want}"
        status = await read_fields(ctx, dut.bus, regmap, "STATUS")
        assert (status["CAPACITY"], status["POISON"]) == (1, 0), \
            f"after capacity events: STATUS.CAPACITY {status['CAPACITY']} (expected 1), " \
            f"STATUS.POISON {status['POISON']} (expected 0)"

    simulate(dut, testbench)


def test_clear_command_reaches_the_clear_engine():
    dut = ControlRegisters(PARAMS)
    regmap = dut.regmap

    async def testbench(ctx):
        await write_fields(ctx, dut.bus, regmap, "CTRL", CLEAR=1, CLEAR_REGION=2)
        got = (ctx.get(dut.clear_start), ctx.get(dut.clear_region))
        assert got == (1, 2), f"CTRL.CLEAR of region 2: (clear_start, clear_region) {got}"
        await ctx.tick()
        assert ctx.get(dut.clear_start) == 0, "clear_start lasted more than one clock"
        ctx.set(dut.clear_busy, 1)
        status = await read_fields(ctx, dut.bus, regmap, "STATUS")
        assert status["CLEAR_BUSY"], "STATUS.CLEAR_BUSY not set while clear_busy is high"
        ctx.set(dut.clear_busy, 0)
        ctx.set(dut.clear_done, 1)
        await ctx.tick()
        ctx.set(dut.clear_done, 0)
        status = await read_fields(ctx, dut.bus, regmap, "STATUS")
        assert status["CLEAR_DONE"], "STATUS.CLEAR_DONE not set by a clear_done pulse"

    simulate(dut, testbench)


def test_region_writes_during_apply_are_ignored_and_flagged():
    """While APPLY runs, a write to a region register is ignored and sets LOCKED_WRITE; the
    applied table is the configuration that was validated. ``table_ready`` is low only while
    the validated regions are copied."""
    dut = ControlRegisters(PARAMS)
    regmap = dut.regmap

    async def testbench(ctx):
        await program(ctx, dut, good_regions())
        await write_fields(ctx, dut.bus, regmap, "CTRL", APPLY=1)
        await ctx.tick()
        assert ctx.get(dut.table_ready), "table not ready before the copy"
        await write_fields(ctx, dut.bus, regmap, "R1_BASE_LO", ADDR=0x3000)   # overlaps region 2
        flags = await read_fields(ctx, dut.bus, regmap, "STATUS")
        assert flags["APPLY_BUSY"], "APPLY finished too early for the test"
        assert flags["LOCKED_WRITE"], "write to R1_BASE_LO during APPLY not flagged"
        not_ready = 0
        for _ in range(dut.apply_cycles):
            not_ready += not ctx.get(dut.table_ready)
            await ctx.tick()
        copy_cycles = dut.apply_step_cycles * PARAMS.regions    # one step per region
        assert not_ready == copy_cycles, \
            f"table_ready low for {not_ready} cycles, expected {copy_cycles} (the copy)"
        assert ctx.get(dut.table_ready), "table_ready low after the APPLY"
        assert not (await read_fields(ctx, dut.bus, regmap, "STATUS"))["APPLY_BUSY"], \
            f"STATUS.APPLY_BUSY still set {dut.apply_cycles} clocks after the APPLY"
        got = (await read_fields(ctx, dut.bus, regmap, "R1_BASE_LO"))["ADDR"]
        want = good_regions()[1].base & ((1 << REGISTER_BITS) - 1)
        assert got == want, f"R1_BASE_LO.ADDR reads {got:#x} after a write during APPLY, " \
                            f"expected the programmed {want:#x}"
        wrong = table_differences(applied_table(ctx, dut), expected_table(good_regions()))
        assert not wrong, "applied table is not the validated one: " + "; ".join(wrong)

    simulate(dut, testbench)
