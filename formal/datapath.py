"""Property harnesses of the aggregation datapath (:class:`hdl.datapath.AggregationDatapath`).

Each harness drives the datapath's request with a free value on every clock (``AnySeq``; valid
or not), assumes only that the request's state is one the datapath can produce (``docs/spec.md``
sections 3 and 4: ``c <= n`` in every G-Binary lane, ``|s| <= n`` in every G-Ternary lane,
``docs/formats.md``), keeps the request for the datapath's ``latency`` clocks, and asserts one
property of the response against the request it answers. The datapath has no backpressure
(both streams are ``always_ready``: a response must be taken on the clock it is valid), so the
backpressure the properties cover is none on this component; the controller's ports have it.
"""

from amaranth import Cat, Elaboratable, Module, Mux, ResetSignal, Value
from amaranth.asserts import AnySeq
from amaranth.hdl import Assert, Assume
from amaranth.lib import data

from hdl.datapath import AggregationDatapath, gbinary_lanes, gternary_lanes
from spec.params import (
    TERNARY_INVALID,
    TERNARY_MINUS,
    TERNARY_PLUS,
    TERNARY_ZERO,
    Mode,
    Reason,
    aggregates,
)

from .history import delayed

__all__ = ["USER_WIDTH", "DatapathHarness", "ContributionAddsItsLanes", "FullLineRejectsWhole",
           "InvalidCodesCountZero", "IdentityPassesThrough", "ReadBackIsMajorityOrGate",
           "ResponsesInOrderWithTags", "DATAPATH_PROPERTIES"]

#: Width of the ``user`` tag in the harnesses: enough to tell neighbouring requests apart.
USER_WIDTH = 4


def _bits(value, width):
    """The low ``width`` bits of ``value``, unsigned: lane values compared modulo their width."""
    return Value.cast(value)[:width]


def _ternary_value(code):
    """The value of a G-Ternary lane code: ``01`` +1, ``11`` -1, ``00`` and ``10`` 0."""
    return Mux(code == TERNARY_PLUS, 1, Mux(code == TERNARY_MINUS, -1, 0))


class DatapathHarness(Elaboratable):
    """The datapath under free requests; a subclass's :meth:`check` asserts the property.

    Parameters
    ----------
    params : DatapathParams
    """

    #: The design under test.
    design = AggregationDatapath

    def __init__(self, params):
        self.params = params

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.design(self.params, user_width=USER_WIDTH)
        request = dut.request
        m.d.comb += [request.valid.eq(AnySeq(1)),
                     request.payload.eq(AnySeq(len(request.payload.as_value()))),
                     Assume(~ResetSignal())]
        self._assume_reachable(m, request.payload)
        # The request the response of this clock answers: ``latency`` clocks old.
        past = delayed(m, Cat(request.valid, request.payload), dut.latency, "request")
        answered = data.Layout.cast(request.payload.shape())(past[1:])
        self.check(m, past[0], answered, dut.response.valid, dut.response.payload)
        return m

    def _assume_reachable(self, m, request):
        p = self.params
        n = request.state.n
        with m.If(request.mode == Mode.GBINARY):
            m.d.comb += [Assume(c <= n) for c in gbinary_lanes(p, request.state.lanes)]
        with m.If(request.mode == Mode.GTERNARY):
            m.d.comb += [Assume((s <= n) & (s >= -n))
                         for s in gternary_lanes(p, request.state.lanes)]

    def contribution_accepted(self, request):
        """Whether ``docs/spec.md`` accepts ``request`` as a contribution: an aggregating mode,
        every byte enable set, ``n`` below the capacity."""
        return (request.contribute & aggregates(request.mode) & request.byte_enable.all()
                & (request.state.n < self.params.capacity))

    def check(self, m, valid, request, response_valid, response):
        """Assert the property of ``response`` (valid on ``response_valid``), the answer to
        ``request`` (a request view, valid on ``valid``)."""
        raise NotImplementedError


class ContributionAddsItsLanes(DatapathHarness):
    """An accepted contribution adds exactly its lanes (G-Binary: its bit to each count;
    G-Ternary: its value to each sum) and increments ``n`` once (``docs/spec.md`` 3, 4)."""

    def check(self, m, valid, request, response_valid, response):
        p = self.params
        with m.If(valid & self.contribution_accepted(request)):
            m.d.comb += [Assert(response.status.accepted, "contribution not accepted"),
                         Assert(response.state.n == request.state.n + 1, "n not incremented")]
            with m.If(request.mode == Mode.GBINARY):
                old = gbinary_lanes(p, request.state.lanes)
                new = gbinary_lanes(p, response.state.lanes)
                m.d.comb += [Assert(_bits(new[k], p.counter_width)
                                    == _bits(old[k] + request.data[k], p.counter_width),
                                    f"G-Binary lane {k}") for k in range(p.gbinary_lanes)]
            with m.If(request.mode == Mode.GTERNARY):
                old = gternary_lanes(p, request.state.lanes)
                new = gternary_lanes(p, response.state.lanes)
                width = p.gternary_sum_width
                m.d.comb += [Assert(_bits(new[k], width) == _bits(
                    old[k] + _ternary_value(request.data[2 * k:2 * k + 2]), width),
                    f"G-Ternary lane {k}") for k in range(p.gternary_lanes)]


