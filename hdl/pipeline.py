"""The timing-closure rules of the design, and the helpers that keep them.

Every component follows these rules; a comment elsewhere names the rule rather than restating it.

1. **Wide pipelines never stall.** A register stage of line-wide data has no enable
   (:class:`PipelineRegister`): a stall computed from a pipeline's output would reach every
   flip-flop of the line. Backpressure is taken before a wide pipeline (credits for what is in
   flight) and after it (a FIFO with room for everything in flight, :class:`EagerFIFO`, so
   that a read or a write moves only its pointers). Line-wide data registers have no reset either
   (``reset_less``): only the valid beside them is reset, and a reset net reaching every
   flip-flop of the design would be the widest net of all.
2. **No control net spans the line.** A decision that steers line-wide logic is made once and
   registered in one copy per group of lanes (:func:`register_copies`; a group is
   ``CONTROL_COPY_BITS`` line bits, :mod:`spec.params`), each copy placed beside its lanes.
3. **One level of logic between registers on wide or far paths.** A select wider than a few
   inputs is registered in steps (:func:`register_selected`), each mux beside the registers it
   selects from; an address compare is split into registered parts
   (:func:`hdl.arith.registered_order`), so that no carry chain spans an address; a check's
   result is registered before it steers anything.
4. **Latency is a named constant of the component**, stated next to its registers and checked
   by a test that measures it.

What the rules leave to the wires: a copy of rule 2 is a register beside its lanes, but the
wire that reaches it from the decision is one connection, and the lanes of a line sit across
the die. When that wire alone takes longer than the clock, no logic change helps: the decision
has to be made a clock earlier and reach its copies through a register between (a tree of
copies), which only a handshake that tolerates the extra clock allows. ``make report`` tells the
two cases apart for each routed placement: the Fmax with its wires taking no time (logic alone),
with its cells taking none (wires alone), and the register-to-register connections that miss
the constraint on their wire alone.
"""

from contextlib import nullcontext

from amaranth import (
    Elaboratable,
    Module,
    Mux,
    ResetSignal,
    Shape,
    ShapeCastable,
    Signal,
    Value,
    unsigned,
)
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import FIFOInterface
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from spec.params import CONTROL_COPY_BITS

__all__ = ["PipelineRegister", "SkidBuffer", "EagerFIFO", "register_selected",
           "column_slices", "register_copies", "register_tree", "delayed", "out_of_reset"]


class PipelineRegister(wiring.Component):
    """One register stage of a pipeline that never stalls: ``source`` is ``sink`` (valid and
    payload) one clock later.

    Both streams are ``always_ready``: there is no enable, and the payload has no reset
    (rule 1).

    Parameters
    ----------
    shape : shape-like
        Payload shape.

    Members
    -------
    sink : In(stream.Signature(shape, always_ready=True))
    source : Out(stream.Signature(shape, always_ready=True))
    """

    def __init__(self, shape):
        super().__init__({"sink": In(stream.Signature(shape, always_ready=True)),
                          "source": Out(stream.Signature(shape, always_ready=True))})

    def elaborate(self, platform):
        m = Module()
        payload = Signal.like(self.sink.payload, reset_less=True)
        m.d.sync += [self.source.valid.eq(self.sink.valid), payload.eq(self.sink.payload)]
        m.d.comb += self.source.payload.eq(payload)
        return m


class SkidBuffer(wiring.Component):
    """A stream stage whose ``sink.ready`` is a register, at no clock of latency: the payload
    passes through while the buffer is empty; one that ``source`` does not take on the clock
    it is offered waits in the buffer (the skid), and ``sink.ready`` is low until it has left.
    Nothing downstream reaches ``sink.ready`` through logic, so a stall does not travel back.

    Parameters
    ----------
    shape : shape-like
        Payload shape: a narrow one (its bits are chosen by one ``full``; rule 1 keeps
        line-wide payloads out of buffers with handshakes).

    Members
    -------
    sink : In(stream.Signature(shape))
    source : Out(stream.Signature(shape))
    full : Out(1)
        A payload waits in the buffer.
    """

    def __init__(self, shape):
        super().__init__({"sink": In(stream.Signature(shape)),
                          "source": Out(stream.Signature(shape)),
                          "full": Out(1)})

    def elaborate(self, platform):
        m = Module()
        skid = Signal.like(self.sink.payload, reset_less=True)
        following = Mux(self.full, ~self.source.ready, self.sink.valid & ~self.source.ready)
        m.d.sync += self.full.eq(following)
        m.d.comb += [self.sink.ready.eq(~self.full),
                     self.source.valid.eq(self.full | self.sink.valid)]
        m.d.comb += self.source.payload.eq(Mux(self.full, skid, self.sink.payload))
        # The skid takes every payload offered while it is empty, so that its enables do not
        # wait for ``source.ready``; it is read only once ``full``.
        with m.If(~self.full):
            m.d.sync += skid.eq(self.sink.payload)
        return m


