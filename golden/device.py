"""Golden model of the whole device as a host sees it: requests in, responses and memory out.

It models :class:`hdl.controller.CxlMemController` one request at a time, in the order given:
identity reads and writes (byte enables honoured), contributions, aggregation reads, poison,
out-of-range addresses, device memory that answers with errors, and the clear command. Device
memory is a dict of lines; never-written lines read as zero.

The device keeps accumulators on chip and writes them back when it must; the model keeps every
line's accumulator in memory at all times, as the device's memory is after ``CTRL.FLUSH``
(and as every host read sees it, since the device makes reads of accumulator memory coherent):
the result line (the read-back of the state with the region's mode and threshold), then the
state's memory image (``docs/formats.md``, "In device memory").

:meth:`DeviceModel.read_lines` and :meth:`DeviceModel.write_lines` take many requests at once,
for long checks such as ``make soak``'s: requests that touch pairwise different lines and
accumulators are independent, so their order does not matter and the datapath model runs on
all of them together. :meth:`DeviceModel.read` and :meth:`DeviceModel.write` are the same for
one request.
"""

import numpy as np

from spec.formats import memory_to_state, state_to_memory, unpack_state
from spec.params import Mode, Reason

from .config import decode
from .datapath import DatapathRequests, run_datapath

__all__ = ["DeviceModel"]

_IDENTITY = Mode.IDENTITY.value


