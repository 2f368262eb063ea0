"""Property harnesses of the whole controller (:class:`hdl.controller.CxlMemController`) at its
ports: CXL.mem requests in, responses out, device memory behind its AXI4 port.

The properties are stated at the ports only, so they hold whatever the slot pool, the
responder or the memory port do inside. The environment, and every assumption it makes:

- **Configured.** The control registers are those of a configured device
  (:class:`ConfiguredControl`): from reset, the applied table of :func:`formal_table` (one
  G-Binary region of :data:`REGION_LINES` lines, more than the slots, whose ``EXPECTED`` the
  solver picks) and ``CTRL.ENABLE``, as after a successful APPLY. No APPLY, CLEAR or lock
  runs; register reads (the window's) return 0.
- **Host.** Every field of every M2S Req and RwD message is free on every clock (any opcode,
  address, tag, poison, byte enables, data), and a request may be withdrawn before it is
  taken. Assumed: no RwD message addresses the register window (its registers are not
  modelled: a write there could APPLY or CLEAR), and the host never reuses a tag a harness
  watches while a request with it is owed. The ``csr`` port is idle but for writes of
  ``CTRL.FLUSH`` on any clock, each of which starts a flush. A harness may narrow the host
  further, and says so (:class:`IdentityWriteChangesOnlyItsLine`).
- **Backpressure.** S2M NDR and DRS ``ready`` are free on every clock.
- **Device memory** (:func:`axi_memory`): an AXI4 subordinate that takes AR and AW when it
  chooses (up to :data:`AXI_QUEUE` bursts each), takes a burst's W beats after its AW,
  and answers reads in order per ID, with bursts of the two IDs interleaved in any order,
  and writes with one B each, after any number of clocks; every response is OKAY. It holds
  only the words a harness tracks; a read of any other word returns a free value.

Reset is held low after the initial state (reset values). Each harness is a bounded check
from reset (:mod:`formal.properties` gives the depth).
"""

import gc
import warnings
from unittest import mock

from amaranth import Cat, Const, Elaboratable, Module, Mux, ResetSignal, Signal
from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assert, Assume, UnusedElaboratable
from amaranth.lib import wiring

import hdl.controller
from hdl.axi import RESP_OKAY
from hdl.control import ControlRegisters, region_layout
from hdl.controller import CxlMemController
from spec.cxl import TAG_BITS, DRSOpcode, ReqOpcode, RwDOpcode
from spec.params import Mode
from spec.regmap import REGISTER_BYTES

from .history import queue, starting_at

__all__ = ["REGION_LINES", "AXI_QUEUE", "formal_table", "ConfiguredControl", "axi_memory",
           "ControllerHarness", "EveryRequestAnsweredOnce", "IdentityWriteChangesOnlyItsLine"]

#: Lines of the harnesses' one region: more than the slots, so that lines share slots.
REGION_LINES = 4

#: Bursts the memory model queues per ID (reads) and in all (writes) before it holds off
#: AR or AW.
AXI_QUEUE = 2


def formal_table(params, expected):
    """The applied table of the harnesses: region 0 a G-Binary region of
    :data:`REGION_LINES` lines at address 0, its accumulators right after (at
    ``REGION_LINES * line_bytes`` rounded up to the accumulator size), ``EXPECTED`` =
    ``expected``, threshold 1; every other region disabled. Returns ``(table, region)``: a
    list of per-region field dicts and ``(base, end, acc, acc_end)`` of region 0."""
    p = params.datapath
    size = REGION_LINES * p.line_bytes
    step = params.accumulator_bytes_per_line
    acc = -(-size // step) * step
    acc_end = acc + REGION_LINES * step
    region = {"enable": 1, "mode": Mode.GBINARY.value, "base": 0, "end": size, "acc": acc,
              "state_offset": acc, "acc_end": acc_end, "threshold": 1, "expected": expected}
    table = [region] + [{"enable": 0}] * (params.regions - 1)
    return table, (0, size, acc, acc_end)


class ConfiguredControl(wiring.Component):
    """The control registers of a configured device, in place of the controller's own
    (:class:`ControlRegisters`, whose register block and APPLY machinery the properties do not
    need): the applied table of :func:`formal_table`, ``enable`` and ``table_ready`` high from
    reset, a FLUSH started by every bus write (the harness writes only ``CTRL.FLUSH``), never
    a CLEAR, register reads 0, events ignored. ``expected`` is the region's ``EXPECTED``.
    The signature is the real one's."""

    def __init__(self, params, expected):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnusedElaboratable)
            real = ControlRegisters(params)
            self._regmap = real.regmap
            signature = real.signature
            del real
            gc.collect()
        self._params = params
        self._expected = expected
        super().__init__(signature)

    @property
    def regmap(self):
        return self._regmap

    def elaborate(self, platform):
        m = Module()
        table, _ = formal_table(self._params, self._expected)
        layout = region_layout(self._params)
        for region, fields in zip(self.regions, table):
            m.d.comb += region.eq(0)
            m.d.comb += [region[name].eq(value) for name, value in fields.items()
                         if name in layout.members]
        m.d.comb += [self.enable.eq(1), self.table_ready.eq(1), self.clear_start.eq(0),
                     self.bus.r_data.eq(0)]
        m.d.sync += self.flush_start.eq(self.bus.w_stb)
        return m


