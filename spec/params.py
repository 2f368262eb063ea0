"""Generator parameters and the numbers derived from them: the one source of truth.

Everything that other code needs to know about a configuration (lane counts, capacity, state
format, latency) is a property of :class:`DatapathParams`. The gateware, the golden model, the
tests and the generated documents read it from here and never repeat the numbers.
"""

from dataclasses import dataclass
from functools import cached_property

from amaranth.lib import enum

__all__ = ["TERNARY_ZERO", "TERNARY_PLUS", "TERNARY_INVALID", "TERNARY_MINUS",
           "Mode", "RESERVED_MODE", "aggregates", "Reason", "DatapathParams", "ControllerParams",
           "LINE_BITS_CHOICES", "LATENCY_CHOICES", "REGISTER_BITS", "MAX_REGIONS", "MAX_SLOTS",
           "add_datapath_arguments", "datapath_from_arguments", "add_controller_arguments",
           "controller_from_arguments"]

#: Line widths the generator accepts. 512 is the CXL.mem line; the smaller ones exist for fast
#: tests and area sweeps.
LINE_BITS_CHOICES = (16, 32, 64, 128, 256, 512)

#: Pipeline depths of the datapath, in clock cycles from accepted request to valid response.
LATENCY_CHOICES = (1, 2, 3, 4, 5)

#: Largest counter width the generator accepts (capacity 65,535 contributions per line).
MAX_COUNTER_WIDTH = 16

#: Line bits served by one copy of the datapath's per-line control registers. Replicating those
#: registers keeps every control net local to its lanes, which is what lets a 512-bit datapath
#: close timing on an FPGA.
CONTROL_COPY_BITS = 16

#: Line bits of one slice of the slot pool (:class:`hdl.slots.SlotPool`). Each slice keeps its
#: lanes of every slot and a whole copy of the pool's control beside them, so that no decision
#: of the pool travels to block RAM columns further than one slice's. The slot pool alone
#: places and routes far faster at 128 line bits than at 512 (``synth/``, the pool's report):
#: its control reaches the columns of the slot RAM, the op lines and the queues from one place.
POOL_SLICE_BITS = 128


#: G-Ternary lane codes (``docs/spec.md`` section 4): bit 0 is the non-zero gate, bit 1 the sign.
TERNARY_ZERO, TERNARY_PLUS, TERNARY_INVALID, TERNARY_MINUS = 0b00, 0b01, 0b10, 0b11


class Mode(enum.Enum, shape=2):
    """Path of a line address (``docs/spec.md`` section 2). The one code left over,
    :data:`RESERVED_MODE`, names no path and is rejected."""
    IDENTITY = 0
    GBINARY = 1
    GTERNARY = 2


#: The code of ``Mode``'s shape that names no path.
RESERVED_MODE, = set(range(1 << Mode.as_shape().width)) - {mode.value for mode in Mode}


def aggregates(mode):
    """Whether ``mode`` (a ``Mode`` value or view) is one of the aggregation paths, G-Binary or
    G-Ternary."""
    return (mode == Mode.GBINARY) | (mode == Mode.GTERNARY)


class Reason(enum.Enum, shape=2):
    """Why the datapath rejected a request; ``NONE`` means accepted."""
    NONE = 0
    CAPACITY = 1   # the line already holds ``capacity`` contributions (``docs/spec.md`` section 5)
    PARTIAL = 2    # a contribution to an aggregation path without all byte enables set
    MODE = 3       # the reserved mode code (RESERVED_MODE)


