"""A cocotb CXL.mem host: M2S Req/RwD drivers and S2M NDR/DRS monitors matched by tag.

Every request gets a tag no other outstanding request holds; responses are matched to requests
by tag, in whatever order they come. Address fields count lines (64-byte CXL lines at
``line_bits`` = 512; see ``docs/controller.md``). A response with an unknown tag, a second
response for a tag, or a response on the wrong channel is recorded in ``errors``. A request
with no response within ``RESPONSE_TIMEOUT_NS`` of simulated time fails the test (a stalled
controller would otherwise hang it). The host is also a :mod:`driver.device` transport
(``read_line``/``write_line``).
"""

from dataclasses import dataclass

from cocotb.triggers import Event, SimTimeoutError, with_timeout

from bench.payload import pack_fields, unpack_fields
from bench.streams import StreamSink, StreamSource, run_clocked
from spec.cxl import (
    DRSOpcode,
    MetaField,
    ReqOpcode,
    RwDOpcode,
    m2s_req_layout,
    m2s_rwd_layout,
    s2m_drs_layout,
    s2m_ndr_layout,
)

__all__ = ["Response", "CxlHost", "check_aligned"]


def _code(opcode):
    """The integer code of an opcode enum member (or of an int, for reserved codes)."""
    return getattr(opcode, "value", opcode)


#: Simulated time a request may wait for its response: far beyond any legitimate wait (a
#: request waits behind at most the ingress queues' requests, each some hundred clocks).
RESPONSE_TIMEOUT_NS = 1_000_000


@dataclass
class Response:
    """One S2M message: ``channel`` is ``"ndr"`` or ``"drs"``; ``data`` is bytes for DRS."""
    channel: str
    opcode: int
    tag: int
    dev_load: int
    ld_id: int
    meta_field: int
    poison: int = 0
    data: bytes = b""


def check_aligned(address, line_bytes):
    """Refuse a request ``address`` that is not at the start of a line."""
    if address % line_bytes:
        raise ValueError(f"address {address:#x} is not {line_bytes}-byte aligned")


