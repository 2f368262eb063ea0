"""Golden model of the whole device as a host sees it: requests in, responses and memory out.

It models :class:`hdl.controller.CxlMemController` one request at a time, in the order given:
identity reads and writes (byte enables honoured), contributions, aggregation reads, poison,
out-of-range addresses and the clear command. Device memory is a dict of lines; never-written
lines read as zero.

The device keeps accumulators on chip and writes them back when it must; the model keeps every
line's accumulator in memory at all times, as the device's memory is after ``CTRL.FLUSH``
(and as every host read sees it, since the device makes reads of accumulator memory coherent):
the result line (the read-back of the state with the region's mode and threshold), then the
state's memory image (``docs/formats.md``, "In device memory").
"""

import numpy as np

from spec.formats import memory_to_state, state_to_memory, unpack_state
from spec.params import Mode, Reason

from .config import decode
from .datapath import DatapathRequests, run_datapath

__all__ = ["DeviceModel"]


class DeviceModel:
    """The device with an applied region table.

    Parameters
    ----------
    params : ControllerParams
    regions : list of spec.regmap.Region
        The applied table (already validated).
    enable : bool
        ``CTRL.ENABLE``.
    """

    def __init__(self, params, regions=(), enable=True):
        self.params = params
        self.regions = list(regions)
        self.enable = enable
        self.memory = {}
        self.events = {"accepted": 0, "rejected": 0, "invalid_lines": 0, "capacity": 0,
                       "partial": 0, "poison": 0, "bad_address": 0, "completed": 0}

    @property
    def _line_bytes(self):
        return self.params.datapath.line_bytes

    def line(self, address):
        """The stored bytes of the line at byte ``address``."""
        return self.memory.get(address, np.zeros(self._line_bytes, np.uint8)).copy()

    def _in_range(self, address):
        return address < 1 << self.params.address_bits

    def state(self, state_address):
        """The packed accumulator state of the line whose accumulator starts at
        ``state_address`` (its memory image, :func:`golden.datapath.state_to_memory`, follows
        the result line)."""
        lines = [self.line(state_address + (1 + i) * self._line_bytes)
                 for i in range(self.params.datapath.state_lines)]
        return memory_to_state(self.params.datapath, np.concatenate(lines).reshape(1, -1))[0]

    def _store(self, state_address, lines):
        for i, line in enumerate(lines):
            self.memory[state_address + i * self._line_bytes] = np.asarray(line, np.uint8)

    def _run(self, address, data, contribute):
        _, region, mode, state_address = decode(self.params, self.regions, self.enable, address)
        p = self.params.datapath
        request = DatapathRequests(
            mode=np.array([mode]), contribute=np.array([contribute]),
            data=np.asarray(data, np.uint8).reshape(1, -1),
            byte_enable=np.ones((1, p.line_bytes), bool),
            state=self.state(state_address).reshape(1, -1),
            threshold=np.array([self.regions[region].threshold]), user=np.array([0]))
        return run_datapath(p, request), state_address, self.regions[region]

    def mode(self, address):
        return decode(self.params, self.regions, self.enable, address)[2]

    def read(self, address):
        """``(data, nxm)`` of a MemRd of the line at byte ``address``."""
        if not self._in_range(address):
            self.events["bad_address"] += 1
            return np.zeros(self._line_bytes, np.uint8), True
        if self.mode(address) == Mode.IDENTITY.value:
            return self.line(address), False
        result, _, _ = self._run(address, np.zeros(self._line_bytes, np.uint8), False)
        return result.line[0], False

    def write(self, address, data, byte_enable=None, poison=False):
        """A MemWr (``byte_enable`` None) or MemWrPtl of the line at byte ``address``; returns
        the :class:`spec.params.Reason` of a contribution, ``None`` for other writes."""
        data = np.asarray(data, np.uint8)
        enables = (np.ones(self._line_bytes, bool) if byte_enable is None
                   else np.asarray(byte_enable, bool))
        if not self._in_range(address):
            self.events["bad_address"] += 1
            return None
        if poison:
            self.events["poison"] += 1
            return None
        if self.mode(address) == Mode.IDENTITY.value:
            self.memory[address] = np.where(enables, data, self.line(address))
            return None
        if not enables.all():
            self.events["rejected"] += 1
            self.events["partial"] += 1
            return Reason.PARTIAL
        result, state_address, region = self._run(address, data, True)
        if not result.accepted[0]:
            self.events["rejected"] += 1
            self.events["capacity"] += 1
            return Reason(int(result.reason[0]))
        self.events["accepted"] += 1
        self.events["invalid_lines"] += int(result.invalid[0])
        _, n = unpack_state(self.params.datapath, Mode.GBINARY, result.state)
        self.events["completed"] += int(n[0]) == region.expected
        self._store(state_address, [result.line[0]] + list(state_to_memory(
            self.params.datapath, result.state).reshape(-1, self._line_bytes)))
        return Reason.NONE

    def clear(self, index):
        """``CTRL.CLEAR`` of region ``index``: the result and state lines of its accumulators
        become zero."""
        if index >= len(self.regions):
            return
        r = self.regions[index]
        if not (r.enable and r.aggregating):
            return
        zero = np.zeros(self._line_bytes, np.uint8)
        for line in range(r.size // self._line_bytes):
            self._store(r.acc + line * self.params.accumulator_bytes_per_line,
                        [zero] * (1 + self.params.datapath.state_lines))
