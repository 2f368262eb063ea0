"""``bench.sim.simulate``'s deadline: a testbench that waits for a handshake that never comes
fails its test after ``deadline`` clocks instead of hanging it; one that returns in time is
left alone."""

import pytest
from amaranth import Module, Signal

from bench.sim import simulate


def _never_high():
    m = Module()
    m.stuck = Signal()
    m.d.sync += m.stuck.eq(0)
    return m


def test_a_testbench_that_never_returns_fails_at_the_deadline():
    dut = _never_high()

    async def waits_forever(ctx):
        while not ctx.get(dut.stuck):
            await ctx.tick()

    with pytest.raises(AssertionError, match="had not returned after 50 clocks"):
        simulate(dut, waits_forever, deadline=50)


def test_a_testbench_that_returns_in_time_passes():
    dut = _never_high()
    clocks = []

    async def counts(ctx):
        for clock in range(49):
            await ctx.tick()
            clocks.append(clock)

    simulate(dut, counts, deadline=50)
    assert len(clocks) == 49, f"the testbench ran {len(clocks)} clocks of 49"
