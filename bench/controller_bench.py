"""The controller's cocotb test bench: clock, reset, device memory, the CXL.mem host and the
driver, shared by the system regression (:mod:`verif.hdl.cocotb_controller`) and the paper's
experiments (:mod:`scripts.cocotb_paper`)."""

import json
import logging
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam, AxiResp

from bench.axi_host import AxiHost
from bench.cxl_host import CxlHost
from bench.streams import ChannelPauses, clock_and_reset, randomly
from driver import NeuronFabric
from golden.device import DeviceModel
from hdl.generate import controller_params
from spec.cxl import DRSOpcode, NDROpcode
from spec.formats import lines_to_small_fields, ternary_to_lines
from spec.params import Mode
from spec.regmap import COUNTERS, STATUS_FLAGS, Region

__all__ = ["CLOCK_NS", "TRAFFIC", "ControllerBench", "AxiCounter", "contribution"]


CLOCK_NS = 10

#: Where :meth:`ControllerBench.regions` puts its regions and their accumulators.
_REGION_SPACING, _ACC_BASE, _ACC_SPACING = 0x10_0000, 0x40_0000, 0x40_0000

TRAFFIC = {   # host idle, host response stall, pause on every AXI channel
    "full_rate": (0.0, 0.0, 0.0),
    "host_idle_and_backpressure": (0.3, 0.4, 0.0),
    "memory_latency_and_backpressure": (0.0, 0.0, 0.5),
    "everything_random": (0.3, 0.3, 0.3),
}


