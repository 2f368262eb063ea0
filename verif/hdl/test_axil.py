"""The AXI4-Lite register port alone (:class:`hdl.axil.AxiLiteRegisters`) in front of the
control registers (:class:`hdl.control.ControlRegisters`): reads and writes of every
register kind, the SLVERR of each refused access, a read and a write offered together, and
stalled responses."""

from amaranth import Module
from amaranth.lib import wiring

from bench.sim import simulate
from hdl.axi import RESP_OKAY, RESP_SLVERR
from hdl.axil import AxiLiteRegisters
from hdl.control import ControlRegisters
from hdl.csr import READ_LATENCY
from spec.params import ControllerParams, DatapathParams

PARAMS = ControllerParams(DatapathParams(line_bits=64), regions=2, address_bits=20)
#: Clocks within which an access must be answered.
ANSWER_CLOCKS = 20


class _Bench(wiring.Component):
    """The port and the registers, wired as :class:`hdl.top.ControllerTop` wires them."""

    def __init__(self):
        self.control = ControlRegisters(PARAMS)
        self.port = AxiLiteRegisters(self.control.regmap,
                                     address_bits=(PARAMS.window_bytes - 1).bit_length())
        super().__init__({"s_axil": self.port.signature.members["s_axil"]})

    def elaborate(self, platform):
        m = Module()
        m.submodules.control, m.submodules.port = self.control, self.port
        wiring.connect(m, wiring.flipped(self.s_axil), self.port.s_axil)
        wiring.connect(m, self.port.bus, self.control.bus)
        m.d.comb += self.port.locked_write.eq(self.control.locked_write)
        return m


async def _wait(ctx, valid, what):
    for _ in range(ANSWER_CLOCKS):
        if ctx.get(valid):
            return
        await ctx.tick()
    raise AssertionError(f"{what}: no answer in {ANSWER_CLOCKS} clocks")


async def _read(ctx, axil, offset, *, stall=0):
    """A read at byte ``offset``: ``(data, resp, clocks from the handshake to RVALID)``."""
    ctx.set(axil.araddr, offset)
    ctx.set(axil.arvalid, 1)
    await _wait(ctx, axil.arready, f"AR {offset:#x}")
    await ctx.tick()
    ctx.set(axil.arvalid, 0)
    clocks = 0
    while not ctx.get(axil.rvalid):
        await ctx.tick()
        clocks += 1
        assert clocks < ANSWER_CLOCKS, f"read {offset:#x}: no R"
    if stall:
        await ctx.tick().repeat(stall)
    data, resp = ctx.get(axil.rdata), ctx.get(axil.rresp)
    ctx.set(axil.rready, 1)
    await ctx.tick()
    ctx.set(axil.rready, 0)
    return data, resp, clocks


async def _write(ctx, axil, offset, value, strobe=0xF):
    """A write of ``value`` at byte ``offset``: its ``BRESP``."""
    for name, v in (("awaddr", offset), ("wdata", value), ("wstrb", strobe), ("awvalid", 1),
                    ("wvalid", 1)):
        ctx.set(getattr(axil, name), v)
    await _wait(ctx, axil.awready, f"AW {offset:#x}")
    assert ctx.get(axil.wready), "AW and W are taken together"
    await ctx.tick()
    ctx.set(axil.awvalid, 0)
    ctx.set(axil.wvalid, 0)
    await _wait(ctx, axil.bvalid, f"B {offset:#x}")
    resp = ctx.get(axil.bresp)
    ctx.set(axil.bready, 1)
    await ctx.tick()
    ctx.set(axil.bready, 0)
    return resp


def test_register_port_answers_and_refuses():
    dut = _Bench()
    regmap = dut.control.regmap
    axil = dut.s_axil
    used = {reg.offset for reg in regmap}
    hole = next(offset for offset in range(0, regmap.window_bytes, 4) if offset not in used)
    base = regmap["R1_BASE_LO"].offset

    async def testbench(ctx):
        data, resp, clocks = await _read(ctx, axil, regmap["ID"].offset)
        assert (data, resp) == (regmap["ID"].reset, RESP_OKAY), f"ID read {data:#x}, {resp}"
        assert clocks == READ_LATENCY + 1, f"a read answered {clocks} clocks after AR"
        assert await _read(ctx, axil, hole) == (0, RESP_SLVERR, READ_LATENCY + 1), \
            f"read of {hole:#x}: no register there"
        assert await _write(ctx, axil, hole, 1) == RESP_SLVERR, f"write of {hole:#x}"
        assert await _write(ctx, axil, regmap["ID"].offset, 0) == RESP_SLVERR, "ID is read-only"
        assert await _write(ctx, axil, base, 0x40) == RESP_OKAY, "R1_BASE_LO write"
        assert await _write(ctx, axil, base, 0x80, strobe=0x3) == RESP_SLVERR, "partial write"
        assert (await _read(ctx, axil, base))[:2] == (0x40, RESP_OKAY), "R1_BASE_LO changed"
        ctrl = regmap["CTRL"]
        assert await _write(ctx, axil, ctrl.offset, ctrl.pack(LOCK=1)) == RESP_OKAY, "LOCK"
        assert await _write(ctx, axil, base, 0x80) == RESP_SLVERR, "a write while locked"
        assert (await _read(ctx, axil, base, stall=3))[:2] == (0x40, RESP_OKAY), \
            "a locked write landed (or a stalled R lost its data)"
        status = regmap["STATUS"].unpack((await _read(ctx, axil, regmap["STATUS"].offset))[0])
        assert status["LOCKED_WRITE"], f"STATUS.LOCKED_WRITE not set: {status}"
        # A read and a write offered on one clock: the read goes first, then the write.
        for name, v in (("araddr", base), ("arvalid", 1), ("awaddr", regmap["R0_BASE_LO"].offset),
                        ("wdata", 0x100), ("wstrb", 0xF), ("awvalid", 1), ("wvalid", 1)):
            ctx.set(getattr(axil, name), v)
        assert ctx.get(axil.arready) and not ctx.get(axil.awready), "the read goes first"
        await ctx.tick()
        ctx.set(axil.arvalid, 0)
        await _wait(ctx, axil.rvalid, "R of the read offered with a write")
        ctx.set(axil.rready, 1)
        await ctx.tick()
        ctx.set(axil.rready, 0)
        await _wait(ctx, axil.awready, "AW after the read")
        await ctx.tick()
        ctx.set(axil.awvalid, 0)
        ctx.set(axil.wvalid, 0)
        await _wait(ctx, axil.bvalid, "B of the write offered with a read")
        assert ctx.get(axil.bresp) == RESP_SLVERR, "R0_BASE_LO is locked too"

    simulate(dut, testbench)
