"""The low-bit aggregation datapath: one line against its accumulated state per clock.

Five combinational stages with up to five registers (``|``), chosen by ``latency``::

    latency 1:  Decode -> Addends -> Add -> Compare -> Select -> |
    latency 2:  Decode -> Addends -> Add -> | -> Compare -> Select -> |
    latency 3:  Decode -> Addends -> | -> Add -> | -> Compare -> Select -> |
    latency 4:  Decode -> Addends -> | -> Add -> | -> Compare -> | -> Select -> |
    latency 5:  Decode -> | -> Addends -> | -> Add -> | -> Compare -> | -> Select -> |

(the request enters on the left; the response leaves from the last register)

``Decode`` makes every per-line decision once (accept or reject, what to add, how to read back)
and writes it into ``control_copies`` identical copies, each serving ``CONTROL_COPY_BITS`` line
bits, so that after a register no control net spans the whole line. ``Addends`` works out what
each lane pair adds, from its line bits and its copy of the decisions, so that at latency 3 and
above ``Add`` is registers into carry chains (rules 2 and 3 of :mod:`hdl.pipeline`).
"""

from amaranth import Cat, Const, Module, Mux, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from spec.params import TERNARY_INVALID, DatapathParams, Mode, Reason, aggregates

from .arith import sum_bits
from .bram import PRIMITIVES
from .pipeline import PipelineRegister, register_copies

__all__ = ["state_layout", "planes_of_state", "n_line", "state_of_planes", "request_layout",
           "decision_inputs_layout", "decision_inputs",
           "work_layout", "addend_layout", "sum_layout", "response_layout", "verdict_layout",
           "gbinary_lanes", "gternary_lanes", "Decode", "Addends", "Add", "Compare", "Select",
           "AggregationDatapath"]



def state_layout(params):
    """Accumulated state of one line: the lanes (see :func:`gbinary_lanes`,
    :func:`gternary_lanes`) and the count ``n``."""
    return data.StructLayout({
        "lanes": unsigned(params.state_lanes_bits),
        "n": unsigned(params.counter_width),
    })


def planes_of_state(params, state, columns=None):
    """The memory image of a ``state`` (:func:`state_layout` view): ``state_lines`` lines of
    bit planes, plane ``b < W`` made of bit ``b`` of every G-Binary lane, then ``n`` alone in
    the last line (``docs/formats.md``, "In device memory"). Wiring only: bit ``k`` of every
    line belongs to line bit ``k``'s lanes, so a line-wide memory beat stays next to the lanes
    it feeds. With ``columns`` (a range of bit positions), only those bits of each line, line
    after line."""
    width = params.counter_width
    columns = range(params.line_bits) if columns is None else columns
    return Cat(*(state.lanes[k * width + b] for b in range(width) for k in columns),
               n_line(params, state.n, columns))


def n_line(params, n, columns=None):
    """The last line of a state's memory image (:func:`planes_of_state`): the count ``n`` in
    its first ``counter_width`` bits, zeros after them; with ``columns``, only those bits."""
    columns = range(params.line_bits) if columns is None else columns
    return Cat(*(n[k] if k < params.counter_width else Const(0, 1) for k in columns))


def state_of_planes(params, planes):
    """Inverse of :func:`planes_of_state`: the packed state of a memory image."""
    width, lines = params.counter_width, params.line_bits
    return Cat(*(planes[b * lines + k] for k in range(lines) for b in range(width)),
               planes[width * lines:][:width])


def gbinary_lanes(params, lanes):
    """``lanes`` read as G-Binary counts: ``line_bits`` x ``unsigned(W)``."""
    return data.ArrayLayout(unsigned(params.counter_width), params.gbinary_lanes)(lanes)


def gternary_lanes(params, lanes):
    """``lanes`` read as G-Ternary sums: ``line_bits / 2`` x ``signed(2W)``."""
    return data.ArrayLayout(signed(params.gternary_sum_width), params.gternary_lanes)(lanes)


def decision_status_layout():
    """The status between stages: the accept decision of :class:`Decode`."""
    return data.StructLayout({"accepted": 1, "reason": Reason})


