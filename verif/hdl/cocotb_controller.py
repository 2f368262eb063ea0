"""cocotb system regression of the generated ``nf_controller`` against :mod:`golden.device`.

Run through :mod:`verif.hdl.test_cocotb` (pytest), which builds the Verilog and passes:

- ``NF_FACTS``: path of the generated ``nf_controller.json`` (the controller's parameters);
- ``NF_SYSTEM_LINES``: lines per aggregation region in the system test (default 6);
  ``NF_IDENTITY_OPS``: identity operations per worker (default 12).

Device memory is cocotbext-axi's ``AxiRam``, except in the system test: there it is
:class:`bench.axi_memory.TimedMemory`, clocked in one coroutine with the host. (The long runs
are ``make soak``'s, in a compiled harness: :mod:`scripts.soak`.) The host is
:class:`bench.cxl_host.CxlHost`, and registers are reached through the register window with
:class:`driver.NeuronFabric`. The seed is cocotb's ``COCOTB_RANDOM_SEED`` and is logged by
every test.
"""

import dataclasses
import json
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, gather
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiResp

from bench.axi_memory import TimedMemory
from bench.controller_bench import CLOCK_NS, TRAFFIC, AxiCounter, ControllerBench, contribution
from bench.streams import never
from driver import ConfigurationError
from spec.cxl import DevLoad, DRSOpcode, NDROpcode, ReqOpcode
from spec.formats import ternary_to_lines, unpack_state
from spec.params import REGISTER_BITS, Mode, Reason
from spec.regmap import ConfigError, Region


async def _contribute_all(bench, model, rng, regions, lines, workers):
    """``workers`` contributions to every line of the aggregating ``regions``, in random order."""
    targets = [(r, line) for r in regions if r.aggregating for line in range(lines)] * workers
    for index in rng.permutation(len(targets)):
        region, line = targets[index]
        address = region.base + line * bench.line_bytes
        data = contribution(rng, bench.params, region.mode)
        await bench.write_ok(address, data.tobytes())
        assert model.write(address, data) == Reason.NONE, \
            f"{bench.where}: golden refused a contribution to {address:#x}"


async def _worker_identity(bench, model, rng, addresses, operations, worker):
    """One worker: random full and partial writes and read-backs of its own identity lines."""
    for _ in range(operations):
        address = int(rng.choice(addresses))
        if rng.random() < 0.4:
            got = await bench.read_ok(address)
            bench.check_line(f"worker {worker} identity read", address, got, model.line(address))
            continue
        data = rng.integers(0, 256, bench.line_bytes, dtype=np.uint8)
        enables = None if rng.random() < 0.5 else rng.random(bench.line_bytes) < 0.5
        await bench.write_ok(address, data.tobytes(), None if enables is None else _mask(enables))
        model.write(address, data, enables)


def _mask(enables):
    """Byte-enable mask int of a bool array (bit i = byte i)."""
    return int.from_bytes(np.packbits(enables, bitorder="little").tobytes(), "little")


async def _concurrently(width, checks):
    """Await every coroutine that the iterable ``checks`` yields, ``width`` at a time (each of
    ``width`` runners takes the next one when it is done with its last)."""
    checks = iter(checks)

    async def runner():
        for check in checks:
            await check

    await gather(*[runner() for _ in range(width)])


async def _check_aggregated(bench, model, region, line, workers):
    """Line ``line`` of the aggregating ``region`` after ``workers`` contributions each: its
    result line and its raw state lane by lane against golden, and its count."""
    address = region.base + line * bench.line_bytes
    bench.check_line("result", address, await bench.read_ok(address), model.read(address)[0],
                     region.mode)
    lanes, n = await bench.device.read_state(region, line)
    state_address = region.acc + line * bench.params.accumulator_bytes_per_line
    want, want_n = unpack_state(bench.params.datapath, Mode(region.mode),
                                model.state(state_address).reshape(1, -1))
    assert n == want_n[0] == workers, \
        f"{bench.where}: {address:#x}: n = {n}, golden {want_n[0]}, workers {workers}"
    differ = np.flatnonzero(lanes != want[0])
    assert not len(differ), f"{bench.where}: {address:#x}: state lanes {differ[:8].tolist()} differ"


