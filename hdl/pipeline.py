"""Pipeline registers for valid/ready streams that stall as a whole."""

from amaranth import Cat, Module, Shape, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SLICE_BITS", "PipelineRegister", "advance_copies"]

#: Most flip-flops one copy of a pipeline's ``advance`` enables (see ``PipelineRegister``).
SLICE_BITS = 256


class PipelineRegister(wiring.Component):
    """One register stage of a pipeline that advances or stalls as a whole.

    On each clock with ``advance`` high the register takes ``sink`` (valid or not); with
    ``advance`` low it holds. ``sink.ready`` is ``advance``. Every register of a pipeline
    advances on the same decision, computed from the pipeline's output (``~valid | ready``), so
    the enable is one decision rather than a combinational ready chain through all stages.

    A wide register would make that decision one net with thousands of flip-flop enables, and
    such a net's routing alone takes most of a clock. So ``advance`` has one bit per slice of
    at most ``SLICE_BITS`` payload bits (the valid bit goes with the first slice), every bit a
    copy of the same decision (:func:`advance_copies`), and each bit enables its slice only.
    ``source.ready`` is not used; the owner of ``advance`` accounts for it.

    Parameters
    ----------
    shape : shape-like
        Payload shape.

    Members
    -------
    sink : In(stream.Signature(shape))
    source : Out(stream.Signature(shape))
    advance : In(copies)
        ``copies`` is ``ceil((payload bits + 1) / SLICE_BITS)``; all bits must be equal.
    """

    def __init__(self, shape):
        self._bits = Shape.cast(shape).width
        super().__init__({"sink": In(stream.Signature(shape)),
                          "source": Out(stream.Signature(shape)),
                          "advance": In(-(-(self._bits + 1) // SLICE_BITS))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.sink.ready.eq(self.advance[0])
        sink = Cat(self.sink.valid, self.sink.payload)
        source = Cat(self.source.valid, self.source.payload)
        for k in range(len(self.advance)):
            part = slice(k * SLICE_BITS, min((k + 1) * SLICE_BITS, self._bits + 1))
            with m.If(self.advance[k]):
                m.d.sync += source[part].eq(sink[part])
        return m


def advance_copies(m, count, output_valid_next, ready):
    """``count`` copies of the decision ``~valid | ready`` of a pipeline's output register.

    Each copy comes from a flip-flop of its own that follows the output register's valid bit:
    it takes ``output_valid_next`` (the valid entering the output register) whenever its own
    copy of the decision is high, exactly as the register's valid does, so all copies are equal
    from reset on, while no flip-flop drives more than one copy.
    """
    copies = []
    for k in range(count):
        valid = Signal(name=f"output_valid_copy_{k}")
        advance = Signal(name=f"advance_copy_{k}")
        m.d.comb += advance.eq(~valid | ready)
        with m.If(advance):
            m.d.sync += valid.eq(output_valid_next)
        copies.append(advance)
    return Cat(copies)
