"""The DevLoad meter: how loaded the device reports itself in every response."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from spec.cxl import DevLoad

__all__ = ["DevLoadMeter"]


class DevLoadMeter(wiring.Component):
    """DevLoad follows the requests the device holds: taken from the host and not yet
    answered (a MemSpecRd, which gets no answer, until dispatch drops it), a clock late: the
    handshakes are registered before the count adds them, so that no channel's ready reaches
    the count through an adder.

    Parameters
    ----------
    params : ControllerParams
        ``devload_limits``: the held requests up to which DevLoad reads Light, Optimal and
        Moderate; above the last it reads Severe.

    Members
    -------
    taken : In(range(3))
        Requests the host channels (M2S Req, M2S RwD) hand over on this clock.
    answered : In(range(3))
        Responses the device channels (S2M NDR, S2M DRS) hand over on this clock.
    ignored : In(1)
        Dispatch drops a request that gets no answer on this clock.
    dev_load : Out(DevLoad)
    """

    #: Width of the count of held requests.
    COUNT_BITS = 8

    def __init__(self, params):
        self._limits = params.devload_limits
        super().__init__({"taken": In(range(3)), "answered": In(range(3)), "ignored": In(1),
                          "dev_load": Out(DevLoad)})

    def elaborate(self, platform):
        m = Module()
        light, optimal, moderate = self._limits
        held = Signal(self.COUNT_BITS)
        taken, answered = Signal.like(self.taken), Signal.like(self.answered)
        was_ignored = Signal()
        m.d.sync += [taken.eq(self.taken), answered.eq(self.answered),
                     was_ignored.eq(self.ignored),
                     held.eq(held + taken - answered - was_ignored)]
        m.d.comb += self.dev_load.eq(Mux(held <= light, DevLoad.LIGHT,
                                         Mux(held <= optimal, DevLoad.OPTIMAL,
                                             Mux(held <= moderate, DevLoad.MODERATE,
                                                 DevLoad.SEVERE))))
        return m
