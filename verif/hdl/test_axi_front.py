"""The AXI4 front end alone (:class:`hdl.axi_front.AxiToCxl`) against a model of the
controller's CXL.mem channels that answers in request order: the requests each beat makes
(opcode, line address, byte enables), the R beats and B responses with their IDs, RLAST and
responses (poison gives SLVERR, MemData-NXM DECERR), and refused bursts between served ones."""

import numpy as np

from bench.sim import simulate
from hdl.axi import BURST_INCR, RESP_DECERR, RESP_OKAY, RESP_SLVERR
from hdl.axi_front import AxiToCxl
from spec.cxl import DRSOpcode, ReqOpcode, RwDOpcode
from spec.params import ControllerParams, DatapathParams

PARAMS = ControllerParams(DatapathParams(line_bits=64), address_bits=20, axi_id_bits=4)
LINE = PARAMS.datapath.line_bytes
SIZE = LINE.bit_length() - 1            # AxSIZE of a whole line
SEED = 58
CLOCKS = 400


def _controller(dut, requests, answers):
    """Takes every M2S request (recording ``(channel, opcode, address, byte_enable)`` in
    ``requests``) and answers each in order, a clock later, from ``answers`` (``"poison"``,
    ``"nxm"`` or ``None`` per read, in order)."""
    async def process(ctx):
        queue = []              # ("drs" | "ndr", payload fields)
        ctx.set(dut.m2s_req.ready, 1)
        ctx.set(dut.m2s_rwd.ready, 1)
        async for _, _, req_valid, req, rwd_valid, rwd, ndr, drs in ctx.tick().sample(
                dut.m2s_req.valid, dut.m2s_req.payload, dut.m2s_rwd.valid, dut.m2s_rwd.payload,
                dut.s2m_ndr.valid & dut.s2m_ndr.ready, dut.s2m_drs.valid & dut.s2m_drs.ready):
            if ndr or drs:
                queue.pop(0)
            if req_valid:
                requests.append(("req", ReqOpcode(req.opcode), req.address, None))
                answer = answers.pop(0)
                queue.append(("drs", {"data": req.address * 3,
                                      "poison": answer == "poison",
                                      "opcode": DRSOpcode.MEM_DATA_NXM if answer == "nxm"
                                      else DRSOpcode.MEM_DATA}))
            if rwd_valid:
                requests.append(("rwd", RwDOpcode(rwd.opcode), rwd.address, rwd.byte_enable))
                queue.append(("ndr", {}))
            head = queue[0] if queue else (None, {})
            ctx.set(dut.s2m_drs.valid, head[0] == "drs")
            ctx.set(dut.s2m_ndr.valid, head[0] == "ndr")
            if head[0] == "drs":
                for name, value in head[1].items():
                    ctx.set(getattr(dut.s2m_drs.payload, name), value)
    return process


def test_bursts_become_lines_and_answers_keep_order():
    dut = AxiToCxl(PARAMS, id_bits=4)
    axi = dut.s_axi
    requests = []
    # Reads: 3 lines (the second poisoned, the third NXM), a FIXED burst, 2 lines.
    answers = [None, "poison", "nxm", None, None]
    rng = np.random.default_rng(SEED)

    async def reads(ctx):
        for burst_id, line, length, burst in ((1, 0x10, 3, BURST_INCR), (2, 0x20, 2, 0),
                                              (3, 0x30, 2, BURST_INCR)):
            for name, value in (("arid", burst_id), ("araddr", line * LINE),
                                ("arlen", length - 1), ("arsize", SIZE), ("arburst", burst),
                                ("arvalid", 1)):
                ctx.set(getattr(axi, name), value)
            await ctx.tick().until(axi.arready)
            ctx.set(axi.arvalid, 0)

    async def writes(ctx):
        for burst_id, line, strobes, size in ((4, 0x40, [0xFF, 0x0F], SIZE), (5, 0x50, [0xFF], 2),
                                              (6, 0x60, [0xFF], SIZE)):
            for name, value in (("awid", burst_id), ("awaddr", line * LINE),
                                ("awlen", len(strobes) - 1), ("awsize", size),
                                ("awburst", BURST_INCR), ("awvalid", 1)):
                ctx.set(getattr(axi, name), value)
            await ctx.tick().until(axi.awready)
            ctx.set(axi.awvalid, 0)
            for k, strobe in enumerate(strobes):
                for name, value in (("wdata", line + k), ("wstrb", strobe),
                                    ("wlast", k == len(strobes) - 1), ("wvalid", 1)):
                    ctx.set(getattr(axi, name), value)
                await ctx.tick().until(axi.wready)
                ctx.set(axi.wvalid, 0)

    beats, responses = [], []

    async def responder(ctx):
        for _ in range(CLOCKS):
            rready, bready = bool(rng.random() < 0.6), bool(rng.random() < 0.6)
            ctx.set(axi.rready, rready)
            ctx.set(axi.bready, bready)
            if ctx.get(axi.rvalid) and rready:
                beats.append((ctx.get(axi.rid), ctx.get(axi.rresp), ctx.get(axi.rlast),
                              ctx.get(axi.rdata)))
            if ctx.get(axi.bvalid) and bready:
                responses.append((ctx.get(axi.bid), ctx.get(axi.bresp)))
            await ctx.tick()

    simulate(dut, reads, writes, responder, processes=[_controller(dut, requests, answers)])
    reads_made = [r for r in requests if r[0] == "req"]
    assert reads_made == [("req", ReqOpcode.MEM_RD, line << 1, None)
                          for line in (0x10, 0x11, 0x12, 0x30, 0x31)], \
        f"seed {SEED}: read requests {reads_made}"
    writes_made = [r for r in requests if r[0] == "rwd"]
    assert writes_made == [("rwd", RwDOpcode.MEM_WR, 0x40, 0xFF),
                           ("rwd", RwDOpcode.MEM_WR_PTL, 0x41, 0x0F),
                           ("rwd", RwDOpcode.MEM_WR, 0x60, 0xFF)], \
        f"seed {SEED}: write requests {writes_made} (the narrow burst must make none)"
    assert [(i, r, last) for i, r, last, _ in beats] == [
        (1, RESP_OKAY, 0), (1, RESP_SLVERR, 0), (1, RESP_DECERR, 1),
        (2, RESP_SLVERR, 0), (2, RESP_SLVERR, 1), (3, RESP_OKAY, 0), (3, RESP_OKAY, 1)], \
        f"seed {SEED}: R beats (id, resp, last) {[b[:3] for b in beats]}"
    assert beats[0][3] == (0x10 << 1) * 3 and beats[3][3] == 0, \
        f"seed {SEED}: R data {[hex(b[3]) for b in beats]}"
    assert responses == [(4, RESP_OKAY), (5, RESP_SLVERR), (6, RESP_OKAY)], \
        f"seed {SEED}: B responses {responses}"
