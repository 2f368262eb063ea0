"""In ``amaranth.sim``: :class:`hdl.axi.AxiLineMaster`'s write data path (its skid buffer, kept
in groups of columns) under a random owner and a random ``WREADY``: every line of a run
reaches ``WDATA`` and ``WSTRB`` once, in order, every group's ready agrees, a fill run writes
the owner's line to every line of the run, and each run ends with one ``write_done``."""

import random

import pytest
from amaranth.sim import Simulator

from hdl.axi import RESP_OKAY, AxiLineMaster
from verif.sim_streams import send

LINE_BITS = 32
COPIES = 4                      # groups of columns, each with its own handshake
EVERY_GROUP = (1 << COPIES) - 1
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
    master = AxiLineMaster(line_bits=LINE_BITS, address_bits=16, copies=COPIES)
    lines = [(rng.getrandbits(LINE_BITS), rng.getrandbits(LINE_BITS // 8)) for _ in range(20)]
    stalls = [rng.random() < 0.6 for _ in range(2000)]
    done, readies = [], set()

    async def owner(ctx):
        await send(ctx, master.write_command, address=ADDRESS, beats=len(lines), fill=0)
        for data, strobe in lines:
            ctx.set(master.write_data.data, data)
            ctx.set(master.write_data.strobe, strobe)
            while True:
                offered = rng.random() < 0.8
                ctx.set(master.write_valid, EVERY_GROUP if offered else 0)
                ready = ctx.get(master.write_ready)
                readies.add(ready)
                await ctx.tick()
                if offered and ready:
                    break
        ctx.set(master.write_valid, 0)
        await ctx.tick().until(master.write_done)
        done.append(ctx.get(master.write_error))

    beats = _simulate(master, owner, wready=lambda clock: not stalls[clock % len(stalls)])
    for i, (got, pushed) in enumerate(zip(beats, lines)):
        assert got == pushed, f"seed {seed}: line {i}: WDATA/WSTRB {got}, pushed {pushed}"
    assert len(beats) == len(lines), f"seed {seed}: {len(beats)} W beats for {len(lines)} lines"
    assert readies <= {0, EVERY_GROUP}, f"seed {seed}: the groups' write_ready differ: {readies}"
    assert done == [0], f"seed {seed}: write_done/write_error {done}"


@pytest.mark.parametrize("seed", [1, 2])
def test_fill_run_writes_the_owners_line_to_every_line(seed):
    """A fill run after an ordinary one (whose last line the output registers still hold)
    writes the owner's line, not the held one, on every beat."""
    rng = random.Random(seed)
    master = AxiLineMaster(line_bits=LINE_BITS, address_bits=16, copies=COPIES)
    first = (rng.getrandbits(LINE_BITS), rng.getrandbits(LINE_BITS // 8))
    fill = (rng.getrandbits(LINE_BITS), rng.getrandbits(LINE_BITS // 8))
    stalls = [rng.random() < 0.5 for _ in range(2000)]
    done, taken = [], []

    async def owner(ctx):
        await send(ctx, master.write_command, address=ADDRESS, beats=1, fill=0)
        ctx.set(master.write_data.data, first[0])
        ctx.set(master.write_data.strobe, first[1])
        ctx.set(master.write_valid, EVERY_GROUP)
        await ctx.tick().until(master.write_ready == EVERY_GROUP)
        ctx.set(master.write_valid, 0)
        await ctx.tick().until(master.write_done)
        done.append(ctx.get(master.write_error))
        ctx.set(master.write_data.data, fill[0])
        ctx.set(master.write_data.strobe, fill[1])
        await send(ctx, master.write_command, address=ADDRESS, beats=7, fill=1)
        async for _, _, done_now, error in ctx.tick().sample(master.write_done,
                                                             master.write_error):
            if done_now:
                done.append(error)
                break

    beats = _simulate(master, owner, wready=lambda clock: not stalls[clock % len(stalls)])
    expected = [first] + [fill] * 7
    wrong = [(i, got, want) for i, (got, want) in enumerate(zip(beats, expected)) if got != want]
    assert not wrong, f"seed {seed}: (beat, WDATA/WSTRB, expected) {wrong[:3]}"
    assert len(beats) == len(expected), f"seed {seed}: {len(beats)} W beats, not {len(expected)}"
    assert done == [0, 0], f"seed {seed}: write_done/write_error {done}"


@pytest.mark.parametrize("beats", [1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17, 34])
def test_runs_of_every_length_issue_one_address_per_line(beats):
    """Read and fill runs against a memory that takes every address, W beat and response at
    once, so that a run's first step comes the clock after its load: each issues exactly
    ``beats`` addresses, in line order (the counters keep their low bits apart; every residue
    of those bits and runs that wrap them more than once), and a write run ends with one
    ``write_done``."""
    master = AxiLineMaster(line_bits=LINE_BITS, address_bits=16, copies=COPIES)
    line_bytes = LINE_BITS // 8
    reads, writes, w_beats, done = [], [], [], []

    async def memory(ctx):
        axi = master.axi
        for ready in (axi.arready, axi.awready, axi.wready):
            ctx.set(ready, 1)
        responses = 0
        async for _, _, arvalid, araddr, awvalid, awaddr, wvalid, bready, write_done in \
                ctx.tick().sample(axi.arvalid, axi.araddr, axi.awvalid, axi.awaddr, axi.wvalid,
                                  axi.bready, master.write_done):
            reads.extend([araddr] if arvalid else [])
            writes.extend([awaddr] if awvalid else [])
            w_beats.extend([1] if wvalid else [])
            done.extend([1] if write_done else [])
            responses += wvalid - (bready and responses > 0)
            ctx.set(axi.bvalid, responses > 0)
            ctx.set(axi.bresp, RESP_OKAY)

    async def owner(ctx):
        await send(ctx, master.read_command, address=ADDRESS, beats=beats)
        await send(ctx, master.write_command, address=ADDRESS, beats=beats, fill=1)

    sim = Simulator(master)
    sim.add_clock(1e-8)
    sim.add_process(memory)
    sim.add_testbench(owner)
    sim.run_until(1e-8 * (4 * beats + 40))
    expected = [ADDRESS + k * line_bytes for k in range(beats)]
    assert reads == expected, f"{beats} beats: read addresses {[hex(a) for a in reads]}"
    assert writes == expected, f"{beats} beats: write addresses {[hex(a) for a in writes]}"
    assert len(w_beats) == beats, f"{beats} beats: {len(w_beats)} W beats"
    assert len(done) == 1, f"{beats} beats: write_done pulsed {len(done)} times"
