"""The stream stages of hdl.pipeline. The skid buffer: every payload through once, in order,
under random backpressure on both sides; no clock of latency while empty. The eager FIFO: the
same ports, on every clock, as Amaranth's ``SyncFIFO`` under the same random pushes and pops.
``out_of_reset``: the inverse of the reset, a clock late."""

import numpy as np
import pytest
from amaranth import ClockDomain, Elaboratable, Module, Signal, signed, unsigned
from amaranth.lib import data
from amaranth.lib.fifo import SyncFIFO

from bench.sim import simulate
from hdl.pipeline import EagerFIFO, SkidBuffer, out_of_reset
from spec.params import CONTROL_COPY_BITS


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


class _TwoFifos(Elaboratable):
    """An EagerFIFO and a SyncFIFO of the same size, side by side, in a domain whose reset
    the test drives."""

    #: Clocks of random traffic, and the clocks the reset is high on (half way).
    CLOCKS, RESETS = 600, {301, 302}

    def __init__(self, width, depth, lag=None, write_lag=None):
        self.width = width
        self.eager = EagerFIFO(width=width, depth=depth, lag=lag, write_lag=write_lag)
        self.reference = SyncFIFO(width=width, depth=depth)
        self.sync = ClockDomain()

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = self.sync
        m.submodules.eager, m.submodules.reference = self.eager, self.reference
        return m

    def traffic(self, seed, push_rate, pop_rate):
        """``CLOCKS`` random (push, pop, word) triples of ``seed``, pushes and pops at the
        given rates (also while full or empty)."""
        rng = np.random.default_rng(seed)
        pushes = [bool(x) for x in rng.random(self.CLOCKS) < push_rate]
        pops = [bool(x) for x in rng.random(self.CLOCKS) < pop_rate]
        data = [int(x) for x in rng.integers(0, 1 << self.width, self.CLOCKS, dtype=np.uint64)]
        return list(zip(pushes, pops, data))

    def drive(self, ctx, clock, push, pop, word):
        """Offer clock ``clock``'s push, pop and word to both queues, and the reset."""
        ctx.set(self.sync.rst, clock in self.RESETS)
        for fifo in (self.eager, self.reference):
            ctx.set(fifo.w_en, push)
            ctx.set(fifo.w_data, word)
            ctx.set(fifo.r_en, pop)


# A queue within one column group of its memory, and one over two groups and a part.
@pytest.mark.parametrize("width", [12, 2 * CONTROL_COPY_BITS + 5])
@pytest.mark.parametrize("depth", [1, 2, 3, 8])
@pytest.mark.parametrize("seed", [1, 2])
def test_eager_fifo_behaves_as_a_sync_fifo(width, depth, seed):
    """Random pushes (also while full) and pops (also while empty), and a reset of two clocks
    half way: ``w_rdy``, ``r_rdy``, ``level`` and, while ``r_rdy``, ``r_data`` equal the
    SyncFIFO's on every clock (every column group's pointers restart together)."""
    dut = _TwoFifos(width, depth)
    errors = []

    async def bench(ctx):
        for clock, (push, pop, word) in enumerate(dut.traffic(seed, 0.55, 0.5)):
            dut.drive(ctx, clock, push, pop, word)
            for port in ("w_rdy", "r_rdy", "level"):
                got = ctx.get(getattr(dut.eager, port))
                want = ctx.get(getattr(dut.reference, port))
                if got != want:
                    errors.append(f"clock {clock}: {port} {got}, SyncFIFO's {want}")
            if ctx.get(dut.reference.r_rdy):
                got, want = ctx.get(dut.eager.r_data), ctx.get(dut.reference.r_data)
                if got != want:
                    errors.append(f"clock {clock}: r_data {got:#x}, SyncFIFO's {want:#x}")
            await ctx.tick()

    simulate(dut, bench)
    assert not errors, f"width {width}, depth {depth}, seed {seed}:\n" + "\n".join(errors[:10])


@pytest.mark.parametrize("offset, clocks", [(5, 1), (CONTROL_COPY_BITS + 3, 2), (9, 3),
                                            (0, 1)])
@pytest.mark.parametrize("depth", [1, 3])
@pytest.mark.parametrize("seed", [1, 2])
def test_eager_fifo_lagged_bits_come_clocks_later(offset, clocks, depth, seed):
    """With ``lag`` = (offset, clocks), the bits below ``offset`` are a SyncFIFO's head on
    every clock, and the bits from ``offset`` on, ``clocks`` clocks later, are the head's of
    then, under random pushes and pops and a reset half way (the late bits are not compared
    across it)."""
    dut = _TwoFifos(3 * CONTROL_COPY_BITS + 1, depth, lag=(offset, clocks))
    heads, errors = {}, []

    async def bench(ctx):
        for clock, (push, pop, word) in enumerate(dut.traffic(seed, 0.6, 0.6)):
            dut.drive(ctx, clock, push, pop, word)
            got = ctx.get(dut.eager.r_data)
            if ctx.get(dut.reference.r_rdy):
                heads[clock] = want = ctx.get(dut.reference.r_data)
                if got % (1 << offset) != want % (1 << offset):
                    errors.append(f"clock {clock}: bits below {offset} {got:#x}, "
                                  f"SyncFIFO's head {want:#x}")
            then = clock - clocks
            compared = then in heads and not any(then < r <= clock for r in dut.RESETS)
            if compared and got >> offset != heads[then] >> offset:
                errors.append(f"clock {clock}: bits from {offset} {got >> offset:#x}, "
                              f"the head of clock {then} had {heads[then] >> offset:#x}")
            await ctx.tick()

    simulate(dut, bench)
    assert not errors, f"offset {offset}, clocks {clocks}, depth {depth}, seed {seed}:\n" + \
        "\n".join(errors[:10])


