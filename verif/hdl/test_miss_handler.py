"""The pool's miss handler alone (:class:`hdl.miss_handler.MissHandler`, with its fill reader):
one miss at a time against a device memory that answers late, checking the reads it makes,
the eviction, the filled word (against the golden memory image of a random state), the
answers of result reads and of failed fills, and the wait for writes after a line has left
its slot."""

import numpy as np
import pytest
from amaranth import Elaboratable, Module

from bench.sim import simulate
from hdl.miss_handler import MissHandler, MissStep
from hdl.prefetch import same_line
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


class _Pool(Elaboratable):
    """The handler with ``t1_of_prefetch_line`` as the pool keeps it: on every clock, whether
    T1's op (which the tests set) is of line ``prefetch_tag``."""

    def __init__(self, handler):
        self.handler = handler

    def elaborate(self, platform):
        m = Module()
        m.submodules.handler = handler = self.handler
        m.d.comb += handler.t1_of_prefetch_line.eq(same_line(PARAMS, handler.op.tag,
                                                             handler.prefetch_tag))
        return m


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


def _op(kind=SlotOp.CONTRIBUTE, tag=TAG):
    """T1's op of ``kind`` on line ``tag``, G-Ternary, threshold 3: its read starts at the
    line's result line for a result read, else at its ``n`` line."""
    return {"kind": kind, "tag": tag, "mode": Mode.GTERNARY, "threshold": 3, "user": 5,
            "first": tag if kind == SlotOp.READ else tag + P.state_lines * P.line_bytes}


async def _miss(ctx, dut, kind, occupant_valid=True):
    """T1's op of ``kind`` misses (on every clock the handler stays in RUN, as the pool's T1
    does); returns what the handler did, clock by clock, until its op was installed or
    answered."""
    ctx.set(dut.op, _op(kind))
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
        running = ctx.get(dut.next_step) == MissStep.RUN
        await ctx.tick()
        ctx.set(dut.miss, running and not (install or answering))
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

    simulate(_Pool(dut), testbench, processes=[_memory(dut, lines, set(), reads)])


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

    simulate(_Pool(dut), testbench, processes=[_memory(dut, {TAG: line}, set(), reads)])


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

    simulate(_Pool(dut), testbench, processes=[_memory(dut, {}, {first}, [])])


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

    simulate(_Pool(dut), testbench, processes=[_memory(dut, {}, set(), reads)])


def _state_lines(n, seed, tag=TAG):
    """A random G-Ternary state of count ``n``, and its lines in device memory at ``tag``."""
    rng = np.random.default_rng(seed)
    state = pack_state(P, Mode.GTERNARY, rng.integers(-n, n + 1, P.gternary_lanes), n)
    image = state_to_memory(P, state)[0].reshape(P.state_lines, P.line_bytes)
    lines = {tag + (1 + k) * P.line_bytes: _line_int(image[k]) for k in range(P.state_lines)}
    return int.from_bytes(state[0].tobytes(), "little"), lines


