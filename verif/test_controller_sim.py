"""In ``amaranth.sim``: device-memory error responses (which AxiRam never gives): a read error
answers the host with poisoned data, a write error still completes, and both set
``STATUS.MEM_ERROR``; a contribution whose state read failed changes nothing. And line writes
to the register window at every line width the controller takes: whole words written, the
rest untouched. And a reset in the middle of a write."""

import numpy as np
import pytest
from amaranth import ClockDomain, Module
from amaranth.sim import Simulator

from hdl.axi import RESP_OKAY
from hdl.control import ControlRegisters
from hdl.controller import CxlMemController
from hdl.csr import READ_LATENCY
from hdl.cxl import DRSOpcode, NDROpcode, ReqOpcode, RwDOpcode
from hdl.params import ControllerParams, DatapathParams
from verif.sim_streams import receive, send

PARAMS = ControllerParams(DatapathParams(line_bits=64, counter_width=2, latency=1), regions=2,
                          address_bits=16)
SLVERR = 0b10
FAILING_LINE = 0x40          # device memory answers SLVERR from this byte address
#: The byte addresses that answer SLVERR: one line's accumulator, from FAILING_LINE.
FAILING = range(FAILING_LINE, FAILING_LINE + PARAMS.accumulator_bytes_per_line)


def _run(testbench, params=PARAMS):
    dut = CxlMemController(params)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    writes = []             # (WDATA, WSTRB) of every W beat

    async def memory(ctx):
        """Always ready; every AR's beats, then every burst's B (once its W beats are in), in
        order, with their IDs; SLVERR inside FAILING."""
        axi = dut.axi
        for ready in (axi.arready, axi.awready, axi.wready):
            ctx.set(ready, 1)
        beats, bursts, responses = [], [], []    # R beats due; AWs; B responses due
        r_out = b_out = None                     # what this process drove for the last edge
        async for sample in ctx.tick().sample(
                axi.arvalid, axi.araddr, axi.arlen, axi.arid, axi.awvalid, axi.awaddr,
                axi.awid, axi.wvalid, axi.wdata, axi.wstrb, axi.wlast):
            arvalid, araddr, arlen, arid, awvalid, awaddr, awid, wvalid, wdata, wstrb, wlast = \
                sample[2:]
            if r_out is not None:
                beats.pop(0)
            if b_out is not None:
                responses.pop(0)
            if arvalid:
                beats += [(arid, araddr + k * params.datapath.line_bytes, k == arlen)
                          for k in range(arlen + 1)]
            if awvalid:
                bursts.append([awid, awaddr, False])
            if wvalid:
                writes.append((wdata, wstrb))
                burst = next(b for b in bursts if b[1] is not None)
                burst[2] = burst[2] or (burst[1] in FAILING)
                if wlast:
                    responses.append((burst[0], burst[2]))
                    burst[1] = None
            r_out = beats[0] if beats else None
            b_out = responses[0] if responses else None
            ctx.set(axi.rvalid, r_out is not None)
            if r_out is not None:
                ctx.set(axi.rid, r_out[0])
                ctx.set(axi.rlast, r_out[2])
                ctx.set(axi.rresp, SLVERR if r_out[1] in FAILING else RESP_OKAY)
            ctx.set(axi.bvalid, b_out is not None)
            if b_out is not None:
                ctx.set(axi.bid, b_out[0])
                ctx.set(axi.bresp, SLVERR if b_out[1] else RESP_OKAY)

    async def host(ctx):
        await testbench(ctx, dut, writes)

    sim.add_process(memory)
    sim.add_testbench(host)
    sim.run()


async def _status(ctx, dut):
    return await _read(ctx, dut, "STATUS")