def status_layout():
    """The response's status: the accept decision and whether an added G-Ternary line held an
    invalid lane code (found copy by copy in :class:`Decode`, combined a step per stage)."""
    return data.StructLayout({**{name: field.shape for name, field in decision_status_layout()},
                              "invalid": 1})


def control_layout(params):
    """Per-line decisions of :class:`Decode`, one copy per ``CONTROL_COPY_BITS`` line bits."""
    width = params.counter_width
    return data.StructLayout({
        "add": 1,                          # add the contribution (increments n)
        # add it as G-Binary bits / as G-Ternary values: each is ``add`` and the mode, decided
        # once here so that every adder input is one LUT of the line bits and these
        "add_gbinary": 1,
        "add_gternary": 1,
        "mode": Mode,                      # how to read back
        # What Compare adds to a lane so that one bit of the sum is the comparison (see
        # Compare): no logic before or after the carry chain.
        # G-Binary majority 2c > n  <=>  c > n // 2  <=>  carry of c + (2**W - 1 - n // 2)
        "majority_addend": unsigned(width),
        # G-Ternary gate T, on the sum s taken as W + 2 bits, two's complement:
        "negative_threshold": unsigned(width + 2),   # s < T    <=>  s - T < 0
        "threshold_less_one": unsigned(width + 2),   # s <= -T  <=>  s + T - 1 < 0
    })


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


def decision_inputs_layout(params):
    """What :class:`Decode` makes its decisions of, for one control copy
    (``AggregationDatapath``'s ``decision_inputs``): the request's fields, and the terms of
    its lanes' compares that follow from ``n`` and ``threshold`` by an adder
    (:func:`decision_inputs`)."""
    width = params.counter_width
    return data.StructLayout({
        "n": unsigned(width),                          # state.n
        "mode": Mode,
        "contribute": 1,
        "full_line": 1,                                # every byte enable is set
        # ``majority_addend`` (control_layout) if the request adds, and if it does not:
        "majority_added": unsigned(width),
        "majority_kept": unsigned(width),
        "negative_threshold": unsigned(width + 2),
        "threshold_less_one": unsigned(width + 2),
    })


def decision_inputs(params, *, n, mode, threshold, contribute, full_line):
    """The fields of :func:`decision_inputs_layout`, as values, of a request's ``state.n``,
    ``mode``, ``threshold``, ``contribute`` and whether every byte enable is set: the
    majority addend both if the request adds to ``n`` and if not (``2**W - 1 - n // 2`` of
    the new ``n``), and the G-Ternary gate's terms (``-T`` and ``T - 1``)."""
    width = params.counter_width
    return {"n": n, "mode": mode, "contribute": contribute, "full_line": full_line,
            "majority_added": _complement((n + 1) >> 1, width),
            "majority_kept": _complement(n >> 1, width),
            "negative_threshold": -threshold, "threshold_less_one": threshold - 1}


def work_layout(params, user_width):
    """Between stages: the line, the state (new ``n``; lanes updated by :class:`Add`), the
    replicated controls, the status and where the line holds invalid G-Ternary codes."""
    return data.StructLayout({
        "data": unsigned(params.line_bits),
        "byte_enable": unsigned(params.line_bytes),
        "state": state_layout(params),
        # control_copies x control_layout(params), kept flat so that simulators see one wide
        # field rather than a debug wire per copy and member.
        "control": unsigned(control_layout(params).size * params.control_copies),
        "status": decision_status_layout(),
        # per control copy: its line bits hold an invalid G-Ternary code (10), whatever the mode
        "invalid_lanes": unsigned(params.control_copies),
        "user": unsigned(user_width),
    })


#: Flags that one stage combines into one (an OR of up to four: one LUT4).
INVALID_FLAGS_PER_OR = 4


def _or_groups(flags):
    """``flags`` ORed in groups of :data:`INVALID_FLAGS_PER_OR`: one flag per group."""
    step = INVALID_FLAGS_PER_OR
    return Cat(flags[k:k + step].any() for k in range(0, len(flags), step))


