"""Block RAM with a registered output: one write and one read per clock, the read answered two
clocks after its address.

A block RAM's read data straight from the array is slow: on the LFE5UM-85F (speed grade 6, as
nextpnr models it) a DP16KD without its output register gives its data 5.8 ns after the clock,
most of a 150 MHz period before any logic has run; with the output register (``REGMODE`` =
``OUTREG``) it gives it after 1 ns. Yosys infers block RAMs without that register, so the ECP5
form instantiates the primitive itself (``primitives="ecp5"``); the portable form, the one every
simulation runs, is an inferred memory and a register behind it, with the same two-clock
timing.
"""

from amaranth import C, Cat, ClockSignal, Instance, Module, Signal, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["PRIMITIVES", "READ_LATENCY", "ECP5_DEPTH", "ECP5_WIDTH", "BLOCKS_PER_COPY",
           "address_copies", "copy_slices", "ecp5_blocks", "Interleave", "RegisteredMemory"]

#: The vendor primitive forms a design can be generated with (``None``: inferred memories).
PRIMITIVES = (None, "ecp5")

#: Clocks from a read address to its data.
READ_LATENCY = 2

#: A DP16KD as one 512 x 36 pseudo-dual-port block: write on port A, read on port B; the data
#: bits 0-17 on the A pins, 18-35 on the B pins; in this mode ``ADA0``-``ADA3`` are the
#: write-enables of the four 9-bit bytes and the address is on pins 5-13 (the pin use of
#: Yosys's own mapping of this mode, ``techlibs/lattice/brams_map_16kd.v``).
ECP5_DEPTH, ECP5_WIDTH = 512, 36
_ADDRESS_PIN, _BYTE_ENABLES, _HALF = 5, 4, 18

#: Block columns (of :data:`ECP5_WIDTH` bits) that one copy of a memory's addresses and write
#: enable reaches (pipeline rule 2): a wide memory's blocks sit in rows across the die, and in
#: the routed controller one register reaching 86 of them took up to 12 ns.
BLOCKS_PER_COPY = 8


