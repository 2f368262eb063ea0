"""The pool's tag check alone (:class:`hdl.tag_check.TagCheck`): ops move from T0 through TA
into T1 at random while P2 gives slots other lines or none, on the ops' own slots most of
the time; after every clock edge T1's ``hit`` must say whether T1's line is in its slot as the
slots then stand (a model of the slots that changes on the edge of each retag), ``occupied``
whether the slot holds any line, and each prefetch look-up whether its line is in its slot as
the slots stood two clocks before. (``occupied`` behind a fast install, which this test does
not make, is checked against the slot word in the pool's golden runs, ``test_slots``.)"""

import numpy as np
import pytest

from bench.sim import simulate
from hdl.tag_check import TagCheck
from spec.params import ControllerParams, DatapathParams

PARAMS = ControllerParams(DatapathParams(line_bits=64, counter_width=2), regions=2,
                          address_bits=20, slots=4)
SEED = 58
CLOCKS = 3000


def _op(rng, check):
    """A random op: its slot, and its line among three that the slot can hold."""
    index = int(rng.integers(PARAMS.slots))
    line = int(rng.integers(3))
    tag = (line << check.tag_lsb) | index * PARAMS.accumulator_bytes_per_line
    return index, line, tag


def test_hit_and_occupied_follow_every_retag():
    dut = TagCheck(PARAMS, probes=2)
    rng = np.random.default_rng(SEED)

    async def testbench(ctx):
        slots = [None] * PARAMS.slots          # the line each slot holds (reset: none)
        t0, ta, t1 = _op(rng, dut), _op(rng, dut), _op(rng, dut)
        p2 = _op(rng, dut)
        # The slots at the start of the last clock: as the retags up to two clocks ago left
        # them, which is what the look-ups see (the tag memory is written a clock late).
        two_clocks_ago = list(slots)
        for clock in range(CLOCKS):
            for k in range(2):
                index, line, tag = _op(rng, dut)
                ctx.set(dut.probe_index[k], index)
                ctx.set(dut.probe_tag[k], tag)
                got, want = ctx.get(dut.probe_resident[k]), two_clocks_ago[index] == line
                assert got == want, (
                    f"seed {SEED}, clock {clock}: look-up {k} of line {line} in slot {index} "
                    f"says {'not ' * (not got)}resident; two clocks ago the slot held "
                    f"{two_clocks_ago[index]}")
            two_clocks_ago = list(slots)
            ta_moves = bool(rng.random() < 0.6)
            ta_loads = ta_moves or bool(rng.random() < 0.2)    # TA empty: loads, T1 stays
            t0_loads = ta_loads or bool(rng.random() < 0.2)    # T0 empty: loads, TA stays
            retag = bool(rng.random() < 0.5)
            install = retag and bool(rng.random() < 0.6)
            if rng.random() < 0.7:          # P2 on a slot of the ops in the stages
                p2 = [t0, ta, t1][int(rng.integers(3))]
                p2 = (p2[0], int(rng.integers(3)), 0)
                p2 = (p2[0], p2[1], (p2[1] << dut.tag_lsb)
                      | p2[0] * PARAMS.accumulator_bytes_per_line)
            else:
                p2 = _op(rng, dut)
            next_t0 = _op(rng, dut) if t0_loads else t0
            for port, value in ((dut.t0_tag, t0[2]),
                                (dut.t0_next_index, next_t0[0]), (dut.ta_tag, ta[2]),
                                (dut.t1_tag, t1[2]), (dut.ta_loads, ta_loads),
                                (dut.ta_moves, ta_moves), (dut.p2_index, p2[0]),
                                (dut.p2_tag, p2[2]), (dut.p2_install, install),
                                (dut.retag, retag), (dut.p2_on_t0, p2[0] == t0[0]),
                                (dut.p2_on_ta, p2[0] == ta[0]), (dut.p2_on_t1, p2[0] == t1[0])):
                ctx.set(port, value)
            await ctx.tick()
            if retag:
                slots[p2[0]] = p2[1] if install else None
            if ta_moves:
                t1 = ta
            if ta_loads:
                ta = t0
            t0 = next_t0
            want = slots[t1[0]] == t1[1]
            assert ctx.get(dut.hit) == want, (
                f"seed {SEED}, clock {clock}: T1's line {t1[1]} of slot {t1[0]} "
                f"{'hit' if not want else 'missed'}, the slot holds {slots[t1[0]]}")
            want = slots[t1[0]] is not None
            assert ctx.get(dut.occupied) == want, (
                f"seed {SEED}, clock {clock}: T1's slot {t1[0]} "
                f"{'occupied' if not want else 'empty'}, the slot holds {slots[t1[0]]}")

    simulate(dut, testbench)


@pytest.mark.parametrize("address_bits", [16, 17, 18])
def test_tag_memory_builds_when_the_slot_index_reaches_the_top_address_bit(address_bits):
    """512-byte accumulators and 256 slots: the slot index takes address bits 9 to 16, so the
    tag memory keeps no tag bit (16 and 17 address bits) or one (18), beside the valid bit."""
    params = ControllerParams(address_bits=address_bits)
    check = TagCheck(params)
    assert check.tag_lsb == 17, f"the case this test covers moved: tag bits start at " \
                                f"{check.tag_lsb}"
    tags = check.elaborate(None).submodules["tags"]
    want = 1 + max(0, address_bits - check.tag_lsb)
    assert len(tags.write_data) == want, \
        f"address_bits={address_bits}: tag memory {len(tags.write_data)} bits wide, " \
        f"expected {want}"
