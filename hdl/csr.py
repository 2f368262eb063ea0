"""A register block generated from a :class:`spec.regmap.RegisterMap`, on a plain CSR bus.

The bus is the port a vendor wrapper connects to (for example an Avalon-MM or AXI4-Lite
bridge); the controller's CXL.mem register window drives the same bus.
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from spec.regmap import REGISTER_BITS, REGISTER_BYTES, Access

from .arith import any_of
from .pipeline import register_copies, register_selected

__all__ = ["READ_LATENCY", "WRITE_LATENCY", "csr_bus_signature", "RegisterBlock"]

#: Clocks from a write strobe to the written value (or a ``WS`` pulse) at the block's fields
#: (see ``RegisterBlock``).
WRITE_LATENCY = 3

#: Clocks from a read strobe to its data on ``r_data`` (see ``RegisterBlock``).
READ_LATENCY = 5

#: The read selects the word within groups of ``2**_READ_GROUP_BITS`` word addresses and
#: registers each group's word, then the group within sets of ``2**_READ_SET_BITS`` groups,
#: registered again, then the set.
_READ_GROUP_BITS = 2
_READ_SET_BITS = 3


def csr_bus_signature(addr_width):
    """A register bus of ``REGISTER_BITS``-bit words, from the initiator's side.

    Members
    -------
    addr : Out(addr_width)
        Word address (byte offset / ``REGISTER_BYTES``) of the access.
    r_stb : Out(1)
        Read strobe; ``r_data`` holds the register ``READ_LATENCY`` clocks later, until the
        next read's data arrives.
    r_data : In(REGISTER_BITS)
    w_stb : Out(1)
        Write strobe: ``w_data`` is written to ``addr`` (after the block's input register).
    w_data : Out(REGISTER_BITS)
    """
    return wiring.Signature({
        "addr": Out(addr_width),
        "r_stb": Out(1),
        "r_data": In(REGISTER_BITS),
        "w_stb": Out(1),
        "w_data": Out(REGISTER_BITS),
    })


def _write_rw(m, value, bits, hit, set_strobe):
    with m.If(hit):
        m.d.sync += value.eq(bits)


def _write_rw1s(m, value, bits, hit, set_strobe):
    with m.If(hit):
        m.d.sync += value.eq(value | bits)


def _write_rw1c(m, value, bits, hit, set_strobe):
    with m.If(set_strobe):             # a set in the same clock as a clearing write wins
        m.d.sync += value.eq(1)
    with m.Elif(hit):
        m.d.sync += value.eq(value & ~bits)


def _write_ws(m, value, bits, hit, set_strobe):
    m.d.sync += value.eq(hit & bits)


#: What a bus write does to a field of each access type (``R`` fields take no writes).
_WRITES = {Access.RW: _write_rw, Access.RW1S: _write_rw1s, Access.RW1C: _write_rw1c,
           Access.WS: _write_ws}


class RegisterBlock(wiring.Component):
    """Storage and bus decode for every field of a register map.

    The owner reads and drives fields through :meth:`field` and :meth:`set_strobe`:

    - ``R`` fields: the owner drives the value (an undriven one reads as its reset value, which
      is how capability fields become constants);
    - ``RW`` and ``RW1S`` fields: stored here, the owner reads them;
    - ``RW1C`` fields: stored here; a pulse on the field's set strobe sets the flag, and a bus
      write of 1 clears it (a set in the same cycle wins);
    - ``WS`` fields: a one-cycle pulse after a bus write of 1, reads as 0.

    Every access passes registers, so that no path is longer than one decode or one mux
    level: the bus is registered on entry; a write then registers its decoded register hit and
    data, and is written (``WRITE_LATENCY`` clocks after its strobe); a read waits one clock
    (so that it sees every earlier write), selects the word within its group of
    ``2**_READ_GROUP_BITS`` word addresses, then the group within its set of
    ``2**_READ_SET_BITS`` groups, then the set (``READ_LATENCY`` clocks after its strobe).
    Accesses keep their order.

    Writes to ``lockable`` registers are ignored while the ``lock`` field is set or ``hold`` is
    high, and pulse ``locked_write``. Reads and writes outside the map read 0 and do nothing.

    Parameters
    ----------
    regmap : RegisterMap
    lock : (str, str) or None
        ``(register, field)`` of the lock bit.

    Members
    -------
    bus : In(csr_bus_signature(addr_width))
        ``addr_width`` covers the map's window in register words.
    hold : In(1)
        The owner's own write protection of the ``lockable`` registers (while it reads them).
    locked_write : Out(1)
    """

    def __init__(self, regmap, *, lock=None):
        self._regmap = regmap
        self._fields, self._sets = {}, {}
        for reg in regmap:
            for f in reg.fields:
                name = f"{reg.name}__{f.name}".lower()
                self._fields[reg.name, f.name] = Signal(f.width, init=f.reset, name=name)
                if f.access == Access.RW1C:
                    self._sets[reg.name, f.name] = Signal(name=f"{name}__set")
        if lock is not None and regmap[lock[0]].field(lock[1]).access != Access.RW1S:
            raise ValueError(f"lock field {lock[0]}.{lock[1]} must be RW1S")
        self._lock = lock
        addr_width = max(1, (regmap.window_bytes // REGISTER_BYTES - 1).bit_length())
        super().__init__({"bus": In(csr_bus_signature(addr_width)), "hold": In(1),
                          "locked_write": Out(1)})

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
            parts.append(Const(0, f.width) if f.access == Access.WS
                         else self._fields[reg.name, f.name])
            position = f.offset + f.width
        parts.append(Const(0, REGISTER_BITS - position))
        return Cat(*parts)

    def _elaborate_read(self, m, request):
        """The read in four registered steps: a wait matching the write's hit register, the
        word within each group (a dense mux on the low address bits), the group within each
        set, then the set (an AND-OR of the set words with one registered flag per set). Each
        step's mux sits next to the registers it selects from, and each group's word select
        and each byte of each set's group select take their address bits from a copy of their
        own, so that no one register's net reaches every group or every set."""
        groups = {}
        for reg in self._regmap:
            word = reg.offset // REGISTER_BYTES
            groups.setdefault(word >> _READ_GROUP_BITS, {})[word % (1 << _READ_GROUP_BITS)] = reg
        waited = Signal.like(request)
        m.d.sync += waited.eq(request)
        selects = register_copies(m, Cat(request.addr[:_READ_GROUP_BITS], request.r_stb),
                                  len(groups), "read_select")
        words = {}
        for (group, regs), select in zip(groups.items(), selects):
            words[group] = Signal(REGISTER_BITS, name=f"read_group_{group}")
            values = {k: self._read_value(reg) for k, reg in regs.items()}
            register_selected(m, words[group], values, select[:_READ_GROUP_BITS],
                              enable=select[-1])
        # The set address bits, carried beside the words.
        set_q = Signal(len(waited.addr[_READ_GROUP_BITS + _READ_SET_BITS:]))
        read_q = Signal()
        read_qq = Signal()
        m.d.sync += [read_q.eq(waited.r_stb), read_qq.eq(read_q)]
        with m.If(waited.r_stb):
            m.d.sync += set_q.eq(waited.addr[_READ_GROUP_BITS + _READ_SET_BITS:])
        sets = {}
        for group in words:
            sets.setdefault(group >> _READ_SET_BITS, []).append(group)
        set_words = {number: Signal(REGISTER_BITS, name=f"read_set_{number}") for number in sets}
        # The set, one flag per set, so that the last step is an AND-OR of the set words.
        set_hits = {number: Signal(name=f"read_set_hit_{number}") for number in sets}
        with m.If(read_q):
            m.d.sync += [hit.eq(set_q == number) for number, hit in set_hits.items()]
        # Each byte of each set word selects its group by a copy of the group bits of its own,
        # which follows the waited address a clock later (on the clock of ``read_q``, it holds
        # the read's).
        set_selects = iter(register_copies(m, waited.addr[_READ_GROUP_BITS:][:_READ_SET_BITS],
                                           len(sets) * REGISTER_BYTES, "read_set_select"))
        for number, members in sets.items():
            for byte in range(REGISTER_BYTES):
                register_selected(m, set_words[number].word_select(byte, 8),
                                  {group % (1 << _READ_SET_BITS): words[group].word_select(byte, 8)
                                   for group in members},
                                  next(set_selects), enable=read_q)
        with m.If(read_qq):
            m.d.sync += self.bus.r_data.eq(any_of(word & set_hits[number].replicate(REGISTER_BITS)
                                                  for number, word in set_words.items()))

    def elaborate(self, platform):
        m = Module()
        # The bus strobes, address and write data, registered on entry.
        request = Signal(data.StructLayout({"addr": len(self.bus.addr), "r_stb": 1, "w_stb": 1,
                                            "w_data": REGISTER_BITS}))
        m.d.sync += [request.addr.eq(self.bus.addr), request.r_stb.eq(self.bus.r_stb),
                     request.w_stb.eq(self.bus.w_stb), request.w_data.eq(self.bus.w_data)]
        locked = (self._fields[self._lock] if self._lock else Const(0)) | self.hold

        self._elaborate_read(m, request)

        hits = Signal(len(list(self._regmap)))
        w_data = Signal(REGISTER_BITS)
        m.d.sync += [hits.eq(Cat(request.w_stb & (request.addr == reg.offset // REGISTER_BYTES)
                                 for reg in self._regmap)),
                     w_data.eq(request.w_data)]
        locked_hits = []
        for index, reg in enumerate(self._regmap):
            hit = hits[index]
            if reg.lockable:
                locked_hits.append(hit & locked)
                hit = hit & ~locked
            for f in reg.fields:
                if f.access in _WRITES:
                    _WRITES[f.access](m, self._fields[reg.name, f.name],
                                      w_data[f.offset:f.offset + f.width], hit,
                                      self._sets.get((reg.name, f.name)))
        m.d.sync += self.locked_write.eq(Cat(locked_hits).any())
        return m
