"""The golden device at its CXL.mem channels: M2S requests in, S2M responses out.

:class:`MessageModel` answers raw requests as ``docs/spec.md`` says the device answers them,
opcodes and bad input (section 10) included, over a :class:`golden.transport.GoldenTransport`
(registers, counters and flags) and its :class:`golden.device.DeviceModel` (data). It serves
any number of requests in order; requests that touch pairwise different lines go to the device
model together (:meth:`golden.device.DeviceModel.read_lines`), which is what makes a check of
millions of requests (``make soak``) take minutes.

A response's data is compared only where the specification defines it
(:attr:`Responses.defined`): not the data of a poisoned read, and not the registers the model
does not keep (the slot pool's counters, ``CNT_HITS`` and the like).
"""

from dataclasses import dataclass

import numpy as np

from spec.cxl import DRSOpcode, NDROpcode, ReqOpcode, RwDOpcode
from spec.params import Mode
from spec.regmap import COUNTERS, REGISTER_BYTES

from .config import decode
from .transport import GoldenTransport

__all__ = ["REQ", "RWD", "NONE", "NDR", "DRS", "KINDS", "Requests", "Responses",
           "request_kinds", "MessageModel"]

#: Request channels.
REQ, RWD = 0, 1
#: Response channels (``NONE``: the request gets no response).
NONE, NDR, DRS = 0, 1, 2

#: The kinds of request (:func:`request_kinds`).
KINDS = ("read", "write", "invalidate", "hint", "bad_opcode")

_READS = (ReqOpcode.MEM_RD.value, ReqOpcode.MEM_RD_DATA.value)
_INVALIDATES = (ReqOpcode.MEM_INV.value, ReqOpcode.MEM_INV_NT.value)
_WRITES = (RwDOpcode.MEM_WR.value, RwDOpcode.MEM_WR_PTL.value)


@dataclass
class Requests:
    """``N`` M2S requests: ``channel`` (:data:`REQ` or :data:`RWD`), ``opcode``, byte
    ``address``, ``poison`` of shape ``(N,)``; ``data`` ``(N, line_bytes)`` uint8 and
    ``byte_enable`` ``(N, line_bytes)`` bool (RwD only)."""
    channel: np.ndarray
    opcode: np.ndarray
    address: np.ndarray
    data: np.ndarray
    byte_enable: np.ndarray
    poison: np.ndarray

    def __len__(self):
        return len(self.channel)


@dataclass
class Responses:
    """``N`` responses: ``channel`` (:data:`NONE`, :data:`NDR` or :data:`DRS`), ``opcode``
    (:class:`spec.cxl.NDROpcode` or :class:`spec.cxl.DRSOpcode`), ``poison``; ``data``
    ``(N, line_bytes)`` and ``defined`` (its bytes that the specification fixes)."""
    channel: np.ndarray
    opcode: np.ndarray
    poison: np.ndarray
    data: np.ndarray
    defined: np.ndarray


def request_kinds(requests):
    """Each request's kind (:data:`KINDS`): a read, a write, an invalidate (MemInv, MemInvNT),
    a hint (MemSpecRd) or an unsupported opcode."""
    opcode, rwd = np.asarray(requests.opcode), np.asarray(requests.channel) == RWD
    kinds = np.full(len(requests), "bad_opcode", dtype=object)
    kinds[~rwd & np.isin(opcode, _READS)] = "read"
    kinds[~rwd & np.isin(opcode, _INVALIDATES)] = "invalidate"
    kinds[~rwd & (opcode == ReqOpcode.MEM_SPEC_RD.value)] = "hint"
    kinds[rwd & np.isin(opcode, _WRITES)] = "write"
    return kinds.tolist()


