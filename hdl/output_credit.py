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
    results, write_backs : int
        Entries of the result queue and of the write-back queue.

    Members
    -------
    results_held : In(range(results + 1))
    write_backs_held : In(range(write_backs + 1))
        The queues' levels, as of the last clock edge (the write-backs' at most that: the
        memory port frees their room a clock later, and counts a write-back
        ``AxiMemoryPort.TAKE_LAG`` clocks after its take, with room for those it has not
        counted yet).
    in_pipe : In(range(results + 1))
        The ops from TA on: the stages, the result unit's input register and the unit (the
        result queue has an entry for each, :data:`hdl.slots.PoolSlice.QUEUE_DEPTH`).
    room : Out(1)
        Each claim, a clock old, is below its queue's entries less one: room for one op more
        (the eviction).
    room_take : Out(1)
        A register: each claim, a clock old, was below its queue's entries less two (an op may
        be taken).
    """

    def __init__(self, results, write_backs):
        for name, value in (("results", results), ("write_backs", write_backs)):
            if not isinstance(value, int) or value < 3:
                raise ValueError(f"{name} must be an integer of at least 3, not {value!r}")
        self.depths = {"results": results, "write_backs": write_backs}
        super().__init__({
            "results_held": In(range(results + 1)),
            "write_backs_held": In(range(write_backs + 1)),
            "in_pipe": In(range(results + 1)),
            "room": Out(1),
            "room_take": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        held = {"results": self.results_held, "write_backs": self.write_backs_held}
        room, room_take = [], []
        for queue, depth in self.depths.items():
            claim = Signal(range(depth + self.depths["results"] + 1), name=f"{queue}_claim")
            m.d.sync += claim.eq(held[queue] + self.in_pipe)
            room.append(claim < depth - 1)
            room_take.append(claim < depth - 2)
        m.d.comb += self.room.eq(Cat(room).all())
        m.d.sync += self.room_take.eq(Cat(room_take).all())
        return m