class CxlHost:
    """Drives ``m2s_req``/``m2s_rwd`` and receives ``s2m_ndr``/``s2m_drs`` of ``dut``.

    ``idle`` and ``stall`` are per-cycle patterns (see :mod:`bench.streams`) for the two request
    channels and the two response channels, in that order.
    """

    def __init__(self, dut, clock, line_bits, *, idle=(None, None), stall=(None, None)):
        self.clock = clock
        self.line_bytes = line_bits // 8
        self.req_layout = m2s_req_layout()
        self.rwd_layout = m2s_rwd_layout(line_bits)
        self.ndr_layout = s2m_ndr_layout()
        self.drs_layout = s2m_drs_layout(line_bits)
        self.req = StreamSource(dut, "m2s_req", clock, idle[0])
        self.rwd = StreamSource(dut, "m2s_rwd", clock, idle[1])
        self.ndr = StreamSink(dut, "s2m_ndr", clock, stall[0],
                              on_receive=lambda word: self._receive("ndr", word))
        self.drs = StreamSink(dut, "s2m_drs", clock, stall[1],
                              on_receive=lambda word: self._receive("drs", word))
        self.pending = {}
        self.responses = {}
        # While a list: every matched response is appended to it, in arrival order (None
        # by default, so that a long run keeps no response it has matched).
        self.recording = None
        self.errors = []
        self._next_tag = 0

    def start(self, start_soon, extra=()):
        """Start the four channel drivers, and the ``extra`` parts (see
        :func:`bench.streams.run_clocked`), with ``start_soon`` as one coroutine."""
        start_soon(run_clocked(self.clock, [self.req, self.rwd, self.ndr, self.drs, *extra]))

    def _tag(self):
        for _ in range(1 << 16):
            tag, self._next_tag = self._next_tag, (self._next_tag + 1) % (1 << 16)
            if tag not in self.pending:
                return tag
        raise RuntimeError("all 65536 tags are outstanding")

    def _receive(self, channel, word):
        layout = self.ndr_layout if channel == "ndr" else self.drs_layout
        fields = {name: values[0] for name, values in unpack_fields(layout, [word]).items()}
        tag = fields["tag"]
        if tag not in self.pending:
            self.errors.append(f"{channel} response with tag {tag:#06x}, which no outstanding "
                               f"request holds")
            return
        expected, event = self.pending.pop(tag)
        if channel != expected:
            self.errors.append(f"tag {tag:#06x}: response on {channel}, expected {expected}")
        data = fields.get("data", 0).to_bytes(self.line_bytes, "little") \
            if channel == "drs" else b""
        self.responses[tag] = Response(channel, fields["opcode"], tag, fields["dev_load"],
                                       fields["ld_id"], fields["meta_field"],
                                       fields.get("poison", 0), data)
        if self.recording is not None:
            self.recording.append(self.responses[tag])
        event.set()

    async def _transact(self, source, layout, fields, expect):
        tag = self._tag()
        event = Event()
        self.pending[tag] = (expect, event)
        source.send(pack_fields(layout, {name: [value] for name, value in
                                         dict(fields, tag=tag).items()}))
        try:
            await with_timeout(event.wait(), RESPONSE_TIMEOUT_NS, "ns")
        except SimTimeoutError:
            raise AssertionError(
                f"no {expect} response to tag {tag:#06x} (opcode {fields['opcode']}, address "
                f"field {fields['address']:#x}) within {RESPONSE_TIMEOUT_NS} ns: the "
                f"controller stalled") from None
        return self.responses.pop(tag)

    async def request(self, opcode, address, *, expect="drs", ld_id=0):
        """Send an M2S Req; ``expect`` is the channel of its answer."""
        check_aligned(address, self.line_bytes)
        return await self._transact(self.req, self.req_layout, {
            "opcode": _code(opcode), "address": address // self.line_bytes << 1, "ld_id": ld_id,
            "meta_field": MetaField.NO_OP.value}, expect)

    def send_without_answer(self, opcode, address):
        """Send an M2S Req that gets no answer (MemSpecRd)."""
        check_aligned(address, self.line_bytes)
        self.req.send(pack_fields(self.req_layout, {"opcode": [_code(opcode)],
                                                    "address": [address // self.line_bytes << 1]}))

    async def write(self, address, data, *, byte_enable=None, poison=False,
                    opcode=None, ld_id=0):
        """Send an M2S RwD: MemWr without ``byte_enable``, else MemWrPtl (unless ``opcode``
        says otherwise)."""
        check_aligned(address, self.line_bytes)
        if len(data) != self.line_bytes:
            raise ValueError(f"a line is {self.line_bytes} bytes, not {len(data)}")
        if opcode is None:
            opcode = RwDOpcode.MEM_WR if byte_enable is None else RwDOpcode.MEM_WR_PTL
        mask = (1 << self.line_bytes) - 1
        return await self._transact(self.rwd, self.rwd_layout, {
            "opcode": _code(opcode), "address": address // self.line_bytes, "poison": int(poison),
            "ld_id": ld_id, "meta_field": MetaField.NO_OP.value,
            "byte_enable": mask if byte_enable is None else byte_enable,
            "data": int.from_bytes(bytes(data), "little")}, "ndr")

    async def read(self, address, *, opcode=ReqOpcode.MEM_RD):
        return await self.request(opcode, address)

    # The driver.device transport.
    async def read_line(self, address):
        response = await self.read(address)
        if response.opcode != DRSOpcode.MEM_DATA.value or response.poison:
            raise RuntimeError(f"read of {address:#x} answered {response}")
        return response.data

    async def write_line(self, address, data, byte_enable):
        await self.write(address, data, byte_enable=byte_enable)

    @property
    def idle(self):
        return not (self.pending or self.req.busy or self.rwd.busy)
