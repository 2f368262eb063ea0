"""The host side of ``nf_axi_reducer``'s AXI4 subordinate port, with the interface of
:class:`bench.cxl_host.CxlHost` (so that :class:`bench.controller_bench.ControllerBench` and the
driver run over it), and bursts with IDs for the tests of the port itself.

Responses come back as :class:`AxiAnswer`, in the terms of CXL.mem responses that
:meth:`ControllerBench.read_ok` and ``write_ok`` check: a read is a ``"drs"`` (``opcode``
MemData, or MemData-NXM for DECERR; ``poison`` for SLVERR), a write an ``"ndr"`` Cmp, with the
AXI response beside it.
"""

import logging
from typing import NamedTuple

from cocotbext.axi import AxiBus, AxiMaster, AxiResp

from bench.cxl_host import check_aligned
from bench.streams import ChannelPauses, run_clocked
from spec.cxl import DRSOpcode, NDROpcode

__all__ = ["AxiAnswer", "AxiHost"]


class AxiAnswer(NamedTuple):
    channel: str        # "drs" (a read beat) or "ndr" (a write burst's B)
    opcode: int
    poison: int
    data: bytes
    resp: AxiResp


class AxiHost:
    """Drives ``s_axi_*`` of ``dut`` with cocotbext-axi's ``AxiMaster``; ``pause`` (a
    per-clock pattern of :mod:`bench.streams`, or ``None``) pauses each of its five channels
    at random."""

    def __init__(self, dut, clock, line_bits, *, pause=None):
        self.clock = clock
        self.line_bytes = line_bits // 8
        self.master = AxiMaster(AxiBus.from_prefix(dut, "s_axi"), clock, dut.aresetn,
                                reset_active_level=False)
        for side in (self.master.write_if, self.master.read_if):
            side.log.setLevel(logging.WARNING)      # not a line per burst
        self._pause = pause
        self.pending = {}
        self.errors = []
        self._next = 0

    def start(self, start_soon, extra=()):
        """Start the channel pauses and the ``extra`` parts (:func:`bench.streams.run_clocked`)
        in one coroutine."""
        parts = list(extra)
        if self._pause is not None:
            write, read = self.master.write_if, self.master.read_if
            parts.append(ChannelPauses([write.aw_channel, write.w_channel, write.b_channel,
                                        read.ar_channel, read.r_channel], self._pause))
        if parts:
            start_soon(run_clocked(self.clock, parts))

    @property
    def idle(self):
        return not self.pending and self.master.idle()

    async def _tracked(self, what, operation):
        key, self._next = self._next, self._next + 1
        self.pending[key] = what
        try:
            return await operation
        finally:
            del self.pending[key]

    async def read_burst(self, address, lines, *, axi_id=0):
        """Lines ``address``, ``address + line_bytes``, ... in one INCR burst: its data and
        response."""
        check_aligned(address, self.line_bytes)
        result = await self._tracked(f"read of {lines} lines at {address:#x}",
                                     self.master.read(address, lines * self.line_bytes,
                                                      arid=axi_id))
        return bytes(result.data), AxiResp(result.resp)

    async def write_burst(self, address, data, *, axi_id=0):
        """``data`` (whole lines) from ``address`` in one INCR burst; its response."""
        check_aligned(address, self.line_bytes)
        result = await self._tracked(f"write of {len(data)} bytes at {address:#x}",
                                     self.master.write(address, bytes(data), awid=axi_id))
        return AxiResp(result.resp)

    async def read(self, address):
        data, resp = await self.read_burst(address, 1)
        return AxiAnswer("drs", DRSOpcode.MEM_DATA_NXM.value if resp == AxiResp.DECERR
                         else DRSOpcode.MEM_DATA.value, int(resp == AxiResp.SLVERR), data, resp)

    async def write(self, address, data, *, byte_enable=None, axi_id=0):
        """A line with byte enables ``byte_enable`` (an int, a bit per byte; all by default):
        a write of each run of enabled bytes, ID ``axi_id`` (one burst, one beat, its ``WSTRB``
        that run). A mask with several runs is several MemWrPtl for the device, and a mask of
        none writes nothing: for identity lines and the register window, whose words a write
        changes alone, that is the same as one MemWrPtl; a contribution is refused once per
        run (use :meth:`write_burst` for contributions)."""
        check_aligned(address, self.line_bytes)
        data = bytes(data)
        mask = (1 << self.line_bytes) - 1 if byte_enable is None else byte_enable
        resp, start = AxiResp.OKAY, None
        for k in range(self.line_bytes + 1):
            enabled = k < self.line_bytes and mask >> k & 1
            if enabled and start is None:
                start = k
            elif not enabled and start is not None:
                result = await self._tracked(
                    f"write of bytes {start}-{k - 1} of {address:#x}",
                    self.master.write(address + start, data[start:k], awid=axi_id))
                resp = max(resp, AxiResp(result.resp))
                start = None
        return AxiAnswer("ndr", NDROpcode.CMP.value, 0, b"", resp)

    # The driver.device transport.
    async def read_line(self, address):
        answer = await self.read(address)
        if answer.resp != AxiResp.OKAY:
            raise RuntimeError(f"read of {address:#x} answered {answer.resp!r}")
        return answer.data

    async def write_line(self, address, data, byte_enable):
        await self.write(address, data, byte_enable=byte_enable)