def axi_memory(m, axi, params, words):
    """Drive the subordinate side of ``axi`` (the controller's AXI4 port) as the module
    docstring's device memory, which holds the words of ``words`` (pairs of a byte address
    and an initial value, each a line); returns the signals of their current values. A W beat
    changes a word as its strobes say on the clock it is taken, and a read beat returns the
    word as it is on its own clock. Also asserts that the controller's W bursts are as long as
    their AW says."""
    line_bytes = params.datapath.line_bytes
    line_bits = params.datapath.line_bits
    ids = 1 << len(axi.arid)
    addr_bits, len_bits = len(axi.araddr), len(axi.arlen)
    cells = [starting_at(m, init, f"memory_word_{k}") for k, (_, init) in enumerate(words)]

    def beat_data(address):
        value = AnySeq(line_bits)
        for (word, _), (at, _) in zip(cells, words):
            value = Mux(address == at, word, value)
        return value

    # Reads: a queue of bursts per ID; each clock the solver picks an ID to answer.
    r_id = AnySeq(len(axi.rid))
    r_valid = AnySeq(1)
    levels, heads, beats = [], [], []
    for number in range(ids):
        beat = Signal(len_bits, name=f"read_{number}_beat")
        push = axi.arvalid & axi.arready & (axi.arid == number)
        pop = axi.rvalid & (axi.rid == number) & axi.rlast
        level, head = queue(m, AXI_QUEUE, addr_bits + len_bits, push,
                             Cat(axi.araddr, axi.arlen), pop, f"read_{number}")
        with m.If(axi.rvalid & (axi.rid == number)):
            m.d.sync += beat.eq(Mux(axi.rlast, 0, beat + 1))
        levels.append(level)
        heads.append(head)
        beats.append(beat)
    ar_room = Const(0, 1)
    r_any = Const(0, 1)
    address = Const(0, addr_bits)
    last = Const(0, 1)
    for number in range(ids):
        chosen = r_id == number
        ar_room = Mux(axi.arid == number, levels[number] < AXI_QUEUE, ar_room)
        r_any = Mux(chosen, levels[number] != 0, r_any)
        address = Mux(chosen, heads[number][:addr_bits] + beats[number] * line_bytes, address)
        last = Mux(chosen, beats[number] == heads[number][addr_bits:], last)
    m.d.comb += [axi.arready.eq(AnySeq(1) & ar_room),
                 axi.rvalid.eq(r_valid & r_any), axi.rid.eq(r_id), axi.rlast.eq(last),
                 axi.rresp.eq(RESP_OKAY), axi.rdata.eq(beat_data(address))]

    # Writes: AW bursts queued in order; W beats of the head burst; one B per burst.
    w_taken = axi.wvalid & axi.wready
    w_done = w_taken & axi.wlast
    aw_level, aw_head = queue(m, AXI_QUEUE, addr_bits + len_bits + len(axi.awid),
                               axi.awvalid & axi.awready, Cat(axi.awaddr, axi.awlen, axi.awid),
                               w_done, "write")
    w_beat = Signal(len_bits, name="write_beat")
    with m.If(w_taken):
        m.d.sync += w_beat.eq(Mux(axi.wlast, 0, w_beat + 1))
    w_address = aw_head[:addr_bits] + w_beat * line_bytes
    w_len = aw_head[addr_bits:addr_bits + len_bits]
    w_id = aw_head[addr_bits + len_bits:]
    m.d.comb += [axi.awready.eq(AnySeq(1) & (aw_level < AXI_QUEUE)),
                 axi.wready.eq(AnySeq(1) & (aw_level != 0))]
    with m.If(w_taken):
        m.d.comb += Assert(axi.wlast == (w_beat == w_len), "W burst length is not its AW's")
    strobes = Cat(bit.replicate(8) for bit in axi.wstrb)
    for (word, kept), (at, _) in zip(cells, words):
        with m.If(w_taken & (w_address == at)):
            m.d.sync += kept.eq((word & ~strobes) | (axi.wdata & strobes))

    b_id = AnySeq(len(axi.bid))
    b_any = Const(0, 1)
    for number in range(ids):
        owed = Signal(range(2 * AXI_QUEUE + 2), name=f"write_{number}_owed")
        m.d.sync += owed.eq(owed + (w_done & (w_id == number))
                            - (axi.bvalid & axi.bready & (axi.bid == number)))
        b_any = Mux(b_id == number, owed != 0, b_any)
    m.d.comb += [axi.bvalid.eq(AnySeq(1) & b_any), axi.bid.eq(b_id), axi.bresp.eq(RESP_OKAY)]
    return [word for word, _ in cells]


