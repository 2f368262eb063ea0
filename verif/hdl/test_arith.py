"""amaranth.sim tests of the arithmetic helpers of hdl/arith.py."""

import numpy as np
import pytest
from amaranth import Module, Signal

from bench.sim import simulate
from hdl.arith import registered_order

SEED = 11


def _order_pairs(rng, low_width, high_width):
    """Pairs of values that differ in every part a compare may be cut into: random ones,
    equal ones, and ones equal but for a single bit (each bit in turn, both ways)."""
    def draw(bits):
        return int.from_bytes(rng.bytes(bits // 8 + 1), "little") % (1 << bits)

    width = min(low_width, high_width)
    pairs = [(draw(low_width), draw(high_width)) for _ in range(60)]
    for _ in range(10):
        value = draw(width)
        pairs.append((value, value))
        for bit in range(width):
            pairs += [(value, value ^ 1 << bit), (value ^ 1 << bit, value)]
    return pairs


@pytest.mark.parametrize("levels", [1, 2, 3])
@pytest.mark.parametrize("or_equal", [False, True])
@pytest.mark.parametrize("widths", [(1, 1), (7, 9), (41, 40), (72, 72)])
def test_registered_order_compares_exactly_levels_clocks_late(levels, or_equal, widths):
    rng = np.random.default_rng(SEED)
    low, high = Signal(widths[0]), Signal(widths[1])
    m = Module()
    result = Signal()
    m.d.comb += result.eq(registered_order(m, low, high, "order", or_equal=or_equal,
                                           levels=levels))
    pairs = _order_pairs(rng, *widths)

    def order(a, b):
        return int(a <= b if or_equal else a < b)

    async def testbench(ctx):
        previous = None
        for a, b in pairs:
            ctx.set(low, a)
            ctx.set(high, b)
            where = f"levels {levels}, widths {widths}, or_equal {or_equal}, {a:#x} vs {b:#x}"
            if levels > 1:
                await ctx.tick().repeat(levels - 1)
            if previous is not None:        # a clock early, it still reads the last pair's
                assert ctx.get(result) == order(*previous), \
                    f"{where}: the result read {ctx.get(result)} after {levels - 1} clocks"
            await ctx.tick()
            assert ctx.get(result) == order(a, b), \
                f"{where}: read {ctx.get(result)}, expected {order(a, b)} after {levels} clocks"
            previous = a, b

    simulate(m, testbench)


def test_registered_order_refuses_no_levels():
    with pytest.raises(ValueError, match=r"levels must be a positive integer, not 0"):
        registered_order(Module(), Signal(4), Signal(4), "order", levels=0)
