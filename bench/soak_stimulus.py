"""The requests of a compiled soak (``make soak``), with the order constraints a CXL.mem host
must keep (``docs/spec.md`` section 9: a host that needs one request to see another waits for
the other's completion).

:class:`Stimulus` collects requests in the order the golden model will serve them. Each request
names the objects it touches (a line, an accumulator, a region, a register) and how: ``READ``
(reads commute with reads), ``ADD`` (contributions commute with contributions: sums do not care
about order) or ``WRITE`` (conflicts with everything). A request waits, in the harness, until
every earlier request it conflicts with has its response (its op's ``after``); a ``fence``
waits for every earlier request and holds every later one. So the requests in flight together
always commute, and the golden model's serial order is one the device could have served.
"""

from dataclasses import dataclass

import numpy as np

from spec.cxl import LD_ID_BITS, MetaField, ReqOpcode, RwDOpcode
from spec.regmap import REGISTER_BYTES, register_map

from .soak_records import op_dtype

__all__ = ["READ", "ADD", "WRITE", "Phase", "Message", "Stimulus"]

READ, ADD, WRITE = "read", "add", "write"
_CONFLICTS = {READ: (ADD, WRITE), ADD: (READ, WRITE), WRITE: (READ, ADD, WRITE)}
_TAGS = 1 << 16


@dataclass(frozen=True)
class Phase:
    """How the harness behaves from op ``first_op`` on: the host idles a request channel and
    stalls an S2M channel with these probabilities per clock; the memory pauses each AXI channel
    with ``axi_pause``, answers after ``latency`` clocks and moves a data beat at most every
    ``interval`` clocks."""
    name: str
    first_op: int = 0
    host_idle: float = 0.0
    s2m_stall: float = 0.0
    axi_pause: float = 0.0
    latency: int = 0
    interval: int = 1

    def plan_line(self):
        return (f"phase {self.first_op} {self.host_idle} {self.s2m_stall} {self.axi_pause} "
                f"{self.latency} {self.interval}")


@dataclass
class Message:
    """One request as the harness sends it: ``channel`` (0 M2S Req, 1 M2S RwD), ``opcode``,
    the message's ``address`` field (lines), ``poison``, ``answered`` (a response is owed),
    ``poll`` (sent again until ``data`` masks zero bits), the bool byte ``enables`` and the
    ``data`` line (``None``: all set, zero)."""
    channel: int
    opcode: int
    address: int
    poison: bool = False
    answered: bool = True
    poll: bool = False
    enables: np.ndarray = None
    data: np.ndarray = None