async def _read(ctx, dut, name):
    ctx.set(dut.csr.addr, dut.regmap[name].offset // 4)
    ctx.set(dut.csr.r_stb, 1)
    await ctx.tick()
    ctx.set(dut.csr.r_stb, 0)
    await ctx.tick().repeat(READ_LATENCY - 1)
    return ctx.get(dut.csr.r_data)


def _mem_error(dut, status):
    return bool(status & dut.regmap["STATUS"].field("MEM_ERROR").mask)


def test_read_error_answers_poisoned_data():
    async def testbench(ctx, dut, writes):
        await send(ctx, dut.m2s_req, opcode=ReqOpcode.MEM_RD, tag=7,
                    address=FAILING_LINE // PARAMS.datapath.line_bytes << 1)
        drs = await receive(ctx, dut.s2m_drs)
        assert (drs.opcode, drs.poison, drs.tag) == (DRSOpcode.MEM_DATA.value, 1, 7), drs
        assert _mem_error(dut, await _status(ctx, dut)), "STATUS.MEM_ERROR not set"
    _run(testbench)


def test_write_error_still_completes():
    async def testbench(ctx, dut, writes):
        await send(ctx, dut.m2s_rwd, opcode=RwDOpcode.MEM_WR, tag=9, byte_enable=0xFF,
                    address=FAILING_LINE // PARAMS.datapath.line_bytes, data=0x1234)
        ndr = await receive(ctx, dut.s2m_ndr)
        assert (ndr.opcode, ndr.tag) == (NDROpcode.CMP.value, 9), ndr
        assert writes == [(0x1234, 0xFF)], writes
        assert _mem_error(dut, await _status(ctx, dut)), "STATUS.MEM_ERROR not set"
    _run(testbench)


def test_memwr_writes_the_whole_line_whatever_its_mask():
    """MemWr writes every byte of its line whatever its byte enables say; MemWrPtl writes the
    bytes they enable (``docs/controller.md``, "Paths")."""
    async def testbench(ctx, dut, writes):
        for tag, opcode, strobe in ((1, RwDOpcode.MEM_WR, 0xFF), (2, RwDOpcode.MEM_WR_PTL, 0x0F)):
            await send(ctx, dut.m2s_rwd, opcode=opcode, tag=tag, byte_enable=0x0F, address=2,
                       data=0x1122334455667788)
            ndr = await receive(ctx, dut.s2m_ndr)
            assert (ndr.opcode, ndr.tag) == (NDROpcode.CMP.value, tag), ndr
            assert writes[-1:] == [(0x1122334455667788, strobe)], \
                f"{opcode.name} with byte enables 0x0F: W beats (data, strobe) {writes}, " \
                f"expected the last with strobe {strobe:#04x}"
    _run(testbench)


def test_fine_accesses_leave_mem_error_clear():
    async def testbench(ctx, dut, writes):
        await send(ctx, dut.m2s_req, opcode=ReqOpcode.MEM_RD, tag=1, address=0)
        drs = await receive(ctx, dut.s2m_drs)
        assert (drs.opcode, drs.poison) == (DRSOpcode.MEM_DATA.value, 0), drs
        assert not _mem_error(dut, await _status(ctx, dut)), "STATUS.MEM_ERROR set"
    _run(testbench)


async def _csr_write(ctx, dut, reg, value):
    ctx.set(dut.csr.addr, dut.regmap[reg].offset // 4)
    ctx.set(dut.csr.w_data, value)
    ctx.set(dut.csr.w_stb, 1)
    await ctx.tick()
    ctx.set(dut.csr.w_stb, 0)


async def _apply_gbinary_region(ctx, dut, *, acc):
    """Region 0: G-Binary, lines 0x1000-0x103F, accumulator at ``acc``; applied and enabled."""
    ctrl, cfg = dut.regmap["CTRL"], dut.regmap["R0_CFG"]
    for reg, value in (("R0_BASE_LO", 0x1000), ("R0_SIZE_LO", 0x40),
                       ("R0_ACC_LO", acc), ("R0_AGG", 1 | 3 << 16),
                       ("R0_CFG", cfg.field("ENABLE").mask | 1 << cfg.field("MODE").offset),
                       ("CTRL", ctrl.field("APPLY").mask | ctrl.field("ENABLE").mask)):
        await _csr_write(ctx, dut, reg, value)
    busy = dut.regmap["STATUS"].field("APPLY_BUSY").mask
    for _ in range(ControlRegisters(PARAMS).apply_cycles):
        if not await _status(ctx, dut) & busy:
            return
    raise AssertionError("APPLY still busy")


def test_contribution_with_failed_state_read_changes_nothing():
    """A contribution whose fill (its line's n) reads an error is answered, not counted, and
    leaves no slot behind: a flush then writes nothing."""
    async def testbench(ctx, dut, writes):
        await _apply_gbinary_region(ctx, dut, acc=FAILING_LINE)
        await send(ctx, dut.m2s_rwd, opcode=RwDOpcode.MEM_WR, tag=3, byte_enable=0xFF,
                    address=0x1000 // PARAMS.datapath.line_bytes, data=0xFF)
        ndr = await receive(ctx, dut.s2m_ndr)
        assert (ndr.opcode, ndr.tag) == (NDROpcode.CMP.value, 3), ndr
        assert _mem_error(dut, await _status(ctx, dut)), "STATUS.MEM_ERROR not set"
        assert await _read(ctx, dut, "CNT_ACCEPTED") == 0, "the contribution was counted"
        assert await _read(ctx, dut, "CNT_FILLS") == 0, "the failed fill took a slot"
        await _csr_write(ctx, dut, "CTRL", dut.regmap["CTRL"].field("FLUSH").mask
                         | dut.regmap["CTRL"].field("ENABLE").mask)
        await ctx.tick().repeat(PARAMS.slots + 40)
        assert writes == [], f"a flush wrote the state back: {writes}"
    _run(testbench)


@pytest.mark.parametrize("line_bits", [32, 128, 256, 512])
def test_window_line_writes_take_whole_words_only(line_bits):
    """Two MemWrPtl to the window's line of region 0's registers, each with random data and a
    random byte mask (some words whole, some partial): each whole word is written to its
    register, every other register keeps its value, and MemRd returns the line."""
    params = ControllerParams(DatapathParams(line_bits=line_bits, counter_width=2, latency=1),
                              regions=2, address_bits=16)
    words, regmap = line_bits // 32, CxlMemController(params).regmap
    offset = regmap["R0_BASE_LO"].offset
    by_offset = {r.offset: r for r in regmap}
    writable = [sum(f.mask for f in by_offset[offset + 4 * w].fields if f.access == "RW")
                if offset + 4 * w in by_offset else 0 for w in range(words)]
    seed = line_bits
    rng = np.random.default_rng(seed)

    async def testbench(ctx, dut, writes):
        line = (params.window_base + offset) // params.datapath.line_bytes
        expected = [by_offset[offset + 4 * w].reset if offset + 4 * w in by_offset else 0
                    for w in range(words)]
        for tag in (1, 2):
            values = [int(v) & mask for v, mask in
                      zip(rng.integers(0, 1 << 32, words, dtype=np.uint64), writable)]
            enables = [int(e) for e in rng.choice([0xF, 0x0, 0x7, 0xE], words)]
            enables[tag % words] = 0xF                   # at least one whole word
            await send(ctx, dut.m2s_rwd, opcode=RwDOpcode.MEM_WR_PTL, tag=tag, address=line,
                        data=sum(v << 32 * w for w, v in enumerate(values)),
                        byte_enable=sum(e << 4 * w for w, e in enumerate(enables)))
            ndr = await receive(ctx, dut.s2m_ndr)
            assert (ndr.opcode, ndr.tag) == (NDROpcode.CMP.value, tag), ndr
            expected = [v if e == 0xF else old for v, e, old in zip(values, enables, expected)]
            await send(ctx, dut.m2s_req, opcode=ReqOpcode.MEM_RD, tag=tag, address=line << 1)
            drs = await receive(ctx, dut.s2m_drs)
            got = [drs.data >> 32 * w & 0xFFFF_FFFF for w in range(words)]
            for w in range(words):
                assert got[w] == expected[w], \
                    f"seed {seed}, write {tag}, word {w} (offset {offset + 4 * w:#x}, byte " \
                    f"enables {enables[w]:#x}): read {got[w]:#010x}, expected " \
                    f"{expected[w]:#010x}"
    _run(testbench, params)


@pytest.mark.parametrize("reset_clocks", [1, 2])
def test_reset_during_a_write_sends_no_line_after_it(reset_clocks):
    """A reset while an identity write waits for its response (which never comes) ends it:
    the one line written before the reset is the only W beat, even with a reset of one
    clock."""
    dut = CxlMemController(PARAMS)
    top = Module()
    top.domains.sync = domain = ClockDomain("sync")
    top.submodules.dut = dut
    sim = Simulator(top)
    sim.add_clock(1e-8)
    beats = []          # (clock, WDATA, in reset)

    async def memory(ctx):
        for ready in (dut.axi.awready, dut.axi.wready):
            ctx.set(ready, 1)
        clock = 0
        async for _, wvalid, wdata, reset in ctx.posedge(domain.clk).sample(
                dut.axi.wvalid, dut.axi.wdata, domain.rst):     # tick() stops at a reset
            if wvalid:
                beats.append((clock, wdata, reset))
            clock += 1

    async def host(ctx):
        await send(ctx, dut.m2s_rwd, opcode=RwDOpcode.MEM_WR, tag=3, byte_enable=0xFF,
                   address=5, data=0x1122334455667788)
        await ctx.tick().repeat(15)
        ctx.set(domain.rst, 1)
        for _ in range(reset_clocks):
            await ctx.posedge(domain.clk)
        ctx.set(domain.rst, 0)
        await ctx.tick().repeat(20)

    sim.add_process(memory)
    sim.add_testbench(host)
    sim.run()
    assert [data for _, data, _ in beats] == [0x1122334455667788], \
        f"{reset_clocks}-clock reset: W beats (clock, data, in reset) {beats}"


def test_memwr_with_a_partial_mask_contributes_its_whole_line():
    """A MemWr to an aggregating region contributes whatever its byte enables say (it writes
    the whole line): it is accepted, and STATUS.PARTIAL stays clear."""
    async def testbench(ctx, dut, writes):
        await _apply_gbinary_region(ctx, dut, acc=0x2000)
        await send(ctx, dut.m2s_rwd, opcode=RwDOpcode.MEM_WR, tag=4, byte_enable=0x0F,
                   address=0x1000 // PARAMS.datapath.line_bytes, data=0xFF)
        ndr = await receive(ctx, dut.s2m_ndr)
        assert (ndr.opcode, ndr.tag) == (NDROpcode.CMP.value, 4), ndr
        assert await _read(ctx, dut, "CNT_ACCEPTED") == 1, "MemWr with byte enables 0x0F " \
                                                             "was not accepted"
        partial = dut.regmap["STATUS"].field("PARTIAL").mask
        assert not await _status(ctx, dut) & partial, "STATUS.PARTIAL set for a MemWr"
    _run(testbench)
