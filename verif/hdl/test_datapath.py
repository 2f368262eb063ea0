"""amaranth.sim unit tests of the datapath and its pipeline register, against the golden model."""

import itertools

import numpy as np
import pytest
from amaranth import Module, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from bench.payload import decode_responses, request_payloads
from bench.scoreboard import compare_responses
from bench.sim import simulate
from bench.vectors import concat_requests, directed_requests, random_requests
from golden.datapath import run_datapath
from hdl.datapath import (
    AggregationDatapath,
    Decode,
    control_layout,
    decision_inputs,
    planes_of_state,
    request_layout,
    state_layout,
    state_of_planes,
)
from hdl.pipeline import PipelineRegister
from spec.formats import lines_to_ints, pack_state, state_to_memory
from spec.params import LATENCY_CHOICES, DatapathParams, Mode

SEED = 7


def simulate_stream(dut, sink, source, payloads, *, idle, timeout=None, watch=None):
    """Push ``payloads`` into the always-ready stream ``sink``, one per clock except on cycles
    from ``idle``; collect what ``source`` is valid with. Returns the received payload ints in
    order. ``watch``, if given, is a process run beside them."""
    received = []
    timeout = timeout or 20 * (len(payloads) + 10)

    async def producer(ctx):
        for word in payloads:
            while next(idle):
                await ctx.tick()
            ctx.set(sink.valid, 1)
            ctx.set(Value.cast(sink.payload), word)
            await ctx.tick()
            ctx.set(sink.valid, 0)

    async def consumer(ctx):
        for _ in range(timeout):
            _, _, valid, payload = await ctx.tick().sample(source.valid,
                                                           Value.cast(source.payload))
            if valid:
                received.append(payload)
                if len(received) == len(payloads):
                    return
        raise AssertionError(f"timeout: {len(received)} of {len(payloads)} responses")

    simulate(dut, producer, consumer, processes=[watch] if watch is not None else [])
    return received


def check_datapath(params, req, *, idle, seed, replicated_inputs=False):
    """Run ``req`` through the datapath and compare with the golden model. With
    ``replicated_inputs``, every copy of ``decision_inputs`` is the request's own fields, as an
    owner's registers would hold them, and every copy of ``response_valid_copies`` must equal
    the response's valid on every clock."""
    dut = top = AggregationDatapath(params, replicated_inputs=replicated_inputs)
    differing = []      # (clock, response valid, its copies)
    watch = None
    if replicated_inputs:
        async def watch(ctx):
            clock = 0
            async for _, _, valid, copies in ctx.tick().sample(dut.response.valid,
                                                                dut.response_valid_copies):
                if copies != (-valid) % (1 << params.control_copies):
                    differing.append((clock, valid, f"{copies:#x}"))
                clock += 1

        top = Module()
        top.submodules.datapath = dut
        fields = dut.request.payload
        inputs = decision_inputs(params, n=fields.state.n, mode=fields.mode,
                                 threshold=fields.threshold, contribute=fields.contribute,
                                 full_line=fields.byte_enable.all())
        for copy in dut.decision_inputs:
            top.d.comb += [copy[name].eq(value) for name, value in inputs.items()]
    words = simulate_stream(top, dut.request, dut.response,
                            request_payloads(dut.request.payload.shape(), req), idle=idle,
                            watch=watch)
    assert not differing, (f"{params.name}, seed {seed}: response_valid_copies differ from "
                           f"response.valid at (clock, valid, copies) {differing[:5]}")
    actual = decode_responses(params, dut.response.payload.shape(), words)
    errors = compare_responses(params, req, run_datapath(params, req), actual,
                                context=f"{params.name}, seed {seed}")
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("params", [DatapathParams(line_bits=64, counter_width=3, latency=1),
                                    DatapathParams(line_bits=128, counter_width=5, latency=2),
                                    DatapathParams(line_bits=32, counter_width=1, latency=3),
                                    DatapathParams(line_bits=64, counter_width=4, latency=4),
                                    DatapathParams(line_bits=128, counter_width=2, latency=5)],
                         ids=lambda p: p.name)
@pytest.mark.parametrize("replicated_inputs", [False, True],
                         ids=["request_fields", "replicated_inputs"])
