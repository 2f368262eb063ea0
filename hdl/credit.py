"""Credits instead of ``ready``: flow control that tolerates registers on the way back.

A stream's ``ready`` must reach its producer within the clock it is raised, so a stream that
crosses the die (a queue's room steering the pointers of a queue at the far side) is as slow as
the wire. Over a :class:`CreditSignature` the producer never waits for the receiver's answer:
it holds a count of the entries free in the receiver's queue, sends only while it has one, and
gets one back for each entry the receiver's taker frees. Both directions may then pass through
registers (:class:`CreditRelay`, ``stages`` on each way); only the queue's depth grows with the
loop (:func:`credit_loop`), never the logic between two registers.

A link is :class:`CreditSender` at the producer, relays if the distance needs them, and
:class:`CreditReceiver` at the consumer, joined by ``wiring.connect``.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .pipeline import EagerFIFO, PipelineRegister

__all__ = ["CreditSignature", "CreditSender", "CreditRelay", "CreditReceiver", "credit_loop"]


def credit_loop(forward, back=None, queue=1):
    """Clocks from a payload's send to the first clock its credit may be spent again: the
    send's edge and the ``forward`` registers on the way to the receiver, the receiver's queue
    (``queue`` clocks from a write to a read: 0 for a :class:`CreditReceiver` with ``bypass``,
    1 for :class:`hdl.pipeline.EagerFIFO`, 2 for Amaranth's ``SyncFIFOBuffered``), its credit
    register, the ``back`` registers on the way back (``forward`` unless told:
    :class:`CreditRelay` puts as many on each way) and the sender's ``ready`` register. A
    receiver of this many entries takes a payload on every clock
    (``verif/hdl/test_credit.py`` measures it)."""
    back = forward if back is None else back
    for name, value in (("forward", forward), ("back", back), ("queue", queue)):
        _check_count(name, value)
    return forward + queue + 1 + back + 1


def _check_count(name, value):
    """Refuse ``value`` unless it is a non-negative integer, naming it ``name``."""
    if not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, not {value!r}")


class CreditSignature(wiring.Signature):
    """A payload of ``shape`` from a producer, with ``valid`` on the clocks it is sent (no
    ``ready``: the producer sends only with a credit in hand), and ``credit``, from the
    consumer, high for one clock per entry of its queue that was freed.

    Members
    -------
    valid : Out(1)
    payload : Out(shape)
    credit : In(1)
    """

    def __init__(self, shape):
        self._shape = shape
        super().__init__({"valid": Out(1), "payload": Out(shape), "credit": In(1)})

    @property
    def shape(self):
        """The payload's shape."""
        return self._shape

    def __eq__(self, other):
        return type(other) is type(self) and other.shape == self.shape

    def __repr__(self):
        return f"CreditSignature({self._shape!r})"


class CreditSender(wiring.Component):
    """The producer's end of a credit link: ``sink`` is taken while a credit is held, and each
    payload taken leaves on ``source`` on the same clock.

    ``sink.ready`` is a register (the count's next value compared with zero), so that the
    producer's decisions start from a flip-flop and no credit's arrival reaches them through
    logic in the same clock.

    Parameters
    ----------
    shape : shape-like
        Payload shape.
    credits : int
        The receiver's depth: the credits held after reset.

    Members
    -------
    sink : In(stream.Signature(shape))
    source : Out(CreditSignature(shape))
    credits : Out(range(credits + 1))
        The credits held, as of the last clock edge.
    """

    def __init__(self, shape, *, credits):
        if not isinstance(credits, int) or credits < 1:
            raise ValueError(f"credits must be a positive integer (the receiver's depth), "
                             f"not {credits!r}")
        self._credits = credits
        super().__init__({"sink": In(stream.Signature(shape)),
                          "source": Out(CreditSignature(shape)),
                          "credits": Out(range(credits + 1), init=credits)})

    def elaborate(self, platform):
        m = Module()
        held = self.credits
        has_credit = Signal(init=1)
        sent = self.sink.valid & has_credit
        following = held - sent + self.source.credit
        m.d.sync += [held.eq(following), has_credit.eq(following != 0)]
        m.d.comb += [self.sink.ready.eq(has_credit),
                     self.source.valid.eq(sent), self.source.payload.eq(self.sink.payload)]
        return m


class CreditRelay(wiring.Component):
    """``stages`` registers on each way of a credit link, for a distance one clock does not
    cover: payloads arrive ``stages`` clocks later, credits return ``stages`` clocks later
    (:func:`credit_loop`). The payload's registers have no enable and no reset (pipeline
    rule 1).

    Members
    -------
    sink : In(CreditSignature(shape))
    source : Out(CreditSignature(shape))
    """

    def __init__(self, shape, *, stages):
        _check_count("stages", stages)
        self._stages = stages
        super().__init__({"sink": In(CreditSignature(shape)),
                          "source": Out(CreditSignature(shape))})

    def elaborate(self, platform):
        m = Module()
        shape = self.sink.signature.shape
        valid, payload, credit = self.sink.valid, self.sink.payload, self.source.credit
        for k in range(self._stages):
            m.submodules[f"stage{k}"] = stage = PipelineRegister(shape)
            m.d.comb += [stage.sink.valid.eq(valid), stage.sink.payload.eq(payload)]
            valid, payload = stage.source.valid, stage.source.payload
            back = Signal(name=f"credit_{k}")
            m.d.sync += back.eq(credit)
            credit = back
        m.d.comb += [self.source.valid.eq(valid), self.source.payload.eq(payload),
                     self.sink.credit.eq(credit)]
        return m


class CreditReceiver(wiring.Component):
    """The consumer's end of a credit link: a queue of ``depth`` entries (:class:`EagerFIFO`)
    written by every payload that arrives, read as ``source``; a credit goes back from a
    register on the clock after each entry is taken.

    The sender holds ``depth`` credits, so a payload always finds room; ``overrun`` is raised
    (and stays) if one did not, which only a sender given more credits than ``depth`` causes.

    With ``write_lag`` = ``k``, a payload comes ``k`` clocks after its ``valid`` and is
    written at copies of the queue's write pointer that come through a tree
    (:class:`EagerFIFO`'s ``write_lag``), so that no arrival reaches the queue's far columns
    within a clock; it is readable ``k`` clocks later, so the loop's ``queue`` is ``1 + k``
    (:func:`credit_loop`).

    With ``bypass``, a payload that arrives while the queue is empty and ``source`` takes one
    passes on the clock it arrives, not written to the queue: the loop's ``queue`` is 0. The
    taker's ``ready`` then reaches the queue's write pointer and level (not its memory, which
    is written on every clock).

    Members
    -------
    sink : In(CreditSignature(shape))
    source : Out(stream.Signature(shape))
    overrun : Out(1)
        A payload arrived at a full queue and was lost (a sender with too many credits).
    """

    def __init__(self, shape, *, depth, write_lag=0, bypass=False):
        _check_count("write_lag", write_lag)
        if bypass and write_lag:
            raise ValueError(f"a receiver with bypass takes each payload with its valid: "
                             f"write_lag must be 0, not {write_lag!r}")
        self._bypass = bypass
        self._queue = EagerFIFO(shape=shape, depth=depth,      # checks ``depth``
                                write_lag=(0, write_lag))
        super().__init__({"sink": In(CreditSignature(shape)),
                          "source": Out(stream.Signature(shape)),
                          "overrun": Out(1)})

    @property
    def depth(self):
        """Entries of the queue: the credits its sender starts with."""
        return self._queue.depth

    def elaborate(self, platform):
        m = Module()
        m.submodules.queue = queue = self._queue
        sink, source = self.sink, self.source
        stored = sink.valid
        if self._bypass:
            # ``r_rdy`` is a register, so the payload's select is one.
            stored = sink.valid & (queue.r_rdy | ~source.ready)
            m.d.comb += [source.valid.eq(queue.r_rdy | sink.valid),
                         source.payload.eq(Mux(queue.r_rdy, queue.r_data, sink.payload)),
                         queue.r_en.eq(source.ready)]
        else:
            wiring.connect(m, queue.r_stream, wiring.flipped(source))
        m.d.comb += [queue.w_en.eq(stored), queue.w_data.eq(sink.payload)]
        m.d.sync += sink.credit.eq(source.valid & source.ready)
        with m.If(stored & ~queue.w_rdy):
            m.d.sync += self.overrun.eq(1)
        return m
