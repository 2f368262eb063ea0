"""The stream stages of hdl.pipeline. The skid buffer: every payload through once, in order,
under random backpressure on both sides; no clock of latency while empty. The output queue:
every entry out once, in order; one clock from a write to an empty queue to its read;
``level`` exact."""

import numpy as np
import pytest

from bench.sim import simulate
from hdl.pipeline import OutputQueue, SkidBuffer


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


@pytest.mark.parametrize("depth", [2, 5])
@pytest.mark.parametrize("seed", [1, 2])
def test_output_queue_in_order_one_clock_late(depth, seed):
    """Every entry out once, in order, under random reads; an entry written to an empty queue
    is on ``r_data`` one clock later; ``level`` counts the entries."""
    rng = np.random.default_rng(seed)
    dut = OutputQueue(width=16, depth=depth)
    written, received, errors = [], [], []

    async def bench(ctx):
        model = []                      # entries in the queue, head first
        for clock in range(1500):
            level = ctx.get(dut.level)
            if level != len(model):
                errors.append(f"clock {clock}: level {level}, {len(model)} entries in it")
                return
            if model and not ctx.get(dut.r_rdy):
                # Also one clock after a write to an empty queue: the entry is the head.
                errors.append(f"clock {clock}: {len(model)} entries but r_rdy low")
                return
            write = bool(rng.random() < 0.6) and ctx.get(dut.w_rdy)
            read = bool(rng.random() < 0.5)
            value = int(rng.integers(0, 1 << 16))
            ctx.set(dut.w_en, write)
            ctx.set(dut.w_data, value)
            ctx.set(dut.r_en, read)
            if read and ctx.get(dut.r_rdy):
                received.append(ctx.get(dut.r_data))
                model.pop(0)
            await ctx.tick()
            if write:
                written.append(value)
                model.append(value)
        ctx.set(dut.w_en, 0)
        ctx.set(dut.r_en, 1)
        while ctx.get(dut.r_rdy):
            received.append(ctx.get(dut.r_data))
            await ctx.tick()

    simulate(dut, bench)
    assert not errors, f"seed {seed}: " + "\n".join(errors[:10])
    assert received == written, \
        f"seed {seed}: {len(received)} of {len(written)} entries out; first difference at " \
        f"{next((k for k, (a, b) in enumerate(zip(received, written)) if a != b), None)}"