def test_random_and_directed_with_idle_cycles(params, replicated_inputs):
    rng = np.random.default_rng(SEED)
    req = concat_requests([r for _, r in directed_requests(params, rng)]
                          + [random_requests(params, rng, 200)])
    check_datapath(params, req, idle=iter(lambda: rng.random() < 0.3, None), seed=SEED,
                   replicated_inputs=replicated_inputs)


def test_decode_decides_each_copy_from_its_own_inputs():
    """Copy 0's inputs say add (G-Binary, n = 0), copy 1's that the line is full; the request's
    own fields (left zero: IDENTITY) decide the status only."""
    params = DatapathParams(line_bits=32, counter_width=2)
    decode = Decode(params, 1, replicated_inputs=True)
    controls = data.ArrayLayout(control_layout(params), params.control_copies)(
        decode.source.payload.control)
    assert params.control_copies == 2

    async def testbench(ctx):
        for copy, n in zip(decode.inputs, (0, params.capacity)):
            ctx.set(copy.n, n)
            ctx.set(copy.mode, Mode.GBINARY)
            ctx.set(copy.contribute, 1)
            ctx.set(copy.full_line, 1)
        await ctx.delay(1e-9)
        assert [ctx.get(c.add) for c in controls] == [1, 0], "copy 0 adds, copy 1 is full"
        assert [ctx.get(c.mode) for c in controls] == [Mode.GBINARY] * 2
        assert ctx.get(decode.source.payload.status.accepted) == 1, "status: IDENTITY read"

    simulate(decode, testbench, clock=None)


def test_default_configuration_random_lines():
    params = DatapathParams()
    rng = np.random.default_rng(SEED)
    check_datapath(params, random_requests(params, rng, 24), idle=itertools.cycle([False, True]),
                   seed=SEED)


@pytest.mark.parametrize("latency", LATENCY_CHOICES)
def test_latency_and_initiation_interval(latency):
    """Back-to-back requests: the first response comes ``latency`` cycles after the first
    request, then one response every cycle."""
    params = DatapathParams(line_bits=16, counter_width=2, latency=latency)
    dut = AggregationDatapath(params)
    count = 8
    arrivals = []

    async def producer(ctx):
        ctx.set(dut.request.valid, 1)
        for i in range(count):
            ctx.set(dut.request.payload.user, i)
            await ctx.tick()
        ctx.set(dut.request.valid, 0)

    async def consumer(ctx):
        for cycle in range(count + latency + 5):
            _, _, valid = await ctx.tick().sample(dut.response.valid)
            if valid:
                arrivals.append(cycle)

    simulate(dut, producer, consumer)
    # Cycle 0 is the tick that accepts the first request; its response is valid after
    # ``latency`` ticks, i.e. sampled at tick index ``latency``.
    assert arrivals == list(range(latency, latency + count)), \
        f"latency {dut.latency}: responses at cycles {arrivals}"
    assert dut.latency == latency and dut.initiation_interval == 1


@pytest.mark.parametrize("params", [DatapathParams(), DatapathParams(line_bits=16,
                                                                     counter_width=3)],
                         ids=lambda p: p.name)
