"""The register window alone (:class:`hdl.window.RegisterWindow`): a line write and a line read
against a model register bus that is free on random clocks, checking which words are written,
what the read answers, and the bus's strobes (never while the bus is taken, never on two
clocks in a row)."""

import random

import pytest

from bench.sim import simulate
from hdl.csr import READ_LATENCY
from hdl.window import RegisterWindow
from spec.params import ControllerParams, DatapathParams
from spec.regmap import REGISTER_BITS, REGISTER_BYTES

PARAMS = ControllerParams(DatapathParams(line_bits=128, counter_width=3), regions=2,
                          address_bits=20, slots=4)
WORDS = PARAMS.datapath.line_bytes // REGISTER_BYTES
BASE = 8            # word address of the line's first register
#: Clocks within which a line access is answered however rarely the bus is free.
CLOCKS = 400


@pytest.mark.parametrize("data_lag", [0, 1, 2])
@pytest.mark.parametrize("free_rate", [1.0, 0.6])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_line_write_then_read_through_a_shared_bus(seed, free_rate, data_lag):
    """``free_rate``: the share of clocks the bus is free (1.0: always, so a window that
    strobes on every clock it may is seen doing so). ``data_lag``: the line and its byte
    enables are on the port only that many clocks after the take (random bits on every clock
    but that one), or, with 0, only while the request is offered."""
    rng = random.Random(seed)
    where = f"seed {seed}, bus free {free_rate:.0%}, data lag {data_lag}"
    words = [rng.getrandbits(REGISTER_BITS) for _ in range(WORDS)]
    enables = [rng.choice([0xF, 0xF, 0x7, 0x0]) for _ in range(WORDS)]
    registers = {BASE + k: rng.getrandbits(REGISTER_BITS) for k in range(WORDS)}
    want = {BASE + k: words[k] if enables[k] == 0xF else registers[BASE + k]
            for k in range(WORDS)}
    dut = RegisterWindow(PARAMS, addr_width=10, data_lag=data_lag)
    strobes = []                # (clock, "r" or "w", address, bus free)

    async def testbench(ctx):
        reads = [None] * READ_LATENCY       # read data on its way, oldest last
        clock = 0

        async def access(read):
            nonlocal clock, reads
            ctx.set(dut.request.valid, 1)
            given = {"data": sum(word << (k * REGISTER_BITS) for k, word in enumerate(words)),
                    "byte_enable": sum(e << (k * REGISTER_BYTES) for k, e in enumerate(enables))}
            ctx.set(dut.request.payload, {"read": read, "word": BASE})
            ctx.set(dut.result.ready, 1)
            taken_at = None
            for _ in range(CLOCKS):
                valid = ctx.get(dut.request.valid)
                due = (valid and not data_lag) or (taken_at is not None
                                                   and clock == taken_at + data_lag)
                for name, value in given.items():
                    bits = len(getattr(dut.request.payload, name))
                    ctx.set(getattr(dut.request.payload, name),
                            value if due else rng.getrandbits(bits))
                free = rng.random() < free_rate
                ctx.set(dut.bus_free, free)
                if reads[-1] is not None:
                    ctx.set(dut.bus.r_data, reads[-1])
                accepted = ctx.get(dut.request.valid) and ctx.get(dut.request.ready)
                done = ctx.get(dut.result.valid)
                line = ctx.get(dut.result.payload)
                address = ctx.get(dut.bus.addr)
                got = None
                for kind, port in (("r", dut.bus.r_stb), ("w", dut.bus.w_stb)):
                    if ctx.get(port):
                        strobes.append((clock, kind, address, free))
                if ctx.get(dut.bus.w_stb):
                    registers[address] = ctx.get(dut.bus.w_data)
                if ctx.get(dut.bus.r_stb):
                    got = registers[address]
                reads = [got] + reads[:-1]
                await ctx.tick()
                clock += 1
                if accepted:
                    ctx.set(dut.request.valid, 0)
                    taken_at = clock - 1
                if done:
                    return line
            raise AssertionError(f"{where}: {'read' if read else 'write'} not answered "
                                 f"in {CLOCKS} clocks")

        await access(read=False)
        assert registers == want, f"{where}: registers {registers}, want {want}"
        line = await access(read=True)
        got = [(line >> (k * REGISTER_BITS)) & ((1 << REGISTER_BITS) - 1)
               for k in range(WORDS)]
        assert got == [want[BASE + k] for k in range(WORDS)], \
            f"{where}: read {[hex(g) for g in got]}, want {want}"

    simulate(dut, testbench)
    writes = [a for _, kind, a, _ in strobes if kind == "w"]
    assert writes == [BASE + k for k in range(WORDS) if enables[k] == 0xF], \
        f"{where}: words written {writes} (enables {enables})"
    assert [a for _, kind, a, _ in strobes if kind == "r"] == [BASE + k for k in range(WORDS)], \
        f"{where}: words read {strobes}"
    assert all(free for *_, free in strobes), f"{where}: a strobe while the bus was taken"
    clocks = [c for c, *_ in strobes]
    assert all(b - a >= 2 for a, b in zip(clocks, clocks[1:])), \
        f"{where}: strobes on clocks {clocks}: two in a row"


def test_negative_data_lag_is_refused():
    for bad in (-1, 1.0):
        with pytest.raises(ValueError, match="data_lag must be a non-negative integer, not"):
            RegisterWindow(PARAMS, addr_width=10, data_lag=bad)
