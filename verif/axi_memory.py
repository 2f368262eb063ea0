"""A device-memory model with a set latency and bandwidth, for the paper's experiments.

It serves the controller's AXI4 port (single-beat transactions, as :class:`hdl.axi.AxiLineMaster`
issues them): a read's data comes ``latency`` cycles after its address, a write's response
``latency`` cycles after its data, and at most one data beat (read or write) moves every
``interval`` cycles. ``latency`` and ``interval`` may change between measurements.
"""

from collections import deque

from cocotb.triggers import ReadOnly, RisingEdge

__all__ = ["TimedMemory"]


class TimedMemory:
    def __init__(self, dut, prefix="axi", *, latency=0, interval=1):
        self.dut = dut
        self.latency, self.interval = latency, interval
        self.lines = {}
        self.errors = []
        self.beats = 0
        self._port = {name: getattr(dut, f"{prefix}__{name}") for name in (
            "awaddr", "awlen", "awvalid", "awready", "wdata", "wstrb", "wvalid", "wready",
            "bvalid", "bready", "bresp", "araddr", "arlen", "arvalid", "arready", "rdata",
            "rvalid", "rready", "rresp", "rlast")}
        self._width = len(self._port["wdata"])

    def _merge(self, address, data, strobe):
        old = self.lines.get(address, 0)
        mask = sum(0xFF << (8 * i) for i in range(self._width // 8) if strobe >> i & 1)
        self.lines[address] = (old & ~mask) | (data & mask)

    async def run(self):
        port, clock = self._port, self.dut.clk
        reads, addresses, responses = deque(), deque(), deque()
        now, next_beat = 0, 0
        offering = False            # a read beat is on the bus and has not moved yet
        fired = {}
        for name in ("arready", "awready", "rlast"):
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
                if fired["arlen"]:
                    self.errors.append(f"read burst of {fired['arlen'] + 1} beats")
                reads.append((now + self.latency, fired["araddr"]))
            if fired.get("aw"):
                if fired["awlen"]:
                    self.errors.append(f"write burst of {fired['awlen'] + 1} beats")
                addresses.append(fired["awaddr"])
            if fired.get("w"):
                self._merge(addresses.popleft(), fired["wdata"], fired["wstrb"])
                responses.append(now + self.latency)
            if fired.get("r") or fired.get("w"):
                self.beats += 1
                next_beat = now + self.interval - 1    # it moved on the last edge

            beat_free = now >= next_beat
            port["wready"].value = int(beat_free and bool(addresses))
            offering = (offering and not fired.get("r")) or (
                bool(reads) and reads[0][0] <= now and beat_free)
            port["rvalid"].value = int(offering)
            if offering:
                port["rdata"].value = self.lines.get(reads[0][1], 0)
            port["bvalid"].value = int(bool(responses) and responses[0] <= now)

            await ReadOnly()
            fired = {
                "ar": bool(port["arvalid"].value), "aw": bool(port["awvalid"].value),
                "w": bool(port["wvalid"].value and port["wready"].value),
                "r": bool(port["rvalid"].value and port["rready"].value),
                "b": bool(port["bvalid"].value and port["bready"].value),
            }
            if fired["ar"]:
                fired.update(araddr=port["araddr"].value.to_unsigned(),
                             arlen=port["arlen"].value.to_unsigned())
            if fired["aw"]:
                fired.update(awaddr=port["awaddr"].value.to_unsigned(),
                             awlen=port["awlen"].value.to_unsigned())
            if fired["w"]:
                fired.update(wdata=port["wdata"].value.to_unsigned(),
                             wstrb=port["wstrb"].value.to_unsigned())
