"""The low-bit aggregation datapath: one line against its accumulated state per clock.

Pipeline (``latency`` = number of registers, each marked ``|``)::

    latency 1:  request -> Accumulate -> ReadBack -> | -> response
    latency 2:  request -> Accumulate -> | -> ReadBack -> | -> response
    latency 3:  request -> | -> Accumulate -> | -> ReadBack -> | -> response
"""

from amaranth import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .params import DatapathParams, Mode, Reason
from .pipeline import PipelineRegister

__all__ = ["state_layout", "request_layout", "accumulated_layout", "response_layout",
           "Accumulate", "ReadBack", "AggregationDatapath"]

# G-Ternary lane codes (contract section 4): bit 0 = non-zero gate, bit 1 = sign.
_TERNARY_PLUS, _TERNARY_INVALID, _TERNARY_MINUS = 0b01, 0b10, 0b11


def state_layout(params):
    """Accumulated state of one line: per-lane values (read per mode) and the count ``n``."""
    return data.StructLayout({
        "lanes": data.UnionLayout({
            "gbinary": data.ArrayLayout(unsigned(params.counter_width), params.gbinary_lanes),
            "gternary": data.ArrayLayout(signed(params.gternary_sum_width),
                                         params.gternary_lanes),
        }),
        "n": unsigned(params.counter_width),
    })


def status_layout():
    return data.StructLayout({"accepted": 1, "reason": Reason, "invalid": 1})


def request_layout(params, user_width):
    """One request. ``contribute`` = 1 adds ``data`` to ``state``; 0 only reads it back."""
    return data.StructLayout({
        "data": unsigned(params.line_bits),
        "byte_enable": unsigned(params.line_bytes),
        "state": state_layout(params),
        "threshold": unsigned(params.counter_width),
        "mode": Mode,
        "contribute": 1,
        "user": unsigned(user_width),
    })


def accumulated_layout(params, user_width):
    """Between the two stages: the new state and status, before the read-back compare."""
    return data.StructLayout({
        "data": unsigned(params.line_bits),
        "byte_enable": unsigned(params.line_bytes),
        "state": state_layout(params),
        "threshold": unsigned(params.counter_width),
        "mode": Mode,
        "status": status_layout(),
        "user": unsigned(user_width),
    })


def response_layout(params, user_width):
    """One response: the read-back ``line`` of the new ``state``, and the status."""
    return data.StructLayout({
        "line": unsigned(params.line_bits),
        "byte_enable": unsigned(params.line_bytes),
        "state": state_layout(params),
        "status": status_layout(),
        "user": unsigned(user_width),
    })