async def _check_identity(bench, model, address):
    """An identity line read back against golden."""
    bench.check_line("identity read-back", address, await bench.read_ok(address),
                     model.line(address))


def _system_lines():
    """Lines per aggregating region of :func:`system_vs_golden`: ``NF_SYSTEM_LINES``, or 6."""
    return int(os.environ.get("NF_SYSTEM_LINES", "6"))


@cocotb.test()
@cocotb.parametrize(traffic=list(TRAFFIC))
async def system_vs_golden(dut, traffic):
    """N workers (N = capacity) contribute to every line of a G-Binary and a G-Ternary region in
    random interleaving, while others do identity writes and reads; then every result line and
    raw state is read and compared with golden, with the counters and flags."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, list(TRAFFIC).index(traffic)])
    bench = ControllerBench(dut, rng, traffic, memory=TimedMemory)
    await bench.start()
    workers = bench.params.datapath.capacity
    lines = _system_lines()
    regions = bench.regions(rng, lines)
    model = await bench.configure(regions)
    identity = [regions[2].base + i * bench.line_bytes for i in range(lines)] + \
        [i * bench.line_bytes for i in range(2 * lines)]
    operations = int(os.environ.get("NF_IDENTITY_OPS", "12"))
    await gather(
        *[_contribute_all(bench, model, np.random.default_rng([cocotb.RANDOM_SEED, w]),
                          regions, lines, 1) for w in range(workers)],
        *[_worker_identity(bench, model, np.random.default_rng([cocotb.RANDOM_SEED, 100 + k]),
                           identity[k::2], operations, k) for k in range(2)])

    await _concurrently(workers, (_check_aggregated(bench, model, region, line, workers)
                                  for region in regions[:2] for line in range(lines)))
    await _concurrently(workers, (_check_identity(bench, model, address)
                                  for address in identity))
    await bench.finish(model)
    dut._log.info("%s: %d contributions and %d identity operations matched golden",
                  traffic, workers * 2 * lines, 2 * operations)


@cocotb.test()
@cocotb.parametrize(traffic=["host_idle_and_backpressure", "everything_random"])
async def hammer_one_line(dut, traffic):
    """``capacity`` workers write the same G-Binary and G-Ternary lines back to back, interleaved
    with reads of other lines: every contribution is counted once (``n`` = capacity, lanes =
    golden). One more contribution is rejected whole: state unchanged, CAPACITY flagged."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 7])
    bench = ControllerBench(dut, rng, traffic)
    await bench.start()
    regions = bench.regions(rng, 2)
    model = await bench.configure(regions)
    cap = bench.params.datapath.capacity
    targets = [regions[0].base + bench.line_bytes, regions[1].base]

    async def worker(w):
        wrng = np.random.default_rng([cocotb.RANDOM_SEED, 7, w])
        for address, region in zip(targets, regions):
            data = contribution(wrng, bench.params, region.mode)
            await bench.write_ok(address, data.tobytes())
            model.write(address, data)
            await bench.read_ok(regions[2].base)

    await gather(*[worker(w) for w in range(cap)])
    for address, region in zip(targets, regions):
        line = (address - region.base) // bench.line_bytes
        before = await bench.device.read_state(region, line)
        assert before[1] == cap, f"{bench.where}: {address:#x}: n = {before[1]}, expected {cap}"
        extra = contribution(rng, bench.params, region.mode)
        await bench.write_ok(address, extra.tobytes())
        assert model.write(address, extra) == Reason.CAPACITY
        after = await bench.device.read_state(region, line)
        assert after[1] == cap and (after[0] == before[0]).all(), \
            f"{bench.where}: {address:#x}: a rejected contribution changed the state"
        golden_lanes, _ = unpack_state(bench.params.datapath, Mode(region.mode), model.state(
            region.acc + line * bench.params.accumulator_bytes_per_line).reshape(1, -1))
        differ = np.flatnonzero(after[0] != golden_lanes[0])
        assert not len(differ), f"{bench.where}: {address:#x}: lanes {differ[:8].tolist()} differ"
        bench.check_line("result", address, await bench.read_ok(address), model.read(address)[0],
                         region.mode)
    await bench.finish(model)
    dut._log.info("%s: %d contributions to each of 2 lines counted exactly once; the next one "
                  "rejected", traffic, cap)


