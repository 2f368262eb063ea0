"""In ``amaranth.sim``: :class:`hdl.axi.AxiMemoryPort` under a memory that stalls every channel
at random. Write bursts (offered whenever ``bursts_held`` allows, never refused) and one-line
writes (offered at random, taken while ``ready``) reach AW and W once each, in the order they
were taken (a clock's burst before its line), with each line's strobe, full strobes on a burst
and WLAST on each write's last beat; ``bursts_held`` counts, on every clock, the bursts not yet
sent on both AW and W by ``HELD_LAG`` clocks before, and one-line writes stop at ``LINE_WRITES``
held; every B and R
beat comes back with its ID and error (an R beat with an error as a line of 0); read commands
become one AR each. A write's first W beat leaves ``FIRST_W`` clocks after its take, and W
then sends a beat on every clock. The W banks here give a wrong word for a read of a word
written on the same edge (:class:`_CollisionPoisoningMemory`), as the ECP5 block's data is then
not defined."""

import random

import pytest
from amaranth import Module, Mux, Signal

import hdl.axi
from bench.sim import send, simulate
from hdl.axi import RESP_OKAY, AxiMemoryPort
from hdl.bram import READ_LATENCY, Interleave, RegisteredMemory, address_copies, copy_slices

LINE_BITS = 32
BURST_BEATS = 3
BURSTS = 5
SLVERR = 0b10


