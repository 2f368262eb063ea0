"""cocotb drivers for Amaranth streams (ports ``<prefix>__valid``, ``__ready``, ``__payload``;
an ``always_ready`` stream has no ``__ready`` port), with idle and backpressure patterns.

Both classes act once per clock: after the rising edge they set their outputs for the coming
cycle, then sample the settled handshake in the read-only phase, so a transfer is recorded exactly
when ``valid`` and ``ready`` are both high before a rising edge (``valid`` alone on an
always-ready stream), on any simulator.
"""

import itertools
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotb.utils import get_sim_time

__all__ = ["StreamSource", "StreamSink", "always", "never", "randomly", "clock_and_reset"]


async def clock_and_reset(dut, period_ns, cycles=2):
    """Start ``dut.clk`` with ``period_ns`` and hold ``dut.rst`` high for ``cycles`` clocks."""
    cocotb.start_soon(Clock(dut.clk, period_ns, unit="ns").start())
    dut.rst.value = 1
    await ClockCycles(dut.clk, cycles)
    dut.rst.value = 0


def always():
    """A pattern that is always true."""
    return itertools.repeat(True)


def never():
    """A pattern that is always false."""
    return itertools.repeat(False)


def randomly(rng, probability):
    """A pattern that is true with ``probability`` each cycle, from ``numpy`` generator ``rng``."""
    return iter(lambda: bool(rng.random() < probability), None)


class _Port:
    def __init__(self, dut, prefix, clock):
        self.clock = clock
        self.valid = getattr(dut, f"{prefix}__valid")
        # None for an always-ready stream, which has no port
        self.ready = getattr(dut, f"{prefix}__ready", None)
        self.payload = getattr(dut, f"{prefix}__payload")


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
        self.valid.value = 0

    def send(self, words):
        self.queue.extend(words)

    @property
    def busy(self):
        return bool(self.queue)

    async def run(self):
        offering = False
        while True:
            await RisingEdge(self.clock)
            if offering and self._fired:
                self.queue.popleft()
                self.fire_times.append(get_sim_time("ns"))
                offering = False
            if self.queue and (offering or not next(self.idle)):
                self.payload.value = self.queue[0]
                self.valid.value = 1
                offering = True
            else:
                self.valid.value = 0
            await ReadOnly()
            self._fired = offering and (self.ready is None or bool(self.ready.value))


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
        if self.ready is not None:
            self.ready.value = 0

    async def run(self):
        taken = None
        while True:
            await RisingEdge(self.clock)
            if taken is not None:
                self.received.append(taken)
                self.times.append(get_sim_time("ns"))
                if self.on_receive:
                    self.on_receive(taken)
            ready = not next(self.stall)
            if self.ready is not None:
                self.ready.value = int(ready)
            await ReadOnly()
            taken = self.payload.value.to_unsigned() if ready and self.valid.value else None
