"""The stream stages of hdl.pipeline. The skid buffer: every payload through once, in order,
under random backpressure on both sides; no clock of latency while empty. ``out_of_reset``:
the inverse of the reset, a clock late."""

import numpy as np
import pytest
from amaranth import ClockDomain, Elaboratable, Module, Signal

from bench.sim import simulate
from hdl.pipeline import SkidBuffer, out_of_reset


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_skid_buffer_passes_everything_in_order(seed):
    rng = np.random.default_rng(seed)
    payloads = [int(x) for x in rng.integers(0, 1 << 16, 300)]
    dut = SkidBuffer(16)
    received, errors = [], []
    offer = [bool(x) for x in rng.random(2000) < 0.7]
    take = [bool(x) for x in rng.random(2000) < 0.6]

    async def bench(ctx):
        sent = 0
        for clock in range(len(offer)):
            valid = offer[clock] and sent < len(payloads)
            ctx.set(dut.sink.valid, valid)
            ctx.set(dut.sink.payload, payloads[sent] if valid else 0)
            ctx.set(dut.source.ready, take[clock])
            ready_before = ctx.get(dut.sink.ready)
            full = ctx.get(dut.full)
            out_valid, out = ctx.get(dut.source.valid), ctx.get(dut.source.payload)
            if valid and not full and not out_valid:
                errors.append(f"clock {clock}: payload {sent} offered to an empty buffer is "
                              f"not on the source at once")
            if out_valid and take[clock]:
                received.append(out)
            if valid and ready_before:
                sent += 1
            await ctx.tick()
            if sent == len(payloads) and not ctx.get(dut.full):
                break

    simulate(dut, bench)
    assert not errors, "\n".join(errors[:10])
    assert received == payloads[:len(received)] and len(received) == len(payloads), \
        f"seed {seed}: {len(received)} of {len(payloads)} payloads out; first difference at " \
        f"{next((k for k, (a, b) in enumerate(zip(received, payloads)) if a != b), None)}"


class _OutOfReset(Elaboratable):
    def __init__(self):
        self.live = Signal()
        self.sync = ClockDomain()       # its reset driven by the test

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = self.sync
        m.d.comb += self.live.eq(out_of_reset(m))
        return m


def test_out_of_reset_follows_the_reset_a_clock_late():
    """High before any reset and between resets; low from the second clock of each reset
    (of 1 and 3 clocks) through the first clock after it."""
    dut = _OutOfReset()
    resets = [0, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0]
    seen = []

    async def bench(ctx):
        for reset in resets:
            ctx.set(dut.sync.rst, reset)
            seen.append(ctx.get(dut.live))
            await ctx.tick()

    simulate(dut, bench)
    want = [1] + [int(not before) for before in resets[:-1]]
    assert seen == want, f"live per clock {seen}, expected {want} for resets {resets}"