def address_copies(width):
    """How many copies of its addresses a :class:`RegisteredMemory` of ``width`` bits takes:
    one per :data:`BLOCKS_PER_COPY` block columns."""
    return -(-width // (ECP5_WIDTH * BLOCKS_PER_COPY))


def copy_slices(width, copies):
    """The bits of a ``width``-bit word that each of ``copies`` copies of a
    :class:`RegisteredMemory`'s addresses reaches, as slices: whole block columns of
    :data:`ECP5_WIDTH` bits, as many for each copy but the last."""
    columns = -(-width // ECP5_WIDTH)
    group_bits = -(-columns // copies) * ECP5_WIDTH
    return [slice(start, min(width, start + group_bits))
            for start in range(0, width, group_bits)]


def ecp5_blocks(width, depth):
    """How many DP16KD blocks the ECP5 form of a :class:`RegisteredMemory` of ``depth`` words
    of ``width`` bits takes: its block columns times its banks."""
    return -(-width // ECP5_WIDTH) * -(-depth // ECP5_DEPTH)


class Interleave:
    """Several values of ``width`` bits (``ways``) side by side in one word, laid out so that
    each block column (:data:`ECP5_WIDTH` bits) holds the same bits of every value: ``chunk``
    bits of each, value 0's first. A choice among the values read from a
    :class:`RegisteredMemory` of such words is then made beside each block, from its own
    outputs, not from blocks spread over the die.

    Bit ``i`` of value ``v`` is at ``(i // chunk) * group_bits + v * chunk + i % chunk``, where
    a group (the ``chunk`` bits of every value) fills whole block columns; the bits beyond the
    values (padding) are 0. With more than :data:`ECP5_WIDTH` values a group (a bit of each)
    spans several columns, and a number of values that does not divide it leaves part of each
    group's last column unused (19 values: 17 of its 36 bits).
    """

    def __init__(self, *, width, ways):
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be a positive integer, not {width!r}")
        if not isinstance(ways, int) or ways < 1:
            raise ValueError(f"ways must be a positive integer, not {ways!r}")
        self.width, self.ways = width, ways
        self.chunk = max(1, ECP5_WIDTH // ways)
        self.group_bits = -(-ways * self.chunk // ECP5_WIDTH) * ECP5_WIDTH
        self._groups = -(-width // self.chunk)

    @property
    def word_bits(self):
        """Bits of a word: whole groups."""
        return self._groups * self.group_bits

    def pack(self, values):
        """The word holding ``values`` (``ways`` values of ``width`` bits each)."""
        values = [Value.cast(value) for value in values]
        if len(values) != self.ways or any(len(value) != self.width for value in values):
            raise ValueError(f"pack takes {self.ways} values of {self.width} bits, not "
                             f"{[len(value) for value in values]}")
        padded = [Cat(value, C(0, self._groups * self.chunk - self.width)) for value in values]
        pad = C(0, self.group_bits - self.ways * self.chunk)
        return Cat(*(Cat(*(value[g * self.chunk:][:self.chunk] for value in padded), pad)
                     for g in range(self._groups)))

    def unpack(self, word, way):
        """Value ``way`` of ``word``."""
        start = way * self.chunk
        return Cat(*(word[g * self.group_bits + start:][:self.chunk]
                     for g in range(self._groups)))[:self.width]

    def value_bits(self, word_bits):
        """The bits of the values that the slice ``word_bits`` of a word holds (of some of
        them), as a slice: the groups it touches."""
        first = word_bits.start // self.group_bits
        last = -(-word_bits.stop // self.group_bits)
        return slice(first * self.chunk, min(self.width, last * self.chunk))


class RegisteredMemory(wiring.Component):
    """``depth`` words of ``width`` bits, one write port and one read port, both every clock.

    The addresses and the write enable come in ``copies`` copies, which the owner keeps
    equal: the word's block columns are cut into ``copies`` groups, and copy ``k`` reaches
    only group ``k`` (pipeline rule 2; the portable form is cut the same way, so that every
    simulation reads each copy where the blocks do).

    Members
    -------
    read_addr : In(data.ArrayLayout(range(depth), copies))
        Read every clock.
    read_data : Out(width)
        The word at the ``read_addr`` of two clocks before (:data:`READ_LATENCY`), as memory
        held it before the first of those two clock edges: a write on either edge is not in
        it, and a read and a write of the same word on the first edge collide (the ECP5 block's
        data is then not defined; the portable form gives the old word). A user forwards the
        words of those two writes itself.
    write_addr : In(data.ArrayLayout(range(depth), copies))
    write_data : In(width)
    write_en : In(copies)

    Parameters
    ----------
    width, depth : int
    copies : int
        From 1 to the block columns of a word, :func:`address_copies` for a wide one.
    primitives : None or "ecp5"
        ``"ecp5"``: DP16KD blocks of :data:`ECP5_DEPTH` x :data:`ECP5_WIDTH` with their output
        registers, as many as the width needs (side by side) times the depth needs (banks, the
        read data chosen after the output registers).
    """

    def __init__(self, *, width, depth, primitives=None, copies=1):
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be a positive integer, not {width!r}")
        if not isinstance(depth, int) or depth < 2:
            raise ValueError(f"depth must be an integer of at least 2, not {depth!r}")
        if primitives not in PRIMITIVES:
            raise ValueError(f"primitives must be one of {PRIMITIVES}, not {primitives!r}")
        columns = -(-width // ECP5_WIDTH)
        if not isinstance(copies, int) or not 1 <= copies <= columns:
            raise ValueError(f"copies must be an integer from 1 to the {columns} block "
                             f"columns of a {width}-bit word, not {copies!r}")
        self._width, self._depth, self._primitives = width, depth, primitives
        # Block columns per copy: the groups are equal, but for the last.
        self._per_copy = -(-columns // copies)
        address = data.ArrayLayout(range(depth), copies)
        super().__init__({
            "read_addr": In(address),
            "read_data": Out(width),
            "write_addr": In(address),
            "write_data": In(width),
            "write_en": In(copies),
        })

    @property
    def width(self):
        """Bits of a word."""
        return self._width

    @property
    def depth(self):
        """Words held."""
        return self._depth

    def _copy_of(self, column):
        """The copy of the addresses that block column ``column`` takes."""
        return column // self._per_copy

    def elaborate(self, platform):
        if self._primitives == "ecp5":
            return self._ecp5()
        m = Module()
        for k, bits in enumerate(copy_slices(self._width, len(self.write_en))):
            m.submodules[f"array{k}"] = array = Memory(
                shape=unsigned(len(self.write_data[bits])), depth=self._depth, init=[])
            read = array.read_port()
            write = array.write_port()
            m.d.comb += [read.addr.eq(self.read_addr[k]), write.addr.eq(self.write_addr[k]),
                         write.data.eq(self.write_data[bits]), write.en.eq(self.write_en[k])]
            m.d.sync += self.read_data[bits].eq(read.data)
        return m

    def _ecp5(self):
        m = Module()
        columns = -(-self._width // ECP5_WIDTH)
        banks = -(-self._depth // ECP5_DEPTH)
        low_bits = (min(self._depth, ECP5_DEPTH) - 1).bit_length()
        bank_bits = (banks - 1).bit_length()
        data_in = Cat(self.write_data, C(0, columns * ECP5_WIDTH - self._width))
        outputs = []
        for bank in range(banks):
            out = Signal(columns * ECP5_WIDTH, name=f"bank{bank}")
            for column in range(columns):
                k = self._copy_of(column)
                write_addr, read_addr = self.write_addr[k], self.read_addr[k]
                bank_write = self.write_en[k]
                if bank_bits:
                    bank_write = bank_write & (write_addr[low_bits:] == bank)
                bits = slice(column * ECP5_WIDTH, (column + 1) * ECP5_WIDTH)
                m.submodules[f"bank{bank}_column{column}"] = self._block(
                    write_addr[:low_bits], read_addr[:low_bits], bank_write, data_in[bits],
                    out[bits])
            outputs.append(out[:self._width])
        if not bank_bits:
            m.d.comb += self.read_data.eq(outputs[0])
            return m
        # The bank of the data in the output registers: the read address, two clocks late.
        late = Signal(bank_bits)
        bank = Signal(bank_bits)
        m.d.sync += [late.eq(self.read_addr[0][low_bits:]), bank.eq(late)]
        with m.Switch(bank):
            for number, out in enumerate(outputs):
                with m.Case(number):
                    m.d.comb += self.read_data.eq(out)
        return m

    @staticmethod
    def _block(write_word, read_word, write_en, data_in, data_out):
        """One DP16KD, 512 x 36, both output registers on."""
        pins = {}
        for pin in range(14):
            address = pin - _ADDRESS_PIN
            in_word = 0 <= address < len(write_word)
            pins[f"i_ADA{pin}"] = (write_en if pin < _BYTE_ENABLES
                                   else write_word[address] if in_word else C(0, 1))
            pins[f"i_ADB{pin}"] = read_word[address] if in_word else C(0, 1)
        for bit in range(_HALF):
            pins[f"i_DIA{bit}"] = data_in[bit]
            pins[f"i_DIB{bit}"] = data_in[_HALF + bit]
            pins[f"o_DOA{bit}"] = data_out[bit]
            pins[f"o_DOB{bit}"] = data_out[_HALF + bit]
        for port in "AB":
            pins[f"i_CLK{port}"] = ClockSignal()
            pins[f"i_CE{port}"] = C(1, 1)
            pins[f"i_OCE{port}"] = C(1, 1)
            pins[f"i_RST{port}"] = C(0, 1)
            pins[f"p_REGMODE_{port}"] = "OUTREG"
            pins[f"p_DATA_WIDTH_{port}"] = ECP5_WIDTH
            pins[f"p_CSDECODE_{port}"] = "0b000"
            for select in range(3):
                pins[f"i_CS{port}{select}"] = C(0, 1)
        pins["i_WEA"] = C(1, 1)         # in this mode the byte enables write
        pins["i_WEB"] = C(0, 1)
        return Instance("DP16KD", p_GSR="DISABLED", p_RESETMODE="SYNC", **pins)
