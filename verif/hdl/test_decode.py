"""amaranth.sim tests of the address decoder: against golden.config.decode, and its measured
latency against ``AddressDecoder.LATENCY``."""

import numpy as np
import pytest

from bench.regions import PARAMS, good_regions
from bench.sim import simulate
from golden.config import decode, state_offset
from hdl.decode import AddressDecoder
from spec.params import Mode
from spec.regmap import Region

SEED = 5


def set_regions(ctx, dut, regions):
    """Drive the decoder's region table with ``regions`` as APPLY would have applied them."""
    for index, region in enumerate(regions):
        view = dut.regions[index]
        ctx.set(view.enable, region.enable)
        ctx.set(view.mode, Mode(region.mode))
        ctx.set(view.base, region.base)
        ctx.set(view.end, region.base + region.size)
        ctx.set(view.acc, region.acc)
        ctx.set(view.state_offset, state_offset(PARAMS, region))
        ctx.set(view.threshold, region.threshold)
        ctx.set(view.expected, region.expected)


def test_random_and_edge_addresses_match_golden():
    rng = np.random.default_rng(SEED)
    regions = good_regions()
    # An enabled region across a boundary of the decoder's halves (it compares each half of an
    # address apart), with both bounds off that boundary.
    half = 1 << (PARAMS.address_bits // 2)
    regions[3] = Region(True, Mode.GBINARY.value, 2 * half - 0x40, 0x80, 0xA0000, 1, 3)
    edges = []
    for r in regions:
        edges += [r.base - 1, r.base, r.base + r.size - 1, r.base + r.size]
    edges += [PARAMS.window_base - 1, PARAMS.window_base, (1 << PARAMS.address_bits) - 1,
              half - 1, half]
    addresses = [a % (1 << PARAMS.address_bits) for a in edges] + \
        rng.integers(0, 0x3000, size=200).tolist() + \
        rng.integers(0, 1 << PARAMS.address_bits, size=50).tolist()
    dut = AddressDecoder(PARAMS)

    async def testbench(ctx):
        set_regions(ctx, dut, regions)
        for enable in (1, 0):
            ctx.set(dut.enable, enable)
            for address in addresses:
                ctx.set(dut.address, address)
                await ctx.tick().repeat(dut.LATENCY - 1)
                window, region, mode, state = decode(PARAMS, regions, enable, address)
                # ``ahead``: the mode and state address a clock before ``decoded``.
                got = (ctx.get(dut.ahead.mode).value, ctx.get(dut.ahead.state_address))
                want = (mode, state if mode != Mode.IDENTITY.value else got[1])
                assert got == want, \
                    f"seed {SEED}, enable {enable}, address {address:#x}: ahead's mode and " \
                    f"state address {got} a clock before decoded, golden {want}"
                await ctx.tick()
                got = (ctx.get(dut.decoded.window), ctx.get(dut.decoded.mode).value)
                assert got == (window, mode), \
                    f"seed {SEED}, enable {enable}, address {address:#x}: window/mode {got}, " \
                    f"golden {(window, mode)}"
                if mode != Mode.IDENTITY.value:
                    want = (region, state, regions[region].threshold, regions[region].expected)
                    got = (ctx.get(dut.decoded.region), ctx.get(dut.decoded.state_address),
                           ctx.get(dut.decoded.threshold), ctx.get(dut.decoded.expected))
                    assert got == want, f"seed {SEED}, address {address:#x}: region, state " \
                                        f"address, threshold, expected {got}, golden {want}"

    simulate(dut, testbench)


def _decoded(ctx, dut):
    return {name: ctx.get(getattr(dut.decoded, name)) for name, _ in dut.decoded.shape()}


async def changes_after(ctx, dut, change, clocks):
    """With the inputs held steady for ``clocks`` clocks, apply ``change(ctx)`` and watch
    ``decoded`` for ``clocks`` clocks; returns the clocks (counted from the change) at which it
    changed, and its fields before and at the end."""
    await ctx.tick().repeat(clocks)
    before = last = _decoded(ctx, dut)
    change(ctx)
    changed = []
    for clock in range(1, clocks + 1):
        await ctx.tick()
        now = _decoded(ctx, dut)
        if now != last:
            changed.append(clock)
        last = now
    return changed, before, last


def check_golden(where, regions, enable, address, decoded):
    window, region, mode, state = decode(PARAMS, regions, enable, address)
    got = (decoded["window"], decoded["mode"].value)
    assert got == (window, mode), f"{where}: window/mode {got}, golden {(window, mode)}"
    if mode != Mode.IDENTITY.value:
        got = (decoded["region"], decoded["state_address"])
        assert got == (region, state), \
            f"{where}: region, state address {got}, golden {(region, state)}"


# Address changes that change ``decoded``: (from, to) with enable set, for the regions of
# good_regions() (0: G-Binary at 0x0000, 1: G-Ternary at 0x1000, 2: identity at 0x2000).
ADDRESS_CHANGES = {
    "region 0 to region 1": (0x0040, 0x1040),
    "line to line in region 0 (state address)": (0x0040, 0x0080),
    "region 1 to identity region 2": (0x1040, 0x2040),
    "no region to region 0": (0x3000, 0x0000),
    "region 0 to the register window": (0x0040, PARAMS.window_base),
    "region 0 to its accumulators": (0x0040, good_regions()[0].acc),
}


@pytest.mark.parametrize("what", list(ADDRESS_CHANGES))
def test_measured_address_latency_is_latency(what):
    """``AddressDecoder.LATENCY``, which the controller waits for, is the decoder's latency:
    after a change of a steady address, ``decoded`` changes once, exactly ``LATENCY`` clocks
    later (not sooner, not later), to the golden decode of the new address."""
    start, end = ADDRESS_CHANGES[what]
    regions = good_regions()
    dut = AddressDecoder(PARAMS)
    clocks = 2 * dut.LATENCY + 2

    async def testbench(ctx):
        set_regions(ctx, dut, regions)
        ctx.set(dut.enable, 1)
        ctx.set(dut.address, start)
        changed, before, after = await changes_after(
            ctx, dut, lambda ctx: ctx.set(dut.address, end), clocks)
        where = f"address {start:#x} to {end:#x} ({what})"
        assert changed == [dut.LATENCY], \
            f"{where}: decoded changed at clocks {changed} after the change (watched for " \
            f"{clocks}), expected only at AddressDecoder.LATENCY = {dut.LATENCY}; before " \
            f"{before}, after {after}"
        check_golden(f"{where}, {dut.LATENCY} clocks on", regions, 1, end, after)

    simulate(dut, testbench)


def test_enable_and_region_changes_settle_within_latency():
    """A change of ``enable`` or of the region table reaches ``decoded`` within ``LATENCY``
    clocks too (sooner: they enter the decoder's steps after its address copy; in the clocks
    between, ``decoded`` may mix old and new), so a user that holds every input steady for
    ``LATENCY`` clocks reads the golden decode."""
    address = 0x0040                                 # in region 0 of good_regions()
    regions = good_regions()
    moved = [Region(**{**regions[0].__dict__, "base": 0x4000})] + regions[1:]
    dut = AddressDecoder(PARAMS)
    clocks = 2 * dut.LATENCY + 2
    changes = {      # what: (regions, enable) before, then after
        "enable 1 to 0": ((regions, 1), (regions, 0)),
        "enable 0 to 1": ((regions, 0), (regions, 1)),
        "region 0 moved away from the address": ((regions, 1), (moved, 1)),
        "region 0 moved back onto the address": ((moved, 1), (regions, 1)),
    }

    def drive(table, enable):
        def set_inputs(ctx):
            set_regions(ctx, dut, table)
            ctx.set(dut.enable, enable)
        return set_inputs

    async def testbench(ctx):
        ctx.set(dut.address, address)
        for what, (old, new) in changes.items():
            drive(*old)(ctx)
            changed, before, after = await changes_after(ctx, dut, drive(*new), clocks)
            where = f"address {address:#x}, {what}"
            assert changed and max(changed) <= dut.LATENCY, \
                f"{where}: decoded changed at clocks {changed} after the change (watched " \
                f"for {clocks}), expected by AddressDecoder.LATENCY = {dut.LATENCY}; before " \
                f"{before}, after {after}"
            check_golden(f"{where}, {clocks} clocks on", new[0], new[1], address, after)

    simulate(dut, testbench)