@cocotb.test()
async def bad_input_outcomes(dut):
    """Every bad input of the specification gets its documented answer, and nothing else changes."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 11])
    bench = ControllerBench(dut, rng, "host_idle_and_backpressure")
    await bench.start()
    host, device, where = bench.host, bench.device, bench.where
    regions = bench.regions(rng, 2)
    model = await bench.configure(regions)
    gb, gt, ident = regions
    keep = rng.integers(0, 256, bench.line_bytes, dtype=np.uint8)
    await bench.write_ok(ident.base, keep.tobytes())
    model.write(ident.base, keep)

    async def expect_flag(name):
        status = await device.status()
        assert status[name], f"{where}: STATUS.{name} not set"
        await device.clear_status(name)
        assert not (await device.status())[name], f"{where}: STATUS.{name} did not clear"

    # A bad configuration is refused with its reason, and the old one stays in force.
    overlapping = [gb, gt, Region(True, Mode.IDENTITY.value, gb.base, bench.line_bytes)]
    try:
        await device.configure(overlapping)
    except ConfigurationError as error:
        assert (error.region, error.reason) == (0, ConfigError.OVERLAP), f"{where}: {error}"
    else:
        raise AssertionError(f"{where}: APPLY accepted overlapping regions")
    await expect_flag("CFG_ERROR")
    assert (await device.counters())["CFG_ERRORS"] == 1, f"{where}: CNT_CFG_ERRORS"

    # Partial contribution: rejected, flagged, state unchanged.
    line = contribution(rng, bench.params, gb.mode)
    response = await host.write(gb.base, line.tobytes(), byte_enable=1)
    assert response.opcode == NDROpcode.CMP.value, f"{where}: partial contribution: {response}"
    assert model.write(gb.base, line, np.arange(bench.line_bytes) == 0) == Reason.PARTIAL
    await expect_flag("PARTIAL")
    assert (await device.read_state(gb, 0))[1] == 0, f"{where}: partial contribution counted"

    # Invalid ternary codes: counted as 0, the rest of the line accepted, flagged and counted.
    codes = np.zeros(bench.params.datapath.gternary_lanes, np.int64)
    codes[1] = 1
    line = ternary_to_lines(codes[None])[0]
    line[0] |= 0b10                                             # lane 0 holds the invalid code
    await bench.write_ok(gt.base, line.tobytes())
    assert model.write(gt.base, line) == Reason.NONE
    lanes, n = await device.read_state(gt, 0)
    assert (n, lanes[0], lanes[1]) == (1, 0, 1), f"{where}: invalid code: n={n}, {lanes[:2]}"
    await expect_flag("INVALID_CODE")

    # Poison: completed, dropped, flagged.
    response = await host.write(ident.base, bytes(bench.line_bytes), poison=True)
    assert response.opcode == NDROpcode.CMP.value, f"{where}: poisoned write: {response}"
    model.write(ident.base, np.zeros(bench.line_bytes, np.uint8), poison=True)
    await expect_flag("POISON")
    bench.check_line("after a poisoned write", ident.base, await bench.read_ok(ident.base), keep)

    # Unsupported opcodes: Cmp without effect; MemInv: Cmp; MemSpecRd: no answer.
    for opcode in (ReqOpcode.MEM_RD_FWD, ReqOpcode.MEM_WR_FWD, 0b0101, 0b1111):
        response = await host.request(opcode, ident.base, expect="ndr")
        assert response.opcode == NDROpcode.CMP.value, f"{where}: Req {opcode}: {response}"
        await expect_flag("BAD_OPCODE")
    response = await host.write(ident.base, bytes(bench.line_bytes), opcode=0b0000)
    assert response.opcode == NDROpcode.CMP.value, f"{where}: RwD opcode 0: {response}"
    await expect_flag("BAD_OPCODE")
    for opcode in (ReqOpcode.MEM_INV, ReqOpcode.MEM_INV_NT):
        response = await host.request(opcode, ident.base, expect="ndr")
        assert response.opcode == NDROpcode.CMP.value, f"{where}: {opcode}: {response}"
    host.send_without_answer(ReqOpcode.MEM_SPEC_RD, ident.base)
    bench.check_line("MemRdData", ident.base,
                     (await host.read(ident.base, opcode=ReqOpcode.MEM_RD_DATA)).data, keep)

    # Beyond the address space: MemData-NXM for reads, Cmp for writes, both flagged.
    beyond = 1 << bench.params.address_bits
    response = await host.read(beyond)
    assert (response.opcode, response.data) == (DRSOpcode.MEM_DATA_NXM.value,
                                                bytes(bench.line_bytes)), \
        f"{where}: read beyond the address space: {response}"
    response = await host.write(beyond, keep.tobytes())
    assert response.opcode == NDROpcode.CMP.value, f"{where}: write beyond: {response}"
    await expect_flag("BAD_ADDRESS")
    bench.check_line("after bad requests", ident.base, await bench.read_ok(ident.base), keep)

    # Lock: region registers read-only, attempts flagged, the configuration stays in force.
    await device.lock()
    await device.write("R0_BASE_LO", 0)
    assert await device.read("R0_BASE_LO") == gb.base & ((1 << REGISTER_BITS) - 1), \
        f"{where}: a locked region register changed"
    await expect_flag("LOCKED_WRITE")
    for flag in ("CAPACITY", "MEM_ERROR"):
        assert not (await device.status())[flag], f"{where}: STATUS.{flag} set unexpectedly"
    await bench.finish()


@cocotb.test()
async def clear_engine(dut):
    """CTRL.CLEAR zeroes one region's accumulators in device memory, with busy and done; a
    contribution sent during the clear is served after it; other regions and identity data
    stay as they were."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 13])
    bench = ControllerBench(dut, rng, "memory_latency_and_backpressure")
    await bench.start()
    lines = 4
    regions = bench.regions(rng, lines)
    model = await bench.configure(regions)
    gb, gt, ident = regions
    for region in (gb, gt):
        for line in range(lines):
            data = contribution(rng, bench.params, region.mode)
            await bench.write_ok(region.base + line * bench.line_bytes, data.tobytes())
            model.write(region.base + line * bench.line_bytes, data)
    keep = rng.integers(0, 256, bench.line_bytes, dtype=np.uint8)
    await bench.write_ok(ident.base, keep.tobytes())

    ctrl = bench.device.regmap["CTRL"]
    await bench.device.write("CTRL", ctrl.pack(ENABLE=1, CLEAR=1,
                                               CLEAR_REGION=1))     # region 1: G-Ternary
    during = contribution(rng, bench.params, gt.mode)
    status = bench.device.regmap["STATUS"]
    assert status.unpack(await bench.csr_read("STATUS"))["CLEAR_BUSY"], \
        f"{bench.where}: STATUS.CLEAR_BUSY not set right after CTRL.CLEAR"
    await bench.write_ok(gt.base, during.tobytes())
    model.clear(1)
    model.write(gt.base, during)
    status = await bench.device.status()
    assert status["CLEAR_DONE"] and not status["CLEAR_BUSY"], f"{bench.where}: {status}"
    await bench.device.clear(0)                                  # the driver's way, region 0
    model.clear(0)
    for region in (gb, gt):
        for line in range(lines):
            lanes, n = await bench.device.read_state(region, line)
            want = 1 if (region is gt and line == 0) else 0
            assert n == want, f"{bench.where}: {Mode(region.mode).name} line {line}: n = {n}"
            address = region.base + line * bench.line_bytes
            bench.check_line("after clear", address, await bench.read_ok(address),
                             model.read(address)[0], region.mode)
    bench.check_line("identity after clear", ident.base, await bench.read_ok(ident.base), keep)
    await bench.finish()


