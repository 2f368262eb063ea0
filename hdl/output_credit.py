"""Room in the slot pool's output queues, taken before an op enters (:mod:`hdl.slots`)."""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["OutputCredit"]


class OutputCredit(wiring.Component):
    """Whether the pool's two output queues (its result queue, and the memory port's W buffer
    for write-backs) have room for every op from TA on and one more, so that no op ever waits
    in the pipeline for room.

    Each queue's level plus the ops in the pipeline (its *claim*) is summed into a register,
    so that no adder is in front of a decision (pipeline rule 3), and compared with constants.
    A claim grows by one op an edge at most (an op taken, or the miss handler's eviction,
    made only while no op is taken), so a claim a clock old is short by one at most: ``room``
    allows for it, and ``room_take``, a register, for the one more it does not see.

    Parameters
    ----------
    depth : int
        Entries of each queue.

    Members
    -------
    results_held, write_backs_held : In(range(depth + 1))
        The queues' levels, as of the last clock edge.
    in_pipe : In(range(depth + 1))
        The ops from TA on: the stages, the result unit's input register and the unit (the
        queues have an entry for each, :data:`hdl.slots.PoolSlice.QUEUE_DEPTH`).
    room : Out(1)
        Each claim, a clock old, is below ``depth - 1``: room for one op more (the eviction).
    room_take : Out(1)
        A register: each claim, a clock old, was below ``depth - 2`` (an op may be taken).
    """

    def __init__(self, depth):
        if not isinstance(depth, int) or depth < 3:
            raise ValueError(f"depth must be an integer of at least 3, not {depth!r}")
        self.depth = depth
        super().__init__({
            "results_held": In(range(depth + 1)),
            "write_backs_held": In(range(depth + 1)),
            "in_pipe": In(range(depth + 1)),
            "room": Out(1),
            "room_take": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        depth = self.depth
        claims = [Signal(range(2 * depth + 1), name=f"{queue}_claim")
                  for queue in ("results", "write_backs")]
        m.d.sync += [claim.eq(level + self.in_pipe)
                     for claim, level in zip(claims, (self.results_held,
                                                      self.write_backs_held))]
        m.d.comb += self.room.eq(Cat(claim < depth - 1 for claim in claims).all())
        m.d.sync += self.room_take.eq(Cat(claim < depth - 2 for claim in claims).all())
        return m