def test_state_memory_image_wiring_matches_golden(params):
    """:func:`planes_of_state` and :func:`state_of_planes` (the controller's state buffer
    wiring) agree with the golden model's memory image, both ways; so does each quarter of the
    columns (the controller loads its buffer one group of columns at a time)."""
    rng = np.random.default_rng(SEED)
    n = rng.integers(0, params.capacity + 1, size=8)
    states = pack_state(params, Mode.GBINARY,
                        rng.integers(0, n[:, None] + 1, size=(8, params.gbinary_lanes)), n)
    images = state_to_memory(params, states)
    state = Signal(state_layout(params))
    planes = Signal(params.state_lines * params.line_bits)
    m = Module()
    image_of_state, state_of_image = Signal.like(planes), Signal(params.state_bits)
    m.d.comb += [image_of_state.eq(planes_of_state(params, state)),
                 state_of_image.eq(state_of_planes(params, planes))]
    quarter = params.line_bits // 4
    groups = [range(g * quarter, (g + 1) * quarter) for g in range(4)]
    group_images = [Signal(params.state_lines * quarter) for _ in groups]
    m.d.comb += [out.eq(planes_of_state(params, state, columns))
                 for out, columns in zip(group_images, groups)]

    async def bench(ctx):
        for row, (packed, image) in enumerate(zip(lines_to_ints(states), lines_to_ints(images))):
            ctx.set(state.as_value(), packed)
            ctx.set(planes, image)
            assert ctx.get(image_of_state) == image, \
                f"{params.name} state {row}: memory image differs in bits " \
                f"{ctx.get(image_of_state) ^ image:#x}"
            assert ctx.get(state_of_image) == packed, \
                f"{params.name} image {row}: state differs in bits " \
                f"{ctx.get(state_of_image) ^ packed:#x}"
            for g, (out, columns) in enumerate(zip(group_images, groups)):
                want = [(image >> (line * params.line_bits + k)) & 1
                        for line in range(params.state_lines) for k in columns]
                got = ctx.get(out)
                wrong = [(i // quarter, columns[i % quarter]) for i, bit in enumerate(want)
                         if (got >> i) & 1 != bit]
                assert not wrong, f"{params.name} state {row}, column group {g}: " \
                                  f"(line, column) bits differ: {wrong[:8]}"

    simulate(m, bench, clock=None)


class RegisterChain(wiring.Component):
    """Three :class:`PipelineRegister` in a row, as the datapath uses them."""

    def __init__(self, width):
        self._width = width
        super().__init__({"sink": In(stream.Signature(width, always_ready=True)),
                          "source": Out(stream.Signature(width, always_ready=True))})

    def elaborate(self, platform):
        m = Module()
        upstream = wiring.flipped(self.sink)
        for i in range(3):
            m.submodules[f"reg{i}"] = register = PipelineRegister(self._width)
            wiring.connect(m, upstream, register.sink)
            upstream = register.source
        wiring.connect(m, upstream, wiring.flipped(self.source))
        return m


def test_pipeline_registers_delay_valid_and_payload_by_one_clock_each():
    """Every cycle's valid and payload (idle cycles included) leave a chain of three registers
    exactly three clocks later."""
    rng = np.random.default_rng(SEED)
    dut = RegisterChain(16)
    inputs = [(int(rng.random() < 0.6), int(rng.integers(0, 1 << 16))) for _ in range(200)]
    outputs = []

    async def bench(ctx):
        for valid, payload in inputs + [(0, 0)] * 3:
            ctx.set(dut.sink.valid, valid)
            ctx.set(dut.sink.payload, payload)
            _, _, *sampled = await ctx.tick().sample(dut.source.valid, dut.source.payload)
            outputs.append(tuple(sampled))

    simulate(dut, bench)
    # A tick samples just before its edge: the last register then holds the inputs of tick
    # t - 3.
    expected = [(0, 0)] * 3 + inputs
    for cycle, (got, want) in enumerate(zip(outputs, expected)):
        assert got[0] == want[0] and (not want[0] or got[1] == want[1]), \
            f"cycle {cycle}: (valid, payload) {got}, expected {want} (seed {SEED})"


@pytest.mark.parametrize("kwargs, message", [
    (dict(line_bits=100), "line_bits must be one of (16, 32, 64, 128, 256, 512), not 100"),
    (dict(line_bits="512"), "line_bits must be one of (16, 32, 64, 128, 256, 512), not '512'"),
    (dict(counter_width=0), "counter_width must be an integer from 1 to 16, not 0"),
    (dict(counter_width=17), "counter_width must be an integer from 1 to 16, not 17"),
    (dict(latency=6), "latency must be one of (1, 2, 3, 4, 5), not 6"),
])
def test_bad_parameters_raise_with_the_value(kwargs, message):
    with pytest.raises(ValueError) as info:
        DatapathParams(**kwargs)
    assert str(info.value) == message


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_bad_component_arguments():
    with pytest.raises(TypeError, match=r"params must be a DatapathParams, not 512"):
        AggregationDatapath(512)
    with pytest.raises(ValueError, match=r"user_width must be a positive integer, not 0"):
        AggregationDatapath(user_width=0)
    with pytest.raises(TypeError, match=r"replicated_inputs must be a bool, not 1"):
        AggregationDatapath(replicated_inputs=1)
    with pytest.raises(ValueError, match=r"primitives must be one of \(None, 'ecp5'\), not "
                                         r"'ice40'"):
        AggregationDatapath(primitives="ice40")


def test_state_layout_matches_params():
    for params in (DatapathParams(), DatapathParams(line_bits=16, counter_width=1)):
        state = request_layout(params, 16)["state"].shape
        assert state.size == params.state_bits
        assert state["n"].offset == params.state_n_offset
