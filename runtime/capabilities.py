"""The device facts the runtime plans with, read from the device's capability registers
(``docs/spec.md`` section 8) through :meth:`driver.NeuronFabric.identify`.

The address space and the register window have no register (``docs/spec.md`` section 1): they
come from the device's :class:`spec.params.ControllerParams`, which ``identify`` has just
checked against the registers.
"""

from dataclasses import dataclass

from spec.params import Mode

__all__ = ["Capabilities", "read_capabilities"]


@dataclass(frozen=True)
class Capabilities:
    """What one device can count and hold."""
    line_bits: int
    counter_width: int
    capacity: int          # contributions one line accepts, 2**W - 1
    gbinary_lanes: int
    gternary_lanes: int
    regions: int
    state_lines: int
    slots: int
    acc_lines: int         # device-memory lines of one line's accumulator
    address_bits: int
    window_base: int
    window_bytes: int

    @classmethod
    def from_registers(cls, caps, params):
        """From the ``{"REG.FIELD": value}`` of :meth:`driver.NeuronFabric.identify` and the
        device's params (address space and window only)."""
        return cls(
            line_bits=caps["CAP_LINE.LINE_BITS"], counter_width=caps["CAP_LINE.COUNTER_WIDTH"],
            capacity=caps["CAP_LIMITS.CAPACITY"], gbinary_lanes=caps["CAP_LANES.GBINARY"],
            gternary_lanes=caps["CAP_LANES.GTERNARY"], regions=caps["CAP_LIMITS.REGIONS"],
            state_lines=caps["CAP_LIMITS.STATE_LINES"], slots=caps["CAP_POOL.SLOTS"],
            acc_lines=caps["CAP_POOL.ACC_LINES"], address_bits=params.address_bits,
            window_base=params.window_base, window_bytes=params.window_bytes)

    @property
    def line_bytes(self):
        return self.line_bits // 8

    @property
    def accumulator_bytes(self):
        """Device-memory bytes of one line's accumulator (accumulators align to it)."""
        return self.acc_lines * self.line_bytes

    def lanes(self, mode):
        """Lanes per line of an aggregating :class:`spec.params.Mode`."""
        return {Mode.GBINARY: self.gbinary_lanes, Mode.GTERNARY: self.gternary_lanes}[mode]

    def free_space(self):
        """``(start, end)`` of the largest stretch of device addresses outside the register
        window, where regions and accumulators go."""
        below = (0, self.window_base)
        above = (self.window_base + self.window_bytes, 1 << self.address_bits)
        return max(below, above, key=lambda r: r[1] - r[0])


async def read_capabilities(device):
    """The :class:`Capabilities` of a :class:`driver.NeuronFabric`."""
    return Capabilities.from_registers(await device.identify(), device.params)
