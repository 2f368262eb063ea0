"""cocotb regression of the generated ``nf_axi_reducer`` (the controller behind an AXI4
subordinate port) against :mod:`golden.device`, driven by cocotbext-axi's ``AxiMaster``.

Environment (set by ``verif/hdl/test_cocotb.py``):

- ``NF_FACTS``: path of the generated ``nf_axi_reducer.json`` (the controller's parameters);
- ``NF_REDUCER_LINES``: lines per region.
"""

import os

import cocotb
import numpy as np
from cocotb.triggers import gather
from cocotbext.axi import AxiBurstType, AxiResp

from bench.controller_bench import TRAFFIC, ControllerBench, contribution
from spec.params import Mode, Reason


async def _worker(bench, region, lines, rng, axi_id):
    """One worker: its contribution to every line of ``region`` in bursts of 1 to 4 lines
    with ID ``axi_id``; returns ``[(address, line)]`` in the order written."""
    written, line = [], 0
    while line < lines:
        beats = min(int(rng.integers(1, 5)), lines - line)
        address = region.base + line * bench.line_bytes
        data = [contribution(rng, bench.params, region.mode) for _ in range(beats)]
        resp = await bench.host.write_burst(address, np.concatenate(data).tobytes(),
                                            axi_id=axi_id)
        assert resp == AxiResp.OKAY, f"{bench.where}: ID {axi_id}: burst at {address:#x}: " \
                                     f"{resp!r}"
        written += [(address + k * bench.line_bytes, d) for k, d in enumerate(data)]
        line += beats
    return written


async def _identity(bench, region, lines, rng, axi_id):
    """Random partial writes of each of ``lines`` identity lines (as :class:`AxiHost` makes
    them: a one-beat burst per run of enabled bytes), ID ``axi_id``; returns what it wrote."""
    written = []
    for line in range(lines):
        address = region.base + line * bench.line_bytes
        data = rng.integers(0, 256, bench.line_bytes, dtype=np.uint8)
        enables = rng.random(bench.line_bytes) < 0.6
        mask = int(sum(1 << k for k in np.flatnonzero(enables)))
        answer = await bench.host.write(address, data.tobytes(), byte_enable=mask,
                                        axi_id=axi_id)
        assert answer.resp == AxiResp.OKAY, f"{bench.where}: identity write {address:#x}"
        written.append((address, data, enables))
    return written


async def _check_bursts(bench, model, region, lines, rng, axi_id):
    """Read every line of ``region`` back in bursts of up to 8 with ID ``axi_id``, each line
    lane by lane against golden."""
    line = 0
    mode = region.mode if region.mode != Mode.IDENTITY.value else None
    while line < lines:
        beats = min(int(rng.integers(1, 9)), lines - line)
        address = region.base + line * bench.line_bytes
        data, resp = await bench.host.read_burst(address, beats, axi_id=axi_id)
        assert resp == AxiResp.OKAY, f"{bench.where}: ID {axi_id}: read of {address:#x}: " \
                                     f"{resp!r}"
        for k in range(beats):
            at = address + k * bench.line_bytes
            want, _ = model.read(at)
            bench.check_line(f"ID {axi_id} burst read, beat {k}", at,
                             data[k * bench.line_bytes:(k + 1) * bench.line_bytes], want, mode)
        line += beats


@cocotb.test()
@cocotb.parametrize(traffic=list(TRAFFIC))
async def reducer_against_golden(dut, traffic):
    """Workers contribute to every line of a G-Binary and a G-Ternary region in bursts, each
    with its own ID, all at once, beside partial identity writes; then every line is read
    back in bursts of several IDs at once and checked lane by lane against golden, and every
    counter and flag golden keeps."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 31, list(TRAFFIC).index(traffic)])
    bench = ControllerBench(dut, rng, traffic, host="axi")
    await bench.start()
    lines = int(os.environ["NF_REDUCER_LINES"])
    regions = bench.regions(rng, lines)
    model = await bench.configure(regions)
    gb, gt, ident = regions
    workers = min(3, bench.params.datapath.capacity)
    jobs = [cocotb.start_soon(_worker(bench, region, lines, rng, axi_id=w))
            for w in range(workers) for region in (gb, gt)]
    jobs.append(cocotb.start_soon(_identity(bench, ident, lines, rng, axi_id=workers)))
    results = await gather(*jobs)
    for written in results[:-1]:
        for address, data in written:
            assert model.write(address, data) == Reason.NONE, \
                f"{bench.where}: golden refused a contribution to {address:#x}"
    for address, data, enables in results[-1]:
        model.write(address, data, enables)
    await gather(*(cocotb.start_soon(_check_bursts(bench, model, region, lines, rng, axi_id=k))
                   for k, region in enumerate(regions)))
    await bench.finish(model)


@cocotb.test()
async def bursts_it_does_not_serve_are_refused(dut):
    """A FIXED burst and a burst of less than a line per beat move no line: every beat is
    answered SLVERR (a write's B once its beats are taken), and the line stays as it was,
    also with a served burst in flight beside the refused one."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 37])
    bench = ControllerBench(dut, rng, host="axi")
    await bench.start()
    regions = bench.regions(rng, 4)
    model = await bench.configure(regions)
    ident = regions[2]
    master, line_bytes = bench.host.master, bench.line_bytes
    before = rng.integers(0, 256, line_bytes, dtype=np.uint8)
    assert (await bench.host.write(ident.base, before.tobytes())).resp == AxiResp.OKAY
    model.write(ident.base, before)
    result = await master.read(ident.base, 2 * line_bytes, burst=AxiBurstType.FIXED, arid=1)
    assert AxiResp(result.resp) == AxiResp.SLVERR and not any(result.data), \
        f"{bench.where}: a FIXED read burst answered {AxiResp(result.resp)!r}"
    narrow = await master.write(ident.base, bytes(range(8)), size=2, awid=2)
    assert AxiResp(narrow.resp) == AxiResp.SLVERR, \
        f"{bench.where}: a 4-byte-per-beat write burst answered {AxiResp(narrow.resp)!r}"
    # A served burst and a refused one in flight together: each gets its own response.
    lines = rng.integers(0, 256, (3, line_bytes), dtype=np.uint8)
    served = cocotb.start_soon(bench.host.write_burst(ident.base + line_bytes, lines.tobytes(),
                                                      axi_id=3))
    fixed = await master.write(ident.base, bytes(2 * line_bytes), burst=AxiBurstType.FIXED,
                               awid=4)
    assert AxiResp(fixed.resp) == AxiResp.SLVERR, f"{bench.where}: a FIXED write burst"
    assert await served == AxiResp.OKAY, f"{bench.where}: the burst beside a refused one"
    for k, line in enumerate(lines):
        model.write(ident.base + (k + 1) * line_bytes, line)
    for k in range(4):
        address = ident.base + k * line_bytes
        got = await bench.read_ok(address)
        bench.check_line("identity line after served and refused bursts", address, got,
                         model.line(address))
    await bench.finish(model)