class ControllerBench:
    """Clock, reset, device memory, the host and the driver: of ``nf_controller`` (``host``
    "cxl": a :class:`bench.cxl_host.CxlHost` on its CXL.mem channels) or of ``nf_axi_reducer``
    ("axi": a :class:`bench.axi_host.AxiHost` on its AXI4 subordinate port, whose channels
    pause at random with the host's stall of ``traffic``).

    ``memory``, if given, makes the device-memory model after reset from the DUT and
    ``pause=``, the per-channel pause pattern of ``traffic`` (``None``: never): a
    :func:`bench.streams.run_clocked` part, which the host's coroutine clocks, such as
    :class:`bench.axi_memory.TimedMemory`. Default: cocotbext-axi's ``AxiRam``, paused at
    random on every channel per ``traffic``.
    """

    def __init__(self, dut, rng, traffic="full_rate", memory=None, host="cxl"):
        facts = json.loads(Path(os.environ["NF_FACTS"]).read_text())
        self.params = controller_params(facts)
        self.dut = dut
        host_idle, host_stall, self._memory_pause = TRAFFIC[traffic]
        self._rng = rng
        self._memory = memory
        self.ram = None
        line_bits = self.params.datapath.line_bits
        if host == "axi":
            self.host = AxiHost(dut, dut.aclk, line_bits,
                                pause=randomly(rng, host_stall) if host_stall else None)
        else:
            self.host = CxlHost(dut, dut.aclk, line_bits,
                                idle=(randomly(rng, host_idle), randomly(rng, host_idle)),
                                stall=(randomly(rng, host_stall), randomly(rng, host_stall)))
        self.device = NeuronFabric(self.host, self.params)
        self.line_bytes = self.params.datapath.line_bytes
        self.where = (f"{self.params.datapath.name} regions={self.params.regions}, {traffic}, "
                      f"COCOTB_RANDOM_SEED={os.environ.get('COCOTB_RANDOM_SEED', '?')}")
        dut._log.info("%s", self.where)

    async def start(self):
        # The register port's manager holds its valids low from reset on.
        self.registers = AxiLiteMaster(AxiLiteBus.from_prefix(self.dut, "s_axil"), self.dut.aclk,
                                       self.dut.aresetn, reset_active_level=False)
        self.registers.write_if.log.setLevel(logging.WARNING)
        self.registers.read_if.log.setLevel(logging.WARNING)
        # An AXI4 subordinate holds RVALID and BVALID low from reset on; the memory model takes
        # the port over after reset, and the controller registers read beats from the start.
        self.dut.m_axi_rvalid.value = 0
        self.dut.m_axi_bvalid.value = 0
        await clock_and_reset(self.dut, CLOCK_NS, clock="aclk", reset="aresetn",
                              active_low=True)
        # The memory model samples every handshake from its first clock; outputs decoded from
        # the engine state are defined from the second clock after reset (see hdl.controller).
        await ClockCycles(self.dut.aclk, 2)
        pause = randomly(self._rng, self._memory_pause) if self._memory_pause else None
        if self._memory:
            self.ram = self._memory(self.dut, pause=pause)
            parts = [self.ram]
        else:
            self.ram = AxiRam(AxiBus.from_prefix(self.dut, "m_axi"), self.dut.aclk,
                              self.dut.aresetn, reset_active_level=False,
                              size=1 << self.params.address_bits)
            for side in (self.ram.write_if, self.ram.read_if):
                side.log.setLevel(logging.WARNING)      # not a line per burst
            parts = [] if pause is None else [ChannelPauses(
                [self.ram.write_if.aw_channel, self.ram.write_if.w_channel,
                 self.ram.write_if.b_channel, self.ram.read_if.ar_channel,
                 self.ram.read_if.r_channel], pause)]
        self.host.start(cocotb.start_soon, parts)
        await self.device.identify()

    async def csr_write(self, name, value):
        """Write register ``name`` through the AXI4-Lite register port (not the window);
        returns the response (``AxiResp``)."""
        return await self.csr_write_at(self.device.regmap[name].offset, value)

    async def csr_write_at(self, offset, value, *, length=4):
        """Write the ``length`` low bytes of ``value`` from byte ``offset`` of the register
        port (``WSTRB`` has a bit per byte written); returns the response."""
        response = await self.registers.write(offset, value.to_bytes(4, "little")[:length])
        return AxiResp(response.resp)

    async def csr_read(self, name):
        """Read register ``name`` through the AXI4-Lite register port: it answers at once, even
        while the engine is busy (a clear, say), which the window cannot."""
        value, _ = await self.csr_read_at(self.device.regmap[name].offset)
        return value

    async def csr_read_at(self, offset):
        """Read the word at byte ``offset`` of the register port: ``(value, AxiResp)``."""
        response = await self.registers.read(offset, 4)
        return int.from_bytes(response.data, "little"), AxiResp(response.resp)

    def regions(self, rng, lines):
        """A G-Binary, a G-Ternary and an identity region of ``lines`` lines each, at fixed
        bases (``_REGION_SPACING`` apart, accumulators from ``_ACC_BASE``,
        ``_ACC_SPACING`` apart)."""
        cap = self.params.datapath.capacity
        size = lines * self.line_bytes
        most = min(_REGION_SPACING // self.line_bytes,
                   _ACC_SPACING // self.params.accumulator_bytes_per_line)
        if not 1 <= lines <= most:
            raise ValueError(f"{self.where}: {lines} lines per region; the bench's layout "
                             f"holds 1 to {most} at {self.line_bytes}-byte lines")
        return [
            Region(True, Mode.GBINARY.value, _REGION_SPACING, size, _ACC_BASE, 1, cap),
            Region(True, Mode.GTERNARY.value, 2 * _REGION_SPACING, size,
                   _ACC_BASE + _ACC_SPACING, int(rng.integers(1, cap + 1)), cap),
            Region(True, Mode.IDENTITY.value, 3 * _REGION_SPACING, size),
        ]

    async def configure(self, regions):
        await self.device.configure(regions)
        await self.device.enable()
        return DeviceModel(self.params, regions)

    async def finish(self, model=None):
        """Wait for silence; check no stray responses and, with ``model``, every counter and
        flag the golden model also keeps (:attr:`spec.regmap.Event.golden`) against its
        events."""
        await ClockCycles(self.dut.aclk, 20)
        assert self.host.idle, f"{self.where}: requests still unanswered: {self.host.pending}"
        assert not self.host.errors, f"{self.where}: " + "; ".join(self.host.errors)
        memory_errors = getattr(self.ram, "errors", [])     # TimedMemory's; AxiRam keeps none
        assert not memory_errors, f"{self.where}: memory model: " + "; ".join(memory_errors)
        if model is None:
            return
        counters = await self.device.counters()
        for counter in COUNTERS:
            if counter.golden is not None:
                assert counters[counter.name] == model.events[counter.golden], (
                    f"{self.where}: CNT_{counter.name} reads {counters[counter.name]}, golden "
                    f"{counter.golden} {model.events[counter.golden]}")
        status = await self.device.status()
        for flag in STATUS_FLAGS:
            if flag.golden is not None:
                assert status[flag.name] == bool(model.events[flag.golden]), (
                    f"{self.where}: STATUS.{flag.name} is {status[flag.name]}, golden has "
                    f"{model.events[flag.golden]} {flag.golden} events")

    def check_line(self, what, address, got, expected, mode=None):
        """Assert that line ``got`` (bytes) read at ``address`` is golden's ``expected``; the
        message names the first bytes that differ, or, for a result line of an aggregating
        ``mode``, the first lanes that differ and their codes."""
        got, expected = np.frombuffer(bytes(got), np.uint8), np.asarray(expected, np.uint8)
        if (got == expected).all():
            return
        where = f"{self.where}: {what} at {address:#x}"
        if mode is None:
            differ = np.flatnonzero(got != expected)
            raise AssertionError(f"{where}: bytes {differ[:8].tolist()} differ; got "
                                 f"{got[differ[:8]].tolist()}, golden "
                                 f"{expected[differ[:8]].tolist()}")
        p = self.params.datapath
        lanes = p.gbinary_lanes if Mode(mode) == Mode.GBINARY else p.gternary_lanes
        got_codes, golden_codes = (lines_to_small_fields(line[None], p.line_bits // lanes)[0]
                                   for line in (got, expected))
        differ = np.flatnonzero(got_codes != golden_codes)
        raise AssertionError(f"{where}: {Mode(mode).name} lanes {differ[:8].tolist()} differ; "
                             f"got {got_codes[differ[:8]].tolist()}, golden "
                             f"{golden_codes[differ[:8]].tolist()}")

    async def read_ok(self, address):
        response = await self.host.read(address)
        assert (response.channel, response.opcode, response.poison) == \
            ("drs", DRSOpcode.MEM_DATA.value, 0), f"{self.where}: read {address:#x}: {response}"
        return response.data

    async def write_ok(self, address, data, byte_enable=None):
        response = await self.host.write(address, data, byte_enable=byte_enable)
        assert (response.channel, response.opcode) == ("ndr", NDROpcode.CMP.value), \
            f"{self.where}: write {address:#x}: {response}"


def contribution(rng, params, mode):
    """A random full contribution line of ``mode`` (ternary lines hold no invalid code)."""
    p = params.datapath
    if mode == Mode.GBINARY.value:
        return rng.integers(0, 256, p.line_bytes, dtype=np.uint8)
    return ternary_to_lines(rng.integers(-1, 2, (1, p.gternary_lanes)))[0]


class AxiCounter:
    """Counts the lines (data beats) read and written on the AXI port and times each read
    burst's round trip (AR handshake to its last R beat)."""

    def __init__(self, dut):
        self.dut = dut
        self.reads = self.writes = 0
        self.memory_cycles = []

    async def run(self):
        dut, started = self.dut, []
        while True:
            await RisingEdge(dut.aclk)
            await ReadOnly()
            now = get_sim_time("ns") // CLOCK_NS
            if dut.m_axi_arvalid.value and dut.m_axi_arready.value:
                started.append(now)
            if dut.m_axi_wvalid.value and dut.m_axi_wready.value:
                self.writes += 1
            if dut.m_axi_rvalid.value and dut.m_axi_rready.value:
                self.reads += 1
                if dut.m_axi_rlast.value:
                    self.memory_cycles.append(now - started.pop(0))