class MessageModel:
    """The device of ``params`` (:class:`spec.params.ControllerParams`) at its channels, with
    device memory failing on the byte ranges ``faults`` (:class:`golden.device.DeviceModel`).
    ``transport`` is the :class:`golden.transport.GoldenTransport` behind it."""

    def __init__(self, params, faults=()):
        self.params = params
        self.transport = GoldenTransport(params, faults=faults)
        self._line_bytes = params.datapath.line_bytes
        self._unkept = self._unkept_bytes()

    def _unkept_bytes(self):
        """``{line offset in the window: bool mask}``: the bytes of registers the model does
        not keep (counters of the slot pool)."""
        masks = {}
        for counter in COUNTERS:
            if counter.golden is None and counter.name not in self.transport.kept_counts:
                offset = self.transport.regmap[f"CNT_{counter.name}"].offset
                line = offset - offset % self._line_bytes
                mask = masks.setdefault(line, np.zeros(self._line_bytes, bool))
                mask[offset % self._line_bytes:][:REGISTER_BYTES] = True
        return masks

    def serve(self, requests, sends=None):
        """The :class:`Responses` to ``requests``, served in order. ``sends`` (default all 1)
        says how many times each was sent: a host polling a register sends the same read of
        the window again until a bit clears; the last answer is returned."""
        count = len(requests)
        out = Responses(channel=np.zeros(count, np.uint8), opcode=np.zeros(count, np.uint8),
                        poison=np.zeros(count, bool),
                        data=np.zeros((count, self._line_bytes), np.uint8),
                        defined=np.ones((count, self._line_bytes), bool))
        kinds = request_kinds(requests)
        segment = []
        for i in range(count):
            lines = self._lines_touched(requests, kinds[i], i)
            if lines is not None:
                segment.append((i, lines))
                continue
            self._serve_segment(requests, kinds, segment, out)
            segment = []
            for _ in range(1 if sends is None else int(sends[i])):
                self._serve_window(requests, kinds[i], i, out)
        self._serve_segment(requests, kinds, segment, out)
        return out

    def _serve_segment(self, requests, kinds, segment, out):
        """Serve ``segment``, requests outside the window, in waves: a request's wave is one
        after the last wave of an earlier request that touches one of its lines, so each wave's
        requests touch pairwise different lines and go to the device model together. Requests
        of different lines are independent, so this is the order of the segment."""
        waves, last = [], {}
        for i, lines in segment:
            wave = 1 + max((last[line] for line in lines if line in last), default=-1)
            for line in lines:
                last[line] = wave
            if wave == len(waves):
                waves.append([])
            waves[wave].append(i)
        for wave in waves:
            self._serve_batch(requests, kinds, wave, out)

    def _in_window(self, address):
        base = self.params.window_base
        return base <= address < base + self.params.window_bytes

    def _lines_touched(self, requests, kind, i):
        """The byte addresses of the lines request ``i`` (of ``kind``) reads or writes in
        device memory (empty for a request with no access), or ``None`` for one of the register
        window, which is served alone."""
        address = int(requests.address[i])
        if kind not in ("read", "write") or address >= 1 << self.params.address_bits:
            return ()
        if self._in_window(address):
            return None
        device = self.transport.device
        _, _, mode, state_address = decode(self.params, device.regions, device.enable, address)
        return (address,) if mode == Mode.IDENTITY.value \
            else device.accumulator_lines(state_address)

    def _answer_without_access(self, kind, i, out):
        if kind == "hint":
            return
        if kind == "bad_opcode":
            self.transport.raise_flag("BAD_OPCODE")
        out.channel[i], out.opcode[i] = NDR, NDROpcode.CMP.value

    def _serve_batch(self, requests, kinds, batch, out):
        reads = [i for i in batch if kinds[i] == "read"]
        writes = [i for i in batch if kinds[i] == "write"]
        for i in batch:
            if kinds[i] not in ("read", "write"):
                self._answer_without_access(kinds[i], i, out)
        if reads:
            data, nxm, poison = self.transport.read_lines(requests.address[reads])
            out.channel[reads] = DRS
            out.opcode[reads] = np.where(nxm, DRSOpcode.MEM_DATA_NXM.value,
                                         DRSOpcode.MEM_DATA.value)
            out.data[reads], out.poison[reads] = data, poison
            out.defined[reads] = ~poison[:, None]
        if writes:
            self.transport.write_lines(requests.address[writes], requests.data[writes],
                                       self._enables(requests, writes),
                                       requests.poison[writes])
            out.channel[writes], out.opcode[writes] = NDR, NDROpcode.CMP.value

    def _enables(self, requests, rows):
        """The byte enables of writes ``rows``: MemWr writes its whole line, whatever its
        mask says; MemWrPtl the bytes its mask enables."""
        whole = requests.opcode[rows] == RwDOpcode.MEM_WR.value
        return requests.byte_enable[rows] | whole[:, None]

    def _serve_window(self, requests, kind, i, out):
        address = int(requests.address[i])
        if kind == "read":
            out.channel[i], out.opcode[i] = DRS, DRSOpcode.MEM_DATA.value
            out.data[i] = self.transport.read_lines([address])[0][0]
            unkept = self._unkept.get(address - self.params.window_base)
            if unkept is not None:
                out.defined[i] = ~unkept
            return
        self.transport.write_lines([address], requests.data[i][None],
                                   self._enables(requests, [i]), requests.poison[i:i + 1])
        out.channel[i], out.opcode[i] = NDR, NDROpcode.CMP.value
