"""amaranth.sim tests of the register block generated from the register map."""

import pytest

from bench.sim import bus_read, bus_reads, bus_write, read_fields, simulate, write_fields
from hdl.csr import WRITE_LATENCY, RegisterBlock
from spec.params import REGISTER_BITS, ControllerParams, DatapathParams
from spec.regmap import Access, register_map

PARAMS = DatapathParams(line_bits=64, counter_width=3, latency=1)
#: A register word of all ones.
ONES = (1 << REGISTER_BITS) - 1


def make_block():
    return RegisterBlock(register_map(ControllerParams(PARAMS, regions=2)), lock=("CTRL", "LOCK"))


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
    block = RegisterBlock(register_map(ControllerParams(PARAMS, regions=8)), lock=("CTRL", "LOCK"))
    regs = sorted(block.regmap, key=lambda reg: (reg.offset * 37) % 1024)   # scattered order

    async def testbench(ctx):
        for n, reg in enumerate(regs):
            await bus_write(ctx, block.bus, reg.offset, (0x9E3779B9 * (n + 1)) & ONES)
        alone = {reg.name: await bus_read(ctx, block.bus, reg.offset) for reg in regs}
        words = await bus_reads(ctx, block.bus, [reg.offset for reg in regs])
        got = {reg.name: word for reg, word in zip(regs, words)}
        wrong = {name: (hex(got[name]), hex(value)) for name, value in alone.items()
                 if got[name] != value}
        assert not wrong, f"back-to-back read differs from a lone read (got, alone): {wrong}"

    simulate(block, testbench)
