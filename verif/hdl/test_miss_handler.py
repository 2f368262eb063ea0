"""The pool's miss handler alone (:class:`hdl.miss_handler.MissHandler`, with its fill reader):
one miss at a time against a device memory that answers late, checking the reads it makes,
the eviction, the filled word (against the golden memory image of a random state), the
answers of result reads and of failed fills, and the wait for writes after a line has left
its slot."""

import numpy as np
import pytest

from bench.sim import simulate
from hdl.miss_handler import MissHandler, MissStep
from hdl.slot_ops import SlotOp
from spec.formats import pack_state, state_to_memory
from spec.params import ControllerParams, DatapathParams, Mode

PARAMS = ControllerParams(DatapathParams(line_bits=64, counter_width=3), regions=2,
                          address_bits=20, slots=4)
P = PARAMS.datapath
TAG = 0x4000
SEED = 58
#: Clocks within which a miss is over (a fill of W + 1 lines, 3 clocks late each read).
MISS_CLOCKS = 60


def _line_int(line):
    return int.from_bytes(np.asarray(line, np.uint8).tobytes(), "little")


def _memory(dut, lines, errors, reads, latency=3):
    """Device memory: answers each read ``latency`` clocks after its command, a line per clock,
    from ``lines`` (address: int), with an error at the addresses in ``errors``; appends each
    command to ``reads`` as ``(address, beats)``."""
    async def memory(ctx):
        due = []                # (clock, address)
        clock = 0
        ctx.set(dut.fill_read.ready, 1)
        async for _, _, valid, command in ctx.tick().sample(dut.fill_read.valid,
                                                            dut.fill_read.payload):
            clock += 1
            if valid:
                reads.append((command.address, command.beats))
                due += [(clock + latency + beat, command.address + beat * P.line_bytes)
                        for beat in range(command.beats)]
            answer = bool(due) and due[0][0] <= clock
            address = due.pop(0)[1] if answer else None
            line = 0 if address in errors else lines.get(address, 0)
            ctx.set(dut.fill_data.valid, answer)
            ctx.set(dut.fill_data.payload, {"data": line, "n": line & ((1 << P.counter_width) - 1),
                                            "error": address in errors})
    return memory


async def _miss(ctx, dut, kind, occupant_valid=True):
    """T1's op of ``kind`` misses; returns what the handler did, clock by clock, until its op
    was installed or answered."""
    ctx.set(dut.op, {"kind": kind, "tag": TAG, "mode": Mode.GTERNARY, "threshold": 3,
                     "user": 5, "first": TAG if kind == SlotOp.READ
                     else TAG + P.state_lines * P.line_bytes})
    for port, value in ((dut.data_ok, 1), (dut.occupant_valid, occupant_valid),
                        (dut.unit_empty, 1), (dut.room, 1), (dut.miss, 1)):
        ctx.set(port, value)
    seen = {"evict": 0, "install": 0, "answering": 0, "fills": 0, "mem_error": 0}
    for _ in range(MISS_CLOCKS):
        install, answering = ctx.get(dut.install), ctx.get(dut.answering)
        seen.update(evict=seen["evict"] + ctx.get(dut.evict), install=seen["install"] + install,
                    answering=seen["answering"] + answering,
                    fills=seen["fills"] + ctx.get(dut.events.fills),
                    mem_error=seen["mem_error"] + ctx.get(dut.events.mem_error))
        if install:
            seen["filled"] = ctx.get(dut.filled)
            seen["filled_state"] = ctx.get(dut.filled.state.as_value())
        if answering:
            seen["answer"] = ctx.get(dut.answer)
            assert ctx.get(dut.dropped), "an answered op must leave T1 (dropped)"
        await ctx.tick()
        ctx.set(dut.miss, 0)
        if install or answering:
            assert ctx.get(dut.next_step) == MissStep.RUN, "the handler must be back in RUN"
            return seen
    raise AssertionError(f"{kind.name} miss not over after {MISS_CLOCKS} clocks: {seen}")


