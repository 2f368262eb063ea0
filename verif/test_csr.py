"""amaranth.sim tests of the register block generated from the register map."""

import pytest
from amaranth.sim import Simulator

from hdl.csr import READ_LATENCY, WRITE_LATENCY, RegisterBlock
from hdl.params import DatapathParams
from hdl.regmap import register_map

PARAMS = DatapathParams(line_bits=64, counter_width=3, latency=1)


async def bus_write(ctx, bus, offset, data):
    ctx.set(bus.addr, offset // 4)
    ctx.set(bus.w_data, data)
    ctx.set(bus.w_stb, 1)
    await ctx.tick()
    ctx.set(bus.w_stb, 0)
    await ctx.tick().repeat(WRITE_LATENCY - 1)


async def bus_read(ctx, bus, offset):
    ctx.set(bus.addr, offset // 4)
    ctx.set(bus.r_stb, 1)
    await ctx.tick()
    ctx.set(bus.r_stb, 0)
    await ctx.tick().repeat(READ_LATENCY - 1)
    return ctx.get(bus.r_data)


def run(block, testbench):
    sim = Simulator(block)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


def make_block():
    return RegisterBlock(register_map(PARAMS, regions=2), lock=("CTRL", "LOCK"))


def test_every_register_reads_its_reset_value():
    block = make_block()

    async def testbench(ctx):
        for reg in block.regmap:
            ws = sum(f.mask for f in reg.fields if f.access == "WS")
            got = await bus_read(ctx, block.bus, reg.offset)
            assert got == reg.reset & ~ws, f"{reg.name} at {reg.offset:#x}: read {got:#x}, " \
                                           f"reset is {reg.reset:#x}"
        assert await bus_read(ctx, block.bus, 0xFFC) == 0, "unmapped word did not read 0"

    run(block, testbench)


def test_rw_fields_store_only_their_bits_and_r_fields_ignore_writes():
    block = make_block()

    async def testbench(ctx):
        for reg in block.regmap:
            before = await bus_read(ctx, block.bus, reg.offset)
            if any(f.access == "RW1S" or f.access == "WS" for f in reg.fields):
                continue                        # commands and the lock: tested below
            await bus_write(ctx, block.bus, reg.offset, 0xFFFF_FFFF)
            rw = sum(f.mask for f in reg.fields if f.access == "RW")
            r_only = sum(f.mask for f in reg.fields if f.access == "R")
            want = (0xFFFF_FFFF & rw) | (before & r_only)
            got = await bus_read(ctx, block.bus, reg.offset)
            assert got == want, f"{reg.name}: wrote all ones, read {got:#x}, want {want:#x}"

    run(block, testbench)


def test_sticky_flags_set_by_hardware_clear_by_writing_one():
    block = make_block()
    status = block.regmap["STATUS"]
    capacity = status.field("CAPACITY")
    other = status.field("POISON")
    strobe = block.set_strobe("STATUS", "CAPACITY")

    async def testbench(ctx):
        ctx.set(strobe, 1)
        await ctx.tick()
        ctx.set(strobe, 0)
        assert await bus_read(ctx, block.bus, status.offset) & capacity.mask
        await bus_write(ctx, block.bus, status.offset, other.mask)     # clears another flag
        assert await bus_read(ctx, block.bus, status.offset) & capacity.mask, "cleared by 0"
        # A set in the same cycle as the clear wins: the set strobe goes with the clock at
        # which the write reaches the register.
        ctx.set(block.bus.addr, status.offset // 4)
        ctx.set(block.bus.w_data, capacity.mask)
        ctx.set(block.bus.w_stb, 1)
        await ctx.tick()
        ctx.set(block.bus.w_stb, 0)
        await ctx.tick().repeat(WRITE_LATENCY - 2)
        ctx.set(strobe, 1)
        await ctx.tick()
        ctx.set(strobe, 0)
        assert await bus_read(ctx, block.bus, status.offset) & capacity.mask, "set lost"
        await bus_write(ctx, block.bus, status.offset, capacity.mask)
        assert not await bus_read(ctx, block.bus, status.offset) & capacity.mask, "not cleared"

    run(block, testbench)


def test_write_strobe_pulses_once_and_reads_zero():
    block = make_block()
    ctrl = block.regmap["CTRL"]
    apply = block.field("CTRL", "APPLY")

    async def testbench(ctx):
        await bus_write(ctx, block.bus, ctrl.offset, ctrl.field("APPLY").mask)
        assert ctx.get(apply) == 1, f"APPLY did not pulse {WRITE_LATENCY} cycles after the write"
        await ctx.tick()
        assert ctx.get(apply) == 0, "APPLY lasted more than one cycle"
        assert not await bus_read(ctx, block.bus, ctrl.offset) & ctrl.field("APPLY").mask

    run(block, testbench)


def test_lock_freezes_region_registers_until_reset():
    block = make_block()
    ctrl, base = block.regmap["CTRL"], block.regmap["R1_BASE_LO"]
    lock = ctrl.field("LOCK").mask

    async def testbench(ctx):
        await bus_write(ctx, block.bus, base.offset, 0x1000)
        await bus_write(ctx, block.bus, ctrl.offset, lock)
        await bus_write(ctx, block.bus, ctrl.offset, 0)                # 0 does not unlock
        assert await bus_read(ctx, block.bus, ctrl.offset) & lock, "lock cleared by a write"
        await bus_write(ctx, block.bus, base.offset, 0x2000)
        assert ctx.get(block.locked_write) == 1, "ignored write not reported"
        assert await bus_read(ctx, block.bus, base.offset) == 0x1000, "locked register changed"
        await bus_write(ctx, block.bus, ctrl.offset, lock | ctrl.field("ENABLE").mask)
        assert await bus_read(ctx, block.bus, ctrl.offset) & ctrl.field("ENABLE").mask, \
            "CTRL is not a region register and must stay writable"
        assert ctx.get(block.locked_write) == 0

    run(block, testbench)


def test_lock_must_be_a_set_once_field():
    with pytest.raises(ValueError, match=r"lock field CTRL.ENABLE must be RW1S"):
        RegisterBlock(register_map(PARAMS), lock=("CTRL", "ENABLE"))


def test_back_to_back_reads_across_groups_and_sets():
    """One read strobe per clock, hopping between the read groups and sets of eight regions'
    map: each read returns what the same register returns read alone."""
    block = RegisterBlock(register_map(PARAMS, regions=8), lock=("CTRL", "LOCK"))
    regs = sorted(block.regmap, key=lambda reg: (reg.offset * 37) % 1024)   # scattered order

    async def testbench(ctx):
        for n, reg in enumerate(regs):
            await bus_write(ctx, block.bus, reg.offset, (0x9E3779B9 * (n + 1)) & 0xFFFFFFFF)
        alone = {reg.name: await bus_read(ctx, block.bus, reg.offset) for reg in regs}
        got = {}
        for clock in range(len(regs) + READ_LATENCY - 1):
            if clock < len(regs):
                ctx.set(block.bus.addr, regs[clock].offset // 4)
            ctx.set(block.bus.r_stb, clock < len(regs))
            await ctx.tick()
            if clock + 1 >= READ_LATENCY:
                got[regs[clock + 1 - READ_LATENCY].name] = ctx.get(block.bus.r_data)
        wrong = {name: (hex(got[name]), hex(value)) for name, value in alone.items()
                 if got[name] != value}
        assert not wrong, f"back-to-back read differs from a lone read (got, alone): {wrong}"

    run(block, testbench)