def _full_strobe(line_bits):
    """Every byte of a line enabled."""
    return (1 << line_bits // 8) - 1


FULL_STROBE = _full_strobe(LINE_BITS)


class _CollisionPoisoningMemory(RegisteredMemory):
    """A :class:`hdl.bram.RegisteredMemory` whose read of a word written on the same clock
    edge gives the word inverted, not the old word: the ECP5 block's data is then not defined,
    so a port that ever used such a read sends a wrong line here."""

    def elaborate(self, platform):
        m = Module()
        copies = len(self.write_en)
        m.submodules.memory = memory = RegisteredMemory(width=self.width, depth=self.depth,
                                                        copies=copies)
        m.d.comb += [memory.read_addr.eq(self.read_addr), memory.write_addr.eq(self.write_addr),
                     memory.write_data.eq(self.write_data), memory.write_en.eq(self.write_en)]
        for k, bits in enumerate(copy_slices(self.width, copies)):
            # Whether copy k's read collided, in step with its data (READ_LATENCY clocks).
            collided = self.write_en[k] & (self.read_addr[k] == self.write_addr[k])
            for step in range(READ_LATENCY):
                late = Signal(name=f"collided{k}_{step}")
                m.d.sync += late.eq(collided)
                collided = late
            m.d.comb += self.read_data[bits].eq(Mux(collided, ~memory.read_data[bits],
                                                    memory.read_data[bits]))
        return m


@pytest.fixture(autouse=True)
def _banks_poison_collisions(monkeypatch):
    """Every test here runs the port with :class:`_CollisionPoisoningMemory` banks."""
    monkeypatch.setattr(hdl.axi, "RegisteredMemory", _CollisionPoisoningMemory)


def _port(held=BURSTS, beats=BURST_BEATS, line_bits=LINE_BITS):
    return AxiMemoryPort(line_bits=line_bits, address_bits=16, id_bits=2,
                         burst_beats=beats, bursts=held)




@pytest.mark.parametrize("line_bits,beats", [(512, 6), (512, 4), (32, 3), (1024, 8), (64, 40)])
def test_bank_groups_cover_the_line_once_each_where_its_copy_reaches(line_bits, beats):
    """The burst bank's address groups (``bank_groups``) cut the line into slices in order,
    and every beat's bits of a group's slice sit in the block columns its copy of the
    addresses reaches (:func:`hdl.bram.copy_slices` of the bank's word)."""
    port = _port(beats=beats, line_bits=line_bits)
    groups = port.bank_groups
    where = f"{line_bits}-bit lines, {beats} beats"
    starts = [0] + [bits.stop for bits in groups[:-1]]
    assert [bits.start for bits in groups] == starts and groups[-1].stop == line_bits, \
        f"{where}: bank groups {groups} do not cut 0 to {line_bits} in order"
    layout = Interleave(width=line_bits, ways=beats)
    words = copy_slices(layout.word_bits, address_copies(layout.word_bits))
    assert len(words) == len(groups), f"{where}: {len(groups)} groups, {len(words)} copies"
    for g, (bits, word) in enumerate(zip(groups, words)):
        for i in range(bits.start, bits.stop):
            for beat in range(beats):
                position = ((i // layout.chunk) * layout.group_bits + beat * layout.chunk
                            + i % layout.chunk)
                assert word.start <= position < word.stop, \
                    f"{where}: bit {i} of beat {beat} at word bit {position}, outside group " \
                    f"{g}'s columns {word}"

def _set_burst_valid(ctx, port, valid):
    """Offer a write burst (or not), its valid's copies alike, as the port's owner keeps them."""
    ctx.set(port.write_burst.valid, valid)
    ctx.set(port.write_burst_copies, (1 << len(port.bank_groups)) - 1 if valid else 0)


async def _tick_lagging(ctx, port, taken, rng):
    """A clock edge, then ``write_line``'s line and byte enables for the clock after it: those
    of ``taken``, the one-line write taken on the clock before the edge (``LINE_LAG`` = 1),
    else random bits, which the port must take for no write."""
    assert AxiMemoryPort.LINE_LAG == 1, "the test drives lines a clock after their take"
    await ctx.tick()
    if taken is None:
        line_bits = len(port.write_line.payload.line)
        taken = {"line": rng.getrandbits(line_bits), "strobe": rng.getrandbits(line_bits // 8)}
    ctx.set(port.write_line.payload.line, taken["line"])
    ctx.set(port.write_line.payload.strobe, taken["strobe"])


def _run(seed, bursts, lines, reads, *, burst_rate, line_rate, held=BURSTS, beats=BURST_BEATS,
         line_bits=LINE_BITS):
    """Send write ``bursts`` and ``lines`` and read commands ``reads`` through a port of
    ``beats`` lines a burst and ``held`` bursts; returns what the memory saw and what the port
    gave back. ``taken`` lists the writes (kind, fields) in the order the port took them."""
    rng = random.Random(seed)
    port = _port(held, beats, line_bits)
    seen = {"aw": [], "w": [], "ar": [], "responses": [], "read_data": [], "taken": [],
            "held": []}

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
            if b_queue and b_sent < min(written, len(seen["aw"])) and rng.random() < 0.5:
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
        bursts_left, lines_left = list(bursts), list(lines)
        offered = None
        while bursts_left or lines_left or offered:
            burst = None
            if bursts_left and ctx.get(port.bursts_held) < held and rng.random() < burst_rate:
                burst = bursts_left.pop(0)
                for name, value in burst.items():
                    ctx.set(getattr(port.write_burst.payload, name), value)
            _set_burst_valid(ctx, port, burst is not None)
            if offered is None and lines_left and rng.random() < line_rate:
                offered = lines_left.pop(0)
                ctx.set(port.write_line.payload.id, offered["id"])
                ctx.set(port.write_line.payload.address, offered["address"])
            ctx.set(port.write_line.valid, offered is not None)
            line_ready = ctx.get(port.write_line.ready)
            seen["held"].append(ctx.get(port.bursts_held))
            await _tick_lagging(ctx, port, offered if line_ready else None, rng)
            if burst is not None:
                seen["taken"].append(("burst", burst))
            if offered is not None and line_ready:
                seen["taken"].append(("line", offered))
                offered = None
        _set_burst_valid(ctx, port, 0)
        ctx.set(port.write_line.valid, 0)
        await ctx.tick().repeat(100)

    async def reader(ctx):
        for command in reads:
            await send(ctx, port.read_command, **command)
        await ctx.tick().repeat(200)

    simulate(port, writer, reader, processes=[memory])
    return seen


def _expected_writes(taken, beats, line_bits):
    """(AW, W beats) the memory must see for the writes ``taken``, in order."""
    aw, w = [], []
    for kind, job in taken:
        if kind == "burst":
            aw.append((job["address"], beats - 1, job["id"]))
            w += [((job["lines"] >> (line_bits * beat)) & ((1 << line_bits) - 1),
                   _full_strobe(line_bits),
                   int(beat == beats - 1)) for beat in range(beats)]
        else:
            aw.append((job["address"], 0, job["id"]))
            w.append((job["line"], job["strobe"], 1))
    return aw, w


@pytest.mark.parametrize("shape", [(BURSTS, BURST_BEATS, LINE_BITS), (4, 1, LINE_BITS),
                                   (1, 2, LINE_BITS), (2, 6, 512)],
                         ids=lambda s: f"{s[0]}x{s[1]}_{s[2]}b")
@pytest.mark.parametrize("rates", [(0.6, 0.3), (0.2, 0.9), (1.0, 1.0)],
                         ids=["bursts", "mostly_lines", "both_every_clock"])
@pytest.mark.parametrize("seed", range(4))
def test_writes_in_order_with_ids(seed, rates, shape):
    """``rates``: how often a burst is offered (when ``bursts_held`` allows) and a line;
    ``shape``: bursts held at most (a power of two held fills its ring), lines a burst, and
    line bits (512: the banks' block columns in two address groups, the line bank's too)."""
    held, beats, line_bits = shape
    rng = random.Random(100 + seed)
    bursts = [{"id": rng.randint(0, 3), "address": 0x1000 + 0x10 * k,
               "lines": rng.getrandbits(beats * line_bits)} for k in range(20)]
    lines = [{"id": rng.randint(0, 3), "address": 0x2000 + 0x4 * k,
              "line": rng.getrandbits(line_bits), "strobe": rng.getrandbits(line_bits // 8)}
             for k in range(24)]
    reads = [{"id": rng.randint(0, 3), "address": 0x800 + 0x10 * k,
              "beats": rng.randint(1, 4)} for k in range(16)]
    seen = _run(seed, bursts, lines, reads, burst_rate=rates[0], line_rate=rates[1],
                held=held, beats=beats, line_bits=line_bits)
    where = f"seed {seed}, rates {rates}, {held} bursts of {beats} lines of {line_bits} bits"

    assert len(seen["taken"]) == len(bursts) + len(lines), f"{where}: not every write taken"
    want_aw, want_w = _expected_writes(seen["taken"], beats, line_bits)
    for number, (got, want) in enumerate(zip(seen["aw"], want_aw)):
        assert got == want, f"{where}: AW {number}: (address, len, id) {got}, expected {want}"
    assert len(seen["aw"]) == len(want_aw), f"{where}: {len(seen['aw'])} AW, " \
                                            f"expected {len(want_aw)}"
    for number, (got, want) in enumerate(zip(seen["w"], want_w)):
        assert got == want, f"{where}: W beat {number}: (data, strobe, last) {got}, " \
                            f"expected {want}"
    assert len(seen["w"]) == len(want_w), f"{where}: {len(seen['w'])} W beats, " \
                                          f"expected {len(want_w)}"
    assert seen["responses"] == [(aw_id, int(aw_id == 3)) for _, _, aw_id in want_aw], \
        f"{where}: write responses (id, error) differ: {seen['responses']}"
    assert seen["ar"] == [(r["address"], r["beats"] - 1, r["id"]) for r in reads], \
        f"{where}: AR (address, len, id) per read differ"
    # The memory answers ID 3 with SLVERR: those lines come back as 0.
    want_r = [(r["id"], 0 if r["id"] == 3 else r["address"] + 4 * k, int(r["id"] == 3))
              for r in reads for k in range(r["beats"])]
    assert seen["read_data"] == want_r, f"{where}: read beats (id, data, error) differ"
    # The owner offers while ``bursts_held`` is below ``held``; the takes of the last
    # ``TAKE_LAG`` clocks are not in it yet, so the port holds up to that many more.
    most = held + AxiMemoryPort.TAKE_LAG
    assert max(seen["held"]) <= most, \
        f"{where}: bursts_held reached {max(seen['held'])}, above {most}"
    assert max(seen["held"]) == most or rates[0] < 1, \
        f"{where}: bursts offered every clock never filled the port ({max(seen['held'])})"


def test_bursts_held_counts_until_aw_and_w_have_gone():
    """``bursts_held`` is, on every clock, the bursts taken before it less those whose AW had
    reached the AW register (``AWVALID`` high shows one there) and whose W beats had all gone
    by the clock before (``HELD_LAG``), whichever channel lags: here AW stalls for 40 clocks
    while W runs, then W stalls while AW runs."""
    port = _port()
    count = BURSTS
    log = []

    async def memory(ctx):
        axi = port.axi
        clock = 0
        aw_done, w_lasts = 0, 0
        async for sample in ctx.tick().sample(axi.awvalid, axi.awready, axi.wvalid, axi.wready,
                                              axi.wlast, port.bursts_held):
            awvalid, awready, wvalid, wready, wlast, held = sample[2:]
            clock += 1
            log.append((clock, held, aw_done + awvalid, w_lasts))
            aw_done += awvalid and awready
            w_lasts += wvalid and wready and wlast
            aw_ready, w_ready = clock > 40, clock <= 40
            ctx.set(axi.awready, aw_ready)
            ctx.set(axi.wready, w_ready)

    async def writer(ctx):
        for k in range(count):
            ctx.set(port.write_burst.payload.address, 0x100 * k)
            _set_burst_valid(ctx, port, 1)
            await ctx.tick()
        _set_burst_valid(ctx, port, 0)
        await ctx.tick().repeat(80)

    simulate(port, writer, processes=[memory])
    lag = AxiMemoryPort.HELD_LAG - 1          # clocks beyond the register's
    for (clock, held, _, _), (_, _, aw_left, w_lasts) in zip(log[count + 1 + lag:],
                                                             log[count + 1:]):
        want = count - min(aw_left, w_lasts)
        assert held == want, f"clock {clock}: bursts_held {held}, expected {want} " \
                             f"({aw_left} AW left the buffer and {w_lasts} bursts' W by " \
                             f"clock {clock - lag})"
    assert log[-1][1] == 0, f"bursts_held {log[-1][1]} after every burst went"


def test_one_line_writes_stop_at_line_writes_held():
    """While the memory takes nothing, ``write_line.ready`` falls once ``LINE_WRITES`` one-line
    writes are held; when it takes again, each of them goes, in order."""
    port = _port()
    stalled = 30
    taken, sent = [], []

    async def memory(ctx):
        axi = port.axi
        clock = 0
        async for sample in ctx.tick().sample(axi.awvalid, axi.awready, axi.wvalid, axi.wready,
                                              axi.wdata):
            awvalid, awready, wvalid, wready, wdata = sample[2:]
            clock += 1
            if wvalid and wready:
                sent.append(wdata)
            ctx.set(axi.awready, clock > stalled)
            ctx.set(axi.wready, clock > stalled)

    async def writer(ctx):
        clock = 0
        rng = random.Random(1)
        for k in range(12):
            ctx.set(port.write_line.valid, 1)
            while True:
                clock += 1
                ready = ctx.get(port.write_line.ready)
                await _tick_lagging(ctx, port, {"line": k, "strobe": FULL_STROBE} if ready
                                    else None, rng)
                if ready:
                    taken.append((clock, k))
                    break
        ctx.set(port.write_line.valid, 0)
        await ctx.tick().repeat(20)

    simulate(port, writer, processes=[memory])
    before = [k for clock, k in taken if clock < stalled]
    assert len(before) == AxiMemoryPort.LINE_WRITES, \
        f"{len(before)} one-line writes taken while the memory took nothing, expected " \
        f"{AxiMemoryPort.LINE_WRITES}"
    assert sent == list(range(12)), f"lines sent {sent}, expected 0 to 11 in order"


def test_one_line_writes_go_at_one_per_clock_to_a_memory_that_wants_aw_first():
    """A memory may take a write's W only after its AW (AXI4 allows it). One-line writes,
    offered back to back, still go at one per clock: each AW goes while the write before it
    sends its W, and the W beats leave on consecutive clocks."""
    port = _port()
    count = 32
    clocks = {"aw": [], "w": []}

    async def memory(ctx):
        axi = port.axi
        addressed = 0                   # writes whose AW has moved, W not yet
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
        rng = random.Random(2)
        for k in range(count):
            ctx.set(port.write_line.payload.address, 0x100 + 4 * k)
            ctx.set(port.write_line.valid, 1)
            while not ctx.get(port.write_line.ready):
                await _tick_lagging(ctx, port, None, rng)
            await _tick_lagging(ctx, port, {"line": k, "strobe": FULL_STROBE}, rng)
        ctx.set(port.write_line.valid, 0)
        await ctx.tick().repeat(8)

    simulate(port, writer, processes=[memory])
    assert len(clocks["w"]) == count, f"{len(clocks['w'])} W beats of {count} writes"
    span = clocks["w"][-1] - clocks["w"][0] + 1
    assert span == count, \
        f"{count} one-line writes took {span} clocks from the first W beat to the last"


def test_bursts_leave_on_w_at_a_beat_per_clock():
    """With write bursts offered whenever ``bursts_held`` allows and a memory that takes every
    beat, W sends a beat on every clock from its first to its last: the W queue
    (``W_QUEUE``) covers the loop of its credits."""
    beats = BURST_BEATS
    port = _port()
    count = 12
    w_clocks = []

    async def memory(ctx):
        axi = port.axi
        ctx.set(axi.awready, 1)
        ctx.set(axi.wready, 1)
        clock = 0
        async for sample in ctx.tick().sample(axi.wvalid):
            clock += 1
            if sample[2]:
                w_clocks.append(clock)

    async def writer(ctx):
        sent = 0
        while sent < count:
            offer = ctx.get(port.bursts_held) < BURSTS
            ctx.set(port.write_burst.payload.address, 0x100 * sent)
            _set_burst_valid(ctx, port, offer)
            sent += offer
            await ctx.tick()
        _set_burst_valid(ctx, port, 0)
        await ctx.tick().repeat(20)

    simulate(port, writer, processes=[memory])
    assert len(w_clocks) == count * beats, \
        f"{beats} lines a burst: {len(w_clocks)} W beats, expected {count * beats}"
    gaps = [(a, b) for a, b in zip(w_clocks, w_clocks[1:]) if b != a + 1]
    assert not gaps, f"{beats} lines a burst: W idle between clocks {gaps[:4]}"


@pytest.mark.parametrize("kind", ["burst", "line"])
def test_a_write_reaches_w_first_w_clocks_after_its_take(kind):
    """A write alone in the port, to a memory that takes every beat, has its first W beat
    ``FIRST_W`` clock edges after the edge that takes it, and its line."""
    port = _port()
    edges = []
    idle = 4
    take = idle + 1             # the edge that takes the write
    value = 0x5A5A5A5A

    async def memory(ctx):
        axi = port.axi
        ctx.set(axi.awready, 1)
        ctx.set(axi.wready, 1)
        edge = 0
        async for sample in ctx.tick().sample(axi.wvalid, axi.wdata):
            edge += 1
            if sample[2]:
                edges.append((edge, sample[3]))

    async def writer(ctx):
        rng = random.Random(3)
        await ctx.tick().repeat(idle)
        if kind == "burst":
            ctx.set(port.write_burst.payload.lines, value)
            _set_burst_valid(ctx, port, 1)
            await ctx.tick()
            _set_burst_valid(ctx, port, 0)
        else:
            ctx.set(port.write_line.valid, 1)
            await _tick_lagging(ctx, port, {"line": value, "strobe": FULL_STROBE}, rng)
            ctx.set(port.write_line.valid, 0)
        await ctx.tick().repeat(20)

    simulate(port, writer, processes=[memory])
    assert edges, f"{kind}: no W beat"
    first, line = edges[0]
    assert (first - take, line) == (AxiMemoryPort.FIRST_W, value), \
        f"{kind}: first W beat {first - take} edges after the take's, with line {line:#x}; " \
        f"expected {AxiMemoryPort.FIRST_W}, with {value:#x}"