@pytest.mark.parametrize("n", [0, 1, P.capacity])
@pytest.mark.parametrize("occupant_valid", [False, True])
def test_contribution_fills_the_state(n, occupant_valid):
    rng = np.random.default_rng(SEED + n)
    lanes = rng.integers(-n, n + 1, P.gternary_lanes)
    state = pack_state(P, Mode.GTERNARY, lanes, n)
    image = state_to_memory(P, state)[0].reshape(P.state_lines, P.line_bytes)
    lines = {TAG + (1 + k) * P.line_bytes: _line_int(image[k]) for k in range(P.state_lines)}
    dut = MissHandler(PARAMS, PARAMS, user_width=4, queue_depth=10)
    reads = []

    async def testbench(ctx):
        seen = await _miss(ctx, dut, SlotOp.CONTRIBUTE, occupant_valid)
        n_line = TAG + P.state_lines * P.line_bytes
        want_reads = [(n_line, 1)] + ([(TAG + P.line_bytes, P.counter_width)] if n else [])
        assert reads == want_reads, f"n {n}: reads {reads}, expected {want_reads}"
        assert seen["evict"] == occupant_valid, f"n {n}: {seen['evict']} evictions"
        assert (seen["install"], seen["fills"], seen["answering"]) == (1, 1, 0), f"n {n}: {seen}"
        filled = seen["filled"]
        assert (filled.valid, filled.dirty, filled.tag, Mode(filled.mode), filled.threshold) \
            == (1, 0, TAG, Mode.GTERNARY, 3), f"n {n}: filled word {filled}"
        got, want = seen["filled_state"], int.from_bytes(state[0].tobytes(), "little")
        assert got == want, f"n {n}: filled state {got:#x}, expected {want:#x}"

    simulate(dut, testbench, processes=[_memory(dut, lines, set(), reads)])


def test_result_read_is_answered_with_the_result_line():
    line = 0x0123_4567_89AB_CDEF
    dut = MissHandler(PARAMS, PARAMS, user_width=4, queue_depth=10)
    reads = []

    async def testbench(ctx):
        seen = await _miss(ctx, dut, SlotOp.READ)
        assert reads == [(TAG, 1)], f"reads {reads}: a result read reads its result line"
        assert (seen["evict"], seen["install"], seen["answering"]) == (0, 0, 1), seen
        answer = seen["answer"]
        assert (answer.user, answer.line, answer.accepted, answer.error) == (5, line, 1, 0), \
            f"answer {answer}"

    simulate(dut, testbench, processes=[_memory(dut, {TAG: line}, set(), reads)])


@pytest.mark.parametrize("kind", [SlotOp.CONTRIBUTE, SlotOp.READ])
def test_memory_error_answers_and_counts(kind):
    dut = MissHandler(PARAMS, PARAMS, user_width=4, queue_depth=10)
    first = TAG if kind == SlotOp.READ else TAG + P.state_lines * P.line_bytes

    async def testbench(ctx):
        seen = await _miss(ctx, dut, kind, occupant_valid=False)
        assert (seen["install"], seen["answering"], seen["mem_error"]) == (0, 1, 1), \
            f"{kind.name}: {seen}"
        assert (seen["answer"].error, seen["answer"].line) == (1, 0), \
            f"{kind.name}: answer {seen['answer']}"

    simulate(dut, testbench, processes=[_memory(dut, {}, {first}, [])])


def test_fill_waits_for_writes_after_a_departure():
    """A line left its slot while a write was pending: the fill of the next miss starts only
    once every write is done (it may be the departed line's own write-back)."""
    dut = MissHandler(PARAMS, PARAMS, user_width=4, queue_depth=10)
    reads = []
    wait = 12

    async def testbench(ctx):
        ctx.set(dut.writes_pending, 1)
        ctx.set(dut.departure, 1)
        await ctx.tick()
        ctx.set(dut.departure, 0)

        async def release():
            for clock in range(wait):
                assert not reads, f"a fill read was issued at clock {clock}, with writes pending"
                await ctx.tick()
            ctx.set(dut.writes_pending, 0)

        ctx.set(dut.op, {"kind": SlotOp.CONTRIBUTE, "tag": TAG, "first": TAG + 0x100})
        for port in (dut.data_ok, dut.unit_empty, dut.room, dut.miss):
            ctx.set(port, 1)
        await ctx.tick()
        ctx.set(dut.miss, 0)
        await release()
        await ctx.tick().repeat(MISS_CLOCKS)
        assert reads and reads[0] == (TAG + 0x100, 1), f"reads {reads} after the writes"

    simulate(dut, testbench, processes=[_memory(dut, {}, set(), reads)])
