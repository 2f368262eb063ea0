"""The traffic of a compiled soak (``make soak``): a region layout, then epochs of traffic
patterns until the contributions asked for are sent, then the final checks.

The layout (:func:`layout`): region 0 G-Binary and region 1 G-Ternary, each of ``lines`` lines
(by default four times the slots, at least 64: evictions all the time); region 2 identity;
region 3 G-Binary with its accumulators in device memory that fails, and a failing identity
range (``docs/spec.md`` section 10); the regions' accumulators lie back to back, so that a
clear of one borders the next's first line. Every epoch contributes ``capacity`` times to every line
of regions 0 and 1 (region 1 expects one fewer: its lines complete, are written back, then take
one more), with identity reads and writes and result reads in between, then reads back every
result line and a sample of raw states, and clears both regions. The patterns
(:data:`PATTERNS`) change the order of the traffic and the harness's knobs
(:class:`bench.soak_stimulus.Phase`); the ``bad_input`` pattern adds every bad input of
``docs/spec.md`` section 10.
"""

from collections import Counter
from dataclasses import dataclass

import numpy as np

from golden.config import validate
from spec.cxl import ReqOpcode
from spec.formats import ternary_to_lines
from spec.params import TERNARY_INVALID, Mode
from spec.regmap import REGISTER_BYTES, ConfigError, Region

from .regions import region_writes
from .soak_stimulus import ADD, READ, WRITE

__all__ = ["PATTERNS", "Layout", "layout", "Traffic"]

#: The traffic patterns, in the order the epochs take them, and the harness's knobs in each.
PATTERNS = {
    "full_rate": {},
    "eviction_storm": {},
    "completed_read_back": {"latency": 8},
    "flush_and_clear": {},
    "s2m_backpressure": {"host_idle": 0.2, "s2m_stall": 0.5},
    "slow_memory": {"latency": 30, "interval": 4, "axi_pause": 0.3},
    "bad_input": {"host_idle": 0.1, "s2m_stall": 0.2, "axi_pause": 0.2},
}

#: Regions of the layout: G-Binary, G-Ternary, identity, G-Binary in failing memory.
GBINARY, GTERNARY, IDENTITY, FAULTY = range(4)
#: Lines of the failing region and identity lines of the traffic (half in region 2).
_FAULTY_LINES, _IDENTITY_LINES = 4, 32
#: The ``STATUS`` bits that say a command runs.
_BUSY = ("APPLY_BUSY", "CLEAR_BUSY", "FLUSH_BUSY")
#: One identity request per this many contributions; one result read per this many.
_IDENTITY_EVERY, _READ_EVERY = 8, 16


def _pow2(value):
    return 1 << max(0, int(value) - 1).bit_length()


@dataclass
class Layout:
    """Where the soak's traffic goes: ``regions`` (the applied table), ``lines`` per
    aggregating region, the ``identity`` and ``failing`` identity line addresses, and the
    ``faults`` (byte ranges of failing device memory)."""
    lines: int
    regions: list
    identity: list
    failing: list
    faults: list