class EagerFIFO(Elaboratable, FIFOInterface):
    """A first-in first-out queue of ``depth`` entries of ``width`` bits (or of ``shape``),
    with the ports of :class:`amaranth.lib.fifo.SyncFIFO` (``w_data``, ``w_en``, ``w_rdy``,
    ``r_data``, ``r_en``, ``r_rdy``, ``level``), their stream views (``w_stream``,
    ``r_stream``, whose payloads have the entries' ``shape``) and its timing: an entry is
    readable from the clock after its write.
    ``r_rdy`` is a register of its own and ``w_rdy`` one through no logic, each set from the
    level's next value, so that the logic that steers by them starts from a flip-flop, not
    from a compare.

    With ``lag`` = ``(offset, clocks)``, the bits from ``offset`` on are read ``clocks`` later:
    ``r_data[offset:]`` is the entry that was the head ``clocks`` clocks before, so the entry
    a reader takes on clock ``t`` has those bits on ``r_data`` on clock ``t + clocks``. Their
    column groups are addressed by a tree of copies of the read pointer
    (:func:`register_tree`, ``clocks + 1`` levels from the pointer's next value), so that no
    take reaches them within a clock; the memory has ``clocks`` more entries, so that a taken
    entry is not written again before its late read.

    With ``write_lag`` = ``(offset, clocks)``, the bits from ``offset`` on are written
    ``clocks`` later: the writer gives ``w_data[offset:]`` of an entry ``clocks`` clocks after
    its write (``w_en`` and ``w_rdy``), and their column groups are written at copies of the
    write pointer that come through a tree of ``clocks + 1`` levels, so that no write reaches
    them within a clock. An entry is readable once each of its bits can be read in time:
    ``r_rdy`` waits as many clocks more as the late bits come later than ``lag`` reads them
    (none when they are read at least as late as they are written). ``level`` and ``w_rdy``
    count an entry from its write, so a writer's room is as without, and a queue that is to take
    an entry on every clock needs as many entries more as ``r_rdy`` waits.

    Its memory is written on every clock, at the entry after the last one taken, and read
    without a clock at the oldest: the handshakes move only its pointers and level, and reach
    neither the memory's write enables nor its data (rule 1). The memory has an entry more than
    the queue holds, so the one being written is never one that waits. It is built in column
    groups of ``CONTROL_COPY_BITS`` bits, each addressed by copies of the pointers of its own
    (rule 2): a pointer is the address of every LUT RAM cell of the queue.
    """

    def __init__(self, *, width=None, depth, shape=None, lag=None, write_lag=None):
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive integer, not {depth!r}")
        if (width is None) == (shape is None):
            raise ValueError("give exactly one of the entries' width and their shape")
        if shape is not None and not isinstance(shape, ShapeCastable) and \
                Shape.cast(shape).signed:
            raise ValueError(f"the entries' shape must be unsigned or a layout, not {shape!r}: "
                             f"the stream views carry the raw bits")
        self._shape = unsigned(width) if shape is None else shape
        super().__init__(width=Shape.cast(self._shape).width, depth=depth)
        self._lag = self._checked_lag("lag", lag)
        self._write_lag = self._checked_lag("write_lag", write_lag)
        # One level, counting an entry from its write: readable from the clock after it
        # without a ``write_lag``, ``r_rdy`` clocks later with one.
        self.level = self.r_level = self.w_level

    def _checked_lag(self, name, lag):
        """``lag`` (or ``write_lag``) as ``(offset, clocks)``; ``None`` is no bits late."""
        if lag is None:
            return self.width, 0
        offset, clocks = lag if isinstance(lag, tuple) and len(lag) == 2 else (None, None)
        if not (isinstance(offset, int) and isinstance(clocks, int)
                and 0 <= offset <= self.width and clocks >= 0):
            raise ValueError(f"{name} must be (offset, clocks) with 0 <= offset <= {self.width} "
                             f"and clocks >= 0, not {lag!r}")
        return offset, clocks

    @property
    def w_stream(self):
        """The write port as a stream to connect a producer to (``payload`` of ``shape``)."""
        port = stream.Signature(self._shape).flip().create()
        port.payload, port.valid = self._as_shape(self.w_data), self.w_en
        port.ready = self.w_rdy
        return port

    @property
    def r_stream(self):
        """The read port as a stream to connect a consumer to (``payload`` of ``shape``)."""
        port = stream.Signature(self._shape).create()
        port.payload, port.valid, port.ready = self._as_shape(self.r_data), self.r_rdy, self.r_en
        return port

    def _as_shape(self, value):
        return self._shape(value) if isinstance(self._shape, ShapeCastable) else value

    def _groups(self):
        """The memory's column groups: ``(bits, write clocks, read clocks)`` of each, the
        groups cut at both lags' offsets."""
        (write_offset, write_clocks), (read_offset, read_clocks) = self._write_lag, self._lag
        edges = sorted({0, write_offset, read_offset, self.width})
        return [(slice(low + bits.start, low + bits.stop),
                 write_clocks if low >= write_offset else 0,
                 read_clocks if low >= read_offset else 0)
                for low, high in zip(edges, edges[1:]) for bits in column_slices(high - low)]

    def elaborate(self, platform):
        m = Module()
        entries = self.depth + 1 + self._lag[1]
        written = self.w_en & self.w_rdy
        taken = self.r_en & self.r_rdy
        groups = self._groups()
        produce_next, consume_next = queue_pointers(m, self, entries, written, taken)
        produce = _lagged_copies(m, produce_next, [late for _, late, _ in groups], "produce")
        consume = _lagged_copies(m, consume_next, [late for _, _, late in groups], "consume")
        for g, (bits, _, _) in enumerate(groups):
            m.submodules[f"storage{g}"] = storage = Memory(
                shape=bits.stop - bits.start, depth=entries, init=[])
            write, read = storage.write_port(), storage.read_port(domain="comb")
            m.d.comb += [write.en.eq(1), write.addr.eq(produce[g]),
                         write.data.eq(self.w_data[bits]),
                         read.addr.eq(consume[g]), self.r_data[bits].eq(read.data)]
        wait = max(0, *(write - read for _, write, read in groups))
        self._readable(m, written, taken, wait)
        return m

    def _readable(self, m, written, taken, wait):
        """``r_rdy``: entries written ``wait`` or more clocks before this one's edge and not
        taken, as of the next edge."""
        arrived, readable = written, self.level
        if wait:
            for k in range(wait):
                later = Signal(name=f"arriving{k}")
                m.d.sync += later.eq(arrived)
                arrived = later
            readable = Signal.like(self.level, name="readable")
            m.d.sync += readable.eq(readable + arrived - taken)
        grows, shrinks = arrived & ~taken, taken & ~arrived
        m.d.sync += self.r_rdy.eq(Mux(grows, 1, Mux(shrinks, readable != 1, readable != 0)))