def _accumulator_image(bench, model, region, line):
    """The golden accumulator of ``region``'s line ``line``: its address and bytes (result
    line, then the state's lines)."""
    p = bench.params
    address = region.acc + line * p.accumulator_bytes_per_line
    size = (1 + p.datapath.state_lines) * bench.line_bytes
    return address, np.concatenate([model.line(address + k)
                                    for k in range(0, size, bench.line_bytes)])


@cocotb.test()
@cocotb.parametrize(traffic=["full_rate", "everything_random"])
async def flush_writes_exact_accumulators(dut, traffic):
    """Lines contributed to stay on chip; CTRL.FLUSH writes each one back: afterwards device
    memory (read behind the device's back) holds every line's exact accumulator, result line
    and state, and CNT_WRITE_BACKS counts them. A second flush writes nothing."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 29])
    bench = ControllerBench(dut, rng, traffic)
    await bench.start()
    lines = min(4, bench.params.slots // 2)
    regions = bench.regions(rng, lines)
    model = await bench.configure(regions)
    await _contribute_all(bench, model, rng, regions, lines, 2)
    await bench.device.flush()
    write_backs = (await bench.device.counters())["WRITE_BACKS"]
    for region in regions[:2]:
        for line in range(lines):
            address, want = _accumulator_image(bench, model, region, line)
            got = np.frombuffer(bench.ram.read(address, len(want)), np.uint8)
            differ = np.flatnonzero(got != want)
            assert not len(differ), (
                f"{bench.where}: {Mode(region.mode).name} line {line}: accumulator bytes "
                f"{differ[:8].tolist()} in memory after FLUSH differ from golden")
    await bench.device.flush()
    again = (await bench.device.counters())["WRITE_BACKS"]
    assert again == write_backs, \
        f"{bench.where}: a second FLUSH wrote {again - write_backs} accumulators back"
    await bench.finish(model)


@cocotb.test()
async def checkpoint_restore_of_resident_lines(dut):
    """The host saves a resident line's raw state (coherent reads), contributes more, then
    restores the saved accumulator lines with raw writes: the restore is not lost behind the
    slot, nor overwritten by it (it reads back whole), and later contributions add to the
    restored state."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 31])
    bench = ControllerBench(dut, rng, "host_idle_and_backpressure")
    await bench.start()
    regions = bench.regions(rng, 2)
    model = await bench.configure(regions)
    gb = regions[0]
    await _contribute_all(bench, model, rng, [gb], 2, 1)
    address, saved = _accumulator_image(bench, model, gb, 0)
    raw = b"".join([await bench.read_ok(address + k)
                    for k in range(0, len(saved), bench.line_bytes)])
    bench.check_line("raw accumulator read of a resident line", address, raw, saved)
    await _contribute_all(bench, model, rng, [gb], 2, 1)
    for k in range(0, len(saved), bench.line_bytes):
        await bench.write_ok(address + k, saved[k:k + bench.line_bytes].tobytes())
        model.write(address + k, saved[k:k + bench.line_bytes])
    restored = b"".join([await bench.read_ok(address + k)
                         for k in range(0, len(saved), bench.line_bytes)])
    bench.check_line("the restored accumulator, read back at once", address, restored, saved)
    await _contribute_all(bench, model, rng, [gb], 2, 1)
    for line in range(2):
        lanes, n = await bench.device.read_state(gb, line)
        want, want_n = unpack_state(bench.params.datapath, Mode.GBINARY, model.state(
            gb.acc + line * bench.params.accumulator_bytes_per_line).reshape(1, -1))
        assert n == want_n[0] and (lanes == want[0]).all(), \
            f"{bench.where}: line {line} after the restore: n = {n}, golden {want_n[0]}"
        address = gb.base + line * bench.line_bytes
        bench.check_line("result after the restore", address, await bench.read_ok(address),
                         model.read(address)[0], Mode.GBINARY)
    await bench.finish(model)


