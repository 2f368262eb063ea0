"""An AXI4 device-memory model with a set latency and bandwidth and optional random pauses, for
the paper's experiments and the system regression.

It serves the controller's AXI4 port (:class:`hdl.axi.AxiMemoryPort`: bursts with IDs): a
read's first beat comes ``latency`` cycles after its address, a write's response ``latency``
cycles after its last beat, bursts are served in the order their addresses came (which keeps
every ID's order), and at most one data beat (read or write; a due read first) moves every
``interval`` cycles. ``latency`` and ``interval`` may change between measurements.

``pause``, if given, yields one bool per channel per cycle (AR, AW, W, R, B in turn): true
holds that channel back for the cycle (``ARREADY``, ``AWREADY`` or ``WREADY`` low; no new
``RVALID`` or ``BVALID``; a beat or response already offered stays offered, as AXI requires).

The model is a :func:`bench.streams.run_clocked` part (``drive``/``sample``), so one coroutine
can clock it with the host; ``run()`` clocks it alone.
"""

from collections import deque

from bench.streams import never, run_clocked

__all__ = ["TimedMemory"]

_PORTS = ("awaddr", "awlen", "awid", "awvalid", "awready", "wdata", "wstrb", "wvalid", "wready",
          "wlast", "bvalid", "bready", "bresp", "bid", "araddr", "arlen", "arid", "arvalid",
          "arready", "rdata", "rvalid", "rready", "rresp", "rlast", "rid")


class TimedMemory:
    def __init__(self, dut, prefix="m_axi_", *, latency=0, interval=1, pause=None):
        self.dut = dut
        self.latency, self.interval = latency, interval
        self.pause = pause or never()
        self.lines = {}
        self.errors = []
        self.beats = 0
        self.last_beat_ns = 0       # simulation time of the last beat that moved
        self._port = {name: getattr(dut, f"{prefix}{name}") for name in _PORTS}
        self._width = len(self._port["wdata"])
        self._reads = deque()       # (due clock, id, address, last) per beat
        self._bursts = deque()      # [id, next address, beats left] per write burst
        self._responses = deque()   # (due clock, id)
        self._now = self._next_beat = 0
        self._fired = {}
        # What this model drives, as last written, and the beat and response on the bus.
        self._out = dict.fromkeys(("arready", "awready", "wready", "rvalid", "bvalid"), 0)
        self._read_on_bus = self._response_on_bus = None
        for name in ("rresp", "bresp", *self._out):
            self._port[name].value = 0

    async def run(self):
        """The model alone, clocked by its own coroutine."""
        await run_clocked(self.dut.aclk, [self])

    def _merge(self, address, data, strobe):
        old = self.lines.get(address, 0)
        mask = sum(0xFF << (8 * i) for i in range(self._width // 8) if strobe >> i & 1)
        self.lines[address] = (old & ~mask) | (data & mask)

    def _set(self, name, value):
        """Drive output ``name`` to ``value`` (0 or 1), writing the port only on a change."""
        if self._out[name] != value:
            self._port[name].value = value
            self._out[name] = value

    def _take(self, now):
        """Book the transfers ``sample`` saw before the rising edge at clock ``self._now``."""
        fired, line_bytes = self._fired, self._width // 8
        if fired.get("r"):
            self._reads.popleft()
        if fired.get("b"):
            self._responses.popleft()
        if fired.get("ar"):
            count = fired["arlen"] + 1
            self._reads.extend((self._now + self.latency, fired["arid"],
                                fired["araddr"] + k * line_bytes, k == count - 1)
                               for k in range(count))
        if fired.get("aw"):
            self._bursts.append([fired["awid"], fired["awaddr"], fired["awlen"] + 1])
        if fired.get("w"):
            burst = self._bursts[0]
            self._merge(burst[1], fired["wdata"], fired["wstrb"])
            burst[1] += line_bytes
            burst[2] -= 1
            if burst[2] == 0:
                self._bursts.popleft()
                self._responses.append((self._now + self.latency, burst[0]))
                if not fired["wlast"]:
                    self.errors.append("WLAST low on a burst's last beat")
            elif fired["wlast"]:
                self.errors.append("WLAST high before a burst's last beat")
        if fired.get("r") or fired.get("w"):
            self.beats += 1
            self.last_beat_ns = now
            self._next_beat = self._now + self.interval - 1    # it moved on the last edge

    def drive(self, now):
        self._now += 1
        self._take(now)
        held = {channel: next(self.pause) for channel in ("ar", "aw", "w", "r", "b")}
        reads, responses, port = self._reads, self._responses, self._port
        # One beat per interval: a due read beat first, else a write beat.
        beat_free = self._now >= self._next_beat
        offering = (self._out["rvalid"] and not self._fired.get("r")) or (
            bool(reads) and reads[0][0] <= self._now and beat_free and not held["r"])
        self._set("arready", int(not held["ar"]))
        self._set("awready", int(not held["aw"]))
        self._set("wready", int(beat_free and bool(self._bursts) and not offering
                                and not held["w"]))
        self._set("rvalid", int(offering))
        if offering and reads[0] is not self._read_on_bus:
            _, rid, address, last = self._read_on_bus = reads[0]
            port["rdata"].value = self.lines.get(address, 0)
            port["rid"].value = rid
            port["rlast"].value = int(last)
        responding = (self._out["bvalid"] and not self._fired.get("b")) or (
            bool(responses) and responses[0][0] <= self._now and not held["b"])
        self._set("bvalid", int(responding))
        if responding and responses[0] is not self._response_on_bus:
            self._response_on_bus = responses[0]
            port["bid"].value = responses[0][1]

    def sample(self):
        port, out = self._port, self._out
        fired = self._fired = {
            "ar": bool(out["arready"] and port["arvalid"].value),
            "aw": bool(out["awready"] and port["awvalid"].value),
            "w": bool(out["wready"] and port["wvalid"].value),
            "r": bool(out["rvalid"] and port["rready"].value),
            "b": bool(out["bvalid"] and port["bready"].value),
        }
        if fired["ar"]:
            fired.update(araddr=port["araddr"].value.to_unsigned(),
                         arlen=port["arlen"].value.to_unsigned(),
                         arid=port["arid"].value.to_unsigned())
        if fired["aw"]:
            fired.update(awaddr=port["awaddr"].value.to_unsigned(),
                         awlen=port["awlen"].value.to_unsigned(),
                         awid=port["awid"].value.to_unsigned())
        if fired["w"]:
            fired.update(wdata=port["wdata"].value.to_unsigned(),
                         wstrb=port["wstrb"].value.to_unsigned(),
                         wlast=bool(port["wlast"].value))
