"""The control-register map (``docs/spec.md`` section 8): the one description that the RTL
decode, the driver's constants, the C header and the Markdown table are all generated from.

Registers are :data:`REGISTER_BITS` wide at byte offsets inside the register window. Each field
has an :class:`Access` type; which events the controller strobes and which the register block
raises itself is said once, by :attr:`Event.from_controller`.
"""

from dataclasses import dataclass, field

from amaranth.lib import enum

from .params import MAX_REGIONS, REGISTER_BITS, RESERVED_MODE, ControllerParams, Mode

__all__ = ["REGISTER_BYTES", "Access", "SYSTEMRDL_ACCESS", "Field", "Register", "RegisterMap",
           "register_map", "ID_MAGIC", "VERSION", "REGION_STRIDE", "REGION_BASE", "Region",
           "ConfigError", "CONFIG_ERROR_HELP", "Event", "STATUS_FLAGS", "COUNTERS",
           "controller_events"]

#: Bytes of a register (``REGISTER_BITS`` comes from :mod:`spec.params`).
REGISTER_BYTES = REGISTER_BITS // 8

#: Identification register value: ASCII "NFAB".
ID_MAGIC = 0x4E464142
#: Register map version: major in bits [31:16], minor in [15:0]. Map 2.0: accumulators on
#: chip (slots, FLUSH, the accumulator layout with a result line).
VERSION = 0x0002_0000
#: Byte offset of region 0's descriptor, and the distance between descriptors.
REGION_BASE = 0x100
REGION_STRIDE = 0x40


class Access(enum.Enum):
    """How a field behaves on the bus and toward the hardware that owns it."""
    R = "R"          # read-only, driven by hardware (capabilities, status, counters)
    RW = "RW"        # read/write storage
    RW1C = "RW1C"    # sticky flag: hardware sets it, writing 1 clears it
    RW1S = "RW1S"    # set-once: writing 1 sets it, only reset clears it (the lock bit)
    WS = "WS"        # write-1 strobe: a one-clock command, reads as 0

    @property
    def one_bit(self):
        """Flags, set-once bits and strobes are single bits."""
        return self in (Access.RW1C, Access.RW1S, Access.WS)


#: The SystemRDL properties of each :class:`Access` (SystemRDL 2.0, section 9): what software
#: and hardware may do, and what a write of 1 does.
SYSTEMRDL_ACCESS = {
    Access.R: ("sw = r", "hw = w"),
    Access.RW: ("sw = rw", "hw = r"),
    Access.RW1C: ("sw = rw", "hw = r", "onwrite = woclr", "hwset"),
    Access.RW1S: ("sw = rw", "hw = r", "onwrite = woset"),
    Access.WS: ("sw = rw", "hw = r", "singlepulse"),
}