@cocotb.test()
async def reset_drops_resident_lines(dut):
    """A reset loses the lines still on chip, and says so: after it CNT_DROPPED counts the
    dirty slots, every slot the last included, device memory holds what the last FLUSH wrote,
    and the device works, reading the first and the last slot's lines from memory."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 37])
    bench = ControllerBench(dut, rng)
    await bench.start()
    lines = bench.params.slots                  # consecutive lines: one in every slot
    regions = bench.regions(rng, lines)
    model = await bench.configure(regions)
    gb = regions[0]
    await _contribute_all(bench, model, rng, [gb], lines, 1)
    await bench.device.flush()
    flushed = [_accumulator_image(bench, model, gb, line) for line in range(lines)]
    await _contribute_all(bench, model, rng, [gb], lines, 1)       # dirty again, on chip
    await ClockCycles(dut.aclk, 20)
    dut.aresetn.value = 0
    await ClockCycles(dut.aclk, 2)
    dut.aresetn.value = 1
    await ClockCycles(dut.aclk, bench.params.slots + 20)
    await bench.device.identify()
    counters = await bench.device.counters()
    assert counters["DROPPED"] == lines, \
        f"{bench.where}: CNT_DROPPED {counters['DROPPED']} after a reset with {lines} dirty " \
        f"lines on chip"
    for line, (address, want) in enumerate(flushed):
        got = np.frombuffer(bench.ram.read(address, len(want)), np.uint8)
        assert (got == want).all(), f"{bench.where}: line {line}: memory after the reset " \
                                    f"is not what the FLUSH before it wrote"
    await bench.configure(regions)
    for line in (0, lines - 1):
        address = gb.base + line * bench.line_bytes
        bench.check_line(f"result of line {line} after the reset", address,
                         await bench.read_ok(address), flushed[line][1][:bench.line_bytes],
                         Mode.GBINARY)
    await bench.finish()


@cocotb.test()
async def clear_during_traffic(dut):
    """Workers keep contributing to the G-Binary region while the G-Ternary region is cleared
    twice: the G-Ternary lines end zero, every G-Binary line matches golden exactly."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 41])
    bench = ControllerBench(dut, rng, "everything_random")
    await bench.start()
    lines = 4
    regions = bench.regions(rng, lines)
    model = await bench.configure(regions)
    gb, gt = regions[:2]
    await _contribute_all(bench, model, rng, [gt], lines, 1)

    async def clears():
        for _ in range(2):
            await bench.device.clear(1)
            await ClockCycles(dut.aclk, 30)

    workers = min(4, bench.params.datapath.capacity)
    await gather(clears(), *[_contribute_all(bench, model, np.random.default_rng(
        [cocotb.RANDOM_SEED, 41, w]), [gb], lines, 1) for w in range(workers)])
    model.clear(1)
    for line in range(lines):
        lanes, n = await bench.device.read_state(gt, line)
        assert n == 0 and not lanes.any(), f"{bench.where}: G-Ternary line {line} after " \
                                           f"CLEAR: n = {n}"
        lanes, n = await bench.device.read_state(gb, line)
        want, want_n = unpack_state(bench.params.datapath, Mode.GBINARY, model.state(
            gb.acc + line * bench.params.accumulator_bytes_per_line).reshape(1, -1))
        assert n == want_n[0] == workers and (lanes == want[0]).all(), \
            f"{bench.where}: G-Binary line {line} during the clears: n = {n}, golden " \
            f"{want_n[0]}"
    await bench.finish()


