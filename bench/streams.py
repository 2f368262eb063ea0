"""cocotb drivers for Amaranth streams (ports ``<prefix>__valid``, ``__ready``, ``__payload``;
an ``always_ready`` stream has no ``__ready`` port), with idle and backpressure patterns.

Both classes act once per clock: after the rising edge they set their outputs for the coming
cycle, then sample the settled handshake in the read-only phase, so a transfer is recorded exactly
when ``valid`` and ``ready`` are both high before a rising edge (``valid`` alone on an
always-ready stream), on any simulator. Each has its own ``run()`` coroutine, or
:func:`run_clocked` clocks several of them from one (the scheduler's wake-ups per clock, not the
simulator, set the pace of a long cocotb run).
"""

import itertools
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotb.utils import get_sim_time

__all__ = ["StreamSource", "StreamSink", "run_clocked", "always", "never", "randomly",
           "clock_and_reset", "ChannelPauses"]


async def clock_and_reset(dut, period_ns, cycles=2, *, clock="clk", reset="rst",
                          active_low=False):
    """Start ``dut.<clock>`` with ``period_ns`` and hold ``dut.<reset>`` asserted (high, or low
    with ``active_low``) for ``cycles`` clocks."""
    clk, rst = getattr(dut, clock), getattr(dut, reset)
    cocotb.start_soon(Clock(clk, period_ns, unit="ns").start())
    rst.value = int(not active_low)
    await ClockCycles(clk, cycles)
    rst.value = int(active_low)


def always():
    """A pattern that is always true."""
    return itertools.repeat(True)


def never():
    """A pattern that is always false."""
    return itertools.repeat(False)


def randomly(rng, probability, block=4096):
    """A pattern that is true with ``probability`` each cycle, from ``numpy`` generator ``rng``
    (drawn ``block`` cycles at a time: one call into numpy per block, not per cycle)."""
    while True:
        yield from (rng.random(block) < probability).tolist()


class _Port:
    """The ports of one stream, and the once-per-clock protocol of :func:`run_clocked`:
    ``drive(now)`` right after the rising edge at ``now`` ns, then ``sample()`` in the
    read-only phase of the same step."""

    def __init__(self, dut, prefix, clock):
        self.clock = clock
        self.valid = getattr(dut, f"{prefix}__valid")
        # None for an always-ready stream, which has no port
        self.ready = getattr(dut, f"{prefix}__ready", None)
        self.payload = getattr(dut, f"{prefix}__payload")

    async def run(self):
        """This stream alone, clocked by its own coroutine."""
        await run_clocked(self.clock, [self])


async def run_clocked(clock, parts):
    """Act for every one of ``parts`` on every rising edge of ``clock``: each one's
    ``drive(now)``, then, in the read-only phase, each one's ``sample()``. One coroutine for
    many parts costs the scheduler two wake-ups per clock in all."""
    edge, settled = RisingEdge(clock), ReadOnly()
    while True:
        await edge
        now = get_sim_time("ns")
        for part in parts:
            part.drive(now)
        await settled
        for part in parts:
            part.sample()


def _write(signal, value, last):
    """Write ``value`` to ``signal`` unless ``last`` (what was written before) is the same; the
    value written."""
    if value != last:
        signal.value = value
    return value


class StreamSource(_Port):
    """Drives payload ints into a DUT's stream sink port.

    ``idle`` yields one bool per cycle: true keeps ``valid`` low that cycle when no transfer is
    pending. Once raised, ``valid`` stays high with a stable payload until the transfer, as
    streams require. ``fire_times`` holds the simulation time (ns) of each transfer's edge.
    """

    def __init__(self, dut, prefix, clock, idle=None):
        super().__init__(dut, prefix, clock)
        self.idle = idle or never()
        self.queue = deque()
        self.fire_times = []
        self.valid.value = self._valid = 0
        self._offering = self._fired = False

    def send(self, words):
        self.queue.extend(words)

    @property
    def busy(self):
        return bool(self.queue)

    def drive(self, now):
        if self._fired:
            self.queue.popleft()
            self.fire_times.append(now)
            self._offering = False
        if self.queue and (self._offering or not next(self.idle)):
            if not self._offering:
                self.payload.value = self.queue[0]
            self._offering = True
        self._valid = _write(self.valid, int(self._offering), self._valid)

    def sample(self):
        self._fired = self._offering and (self.ready is None or bool(self.ready.value))


class StreamSink(_Port):
    """Collects payload ints from a DUT's stream source port.

    ``stall`` yields one bool per cycle: true holds ``ready`` low that cycle (not for an
    always-ready stream, whose every valid payload is taken). ``received`` holds
    the payloads in arrival order and ``times`` the simulation time (ns) of each transfer's edge;
    ``on_receive``, if given, is called with each payload as it arrives.
    """

    def __init__(self, dut, prefix, clock, stall=None, on_receive=None):
        super().__init__(dut, prefix, clock)
        if self.ready is None and stall is not None:
            raise ValueError(f"{prefix} is an always-ready stream: it cannot be stalled")
        self.stall = stall or never()
        self.on_receive = on_receive
        self.received = []
        self.times = []
        self._ready = 0
        if self.ready is not None:
            self.ready.value = 0
        self._taken = None

    def drive(self, now):
        if self._taken is not None:
            self.received.append(self._taken)
            self.times.append(now)
            if self.on_receive:
                self.on_receive(self._taken)
        ready = int(not next(self.stall))
        if self.ready is not None:
            self._ready = _write(self.ready, ready, self._ready)
        else:
            self._ready = ready

    def sample(self):
        self._taken = (self.payload.value.to_unsigned()
                       if self._ready and self.valid.value else None)


class ChannelPauses:
    """Random pauses of cocotbext-axi ``channels``, one ``pattern`` value per channel set after
    every rising edge: a :func:`bench.streams.run_clocked` part doing what each channel's own
    pause generator would, without a coroutine per channel."""

    def __init__(self, channels, pattern):
        self.channels, self.pattern = channels, pattern

    def drive(self, now):
        for channel in self.channels:
            channel.pause = next(self.pattern)

    def sample(self):
        pass