async def _prefetch(ctx, dut, tag=TAG):
    """Offers line ``tag`` for a prefetch until the handler takes it, then waits until its
    lines are in."""
    ctx.set(dut.prefetch.payload, {"tag": tag, "first": tag + P.state_lines * P.line_bytes})
    ctx.set(dut.prefetch.valid, 1)
    await ctx.tick().until(dut.prefetch.ready)
    ctx.set(dut.prefetch.valid, 0)
    await ctx.tick().repeat(MISS_CLOCKS // 2)
    assert not ctx.get(dut.prefetch_busy), "the prefetch's lines are not in"


async def _fast_miss(ctx, dut, tag=TAG, event=None):
    """T1's op on line ``tag`` is foreseen (``next_prefetched``, with port ``event`` high on
    that clock if given), then misses into an empty slot with its data in; returns
    (install_due, fast_install, install, fills, filled state) on the clock it misses."""
    ctx.set(dut.op, _op(tag=tag))
    for port in (dut.data_ok, dut.unit_empty, dut.room, dut.next_prefetched):
        ctx.set(port, 1)
    if event:
        ctx.set(getattr(dut, event), 1)
    await ctx.tick()
    ctx.set(dut.next_prefetched, 0)
    if event:
        ctx.set(getattr(dut, event), 0)
    ctx.set(dut.miss, 1)
    ctx.set(dut.t1_prefetched, 1)
    seen = tuple(ctx.get(port) for port in (dut.install_due, dut.fast_install, dut.install,
                                            dut.events.fills, dut.filled.state.as_value()))
    await ctx.tick()
    ctx.set(dut.miss, 0)
    ctx.set(dut.t1_prefetched, 0)
    return seen


@pytest.mark.parametrize("n", [0, P.capacity])
def test_prefetch_installs_on_the_clock_of_the_miss(n):
    """A line read ahead is installed on the clock its op misses, foreseen a clock before
    (``install_due``), with its state golden, and read once."""
    want_state, lines = _state_lines(n, SEED + n)
    dut = MissHandler(PARAMS, PARAMS, user_width=4, queue_depth=10)
    reads = []

    async def testbench(ctx):
        await _prefetch(ctx, dut)
        due, fast, install, fills, state = await _fast_miss(ctx, dut)
        assert (due, fast, install, fills) == (1, 1, 0, 1), \
            f"n {n}: (install_due, fast_install, install, fills) {(due, fast, install, fills)}"
        assert state == want_state, f"n {n}: filled state {state:#x}, expected {want_state:#x}"
        assert ctx.get(dut.next_step) == MissStep.RUN, "a fast install leaves the handler in RUN"
        want_reads = [(TAG + P.state_lines * P.line_bytes, 1)] + (
            [(TAG + P.line_bytes, P.counter_width)] if n else [])
        assert reads == want_reads, f"n {n}: reads {reads}, expected {want_reads}"

    simulate(_Pool(dut), testbench, processes=[_memory(dut, lines, set(), reads)])


@pytest.mark.parametrize("event", ["departure", "host_writes_pending", "hold_prefetch"])
@pytest.mark.parametrize("when", ["before", "foreseen"])
def test_prefetch_is_not_used_once_memory_may_have_changed(event, when):
    """After a line left its slot, with a host write pending, or with a scan task under way
    (``when``: clocks before the miss, or on the clock the fast install was foreseen), a
    prefetch is not used: the miss of its line reads the line again, after the wait for
    writes if a line left, and installs what it read."""
    want_state, lines = _state_lines(2, SEED)
    dut = MissHandler(PARAMS, PARAMS, user_width=4, queue_depth=10)
    reads = []

    async def testbench(ctx):
        await _prefetch(ctx, dut)
        if when == "before":
            ctx.set(getattr(dut, event), 1)
            await ctx.tick()
            ctx.set(getattr(dut, event), 0)
        due, fast, *_ = await _fast_miss(ctx, dut, event=event if when == "foreseen" else None)
        assert (due, fast) == (when == "foreseen", 0), \
            f"{event} {when}: (install_due, fast_install) {(due, fast)}"
        ctx.set(dut.miss, 1)        # the op is still in T1, missing (the pool's miss_now)
        for _ in range(MISS_CLOCKS):
            if ctx.get(dut.install):
                break
            running = ctx.get(dut.next_step) == MissStep.RUN
            await ctx.tick()
            ctx.set(dut.miss, running)
        assert ctx.get(dut.install), f"{event} {when}: the miss was not installed"
        state = ctx.get(dut.filled.state.as_value())
        assert state == want_state, \
            f"{event} {when}: filled state {state:#x}, expected {want_state:#x}"
        n_line = TAG + P.state_lines * P.line_bytes
        assert [address for address, _ in reads].count(n_line) == 2, \
            f"{event} {when}: reads {reads}: the n line must be read again"

    simulate(_Pool(dut), testbench, processes=[_memory(dut, lines, set(), reads)])


@pytest.mark.parametrize("other_n", [0, P.capacity])
@pytest.mark.parametrize("after", [0, 4, 6, 9, 30])
def test_miss_of_another_line_drops_the_prefetch(other_n, after):
    """A miss of a line other than the prefetch's, ``after`` clocks into the prefetch (its
    ``n`` line, and its planes if ``other_n`` is not 0, on their way or in), drops the
    prefetch, skips its lines still to come, and reads its own line, whose state it
    installs."""
    want_state, lines = _state_lines(1, SEED)
    other = TAG + 0x400
    lines.update(_state_lines(other_n, SEED + 1, other)[1])
    dut = MissHandler(PARAMS, PARAMS, user_width=4, queue_depth=10)
    reads = []

    async def testbench(ctx):
        ctx.set(dut.prefetch.payload, {"tag": other,
                                       "first": other + P.state_lines * P.line_bytes})
        ctx.set(dut.prefetch.valid, 1)
        await ctx.tick().until(dut.prefetch.ready)
        ctx.set(dut.prefetch.valid, 0)
        for _ in range(after):
            await ctx.tick()
        seen = await _miss(ctx, dut, SlotOp.CONTRIBUTE, occupant_valid=False)
        where = f"prefetch of n {other_n}, miss {after} clocks into it"
        assert (seen["install"], seen["fills"]) == (1, 1), f"{where}: {seen}"
        state = seen["filled_state"]
        assert state == want_state, \
            f"{where}: filled state {state:#x}, expected {want_state:#x}"
        assert not ctx.get(dut.prefetch_busy), f"{where}: lines of the prefetch still to come"
        assert [address for address, _ in reads][:1] == [other + P.state_lines * P.line_bytes], \
            f"reads {reads}: the prefetch's read first"
        assert (TAG + P.state_lines * P.line_bytes, 1) in reads, f"reads {reads}: no own read"

    simulate(_Pool(dut), testbench, processes=[_memory(dut, lines, set(), reads)])


def test_a_prefetch_whose_line_hit_is_not_installed_for_the_next_op():
    """The fast install is foreseen (``next_prefetched``) on a clock T1 holds a hit of the
    prefetch's line (the tags put it in its slot after its prefetch started); the op behind
    it, of another line, misses into an empty slot on the next clock. It must not take the
    prefetch's filled word: it reads its own line and installs its own state."""
    want_state, lines = _state_lines(1, SEED)
    other = TAG + 0x400
    lines.update(_state_lines(2, SEED + 1, other)[1])
    dut = MissHandler(PARAMS, PARAMS, user_width=4, queue_depth=10)
    reads = []

    async def testbench(ctx):
        await _prefetch(ctx, dut, other)
        ctx.set(dut.op, _op(tag=other))
        for port in (dut.data_ok, dut.unit_empty, dut.room, dut.next_prefetched, dut.t1_hit):
            ctx.set(port, 1)
        await ctx.tick()
        ctx.set(dut.next_prefetched, 0)
        ctx.set(dut.t1_hit, 0)
        ctx.set(dut.op, _op(tag=TAG))
        ctx.set(dut.occupant_valid, 0)
        ctx.set(dut.miss, 1)
        assert not ctx.get(dut.fast_install), \
            f"line {TAG:#x}'s op fast-installed the prefetch of line {other:#x}"
        seen = await _miss(ctx, dut, SlotOp.CONTRIBUTE, occupant_valid=False)
        assert (seen["install"], seen["fills"]) == (1, 1), f"line {TAG:#x}'s miss: {seen}"
        assert seen["filled_state"] == want_state, \
            f"filled state {seen['filled_state']:#x}, expected {want_state:#x}"
        assert (TAG + P.state_lines * P.line_bytes, 1) in reads, f"reads {reads}: no own read"

    simulate(_Pool(dut), testbench, processes=[_memory(dut, lines, set(), reads)])


def test_a_miss_after_a_hit_of_the_prefetched_line_reads_the_line_again():
    """An op of the prefetch's line hits in T1 (its slot held the line after the prefetch
    started); an op of the same line then misses into an empty slot. The prefetch is of no
    use: the miss does not wait for it, but reads the line itself and installs its state."""
    want_state, lines = _state_lines(2, SEED)
    dut = MissHandler(PARAMS, PARAMS, user_width=4, queue_depth=10)
    reads = []

    async def testbench(ctx):
        await _prefetch(ctx, dut)
        ctx.set(dut.op, _op(tag=TAG))
        ctx.set(dut.t1_hit, 1)
        await ctx.tick()
        ctx.set(dut.t1_hit, 0)
        # T1 holds an op of the prefetch's line throughout, as the pool would say.
        ctx.set(dut.next_prefetched, 1)
        ctx.set(dut.t1_prefetched, 1)
        seen = await _miss(ctx, dut, SlotOp.CONTRIBUTE, occupant_valid=False)
        assert (seen["install"], seen["fills"]) == (1, 1), f"the miss after the hit: {seen}"
        assert seen["filled_state"] == want_state, \
            f"filled state {seen['filled_state']:#x}, expected {want_state:#x}"
        n_line = TAG + P.state_lines * P.line_bytes
        assert [address for address, _ in reads].count(n_line) == 2, \
            f"reads {reads}: the n line must be read again"

    simulate(_Pool(dut), testbench, processes=[_memory(dut, lines, set(), reads)])


def test_a_fast_install_takes_only_an_op_of_the_prefetched_line():
    """The fast install is foreseen from TA's op, a whole-line contribution of the prefetch's
    line, while T1 holds a partial-line contribution to another line (it needs no slot, and
    waits for its slot's word); on the next clock that op is still in T1, its slot's word in
    and empty. It must not take the prefetch's filled word."""
    _, lines = _state_lines(2, SEED)
    dut = MissHandler(PARAMS, PARAMS, user_width=4, queue_depth=10)
    reads = []

    async def testbench(ctx):
        await _prefetch(ctx, dut)
        other = TAG + 0x400
        ctx.set(dut.op, _op(tag=other))
        for port in (dut.unit_empty, dut.room, dut.next_prefetched):
            ctx.set(port, 1)
        await ctx.tick()
        assert ctx.get(dut.install_due), "the fast install was not foreseen"
        ctx.set(dut.next_prefetched, 0)
        ctx.set(dut.data_ok, 1)
        ctx.set(dut.occupant_valid, 0)
        assert not ctx.get(dut.fast_install), \
            f"T1's op of line {other:#x} fast-installed the prefetch of line {TAG:#x}"

    simulate(_Pool(dut), testbench, processes=[_memory(dut, lines, set(), reads)])