@cocotb.test()
async def clear_spares_the_next_regions_first_line(dut):
    """Region 1's accumulators start where region 0's end. A clear of region 0 leaves region
    1's first line alone: resident and dirty in its slot (its contribution counts), and, once
    written back, its result line in device memory (no zero write past region 0's end)."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 43])
    bench = ControllerBench(dut, rng, "host_idle_and_backpressure")
    await bench.start()
    lines = 4
    gb, gt, ident = bench.regions(rng, lines)
    # T = 1: one contribution makes a result line that is not zero.
    gt = dataclasses.replace(gt, acc=gb.acc + lines * bench.params.accumulator_bytes_per_line,
                             threshold=1)
    model = await bench.configure([gb, gt, ident])
    await _contribute_all(bench, model, rng, [gb], lines, 1)
    data = contribution(rng, bench.params, gt.mode)
    await bench.write_ok(gt.base, data.tobytes())           # resident, dirty, not complete
    model.write(gt.base, data)
    for step in ("resident", "written back"):
        await bench.device.clear(0)
        model.clear(0)
        address, want = _accumulator_image(bench, model, gt, 0)
        got = b"".join([await bench.read_ok(address + k)
                        for k in range(0, len(want), bench.line_bytes)])
        bench.check_line(f"region 1's first accumulator after a clear of region 0, line "
                         f"{step}", address, got, want)
        await bench.device.flush()
    lanes, n = await bench.device.read_state(gb, 0)
    assert n == 0 and not lanes.any(), f"{bench.where}: region 0 line 0 after CLEAR: n = {n}"
    await bench.finish(model)


@cocotb.test()
async def devload_follows_queue_occupancy(dut):
    """With responses held back the ingress queues fill and DevLoad reads Severe; as they
    drain it steps down through the documented limits to Light."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 17])
    bench = ControllerBench(dut, rng)
    await bench.start()
    host = bench.host
    host.ndr.stall = host.drs.stall = iter(lambda: True, None)
    count = bench.params.queue_depth + 2
    line = bytes(bench.line_bytes)
    host.recording = arrivals = []
    tasks = [cocotb.start_soon(host.read(i * bench.line_bytes)) for i in range(count)]
    tasks += [cocotb.start_soon(host.write(i * bench.line_bytes, line)) for i in range(count)]
    await ClockCycles(dut.aclk, 8 * count)
    host.ndr.stall = host.drs.stall = never()
    await gather(*tasks)
    host.recording = None
    loads = [response.dev_load for response in arrivals]
    assert loads[0] == DevLoad.SEVERE.value, f"{bench.where}: first DevLoad {loads}"
    assert loads[-1] == DevLoad.LIGHT.value, f"{bench.where}: last DevLoad {loads}"
    assert loads == sorted(loads, reverse=True), \
        f"{bench.where}: DevLoad rose while the queues drained: {loads}"
    assert set(loads) == {d.value for d in DevLoad}, f"{bench.where}: levels seen {loads}"
    await bench.finish()


