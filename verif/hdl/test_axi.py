"""In ``amaranth.sim``: :class:`hdl.axi.AxiMemoryPort` under a memory that stalls every channel
at random. Write bursts of random length and ID reach AW and W once each, in order, with the
first line's strobe and WLAST on the last beat; every B and R beat comes back with its ID and
error (an R beat with an error as a line of 0); read commands become one AR each."""

import random

import pytest

from bench.sim import send, simulate
from hdl.axi import RESP_OKAY, AxiMemoryPort

LINE_BITS = 32
MAX_BEATS = 4
SLVERR = 0b10


def _run(seed, jobs, reads):
    """Send write ``jobs`` and read commands ``reads`` through the port; returns what the
    memory saw and what the port gave back."""
    rng = random.Random(seed)
    port = AxiMemoryPort(line_bits=LINE_BITS, address_bits=16, id_bits=2, max_beats=MAX_BEATS)
    seen = {"aw": [], "w": [], "ar": [], "responses": [], "read_data": []}

    async def memory(ctx):
        axi = port.axi
        b_queue, r_queue = [], []
        ready = {"awready": 0, "wready": 0, "arready": 0}
        b_sent = 0
        async for sample in ctx.tick().sample(
                axi.awvalid, axi.awaddr, axi.awlen, axi.awid, axi.wvalid, axi.wdata, axi.wstrb,
                axi.wlast, axi.arvalid, axi.araddr, axi.arlen, axi.arid,
                port.write_response.valid, port.write_response.payload,
                port.read_data.valid, port.read_data.payload):
            (awvalid, awaddr, awlen, awid, wvalid, wdata, wstrb, wlast, arvalid, araddr, arlen,
             arid, response_valid, response, data_valid, data) = sample[2:]
            if awvalid and ready["awready"]:
                seen["aw"].append((awaddr, awlen, awid))
                b_queue.append(awid)
            if wvalid and ready["wready"]:
                seen["w"].append((wdata, wstrb, wlast))
            if arvalid and ready["arready"]:
                seen["ar"].append((araddr, arlen, arid))
                r_queue += [(arid, araddr + 4 * k, k == arlen) for k in range(arlen + 1)]
            if response_valid:
                seen["responses"].append((response.id, response.error))
            if data_valid:
                seen["read_data"].append((data.id, data.data, data.error))
            for name in ready:
                ready[name] = int(rng.random() < 0.6)
                ctx.set(getattr(axi, name), ready[name])
            # One B (for a burst whose W beats all went) and one R beat per clock, at random.
            written = sum(last for _, _, last in seen["w"])
            b_out = None
            if b_queue and b_sent < written and rng.random() < 0.5:
                b_out = b_queue.pop(0)
                b_sent += 1
            ctx.set(axi.bvalid, b_out is not None)
            ctx.set(axi.bid, b_out or 0)
            ctx.set(axi.bresp, SLVERR if b_out == 3 else RESP_OKAY)
            r_out = r_queue.pop(0) if r_queue and rng.random() < 0.5 else None
            ctx.set(axi.rvalid, r_out is not None)
            if r_out:
                ctx.set(axi.rid, r_out[0])
                ctx.set(axi.rdata, r_out[1])
                ctx.set(axi.rlast, r_out[2])
                ctx.set(axi.rresp, SLVERR if r_out[0] == 3 else RESP_OKAY)

    async def writer(ctx):
        for job in jobs:
            await send(ctx, port.write_command, **job)

    async def reader(ctx):
        for command in reads:
            await send(ctx, port.read_command, **command)
        await ctx.tick().repeat(200)

    simulate(port, writer, reader, processes=[memory])
    return seen


