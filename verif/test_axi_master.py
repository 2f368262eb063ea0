"""In ``amaranth.sim``: :class:`hdl.axi.AxiLineMaster`'s write data path (its skid buffer)
under a random owner and a random ``WREADY``: every line of a run reaches ``WDATA`` and
``WSTRB`` once, in order, and the run ends with one ``write_done``."""

import random

import pytest
from amaranth.sim import Simulator

from hdl.axi import RESP_OKAY, AxiLineMaster
from verif.sim_streams import send

LINE_BITS = 32
ADDRESS = 0x100


def _simulate(master, owner, wready):
    """Run ``owner(ctx)`` against ``master`` and a memory that takes every address at once,
    takes a W beat on the clocks ``wready(clock)`` says, and answers each taken W beat with an
    OKAY response at once. Returns the (WDATA, WSTRB) beats taken, in order."""
    beats = []

    async def memory(ctx):
        axi = master.axi
        ctx.set(axi.awready, 1)
        clock, responses, bvalid = 0, 0, False
        async for _, _, wvalid, wdata, wstrb, ready, bready in ctx.tick().sample(
                axi.wvalid, axi.wdata, axi.wstrb, axi.wready, axi.bready):
            if bvalid and bready:
                responses -= 1
            if wvalid and ready:
                beats.append((wdata, wstrb))
                responses += 1
            clock += 1
            bvalid = responses > 0
            ctx.set(axi.wready, wready(clock))
            ctx.set(axi.bvalid, bvalid)
            ctx.set(axi.bresp, RESP_OKAY)

    sim = Simulator(master)
    sim.add_clock(1e-8)
    sim.add_process(memory)
    sim.add_testbench(owner)
    sim.run_until(2e-5)
    return beats


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_write_run_under_random_valid_and_wready(seed):
    rng = random.Random(seed)
    master = AxiLineMaster(line_bits=LINE_BITS, address_bits=16)
    lines = [(rng.getrandbits(LINE_BITS), rng.getrandbits(LINE_BITS // 8)) for _ in range(20)]
    stalls = [rng.random() < 0.6 for _ in range(2000)]
    done = []

    async def owner(ctx):
        await send(ctx, master.write_command, address=ADDRESS, beats=len(lines))
        for data, strobe in lines:
            ctx.set(master.write_data.payload.data, data)
            ctx.set(master.write_data.payload.strobe, strobe)
            ctx.set(master.write_data.valid, rng.random() < 0.8)
            while True:
                valid, ready = ctx.get(master.write_data.valid), ctx.get(master.write_data.ready)
                await ctx.tick()
                if valid and ready:
                    break
                ctx.set(master.write_data.valid, rng.random() < 0.8)
        ctx.set(master.write_data.valid, 0)
        await ctx.tick().until(master.write_done)
        done.append(ctx.get(master.write_error))

    beats = _simulate(master, owner, wready=lambda clock: not stalls[clock % len(stalls)])
    for i, (got, pushed) in enumerate(zip(beats, lines)):
        assert got == pushed, f"seed {seed}: line {i}: WDATA/WSTRB {got}, pushed {pushed}"
    assert len(beats) == len(lines), f"seed {seed}: {len(beats)} W beats for {len(lines)} lines"
    assert done == [0], f"seed {seed}: write_done/write_error {done}"
