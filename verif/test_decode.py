"""amaranth.sim test of the address decoder against golden.config.decode."""

import numpy as np
from amaranth.sim import Simulator

from golden.config import Region, decode, state_offset
from hdl.decode import AddressDecoder
from hdl.params import Mode
from verif.test_control import PARAMS, good_regions

SEED = 5


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
        for enable in (1, 0):
            ctx.set(dut.enable, enable)
            for address in addresses:
                ctx.set(dut.address, address)
                await ctx.tick().repeat(dut.LATENCY)
                window, region, mode, state = decode(PARAMS, regions, enable, address)
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

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
