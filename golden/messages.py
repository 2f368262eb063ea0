"""The golden device at its CXL.mem channels: M2S requests in, S2M responses out.

:class:`MessageModel` answers raw requests as ``docs/spec.md`` says the device answers them,
opcodes and bad input (section 10) included, over a :class:`golden.transport.GoldenTransport`
(registers, counters and flags) and its :class:`golden.device.DeviceModel` (data). It serves
any number of requests in order; runs of requests that touch pairwise different lines go to
the device model together (:meth:`golden.device.DeviceModel.read_lines`), which is what makes
a check of millions of requests (``make soak``) take minutes.

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

__all__ = ["REQ", "RWD", "NONE", "NDR", "DRS", "Requests", "Responses", "MessageModel"]

#: Request channels.
REQ, RWD = 0, 1
#: Response channels (``NONE``: the request gets no response).
NONE, NDR, DRS = 0, 1, 2

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
        batch, touched = [], set()
        for i in range(count):
            lines = self._lines_touched(requests, i)
            if lines is None or touched.intersection(lines):
                self._serve_batch(requests, batch, out)
                batch, touched = [], set()
            if lines is None:
                for _ in range(1 if sends is None else int(sends[i])):
                    self._serve_window(requests, i, out)
            else:
                batch.append(i)
                touched.update(lines)
        self._serve_batch(requests, batch, out)
        return out

    def _kind(self, requests, i):
        """``"read"``, ``"write"``, ``"invalidate"``, ``"hint"`` or ``"bad_opcode"``."""
        opcode = int(requests.opcode[i])
        if requests.channel[i] == RWD:
            return "write" if opcode in _WRITES else "bad_opcode"
        if opcode in _READS:
            return "read"
        if opcode in _INVALIDATES:
            return "invalidate"
        return "hint" if opcode == ReqOpcode.MEM_SPEC_RD.value else "bad_opcode"

    def _in_window(self, address):
        base = self.params.window_base
        return base <= address < base + self.params.window_bytes

    def _lines_touched(self, requests, i):
        """The byte addresses of the lines request ``i`` reads or writes in device memory
        (empty for a request with no access), or ``None`` for one of the register window,
        which is served alone."""
        address = int(requests.address[i])
        kind = self._kind(requests, i)
        if kind not in ("read", "write") or address >= 1 << self.params.address_bits:
            return ()
        if kind == "write" and requests.poison[i]:
            return ()
        if self._in_window(address):
            return None
        device = self.transport.device
        _, _, mode, state_address = decode(self.params, device.regions, device.enable, address)
        if mode == Mode.IDENTITY.value:
            return (address,)
        return tuple(state_address + k * self._line_bytes
                     for k in range(1 + self.params.datapath.state_lines))

    def _answer_without_access(self, requests, i, out):
        kind = self._kind(requests, i)
        if kind == "hint":
            return
        if kind == "bad_opcode":
            self.transport.raise_flag("BAD_OPCODE")
        out.channel[i], out.opcode[i] = NDR, NDROpcode.CMP.value

    def _serve_batch(self, requests, batch, out):
        reads = [i for i in batch if self._kind(requests, i) == "read"]
        writes = [i for i in batch if self._kind(requests, i) == "write"]
        for i in batch:
            if i not in reads and i not in writes:
                self._answer_without_access(requests, i, out)
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

    def _serve_window(self, requests, i, out):
        address = int(requests.address[i])
        if self._kind(requests, i) == "read":
            out.channel[i], out.opcode[i] = DRS, DRSOpcode.MEM_DATA.value
            out.data[i] = self.transport.read_lines([address])[0][0]
            unkept = self._unkept.get(address - self.params.window_base)
            if unkept is not None:
                out.defined[i] = ~unkept
            return
        self.transport.write_lines([address], requests.data[i][None],
                                   self._enables(requests, [i]), requests.poison[i:i + 1])
        out.channel[i], out.opcode[i] = NDR, NDROpcode.CMP.value
