"""The DevLoad meter alone (:class:`hdl.devload.DevLoadMeter`): random requests taken,
answered and dropped; DevLoad checked clock by clock against the held count and the limits."""

import numpy as np
import pytest

from bench.sim import simulate
from hdl.devload import DevLoadMeter
from spec.cxl import DevLoad
from spec.params import ControllerParams

SEED = 58
CLOCKS = 2000


def _level(held, limits):
    light, optimal, moderate = limits
    return (DevLoad.LIGHT if held <= light else DevLoad.OPTIMAL if held <= optimal
            else DevLoad.MODERATE if held <= moderate else DevLoad.SEVERE)


@pytest.mark.parametrize("queue_depth", [2, 8, 64])
def test_devload_follows_held_requests(queue_depth):
    params = ControllerParams(queue_depth=queue_depth)
    dut = DevLoadMeter(params)
    rng = np.random.default_rng(SEED)
    limit = 2 * queue_depth + 4             # above the Severe limit now and then

    async def testbench(ctx):
        held = 0
        late = (0, 0, 0)                    # the handshakes of the last clock
        for clock in range(CLOCKS):
            want = _level(held, params.devload_limits)
            assert ctx.get(dut.dev_load) == want, \
                f"seed {SEED}, queue_depth {queue_depth}, clock {clock}: {held} held"
            room = limit - held - late[0]
            taken = int(rng.integers(0, 3)) if room >= 2 else 0
            pending = held + late[0] - late[1] - late[2]
            answered = int(rng.integers(0, min(2, pending) + 1)) if pending > 0 else 0
            ignored = int(pending - answered > 0 and rng.random() < 0.1)
            ctx.set(dut.taken, taken)
            ctx.set(dut.answered, answered)
            ctx.set(dut.ignored, ignored)
            await ctx.tick()
            held += late[0] - late[1] - late[2]
            late = (taken, answered, ignored)

    simulate(dut, testbench)
