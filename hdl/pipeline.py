"""Pipeline register of a fixed-latency stream pipeline."""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["PipelineRegister"]


class PipelineRegister(wiring.Component):
    """One register stage of a pipeline that never stalls: ``source`` is ``sink`` (valid and
    payload) one clock later.

    Both streams are ``always_ready``: there is no enable, so no net reaches every flip-flop of
    a wide pipeline. (A stall enable computed from the pipeline's output, which reached every
    flip-flop of the datapath, was its worst path in place-and-route.)

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
        m.d.sync += [
            self.source.valid.eq(self.sink.valid),
            self.source.payload.eq(self.sink.payload),
        ]
        return m