def _lagged_copies(m, following, lags, name):
    """A copy of a queue's pointer for each column group, the pointer's next value
    ``following`` ``1 + lags[g]`` clocks late for group ``g``: one tree
    (:func:`register_tree`) for each lag, ``1 + lag`` levels deep, its first level reset."""
    copies = [None] * len(lags)
    for lag in sorted(set(lags)):
        members = [g for g, late in enumerate(lags) if late == lag]
        tree = register_tree(m, following, lag + 1, len(members), f"{name}_lag{lag}",
                             reset=True)
        for g, copy in zip(members, tree):
            copies[g] = copy
    return copies


def queue_pointers(m, queue, entries, written, taken):
    """The pointers of a queue of ``entries`` memory words (more than ``queue.depth``):
    ``produce``, moved on by ``written``, and ``consume``, by ``taken``, each a register that
    resets to 0; returns their next values ``(produce's, consume's)``, for the copies of each
    that address the memory's column groups (rule 2). Keeps ``queue.level``, a register, and
    ``queue.w_rdy``, a register's output, with them.

    The level's next value and ``w_rdy``'s are computed for each way the level can move,
    from the level register, and the handshakes choose among them last: they come at the end
    of the longest decisions of the design (dispatch's, the pool's)."""
    nexts = []
    for moves, name in ((written, "produce"), (taken, "consume")):
        following = Signal(range(entries), name=f"{name}_next")
        pointer = Signal(range(entries), name=f"{name}_pointer")
        m.d.sync += pointer.eq(following)
        m.d.comb += following.eq(Mux(moves, Mux(pointer == entries - 1, 0, pointer + 1),
                                     pointer))
        nexts.append(following)
    grows, shrinks = written & ~taken, taken & ~written
    level = queue.level
    # ``w_rdy`` is this register (writable from the first clock after a reset) through no
    # logic; the port itself starts at 0, as a stream's ``ready`` must.
    room = Signal(init=1, name="room")
    m.d.sync += [
        level.eq(Mux(grows, level + 1, Mux(shrinks, level - 1, level))),
        room.eq(Mux(grows, level != queue.depth - 1, Mux(shrinks, 1, level != queue.depth))),
    ]
    m.d.comb += queue.w_rdy.eq(room)
    return tuple(nexts)