@cocotb.test()
async def csr_port_shares_the_registers(dut):
    """The AXI4-Lite register port reads and writes the same registers as the window, and wins
    when both access them in the same cycle."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 19])
    bench = ControllerBench(dut, rng)
    await bench.start()
    regmap = bench.device.regmap
    # Window reads of another register all the while: each port keeps its own data.
    window_reads = [cocotb.start_soon(bench.device.read("VERSION")) for _ in range(24)]
    for reg, value in (("R1_BASE_LO", 0x1234_5640), ("R1_SIZE_LO", 0x40)):
        await bench.csr_write(reg, value)
    for _ in range(8):
        magic = await bench.csr_read("ID")
        assert magic == regmap["ID"].field("MAGIC").reset, \
            f"{bench.where}: AXI4-Lite read of ID gave {magic:#x} beside window reads"
    for task in window_reads:
        assert await task == regmap["VERSION"].reset, f"{bench.where}: window VERSION"
    assert await bench.device.read("R1_BASE_LO") == 0x1234_5640, f"{bench.where}: R1_BASE_LO"
    assert await bench.device.read("R1_SIZE_LO") == 0x40, f"{bench.where}: R1_SIZE_LO"
    await bench.finish()


@cocotb.test()
async def register_port_refuses_with_slverr(dut):
    """The AXI4-Lite register port answers SLVERR, and changes nothing, for each access the
    register map refuses: an address with no register, a write to a read-only register, a
    write of less than a whole register, a write to a locked register (which also sets
    STATUS.LOCKED_WRITE); and OKAY for the rest."""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 23])
    bench = ControllerBench(dut, rng)
    await bench.start()
    regmap = bench.device.regmap
    used = {reg.offset for reg in regmap}
    hole = next(offset for offset in range(0, regmap.window_bytes, 4) if offset not in used)
    value, response = await bench.csr_read_at(hole)
    assert (value, response) == (0, AxiResp.SLVERR), \
        f"{bench.where}: read of {hole:#x} (no register) gave {value:#x}, {response!r}"
    assert await bench.csr_write_at(hole, 0x5A5A_5A5A) == AxiResp.SLVERR, \
        f"{bench.where}: write of {hole:#x} (no register)"
    assert await bench.csr_write("ID", 0) == AxiResp.SLVERR, f"{bench.where}: write of ID"
    assert await bench.csr_read("ID") == regmap["ID"].reset, f"{bench.where}: ID changed"
    assert await bench.csr_write("R1_BASE_LO", 0x40) == AxiResp.OKAY, f"{bench.where}: write"
    offset = regmap["R1_BASE_LO"].offset
    assert await bench.csr_write_at(offset, 0x1280, length=2) == AxiResp.SLVERR, \
        f"{bench.where}: a two-byte write of R1_BASE_LO"
    assert await bench.csr_read("R1_BASE_LO") == 0x40, f"{bench.where}: R1_BASE_LO changed"
    assert await bench.csr_write("CTRL", regmap["CTRL"].pack(LOCK=1)) == AxiResp.OKAY
    assert await bench.csr_write("R1_BASE_LO", 0x80) == AxiResp.SLVERR, \
        f"{bench.where}: a write of R1_BASE_LO while locked"
    assert await bench.csr_read("R1_BASE_LO") == 0x40, f"{bench.where}: a locked write landed"
    status = regmap["STATUS"].unpack(await bench.csr_read("STATUS"))
    assert status["LOCKED_WRITE"], f"{bench.where}: STATUS.LOCKED_WRITE not set: {status}"
    await bench.finish()


@cocotb.test()
async def latency_and_throughput(dut):
    """Measures, with AxiRam at full speed: cycles from request to response per path and the
    device-memory lines each moves (a contribution to a fresh line reads its n line and
    nothing else; a result read of a resident line touches no memory); then ``workers``
    workers each contributing to every one of 8 lines of a region that expects them all, and
    the memory lines that costs: each line's n once, and one write-back when it completes.
    (With fewer slots than 8, as many lines as slots.)"""
    rng = np.random.default_rng([cocotb.RANDOM_SEED, 23])
    bench = ControllerBench(dut, rng)
    await bench.start()
    counter = AxiCounter(dut)
    cocotb.start_soon(counter.run())
    p = bench.params.datapath
    workers = min(8, p.capacity)
    gb, gt, ident = bench.regions(rng, 64)
    gb = dataclasses.replace(gb, expected=workers)
    await bench.configure([gb, gt, ident])
    host = bench.host
    figures = {}

    async def measure(name, operation, reads, writes):
        before = (counter.reads, counter.writes)
        start = get_sim_time("ns")
        await operation
        cycles = (get_sim_time("ns") - start) // CLOCK_NS
        lines = (counter.reads - before[0], counter.writes - before[1])
        assert lines == (reads, writes), \
            f"{bench.where}: {name}: device-memory lines read/written {lines}, " \
            f"expected {(reads, writes)}"
        figures[name] = cycles

    line = bytes(bench.line_bytes)
    ternary_line = contribution(rng, bench.params, gt.mode).tobytes()
    last = gb.base + 63 * bench.line_bytes
    await measure("identity write", host.write(ident.base, line), 0, 1)
    await measure("identity read", host.read(ident.base), 1, 0)
    await measure("G-Binary contribution", host.write(last, line), 1, 0)
    await measure("G-Ternary contribution", host.write(gt.base, ternary_line), 1, 0)
    await measure("G-Binary read", host.read(last), 0, 0)
    await measure("G-Ternary read", host.read(gt.base), 0, 0)

    # The lines measured above go back to memory, clean, so that streaming to lines that share
    # their slots evicts them without a write-back; a line per slot at most.
    await bench.device.flush()
    lines = min(8, bench.params.slots)

    async def stream(w):
        for k in range(lines):
            await bench.write_ok(gb.base + k * bench.line_bytes,
                                 rng.integers(0, 256, bench.line_bytes, np.uint8).tobytes())

    before = (counter.reads, counter.writes)
    start = get_sim_time("ns")
    await gather(*[stream(w) for w in range(workers)])
    cycles = (get_sim_time("ns") - start) // CLOCK_NS
    total = workers * lines
    counters = await bench.device.counters()
    assert counters["ACCEPTED"] - 2 == total, \
        f"{bench.where}: {counters['ACCEPTED'] - 2} of {total} streamed contributions accepted"
    await ClockCycles(dut.aclk, 20)          # the last write-back
    moved = (counter.reads - before[0], counter.writes - before[1])
    assert moved == (lines, lines * (1 + p.state_lines)), \
        f"{bench.where}: {workers} workers on {lines} lines moved {moved} memory lines " \
        f"(read, written); expected each line's n read once and one write-back of " \
        f"{1 + p.state_lines} lines"
    assert counters["COMPLETED"] == lines, f"{bench.where}: CNT_COMPLETED {counters}"
    for name, value in figures.items():
        dut._log.info("latency %-24s %3d cycles (request in to response out)", name, value)
    per = sum(moved) / total
    dut._log.info("%d workers x %d lines: %d contributions in %d cycles = %.3f per cycle, "
                  "%.3f memory lines per contribution", workers, lines, total, cycles,
                  total / cycles, per)
    out = os.environ.get("NF_FIGURES")
    if out:
        Path(out).write_text(json.dumps({
            "configuration": bench.where, "latency_cycles": figures,
            "streaming": {"workers": workers, "contributions": total, "cycles": int(cycles),
                          "accepted_per_cycle": total / cycles,
                          "memory_lines_per_contribution": per}}, indent=2) + "\n")
    await bench.finish()
