"""A driver transport over the golden device model: the whole device, register window included,
without a simulator.

:class:`GoldenTransport` has the transport interface of :mod:`driver.device` (``read_line``,
``write_line``) and answers like a device configured with ``params``:

- lines in the register window (``docs/spec.md`` section 8) are the registers of
  :func:`spec.regmap.register_map`, with their access types (``R``, ``RW``, ``RW1C``, ``RW1S``,
  ``WS``); a write changes only the 32-bit words whose four byte enables are set;
- ``CTRL.APPLY`` validates the staged ``R<n>_*`` registers with :func:`golden.config.validate`
  and installs them in a :class:`golden.device.DeviceModel`, or reports the fault in
  ``CFG_ERROR`` and ``STATUS.CFG_ERROR`` and keeps the applied table;
- ``CTRL.CLEAR`` and ``CTRL.FLUSH`` finish at once (their busy bits always read 0, their
  ``_DONE`` flags are set), since the model keeps every accumulator in device memory;
- every other line goes to the device model: identity data, contributions and result reads
  (``faults``: the byte ranges where device memory fails, :class:`golden.device.DeviceModel`);
  :meth:`GoldenTransport.read_lines` and :meth:`GoldenTransport.write_lines` take many lines
  at once and say what a CXL.mem response would (NXM, poison);
- ``STATUS`` flags are sticky and set by the events of the access that caused them;
  ``CNT_READS`` and ``CNT_WRITES`` count every line read and written, window included.

The model keeps no on-chip slots, so ``CNT_HITS``, ``CNT_FILLS``, ``CNT_WRITE_BACKS``,
``CNT_EVICTIONS`` and ``CNT_DROPPED`` read 0; everything a host can observe of the data is exact.
``dev_load`` is the DevLoad of the last response (:class:`spec.cxl.DevLoad`): the model serves
each request at once, so it reads ``LIGHT`` unless a test sets it.
"""

import numpy as np

from spec.cxl import DevLoad
from spec.params import REGISTER_BITS
from spec.regmap import (
    COUNTERS,
    REGISTER_BYTES,
    STATUS_FLAGS,
    Access,
    ConfigError,
    Region,
    register_map,
)

from .config import validate
from .device import DeviceModel

__all__ = ["GoldenTransport"]

#: ``STATUS`` flags raised by the device model's events (:attr:`spec.regmap.Event.golden`).
_EVENT_FLAGS = {e.name: e.golden for e in STATUS_FLAGS if e.golden}

#: Counters that the device model counts itself, by ``CNT_*`` name.
_EVENT_COUNTERS = {e.name: e.golden for e in COUNTERS if e.golden}

_WORD = (1 << REGISTER_BITS) - 1