def register_selected(m, out, values, index, enable=None):
    """Register ``values[index]`` into ``out`` (zero for an index that ``values``, a dict from
    index to value, has no entry for), every clock or only while ``enable``. Wide selects are
    built from these in steps, so that each mux sits next to the registers it selects from.

    An index of no bits (a choice of one) takes entry 0 without a switch: Yosys reads a switch
    on no bits as one that no case matches, so the generated Verilog registered 0 where
    Amaranth's simulator took the entry (``make formal`` found it at one region)."""
    with m.If(enable) if enable is not None else nullcontext():
        if not len(Value.cast(index)):
            m.d.sync += out.eq(values.get(0, 0))
            return
        with m.Switch(index):
            for k, value in values.items():
                with m.Case(k):
                    m.d.sync += out.eq(value)
            with m.Default():
                m.d.sync += out.eq(0)


def column_slices(width):
    """The bits of a ``width``-bit value in the column groups of rule 2, as slices:
    ``CONTROL_COPY_BITS`` each, the last one the rest."""
    return [slice(k, min(width, k + CONTROL_COPY_BITS)) for k in range(0, width, CONTROL_COPY_BITS)]


def register_copies(m, value, count, name, *, reset=False, init=0):
    """``count`` registers that each take ``value`` every clock, as a list (copy ``k`` is item
    ``k``), so that each group of the logic that reads ``value`` can read registers of its own,
    placed beside it.

    Each copy is a signal of its own (``<name>_<k>``), not a slice of one wide register: Yosys's
    ``wreduce`` folds the bits of one register whose inputs are the same signal into a single
    flip-flop, ``keep`` or not, and the copies would be gone from the netlist.

    The copies have no reset unless ``reset``: they follow ``value`` (and its reset) a clock
    later. A reset of their own costs a gate in front of them, which Yosys shares among all of
    them, so that every copy, however far, is reached through one LUT beside ``value``: only
    copies that must be right on the first clock after a reset (a queue's pointers, a write
    enable) take one, to ``init``."""
    shape = Value.cast(value).shape()
    copies = [Signal(shape, name=f"{name}_{k}", init=init, reset_less=not reset)
              for k in range(count)]
    m.d.sync += [copy.eq(value) for copy in copies]
    return copies


def register_tree(m, value, levels, count, name, *, reset=False):
    """``count`` copies of ``value`` through ``levels`` levels of registers, as a list: level
    ``i`` has about ``count ** ((i + 1) / levels)`` copies, each fed by one of the level before,
    so that no register drives more than a few others however far apart the last level's
    loads sit (pipeline rule 2, the tree of copies). Every copy is ``levels`` clocks behind
    ``value``; with ``levels`` = 0 the copies are ``value`` itself.

    With ``reset``, the first level resets to 0 (:func:`register_copies`) and the others
    follow it, so every copy is 0 from ``levels`` clocks into a reset on: a copy of a queue's
    pointer, rooted at its next value, is right from the first clock after a reset of that
    many clocks, and after a shorter one from the clock its value was set after the reset.
    Only the first level pays for the reset, beside ``value``."""
    level = [value]
    for depth in range(levels):
        size = count if depth == levels - 1 else max(1, round(count ** ((depth + 1) / levels)))
        level = [copy for k, source in enumerate(level)
                 for copy in register_copies(m, source, len(range(k, size, len(level))),
                                             f"{name}_{depth}_{k}", reset=reset and not depth)]
    return level if levels else [value] * count


def delayed(m, value, clocks, name):
    """``value`` ``clocks`` clocks late, through registers without an enable or a reset
    (``<name>_<k>``): the data of a write that a queue takes late (:class:`EagerFIFO`'s
    ``write_lag``), beside the column groups that write it."""
    for k in range(clocks):
        later = Signal.like(value, name=f"{name}_{k}", reset_less=True)
        m.d.sync += later.eq(value)
        value = later
    return value


def out_of_reset(m, name="in_reset"):
    """Whether the reset was low on the last clock edge: the inverse of a register that copies
    the reset a clock late, so it is low from a reset's second clock through the first clock
    after it. A component's comb ``Switch`` es sit under it (Icarus Verilog: see
    :mod:`hdl.slots`) rather than under the reset itself: it changes a clock after a reset
    starts and a clock after it ends, so every simulation runs those blocks, and the reset,
    which reaches every component, drives no logic (each component has a copy of its own,
    beside its logic). What a Switch does on a reset's first clock, the reset undoes at the
    edge; an output that must stay low through a reset is gated by the reset itself. The
    register has no reset; it is 0 at the start of a simulation."""
    in_reset = Signal(name=name, reset_less=True)
    m.d.sync += in_reset.eq(ResetSignal())
    return ~in_reset
