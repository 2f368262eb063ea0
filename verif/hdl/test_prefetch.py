"""The hints alone: the pool's fill hints (:class:`hdl.prefetch.FillHints`), which hinted
lines they offer for a prefetch, in which order, and which they drop; and the controller's
hint source (:class:`hdl.prefetch.HintSource`), which flags a repeated line."""

from bench.sim import simulate
from hdl.prefetch import FillHints, HintSource
from spec.params import ControllerParams, DatapathParams

PARAMS = ControllerParams(DatapathParams(line_bits=64, counter_width=3), regions=2,
                          address_bits=20, slots=4)
STRIDE = PARAMS.accumulator_bytes_per_line
#: Clocks each test runs after its hints.
CLOCKS = 12


def _run(hints, *, resident=(), arrive=None, take_every=1):
    """Hints the lines ``hints`` (accumulator numbers), one per clock, each flagged ``repeat``
    when it is of the line hinted before it (as the controller does), then runs ``CLOCKS``
    clocks; the tags say the lines in ``resident`` are in their slots; line ``arrive`` is in
    T1 throughout. The candidate is taken on every ``take_every``-th clock
    it is offered. Returns the lines taken, in order, and the first byte of each read."""
    dut = FillHints(PARAMS)
    taken = []

    async def testbench(ctx):
        offered = 0
        for clock in range(len(hints) + CLOCKS):
            if clock < len(hints):
                tag = hints[clock] * STRIDE
                ctx.set(dut.hint.valid, 1)
                ctx.set(dut.hint.payload, {
                    "tag": tag, "index": hints[clock] % PARAMS.slots,
                    "repeat": clock > 0 and hints[clock] == hints[clock - 1]})
            else:
                ctx.set(dut.hint.valid, 0)
            if arrive is not None:
                ctx.set(dut.t1_valid, 1)
                ctx.set(dut.t1_tag, arrive * STRIDE)
            ctx.set(dut.probe_resident, sum(
                (tag // STRIDE in resident) << k for k, tag in enumerate(ctx.get(dut.probe_tag))))
            take = False
            if ctx.get(dut.candidate.valid):
                offered += 1
                take = offered % take_every == 0
            ctx.set(dut.candidate.ready, take)
            if take:
                payload = ctx.get(dut.candidate.payload)
                taken.append((payload.tag // STRIDE, payload.first))
            await ctx.tick()

    simulate(dut, testbench)
    return taken


def _first(line):
    """The address of line ``line``'s ``n`` line, where its prefetch starts."""
    return line * STRIDE + PARAMS.datapath.state_lines * PARAMS.datapath.line_bytes


def test_lines_are_offered_oldest_first_each_once():
    taken = _run([1, 1, 2, 1])
    assert taken == [(1, _first(1)), (2, _first(2)), (1, _first(1))], \
        f"taken {taken}: want lines 1, 2, 1 (the repeat of line 1 dropped), from the n line"


def test_a_full_queue_drops_the_newest_hint():
    taken = _run([1, 2, 3], take_every=3)
    want = [1, 2][:FillHints.DEPTH]
    assert [line for line, _ in taken] == want, \
        f"taken {taken}: with {FillHints.DEPTH} lines kept and none taken meanwhile, want {want}"


def test_resident_lines_are_not_offered():
    taken = _run([1, 2], resident={1})
    assert [line for line, _ in taken] == [2], f"taken {taken}: line 1 is resident"


def test_a_line_whose_op_reached_t1_is_not_offered():
    taken = _run([1, 2], arrive=1, take_every=2)
    assert [line for line, _ in taken] == [2], (
        f"taken {taken}: line 1's op is in T1 (only its first offer, before the T1 check, "
        f"could be taken), line 2 must follow")


def test_hint_source_flags_a_repeat_of_the_line_hinted_before():
    """:class:`HintSource`: a hint a clock after each line, flagged ``repeat`` when the line
    hinted before it (however long ago) is the same accumulator line; an address inside a
    line's accumulator is of that line."""
    dut = HintSource(PARAMS)
    lines = [1, 1, None, 1, 2, None, None, 1, 1]
    want = [(1, 0), (1, 1), None, (1, 1), (2, 0), None, None, (1, 0), (1, 1)]
    got = []

    async def testbench(ctx):
        for clock, line in enumerate([*lines, None]):
            ctx.set(dut.line.valid, line is not None)
            # Each line's address at a different byte of its accumulator.
            ctx.set(dut.line.payload, (line or 0) * STRIDE + clock % STRIDE)
            await ctx.tick()
            if ctx.get(dut.hint.valid):
                hint = ctx.get(dut.hint.payload)
                assert hint.index == (hint.tag // STRIDE) % PARAMS.slots, \
                    f"clock {clock}: hint tag {hint.tag:#x} in slot {hint.index}"
                got.append((hint.tag // STRIDE, hint.repeat))
            else:
                got.append(None)

    simulate(dut, testbench)
    assert got[:len(want)] == want, f"hints (line, repeat) {got}, want {want}"