def _rdl_string(text):
    """``text`` as a SystemRDL string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Field:
    """A bit field of a register: bits ``[offset + width - 1 : offset]``."""
    name: str
    offset: int
    width: int
    access: Access
    doc: str
    reset: int = 0

    def __post_init__(self):
        if not isinstance(self.access, Access):
            raise TypeError(f"field {self.name}: access must be an Access, not {self.access!r}")
        if not (self.offset >= 0 and self.width >= 1 and self.offset + self.width <= REGISTER_BITS):
            raise ValueError(f"field {self.name}: bits [{self.offset + self.width - 1}:"
                             f"{self.offset}] do not fit a {REGISTER_BITS}-bit register")
        if self.access.one_bit and self.width != 1:
            raise ValueError(f"field {self.name}: {self.access.value} fields are 1 bit wide, "
                             f"not {self.width}")
        if not 0 <= self.reset < 1 << self.width:
            raise ValueError(f"field {self.name}: reset {self.reset:#x} does not fit "
                             f"{self.width} bits")

    @property
    def mask(self):
        return ((1 << self.width) - 1) << self.offset


@dataclass(frozen=True)
class Register:
    """A register at byte ``offset`` in the window. ``lockable`` registers ignore
    writes once ``CTRL.LOCK`` is set, and while an APPLY is validating them."""
    name: str
    offset: int
    doc: str
    fields: tuple = field(default_factory=tuple)
    lockable: bool = False

    def __post_init__(self):
        if self.offset % REGISTER_BYTES:
            raise ValueError(f"register {self.name}: offset {self.offset:#x} is not "
                             f"{REGISTER_BYTES}-aligned")
        used = 0
        for f in self.fields:
            if used & f.mask:
                raise ValueError(f"register {self.name}: field {f.name} overlaps another")
            used |= f.mask

    @property
    def reset(self):
        return sum(f.reset << f.offset for f in self.fields)

    def field(self, name):
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"register {self.name} has no field {name!r}")

    def pack(self, **values):
        """The register word with each named field set to its value (others 0)."""
        word = 0
        for name, value in values.items():
            f = self.field(name)
            if not 0 <= int(value) < 1 << f.width:
                raise ValueError(f"{self.name}.{name}: {value} does not fit {f.width} bits")
            word |= int(value) << f.offset
        return word

    def unpack(self, word):
        """``{field name: value}`` of a register word."""
        return {f.name: (word & f.mask) >> f.offset for f in self.fields}


class RegisterMap:
    """An ordered, checked collection of registers."""

    def __init__(self, registers, *, window_bytes):
        self.registers = tuple(sorted(registers, key=lambda r: r.offset))
        self.window_bytes = window_bytes
        names, offsets = set(), set()
        for reg in self.registers:
            if reg.name in names or reg.offset in offsets:
                raise ValueError(f"register {reg.name} at {reg.offset:#x} repeats a name or "
                                 f"an offset")
            if reg.offset >= window_bytes:
                raise ValueError(f"register {reg.name} at {reg.offset:#x} is outside the "
                                 f"{window_bytes:#x}-byte window")
            names.add(reg.name)
            offsets.add(reg.offset)

    def __iter__(self):
        return iter(self.registers)

    def __getitem__(self, name):
        for reg in self.registers:
            if reg.name == name:
                return reg
        raise KeyError(f"no register named {name!r}")

    # Generated artefacts -----------------------------------------------------------------

    def python_constants(self):
        """A Python module: ``<REG>`` offsets, ``<REG>_<FIELD>_SHIFT``/``_MASK``, resets."""
        out = ['"""NEURON-Fabric register map. Generated by spec.regmap; do not edit."""', ""]
        for reg in self:
            out.append(f"{reg.name} = {reg.offset:#06x}  # {reg.doc}")
            out.append(f"{reg.name}_RESET = {reg.reset:#010x}")
            for f in reg.fields:
                out.append(f"{reg.name}_{f.name}_SHIFT = {f.offset}")
                out.append(f"{reg.name}_{f.name}_MASK = {f.mask:#010x}  # {f.access.value}")
        return "\n".join(out) + "\n"

    def c_header(self):
        """A C header with the same constants, prefixed ``NF_``."""
        out = ["/* NEURON-Fabric register map. Generated by spec.regmap; do not edit. */",
               "#ifndef NF_REGS_H", "#define NF_REGS_H", "",
               f"#define NF_REG_WINDOW_BYTES {self.window_bytes:#x}u", ""]
        for reg in self:
            out.append(f"/* {reg.doc} */")
            out.append(f"#define NF_{reg.name} {reg.offset:#06x}u")
            out.append(f"#define NF_{reg.name}_RESET {reg.reset:#010x}u")
            for f in reg.fields:
                out.append(f"#define NF_{reg.name}_{f.name}_SHIFT {f.offset}u")
                out.append(f"#define NF_{reg.name}_{f.name}_MASK {f.mask:#010x}u")
            out.append("")
        out.append("#endif /* NF_REGS_H */")
        return "\n".join(out) + "\n"

    def systemrdl(self, name="nf_regs"):
        """The map in SystemRDL 2.0 (an ``addrmap`` named ``name``), for register tools
        (PeakRDL, IP-XACT exporters, UVM register models). Each :class:`Access` becomes the
        properties that give its behaviour (:data:`SYSTEMRDL_ACCESS`)."""
        out = ["// NEURON-Fabric register map. Generated by spec.regmap; do not edit.",
               f"addrmap {name} {{",
               '    name = "NEURON-Fabric control registers";',
               f'    desc = "The register window: {self.window_bytes:#x} bytes, '
               f'{REGISTER_BITS}-bit registers.";',
               f"    default regwidth = {REGISTER_BITS};",
               f"    default accesswidth = {REGISTER_BITS};"]
        for reg in self:
            out += ["    reg {", f'        name = "{reg.name}";',
                    f"        desc = {_rdl_string(reg.doc)};"]
            for f in reg.fields:
                properties = " ".join(f"{p};" for p in SYSTEMRDL_ACCESS[f.access])
                out.append(f"        field {{ desc = {_rdl_string(f.doc)}; {properties} }} "
                           f"{f.name}[{f.offset + f.width - 1}:{f.offset}] = {f.reset:#x};")
            out.append(f"    }} {reg.name} @ {reg.offset:#x};")
        out.append("};")
        return "\n".join(out) + "\n"

    def markdown(self):
        """A Markdown table of every register and field."""
        out = ["# NEURON-Fabric control registers", "",
               "Generated by `spec.regmap`; offsets are bytes into the register window "
               f"({self.window_bytes:#x} bytes). Access: R read-only, RW read/write, RW1C "
               "sticky (write 1 to clear), RW1S set-once (cleared by reset only), WS write-1 "
               "command.", "",
               "| offset | register | bits | field | access | reset | description |",
               "|---|---|---|---|---|---|---|"]
        for reg in self:
            out.append(f"| `{reg.offset:#06x}` | **{reg.name}** | | | | "
                       f"`{reg.reset:#010x}` | {reg.doc} |")
            for f in reg.fields:
                bits = f"{f.offset + f.width - 1}:{f.offset}" if f.width > 1 else f"{f.offset}"
                out.append(f"| | | [{bits}] | `{f.name}` | {f.access.value} | `{f.reset:#x}` "
                           f"| {f.doc} |")
        return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Region:
    """One region descriptor as the host programs it (registers ``R<r>_*``)."""
    enable: bool = False
    mode: int = Mode.IDENTITY.value
    base: int = 0
    size: int = 0
    acc: int = 0
    threshold: int = 1
    expected: int = 0

    @property
    def aggregating(self):
        return self.mode in (Mode.GBINARY.value, Mode.GTERNARY.value)


class ConfigError(enum.Enum, shape=4):
    """Why ``CTRL.APPLY`` refused the region registers (``CFG_ERROR.REASON``)."""
    NONE = 0
    MISALIGNED = 1          # base or size not a multiple of 64 bytes
    ZERO_SIZE = 2
    OUT_OF_RANGE = 3        # the region ends beyond the device's address space
    OVERLAP = 4             # two enabled regions share an address
    COVERS_WINDOW = 5       # the region includes the register window
    BAD_THRESHOLD = 6       # a G-Ternary region with gate threshold 0 or above capacity
    OVER_CAPACITY = 7       # more expected contributors than a line can count
    RESERVED_MODE = 8       # the mode code that names no path
    ACC_MISALIGNED = 9      # accumulator address not a multiple of one line's accumulator
    ACC_OVERLAP = 10        # accumulators overlap a region, other accumulators or the window


#: What to do about each :class:`ConfigError`, for drivers and documentation.
CONFIG_ERROR_HELP = {
    ConfigError.NONE: "the configuration was applied",
    ConfigError.MISALIGNED: "base and size must be multiples of the line size",
    ConfigError.ZERO_SIZE: "an enabled region needs a non-zero size",
    ConfigError.OUT_OF_RANGE: "the region or its accumulators end beyond the address space",
    ConfigError.OVERLAP: "two enabled regions share addresses; move or shrink one",
    ConfigError.COVERS_WINDOW: "the region covers the register window; move it",
    ConfigError.BAD_THRESHOLD: "a G-Ternary gate threshold must be from 1 to the capacity",
    ConfigError.OVER_CAPACITY: "more expected contributors than a line can count (CAP_LIMITS)",
    ConfigError.RESERVED_MODE: f"mode code {RESERVED_MODE} is reserved",
    ConfigError.ACC_MISALIGNED: "the accumulator address must be a multiple of one line's "
                                "accumulator (CAP_POOL.ACC_LINES lines)",
    ConfigError.ACC_OVERLAP: "the accumulators overlap a region, other accumulators or the "
                             "register window",
}


@dataclass(frozen=True)
class Event:
    """A sticky ``STATUS`` flag or a ``CNT_*`` counter. ``from_controller`` events are strobed
    by the controller's pipeline (:func:`hdl.control.event_layout`); the others by the register
    block itself (an APPLY's verdict, a write the lock refused). ``golden`` names the event of
    the golden device model (a key of :attr:`golden.device.DeviceModel.events`) that raises the
    flag or counts in the counter, where the model has one."""
    name: str
    doc: str
    from_controller: bool = True
    golden: str | None = None


STATUS_FLAGS = (
    Event("CFG_ERROR", "an APPLY was refused; the previous configuration stays in force",
          from_controller=False),
    Event("CAPACITY", "a contribution was rejected because its line held capacity "
          "contributions", golden="capacity"),
    Event("INVALID_CODE", "a G-Ternary contribution held an invalid lane code (counted as 0)",
          golden="invalid_lines"),
    Event("PARTIAL", "a contribution to an aggregation region lacked byte enables; rejected",
          golden="partial"),
    Event("BAD_OPCODE", "a request with an unsupported opcode was answered without effect"),
    Event("POISON", "a poisoned write was completed and dropped; memory is unchanged",
          golden="poison"),
    Event("LOCKED_WRITE", "a write to region configuration after LOCK or during APPLY was "
          "ignored", from_controller=False),
    Event("BAD_ADDRESS", "a request beyond the device's address space was answered without "
          "effect", golden="bad_address"),
    Event("MEM_ERROR", "device memory answered an access with an error response",
          golden="mem_error"),
)

COUNTERS = (
    Event("ACCEPTED", "contributions accepted", golden="accepted"),
    Event("REJECTED", "contributions rejected (capacity or partial)", golden="rejected"),
    Event("INVALID_LINES", "accepted G-Ternary contributions that held an invalid lane code",
          golden="invalid_lines"),
    Event("READS", "host read requests answered"),
    Event("WRITES", "host write requests answered"),
    Event("CFG_ERRORS", "APPLY commands refused", from_controller=False),
    Event("COMPLETED", "lines whose contribution count reached the region's EXPECTED",
          golden="completed"),
    Event("HITS", "contributions and result reads served by a resident slot"),
    Event("FILLS", "lines brought into a slot from device memory"),
    Event("WRITE_BACKS", "accumulators written to device memory (completed, evicted, flushed)"),
    Event("EVICTIONS", "resident lines taken out of their slot for another line or a raw write"),
    Event("DROPPED", "dirty slots whose state the last reset lost"),
)


def controller_events():
    """Names (lower case, sorted) of the events the controller strobes: a flag and a counter
    of one name share one strobe."""
    return sorted({e.name.lower() for e in STATUS_FLAGS + COUNTERS if e.from_controller})


def register_map(controller=ControllerParams()):
    """The register map of a controller configuration (:class:`spec.params.ControllerParams`,
    which checks the region and slot counts)."""
    if not isinstance(controller, ControllerParams):
        raise TypeError(f"register_map takes a ControllerParams, not {controller!r}")
    params, regions, slots = controller.datapath, controller.regions, controller.slots
    # Wide enough for any region count the parameters allow.
    region_bits = (MAX_REGIONS - 1).bit_length()
    regs = [
        Register("ID", 0x000, "identification", (
            Field("MAGIC", 0, 32, Access.R, 'ASCII "NFAB"', ID_MAGIC),)),
        Register("VERSION", 0x004, "register map version", (
            Field("MINOR", 0, 16, Access.R, "minor version", VERSION & 0xFFFF),
            Field("MAJOR", 16, 16, Access.R, "major version", VERSION >> 16))),
        Register("CAP_LINE", 0x008, "line capabilities", (
            Field("LINE_BITS", 0, 16, Access.R, "bits per line", params.line_bits),
            Field("COUNTER_WIDTH", 16, 8, Access.R, "counter width W", params.counter_width),
            Field("LATENCY", 24, 8, Access.R, "datapath latency in cycles", params.latency))),
        Register("CAP_LANES", 0x00C, "lanes per line for each mode", (
            Field("GBINARY", 0, 16, Access.R, "G-Binary lanes", params.gbinary_lanes),
            Field("GTERNARY", 16, 16, Access.R, "G-Ternary lanes", params.gternary_lanes))),
        Register("CAP_LIMITS", 0x010, "capacity and regions", (
            Field("CAPACITY", 0, 16, Access.R, "contributions one line accepts", params.capacity),
            Field("REGIONS", 16, 8, Access.R, "programmable regions", regions),
            Field("STATE_LINES", 24, 8, Access.R, "device-memory lines per accumulator state",
                  params.state_lines))),
        Register("CAP_POOL", 0x014, "on-chip accumulators", (
            Field("SLOTS", 0, 16, Access.R, "accumulator slots (lines resident at once)", slots),
            Field("ACC_LINES", 16, 8, Access.R, "device-memory lines of one line's accumulator "
                  "(result line, then state)", params.accumulator_lines))),
        Register("CTRL", 0x020, "global control", (
            Field("ENABLE", 0, 1, Access.RW, "1: applied regions aggregate; 0: all identity"),
            Field("LOCK", 1, 1, Access.RW1S, "1: region configuration read-only until reset"),
            Field("APPLY", 2, 1, Access.WS, "validate the region registers and apply them"),
            Field("CLEAR", 3, 1, Access.WS, "zero the accumulators of region CLEAR_REGION"),
            Field("FLUSH", 4, 1, Access.WS, "write every dirty slot back to device memory"),
            Field("CLEAR_REGION", 8, region_bits, Access.RW, "region that CLEAR zeroes"))),
        Register("STATUS", 0x024, "sticky error flags (write 1 to clear) and busy bits",
                 tuple(Field(flag.name, i, 1, Access.RW1C, flag.doc)
                       for i, flag in enumerate(STATUS_FLAGS))
                 + (Field("CLEAR_BUSY", 16, 1, Access.R, "a CLEAR is in progress"),
                    Field("CLEAR_DONE", 17, 1, Access.RW1C, "a CLEAR finished"),
                    Field("APPLY_BUSY", 18, 1, Access.R, "an APPLY is being validated"),
                    Field("FLUSH_BUSY", 19, 1, Access.R, "a FLUSH is in progress"),
                    Field("FLUSH_DONE", 20, 1, Access.RW1C,
                          "a FLUSH finished: device memory holds every accumulator"))),
        Register("CFG_ERROR", 0x028, "result of the last APPLY (NONE: applied)", (
            Field("REGION", 0, 8, Access.R, "first region found at fault"),
            Field("REASON", 8, 4, Access.R, "; ".join(f"{e.value}: {e.name}"
                                                 for e in ConfigError)))),
    ]
    regs += [Register(f"CNT_{counter.name}", 0x040 + REGISTER_BYTES * i,
                      f"event counter: {counter.doc}",
                      (Field("COUNT", 0, REGISTER_BITS, Access.R,
                             f"wraps at 2**{REGISTER_BITS}"),))
             for i, counter in enumerate(COUNTERS)]
    for r in range(regions):
        base = REGION_BASE + REGION_STRIDE * r
        regs += [
            Register(f"R{r}_BASE_LO", base + 0x00, f"region {r}: first byte address [31:0]", (
                Field("ADDR", 0, 32, Access.RW, "64-byte aligned"),), lockable=True),
            Register(f"R{r}_BASE_HI", base + 0x04, f"region {r}: first byte address [63:32]", (
                Field("ADDR", 0, 32, Access.RW, ""),), lockable=True),
            Register(f"R{r}_SIZE_LO", base + 0x08, f"region {r}: size in bytes [31:0]", (
                Field("BYTES", 0, 32, Access.RW, "non-zero multiple of 64"),), lockable=True),
            Register(f"R{r}_SIZE_HI", base + 0x0C, f"region {r}: size in bytes [63:32]", (
                Field("BYTES", 0, 32, Access.RW, ""),), lockable=True),
            Register(f"R{r}_ACC_LO", base + 0x10,
                     f"region {r}: device address of its accumulators [31:0]", (
                         Field("ADDR", 0, 32, Access.RW, "64-byte aligned"),), lockable=True),
            Register(f"R{r}_ACC_HI", base + 0x14,
                     f"region {r}: device address of its accumulators [63:32]", (
                         Field("ADDR", 0, 32, Access.RW, ""),), lockable=True),
            Register(f"R{r}_CFG", base + 0x18, f"region {r}: enable and mode", (
                Field("ENABLE", 0, 1, Access.RW, "1: the region is in force after APPLY"),
                Field("MODE", 1, Mode.as_shape().width, Access.RW,
                      f"{Mode.GBINARY.value}: G-Binary, {Mode.GTERNARY.value}: G-Ternary, "
                      f"{Mode.IDENTITY.value}: identity")),
                lockable=True),
            Register(f"R{r}_AGG", base + 0x1C, f"region {r}: aggregation settings", (
                Field("THRESHOLD", 0, 16, Access.RW, "G-Ternary gate threshold T, 1 to capacity",
                      1),
                Field("EXPECTED", 16, 16, Access.RW, "expected contributors (<= capacity)")),
                lockable=True),
        ]
    return RegisterMap(regs, window_bytes=controller.window_bytes)