class Stimulus:
    """Requests for controller ``params``, appended to the ops file ``path`` (written as
    :func:`bench.soak_records.op_dtype` records every :meth:`flush`)."""

    def __init__(self, params, path):
        self.params = params
        self.regmap = register_map(params)
        self.line_bytes = params.datapath.line_bytes
        self.path = path
        self.count = 0
        self.phases = []
        self._last = {}
        self._fence = -1
        self._pending, self._afters = [], []
        self._dtype = op_dtype(params)
        self._all_enabled = np.ones(self.line_bytes, bool)
        self._zero = np.zeros(self.line_bytes, np.uint8)
        path.write_bytes(b"")

    def phase(self, name, **knobs):
        """From the next request on, the harness behaves as :class:`Phase` ``knobs`` say."""
        self.phases.append(Phase(name, self.count, **knobs))

    def _after(self, touches, fence):
        if fence:
            return self.count - 1
        after = self._fence
        for key, kind in touches:
            last = self._last.get(key)
            if last:
                after = max([after] + [last[k] for k in _CONFLICTS[kind] if k in last])
        return after

    def _add(self, message, touches, fence):
        """Queue ``message`` after the requests it conflicts with (``touches``, or every one
        when it is a ``fence``); returns its index."""
        index = self.count
        self._afters.append(self._after(touches, fence))
        if fence:
            self._fence = index
        for key, kind in touches:
            self._last.setdefault(key, {})[kind] = index
        self._pending.append(message)
        self.count += 1
        return index

    def request(self, opcode, address, *, touches=(), fence=False, answered=True):
        """An M2S Req (a read, or another Req opcode) of the line at byte ``address``; returns
        its index."""
        return self._add(Message(0, int(getattr(opcode, "value", opcode)),
                                 address // self.line_bytes << 1, answered=answered),
                         touches, fence)

    def write(self, address, data, *, enables=None, opcode=None, poison=False, touches=(),
              fence=False):
        """An M2S RwD of line ``data`` at byte ``address``: MemWr, or MemWrPtl with the bool
        byte ``enables`` (``opcode`` overrides); returns its index."""
        if opcode is None:
            opcode = RwDOpcode.MEM_WR if enables is None else RwDOpcode.MEM_WR_PTL
        return self._add(Message(1, int(getattr(opcode, "value", opcode)),
                                 address // self.line_bytes, poison=poison, enables=enables,
                                 data=data), touches, fence)

    def _register_line(self, name):
        offset = self.regmap[name].offset
        return (self.params.window_base + offset - offset % self.line_bytes,
                offset % self.line_bytes)

    def write_register(self, name, value, *, fence=True, touches=()):
        """A write of register ``name`` through the window (a MemWrPtl of its four bytes): a
        fence, or (``fence=False``) a write of the register that touches ``touches`` too."""
        line, byte = self._register_line(name)
        data = np.zeros(self.line_bytes, np.uint8)
        data[byte:byte + REGISTER_BYTES] = np.frombuffer(
            int(value).to_bytes(REGISTER_BYTES, "little"), np.uint8)
        enables = np.zeros(self.line_bytes, bool)
        enables[byte:byte + REGISTER_BYTES] = True
        return self.write(line, data, enables=enables, fence=fence,
                          touches=(*touches, (("register", name), WRITE)))

    def read_register(self, name, *, until_zero=()):
        """A read of the window line holding register ``name``: a fence (what it reads depends
        on every earlier request). With fields ``until_zero``, it is sent again until they
        read zero (a host waiting for a busy bit)."""
        line, byte = self._register_line(name)
        if not until_zero:
            return self.request(ReqOpcode.MEM_RD, line, fence=True)
        register = self.regmap[name]
        mask = np.zeros(self.line_bytes, np.uint8)
        mask[byte:byte + REGISTER_BYTES] = np.frombuffer(sum(
            register.field(f).mask for f in until_zero).to_bytes(REGISTER_BYTES, "little"),
            np.uint8)
        return self._add(Message(0, ReqOpcode.MEM_RD.value, line // self.line_bytes << 1,
                                 poll=True, data=mask), (), True)

    def flush(self):
        """Append the pending requests to the ops file."""
        pending, count = self._pending, len(self._pending)
        if not count:
            return
        ops = np.zeros(count, self._dtype)
        ops["after"] = self._afters
        ops["tag"] = np.arange(self.count - count, self.count) % _TAGS
        for name in ("address", "channel", "opcode", "poison", "answered", "poll"):
            ops[name] = [getattr(m, name) for m in pending]
        ops["meta_field"] = MetaField.NO_OP.value
        ops["ld_id"] = ops["tag"] % (1 << LD_ID_BITS)      # every LD-ID, for its echo
        enables = np.packbits(np.array([self._all_enabled if m.enables is None else m.enables
                                        for m in pending], bool), axis=1, bitorder="little")
        ops["byte_enable"][:, :enables.shape[1]] = enables
        ops["data"] = np.array([self._zero if m.data is None else m.data for m in pending],
                               np.uint8)
        with self.path.open("ab") as out:
            out.write(ops.tobytes())
        self._pending, self._afters = [], []

    def plan(self, seed, faults):
        """The harness's plan file text: seed, op count, fault ranges and phases."""
        lines = [f"seed {seed}", f"ops {self.count}"]
        lines += [f"fault {start} {end}" for start, end in faults]
        lines += [phase.plan_line() for phase in self.phases]
        return "\n".join(lines) + "\n"
