"""cocotb regression of the generated ``nf_datapath`` Verilog against the golden model.

Run through :mod:`verif.hdl.test_cocotb` (pytest), which builds the Verilog and passes:

- ``NF_FACTS``: path of the generated ``nf_datapath.json`` (parameters and field map);
- ``NF_RANDOM_LINES``: random requests per traffic pattern (default 200; raise it for a soak).

The seed is cocotb's ``COCOTB_RANDOM_SEED`` and is logged by every test.
"""

import itertools
import json
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge, Timer

from bench.payload import decode_responses, request_payloads
from bench.scoreboard import compare_responses
from bench.streams import StreamSink, StreamSource, clock_and_reset, never, randomly
from bench.vectors import concat_requests, directed_requests, random_requests
from golden.datapath import run_datapath
from hdl.datapath import AggregationDatapath
from spec.params import DatapathParams

CLOCK_NS = 10


class DatapathBench:
    """Clock, reset and the two stream ports of ``nf_datapath`` (always ready: the datapath
    has no backpressure); the golden scoreboard."""

    def __init__(self, dut, *, idle=None):
        facts = json.loads(Path(os.environ["NF_FACTS"]).read_text())
        p = facts["parameters"]
        self.params = DatapathParams(line_bits=p["line_bits"], counter_width=p["counter_width"],
                                     latency=p["latency"])
        model = AggregationDatapath(self.params, user_width=p["user_width"])
        self.request_layout = model.request.payload.shape()
        self.response_layout = model.response.payload.shape()
        self.latency = model.latency
        self.dut = dut
        self.source = StreamSource(dut, "request", dut.clk, idle)
        self.sink = StreamSink(dut, "response", dut.clk)
        self.where = (f"{self.params.name}, COCOTB_RANDOM_SEED="
                      f"{os.environ.get('COCOTB_RANDOM_SEED', '?')}")
        dut._log.info("%s", self.where)

    async def start(self):
        await clock_and_reset(self.dut, CLOCK_NS)
        cocotb.start_soon(self.source.run())
        cocotb.start_soon(self.sink.run())

    async def transact(self, req, *, max_cycles=None):
        """Send every request, wait for every response, and check them against golden."""
        count = len(req.mode)
        first = len(self.sink.received)
        self.source.send(request_payloads(self.request_layout, req))
        max_cycles = max_cycles or 20 * count + 100
        for _ in range(max_cycles):
            if len(self.sink.received) - first >= count:
                break
            await RisingEdge(self.dut.clk)
        await ClockCycles(self.dut.clk, self.latency + 2)
        got = self.sink.received[first:]
        assert len(got) == count, (
            f"{self.where}: expected {count} responses within {max_cycles} cycles, "
            f"got {len(got)}")
        actual = decode_responses(self.params, self.response_layout, got)
        errors = compare_responses(self.params, req, run_datapath(self.params, req), actual,
                                   context=self.where)
        assert not errors, "\n".join(errors)


def _random_lines():
    return int(os.environ.get("NF_RANDOM_LINES", "200"))


# Probability of an idle cycle between requests.
TRAFFIC = {"full_rate": 0.0, "idle_cycles": 0.4}


@cocotb.test()
@cocotb.parametrize(traffic=list(TRAFFIC))
async def directed_and_random_vs_golden(dut, traffic):
    """Directed edge cases then random requests, checked lane by lane against golden."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, list(TRAFFIC).index(traffic)])
    tb = DatapathBench(dut, idle=randomly(rng, TRAFFIC[traffic]))
    await tb.start()
    cases = directed_requests(tb.params, rng)
    for name, req in cases:
        dut._log.info("directed: %s (%d requests)", name, len(req.mode))
    req = concat_requests([r for _, r in cases] + [random_requests(tb.params, rng,
                                                                    _random_lines())])
    await tb.transact(req)
    dut._log.info("%s: %d requests matched golden", traffic, len(req.mode))


@cocotb.test()
async def latency_and_initiation_interval(dut):
    """Back-to-back requests: every response arrives exactly ``latency`` cycles after its
    request, one per cycle."""
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    tb = DatapathBench(dut, idle=never())
    await tb.start()
    count = 32
    await tb.transact(random_requests(tb.params, rng, count))
    delays = [(out - into) / CLOCK_NS for into, out in zip(tb.source.fire_times, tb.sink.times)]
    assert delays == [tb.latency] * count, \
        f"{tb.where}: expected latency {tb.latency} for every request, got {delays}"
    gaps = {(b - a) / CLOCK_NS for a, b in itertools.pairwise(tb.sink.times)}
    assert gaps == {1.0}, f"{tb.where}: responses not one per cycle, gaps {sorted(gaps)}"
    dut._log.info("measured latency %d cycles, initiation interval 1 (%d requests)",
                  tb.latency, count)


@cocotb.test()
async def reset_discards_in_flight_requests(dut):
    """Reset with the pipeline full (a request in every stage) empties it: no response is
    valid during reset or afterwards for the requests in flight, and the requests after reset
    are answered correctly."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 99])
    tb = DatapathBench(dut, idle=never())
    await tb.start()
    in_flight = tb.latency
    tb.source.send(request_payloads(tb.request_layout,
                                    random_requests(tb.params, rng, in_flight)))
    while tb.source.busy:
        await RisingEdge(dut.clk)
        await ReadOnly()          # the source has seen this edge's transfer
    # The last request was taken at this edge; the first request's response is valid in the
    # coming cycle, the others are in the pipeline. Raise reset for the next edge.
    await Timer(1, "ns")
    dut.rst.value = 1
    answered = len(tb.sink.received)
    for _ in range(2 * tb.latency):
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert not dut.response__valid.value, f"{tb.where}: response valid during reset"
    await RisingEdge(dut.clk)
    dut.rst.value = 0
    late = len(tb.sink.received) - answered
    assert late == 1, (f"{tb.where}: expected only the first of {in_flight} requests in flight "
                       f"to be answered once reset was raised, got {late} responses")
    await tb.transact(random_requests(tb.params, rng, 8))
