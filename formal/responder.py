"""Property harness of the controller's responder (:class:`hdl.responder.Responder`) at its
ports: completions owed to the host in, S2M NDR and DRS responses out.

Every input is free on every clock (``AnySeq``): completions, the four sources' answers, and
the ``ready`` of both S2M channels, so any backpressure and any order of answers is covered.
Reset is held low after the initial state.
"""

from amaranth import Elaboratable, Module, ResetSignal, Signal
from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assert, Assume

from hdl.responder import Responder, completion_layout

__all__ = ["SEQUENCE_BITS", "ResponsesOncePerCompletionInOrder"]

#: Width of the harness's counts of completions and responses (a check deeper than
#: ``2**SEQUENCE_BITS - 1`` clocks would need more).
SEQUENCE_BITS = 8


class ResponsesOncePerCompletionInOrder(Elaboratable):
    """Responses leave one at a time, in the order the completions were queued, each on the
    channel its completion names (DRS for data, else NDR) with its tag and LD-ID, and never
    more responses than completions: none duplicated, reordered or made up, under any
    backpressure. (A response still owed at the end of a trace is not a failure: that it is
    sent at all depends on its source answering.)"""

    #: The design under test.
    design = Responder

    def __init__(self, params):
        self.params = params

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.design(self.params)
        inputs = [dut.completion.valid, dut.completion.payload.as_value(),
                  dut.memory_data.valid, dut.memory_data.payload.as_value(), dut.memory_written,
                  dut.pool_result.valid, dut.pool_result.payload.as_value(),
                  dut.window_result.valid, dut.window_result.payload, dut.dev_load.as_value(),
                  dut.s2m_ndr.ready, dut.s2m_drs.ready]
        m.d.comb += [port.eq(AnySeq(len(port))) for port in inputs]
        m.d.comb += Assume(~ResetSignal())

        queued = dut.completion.valid & dut.completion.ready
        ndr = dut.s2m_ndr.valid & dut.s2m_ndr.ready
        drs = dut.s2m_drs.valid & dut.s2m_drs.ready
        taken, answered = (Signal(SEQUENCE_BITS, name=name) for name in ("taken", "answered"))
        m.d.sync += [taken.eq(taken + queued), answered.eq(answered + (ndr | drs))]
        m.d.comb += Assume(taken != (1 << SEQUENCE_BITS) - 1)

        # One completion, chosen by the solver: what its response must carry.
        watched = AnyConst(SEQUENCE_BITS)
        expected = Signal(completion_layout())
        with m.If(queued & (taken == watched)):
            m.d.sync += expected.eq(dut.completion.payload)

        m.d.comb += Assert(~(ndr & drs), "an NDR and a DRS in one clock")
        with m.If(ndr | drs):
            m.d.comb += Assert(answered < taken, "a response with no completion owed")
            with m.If(answered == watched):
                payload = [(dut.s2m_drs if channel else dut.s2m_ndr).payload
                           for channel in (0, 1)]
                m.d.comb += Assert(drs == expected.data, "response on the wrong channel")
                with m.If(drs):
                    m.d.comb += [Assert(payload[1].tag == expected.tag, "DRS tag"),
                                 Assert(payload[1].ld_id == expected.ld_id, "DRS LD-ID")]
                with m.Else():
                    m.d.comb += [Assert(payload[0].tag == expected.tag, "NDR tag"),
                                 Assert(payload[0].ld_id == expected.ld_id, "NDR LD-ID")]
        return m
