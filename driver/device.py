"""Host driver for a NEURON-Fabric device: program regions, clear, read status and counters.

The driver speaks to the control registers through the device's CXL.mem register window, over
any *transport* that reads and writes whole lines::

    class Transport:
        async def read_line(self, address: int) -> bytes: ...
        async def write_line(self, address: int, data: bytes, byte_enable: int) -> None: ...

(``bench.cxl_host.CxlHost`` is one, over cocotb.) Register offsets and fields come from
:func:`spec.regmap.register_map`, the same description the RTL is generated from.
"""

from spec.formats import memory_to_state, unpack_state
from spec.params import REGISTER_BITS, Mode
from spec.regmap import (
    CONFIG_ERROR_HELP,
    COUNTERS,
    ID_MAGIC,
    REGISTER_BYTES,
    STATUS_FLAGS,
    ConfigError,
    Region,
    register_map,
)

__all__ = ["DeviceError", "ConfigurationError", "NeuronFabric"]

#: Register polls before a busy bit that does not clear is reported as an error.
MAX_POLLS = 10_000


class DeviceError(Exception):
    """The device did not do what was asked; the message says what and what to check."""


class ConfigurationError(DeviceError):
    """``CTRL.APPLY`` refused the regions; ``region`` and ``reason`` say which and why."""

    def __init__(self, region, reason):
        self.region, self.reason = region, reason
        super().__init__(f"APPLY refused region {region}: {reason.name} "
                         f"({CONFIG_ERROR_HELP[reason]}); the previous configuration stays "
                         f"in force")


