"""Pipeline register of a fixed-latency stream pipeline, and a registered select."""

from contextlib import nullcontext

from amaranth import Module, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["PipelineRegister", "register_selected", "register_copies"]


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


def register_selected(m, out, values, index, enable=None):
    """Register ``values[index]`` into ``out`` (zero for an index that ``values``, a dict from
    index to value, has no entry for), every clock or only while ``enable``. Wide selects are
    built from these in steps, so that each mux sits next to the registers it selects from."""
    with m.If(enable) if enable is not None else nullcontext():
        with m.Switch(index):
            for k, value in values.items():
                with m.Case(k):
                    m.d.sync += out.eq(value)
            with m.Default():
                m.d.sync += out.eq(0)


def register_copies(m, value, count, name):
    """``count`` registers that each take ``value`` every clock, as a list (copy ``k`` is item
    ``k``), so that each group of the logic that reads ``value`` can read registers of its own,
    placed beside it.

    Each copy is a signal of its own (``<name>_<k>``), not a slice of one wide register: Yosys's
    ``wreduce`` folds the bits of one register whose inputs are the same signal into a single
    flip-flop, ``keep`` or not, and the copies would be gone from the netlist.

    The copies have no reset: they follow ``value`` (and its reset) a clock later. A reset of
    their own costs a gate in front of them, which Yosys shares among all of them, so that
    every copy, however far, was reached through one LUT beside ``value``."""
    shape = Value.cast(value).shape()
    copies = [Signal(shape, name=f"{name}_{k}", reset_less=True) for k in range(count)]
    m.d.sync += [copy.eq(value) for copy in copies]
    return copies