class _CombStage(wiring.Component):
    """A combinational stream stage: ``source`` carries ``f(sink)``; valid and ready pass
    through."""

    def __init__(self, params, user_width, in_layout, out_layout):
        self._params = params
        super().__init__({"sink": In(stream.Signature(in_layout(params, user_width))),
                          "source": Out(stream.Signature(out_layout(params, user_width)))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.source.valid.eq(self.sink.valid),
                     self.sink.ready.eq(self.source.ready)]
        self.compute(m, self.sink.payload, self.source.payload)
        return m


class Accumulate(_CombStage):
    """Decides accept/reject and adds a contribution to the state (combinational).

    Rejection reasons, first match wins: ``MODE`` (code 3), ``PARTIAL`` (a contribution to an
    aggregation mode without every byte enable), ``CAPACITY`` (``n`` already at capacity). A
    rejected or read-only request leaves the state unchanged. An accepted G-Ternary contribution
    with an invalid lane code adds 0 in that lane and sets ``status.invalid``.
    """

    def __init__(self, params, user_width):
        super().__init__(params, user_width, request_layout, accumulated_layout)

    def compute(self, m, req, out):
        p = self._params
        is_gbinary = req.mode == Mode.GBINARY
        is_gternary = req.mode == Mode.GTERNARY
        aggregating = is_gbinary | is_gternary
        contribution = req.contribute & aggregating

        reason = Signal(Reason)
        with m.If(~aggregating & (req.mode != Mode.IDENTITY)):
            m.d.comb += reason.eq(Reason.MODE)
        with m.Elif(contribution & ~req.byte_enable.all()):
            m.d.comb += reason.eq(Reason.PARTIAL)
        with m.Elif(contribution & (req.state.n == p.capacity)):
            m.d.comb += reason.eq(Reason.CAPACITY)
        accepted = reason == Reason.NONE
        adding = contribution & accepted

        codes = [req.data[2 * k:2 * k + 2] for k in range(p.gternary_lanes)]
        m.d.comb += [
            out.data.eq(req.data),
            out.byte_enable.eq(req.byte_enable),
            out.threshold.eq(req.threshold),
            out.mode.eq(req.mode),
            out.user.eq(req.user),
            out.status.reason.eq(reason),
            out.status.accepted.eq(accepted),
            out.status.invalid.eq(adding & is_gternary
                                  & Cat(code == _TERNARY_INVALID for code in codes).any()),
            out.state.eq(req.state),
        ]
        with m.If(adding):
            m.d.comb += out.state.n.eq(req.state.n + 1)
        with m.If(adding & is_gbinary):
            for k, count in enumerate(req.state.lanes.gbinary):
                m.d.comb += out.state.lanes.gbinary[k].eq(count + req.data[k])
        with m.If(adding & is_gternary):
            for k, total in enumerate(req.state.lanes.gternary):
                step = Mux(codes[k] == _TERNARY_INVALID, 0, codes[k].as_signed())
                m.d.comb += out.state.lanes.gternary[k].eq(total + step)


class ReadBack(_CombStage):
    """Computes the read-back line of the new state (combinational).

    G-Binary lane bit: 1 iff ``2c > n``, computed as ``c > n // 2``. G-Ternary lane code: ``01``
    if ``s >= T``, else ``11`` if ``s <= -T``, else ``00``. Identity: the request data. Mode
    code 3: all zero.
    """

    def __init__(self, params, user_width):
        super().__init__(params, user_width, accumulated_layout, response_layout)

    def compute(self, m, acc, out):
        state = acc.state
        half_n = state.n >> 1
        majority = Cat(count > half_n for count in state.lanes.gbinary)
        threshold = acc.threshold
        gated = Cat(Mux(total >= threshold, _TERNARY_PLUS,
                        Mux(total <= -threshold, _TERNARY_MINUS, 0)).as_unsigned()[:2]
                    for total in state.lanes.gternary)
        with m.Switch(acc.mode):
            with m.Case(Mode.IDENTITY):
                m.d.comb += out.line.eq(acc.data)
            with m.Case(Mode.GBINARY):
                m.d.comb += out.line.eq(majority)
            with m.Case(Mode.GTERNARY):
                m.d.comb += out.line.eq(gated)
            with m.Default():            # the reserved mode code reads back all zero
                m.d.comb += out.line.eq(0)
        m.d.comb += [
            out.byte_enable.eq(acc.byte_enable),
            out.state.eq(state),
            out.status.eq(acc.status),
            out.user.eq(acc.user),
        ]


class AggregationDatapath(wiring.Component):
    """Accumulates low-bit contribution lines into per-line state; one request per clock.

    Each request carries a line, its byte enables, the line's current accumulated state, the
    path (``mode``), whether it is a contribution, the G-Ternary gate threshold ``T`` and an
    opaque ``user`` tag. The response, ``latency`` cycles after the request is accepted when
    ``response.ready`` stays high, carries the new state to write back, the read-back line, the
    byte enables, the status and the same ``user`` tag. Responses leave in request order.
    Behaviour per request is that of :func:`golden.datapath.run_datapath`.

    Parameters
    ----------
    params : DatapathParams
        Line width, counter width ``W`` and latency.
    user_width : int
        Width of the ``user`` tag carried alongside each request.

    Members
    -------
    request : In(stream.Signature(request_layout(params, user_width)))
    response : Out(stream.Signature(response_layout(params, user_width)))
    """

    def __init__(self, params=DatapathParams(), *, user_width=16):
        if not isinstance(params, DatapathParams):
            raise TypeError(f"params must be a DatapathParams, not {params!r}")
        if not isinstance(user_width, int) or user_width < 1:
            raise ValueError(f"user_width must be a positive integer, not {user_width!r}")
        self._params = params
        self._user_width = user_width
        super().__init__({
            "request": In(stream.Signature(request_layout(params, user_width))),
            "response": Out(stream.Signature(response_layout(params, user_width))),
        })

    @property
    def params(self):
        return self._params

    @property
    def user_width(self):
        return self._user_width

    @property
    def latency(self):
        """Cycles from an accepted request to its response, with no backpressure."""
        return self._params.latency

    @property
    def initiation_interval(self):
        """Cycles between accepted requests at full rate."""
        return 1

    def elaborate(self, platform):
        m = Module()
        p, u = self._params, self._user_width
        m.submodules.accumulate = accumulate = Accumulate(p, u)
        m.submodules.read_back = read_back = ReadBack(p, u)
        m.submodules.out_reg = out_reg = PipelineRegister(response_layout(p, u))

        if p.latency == 3:
            m.submodules.in_reg = in_reg = PipelineRegister(request_layout(p, u))
            wiring.connect(m, wiring.flipped(self.request), in_reg.sink)
            wiring.connect(m, in_reg.source, accumulate.sink)
        else:
            wiring.connect(m, wiring.flipped(self.request), accumulate.sink)

        if p.latency >= 2:
            m.submodules.mid_reg = mid_reg = PipelineRegister(accumulated_layout(p, u))
            wiring.connect(m, accumulate.source, mid_reg.sink)
            wiring.connect(m, mid_reg.source, read_back.sink)
        else:
            wiring.connect(m, accumulate.source, read_back.sink)

        wiring.connect(m, read_back.source, out_reg.sink)
        wiring.connect(m, out_reg.source, wiring.flipped(self.response))
        return m
