"""The ingress (hdl.ingress): every request out once, in each channel's order, one per clock;
a write's line on ``line`` exactly ``LINE_LAG`` clocks after its request, under random offers
and backpressure."""

import numpy as np
import pytest

from bench.sim import simulate
from hdl.ingress import Ingress, Operation
from spec.cxl import ReqOpcode, RwDOpcode
from spec.params import ControllerParams, DatapathParams

CONFIGS = [ControllerParams(DatapathParams(line_bits=64, counter_width=4, latency=1),
                            regions=2, address_bits=20, slots=4, queue_depth=2),
           ControllerParams(DatapathParams(line_bits=128, counter_width=2, latency=1),
                            regions=2, address_bits=24, slots=4, queue_depth=8)]


@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: p.name)
@pytest.mark.parametrize("seed", [1, 2])
def test_requests_in_order_and_lines_line_lag_later(params, seed):
    rng = np.random.default_rng(seed)
    p = params.datapath
    dut = Ingress(params)
    count = 150
    writes = [{"tag": k, "address": int(rng.integers(0, 1 << 12)),
               "data": int(rng.integers(0, 1 << 62)) << (p.line_bits - 62),
               "byte_enable": int(rng.integers(0, 1 << p.line_bytes)),
               "whole": bool(rng.random() < 0.5)} for k in range(count)]
    reads = [{"tag": 1000 + k, "address": int(rng.integers(0, 1 << 12))}
             for k in range(count)]
    offer_rwd, offer_req = rng.random(3000) < 0.6, rng.random(3000) < 0.6
    take = rng.random(3000) < 0.7
    taken, lines, errors = [], {}, []

    async def bench(ctx):
        sent = {"rwd": 0, "req": 0}
        for clock in range(len(take)):
            w = writes[sent["rwd"]] if sent["rwd"] < count else None
            r = reads[sent["req"]] if sent["req"] < count else None
            ctx.set(dut.m2s_rwd.valid, bool(offer_rwd[clock]) and w is not None)
            if w is not None:
                ctx.set(dut.m2s_rwd.payload.opcode,
                        RwDOpcode.MEM_WR if w["whole"] else RwDOpcode.MEM_WR_PTL)
                for name in ("tag", "address", "data", "byte_enable"):
                    ctx.set(getattr(dut.m2s_rwd.payload, name), w[name])
            ctx.set(dut.m2s_req.valid, bool(offer_req[clock]) and r is not None)
            if r is not None:
                ctx.set(dut.m2s_req.payload.opcode, ReqOpcode.MEM_RD)
                ctx.set(dut.m2s_req.payload.tag, r["tag"])
                ctx.set(dut.m2s_req.payload.address, r["address"] << 1)
            ctx.set(dut.request.ready, bool(take[clock]))
            for name in ("rwd", "req"):
                channel = getattr(dut, f"m2s_{name}")
                if ctx.get(channel.valid) and ctx.get(channel.ready):
                    sent[name] += 1
            if ctx.get(dut.request.valid) and take[clock]:
                request = ctx.get(dut.request.payload)
                taken.append((clock, request.operation, request.tag, request.address))
            lines[clock] = ctx.get(dut.line)
            await ctx.tick()

    simulate(dut, bench)
    line_bytes = p.line_bytes
    writes_out = [t for t in taken if t[1] == Operation.WRITE]
    reads_out = [t for t in taken if t[1] == Operation.READ]
    assert [t[2] for t in writes_out] == list(range(len(writes_out))), \
        f"seed {seed}: write tags out of order: {[t[2] for t in writes_out][:20]}"
    assert [t[2] for t in reads_out] == [1000 + k for k in range(len(reads_out))], \
        f"seed {seed}: read tags out of order: {[t[2] for t in reads_out][:20]}"
    assert len(writes_out) > count // 2 and len(reads_out) > count // 2, \
        f"seed {seed}: only {len(writes_out)} writes and {len(reads_out)} reads came out"
    assert len({t[0] for t in taken}) == len(taken), f"seed {seed}: two requests on one clock"
    for clock, _, tag, address in writes_out:
        w = writes[tag]
        if address != w["address"] * line_bytes:
            errors.append(f"write tag {tag}: address {address:#x}, sent line {w['address']:#x}")
        line = lines.get(clock + Ingress.LINE_LAG)
        if line is None:
            continue
        enables = (1 << line_bytes) - 1 if w["whole"] else w["byte_enable"]
        if line.data != w["data"] or line.byte_enable != enables:
            errors.append(f"write tag {tag}, taken on clock {clock}: line on clock "
                          f"{clock + Ingress.LINE_LAG} has data {line.data:#x} enables "
                          f"{line.byte_enable:#x}, sent {w['data']:#x} / {enables:#x}")
    assert not errors, f"{params.name}, seed {seed}:\n" + "\n".join(errors[:10])
