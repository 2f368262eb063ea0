"""Pipeline register for valid/ready streams that stall as a whole."""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["PipelineRegister"]


class PipelineRegister(wiring.Component):
    """One register stage of a pipeline that advances or stalls as a whole.

    On each clock with ``advance`` high the register takes ``sink`` (valid or not); with
    ``advance`` low it holds. ``sink.ready`` is ``advance``. Every register of a pipeline gets
    the same ``advance``, computed once from the pipeline's output (``~valid | ready``), so the
    enable is one signal rather than a combinational ready chain through all stages: that keeps
    a wide pipeline's enable path short. ``source.ready`` is not used; the owner of ``advance``
    accounts for it.

    Parameters
    ----------
    shape : shape-like
        Payload shape.

    Members
    -------
    sink : In(stream.Signature(shape))
    source : Out(stream.Signature(shape))
    advance : In(1)
    """

    def __init__(self, shape):
        super().__init__({"sink": In(stream.Signature(shape)),
                          "source": Out(stream.Signature(shape)),
                          "advance": In(1)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.sink.ready.eq(self.advance)
        with m.If(self.advance):
            m.d.sync += [
                self.source.valid.eq(self.sink.valid),
                self.source.payload.eq(self.sink.payload),
            ]
        return m
