"""P2's slot update alone (:class:`hdl.slot_update.SlotUpdate`) in ``amaranth.sim``: random
ops on random slot words, each checked against the golden accumulators (lanes, ``n``) and the
contract of every op kind (the word after the op, the request to the result unit, the
events)."""

import dataclasses

import numpy as np
import pytest
from amaranth import Module, Signal

from bench.sim import simulate
from golden.aggregate import gbinary_accumulate, gternary_accumulate
from hdl.slot_ops import SlotOp, accumulate, side_layout
from hdl.slot_update import UPDATE_EVENTS, SlotUpdate
from spec.formats import pack_state, signs_to_lines, ternary_to_lines, unpack_state
from spec.params import RESERVED_MODE, ControllerParams, DatapathParams, Mode, Reason

PARAMS = ControllerParams(DatapathParams(line_bits=64, counter_width=3), regions=2,
                          address_bits=20, slots=4)
TRIALS = 400
SEED = 58


def _state_value(p, mode, lanes, n):
    """A state as the slot word holds it (:func:`hdl.datapath.state_layout`)."""
    return int.from_bytes(pack_state(p, mode, lanes, n)[0].tobytes(), "little")


def _unpacked(p, mode, value):
    raw = np.frombuffer(value.to_bytes(-(-p.state_bits // 8), "little"), np.uint8)
    return unpack_state(p, mode, raw[None])


def _case(rng, p):
    """A random op and slot word, with the decisions P2 is given for them."""
    kind = SlotOp(int(rng.integers(0, 6)))
    mode = int(rng.choice([Mode.GBINARY.value, Mode.GTERNARY.value, RESERVED_MODE]))
    lane_mode = Mode.GTERNARY if mode == Mode.GTERNARY.value else Mode.GBINARY
    n = int(rng.integers(0, p.capacity + 1))
    if lane_mode == Mode.GBINARY:
        lanes = rng.integers(0, n + 1, p.gbinary_lanes)
        line = signs_to_lines(rng.choice([-1.0, 1.0], (1, p.gbinary_lanes)))[0]
    else:
        lanes = rng.integers(-n, n + 1, p.gternary_lanes)
        line = ternary_to_lines(rng.integers(-1, 2, (1, p.gternary_lanes)))[0]
        if rng.random() < 0.3:       # an invalid code, 10
            lane = int(rng.integers(p.gternary_lanes))
            shift = 2 * (lane % 4)
            line[lane // 4] = (int(line[lane // 4]) & ~(0b11 << shift) & 0xFF) | 0b10 << shift
    expected = int(rng.integers(0, p.capacity + 1))
    return {"kind": kind, "mode": mode, "lane_mode": lane_mode, "n": n, "lanes": lanes,
            "line": line, "full_line": bool(rng.random() < 0.85), "expected": expected,
            "valid": bool(rng.random() < 0.9), "word_valid": bool(rng.random() < 0.8),
            "dirty": bool(rng.random() < 0.5), "covered": bool(rng.random() < 0.5),
            "tag": int(rng.integers(0, 1 << 20)) & ~0xFF, "threshold": int(rng.integers(1, 8)),
            "word_threshold": int(rng.integers(1, 8))}


def _expected(p, case):
    """What the update must give: the word's fields after the op, the request and events."""
    kind, valid = case["kind"], case["valid"]
    contribute = kind == SlotOp.CONTRIBUTE
    aggregating = case["mode"] in (Mode.GBINARY.value, Mode.GTERNARY.value)
    may_add = contribute and aggregating and case["full_line"]
    accepted = may_add and case["n"] < p.capacity
    complete = accepted and case["n"] == case["expected"] - 1
    lanes, n = case["lanes"], case["n"]
    invalid = False
    if accepted and case["lane_mode"] == Mode.GBINARY:
        lanes, n, _ = gbinary_accumulate(lanes[None], np.array([n]), case["line"][None],
                                         p.capacity)
        lanes, n = lanes[0], int(n[0])
    elif accepted:
        lanes, n, _, bad = gternary_accumulate(lanes[None], np.array([n]), case["line"][None],
                                               p.capacity)
        lanes, n, invalid = lanes[0], int(n[0]), bool(bad[0])
    valid_after, dirty_after = case["word_valid"], case["dirty"]
    write_back = False
    if accepted:
        dirty_after, write_back = not complete, complete
    elif kind == SlotOp.FLUSH:
        dirty_after = case["dirty"] and not case["word_valid"]
        write_back = case["word_valid"] and case["dirty"]
    elif kind == SlotOp.EVICT:
        valid_after, write_back = False, case["word_valid"] and case["dirty"]
    elif kind == SlotOp.CLEAR:
        valid_after = case["word_valid"] and not case["covered"]
    elif kind == SlotOp.DROP:
        valid_after = False
    reason = Reason.NONE
    if contribute and not accepted:
        reason = (Reason.MODE if not aggregating else Reason.PARTIAL if not case["full_line"]
                  else Reason.CAPACITY)
    events = dict.fromkeys(UPDATE_EVENTS, False)
    if valid:
        events.update(accepted=accepted, rejected=contribute and not accepted,
                      capacity=reason == Reason.CAPACITY, partial=reason == Reason.PARTIAL,
                      invalid=invalid, completed=complete,
                      evictions=kind == SlotOp.EVICT and case["word_valid"],
                      dropped=kind == SlotOp.DROP and case["word_valid"] and case["dirty"])
    result = contribute or kind == SlotOp.READ
    return {"valid": valid_after, "dirty": dirty_after, "lanes": lanes, "n": n,
            "request": valid and (result or write_back), "result": result,
            "write_back": write_back, "accepted": not contribute or accepted, "reason": reason,
            "invalid": invalid, "events": events}


def test_update_against_golden():
    p = PARAMS.datapath
    dut = SlotUpdate(PARAMS, user_width=4)
    side = side_layout(PARAMS, 4)
    rng = np.random.default_rng(SEED)
    cases = [_case(rng, p) for _ in range(TRIALS)]

    async def testbench(ctx):
        for t, case in enumerate(cases):
            where = f"seed {SEED}, trial {t}, {case['kind'].name} in mode {case['mode']}"
            full = case["n"] == p.capacity
            may_add = (case["kind"] == SlotOp.CONTRIBUTE and case["full_line"]
                       and case["mode"] in (Mode.GBINARY.value, Mode.GTERNARY.value))
            ctx.set(dut.op, {"kind": case["kind"],
                             "tag": case["tag"] + 0x40, "full_line": case["full_line"],
                             "threshold": case["threshold"], "expected": case["expected"],
                             "user": t % 16,
                             "data": int.from_bytes(case["line"].tobytes(), "little")})
            ctx.set(dut.op.mode.as_value(), case["mode"])     # the reserved code too
            ctx.set(dut.word, {"valid": case["word_valid"], "dirty": case["dirty"],
                               "tag": case["tag"], "mode": case["lane_mode"].value,
                               "threshold": case["word_threshold"]})
            ctx.set(dut.word.state.as_value(),
                    _state_value(p, case["lane_mode"], case["lanes"], case["n"]))
            ctx.set(dut.valid, case["valid"])
            ctx.set(dut.may_add, may_add)
            ctx.set(dut.full, full)
            ctx.set(dut.last, case["n"] == case["expected"] - 1)
            ctx.set(dut.covered, case["covered"])
            copies = (1 << p.control_copies) - 1
            ctx.set(dut.adds, copies if may_add and not full else 0)
            ctx.set(dut.ternary, copies if case["mode"] == Mode.GTERNARY.value else 0)
            want = _expected(p, case)
            new = ctx.get(dut.new)
            assert (new.valid, new.dirty) == (want["valid"], want["dirty"]), \
                f"{where}: valid, dirty {new.valid, new.dirty}, expected " \
                f"{want['valid'], want['dirty']}"
            lanes, n = _unpacked(p, case["lane_mode"], ctx.get(dut.new.state.as_value()))
            bad = np.flatnonzero(lanes[0] != want["lanes"])
            assert not len(bad), f"{where}: lane {bad[0]} is {lanes[0][bad[0]]}, expected " \
                                 f"{want['lanes'][bad[0]]}"
            assert n[0] == want["n"], f"{where}: n {n[0]}, expected {want['n']}"
            assert new.tag == case["tag"], f"{where}: the op changed the slot's tag"
            events = {name: bool(ctx.get(dut.events[name])) for name in UPDATE_EVENTS}
            assert events == want["events"], f"{where}: events {events}, expected " \
                                             f"{want['events']}"
            assert ctx.get(dut.request.valid) == want["request"], f"{where}: request valid"
            got = side.from_bits(ctx.get(dut.request.payload.user))
            assert (got.result, got.write_back, got.accepted, Reason(got.reason),
                    got.invalid) == (want["result"], want["write_back"], want["accepted"],
                                     want["reason"], want["invalid"]), \
                f"{where}: side {got}, expected {want}"
            assert got.address == case["tag"], f"{where}: write-back address {got.address:#x}"

    simulate(dut, testbench)


def test_after_tells_the_op_behind():
    """``after``: the count written is ``capacity``, and it is the op behind's
    ``EXPECTED - 1`` (``before_last`` when the op adds nothing, ``two_before`` when it adds)."""
    p = PARAMS.datapath
    dut = SlotUpdate(PARAMS, user_width=1)

    async def testbench(ctx):
        ctx.set(dut.valid, 1)
        ctx.set(dut.op.kind, SlotOp.CONTRIBUTE)
        for n in range(p.capacity + 1):
            for accept in (0, 1):
                ctx.set(dut.word.state.n, n)
                ctx.set(dut.may_add, accept)
                ctx.set(dut.full, n == p.capacity)
                ctx.set(dut.before_last, n)
                ctx.set(dut.two_before, (n + 1) % (1 << (p.counter_width + 1)))
                adds = accept and n < p.capacity
                want_full = (n == p.capacity - 1) if adds else n == p.capacity
                assert ctx.get(dut.after.full) == want_full, f"n {n}, may_add {accept}: full"
                want_last = (n == (n + 1) % (1 << (p.counter_width + 1))) if adds else True
                assert ctx.get(dut.after.last) == want_last, f"n {n}, may_add {accept}: last"

    simulate(dut, testbench)


@pytest.mark.parametrize("kind", [SlotOp.FLUSH, SlotOp.EVICT, SlotOp.CLEAR, SlotOp.DROP])
def test_scan_keeps_the_word_mode(kind):
    """A scan's result line is made with the slot word's mode and threshold, not the op's."""
    dut = SlotUpdate(PARAMS, user_width=1)

    async def testbench(ctx):
        ctx.set(dut.valid, 1)
        ctx.set(dut.op, {"kind": kind, "mode": Mode.GBINARY.value, "threshold": 1})
        ctx.set(dut.word, {"valid": 1, "dirty": 1, "mode": Mode.GTERNARY.value,
                           "threshold": 5})
        assert Mode(ctx.get(dut.request.payload.mode)) == Mode.GTERNARY, kind.name
        assert ctx.get(dut.request.payload.threshold) == 5, kind.name

    simulate(dut, testbench)


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_accumulate_adds_every_code_to_every_lane_pair(width):
    """:func:`hdl.slot_ops.accumulate`'s one adder per lane pair, exhaustively: G-Binary adds
    each line bit to its own ``W``-bit count, which wraps without carrying into its
    neighbour; G-Ternary adds the code's +1, -1 or 0 to the ``2W``-bit sum, which wraps
    without carrying into the next pair. Three pairs, pair ``k`` at the tested value plus
    ``k`` with the tested code plus ``k``: every pair takes every value and code, beside
    neighbours that carry out of theirs."""
    p = dataclasses.replace(DatapathParams(), counter_width=width)
    count = 3
    lanes, line, ternary = Signal(2 * width * count), Signal(2 * count), Signal()
    m = Module()
    out = Signal(2 * width * count)
    m.d.comb += out.eq(accumulate(p, lanes, line, ternary))
    low_mask, mask = (1 << width) - 1, (1 << 2 * width) - 1
    step = {0b00: 0, 0b01: 1, 0b10: 0, 0b11: -1}      # line bit 0 is the code's low bit

    def added(pair, code, mode):
        if mode:
            return (pair + step[code]) & mask
        low = (pair & low_mask) + (code & 1) & low_mask
        high = (pair >> width) + (code >> 1) & low_mask
        return low | high << width

    async def testbench(ctx):
        for value in range(1 << 2 * width):
            for first_code in range(4):
                pairs = [(value + k) & mask for k in range(count)]
                codes = [(first_code + k) % 4 for k in range(count)]
                ctx.set(lanes, sum(pair << 2 * width * k for k, pair in enumerate(pairs)))
                ctx.set(line, sum(code << 2 * k for k, code in enumerate(codes)))
                for mode in (0, 1):
                    ctx.set(ternary, mode)
                    got = ctx.get(out)
                    for k, (pair, code) in enumerate(zip(pairs, codes)):
                        expected = added(pair, code, mode)
                        lane = got >> 2 * width * k & mask
                        assert lane == expected, \
                            f"W {width}, {'G-Ternary' if mode else 'G-Binary'}, pair {k}: " \
                            f"lanes {pair:#x} + line {code:#04b} gave {lane:#x}, " \
                            f"expected {expected:#x}"

    simulate(m, testbench, clock=None)
