"""A device-memory model with a set latency and bandwidth, for the paper's experiments.

It serves the controller's AXI4 port (:class:`hdl.axi.AxiMemoryPort`: bursts with IDs): a
read's first beat comes ``latency`` cycles after its address, a write's response ``latency``
cycles after its last beat, bursts are served in the order their addresses came (which keeps
every ID's order), and at most one data beat (read or write; a due read first) moves every
``interval`` cycles.
``latency`` and ``interval`` may change between measurements.
"""

from collections import deque

from cocotb.triggers import ReadOnly, RisingEdge
from cocotb.utils import get_sim_time

__all__ = ["TimedMemory"]


class TimedMemory:
    def __init__(self, dut, prefix="axi", *, latency=0, interval=1):
        self.dut = dut
        self.latency, self.interval = latency, interval
        self.lines = {}
        self.errors = []
        self.beats = 0
        self.last_beat_ns = 0       # simulation time of the last beat that moved
        self._port = {name: getattr(dut, f"{prefix}__{name}") for name in (
            "awaddr", "awlen", "awid", "awvalid", "awready", "wdata", "wstrb", "wvalid",
            "wready", "wlast", "bvalid", "bready", "bresp", "bid", "araddr", "arlen", "arid",
            "arvalid", "arready", "rdata", "rvalid", "rready", "rresp", "rlast", "rid")}
        self._width = len(self._port["wdata"])

    def _merge(self, address, data, strobe):
        old = self.lines.get(address, 0)
        mask = sum(0xFF << (8 * i) for i in range(self._width // 8) if strobe >> i & 1)
        self.lines[address] = (old & ~mask) | (data & mask)

    async def run(self):
        port, clock = self._port, self.dut.clk
        line_bytes = self._width // 8
        reads = deque()              # (due clock, id, address, last) per beat
        bursts = deque()             # [id, next address, beats left] per write burst
        responses = deque()          # (due clock, id)
        now, next_beat = 0, 0
        offering = False             # a read beat is on the bus and has not moved yet
        fired = {}
        for name in ("arready", "awready"):
            port[name].value = 1
        for name in ("rresp", "bresp", "rvalid", "bvalid"):
            port[name].value = 0
        while True:
            await RisingEdge(clock)
            now += 1
            if fired.get("r"):
                reads.popleft()
            if fired.get("b"):
                responses.popleft()
            if fired.get("ar"):
                count = fired["arlen"] + 1
                reads.extend((now + self.latency, fired["arid"],
                              fired["araddr"] + k * line_bytes, k == count - 1)
                             for k in range(count))
            if fired.get("aw"):
                bursts.append([fired["awid"], fired["awaddr"], fired["awlen"] + 1])
            if fired.get("w"):
                burst = bursts[0]
                self._merge(burst[1], fired["wdata"], fired["wstrb"])
                burst[1] += line_bytes
                burst[2] -= 1
                if burst[2] == 0:
                    bursts.popleft()
                    responses.append((now + self.latency, burst[0]))
                    if not fired["wlast"]:
                        self.errors.append("WLAST low on a burst's last beat")
                elif fired["wlast"]:
                    self.errors.append("WLAST high before a burst's last beat")
            if fired.get("r") or fired.get("w"):
                self.beats += 1
                self.last_beat_ns = get_sim_time("ns")
                next_beat = now + self.interval - 1    # it moved on the last edge

            # One beat per interval: a due read beat first, else a write beat.
            beat_free = now >= next_beat
            offering = (offering and not fired.get("r")) or (
                bool(reads) and reads[0][0] <= now and beat_free)
            port["wready"].value = int(beat_free and bool(bursts) and not offering)
            port["rvalid"].value = int(offering)
            if offering:
                _, rid, address, last = reads[0]
                port["rdata"].value = self.lines.get(address, 0)
                port["rid"].value = rid
                port["rlast"].value = int(last)
            port["bvalid"].value = int(bool(responses) and responses[0][0] <= now)
            if responses:
                port["bid"].value = responses[0][1]

            await ReadOnly()
            fired = {
                "ar": bool(port["arvalid"].value), "aw": bool(port["awvalid"].value),
                "w": bool(port["wvalid"].value and port["wready"].value),
                "r": bool(port["rvalid"].value and port["rready"].value),
                "b": bool(port["bvalid"].value and port["bready"].value),
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
