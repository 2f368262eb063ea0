"""A register block generated from a :class:`hdl.regmap.RegisterMap`, on a plain CSR bus.

The bus is the port a vendor wrapper connects to (for example an Avalon-MM or AXI4-Lite
bridge); the controller's CXL.mem register window drives the same bus.
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["csr_bus_signature", "RegisterBlock"]


def csr_bus_signature(addr_width):
    """A 32-bit register bus, from the initiator's side.

    Members
    -------
    addr : Out(addr_width)
        Word address (byte offset / 4) of the access.
    r_stb : Out(1)
        Read strobe; ``r_data`` holds the register one cycle later.
    r_data : In(32)
    w_stb : Out(1)
        Write strobe: ``w_data`` is written this cycle.
    w_data : Out(32)
    """
    return wiring.Signature({
        "addr": Out(addr_width),
        "r_stb": Out(1),
        "r_data": In(32),
        "w_stb": Out(1),
        "w_data": Out(32),
    })


class RegisterBlock(wiring.Component):
    """Storage and bus decode for every field of a register map.

    The owner reads and drives fields through :meth:`field` and :meth:`set_strobe`:

    - ``R`` fields: the owner drives the value (an undriven one reads as its reset value, which
      is how capability fields become constants);
    - ``RW`` and ``RW1S`` fields: stored here, the owner reads them;
    - ``RW1C`` fields: stored here; a pulse on the field's set strobe sets the flag, and a bus
      write of 1 clears it (a set in the same cycle wins);
    - ``WS`` fields: a one-cycle pulse, the cycle after a bus write of 1, reads as 0.

    Writes to ``lockable`` registers are ignored while the ``lock`` field is set, and pulse
    ``locked_write``. Reads and writes outside the map read 0 and do nothing.

    Parameters
    ----------
    regmap : RegisterMap
    lock : (str, str) or None
        ``(register, field)`` of the lock bit.

    Members
    -------
    bus : In(csr_bus_signature(addr_width))
        ``addr_width`` covers the map's window in 32-bit words.
    locked_write : Out(1)
    """

    def __init__(self, regmap, *, lock=None):
        self._regmap = regmap
        self._fields, self._sets = {}, {}
        for reg in regmap:
            for f in reg.fields:
                name = f"{reg.name}__{f.name}".lower()
                self._fields[reg.name, f.name] = Signal(f.width, init=f.reset, name=name)
                if f.access == "RW1C":
                    self._sets[reg.name, f.name] = Signal(name=f"{name}__set")
        if lock is not None and regmap[lock[0]].field(lock[1]).access != "RW1S":
            raise ValueError(f"lock field {lock[0]}.{lock[1]} must be RW1S")
        self._lock = lock
        addr_width = max(1, (regmap.window_bytes // 4 - 1).bit_length())
        super().__init__({"bus": In(csr_bus_signature(addr_width)), "locked_write": Out(1)})

    @property
    def regmap(self):
        return self._regmap

    def field(self, reg, name):
        """The signal of field ``name`` of register ``reg``."""
        return self._fields[reg, name]

    def set_strobe(self, reg, name):
        """The set strobe of ``RW1C`` field ``name`` of register ``reg``."""
        return self._sets[reg, name]

    def _read_value(self, reg):
        parts, position = [], 0
        for f in sorted(reg.fields, key=lambda f: f.offset):
            parts.append(Const(0, f.offset - position))
            parts.append(Const(0, f.width) if f.access == "WS" else self._fields[reg.name, f.name])
            position = f.offset + f.width
        return Cat(*parts)

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        locked = self._fields[self._lock] if self._lock else Const(0)

        with m.If(bus.r_stb):
            with m.Switch(bus.addr):
                for reg in self._regmap:
                    with m.Case(reg.offset // 4):
                        m.d.sync += bus.r_data.eq(self._read_value(reg))
                with m.Default():
                    m.d.sync += bus.r_data.eq(0)

        locked_hits = []
        for reg in self._regmap:
            hit = bus.w_stb & (bus.addr == reg.offset // 4)
            if reg.lockable:
                locked_hits.append(hit & locked)
                hit = hit & ~locked
            for f in reg.fields:
                value = self._fields[reg.name, f.name]
                bits = bus.w_data[f.offset:f.offset + f.width]
                if f.access == "RW":
                    with m.If(hit):
                        m.d.sync += value.eq(bits)
                elif f.access == "RW1S":
                    with m.If(hit):
                        m.d.sync += value.eq(value | bits)
                elif f.access == "RW1C":
                    with m.If(self._sets[reg.name, f.name]):
                        m.d.sync += value.eq(1)
                    with m.Elif(hit):
                        m.d.sync += value.eq(value & ~bits)
                elif f.access == "WS":
                    m.d.sync += value.eq(hit & bits)
        m.d.sync += self.locked_write.eq(Cat(locked_hits).any())
        return m