class DeviceModel:
    """The device with an applied region table.

    Parameters
    ----------
    params : ControllerParams
    regions : list of spec.regmap.Region
        The applied table (already validated).
    enable : bool
        ``CTRL.ENABLE``.
    faults : list of (int, int)
        Byte ranges ``[start, end)`` of device memory that answer every access with an error
        (``docs/spec.md`` section 10): an identity read of such a line is poisoned, an identity
        write is lost, and a line whose accumulator has a line there can neither take a
        contribution (it is not applied, neither accepted nor rejected) nor be read (poisoned,
        data zero), nor be cleared; each such access counts a ``mem_error`` event. A range
        must cover whole accumulators: the model does not say which of an accumulator's lines
        the device reads for what (a fill reads ``n`` first).
    """

    def __init__(self, params, regions=(), enable=True, faults=()):
        self.params = params
        self.regions = list(regions)
        self.enable = enable
        self.faults = [(int(start), int(end)) for start, end in faults]
        self.memory = {}
        self._line_bytes = params.datapath.line_bytes
        self._accumulator_span = (1 + params.datapath.state_lines) * self._line_bytes
        self.events = {"accepted": 0, "rejected": 0, "invalid_lines": 0, "capacity": 0,
                       "partial": 0, "poison": 0, "bad_address": 0, "completed": 0,
                       "mem_error": 0}

    def line(self, address):
        """The stored bytes of the line at byte ``address``."""
        return self.memory.get(address, np.zeros(self._line_bytes, np.uint8)).copy()

    def _in_range(self, address):
        return address < 1 << self.params.address_bits

    def accumulator_lines(self, state_address):
        """The byte addresses of the lines of the accumulator at ``state_address``."""
        return range(state_address, state_address + self._accumulator_span, self._line_bytes)

    def faulty(self, address):
        """Whether device memory answers the line at byte ``address`` with an error."""
        return bool(self.faults) and any(start <= address < end for start, end in self.faults)

    def _faulty_accumulator(self, state_address):
        return bool(self.faults) and any(map(self.faulty,
                                             self.accumulator_lines(state_address)))

    def state(self, state_address):
        """The packed accumulator state of the line whose accumulator starts at
        ``state_address`` (its memory image, :func:`golden.datapath.state_to_memory`, follows
        the result line)."""
        return self._states([state_address])[0]

    def _states(self, state_addresses):
        lines = [np.concatenate([self.line(a) for a in self.accumulator_lines(s)[1:]])
                 for s in state_addresses]
        return memory_to_state(self.params.datapath, np.array(lines, np.uint8).reshape(
            len(state_addresses), -1))

    def _store(self, state_address, lines):
        for address, line in zip(self.accumulator_lines(state_address), lines):
            self.memory[address] = np.asarray(line, np.uint8)

    def mode(self, address):
        return decode(self.params, self.regions, self.enable, address)[2]

    def _decode_all(self, addresses):
        """``(in range, region, mode, state address)`` of each address; raises ``ValueError``
        when two of them touch the same line or accumulator (they would not be independent)."""
        decoded, touched = [], set()
        for address in addresses:
            address = int(address)
            if not self._in_range(address):
                decoded.append((False, 0, _IDENTITY, 0))
                continue
            _, region, mode, state_address = decode(self.params, self.regions, self.enable,
                                                    address)
            lines = [address] if mode == _IDENTITY \
                else self.accumulator_lines(state_address)
            if touched.intersection(lines):
                raise ValueError(f"requests of one batch touch the line or accumulator of "
                                 f"{address:#x} twice; serve them one at a time")
            touched.update(lines)
            decoded.append((True, region, mode, state_address))
        return decoded

    def _run(self, rows, data, contribute):
        """The datapath model on ``rows`` (``(region, mode, state address)`` each) with their
        ``data`` lines, contributing or reading."""
        p = self.params.datapath
        count = len(rows)
        request = DatapathRequests(
            mode=np.array([mode for _, mode, _ in rows]),
            contribute=np.full(count, contribute),
            data=np.asarray(data, np.uint8).reshape(count, -1),
            byte_enable=np.ones((count, p.line_bytes), bool),
            state=self._states([s for _, _, s in rows]),
            threshold=np.array([self.regions[r].threshold for r, _, _ in rows]),
            user=np.zeros(count, np.int64))
        return run_datapath(p, request)

    def read_lines(self, addresses):
        """MemRd of the lines at byte ``addresses`` (pairwise different lines and
        accumulators): ``(data, nxm, poison)``, arrays of shape ``(N, line_bytes)``, ``(N,)``
        and ``(N,)``. A poisoned line's data is zero here; the device's is undefined."""
        count = len(addresses)
        data = np.zeros((count, self._line_bytes), np.uint8)
        nxm, poison = np.zeros(count, bool), np.zeros(count, bool)
        rows, where = [], []
        for i, (address, (in_range, region, mode, state_address)) in enumerate(
                zip(addresses, self._decode_all(addresses))):
            fault = self.faulty(int(address)) if mode == _IDENTITY \
                else self._faulty_accumulator(state_address)
            if not in_range:
                self.events["bad_address"] += 1
                nxm[i] = True
            elif fault:
                self.events["mem_error"] += 1
                poison[i] = True
            elif mode == _IDENTITY:
                data[i] = self.line(int(address))
            else:
                rows.append((region, mode, state_address))
                where.append(i)
        if rows:
            data[where] = self._run(rows, np.zeros((len(rows), self._line_bytes)), False).line
        return data, nxm, poison

    def read(self, address):
        """``(data, nxm)`` of a MemRd of the line at byte ``address``."""
        data, nxm, _ = self.read_lines([address])
        return data[0], bool(nxm[0])

    def write_lines(self, addresses, data, byte_enables=None, poison=None):
        """MemWr or MemWrPtl of the lines at byte ``addresses`` (pairwise different lines and
        accumulators) with ``data`` ``(N, line_bytes)``, ``byte_enables`` (bool, same shape;
        default all set) and ``poison`` ``(N,)``: the :class:`spec.params.Reason` of each
        contribution, ``None`` for other writes and for contributions that were not applied
        (a device-memory fault)."""
        count = len(addresses)
        data = np.asarray(data, np.uint8).reshape(count, self._line_bytes)
        enables = (np.ones((count, self._line_bytes), bool) if byte_enables is None
                   else np.asarray(byte_enables, bool).reshape(count, self._line_bytes))
        poison = np.zeros(count, bool) if poison is None else np.asarray(poison, bool)
        reasons = [None] * count
        rows, where = [], []
        for i, (address, (in_range, region, mode, state_address)) in enumerate(
                zip(addresses, self._decode_all(addresses))):
            address = int(address)
            if not in_range:
                self.events["bad_address"] += 1
            elif poison[i]:
                self.events["poison"] += 1
            elif mode == _IDENTITY:
                if self.faulty(address):
                    self.events["mem_error"] += 1
                else:
                    self.memory[address] = np.where(enables[i], data[i], self.line(address))
            elif not enables[i].all():
                self.events["rejected"] += 1
                self.events["partial"] += 1
                reasons[i] = Reason.PARTIAL
            elif self._faulty_accumulator(state_address):
                self.events["mem_error"] += 1
            else:
                rows.append((region, mode, state_address))
                where.append(i)
        if rows:
            self._contribute(rows, data[where], where, reasons)
        return reasons

    def _contribute(self, rows, data, where, reasons):
        result = self._run(rows, data, True)
        _, n = unpack_state(self.params.datapath, Mode.GBINARY, result.state)
        images = state_to_memory(self.params.datapath, result.state).reshape(
            len(rows), -1, self._line_bytes)
        for k, (region, _, state_address) in enumerate(rows):
            if not result.accepted[k]:
                self.events["rejected"] += 1
                self.events["capacity"] += 1
                reasons[where[k]] = Reason(int(result.reason[k]))
                continue
            self.events["accepted"] += 1
            self.events["invalid_lines"] += int(result.invalid[k])
            self.events["completed"] += int(n[k]) == self.regions[region].expected
            self._store(state_address, [result.line[k], *images[k]])
            reasons[where[k]] = Reason.NONE

    def write(self, address, data, byte_enable=None, poison=False):
        """A MemWr (``byte_enable`` None) or MemWrPtl of the line at byte ``address``; returns
        the :class:`spec.params.Reason` of a contribution, ``None`` for other writes."""
        return self.write_lines([address], [data],
                                None if byte_enable is None else [byte_enable], [poison])[0]

    def clear(self, index):
        """``CTRL.CLEAR`` of region ``index``: the result and state lines of its accumulators
        become zero (a faulty accumulator counts a ``mem_error`` and keeps what it held)."""
        if index >= len(self.regions):
            return
        r = self.regions[index]
        if not (r.enable and r.aggregating):
            return
        zero = np.zeros(self._line_bytes, np.uint8)
        for line in range(r.size // self._line_bytes):
            state_address = r.acc + line * self.params.accumulator_bytes_per_line
            if self._faulty_accumulator(state_address):
                self.events["mem_error"] += 1
                continue
            self._store(state_address, [zero] * (1 + self.params.datapath.state_lines))