class FullLineRejectsWhole(DatapathHarness):
    """A contribution to a line at capacity is rejected whole and leaves the state exactly as
    it was; no request changes a state it does not add to, and ``n`` never wraps
    (``docs/spec.md`` 5)."""

    def check(self, m, valid, request, response_valid, response):
        p = self.params
        unchanged = response.state.as_value() == request.state.as_value()
        with m.If(valid & request.contribute & aggregates(request.mode)
                  & (request.state.n == p.capacity)):
            m.d.comb += [Assert(~response.status.accepted, "contribution at capacity accepted"),
                         Assert(unchanged, "state changed by a contribution at capacity")]
            with m.If(request.byte_enable.all()):
                m.d.comb += Assert(response.status.reason == Reason.CAPACITY, "reason")
        with m.If(valid & ~(request.contribute & response.status.accepted)):
            m.d.comb += Assert(unchanged, "state changed by a rejected request or a read")
        with m.If(valid):
            m.d.comb += Assert((response.state.n == request.state.n)
                               | (response.state.n == request.state.n + 1), "n wrapped")


class InvalidCodesCountZero(DatapathHarness):
    """An invalid G-Ternary lane code (``10``) adds 0 to its lane, and a response is flagged
    ``invalid`` exactly when it added a G-Ternary line holding one (``docs/spec.md`` 4)."""

    def check(self, m, valid, request, response_valid, response):
        p = self.params
        codes = [request.data[2 * k:2 * k + 2] for k in range(p.gternary_lanes)]
        added = self.contribution_accepted(request) & (request.mode == Mode.GTERNARY)
        with m.If(valid):
            m.d.comb += Assert(response.status.invalid
                               == (added & Cat(code == TERNARY_INVALID for code in codes).any()),
                               "invalid flag")
        old = gternary_lanes(p, request.state.lanes)
        new = gternary_lanes(p, response.state.lanes)
        for k, code in enumerate(codes):
            with m.If(valid & added & (code == TERNARY_INVALID)):
                m.d.comb += Assert(Value.cast(new[k]) == Value.cast(old[k]),
                                   f"invalid code changed lane {k}")


class IdentityPassesThrough(DatapathHarness):
    """An identity request is accepted, passes its data and byte enables unchanged, and leaves
    the state alone (``docs/spec.md`` 2)."""

    def check(self, m, valid, request, response_valid, response):
        with m.If(valid & (request.mode == Mode.IDENTITY)):
            m.d.comb += [
                Assert(response.line == request.data, "identity data changed"),
                Assert(response.byte_enable == request.byte_enable, "byte enables changed"),
                Assert(response.status.accepted, "identity request rejected"),
                Assert(response.state.as_value() == request.state.as_value(), "state changed"),
            ]


class ReadBackIsMajorityOrGate(DatapathHarness):
    """The read-back line is the function of ``docs/spec.md`` of the response's state: G-Binary
    lane bit 1 iff ``2c > n``; G-Ternary code ``01`` if ``s >= T``, ``11`` if ``s <= -T``, else
    ``00``; the reserved mode reads zero."""

    def check(self, m, valid, request, response_valid, response):
        p = self.params
        with m.If(valid & (request.mode == Mode.GBINARY)):
            counts = gbinary_lanes(p, response.state.lanes)
            m.d.comb += [Assert(response.line[k] == (2 * counts[k] > response.state.n),
                                f"majority of lane {k}") for k in range(p.gbinary_lanes)]
        with m.If(valid & (request.mode == Mode.GTERNARY)):
            sums = gternary_lanes(p, response.state.lanes)
            threshold = request.threshold
            for k in range(p.gternary_lanes):
                gated = Mux(sums[k] >= threshold, TERNARY_PLUS,
                            Mux(sums[k] <= -threshold, TERNARY_MINUS, TERNARY_ZERO))
                m.d.comb += Assert(response.line[2 * k:2 * k + 2] == gated, f"gate of lane {k}")
        with m.If(valid & ~aggregates(request.mode) & (request.mode != Mode.IDENTITY)):
            m.d.comb += Assert(response.line == 0, "reserved mode read back non-zero")


class ResponsesInOrderWithTags(DatapathHarness):
    """Every request gets exactly one response, ``latency`` clocks later, carrying its ``user``
    tag: none lost, none duplicated or made up, none reordered."""

    def check(self, m, valid, request, response_valid, response):
        m.d.comb += Assert(response_valid == valid, "response valid is not the request's")
        with m.If(valid):
            m.d.comb += Assert(response.user == request.user, "user tag changed")


#: Every datapath property, in report order.
DATAPATH_PROPERTIES = (ContributionAddsItsLanes, FullLineRejectsWhole, InvalidCodesCountZero,
                       IdentityPassesThrough, ReadBackIsMajorityOrGate, ResponsesInOrderWithTags)