class ControllerHarness(Elaboratable):
    """The controller in the module docstring's environment; a subclass states its property
    in :meth:`check` and says which memory words it tracks (:meth:`tracked_words`).

    Parameters
    ----------
    params : ControllerParams
        ``axi_id_bits`` should be 1 (two IDs are all the controller uses).
    """

    #: The design under test.
    design = CxlMemController

    def __init__(self, params):
        self.params = params

    def elaborate(self, platform):
        m = Module()
        p = self.params.datapath
        self.region_expected = AnyConst(p.counter_width)
        m.d.comb += Assume((self.region_expected >= 1) & (self.region_expected <= p.capacity))
        with mock.patch.object(hdl.controller, "ControlRegisters",
                               lambda params: ConfiguredControl(params, self.region_expected)):
            m.submodules.dut = dut = self.design(self.params)
        self.dut = dut
        _, self.region = formal_table(self.params, 0)
        req, rwd = dut.m2s_req, dut.m2s_rwd
        m.d.comb += [port.eq(AnySeq(len(port))) for port in (
            req.valid, req.payload.as_value(), rwd.valid, rwd.payload.as_value(),
            dut.s2m_ndr.ready, dut.s2m_drs.ready)]
        m.d.comb += Assume(~ResetSignal())

        # The csr port: idle, or a write of CTRL.FLUSH.
        ctrl = dut.regmap["CTRL"]
        m.d.comb += [dut.csr.r_stb.eq(0), dut.csr.w_stb.eq(AnySeq(1)),
                     dut.csr.addr.eq(ctrl.offset // REGISTER_BYTES),
                     dut.csr.w_data.eq(ctrl.field("FLUSH").mask)]

        self.req_taken = req.valid & req.ready
        self.rwd_taken = rwd.valid & rwd.ready
        self.ndr_sent = dut.s2m_ndr.valid & dut.s2m_ndr.ready
        self.drs_sent = dut.s2m_drs.valid & dut.s2m_drs.ready
        self.req_address, req_in_range = self._byte_address(req.payload.address[1:])
        self.rwd_address, rwd_in_range = self._byte_address(rwd.payload.address)
        self.req_reads = req_in_range & ((req.payload.opcode == ReqOpcode.MEM_RD)
                                         | (req.payload.opcode == ReqOpcode.MEM_RD_DATA))
        self.rwd_writes = rwd_in_range & ~rwd.payload.poison & (
            (rwd.payload.opcode == RwDOpcode.MEM_WR) | (rwd.payload.opcode == RwDOpcode.MEM_WR_PTL))
        self.rwd_in_range = rwd_in_range
        shift = self.params.window_bytes.bit_length() - 1
        m.d.comb += Assume(~(rwd.valid & rwd_in_range
                             & (self.rwd_address[shift:] == self.params.window_base >> shift)))

        words = self.tracked_words(m)
        axi_memory(m, dut.axi, self.params, words)
        self.check(m, dut)
        return m

    def _byte_address(self, line):
        """``(byte address, in range)`` of a host address field that counts lines."""
        params = self.params
        offset_bits = params.datapath.line_bytes.bit_length() - 1
        line_bits = params.address_bits - offset_bits
        return Cat(Const(0, offset_bits), line[:line_bits]), line[line_bits:] == 0

    def tracked_words(self, m):
        """The memory words this property reads: ``(byte address, initial value)`` pairs."""
        return []

    def check(self, m, dut):
        raise NotImplementedError


def _tag_taken(harness, tag):
    """Whether a request with ``tag`` is taken this clock on M2S Req, and on M2S RwD."""
    dut = harness.dut
    return (harness.req_taken & (dut.m2s_req.payload.tag == tag),
            harness.rwd_taken & (dut.m2s_rwd.payload.tag == tag))


class EveryRequestAnsweredOnce(ControllerHarness):
    """Every request taken on M2S Req or RwD gets exactly one response carrying its tag and
    LD-ID, on DRS for a MemRd or MemRdData and on NDR for any other, and a MemSpecRd gets
    none: no response is duplicated or made up, under any backpressure on every channel.
    None is lost either, checked as a safety property that a bounded trace can break: when a
    request is answered, every request taken before it on the same M2S channel has been
    answered (the controller serves each channel in order, ``docs/controller.md``). Two tags
    are watched, each chosen by the solver and not reused while a request with it is owed."""

    def check(self, m, dut):
        req, ndr, drs = dut.m2s_req.payload, dut.s2m_ndr.payload, dut.s2m_drs.payload
        first, later = AnyConst(TAG_BITS), AnyConst(TAG_BITS)
        m.d.comb += Assume(first != later)
        req_drs = (req.opcode == ReqOpcode.MEM_RD) | (req.opcode == ReqOpcode.MEM_RD_DATA)
        req_answered = req.opcode != ReqOpcode.MEM_SPEC_RD
        watched = {}
        for name, tag in (("first", first), ("later", later)):
            on_req, on_rwd = _tag_taken(self, tag)
            owed, on_drs, channel = (Signal(name=f"{name}_{what}") for what in
                                     ("owed", "on_drs", "channel"))
            ld_id = Signal(len(req.ld_id), name=f"{name}_ld_id")
            m.d.comb += Assume(~(on_req & on_rwd) & ~(owed & (on_req | on_rwd)))
            by_ndr = self.ndr_sent & (ndr.tag == tag)
            by_drs = self.drs_sent & (drs.tag == tag)
            answered = by_ndr | by_drs
            m.d.comb += Assert((by_ndr + by_drs) <= owed,
                               f"a response with tag {name} that no request is owed")
            with m.If(by_ndr):
                m.d.comb += [Assert(~on_drs, f"NDR for the read with tag {name}"),
                             Assert(ndr.ld_id == ld_id, f"NDR LD-ID of tag {name}")]
            with m.If(by_drs):
                m.d.comb += [Assert(on_drs, f"DRS for the non-read with tag {name}"),
                             Assert(drs.ld_id == ld_id, f"DRS LD-ID of tag {name}")]
            with m.If(answered):
                m.d.sync += owed.eq(0)
            with m.If(on_req):
                m.d.sync += [owed.eq(req_answered), on_drs.eq(req_drs), ld_id.eq(req.ld_id),
                             channel.eq(0)]
            with m.If(on_rwd):
                m.d.sync += [owed.eq(1), on_drs.eq(0), ld_id.eq(dut.m2s_rwd.payload.ld_id),
                             channel.eq(1)]
            watched[name] = (owed, channel, answered, on_req, on_rwd)

        owed, channel, answered, _, _ = watched["first"]
        later_owed, _, later_answered, on_req, on_rwd = watched["later"]
        _, _, _, first_on_req, first_on_rwd = watched["first"]
        behind = Signal()           # "later" was taken after "first", on its channel
        with m.If(first_on_req | first_on_rwd | later_answered):
            m.d.sync += behind.eq(0)
        with m.Elif(owed & Mux(channel, on_rwd, on_req)):
            m.d.sync += behind.eq(1)
        with m.If(later_answered & behind):
            m.d.comb += Assert(~owed | answered,
                               "a request answered while one taken before it on its channel "
                               "was not: a response was lost")


class _CheckedReadHarness(ControllerHarness):
    """A harness that checks the data of host reads: a read of an address it checks
    (:meth:`checked`), taken while no request is owed and with no RwD request taken on the
    same clock, must be answered with :meth:`expected` of its address unless a RwD request
    to an address that disturbs it (:meth:`disturbs`) was taken before the answer (the two
    are concurrent: CXL.mem orders neither). One such read is checked at a time; its tag is
    not reused until it is answered. A subclass keeps its reference in :meth:`reference`."""

    def check(self, m, dut):
        req, drs = dut.m2s_req.payload, dut.s2m_drs.payload
        owed = Signal(8)
        m.d.sync += owed.eq(owed + (self.req_taken & (req.opcode != ReqOpcode.MEM_SPEC_RD))
                            + self.rwd_taken - self.ndr_sent - self.drs_sent)
        self.reference(m, dut)
        pending, clean = Signal(name="read_pending"), Signal(name="read_clean")
        tag = Signal(TAG_BITS, name="read_tag")
        address = Signal.like(self.req_address, name="read_address")
        on_req, on_rwd = _tag_taken(self, tag)
        m.d.comb += Assume(~(pending & (on_req | on_rwd)))
        with m.If(self.rwd_taken & self.rwd_in_range & self.disturbs(self.rwd_address)):
            m.d.sync += clean.eq(0)
        answer = pending & self.drs_sent & (drs.tag == tag)
        with m.If(answer):
            m.d.sync += pending.eq(0)
            m.d.comb += Assert(drs.opcode == DRSOpcode.MEM_DATA, "checked read answered NXM")
            with m.If(clean):
                m.d.comb += Assert(drs.data == self.expected(address),
                                   "a checked read's data")
        with m.If(~pending & self.req_taken & self.req_reads & self.checked(self.req_address)
                  & (owed == 0) & ~self.rwd_taken):
            m.d.sync += [pending.eq(1), clean.eq(1), tag.eq(req.tag),
                         address.eq(self.req_address)]

    def reference(self, m, dut):
        """Keep the reference of what the checked reads must return."""
        raise NotImplementedError

    def checked(self, address):
        raise NotImplementedError

    def expected(self, address):
        raise NotImplementedError

    def disturbs(self, address):
        raise NotImplementedError


class IdentityWriteChangesOnlyItsLine(_CheckedReadHarness):
    """An identity line outside the region and its accumulators, chosen by the solver, with
    any initial content, reads back what was written to it, byte by byte as each write's
    byte enables say: writes to the lines beside it never change it (``docs/spec.md`` 2).
    The host reads the line on M2S Req (MemRd, MemRdData) and writes it and the lines beside
    it on M2S RwD (MemWr, MemWrPtl, unpoisoned, any data and byte enables; a line beside it
    may be an accumulator's), and nothing else; backpressure, flushes and device memory are
    as for every harness. Within the depth of ``formal.properties.PORT_DEPTHS`` no checked
    read can follow a completed write to the line itself (its response waits for memory's
    B), so the reads checked there return the line's initial content."""

    def check(self, m, dut):
        # The host narrowed to the line and its neighbours: the lines a misaddressed write
        # lands on first. A read sees such a write only after the write has crossed the whole
        # controller (formal.properties.PORT_DEPTHS), and with every request free the solver
        # had not finished clock 19 after 28 minutes; with this host it finishes each clock in
        # a minute or two.
        line_bytes = self.params.datapath.line_bytes
        beside = (self.line - line_bytes, self.line, self.line + line_bytes)
        m.d.comb += [
            Assume(~dut.m2s_req.valid | (self.req_reads & (self.req_address == self.line))),
            Assume(~dut.m2s_rwd.valid | (self.rwd_writes & Cat(self.rwd_address == address
                                                                for address in beside).any())),
        ]
        super().check(m, dut)

    def tracked_words(self, m):
        params = self.params
        p = params.datapath
        base, end, acc, acc_end = self.region
        shift = params.window_bytes.bit_length() - 1
        self.line = Signal(params.address_bits, name="chosen_line")
        self.initial = AnyConst(p.line_bits)
        m.d.comb += [
            self.line.eq(AnyConst(params.address_bits)),
            Assume(self.line[:p.line_bytes.bit_length() - 1] == 0),
            Assume((self.line < base) | (self.line >= end)),
            Assume((self.line < acc) | (self.line >= acc_end)),
            Assume(self.line[shift:] != params.window_base >> shift),
        ]
        return [(self.line, self.initial)]

    def reference(self, m, dut):
        rwd = dut.m2s_rwd.payload
        self.stored, kept = starting_at(m, self.initial, "reference_line")
        enables = Mux(rwd.opcode == RwDOpcode.MEM_WR, -1, rwd.byte_enable)
        bits = Cat(bit.replicate(8) for bit in enables[:len(rwd.byte_enable)])
        with m.If(self.rwd_taken & self.rwd_writes & (self.rwd_address == self.line)):
            m.d.sync += kept.eq((self.stored & ~bits) | (rwd.data & bits))

    def checked(self, address):
        return address == self.line

    def expected(self, address):
        return self.stored

    def disturbs(self, address):
        return address == self.line
