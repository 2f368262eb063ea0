"""In ``amaranth.sim``: device-memory error responses (which AxiRam never gives): a read error
answers the host with poisoned data, a write error still completes, and both set
``STATUS.MEM_ERROR``; a contribution whose state read failed changes nothing. And line writes
to the register window at every line width the controller takes: whole words written, the
rest untouched. And a reset in the middle of a write."""

import numpy as np
import pytest
from amaranth import ClockDomain, Module

from bench.regions import region_writes
from bench.sim import bus_write, read_fields, receive, send, simulate, write_fields
from hdl.axi import RESP_OKAY
from hdl.control import ControlRegisters
from hdl.controller import CxlMemController
from spec.cxl import DRSOpcode, NDROpcode, ReqOpcode, RwDOpcode
from spec.params import REGISTER_BITS, ControllerParams, DatapathParams, Mode
from spec.regmap import REGISTER_BYTES, Access, Region

#: The smallest controller these paths need: two slots (a reset scans them all before the
#: first request), two regions.
PARAMS = ControllerParams(DatapathParams(line_bits=64, counter_width=2, latency=1), regions=2,
                          address_bits=16, slots=2)
SLVERR = 0b10
FAILING_LINE = 0x40          # device memory answers SLVERR from this byte address
#: The byte addresses that answer SLVERR: one line's accumulator, from FAILING_LINE.
FAILING = range(FAILING_LINE, FAILING_LINE + PARAMS.accumulator_bytes_per_line)


def _run(testbench, params=PARAMS):
    dut = CxlMemController(params)
    writes = []             # (WDATA, WSTRB) of every W beat

    async def memory(ctx):
        """Always ready; every AR's beats, then every burst's B (once its AW and W beats are
        in: W may come first), in order, with their IDs; SLVERR inside FAILING."""
        axi = dut.axi
        for ready in (axi.arready, axi.awready, axi.wready):
            ctx.set(ready, 1)
        beats, bursts, responses = [], [], []    # R beats due; AWs; B responses due
        w_bursts = answered = 0                  # bursts whose W beats are in; Bs made
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
                bursts.append((awid, awaddr in FAILING))
            if wvalid:
                writes.append((wdata, wstrb))
                w_bursts += wlast
            while answered < min(len(bursts), w_bursts):
                responses.append(bursts[answered])
                answered += 1
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

    simulate(dut, host, processes=[memory])


async def _read(ctx, dut, name):
    """``{field: value}`` of register ``name``, read on the controller's CSR port."""
    return await read_fields(ctx, dut.csr, dut.regmap, name)


async def _status(ctx, dut):
    return await _read(ctx, dut, "STATUS")


def _check_response(what, payload, **want):
    """The fields ``want`` of a response ``payload``."""
    got = {name: getattr(payload, name) for name in want}
    assert got == want, f"{what}: response fields {got}, expected {want}"