@dataclass(frozen=True)
class DatapathParams:
    """A checked datapath configuration.

    Parameters
    ----------
    line_bits : int
        Bits per line, a power of two from 16 to 512 (the CXL.mem line is 512).
    counter_width : int
        ``W`` (``docs/spec.md`` section 5): a line accepts at most ``2**W - 1`` contributions.
    latency : int
        Pipeline depth in cycles, 1 to 5 (see :mod:`hdl.datapath` for where the registers sit).
    """

    line_bits: int = 512
    counter_width: int = 4
    latency: int = 5

    def __post_init__(self):
        if not isinstance(self.line_bits, int) or self.line_bits not in LINE_BITS_CHOICES:
            raise ValueError(f"line_bits must be one of {LINE_BITS_CHOICES}, "
                             f"not {self.line_bits!r}")
        if (not isinstance(self.counter_width, int)
                or not 1 <= self.counter_width <= MAX_COUNTER_WIDTH):
            raise ValueError(f"counter_width must be an integer from 1 to {MAX_COUNTER_WIDTH}, "
                             f"not {self.counter_width!r}")
        if not isinstance(self.latency, int) or self.latency not in LATENCY_CHOICES:
            raise ValueError(f"latency must be one of {LATENCY_CHOICES}, not {self.latency!r}")

    # Lines and lanes (``docs/spec.md`` section 1 and 2).
    @cached_property
    def line_bytes(self):
        return self.line_bits // 8

    @cached_property
    def gbinary_lanes(self):
        """G-Binary lanes per line: 1 bit each."""
        return self.line_bits

    @cached_property
    def gternary_lanes(self):
        """G-Ternary lanes per line: 2 bits each."""
        return self.line_bits // 2

    # Capacity (``docs/spec.md`` section 5).
    @cached_property
    def capacity(self):
        """Most contributions one line accepts: ``2**W - 1``."""
        return (1 << self.counter_width) - 1

    @cached_property
    def gternary_sum_width(self):
        """Bits of a stored G-Ternary lane sum: ``2 * W``, two's complement.

        A G-Ternary lane ``k`` is stored in the bits of G-Binary lanes ``2k`` and ``2k + 1``, so
        both modes update the same ``line_bits / 2`` adders of ``2 * W`` bits. Any ``s`` with
        ``|s| <= capacity`` fits.
        """
        return 2 * self.counter_width

    # State format (one accumulated line). See docs/formats.md, "Accumulator state".
    @cached_property
    def state_lanes_bits(self):
        """Width of the per-lane part of the state; both modes' views cover all of it."""
        return self.line_bits * self.counter_width

    @cached_property
    def state_n_offset(self):
        """Bit offset of the contribution count ``n`` inside the state."""
        return self.state_lanes_bits

    @cached_property
    def state_bits(self):
        return self.state_lanes_bits + self.counter_width

    @cached_property
    def state_lines(self):
        """Lines of ``line_bits`` that one packed state occupies."""
        return -(-self.state_bits // self.line_bits)

    @cached_property
    def accumulator_lines(self):
        """Device-memory lines set aside for one aggregated line (its *accumulator*): the
        result line, then the state's ``state_lines`` lines, rounded up to a power of two, so
        that an accumulator aligned to its size never crosses a 4 KiB boundary (one AXI burst
        writes it) and a slot index is a bit field of its address."""
        return 1 << self.state_lines.bit_length()

    # Pipeline structure.
    @cached_property
    def control_copies(self):
        """Copies of the per-line control registers: one per ``CONTROL_COPY_BITS`` line bits."""
        return max(1, self.line_bits // CONTROL_COPY_BITS)

    @cached_property
    def control_copy_bits(self):
        """Line bits served by each control copy (and by each group of the controller's state
        buffer columns)."""
        return self.line_bits // self.control_copies

    @cached_property
    def name(self):
        """Short tag for file and directory names, e.g. ``L512_W4_D5``."""
        return f"L{self.line_bits}_W{self.counter_width}_D{self.latency}"


#: Bits of a control register, and of a word on the CSR bus (:mod:`spec.regmap`).
REGISTER_BITS = 32

#: Most programmable regions a controller may have.
MAX_REGIONS = 32

#: Most on-chip accumulator slots a controller may have.
MAX_SLOTS = 4096

#: Bytes of the control-register window in the device's address space.
REGISTER_WINDOW_BYTES = 0x1000


@dataclass(frozen=True)
class ControllerParams:
    """A checked controller configuration.

    Parameters
    ----------
    datapath : DatapathParams
        The aggregation datapath; its ``line_bytes`` is the unit of addresses and alignment.
    regions : int
        Programmable regions, 1 to ``MAX_REGIONS``.
    address_bits : int
        Width of the device's byte address space, 16 to 64.
    window_base : int or None
        Byte address of the register window; ``None`` puts it at the top of the address space.
    queue_depth : int
        Entries of each host ingress queue (M2S Req and M2S RwD), a power of two from 2 to 64.
    axi_id_bits : int
        Width of the AXI4 ID signals toward device memory, 1 to 16.
    slots : int
        On-chip accumulator slots (:mod:`hdl.slots`), a power of two from 2 to 4096: how many
        aggregating lines can be resident at once.
    """

    datapath: DatapathParams = DatapathParams()
    regions: int = 8
    address_bits: int = 40
    window_base: int = None
    queue_depth: int = 8
    axi_id_bits: int = 8
    slots: int = 256

    def __post_init__(self):
        if not isinstance(self.datapath, DatapathParams):
            raise TypeError(f"datapath must be a DatapathParams, not {self.datapath!r}")
        if self.datapath.line_bits < REGISTER_BITS:
            raise ValueError(f"the controller needs lines of at least {REGISTER_BITS} bits "
                             f"(one register of the window), not {self.datapath.line_bits}")
        if not isinstance(self.regions, int) or not 1 <= self.regions <= MAX_REGIONS:
            raise ValueError(f"regions must be an integer from 1 to {MAX_REGIONS}, "
                             f"not {self.regions!r}")
        if not isinstance(self.address_bits, int) or not 16 <= self.address_bits <= 64:
            raise ValueError(f"address_bits must be an integer from 16 to 64, "
                             f"not {self.address_bits!r}")
        if self.window_base is None:
            object.__setattr__(self, "window_base",
                               (1 << self.address_bits) - REGISTER_WINDOW_BYTES)
        if (not isinstance(self.window_base, int) or self.window_base % REGISTER_WINDOW_BYTES
                or not 0 <= self.window_base <= (1 << self.address_bits)
                - REGISTER_WINDOW_BYTES):
            raise ValueError(f"window_base must be a multiple of {REGISTER_WINDOW_BYTES:#x} "
                             f"inside the {self.address_bits}-bit address space, "
                             f"not {self.window_base!r}")
        if (not isinstance(self.queue_depth, int) or not 2 <= self.queue_depth <= 64
                or self.queue_depth & (self.queue_depth - 1)):
            raise ValueError(f"queue_depth must be a power of two from 2 to 64, "
                             f"not {self.queue_depth!r}")
        if not isinstance(self.axi_id_bits, int) or not 1 <= self.axi_id_bits <= 16:
            raise ValueError(f"axi_id_bits must be an integer from 1 to 16, "
                             f"not {self.axi_id_bits!r}")
        if (not isinstance(self.slots, int) or not 2 <= self.slots <= MAX_SLOTS
                or self.slots & (self.slots - 1)):
            raise ValueError(f"slots must be a power of two from 2 to {MAX_SLOTS}, "
                             f"not {self.slots!r}")

    @cached_property
    def name(self):
        """Short tag for file and directory names, e.g. ``L512_W4_D5_R8_S256``: the datapath's,
        the regions and the slots."""
        return f"{self.datapath.name}_R{self.regions}_S{self.slots}"

    @cached_property
    def window_bytes(self):
        return REGISTER_WINDOW_BYTES

    @cached_property
    def slot_index_bits(self):
        return self.slots.bit_length() - 1

    @cached_property
    def accumulator_bytes_per_line(self):
        """Device-memory bytes of the accumulator of each line of an aggregation region
        (``DatapathParams.accumulator_lines`` lines); accumulators are aligned to it."""
        return self.datapath.accumulator_lines * self.datapath.line_bytes

    @cached_property
    def accumulator_line_lsb(self):
        """The lowest bit of an accumulator address that tells lines apart (accumulators are
        aligned to their size): a line's slot index starts here."""
        return self.accumulator_bytes_per_line.bit_length() - 1

    @cached_property
    def devload_limits(self):
        """Requests held by the device (taken from the host, not yet answered) up to which
        DevLoad reads Light, Optimal and Moderate; above the last it reads Severe. The limits
        are a quarter, half and three quarters of the ``2 * queue_depth`` ingress entries."""
        entries = 2 * self.queue_depth
        return entries // 4, entries // 2, 3 * entries // 4


def add_datapath_arguments(parser):
    """Add ``--line-bits``, ``--counter-width`` and ``--latency`` (defaults from
    :class:`DatapathParams`) to an ``argparse`` parser."""
    defaults = DatapathParams()
    parser.add_argument("--line-bits", type=int, default=defaults.line_bits)
    parser.add_argument("--counter-width", type=int, default=defaults.counter_width)
    parser.add_argument("--latency", type=int, default=defaults.latency)


def datapath_from_arguments(parser, args):
    """The :class:`DatapathParams` of parsed arguments; a bad value exits through
    ``parser.error`` with the parameter's message."""
    try:
        return DatapathParams(line_bits=args.line_bits, counter_width=args.counter_width,
                              latency=args.latency)
    except ValueError as error:
        parser.error(str(error))


def add_controller_arguments(parser):
    """Add the datapath arguments, ``--regions`` and ``--slots`` (defaults from
    :class:`ControllerParams`)."""
    add_datapath_arguments(parser)
    parser.add_argument("--regions", type=int, default=ControllerParams.regions,
                        help="programmable regions of the controller")
    parser.add_argument("--slots", type=int, default=ControllerParams.slots,
                        help="on-chip accumulator slots of the controller")


def controller_from_arguments(parser, args):
    """The :class:`ControllerParams` of parsed arguments; a bad value exits through
    ``parser.error`` with the parameter's message."""
    datapath = datapath_from_arguments(parser, args)
    try:
        return ControllerParams(datapath, regions=args.regions, slots=args.slots)
    except ValueError as error:
        parser.error(str(error))