def layout(params, lines=None):
    """The soak's :class:`Layout` for controller ``params`` (at least four regions)."""
    if params.regions < 4:
        raise ValueError(f"the soak needs a controller with at least 4 regions; {params.name} "
                         f"has {params.regions}")
    p = params.datapath
    lines = lines or max(64, 4 * params.slots)
    span = _pow2(max(lines, _IDENTITY_LINES) * p.line_bytes)     # a region's address span
    acc_span = lines * params.accumulator_bytes_per_line    # back to back: a clear of one
    acc_base = _pow2(8 * span)                              # region borders the next
    cap = p.capacity
    regions = [
        Region(True, Mode.GBINARY.value, span, lines * p.line_bytes, acc_base, 1, cap),
        Region(True, Mode.GTERNARY.value, 2 * span, lines * p.line_bytes, acc_base + acc_span,
               max(1, cap // 2), max(1, cap - 1)),
        Region(True, Mode.IDENTITY.value, 3 * span, _IDENTITY_LINES // 2 * p.line_bytes),
        Region(True, Mode.GBINARY.value, 4 * span, _FAULTY_LINES * p.line_bytes,
               acc_base + 2 * acc_span, 1, cap),
    ]
    failing_start = 5 * span
    faults = [(failing_start, failing_start + _FAULTY_LINES * p.line_bytes),
              (regions[FAULTY].acc,
               regions[FAULTY].acc + _FAULTY_LINES * params.accumulator_bytes_per_line)]
    reason, index = validate(params, regions)
    if reason != ConfigError.NONE or acc_base + 3 * acc_span > params.window_base:
        raise ValueError(f"{params.name}: {lines} lines per region do not fit the address "
                         f"space ({reason.name} in region {index})")
    identity = [regions[IDENTITY].base + i * p.line_bytes for i in range(_IDENTITY_LINES // 2)]
    identity += [i * p.line_bytes for i in range(_IDENTITY_LINES // 2)]
    failing = [failing_start + i * p.line_bytes for i in range(_FAULTY_LINES)]
    return Layout(lines, regions, identity, failing, faults)


class _Lines:
    """Random data lines of one mode, made a block at a time."""

    def __init__(self, params, rng, mode, block=4096):
        self._params, self._rng, self._mode, self._block = params.datapath, rng, mode, block
        self._rows, self._next = None, block

    def next(self):
        if self._next == self._block:
            p = self._params
            if self._mode == Mode.GBINARY:
                self._rows = self._rng.integers(0, 256, (self._block, p.line_bytes), np.uint8)
            else:
                self._rows = ternary_to_lines(self._rng.integers(-1, 2, (self._block,
                                                                         p.gternary_lanes)))
            self._next = 0
        self._next += 1
        return self._rows[self._next - 1]


class Traffic:
    """Writes the soak's requests into :class:`bench.soak_stimulus.Stimulus` ``stimulus`` for
    :class:`Layout` ``where``, drawing from numpy generator ``rng``. ``tally`` counts what was
    sent, by kind: contributions (accepted or not), identity requests, result and raw reads,
    flushes, clears, epochs."""

    def __init__(self, stimulus, where, rng):
        self.s, self.where, self.rng = stimulus, where, rng
        self.params = stimulus.params
        self.line_bytes = self.params.datapath.line_bytes
        self.capacity = self.params.datapath.capacity
        self.counts = {GBINARY: np.zeros(where.lines, int), GTERNARY: np.zeros(where.lines, int)}
        self.tally = Counter()
        self._data = {GBINARY: _Lines(self.params, rng, Mode.GBINARY),
                      GTERNARY: _Lines(self.params, rng, Mode.GTERNARY)}

    # Addresses and what a request touches.
    def _address(self, region, line):
        return self.where.regions[region].base + line * self.line_bytes

    def _accumulator(self, region, line):
        return self.where.regions[region].acc + line * self.params.accumulator_bytes_per_line

    @staticmethod
    def _touches(region, line, kind):
        return ((("acc", region, line), kind), (("region", region), ADD))

    # Requests.
    def contribute(self, region, line, data=None):
        """A contribution to ``line`` of aggregating ``region``: it waits for the line's earlier
        contributions when the line is full (which of them is rejected depends on order)."""
        full = region in self.counts and self.counts[region][line] >= self.capacity
        if region in self.counts and not full:
            self.counts[region][line] += 1
        data = self._data[GTERNARY if region == GTERNARY else GBINARY].next() \
            if data is None else data
        self.s.write(self._address(region, line), data,
                     touches=self._touches(region, line, WRITE if full else ADD))
        self.tally["contributions"] += 1

    def read_result(self, region, line):
        self.tally["result reads"] += 1
        self.s.request(ReqOpcode.MEM_RD, self._address(region, line),
                       touches=self._touches(region, line, READ))

    def read_state(self, region, line):
        """Raw reads of the line's accumulator (result line and state): coherent reads."""
        self.tally["raw accumulator reads"] += 1 + self.params.datapath.state_lines
        for k in range(1 + self.params.datapath.state_lines):
            self.s.request(ReqOpcode.MEM_RD, self._accumulator(region, line) + k * self.line_bytes,
                           touches=self._touches(region, line, READ))

    def restore_empty(self, region, line):
        """A checkpoint restore of an empty line: its accumulator's lines written zero."""
        self.tally["checkpoint restores"] += 1
        for k in range(1 + self.params.datapath.state_lines):
            self.s.write(self._accumulator(region, line) + k * self.line_bytes,
                         np.zeros(self.line_bytes, np.uint8),
                         touches=self._touches(region, line, WRITE))
        self.counts[region][line] = 0

    def identity(self):
        """A random identity read, MemWr or MemWrPtl of one of the layout's identity lines."""
        address = int(self.rng.choice(self.where.identity))
        self.tally["identity requests"] += 1
        touch = ((("line", address), READ),)
        choice = self.rng.random()
        if choice < 0.4:
            self.s.request(ReqOpcode.MEM_RD, address, touches=touch)
            return
        data = self.rng.integers(0, 256, self.line_bytes, np.uint8)
        enables = None if choice < 0.7 else self.rng.random(self.line_bytes) < 0.5
        self.s.write(address, data, enables=enables, touches=((("line", address), WRITE),))

    def _ctrl(self, **fields):
        return self.s.regmap["CTRL"].pack(ENABLE=1, **fields)

    def clear(self, region, *, fence=False, also=()):
        """``CTRL.CLEAR`` of ``region``, after every request to it (and to ``also``) and before
        the later ones."""
        self.tally["clears"] += 1
        self.s.write_register("CTRL", self._ctrl(CLEAR=1, CLEAR_REGION=region), fence=fence,
                              touches=((("region", region), WRITE), *also))
        if region in self.counts:
            self.counts[region][:] = 0

    def flush(self):
        """``CTRL.FLUSH`` in the middle of traffic (it changes nothing a host can see)."""
        self.tally["flushes"] += 1
        self.s.write_register("CTRL", self._ctrl(FLUSH=1), fence=False)

    # Setup and the end.
    def configure(self):
        self.s.phase("setup")
        for name in ("ID", "CAP_LINE", "CAP_POOL"):
            self.s.read_register(name)
        self.program(self.where.regions)
        self.apply()

    def program(self, regions):
        names = {register.offset: register.name for register in self.s.regmap}
        for offset, value in region_writes(self.s.regmap, regions):
            self.s.write_register(names[offset], value)

    def apply(self):
        """``CTRL.APPLY``, then wait for it (the driver's ``configure``)."""
        self.s.write_register("CTRL", self._ctrl(APPLY=1))
        self.status()
        self.s.read_register("CFG_ERROR")

    def status(self):
        """Read ``STATUS`` once no command runs (its busy bits are timing; its flags are not)."""
        self.s.read_register("STATUS", until_zero=_BUSY)

    def finish(self):
        """A flush, every register read, then the lock and a write it refuses."""
        self.s.phase("final")
        self.s.write_register("CTRL", self._ctrl(FLUSH=1))
        self.status()
        for line in sorted({r.offset - r.offset % self.line_bytes for r in self.s.regmap}):
            self.s.request(ReqOpcode.MEM_RD, self.params.window_base + line, fence=True)
        self.s.write_register("CTRL", self._ctrl(LOCK=1))
        self.s.write_register("R0_BASE_LO", 0)
        self.s.read_register("R0_BASE_LO")
        self.status()
        self.s.flush()

    # Epochs.
    def epoch(self, pattern):
        """One epoch of ``pattern`` (a key of :data:`PATTERNS`)."""
        self.s.phase(pattern, **PATTERNS[pattern])
        self.tally[f"epochs of {pattern}"] += 1
        getattr(self, f"_{pattern}")()
        self._read_back_and_clear()
        self.s.flush()

    def _slot(self, region, line):
        """The slot of a line: its accumulator's index modulo the slots (docs/controller.md)."""
        return self._accumulator(region, line) // self.params.accumulator_bytes_per_line \
            % self.params.slots

    def _order(self, kind):
        """Every (region, line) pair ``capacity`` times. ``"batched"``: one line per slot at
        a time, each batch's lines complete (in rounds) before the next batch starts, so they
        stay on chip; ``"rounds"``: each line once a round, in random order, so with more lines
        than slots every contribution evicts another line; ``"shuffled"``: all in random
        order, the same line back to back too."""
        pairs = [(r, line) for r in (GBINARY, GTERNARY) for line in range(self.where.lines)]
        if kind == "shuffled":
            return [pairs[i] for i in self.rng.permutation(
                np.repeat(np.arange(len(pairs)), self.capacity))]
        if kind == "rounds":
            batches = [np.arange(len(pairs))]
        else:
            by_slot = {}
            for i in self.rng.permutation(len(pairs)):
                by_slot.setdefault(self._slot(*pairs[i]), []).append(i)
            batches = [[queue[b] for queue in by_slot.values() if b < len(queue)]
                       for b in range(max(map(len, by_slot.values())))]
        return [pairs[i] for batch in batches for _ in range(self.capacity)
                for i in self.rng.permutation(batch)]

    def _traffic(self, order, extra=None):
        """Contributions in ``order``, with identity requests and result reads among them, and
        ``extra(k)`` called before the ``k``-th contribution when given."""
        for k, (region, line) in enumerate(order):
            if extra:
                extra(k)
            self.contribute(region, line)
            if self.rng.integers(_IDENTITY_EVERY) == 0:
                self.identity()
            if self.rng.integers(_READ_EVERY) == 0:
                self.read_result(region, line)

    def _read_back_and_clear(self):
        pairs = [(r, line) for r in (GBINARY, GTERNARY) for line in range(self.where.lines)]
        for i in self.rng.permutation(len(pairs)):
            self.read_result(*pairs[i])
            if self.rng.integers(8) == 0:
                self.read_state(*pairs[i])
        self.clear(GBINARY)
        self.clear(GTERNARY)

    def _full_rate(self):
        self._traffic(self._order("batched"))

    def _eviction_storm(self):
        self._traffic(self._order("rounds"))

    def _s2m_backpressure(self):
        self._traffic(self._order("shuffled"))

    def _slow_memory(self):
        self._traffic(self._order("batched"))

    def _completed_read_back(self):
        self._traffic(self._order("batched"))
        restored = self.rng.choice(self.where.lines, size=min(4, self.where.lines),
                                   replace=False)
        for line in restored:
            self.read_state(GBINARY, line)
            self.restore_empty(GBINARY, line)
        self._traffic([(GBINARY, line) for line in restored])

    def _flush_and_clear(self):
        order = self._order("batched")
        half = len(order) // 2
        every = max(1, self.where.lines // 4)

        def flushes_and_clears(k):
            if k % every == 0:
                self.flush()
            if k == half:
                self.clear(GTERNARY)
            if k == half + half // 2:
                self._clear_beside_a_resident_line()

        self._traffic(order, flushes_and_clears)
        # A good APPLY of the same table: every slot written back and emptied.
        self.apply()

    def _clear_beside_a_resident_line(self):
        """A clear of region 0 once the first line of region 1, whose accumulator starts
        where region 0's end, has taken a contribution: that line is on chip and dirty while
        region 0 is cleared, and must come through it whole."""
        self.contribute(GTERNARY, 0)
        self.clear(GBINARY, also=((("acc", GTERNARY, 0), READ),))

    def _bad_input(self):
        order = self._order("rounds")
        bad = [self._bad_opcodes, self._beyond_the_address_space, self._poison,
               self._partial_and_over_capacity, self._invalid_codes, self._window_misuse,
               self._refused_apply, self._failing_memory]
        at = {int(k): step for k, step in zip(self.rng.choice(len(order), len(bad),
                                                              replace=False), bad)}
        self._traffic(order, lambda k: at[k]() if k in at else None)
        self.tally["rounds of every bad input"] += 1

    # Bad input (docs/spec.md section 10).
    def _bad_opcodes(self):
        address = self.where.identity[0]
        for opcode in (ReqOpcode.MEM_RD_FWD, ReqOpcode.MEM_WR_FWD, 0b0101, 0b1111,
                       ReqOpcode.MEM_INV, ReqOpcode.MEM_INV_NT):
            self.s.request(opcode, address)
        self.s.request(ReqOpcode.MEM_SPEC_RD, address, answered=False)
        for opcode in (0b0000, 0b0011):
            self.s.write(address, np.zeros(self.line_bytes, np.uint8), opcode=opcode)

    def _beyond_the_address_space(self):
        beyond = 1 << self.params.address_bits
        self.s.request(ReqOpcode.MEM_RD, beyond)
        self.s.write(beyond + self.line_bytes, np.full(self.line_bytes, 0xA5, np.uint8))

    def _poison(self):
        line = np.full(self.line_bytes, 0x5A, np.uint8)
        self.s.write(self.where.identity[1], line, poison=True)
        self.s.write(self._address(GBINARY, 0), line, poison=True)
        name = "R0_CFG"
        register_line = self.params.window_base + self.s.regmap[name].offset \
            - self.s.regmap[name].offset % self.line_bytes
        self.s.write(register_line, line, poison=True, fence=True)

    def _partial_and_over_capacity(self):
        enables = np.ones(self.line_bytes, bool)
        enables[self.rng.integers(self.line_bytes)] = False
        self.s.write(self._address(GBINARY, 1), self._data[GBINARY].next(), enables=enables)
        line = int(self.rng.integers(self.where.lines))
        while self.counts[GBINARY][line] < self.capacity:
            self.contribute(GBINARY, line)
        self.contribute(GBINARY, line)                  # rejected: CAPACITY

    def _invalid_codes(self):
        codes = np.zeros(self.params.datapath.gternary_lanes, int)
        line = ternary_to_lines(codes[None])[0]
        line[0] |= TERNARY_INVALID                      # lane 0 holds the invalid code 10
        room = np.flatnonzero(self.counts[GTERNARY] < self.capacity)
        if len(room):                                   # a line that will accept it
            self.contribute(GTERNARY, int(self.rng.choice(room)), line)

    def _window_misuse(self):
        regmap, base = self.s.regmap, self.params.window_base
        offset = regmap["R0_CFG"].offset
        enables = np.zeros(self.line_bytes, bool)
        enables[offset % self.line_bytes:][:2] = True   # half a word: refused
        self.s.write(base + offset - offset % self.line_bytes,
                     np.full(self.line_bytes, 0xFF, np.uint8), enables=enables, fence=True)
        last = max(register.offset for register in regmap) + REGISTER_BYTES
        outside = -(-last // self.line_bytes) * self.line_bytes    # the first line past the map
        self.s.request(ReqOpcode.MEM_RD, base + outside, fence=True)
        self.s.write(base + outside, np.full(self.line_bytes, 0xFF, np.uint8), fence=True)
        self.s.write_register("ID", 0)                  # a read-only register
        self.s.read_register("ID")

    def _refused_apply(self):
        bad = list(self.where.regions)
        bad[IDENTITY] = Region(True, Mode.IDENTITY.value, bad[GBINARY].base, self.line_bytes)
        self.program(bad)
        self.apply()                                    # refused: OVERLAP
        self.program(self.where.regions)
        self.clear(IDENTITY, fence=True)                # not aggregating: CLEAR_DONE only

    def _failing_memory(self):
        for address in self.where.failing[:2]:
            self.s.request(ReqOpcode.MEM_RD, address, touches=((("line", address), READ),))
            self.s.write(address, self._data[GBINARY].next(),
                         touches=((("line", address), WRITE),))
        self.contribute(FAULTY, 0)
        self.read_result(FAULTY, 1)
        self.clear(FAULTY, fence=True)
