"""The paper's hardware experiments on the generated ``nf_controller``, or on ``nf_axi_reducer``
through its AXI4 port (run by ``make paper`` through :mod:`scripts.paper`, and in small form by
:mod:`verif.scripts.test_paper`).

Environment, all set by :func:`scripts.paper.run_hardware` (whose options hold the defaults):

- ``NF_FACTS``: the generated top's ``.json``;
- ``NF_HOST``: ``cxl`` (the CXL.mem channels of ``nf_controller``) or ``axi`` (the AXI4
  subordinate port of ``nf_axi_reducer``, a one-beat burst per request);
- ``NF_FIGURES``: where to write the measured figures (JSON);
- ``NF_MEMORY_LATENCIES``: device-memory latencies in cycles, comma-separated;
- ``NF_MEMORY_INTERVALS``: cycles per device-memory data beat in the bandwidth runs,
  comma-separated;
- ``NF_STREAM_LINES``: lines per bandwidth run.

Latencies are host-observed, one request at a time: from the cycle the host hands a request to
its channel driver to the cycle the response is matched. Throughput is measured with every
request of a run handed to the host at once, so the host keeps the channels busy and the device
alone sets the pace.
"""

import dataclasses
import json
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, gather
from cocotb.utils import get_sim_time

from bench.axi_memory import TimedMemory
from bench.controller_bench import CLOCK_NS, ControllerBench

WORKERS = 8


def _env_list(name):
    return [int(x) for x in os.environ[name].split(",") if x]


async def _cycles(operation):
    start = get_sim_time("ns")
    await operation
    return int((get_sim_time("ns") - start) // CLOCK_NS)


async def _all_at_once(bench, writes, timed):
    """Hand every ``(address, line)`` write to the host at once; the cycles until the last is
    answered and device memory has moved the last line for them (a contribution is answered
    before its line's write-back: the write-backs count too)."""
    start = get_sim_time("ns")
    await gather(*[cocotb.start_soon(bench.write_ok(address, line)) for address, line in writes])
    answered = get_sim_time("ns")
    beats = None
    while beats != timed.beats:         # until memory has been still for a while
        beats = timed.beats
        await ClockCycles(bench.dut.aclk, 16 * timed.interval)
    return int((max(answered, timed.last_beat_ns) - start) // CLOCK_NS)


@cocotb.test()
async def paper_experiments(dut):
    """Read latency per path across memory latencies (identity, a resident aggregated line, a
    completed line written back and no longer on chip), then, per memory interval,
    ``workers`` contributions to each of ``NF_STREAM_LINES`` lines against identity writes of
    as many lines."""
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    memory = {}

    def make_memory(dut, pause):
        memory["model"] = TimedMemory(dut, pause=pause)
        return memory["model"]

    bench = ControllerBench(dut, rng, memory=make_memory, host=os.environ["NF_HOST"])
    await bench.start()
    timed = memory["model"]
    p = bench.params
    workers = min(WORKERS, p.datapath.capacity)
    lines = min(int(os.environ["NF_STREAM_LINES"]), p.slots // 2)
    latencies = _env_list("NF_MEMORY_LATENCIES")
    intervals = _env_list("NF_MEMORY_INTERVALS")
    # G-Binary lines [0, lines) for each bandwidth run in turn (cleared between runs), then
    # two lines per latency measurement; the G-Binary region expects ``workers``.
    size = 2 * lines + 2 * len(latencies)
    gb, gt, ident = bench.regions(rng, size)
    gb = dataclasses.replace(gb, expected=workers)
    await bench.configure([gb, gt, ident])
    host, line_bytes = bench.host, bench.line_bytes
    zero = bytes(line_bytes)
    figures = {"configuration": bench.where, "workers": workers, "lines": lines,
               "latency": {}, "bandwidth": {}}

    for index, latency in enumerate(latencies):
        timed.latency = latency
        resident = gb.base + (2 * lines + 2 * index) * line_bytes
        completed = resident + line_bytes
        for _ in range(workers):
            await bench.write_ok(completed, zero)
        # Take every line off chip: a raw write to an accumulator no line uses writes every
        # slot back and empties it. Then one contribution brings ``resident`` on chip.
        spare = gb.acc + (size - 1) * p.accumulator_bytes_per_line
        await bench.write_ok(spare, zero)
        await bench.write_ok(resident, zero)
        offset = (2 * lines + 2 * index) * line_bytes
        figures["latency"][latency] = {
            "identity read": await _cycles(host.read(ident.base + offset)),
            "resident G-Binary read": await _cycles(host.read(resident)),
            "completed G-Binary read": await _cycles(host.read(completed)),
            "identity write": await _cycles(host.write(ident.base + offset, zero)),
        }
        dut._log.info("memory latency %d: %s", latency, figures["latency"][latency])

    timed.latency = 0
    for interval in intervals:
        timed.interval = interval
        runs = {}
        # Line-major: every worker's contribution to line 0, then to line 1, ...; the same
        # number of identity writes, to the identity region's lines in turn.
        plans = {"contributions": [gb.base + k * line_bytes
                                   for k in range(lines) for _ in range(workers)],
                 "identity writes": [ident.base + k % size * line_bytes
                                     for k in range(lines * workers)]}
        for name, addresses in plans.items():
            writes = [(address, rng.integers(0, 256, line_bytes, np.uint8).tobytes())
                      for address in addresses]
            beats = timed.beats
            cycles = await _all_at_once(bench, writes, timed)
            runs[name] = {"requests": len(writes), "cycles": cycles,
                          "per_cycle": len(writes) / cycles,
                          "memory_beats": timed.beats - beats}
        await bench.device.clear(0)
        agg, ide = runs["contributions"], runs["identity writes"]
        figures["bandwidth"][interval] = dict(
            runs, ratio=agg["per_cycle"] / ide["per_cycle"],
            beats_per_contribution=agg["memory_beats"] / agg["requests"])
        dut._log.info("memory interval %d: %s", interval, figures["bandwidth"][interval])
    assert not timed.errors, f"{bench.where}: memory model: {timed.errors}"
    await bench.finish()
    Path(os.environ["NF_FIGURES"]).write_text(json.dumps(figures, indent=2) + "\n")