def _or_groups_width(flags):
    """Flags left of ``flags`` flags by :func:`_or_groups`."""
    return -(-flags // INVALID_FLAGS_PER_OR)


def _complement(value, width):
    """``2**width - 1 - value``: the bits of ``value``, zero-extended to ``width``, inverted."""
    return ~Cat(value, Const(0, width))[:width]


def sum_layout(params, user_width):
    """Between :class:`Add` and :class:`Compare`: :func:`work_layout` with the new lanes, and
    the invalid-code flags of the control copies ORed in groups (``invalid_groups``)."""
    fields = {name: field.shape for name, field in work_layout(params, user_width)}
    del fields["invalid_lanes"], fields["user"]
    return data.StructLayout({**fields,
                              "invalid_groups": unsigned(_or_groups_width(params.control_copies)),
                              "user": unsigned(user_width)})


def addend_layout(params, user_width):
    """Between :class:`Addends` and :class:`Add`: :func:`work_layout` and what each lane pair
    adds (:func:`addend_bits_layout`, one after another)."""
    return data.StructLayout({**{name: field.shape for name, field
                                 in work_layout(params, user_width)},
                              "addends": unsigned(addend_bits_layout().size
                                                  * params.gternary_lanes)})


def addend_bits_layout():
    """What a lane pair adds to its ``2W`` bits, as the three distinct bit values of the addend:
    G-Binary adds bit ``2k`` at bit 0 and bit ``2k + 1`` at bit ``W`` (a count each), G-Ternary
    adds +1 (bit 0) or -1 (every bit)."""
    return data.StructLayout({
        "bit0": 1,          # bit 0
        "bit_w": 1,         # bit W
        "others": 1,        # bits 1 .. W - 1 and W + 1 .. 2W - 1
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
    """A combinational stream stage: ``source`` carries ``compute(sink)``; valid passes through
    (both streams are ``always_ready``).

    The ``user`` tag is assigned a second time, under a condition that changes nothing. Some
    output field assigned under a condition makes Amaranth drive the whole output payload from
    one ``always @*`` block instead of hundreds of part-select ``assign`` statements, which
    Icarus Verilog simulates about a hundred times faster at 512 bits. A wide field should
    still be assigned in one statement: assigned bit by bit, it became hundreds of one-line
    ``always @*`` blocks outside that block, and Icarus runs such a block only when something
    it reads changes, so bits whose inputs kept their initial value read X.
    """

    def __init__(self, params, user_width, in_layout, out_layout, members=None):
        self._params = params
        super().__init__({
            "sink": In(stream.Signature(in_layout(params, user_width), always_ready=True)),
            "source": Out(stream.Signature(out_layout(params, user_width), always_ready=True)),
            **(members or {})})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.source.valid.eq(self.sink.valid)
        self.compute(m, self.sink.payload, self.source.payload)
        with m.If(self.sink.valid):
            m.d.comb += self.source.payload.user.eq(self.sink.payload.user)
        return m

    @staticmethod
    def _carry(m, source, out, *names):
        """Pass the fields ``names`` of ``source`` to ``out`` unchanged."""
        m.d.comb += [getattr(out, name).eq(getattr(source, name)) for name in names]

    def _controls(self, work):
        """The control copies of ``work``, as a list of views."""
        p = self._params
        return list(data.ArrayLayout(control_layout(p), p.control_copies)(work.control))

    def _copy_bits(self, copy):
        """Line bits ``range`` served by control copy number ``copy``."""
        size = self._params.control_copy_bits
        return range(copy * size, (copy + 1) * size)


class Decode(_CombStage):
    """Decides accept/reject and writes the controls into every control copy (combinational).

    Rejection reasons, first match wins: ``MODE`` (code 3), ``PARTIAL`` (a contribution to an
    aggregation mode without every byte enable), ``CAPACITY`` (``n`` already at capacity). A
    rejected or read-only request leaves the state unchanged. Decode also finds, for each
    control copy's line bits, whether they hold an invalid G-Ternary code (``invalid_lanes``:
    from the data alone, beside the decisions); :class:`Add` and :class:`Compare` OR the flags
    in groups of :data:`INVALID_FLAGS_PER_OR`, and :class:`Select` makes ``status.invalid`` of
    the rest if the line was added as G-Ternary.

    With ``replicated_inputs``, the port ``inputs`` has the fields of
    :func:`decision_inputs_layout` once per control copy, and each copy's controls are decided
    from its own; the status is decided from the request's fields.
    """

    def __init__(self, params, user_width, *, replicated_inputs=False):
        self._replicated_inputs = replicated_inputs
        members = {"inputs": In(data.ArrayLayout(decision_inputs_layout(params),
                                                 params.control_copies))}
        super().__init__(params, user_width, request_layout, work_layout,
                         members if replicated_inputs else None)

    def compute(self, m, req, out):
        p = self._params
        request_inputs = decision_inputs(p, n=req.state.n, mode=req.mode,
                                         threshold=req.threshold, contribute=req.contribute,
                                         full_line=req.byte_enable.all())
        (bad_mode, partial, full), accepted, request_controls = self._decide(**request_inputs)
        with m.If(bad_mode):
            m.d.comb += out.status.reason.eq(Reason.MODE)
        with m.Elif(partial):
            m.d.comb += out.status.reason.eq(Reason.PARTIAL)
        with m.Elif(full):
            m.d.comb += out.status.reason.eq(Reason.CAPACITY)
        m.d.comb += out.status.accepted.eq(accepted)
        self._carry(m, req, out, "data", "byte_enable", "state", "user")
        m.d.comb += out.invalid_lanes.eq(Cat(
            Cat(req.data[k:k + 2] == TERNARY_INVALID for k in self._copy_bits(copy)[::2]).any()
            for copy in range(p.control_copies)))
        if self._replicated_inputs:
            names = [name for name, _ in decision_inputs_layout(p)]
            per_copy = [self._decide(**{name: copy[name] for name in names})[2]
                        for copy in self.inputs]
        else:
            per_copy = [request_controls] * p.control_copies
        for copy, controls in zip(self._controls(out), per_copy):
            m.d.comb += [getattr(copy, name).eq(value) for name, value in controls.items()]

    def _decide(self, *, n, mode, contribute, full_line, majority_added, majority_kept,
                negative_threshold, threshold_less_one):
        """The rejection reasons (mode, partial, capacity), whether the request is accepted, and
        the controls (:func:`control_layout`), of one set of inputs
        (:func:`decision_inputs`)."""
        p = self._params
        is_gternary = mode == Mode.GTERNARY
        aggregating = aggregates(mode)
        contribution = contribute & aggregating
        bad_mode = ~aggregating & (mode != Mode.IDENTITY)
        partial = contribution & ~full_line
        full = contribution & (n == p.capacity)
        accepted = ~(bad_mode | partial | full)
        adding = contribution & accepted
        controls = {
            "add": adding,
            "add_gbinary": adding & ~is_gternary,
            "add_gternary": adding & is_gternary,
            "mode": mode,
            # Both candidates are made of the old n alone, so no adder follows the decision.
            "majority_addend": Mux(adding, majority_added, majority_kept),
            "negative_threshold": negative_threshold,
            "threshold_less_one": threshold_less_one,
        }
        return (bad_mode, partial, full), accepted, controls


class Addends(_CombStage):
    """Works out what each lane pair adds (:func:`addend_bits_layout`) from its two line bits
    and its control copy (combinational): zero unless the contribution is added."""

    def __init__(self, params, user_width):
        super().__init__(params, user_width, work_layout, addend_layout)

    def compute(self, m, work, out):
        p = self._params
        self._carry(m, work, out, *(name for name, _ in work_layout(p, 1)))
        addends = []        # one statement for the whole field (see _CombStage)
        for copy, control in enumerate(self._controls(work)):
            for k in self._copy_bits(copy)[::2]:
                low, high = work.data[k], work.data[k + 1]
                minus = control.add_gternary & low & high      # G-Ternary 11: -1
                addends.append(Cat(control.add & low,                     # bit0
                                   (control.add_gbinary & high) | minus,  # bit_w
                                   minus))                                # others
        m.d.comb += out.addends.eq(Cat(addends))


class Add(_CombStage):
    """Adds an accepted contribution to the lanes (combinational).

    Both modes share one bank of ``line_bits / 2`` adders of ``2W`` bits, one per lane pair
    (line bits ``2k`` and ``2k + 1``): G-Binary adds ``bit[2k]`` to the low ``W`` bits (count of
    lane ``2k``) and ``bit[2k+1]`` to the high ``W`` bits (lane ``2k + 1``); G-Ternary adds the
    sign-extended lane value (``01`` +1, ``11`` -1, ``00`` and the invalid ``10`` 0) to the whole
    pair (the sum of lane ``k``); :class:`Addends` has worked out which. A count never carries
    into its neighbour, because a line at capacity takes no contribution. An accepted
    contribution also increments ``n``. The invalid-code flags leave ORed in groups
    (:func:`_or_groups`).
    """

    def __init__(self, params, user_width):
        super().__init__(params, user_width, addend_layout, sum_layout)

    def compute(self, m, work, out):
        p = self._params
        width = p.counter_width
        pairs = data.ArrayLayout(unsigned(2 * width), p.gternary_lanes)
        old, new = pairs(work.state.lanes), pairs(out.state.lanes)
        addends = data.ArrayLayout(addend_bits_layout(), p.gternary_lanes)(work.addends)
        # addend_layout and sum_layout both begin with work_layout's fields up to the flags:
        # carry them in one statement (see _CombStage), then replace the state.
        shared = work_layout(p, 1)["invalid_lanes"].offset
        m.d.comb += [out.as_value()[:shared].eq(work.as_value()[:shared]),
                     out.invalid_groups.eq(_or_groups(work.invalid_lanes))]
        self._carry(m, work, out, "user")
        with m.If(self._controls(work)[0].add):
            m.d.comb += out.state.n.eq(work.state.n + 1)
        for k, addend in enumerate(addends):
            others = addend.others.replicate(width - 1)
            m.d.comb += new[k].eq(old[k] + Cat(addend.bit0, others, addend.bit_w, others))


def verdict_layout(params, user_width):
    """Between :class:`Compare` and :class:`Select`: what the line's three candidate read-backs
    are made of (``data`` for identity, ``majority`` for G-Binary, the gate's ``bounds`` for
    G-Ternary), the controls that choose among them, the new state and the status."""
    return data.StructLayout({
        "data": unsigned(params.line_bits),
        "majority": unsigned(params.line_bits),
        # per G-Ternary lane k: bit 2k is s < T, bit 2k + 1 is s <= -T
        "bounds": unsigned(params.line_bits),
        "byte_enable": unsigned(params.line_bytes),
        "state": state_layout(params),
        "control": unsigned(control_layout(params).size * params.control_copies),
        "status": decision_status_layout(),
        # the invalid-code flags of the control copies, ORed in groups of groups
        "invalid_codes": unsigned(_or_groups_width(_or_groups_width(params.control_copies))),
        "user": unsigned(user_width),
    })


class Compare(_CombStage):
    """Reads the new state back both ways (combinational).

    G-Binary lane bit: 1 iff ``2c > n``. G-Ternary lane: the two bounds ``s < T`` and
    ``s <= -T`` (:class:`Select` makes the code of them); ``s`` is read as ``W + 2`` bits of its
    stored ``2W``, which hold any ``|s| <= capacity``. Each comparison is one bit of the sum of
    the lane and an addend of its control copy (``control_layout``): a carry chain between
    two registers, with no logic before or after it. With ``primitives`` ``"ecp5"`` the four
    comparisons of a pair of line bits (two G-Binary lanes, one G-Ternary lane) are one chain
    (:func:`hdl.arith.sum_bits`). The invalid-code flags are ORed a second time
    (:func:`_or_groups`). Which of the read-backs (or the request data) becomes the line is
    left to :class:`Select`.
    """

    def __init__(self, params, user_width, primitives=None):
        super().__init__(params, user_width, sum_layout, verdict_layout)
        self._primitives = primitives

    def compute(self, m, work, out):
        p = self._params
        width = p.counter_width
        counts = gbinary_lanes(p, work.state.lanes)
        sums = gternary_lanes(p, work.state.lanes)
        self._carry(m, work, out, "data", "byte_enable", "state", "control", "status", "user")
        m.d.comb += out.invalid_codes.eq(_or_groups(work.invalid_groups))
        for copy, control in enumerate(self._controls(work)):
            bits = self._copy_bits(copy)
            majority, bounds = [], []
            for k in bits[::2]:
                # s as W + 2 bits, sign-extended (2W < W + 2 only at W = 1); each bound is the
                # sign of a (W + 2)-bit sum. No operand is inverted: an inverter would be a LUT
                # in front of the carry chain.
                stored_sum = sums[k // 2]
                s = Cat(stored_sum, stored_sum[-1])[:width + 2]
                pair = sum_bits(m, [(counts[k], control.majority_addend, width),
                                    (counts[k + 1], control.majority_addend, width),
                                    (s, control.negative_threshold, width + 1),
                                    (s, control.threshold_less_one, width + 1)],
                                primitives=self._primitives, name=f"compare{k}")
                majority += pair[:2]
                bounds += pair[2:]
            m.d.comb += [out.majority[bits.start:bits.stop].eq(Cat(majority)),
                         out.bounds[bits.start:bits.stop].eq(Cat(bounds))]


class Select(_CombStage):
    """Chooses the read-back line by ``mode`` (combinational): identity the request data,
    G-Binary the majority bits, G-Ternary the gated codes (``01`` if ``s >= T``, else ``11`` if
    ``s <= -T``, else ``00``), mode code 3 all zero; ``status.invalid`` if the line was added
    as G-Ternary and any invalid-code flag is left."""

    def __init__(self, params, user_width):
        super().__init__(params, user_width, verdict_layout, response_layout)

    def compute(self, m, verdict, out):
        self._carry(m, verdict, out, "byte_enable", "state", "user")
        added_gternary = self._controls(verdict)[0].add_gternary
        m.d.comb += [out.status.accepted.eq(verdict.status.accepted),
                     out.status.reason.eq(verdict.status.reason),
                     out.status.invalid.eq(added_gternary & verdict.invalid_codes.any())]
        for copy, control in enumerate(self._controls(verdict)):
            bits = self._copy_bits(copy)
            line = out.line[bits.start:bits.stop]
            # A two-level mux on the mode code's bits (IDENTITY 00, GBINARY 01, GTERNARY 10,
            # reserved 11 reads zero): no decoded select nets in front of the output register.
            code = control.mode.as_value()
            ternary_or_reserved, odd_code = code[1], code[0]
            with m.If(ternary_or_reserved):
                with m.If(odd_code):
                    m.d.comb += line.eq(0)
                with m.Else():
                    m.d.comb += line.eq(self._gated(verdict.bounds[bits.start:bits.stop]))
            with m.Elif(odd_code):
                m.d.comb += line.eq(verdict.majority[bits.start:bits.stop])
            with m.Else():
                m.d.comb += line.eq(verdict.data[bits.start:bits.stop])

    @staticmethod
    def _gated(bounds):
        """The gated codes of bound pairs (``s < T``, ``s <= -T``): 01 if ``s >= T``, else 11 if
        ``s <= -T``, else 00."""
        codes = []
        for k in range(0, len(bounds), 2):
            below, minus = bounds[k], bounds[k + 1]
            codes.append(Cat(~below | minus, minus & below))
        return Cat(codes)


class AggregationDatapath(wiring.Component):
    """Accumulates low-bit contribution lines into per-line state; one request per clock.

    Each request carries a line, its byte enables, the line's current accumulated state, the
    path (``mode``), whether it is a contribution, the G-Ternary gate threshold ``T`` and an
    opaque ``user`` tag. The pipeline has a fixed latency and no backpressure (both streams are
    ``always_ready``): a request is taken on every clock its ``valid`` is high, and its response
    is valid for exactly one clock, ``latency`` clocks later; the consumer must take it then.
    The response carries the new state to write back, the read-back line, the byte enables,
    the status and the same ``user`` tag. Responses leave in request order.
    Behaviour per request is that of :func:`golden.datapath.run_datapath`, for states the
    datapath itself produced (``docs/formats.md``, "Accumulator state").

    Parameters
    ----------
    params : DatapathParams
        Line width, counter width ``W`` and latency.
    user_width : int
        Width of the ``user`` tag carried alongside each request.
    replicated_inputs : bool
        Add the ports ``decision_inputs`` and ``response_valid_copies``.
    primitives : None or "ecp5"
        How the read-back comparisons are made: ``"ecp5"``, CCU2C carry chains of four
        comparisons each (:class:`Compare`); ``None``, an adder each.

    Members
    -------
    request : In(stream.Signature(request_layout(params, user_width), always_ready=True))
    response : Out(stream.Signature(response_layout(params, user_width), always_ready=True))
    decision_inputs : In(data.ArrayLayout(decision_inputs_layout(params), control_copies))
        Only with ``replicated_inputs``: for each control copy, :func:`decision_inputs` of the
        request's ``state.n``, ``mode``, ``threshold``, ``contribute`` and whether every byte
        enable is set, with the request. Each copy's decisions are made of its own inputs
        (the status of the request's fields), so that an owner that keeps them in registers
        by each copy's line bits has no net from one register to every copy in front of the
        first pipeline register, and no adder between those registers and the lanes.
    response_valid_copies : Out(control_copies)
        Only with ``replicated_inputs``: ``response.valid``, once per control copy, each a
        flip-flop of its own, for an owner whose groups of columns each take the response on
        an enable of their own.
    """

    def __init__(self, params=DatapathParams(), *, user_width=16, replicated_inputs=False,
                 primitives=None):
        if not isinstance(params, DatapathParams):
            raise TypeError(f"params must be a DatapathParams, not {params!r}")
        if not isinstance(user_width, int) or user_width < 1:
            raise ValueError(f"user_width must be a positive integer, not {user_width!r}")
        if not isinstance(replicated_inputs, bool):
            raise TypeError(f"replicated_inputs must be a bool, not {replicated_inputs!r}")
        if primitives not in PRIMITIVES:
            raise ValueError(f"primitives must be one of {PRIMITIVES}, not {primitives!r}")
        self._primitives = primitives
        self._params = params
        self._user_width = user_width
        self._replicated_inputs = replicated_inputs
        members = {
            "request": In(stream.Signature(request_layout(params, user_width),
                                           always_ready=True)),
            "response": Out(stream.Signature(response_layout(params, user_width),
                                             always_ready=True)),
        }
        if replicated_inputs:
            members["decision_inputs"] = In(data.ArrayLayout(decision_inputs_layout(params),
                                                             params.control_copies))
            members["response_valid_copies"] = Out(params.control_copies)
        super().__init__(members)

    @property
    def params(self):
        return self._params

    @property
    def user_width(self):
        return self._user_width

    @property
    def latency(self):
        """Cycles from a request to its response."""
        return self._params.latency

    @property
    def initiation_interval(self):
        """Cycles between accepted requests at full rate."""
        return 1

    def elaborate(self, platform):
        m = Module()
        p, u = self._params, self._user_width
        decode = Decode(p, u, replicated_inputs=self._replicated_inputs)
        if self._replicated_inputs:
            m.d.comb += decode.inputs.eq(self.decision_inputs)
        stages = [("decode", decode), ("addends", Addends(p, u)), ("add", Add(p, u)),
                  ("compare", Compare(p, u, self._primitives)), ("select", Select(p, u))]
        registered = {"decode": p.latency >= 5, "addends": p.latency >= 3,
                      "add": p.latency >= 2, "compare": p.latency >= 4, "select": True}

        upstream = wiring.flipped(self.request)
        for name, stage in stages:
            m.submodules[name] = stage
            wiring.connect(m, upstream, stage.sink)
            upstream = stage.source
            if registered[name]:
                m.submodules[f"{name}_reg"] = register = PipelineRegister(
                    stage.source.payload.shape())
                wiring.connect(m, upstream, register.sink)
                upstream = register.source
        wiring.connect(m, upstream, wiring.flipped(self.response))
        if self._replicated_inputs:
            # The last stage is always registered: its register's input is the response's
            # valid a clock early.
            m.d.comb += self.response_valid_copies.eq(Cat(register_copies(
                m, stage.source.valid, p.control_copies, "response_valid_copy")))
        return m