class GoldenTransport:
    """Lines of a device of configuration ``params`` (:class:`spec.params.ControllerParams`),
    served by the golden model. ``device`` is the :class:`golden.device.DeviceModel` behind it
    (its applied table changes with each successful ``CTRL.APPLY``)."""

    def __init__(self, params, faults=()):
        self.params = params
        self.regmap = register_map(params)
        self.device = DeviceModel(params, regions=(), enable=False, faults=faults)
        self.dev_load = DevLoad.LIGHT
        self._line_bytes = params.datapath.line_bytes
        self._words = {reg.offset: reg.reset for reg in self.regmap}
        self._by_offset = {reg.offset: reg for reg in self.regmap}
        self._counts = dict.fromkeys(self.kept_counts, 0)

    #: The counters the transport keeps itself (the device model keeps those of its events).
    kept_counts = ("READS", "WRITES", "CFG_ERRORS")

    # The transport interface.
    async def read_line(self, address):
        """The line at byte ``address``, as a MemRd answers it."""
        return bytes(self.read_lines([address])[0][0])

    async def write_line(self, address, data, byte_enable):
        """A write of the line at byte ``address``: bit ``i`` of ``byte_enable`` enables byte
        ``i`` (a MemWr when every bit is set, else a MemWrPtl)."""
        if len(data) != self._line_bytes:
            raise ValueError(f"a line is {self._line_bytes} bytes, not {len(data)}")
        enables = [bool(byte_enable >> i & 1) for i in range(self._line_bytes)]
        self.write_lines([address], np.frombuffer(bytes(data), np.uint8)[None], [enables])

    # Many lines at once (:mod:`golden.messages`).
    def read_lines(self, addresses):
        """MemRd of the lines at byte ``addresses``, window lines included (other lines:
        pairwise different lines and accumulators, :meth:`DeviceModel.read_lines`):
        ``(data, nxm, poison)``. A read is counted in ``CNT_READS`` once answered: a read of
        ``CNT_READS`` does not see itself."""
        window = [i for i, a in enumerate(addresses) if self._in_window(int(a))]
        lines = [i for i in range(len(addresses)) if i not in window]
        before = dict(self.device.events)
        data, nxm, poison = self.device.read_lines([addresses[i] for i in lines])
        self._raise_flags(before)
        out = np.zeros((len(addresses), self._line_bytes), np.uint8)
        out[lines] = data
        for i in window:
            out[i] = np.frombuffer(self._window_line(int(addresses[i])), np.uint8)
        self._counts["READS"] += len(addresses)
        return out, _spread(nxm, lines, len(addresses)), _spread(poison, lines, len(addresses))

    def write_lines(self, addresses, data, byte_enables, poison=None):
        """Writes of the lines at byte ``addresses`` with ``data`` and ``byte_enables`` (bool
        arrays) and ``poison``, window lines included (other lines: pairwise different lines
        and accumulators, :meth:`DeviceModel.write_lines`, which gives the reasons)."""
        self._counts["WRITES"] += len(addresses)
        poison = np.zeros(len(addresses), bool) if poison is None else np.asarray(poison, bool)
        window = [i for i, a in enumerate(addresses) if self._in_window(int(a))]
        lines = [i for i in range(len(addresses)) if i not in window]
        for i in window:
            if poison[i]:
                self.raise_flag("POISON")
            else:
                self._write_window(int(addresses[i]), bytes(np.asarray(data[i], np.uint8)),
                                   [bool(e) for e in byte_enables[i]])
        before = dict(self.device.events)
        self.device.write_lines([addresses[i] for i in lines],
                                np.asarray(data, np.uint8)[lines],
                                np.asarray(byte_enables, bool)[lines], poison[lines])
        self._raise_flags(before)

    # The register window.
    def _in_window(self, address):
        base = self.params.window_base
        return base <= address < base + self.params.window_bytes

    def _window_line(self, address):
        first = address - self.params.window_base
        words = [self._read_register(first + o)
                 for o in range(0, self._line_bytes, REGISTER_BYTES)]
        return b"".join(w.to_bytes(REGISTER_BYTES, "little") for w in words)

    def _write_window(self, address, data, enables):
        first = address - self.params.window_base
        for o in range(0, self._line_bytes, REGISTER_BYTES):
            if all(enables[o:o + REGISTER_BYTES]):
                self._write_register(first + o,
                                     int.from_bytes(data[o:o + REGISTER_BYTES], "little"))

    def raise_flag(self, name):
        """Set sticky ``STATUS`` flag ``name``."""
        self._words[self.regmap["STATUS"].offset] |= self.regmap["STATUS"].field(name).mask

    def _raise_flags(self, before):
        for flag, event in _EVENT_FLAGS.items():
            if self.device.events[event] > before[event]:
                self.raise_flag(flag)

    def _read_register(self, offset):
        reg = self._by_offset.get(offset)
        if reg is None:
            return 0
        if reg.name.startswith("CNT_"):
            name = reg.name[len("CNT_"):]
            if name in _EVENT_COUNTERS:
                return self.device.events[_EVENT_COUNTERS[name]] & _WORD
            return self._counts.get(name, 0) & _WORD
        return self._words[offset]   # commands (WS) are never stored, so they read 0

    def _write_register(self, offset, value):
        reg = self._by_offset.get(offset)
        if reg is None:
            return
        if reg.lockable and self.regmap["CTRL"].unpack(
                self._words[self.regmap["CTRL"].offset])["LOCK"]:
            self.raise_flag("LOCKED_WRITE")
            return
        word, strobes = self._words[offset], 0
        for f in reg.fields:
            bits = value & f.mask
            if f.access == Access.RW:
                word = word & ~f.mask | bits
            elif f.access == Access.RW1C:
                word &= ~bits
            elif f.access == Access.RW1S:
                word |= bits
            elif f.access == Access.WS:
                strobes |= bits
        self._words[offset] = word
        if reg.name == "CTRL":
            self._control(reg.unpack(word | strobes))

    def _control(self, ctrl):
        """Carry out a write of ``CTRL``: the enable takes effect, then the commands run."""
        self.device.enable = bool(ctrl["ENABLE"])
        if ctrl["APPLY"]:
            self._apply()
        if ctrl["CLEAR"]:
            before = dict(self.device.events)
            self.device.clear(ctrl["CLEAR_REGION"])
            self._raise_flags(before)
            self.raise_flag("CLEAR_DONE")
        if ctrl["FLUSH"]:
            self.raise_flag("FLUSH_DONE")

    def _staged(self):
        """The staged region table, decoded from the ``R<n>_*`` registers."""
        def value(reg):
            return self._words[self.regmap[reg].offset]

        def wide(r, name):
            return value(f"R{r}_{name}_LO") | value(f"R{r}_{name}_HI") << REGISTER_BITS

        regions = []
        for r in range(self.params.regions):
            cfg = self.regmap[f"R{r}_CFG"].unpack(value(f"R{r}_CFG"))
            agg = self.regmap[f"R{r}_AGG"].unpack(value(f"R{r}_AGG"))
            regions.append(Region(bool(cfg["ENABLE"]), cfg["MODE"], wide(r, "BASE"),
                                  wide(r, "SIZE"), wide(r, "ACC"), agg["THRESHOLD"],
                                  agg["EXPECTED"]))
        return regions

    def _apply(self):
        regions = self._staged()
        reason, index = validate(self.params, regions)
        cfg_error = self.regmap["CFG_ERROR"]
        if reason == ConfigError.NONE:
            self.device.regions = regions
            self._words[cfg_error.offset] = cfg_error.pack(REGION=0, REASON=reason.value)
            return
        self._words[cfg_error.offset] = cfg_error.pack(REGION=index, REASON=reason.value)
        self._counts["CFG_ERRORS"] += 1
        self.raise_flag("CFG_ERROR")


def _spread(values, rows, count):
    """A bool array of ``count`` with ``values`` at ``rows``, false elsewhere."""
    out = np.zeros(count, bool)
    out[rows] = values
    return out
