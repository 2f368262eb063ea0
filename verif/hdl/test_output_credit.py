"""The pool's output credit alone (:class:`hdl.output_credit.OutputCredit`): random levels and
ops in flight, ``room`` and ``room_take`` checked clock by clock against their contract."""

import numpy as np
import pytest

from bench.sim import simulate
from hdl.output_credit import OutputCredit
from hdl.slots import PoolSlice

SEED = 58
CLOCKS = 600


@pytest.mark.parametrize("depth", [3, PoolSlice.QUEUE_DEPTH])
def test_room_follows_the_claims(depth):
    dut = OutputCredit(depth)
    rng = np.random.default_rng(SEED)
    inputs = [(int(rng.integers(0, depth + 1)), int(rng.integers(0, depth + 1)),
               int(rng.integers(0, depth + 1))) for _ in range(CLOCKS)]

    async def testbench(ctx):
        claims = [0, 0]         # the claims registered on the last edge (reset: 0)
        room_take = 0           # what room_take holds after the last edge
        for clock, (results, write_backs, in_pipe) in enumerate(inputs):
            where = f"seed {SEED}, depth {depth}, clock {clock}"
            want = all(claim < depth - 1 for claim in claims)
            assert ctx.get(dut.room) == want, f"{where}: room, claims {claims}"
            assert ctx.get(dut.room_take) == room_take, f"{where}: room_take, claims {claims}"
            ctx.set(dut.results_held, results)
            ctx.set(dut.write_backs_held, write_backs)
            ctx.set(dut.in_pipe, in_pipe)
            await ctx.tick()
            room_take = int(all(claim < depth - 2 for claim in claims))
            claims = [level + in_pipe for level in (results, write_backs)]

    simulate(dut, testbench)


@pytest.mark.parametrize("depth", [0, 2, "8"])
def test_bad_depth(depth):
    with pytest.raises(ValueError, match=f"depth must be an integer of at least 3, "
                                         f"not {depth!r}"):
        OutputCredit(depth)
