"""The pool's output credit alone (:class:`hdl.output_credit.OutputCredit`): random levels and
ops in flight, ``room`` and ``room_take`` checked clock by clock against their contract."""

import numpy as np
import pytest

from bench.sim import simulate
from hdl.output_credit import OutputCredit
from hdl.slots import PoolSlice

SEED = 58
CLOCKS = 600


@pytest.mark.parametrize("depths", [(3, 3), (3, 5), (PoolSlice.QUEUE_DEPTH, PoolSlice.WRITE_BACKS)])
def test_room_follows_the_claims(depths):
    dut = OutputCredit(*depths)
    rng = np.random.default_rng(SEED)
    results_depth, write_backs_depth = depths
    inputs = [(int(rng.integers(0, results_depth + 1)),
               int(rng.integers(0, write_backs_depth + 1)),
               int(rng.integers(0, results_depth + 1))) for _ in range(CLOCKS)]

    async def testbench(ctx):
        claims = [0, 0]         # the claims registered on the last edge (reset: 0)
        room_take = 0           # what room_take holds after the last edge
        for clock, (results, write_backs, in_pipe) in enumerate(inputs):
            where = f"seed {SEED}, depths {depths}, clock {clock}"
            want = all(claim < depth - 1 for claim, depth in zip(claims, depths))
            assert ctx.get(dut.room) == want, f"{where}: room, claims {claims}"
            assert ctx.get(dut.room_take) == room_take, f"{where}: room_take, claims {claims}"
            ctx.set(dut.results_held, results)
            ctx.set(dut.write_backs_held, write_backs)
            ctx.set(dut.in_pipe, in_pipe)
            await ctx.tick()
            room_take = int(all(claim < depth - 2 for claim, depth in zip(claims, depths)))
            claims = [level + in_pipe for level in (results, write_backs)]

    simulate(dut, testbench)


@pytest.mark.parametrize("depth", [0, 2, "8"])
@pytest.mark.parametrize("queue", ["results", "write_backs"])
def test_bad_depth(queue, depth):
    depths = {"results": 4, "write_backs": 4, queue: depth}
    with pytest.raises(ValueError, match=f"{queue} must be an integer of at least 3, "
                                         f"not {depth!r}"):
        OutputCredit(**depths)