@pytest.mark.parametrize("write_lag, lag", [((0, 1), None), ((0, 2), None), ((9, 1), None),
                                            ((0, 1), (9, 2)), ((20, 1), (20, 1))])
@pytest.mark.parametrize("depth", [1, 3])
@pytest.mark.parametrize("seed", [1, 2])
def test_eager_fifo_written_late_is_readable_once_in(write_lag, lag, depth, seed):
    """With ``write_lag`` = (offset, k), the writer giving an entry's bits from ``offset`` on
    k clocks after its write, under random pushes and pops and a reset half way, against a
    model of the queue: ``w_rdy`` and ``level`` count every entry written and not taken;
    ``r_rdy`` is high exactly while an entry is not taken whose late bits are in the memory
    in time for ``lag``'s late read; the head (below ``lag``'s offset, and from it on ``lag``
    clocks later) is the oldest such entry."""
    dut = _TwoFifos(3 * CONTROL_COPY_BITS + 1, depth, lag=lag, write_lag=write_lag)
    (write_offset, write_clocks), (offset, clocks) = write_lag, lag or (dut.width, 0)
    wait = max(0, *(write_clocks * (b >= write_offset) - clocks * (b >= offset)
                    for b in range(dut.width)))
    late_mask = (1 << dut.width) - (1 << write_offset)
    held, heads, pushed, errors = [], {}, {}, []     # held: (clock written, word)

    async def bench(ctx):
        for clock, (push, pop, word) in enumerate(dut.traffic(seed, 0.6, 0.6)):
            dut.drive(ctx, clock, push, pop, word)
            # This clock's entry's bits below the offset, the late bits of the one before.
            late_word = pushed.get(clock - write_clocks, word)
            ctx.set(dut.eager.w_data, (word & ~late_mask) | (late_word & late_mask))
            if clock in dut.RESETS:         # the queue empties at the edge, and takes nothing
                held.clear()
                pushed.clear()
                await ctx.tick()
                continue
            eager = dut.eager
            readable = [w for when, w in held if when + wait < clock]
            want = {"w_rdy": int(len(held) < depth), "level": len(held),
                    "r_rdy": int(bool(readable))}
            for port, value in want.items():
                got = ctx.get(getattr(eager, port))
                if got != value:
                    errors.append(f"clock {clock}: {port} {got}, the model's {value}")
            got = ctx.get(eager.r_data)
            if readable:
                heads[clock] = readable[0]
                if got % (1 << offset) != readable[0] % (1 << offset):
                    errors.append(f"clock {clock}: head {got:#x}, the model's "
                                  f"{readable[0]:#x}")
            then = clock - clocks
            if clocks and then in heads and not any(then < r <= clock for r in dut.RESETS) \
                    and got >> offset != heads[then] >> offset:
                errors.append(f"clock {clock}: bits from {offset} {got >> offset:#x}, the "
                              f"head of clock {then} had {heads[then] >> offset:#x}")
            if pop and readable:
                held.pop(0)
            if push and want["w_rdy"]:
                held.append((clock, word))
                pushed[clock] = word
            await ctx.tick()

    simulate(dut, bench)
    assert not errors, f"write_lag {write_lag}, lag {lag}, depth {depth}, seed {seed}:\n" + \
        "\n".join(errors[:10])


@pytest.mark.parametrize("arguments, message", [
    ({"width": 8, "depth": 0}, "depth must be a positive integer"),
    ({"width": 8, "depth": 2, "lag": (-1, 1)}, "lag must be"),
    ({"width": 8, "depth": 2, "lag": (9, 1)}, "lag must be"),
    ({"width": 8, "depth": 2, "lag": (4, -1)}, "lag must be"),
    ({"width": 8, "depth": 2, "write_lag": (0, -1)}, "write_lag must be"),
    ({"width": 8, "depth": 2, "write_lag": 1}, "write_lag must be"),
    ({"depth": 2}, "exactly one of the entries' width and their shape"),
    ({"width": 8, "shape": unsigned(8), "depth": 2}, "exactly one"),
    ({"shape": signed(8), "depth": 2}, "must be unsigned or a layout"),
])
def test_eager_fifo_refuses_bad_parameters(arguments, message):
    with pytest.raises(ValueError, match=message):
        EagerFIFO(**arguments)


def test_eager_fifo_stream_views_carry_the_entries_shape():
    """A queue of a layout's entries: what goes in on ``w_stream`` comes out on ``r_stream``
    with the same fields, and the views are the queue's own ports."""
    layout = data.StructLayout({"low": 3, "high": 5})
    dut = EagerFIFO(shape=layout, depth=2)
    source, sink = dut.w_stream, dut.r_stream
    assert sink.payload.shape() == layout and source.payload.shape() == layout
    assert source.valid is dut.w_en and source.ready is dut.w_rdy and sink.ready is dut.r_en

    async def bench(ctx):
        ctx.set(source.valid, 1)
        ctx.set(source.payload, {"low": 5, "high": 17})
        assert ctx.get(source.ready), "an empty queue is not writable after reset"
        await ctx.tick()
        ctx.set(source.valid, 0)
        got = ctx.get(sink.payload)
        assert ctx.get(sink.valid) and got == {"low": 5, "high": 17}, \
            f"read low {got.low}, high {got.high} after writing low 5, high 17"

    simulate(dut, bench)


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