def test_read_error_answers_poisoned_data():
    async def testbench(ctx, dut, writes):
        await send(ctx, dut.m2s_req, opcode=ReqOpcode.MEM_RD, tag=7,
                    address=FAILING_LINE // PARAMS.datapath.line_bytes << 1)
        drs = await receive(ctx, dut.s2m_drs)
        _check_response(f"MemRd of {FAILING_LINE:#x} (SLVERR)", drs,
                        opcode=DRSOpcode.MEM_DATA.value, poison=1, tag=7)
        assert (await _status(ctx, dut))["MEM_ERROR"], \
            f"STATUS.MEM_ERROR not set by a read error at {FAILING_LINE:#x}"
    _run(testbench)


def test_write_error_still_completes():
    async def testbench(ctx, dut, writes):
        await send(ctx, dut.m2s_rwd, opcode=RwDOpcode.MEM_WR, tag=9, byte_enable=0xFF,
                    address=FAILING_LINE // PARAMS.datapath.line_bytes, data=0x1234)
        ndr = await receive(ctx, dut.s2m_ndr)
        _check_response(f"MemWr of {FAILING_LINE:#x} (SLVERR)", ndr,
                        opcode=NDROpcode.CMP.value, tag=9)
        assert writes == [(0x1234, 0xFF)], \
            f"MemWr of {FAILING_LINE:#x}: W beats (data, strobe) {writes}, expected " \
            f"[(0x1234, 0xff)]"
        assert (await _status(ctx, dut))["MEM_ERROR"], \
            f"STATUS.MEM_ERROR not set by a write error at {FAILING_LINE:#x}"
    _run(testbench)


def test_memwr_writes_the_whole_line_whatever_its_mask():
    """MemWr writes every byte of its line whatever its byte enables say; MemWrPtl writes the
    bytes they enable (``docs/controller.md``, "Paths")."""
    async def testbench(ctx, dut, writes):
        for tag, opcode, strobe in ((1, RwDOpcode.MEM_WR, 0xFF), (2, RwDOpcode.MEM_WR_PTL, 0x0F)):
            await send(ctx, dut.m2s_rwd, opcode=opcode, tag=tag, byte_enable=0x0F, address=2,
                       data=0x1122334455667788)
            ndr = await receive(ctx, dut.s2m_ndr)
            _check_response(f"{opcode.name} with byte enables 0x0F", ndr,
                            opcode=NDROpcode.CMP.value, tag=tag)
            assert writes[-1:] == [(0x1122334455667788, strobe)], \
                f"{opcode.name} with byte enables 0x0F: W beats (data, strobe) {writes}, " \
                f"expected the last with strobe {strobe:#04x}"
    _run(testbench)


def test_fine_accesses_leave_mem_error_clear():
    async def testbench(ctx, dut, writes):
        await send(ctx, dut.m2s_req, opcode=ReqOpcode.MEM_RD, tag=1, address=0)
        drs = await receive(ctx, dut.s2m_drs)
        _check_response("MemRd of 0x0", drs, opcode=DRSOpcode.MEM_DATA.value, poison=0)
        assert not (await _status(ctx, dut))["MEM_ERROR"], \
            "STATUS.MEM_ERROR set after a MemRd of 0x0 that memory answered OKAY"
    _run(testbench)


async def _apply_gbinary_region(ctx, dut, *, acc):
    """Region 0: G-Binary, lines 0x1000-0x103F, accumulator at ``acc``; applied and enabled."""
    region = Region(True, Mode.GBINARY.value, 0x1000, 0x40, acc, threshold=1, expected=3)
    for offset, value in region_writes(dut.regmap, [region]):
        await bus_write(ctx, dut.csr, offset, value)
    await write_fields(ctx, dut.csr, dut.regmap, "CTRL", APPLY=1, ENABLE=1)
    apply_cycles = ControlRegisters(PARAMS).apply_cycles
    for _ in range(apply_cycles):
        if not (await _status(ctx, dut))["APPLY_BUSY"]:
            return
    raise AssertionError(f"STATUS.APPLY_BUSY still set after {apply_cycles} reads of STATUS")


def test_contribution_with_failed_state_read_changes_nothing():
    """A contribution whose fill (its line's n) reads an error is answered, not counted, and
    leaves no slot behind: a flush then writes nothing."""
    async def testbench(ctx, dut, writes):
        await _apply_gbinary_region(ctx, dut, acc=FAILING_LINE)
        await send(ctx, dut.m2s_rwd, opcode=RwDOpcode.MEM_WR, tag=3, byte_enable=0xFF,
                    address=0x1000 // PARAMS.datapath.line_bytes, data=0xFF)
        ndr = await receive(ctx, dut.s2m_ndr)
        _check_response("contribution to 0x1000 (its fill reads SLVERR)", ndr,
                        opcode=NDROpcode.CMP.value, tag=3)
        assert (await _status(ctx, dut))["MEM_ERROR"], \
            f"STATUS.MEM_ERROR not set by the failed fill from {FAILING_LINE:#x}"
        for name, what in (("CNT_ACCEPTED", "the contribution was counted"),
                           ("CNT_FILLS", "the failed fill took a slot")):
            count = (await _read(ctx, dut, name))["COUNT"]
            assert count == 0, f"{name}.COUNT reads {count}: {what}"
        await write_fields(ctx, dut.csr, dut.regmap, "CTRL", FLUSH=1, ENABLE=1)
        await ctx.tick().repeat(PARAMS.slots + 40)
        assert writes == [], f"a flush wrote the state back: {writes}"
    _run(testbench)


@pytest.mark.parametrize("line_bits", [32, 128, *(pytest.param(bits, marks=pytest.mark.slow)
                                                  for bits in (256, 512))])
def test_window_line_writes_take_whole_words_only(line_bits):
    """Two MemWrPtl to the window's line of region 0's registers, each with random data and a
    random byte mask (some words whole, some partial): each whole word is written to its
    register, every other register keeps its value, and MemRd returns the line."""
    params = ControllerParams(DatapathParams(line_bits=line_bits, counter_width=2, latency=1),
                              regions=2, address_bits=16, slots=2)
    words, regmap = line_bits // REGISTER_BITS, CxlMemController(params).regmap
    offset = regmap["R0_BASE_LO"].offset
    word_offsets = [offset + REGISTER_BYTES * w for w in range(words)]
    by_offset = {r.offset: r for r in regmap}
    writable = [sum(f.mask for f in by_offset[o].fields if f.access == Access.RW)
                if o in by_offset else 0 for o in word_offsets]
    whole = (1 << REGISTER_BYTES) - 1                    # byte enables of a whole word
    seed = line_bits
    rng = np.random.default_rng(seed)

    async def testbench(ctx, dut, writes):
        line = (params.window_base + offset) // params.datapath.line_bytes
        expected = [by_offset[o].reset if o in by_offset else 0 for o in word_offsets]
        for tag in (1, 2):
            values = [int(v) & mask for v, mask in
                      zip(rng.integers(0, 1 << REGISTER_BITS, words, dtype=np.uint64),
                          writable)]
            enables = [int(e) for e in rng.choice([whole, 0x0, 0x7, 0xE], words)]
            enables[tag % words] = whole                 # at least one whole word
            await send(ctx, dut.m2s_rwd, opcode=RwDOpcode.MEM_WR_PTL, tag=tag, address=line,
                        data=sum(v << REGISTER_BITS * w for w, v in enumerate(values)),
                        byte_enable=sum(e << REGISTER_BYTES * w for w, e in enumerate(enables)))
            ndr = await receive(ctx, dut.s2m_ndr)
            _check_response(f"seed {seed}, MemWrPtl {tag} to the window line {line:#x}", ndr,
                            opcode=NDROpcode.CMP.value, tag=tag)
            expected = [v if e == whole else old
                        for v, e, old in zip(values, enables, expected)]
            await send(ctx, dut.m2s_req, opcode=ReqOpcode.MEM_RD, tag=tag, address=line << 1)
            drs = await receive(ctx, dut.s2m_drs)
            got = [drs.data >> REGISTER_BITS * w & (1 << REGISTER_BITS) - 1
                   for w in range(words)]
            for w in range(words):
                assert got[w] == expected[w], \
                    f"seed {seed}, write {tag}, word {w} (offset {word_offsets[w]:#x}, byte " \
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
        for _ in range(60):             # until its W beat has gone, and a clock more
            await ctx.tick()
            if beats:
                break
        assert beats, f"{reset_clocks}-clock reset: the write's W beat never went"
        await ctx.tick()
        ctx.set(domain.rst, 1)
        for _ in range(reset_clocks):
            await ctx.posedge(domain.clk)
        ctx.set(domain.rst, 0)
        await ctx.tick().repeat(20)

    simulate(top, host, processes=[memory])
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
        _check_response("MemWr with byte enables 0x0F to 0x1000 (G-Binary)", ndr,
                        opcode=NDROpcode.CMP.value, tag=4)
        count = (await _read(ctx, dut, "CNT_ACCEPTED"))["COUNT"]
        assert count == 1, f"MemWr with byte enables 0x0F: CNT_ACCEPTED.COUNT reads {count}, " \
                           f"expected 1"
        assert not (await _status(ctx, dut))["PARTIAL"], "STATUS.PARTIAL set for a MemWr"
    _run(testbench)


def test_requests_with_nothing_to_wait_for_are_taken_one_per_clock():
    """MemInv requests (answered at once, no memory) offered on every clock, with every
    response taken at once, are taken on every clock once the first is: the decoder's credit
    loop (``hdl.credit.credit_loop``) has as many entries as it needs."""
    requests, clocks = 300, 400

    async def testbench(ctx, dut, writes):
        ctx.set(dut.s2m_ndr.ready, 1)
        taken, answered = [], 0
        for clock in range(clocks):
            ctx.set(dut.m2s_req.valid, len(taken) < requests)
            ctx.set(dut.m2s_req.payload.opcode, ReqOpcode.MEM_INV)
            ctx.set(dut.m2s_req.payload.tag, len(taken))
            if len(taken) < requests and ctx.get(dut.m2s_req.ready):
                taken.append(clock)
            answered += ctx.get(dut.s2m_ndr.valid)
            await ctx.tick()
        gaps = [(a, b) for a, b in zip(taken, taken[1:]) if b != a + 1]
        assert len(taken) == requests and not gaps, \
            f"{len(taken)} of {requests} MemInv taken; clocks between takes not 1: {gaps[:5]}"
        assert answered == requests, f"{answered} NDRs for {requests} MemInv"

    _run(testbench)