class NeuronFabric:
    """One device.

    Parameters
    ----------
    transport
        Reads and writes lines of the device (see the module docstring).
    params : ControllerParams
        The device's generator parameters (checked against its capability registers by
        :meth:`identify`).
    """

    def __init__(self, transport, params):
        self.transport = transport
        self.params = params
        self.regmap = register_map(params)
        self._line_bytes = params.datapath.line_bytes

    # Registers.
    def _locate(self, name):
        """``(line address, byte in line)`` of register ``name``."""
        offset = self.regmap[name].offset
        return (self.params.window_base + offset - offset % self._line_bytes,
                offset % self._line_bytes)

    async def read(self, name):
        """The value of register ``name``."""
        line, byte = self._locate(name)
        data = await self.transport.read_line(line)
        return int.from_bytes(data[byte:byte + REGISTER_BYTES], "little")

    async def write(self, name, value):
        """Write ``value`` to register ``name`` (a partial write of its bytes)."""
        if not 0 <= value < 1 << REGISTER_BITS:
            raise ValueError(f"register {name} takes {REGISTER_BITS}-bit values, not {value!r}")
        line, byte = self._locate(name)
        data = bytearray(self._line_bytes)
        data[byte:byte + REGISTER_BYTES] = value.to_bytes(REGISTER_BYTES, "little")
        await self.transport.write_line(line, bytes(data),
                                        ((1 << REGISTER_BYTES) - 1) << byte)

    async def field(self, reg, name):
        return self.regmap[reg].unpack(await self.read(reg))[name]

    async def _poll(self, reg, name, until, what):
        for _ in range(MAX_POLLS):
            if await self.field(reg, name) == until:
                return
        raise DeviceError(f"{what}: {reg}.{name} did not become {until} within {MAX_POLLS} "
                          f"reads; is the device clocked and out of reset?")

    # Operations.
    async def identify(self):
        """The capability fields; raises :class:`DeviceError` if the device is not a
        NEURON-Fabric or was generated with other parameters than ``params``."""
        magic = await self.read("ID")
        if magic != ID_MAGIC:
            raise DeviceError(f"ID reads {magic:#010x}, not {ID_MAGIC:#010x} (\"NFAB\"): wrong "
                              f"window base {self.params.window_base:#x}?")
        caps = {}
        for reg in ("CAP_LINE", "CAP_LANES", "CAP_LIMITS", "CAP_POOL"):
            value = self.regmap[reg].unpack(await self.read(reg))
            for f in self.regmap[reg].fields:
                caps[f"{reg}.{f.name}"] = value[f.name]
                if caps[f"{reg}.{f.name}"] != f.reset:
                    raise DeviceError(f"{reg}.{f.name} reads {caps[f'{reg}.{f.name}']}, but "
                                      f"the driver was made for {f.reset}: pass the device's "
                                      f"own ControllerParams")
        return caps

    async def configure(self, regions):
        """Program ``regions`` (a list of :class:`spec.regmap.Region`, index = region
        number; missing ones are disabled) and apply them. Raises
        :class:`ConfigurationError` when the device refuses them."""
        if len(regions) > self.params.regions:
            raise ValueError(f"the device has {self.params.regions} regions, "
                             f"not {len(regions)}")
        regions = list(regions) + [Region()] * (self.params.regions - len(regions))
        for index, r in enumerate(regions):
            for reg, value in (("BASE", r.base), ("SIZE", r.size), ("ACC", r.acc)):
                await self.write(f"R{index}_{reg}_LO", value & ((1 << REGISTER_BITS) - 1))
                await self.write(f"R{index}_{reg}_HI", value >> REGISTER_BITS)
            await self.write(f"R{index}_CFG", self.regmap[f"R{index}_CFG"].pack(
                ENABLE=int(r.enable), MODE=r.mode))
            await self.write(f"R{index}_AGG", self.regmap[f"R{index}_AGG"].pack(
                THRESHOLD=r.threshold, EXPECTED=r.expected))
        await self._ctrl(APPLY=1)
        await self._poll("STATUS", "APPLY_BUSY", 0, "APPLY")
        reason = ConfigError(await self.field("CFG_ERROR", "REASON"))
        if reason != ConfigError.NONE:
            raise ConfigurationError(await self.field("CFG_ERROR", "REGION"), reason)

    async def _ctrl(self, **strobes):
        """Write CTRL keeping ENABLE and CLEAR_REGION, adding one-shot ``strobes``."""
        ctrl = await self.read("CTRL")
        keep = ctrl & (self.regmap["CTRL"].field("ENABLE").mask
                       | self.regmap["CTRL"].field("CLEAR_REGION").mask)
        await self.write("CTRL", keep | self.regmap["CTRL"].pack(**strobes))

    async def enable(self, on=True):
        """Set ``CTRL.ENABLE``: applied regions aggregate (``False``: everything is identity)."""
        keep = await self.read("CTRL") & self.regmap["CTRL"].field("CLEAR_REGION").mask
        await self.write("CTRL", keep | self.regmap["CTRL"].pack(ENABLE=int(on)))

    async def lock(self):
        """Make the region configuration read-only until the device is reset."""
        await self._ctrl(LOCK=1)

    async def _command(self, name, what, **fields):
        """Run register command ``name`` (CLEAR or FLUSH) and wait for its ``<name>_DONE``."""
        done = self.regmap["STATUS"].field(f"{name}_DONE").mask
        await self.write("STATUS", done)
        ctrl = await self.read("CTRL") & self.regmap["CTRL"].field("ENABLE").mask
        await self.write("CTRL", ctrl | self.regmap["CTRL"].pack(**{name: 1}, **fields))
        await self._poll("STATUS", f"{name}_DONE", 1, what)
        await self.write("STATUS", done)

    async def clear(self, region):
        """Zero the accumulators of ``region`` (on chip and in device memory) and wait until
        the device reports done."""
        if not 0 <= region < self.params.regions:
            raise ValueError(f"region must be 0 to {self.params.regions - 1}, not {region!r}")
        await self._command("CLEAR", f"CLEAR of region {region}", CLEAR_REGION=region)

    async def flush(self):
        """Write every accumulator kept on chip back to device memory, and wait until the
        device reports done: device memory then holds the exact state of every line (for a
        checkpoint, or a reader that bypasses the device)."""
        await self._command("FLUSH", "FLUSH")

    async def status(self):
        """The sticky flags, by name, and the busy bits."""
        return {name: bool(value) for name, value
                in self.regmap["STATUS"].unpack(await self.read("STATUS")).items()}

    async def clear_status(self, *names):
        """Clear sticky flags ``names`` (all of them when none are named)."""
        names = names or [flag.name for flag in STATUS_FLAGS]
        await self.write("STATUS", sum(self.regmap["STATUS"].field(n).mask for n in names))

    async def counters(self):
        """The event counters, by name."""
        return {counter.name: await self.read(f"CNT_{counter.name}") for counter in COUNTERS}

    async def read_state(self, region, line):
        """``(lanes, n)`` of line number ``line`` of ``region`` (a :class:`spec.regmap.Region`):
        counts ``c`` (G-Binary) or sums ``s`` (G-Ternary) per lane, read from the raw
        accumulator lines (the state after the result line). The device answers reads of
        accumulator memory coherently, with lines still on chip written back first, so the
        state is exact."""
        if region.mode not in (Mode.GBINARY.value, Mode.GTERNARY.value):
            raise ValueError(f"region mode {region.mode} keeps no accumulator state")
        if not 0 <= line < region.size // self._line_bytes:
            raise ValueError(f"line {line} is outside the region's "
                             f"{region.size // self._line_bytes} lines")
        start = region.acc + line * self.params.accumulator_bytes_per_line + self._line_bytes
        raw = b"".join([await self.transport.read_line(start + i * self._line_bytes)
                        for i in range(self.params.datapath.state_lines)])
        lanes, n = unpack_state(self.params.datapath, Mode(region.mode),
                                memory_to_state(self.params.datapath, [list(raw)]))
        return lanes[0], int(n[0])
