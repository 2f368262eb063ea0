"""A register block generated from a :class:`spec.regmap.RegisterMap`, on a plain CSR bus.

The bus is the port a vendor wrapper connects to (for example an Avalon-MM or AXI4-Lite
bridge); the controller's CXL.mem register window drives the same bus.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from spec.regmap import REGISTER_BITS, REGISTER_BYTES, Access

from .arith import any_of
from .pipeline import register_copies, register_selected

__all__ = ["READ_LATENCY", "WRITE_LATENCY", "TABLE_READ_LATENCY", "csr_bus_signature",
           "RegisterTable", "RegisterBlock"]

#: Clocks from a write strobe to the written value (or a ``WS`` pulse) at the block's fields
#: (see ``RegisterBlock``).
WRITE_LATENCY = 3

#: Clocks from a read strobe to its data on ``r_data`` (see ``RegisterBlock``).
READ_LATENCY = 5

#: Clocks from ``RegisterBlock.table_index`` to its row on ``table_row``.
TABLE_READ_LATENCY = 2

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


class RegisterTable:
    """Rows of registers with the same columns (a register of each column in every row, with
    the same fields), which a :class:`RegisterBlock` keeps in memory instead of flip-flops: one
    memory per column, a row per word. Its owner reads a whole row at a time by index, and the
    bus reads a register as a memory word, so that neither read is a mux over every row's
    flip-flops.

    Row ``r``'s column ``c`` sits at register word ``first + r * stride + c``, with ``stride``
    a power of two no smaller than the column count and ``first`` a multiple of it (the bus
    address then splits into a row and a column; the words of a stride past the columns are
    outside the map). Table registers have only ``RW`` fields.

    Parameters
    ----------
    regmap : RegisterMap
    rows : list of dict
        ``{column name: register name}`` for each row, with the same column names in each.
    """

    def __init__(self, regmap, rows):
        if not rows or any(row.keys() != rows[0].keys() for row in rows):
            raise ValueError("a register table needs one or more rows, each with the same "
                             "column names")
        self.columns = tuple(rows[0])
        self.rows = len(rows)
        self.registers = [[regmap[row[column]] for column in self.columns] for row in rows]
        words = [[reg.offset // REGISTER_BYTES for reg in row] for row in self.registers]
        stride = words[1][0] - words[0][0] if len(rows) > 1 \
            else 1 << (len(self.columns) - 1).bit_length()
        self.column_bits = (stride - 1).bit_length()
        if stride < len(self.columns) or stride != 1 << self.column_bits:
            raise ValueError(f"table rows are {stride} words apart; they must be a power of "
                             f"two of at least {len(self.columns)} (the columns) apart")
        self.first_row = words[0][0] >> self.column_bits
        for r, row in enumerate(self.registers):
            for c, reg in enumerate(row):
                want = (self.first_row + r) * stride + c
                if words[r][c] != want:
                    raise ValueError(f"table register {reg.name} is at word {words[r][c]:#x}; "
                                     f"row {r} column {c} must be at word {want:#x} (rows "
                                     f"{stride} words apart, columns in order)")
                first = self.registers[0][c]
                if [(f.name, f.offset, f.width, f.reset) for f in reg.fields] != \
                        [(f.name, f.offset, f.width, f.reset) for f in first.fields] \
                        or reg.lockable != self.registers[0][0].lockable:
                    raise ValueError(f"table register {reg.name} differs from {first.name}, "
                                     f"the first of its column (fields, or lockable)")
                for f in reg.fields:
                    if f.access != Access.RW:
                        raise ValueError(f"table register {reg.name}: field {f.name} is "
                                         f"{f.access.value}; a table holds RW fields only")
        self.names = {reg.name for row in self.registers for reg in row}
        self.lockable = self.registers[0][0].lockable

    def column_layout(self, c):
        """The fields of column ``c``, in register order."""
        return data.StructLayout({f.name: f.width for f in self.registers[0][c].fields})

    @property
    def row_layout(self):
        return data.StructLayout({column: self.column_layout(c)
                                  for c, column in enumerate(self.columns)})

    def column_reset(self, c):
        """Column ``c``'s reset value, packed in :meth:`column_layout` (an int)."""
        layout = self.column_layout(c)
        return sum(f.reset << layout[f.name].offset for f in self.registers[0][c].fields)

    def locate(self, addr):
        """``(hit, row, column)`` of a bus word address: whether it is a table register's."""
        row = addr[self.column_bits:] - self.first_row
        column = addr[:self.column_bits]
        hit = (addr[self.column_bits:] >= self.first_row) & (row < self.rows) \
            & (column < len(self.columns))
        return hit, row[:max(1, (self.rows - 1).bit_length())], column


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

    The registers of a :class:`RegisterTable` live in memory, with the same bus timing. A reset
    cannot reach memory, so each row has a flag, cleared by reset: a row whose flag is clear
    reads its reset values, and the first write to it writes the reset values of its other
    columns beside the written one (and sets the flag).

    Parameters
    ----------
    regmap : RegisterMap
    lock : (str, str) or None
        ``(register, field)`` of the lock bit.
    table : list of dict, or None
        The rows of a :class:`RegisterTable`, ``{column name: register name}`` each.

    Members
    -------
    bus : In(csr_bus_signature(addr_width))
        ``addr_width`` covers the map's window in register words.
    hold : In(1)
        The owner's own write protection of the ``lockable`` registers (while it reads them).
    locked_write : Out(1)
    table_index : In(range(rows)), with a table
        The row the owner reads.
    table_row : Out(table.row_layout), with a table
        The row at ``table_index`` of ``TABLE_READ_LATENCY`` clocks before, as written by then.
    """

    def __init__(self, regmap, *, lock=None, table=None):
        self._regmap = regmap
        self._table = None if table is None else RegisterTable(regmap, table)
        self._fields, self._sets = {}, {}
        for reg in regmap:
            if reg.name in self.table_names:
                continue
            for f in reg.fields:
                name = f"{reg.name}__{f.name}".lower()
                self._fields[reg.name, f.name] = Signal(f.width, init=f.reset, name=name)
                if f.access == Access.RW1C:
                    self._sets[reg.name, f.name] = Signal(name=f"{name}__set")
        if lock is not None and regmap[lock[0]].field(lock[1]).access != Access.RW1S:
            raise ValueError(f"lock field {lock[0]}.{lock[1]} must be RW1S")
        self._lock = lock
        addr_width = max(1, (regmap.window_bytes // REGISTER_BYTES - 1).bit_length())
        members = {"bus": In(csr_bus_signature(addr_width)), "hold": In(1),
                   "locked_write": Out(1)}
        if self._table is not None:
            members.update(table_index=In(range(self._table.rows)),
                           table_row=Out(self._table.row_layout))
        # High on the clocks that write a table row (its memory changes on no other).
        self.table_written = Signal()
        super().__init__(members)

    @property
    def regmap(self):
        return self._regmap

    @property
    def table_names(self):
        """The names of the table's registers (none without a table)."""
        return set() if self._table is None else self._table.names

    def field(self, reg, name):
        """The signal of field ``name`` of register ``reg`` (not of a table register)."""
        if reg in self.table_names:
            raise KeyError(f"{reg} is a table register: read it through table_row")
        return self._fields[reg, name]

    def set_strobe(self, reg, name):
        """The set strobe of ``RW1C`` field ``name`` of register ``reg``."""
        return self._sets[reg, name]

    def _read_value(self, reg, value_of=None):
        """The bus word of ``reg``, its fields' values from ``value_of(field)`` (by default
        the block's own signals)."""
        value_of = value_of or (lambda f: self._fields[reg.name, f.name])
        parts, position = [], 0
        for f in sorted(reg.fields, key=lambda f: f.offset):
            parts.append(Const(0, f.offset - position))
            parts.append(Const(0, f.width) if f.access == Access.WS else value_of(f))
            position = f.offset + f.width
        parts.append(Const(0, REGISTER_BITS - position))
        return Cat(*parts)

    def _elaborate_read(self, m, request, registers, table_read):
        """The read in four registered steps: a wait matching the write's hit register, the
        word within each group (a dense mux on the low address bits), the group within each
        set, then the set (an AND-OR of the set words with one registered flag per set). Each
        step's mux sits next to the registers it selects from, and each group's word select
        and each byte of each set's group select take their address bits from a copy of their
        own, so that no one register's net reaches every group or every set.

        ``registers`` are the flip-flop registers; a table register's read takes the same
        steps: the wait, its row's memory read (from the waited address), the column (or the
        column's reset value, before the row's first write), then the AND-OR with the sets."""
        groups = {}
        for reg in registers:
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
        hit_words = [(word, set_hits[number]) for number, word in set_words.items()]
        if table_read is not None:
            hit_words.append(self._table_word(m, waited, read_q, *table_read))
        with m.If(read_qq):
            m.d.sync += self.bus.r_data.eq(any_of(word & hit.replicate(REGISTER_BITS)
                                                  for word, hit in hit_words))

    def _table_word(self, m, waited, read_q, ports, written):
        """The table's step of a read: ``(word, hit)`` registered on the clock of the set
        words and their flags."""
        table = self._table
        hit, row, column = table.locate(waited.addr)
        hit_q, column_q, written_q = Signal(), Signal.like(column), Signal()
        m.d.sync += [hit_q.eq(waited.r_stb & hit), column_q.eq(column),
                     written_q.eq(written.bit_select(row, 1))]
        values = {}
        for c, (port, reg) in enumerate(zip(ports, table.registers[0])):
            m.d.comb += port.addr.eq(row)
            view = table.column_layout(c)(port.data)
            values[c] = self._read_value(reg, lambda f, view=view: view[f.name])
            values[(1 << len(column)) + c] = reg.reset
        word, word_hit = Signal(REGISTER_BITS, name="read_table"), Signal(name="read_table_hit")
        register_selected(m, word, values, Cat(column_q, ~written_q), enable=read_q)
        with m.If(read_q):
            m.d.sync += word_hit.eq(hit_q)
        return word, word_hit

    def elaborate(self, platform):
        m = Module()
        # The bus strobes, address and write data, registered on entry.
        request = Signal(data.StructLayout({"addr": len(self.bus.addr), "r_stb": 1, "w_stb": 1,
                                            "w_data": REGISTER_BITS}))
        m.d.sync += [request.addr.eq(self.bus.addr), request.r_stb.eq(self.bus.r_stb),
                     request.w_stb.eq(self.bus.w_stb), request.w_data.eq(self.bus.w_data)]
        locked = (self._fields[self._lock] if self._lock else Const(0)) | self.hold

        # The registers in flip-flops.
        registers = [reg for reg in self._regmap if reg.name not in self.table_names]
        hits = Signal(len(registers))
        w_data = Signal(REGISTER_BITS)
        m.d.sync += [hits.eq(Cat(request.w_stb & (request.addr == reg.offset // REGISTER_BYTES)
                                 for reg in registers)),
                     w_data.eq(request.w_data)]
        locked_hits = []
        for index, reg in enumerate(registers):
            hit = hits[index]
            if reg.lockable:
                locked_hits.append(hit & locked)
                hit = hit & ~locked
            for f in reg.fields:
                if f.access in _WRITES:
                    _WRITES[f.access](m, self._fields[reg.name, f.name],
                                      w_data[f.offset:f.offset + f.width], hit,
                                      self._sets.get((reg.name, f.name)))
        table_read = None
        if self._table is not None:
            table_read = self._elaborate_table(m, request, w_data, locked, locked_hits)
        self._elaborate_read(m, request, registers, table_read)
        m.d.sync += self.locked_write.eq(Cat(locked_hits).any())
        return m

    def _elaborate_table(self, m, request, w_data, locked, locked_hits):
        """The table's memories: the writes (on the clock the flip-flop registers take
        theirs), the row flags and the owner's read. Returns ``(bus read ports, row flags)``."""
        table = self._table
        hit, row, column = table.locate(request.addr)
        w_hit = Signal()
        w_row = Signal.like(row)
        w_column = Signal(len(table.columns))      # one-hot
        m.d.sync += [w_hit.eq(request.w_stb & hit), w_row.eq(row),
                     w_column.eq(Cat(column == c for c in range(len(table.columns))))]
        write = w_hit
        if table.lockable:
            locked_hits.append(w_hit & locked)
            write = w_hit & ~locked
        m.d.comb += self.table_written.eq(write)
        written = Signal(table.rows)            # the row's flag: written since reset
        row_written = written.bit_select(w_row, 1)
        with m.If(write):
            m.d.sync += written.bit_select(w_row, 1).eq(1)

        bus_ports, own_reads = [], []
        for c, column_name in enumerate(table.columns):
            reset = table.column_reset(c)
            fields = table.registers[0][c].fields
            memory = Memory(shape=table.column_layout(c).size, depth=table.rows,
                            init=[reset] * table.rows)
            m.submodules[f"table_{column_name.lower()}"] = memory
            write_port = memory.write_port()
            m.d.comb += [
                write_port.addr.eq(w_row),
                # The first write to a row writes its other columns' reset values too.
                write_port.en.eq(write & (w_column[c] | ~row_written)),
                write_port.data.eq(Mux(w_column[c],
                                       Cat(w_data[f.offset:f.offset + f.width] for f in fields),
                                       reset)),
            ]
            bus_ports.append(memory.read_port())
            own = memory.read_port()
            m.d.comb += own.addr.eq(self.table_index)
            own_reads.append((own.data, reset))
        own_written = Signal()
        m.d.sync += [own_written.eq(written.bit_select(self.table_index, 1)),
                     self.table_row.eq(Cat(Mux(own_written, value, reset)
                                           for value, reset in own_reads))]
        return bus_ports, written
