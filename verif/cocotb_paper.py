"""The paper's hardware experiments on the generated ``nf_controller`` (run by ``make paper``
through :mod:`scripts.paper`, and in small form by :mod:`verif.test_paper`).

Environment:

- ``NF_FACTS``: the generated ``nf_controller.json``;
- ``NF_FIGURES``: where to write the measured figures (JSON);
- ``NF_MEMORY_LATENCIES``: device-memory latencies in cycles, comma-separated (default ``0,20``);
- ``NF_MEMORY_INTERVAL``: cycles per device-memory data beat in the bandwidth run (default 4);
- ``NF_STREAM_LINES``: contributions per worker in the bandwidth run (default 8).

Latencies are host-observed: from the cycle the host hands a request to its channel driver to
the cycle the response is matched, one request at a time.
"""

import json
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.triggers import gather
from cocotb.utils import get_sim_time

from verif.axi_memory import TimedMemory
from verif.controller_bench import CLOCK_NS, ControllerBench

WORKERS = 8


def _env_list(name, default):
    return [int(x) for x in os.environ.get(name, default).split(",") if x]


async def _cycles(operation):
    start = get_sim_time("ns")
    await operation
    return int((get_sim_time("ns") - start) // CLOCK_NS)


async def _stream(bench, addresses_per_worker, write):
    """Every worker writes its addresses back to back; returns the cycles until all are done."""
    async def worker(addresses):
        for address in addresses:
            await write(address)

    start = get_sim_time("ns")
    await gather(*[worker(a) for a in addresses_per_worker])
    return int((get_sim_time("ns") - start) // CLOCK_NS)


@cocotb.test()
async def paper_experiments(dut):
    """Latency per path across memory latencies, then throughput of 8 workers streaming
    contributions and identity writes against a bandwidth-limited memory."""
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    memory = {}

    def make_memory(dut):
        memory["model"] = TimedMemory(dut)
        cocotb.start_soon(memory["model"].run())
        return memory["model"]

    bench = ControllerBench(dut, rng, memory=make_memory)
    await bench.start()
    timed = memory["model"]
    streamed = int(os.environ.get("NF_STREAM_LINES", "8"))
    lines = WORKERS * streamed
    latencies = _env_list("NF_MEMORY_LATENCIES", "0,20")
    # Streamed contributions use lines [0, lines); each latency measurement its own line after
    # those, so no line ever reaches capacity.
    regions = bench.regions(rng, lines + len(latencies))
    await bench.configure(regions)
    gb, gt, ident = regions
    host, line = bench.host, bytes(bench.line_bytes)
    figures = {"configuration": bench.where, "latency": {}, "bandwidth": {}}

    for index, latency in enumerate(latencies):
        timed.latency = latency
        offset = (lines + index) * bench.line_bytes
        figures["latency"][latency] = {
            "identity write": await _cycles(host.write(ident.base + offset, line)),
            "identity read": await _cycles(host.read(ident.base + offset)),
            "G-Binary contribution": await _cycles(host.write(gb.base + offset, line)),
            "G-Binary read": await _cycles(host.read(gb.base + offset)),
            "G-Ternary contribution": await _cycles(host.write(gt.base + offset, line)),
            "G-Ternary read": await _cycles(host.read(gt.base + offset)),
        }
        dut._log.info("memory latency %d: %s", latency, figures["latency"][latency])

    timed.latency = 0
    timed.interval = int(os.environ.get("NF_MEMORY_INTERVAL", "4"))

    def plan(region):
        """Each worker's addresses: ``streamed`` lines of its own."""
        return [[region.base + (w * streamed + k) * bench.line_bytes for k in range(streamed)]
                for w in range(WORKERS)]

    for name, region, data in (("G-Binary contributions", gb, line),
                               ("identity writes", ident, line)):
        beats = timed.beats
        cycles = await _stream(bench, plan(region),
                               lambda address, data=data: bench.write_ok(address, data))
        figures["bandwidth"][name] = {
            "requests": lines, "cycles": cycles, "per_cycle": lines / cycles,
            "memory_beats": timed.beats - beats, "memory_interval": timed.interval}
        dut._log.info("%s: %d in %d cycles (%.4f per cycle), %d memory beats at one per %d "
                      "cycles", name, lines, cycles, lines / cycles, timed.beats - beats,
                      timed.interval)
    assert not timed.errors, f"{bench.where}: memory model: {timed.errors}"
    await bench.finish()
    Path(os.environ["NF_FIGURES"]).write_text(json.dumps(figures, indent=2) + "\n")
