"""Pipeline register for valid/ready streams."""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["PipelineRegister"]


class PipelineRegister(wiring.Component):
    """One register stage of a valid/ready stream: latency 1, initiation interval 1.

    It takes a new payload whenever it is empty or its content leaves in the same cycle, so a
    chain of these accepts one transfer per clock and closes bubbles under backpressure. The
    ready path is combinational through the chain.

    Parameters
    ----------
    shape : shape-like
        Payload shape.

    Members
    -------
    sink : In(stream.Signature(shape))
    source : Out(stream.Signature(shape))
    """

    def __init__(self, shape):
        super().__init__({"sink": In(stream.Signature(shape)),
                          "source": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.sink.ready.eq(~self.source.valid | self.source.ready)
        with m.If(self.sink.ready):
            m.d.sync += [
                self.source.valid.eq(self.sink.valid),
                self.source.payload.eq(self.sink.payload),
            ]
        return m