@pytest.mark.parametrize("single", [0.25, 0.8], ids=["bursts", "mostly_single_lines"])
@pytest.mark.parametrize("seed", range(4))
def test_bursts_in_order_with_ids(seed, single):
    """``single``: the share of one-line writes, which may wait behind a burst (the rest are
    2 to ``MAX_BEATS`` lines)."""
    rng = random.Random(100 + seed)
    jobs = []
    for k in range(24):
        beats = 1 if rng.random() < single else rng.randint(2, MAX_BEATS)
        lines = [rng.getrandbits(LINE_BITS) for _ in range(MAX_BEATS)]
        jobs.append({"id": rng.randint(0, 3), "address": 0x100 + 0x10 * k, "beats": beats,
                     "lines": sum(line << (LINE_BITS * i) for i, line in enumerate(lines)),
                     "strobe": rng.getrandbits(LINE_BITS // 8)})
    reads = [{"id": rng.randint(0, 3), "address": 0x800 + 0x10 * k,
              "beats": rng.randint(1, 4)} for k in range(16)]
    seen = _run(seed, jobs, reads)

    assert seen["aw"] == [(j["address"], j["beats"] - 1, j["id"]) for j in jobs], \
        f"seed {seed}: AW (address, len, id) per burst differ from the commands"
    want_w = []
    for j in jobs:
        for beat in range(j["beats"]):
            line = (j["lines"] >> (LINE_BITS * beat)) & ((1 << LINE_BITS) - 1)
            strobe = j["strobe"] if beat == 0 else (1 << LINE_BITS // 8) - 1
            want_w.append((line, strobe, int(beat == j["beats"] - 1)))
    for number, (got, want) in enumerate(zip(seen["w"], want_w)):
        assert got == want, f"seed {seed}: W beat {number}: (data, strobe, last) {got}, " \
                            f"expected {want}"
    assert len(seen["w"]) == len(want_w), f"seed {seed}: {len(seen['w'])} W beats, " \
                                          f"expected {len(want_w)}"
    assert seen["responses"] == [(j["id"], int(j["id"] == 3)) for j in jobs], \
        f"seed {seed}: write responses (id, error) differ: {seen['responses']}"
    assert seen["ar"] == [(r["address"], r["beats"] - 1, r["id"]) for r in reads], \
        f"seed {seed}: AR (address, len, id) per read differ"
    # The memory answers ID 3 with SLVERR: those lines come back as 0.
    want_r = [(r["id"], 0 if r["id"] == 3 else r["address"] + 4 * k, int(r["id"] == 3))
              for r in reads for k in range(r["beats"])]
    assert seen["read_data"] == want_r, f"seed {seed}: read beats (id, data, error) differ"


def test_one_line_writes_go_at_one_per_clock_to_a_memory_that_wants_aw_first():
    """A memory may take a burst's W only after its AW (AXI4 allows it). One-line writes,
    offered back to back, still go at one per clock: each AW goes while the write before it
    sends its W."""
    port = AxiMemoryPort(line_bits=LINE_BITS, address_bits=16, id_bits=2, max_beats=MAX_BEATS)
    count = 32
    clocks = {"aw": [], "w": []}

    async def memory(ctx):
        axi = port.axi
        addressed = 0                   # bursts whose AW has moved, W not yet
        ctx.set(axi.awready, 1)
        clock = 0
        async for sample in ctx.tick().sample(axi.awvalid, axi.wvalid, axi.wready):
            awvalid, wvalid, wready = sample[2:]
            clock += 1
            if wvalid and wready:
                clocks["w"].append(clock)
                addressed -= 1
            if awvalid:
                clocks["aw"].append(clock)
                addressed += 1
            ctx.set(axi.wready, addressed > 0)

    async def writer(ctx):
        for k in range(count):
            await send(ctx, port.write_command, id=0, address=0x100 + 4 * k, beats=1,
                       lines=k, strobe=-1)
        await ctx.tick().repeat(8)

    simulate(port, writer, processes=[memory])
    assert len(clocks["w"]) == count, f"{len(clocks['w'])} W beats of {count} writes"
    span = clocks["w"][-1] - clocks["aw"][0] + 1
    assert span <= count + 1, \
        f"{count} one-line writes took {span} clocks from the first AW to the last W"
