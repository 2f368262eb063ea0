"""The AXI4 front end: an AXI4 subordinate port that speaks CXL.mem to the controller, a
request per line (``docs/controller.md``, "The AXI4 front end")."""

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from spec.cxl import (
    TAG_BITS,
    DRSOpcode,
    MetaField,
    ReqOpcode,
    RwDOpcode,
    SnpType,
    m2s_req_layout,
    m2s_rwd_layout,
    s2m_drs_layout,
    s2m_ndr_layout,
)

from .axi import BURST_INCR, RESP_DECERR, RESP_OKAY, RESP_SLVERR, axi4_signature

__all__ = ["AxiToCxl"]


def _burst_layout(params, id_bits):
    """A burst as the front end keeps it: its ID, first line, beats less one, and whether it
    is one the front end serves (INCR, a whole line per beat)."""
    return data.StructLayout({"id": unsigned(id_bits), "line": unsigned(params.address_bits),
                              "len": unsigned(8), "ok": 1})


class AxiToCxl(wiring.Component):
    """An AXI4 subordinate of ``line_bits`` data in front of the CXL.mem channels of
    :class:`hdl.controller.CxlMemController`: every beat of a burst is a request for one line,
    a read a MemRd, a write a MemWr (a MemWrPtl when ``WSTRB`` is not all ones, its mask the
    byte enables). The controller answers in request order, so responses leave in the order
    the bursts came, per ID as AXI wants and across IDs too.

    Responses: a write burst's B is OKAY once every line has its completion (the controller's
    flags and counters say what it did with each, as for CXL.mem: a contribution refused for
    its byte enables, say, is OKAY with ``STATUS.PARTIAL``); a read beat is OKAY with the
    line, SLVERR when the line came poisoned (device memory failed), DECERR for MemData-NXM.
    A burst the front end does not serve (not INCR, or ``AxSIZE`` other than a line) moves no
    line: its beats are taken and answered SLVERR.

    Reads and writes go through queues of ``QUEUE`` bursts each. A completion or a line is
    taken from the controller only while its response may follow: B waits for ``BREADY`` in a
    queue of ``QUEUE`` responses, R beats leave as ``RREADY`` allows.

    Parameters
    ----------
    params : ControllerParams
    id_bits : int
        Width of the AXI IDs.

    Members
    -------
    s_axi : In(axi4_signature(address_bits, line_bits, id_bits))
    m2s_req, m2s_rwd : Out(stream.Signature(...))
    s2m_ndr, s2m_drs : In(stream.Signature(...))
        The controller's CXL.mem channels (:mod:`spec.cxl`).
    """

    #: Bursts each queue holds: enough that one-beat bursts keep the controller busy over a
    #: request's round trip to its response (``make paper``'s AXI4 runs: a queue of 4 held the
    #: identity writes well below the CXL.mem port's rate; so did 16 once an identity write's
    #: W beat waited in block RAM, ``hdl.axi.AxiMemoryPort.FIRST_W``).
    QUEUE = 32

    def __init__(self, params, *, id_bits):
        p = params.datapath
        self._params = params
        self._id_bits = id_bits
        super().__init__({
            "s_axi": In(axi4_signature(address_bits=params.address_bits,
                                       data_bits=p.line_bits, id_bits=id_bits)),
            "m2s_req": Out(stream.Signature(m2s_req_layout())),
            "m2s_rwd": Out(stream.Signature(m2s_rwd_layout(p.line_bits))),
            "s2m_ndr": In(stream.Signature(s2m_ndr_layout())),
            "s2m_drs": In(stream.Signature(s2m_drs_layout(p.line_bits))),
        })

    def _burst(self, m, name):
        """Two queues of the bursts taken on address channel ``name`` ("ar" or "aw"): one for
        the requests, one for the responses; returns them, and drives the channel's ready."""
        axi = self.s_axi
        valid, addr, burst_id, length, size, burst = (
            getattr(axi, f"{name}{signal}") for signal in ("valid", "addr", "id", "len", "size",
                                                           "burst"))
        layout = _burst_layout(self._params, self._id_bits)
        line_shift = self._params.datapath.line_bytes.bit_length() - 1
        queues = []
        for role in ("requests", "responses"):
            queue = fifo.SyncFIFOBuffered(width=layout.size, depth=self.QUEUE)
            m.submodules[f"{name}_{role}"] = queue
            queues.append(queue)
        ready = Cat(queue.w_rdy for queue in queues).all()
        entry = Signal(layout, name=f"{name}_taken")
        m.d.comb += [entry.id.eq(burst_id), entry.line.eq(addr >> line_shift),
                     entry.len.eq(length),
                     entry.ok.eq((burst == BURST_INCR) & (size == line_shift))]
        for queue in queues:
            m.d.comb += [queue.w_en.eq(valid & ready), queue.w_data.eq(entry)]
        m.d.comb += getattr(axi, f"{name}ready").eq(ready)
        return queues

    def elaborate(self, platform):
        m = Module()
        reads, read_answers = self._burst(m, "ar")
        writes, write_answers = self._burst(m, "aw")
        self._read_requests(m, reads)
        self._read_answers(m, read_answers)
        written = self._write_requests(m, writes)
        self._write_answers(m, write_answers, written)
        return m

    def _beat_count(self, m, name, step, queue):
        """The beat of the burst at the head of ``queue``, counted by ``step``; the head is
        popped on its last beat's step. Returns the burst and whether this beat is its last."""
        layout = _burst_layout(self._params, self._id_bits)
        head = layout(queue.r_data)
        beat = Signal(8, name=f"{name}_beat")
        last = beat == head.len
        with m.If(step):
            m.d.sync += beat.eq(Mux(last, 0, beat + 1))
        m.d.comb += queue.r_en.eq(step & last)
        return head, beat, last

    def _read_requests(self, m, queue):
        """A MemRd per beat of each read burst served (none for one that is not)."""
        req = self.m2s_req
        step = Signal()
        head, beat, _ = self._beat_count(m, "read_request", step, queue)
        tag = Signal(TAG_BITS)
        m.d.comb += [req.valid.eq(queue.r_rdy & head.ok),
                     step.eq(queue.r_rdy & (~head.ok | req.ready)),
                     req.payload.opcode.eq(ReqOpcode.MEM_RD),
                     req.payload.snp_type.eq(SnpType.NO_OP),
                     req.payload.meta_field.eq(MetaField.NO_OP),
                     req.payload.tag.eq(tag),
                     req.payload.address.eq((head.line + beat) << 1)]
        with m.If(req.valid & req.ready):
            m.d.sync += tag.eq(tag + 1)

    def _read_answers(self, m, queue):
        """An R beat per beat of each read burst: the DRS line of a burst served, SLVERR with
        no line for one that is not."""
        axi, drs = self.s_axi, self.s2m_drs
        step = Signal()
        head, _, last = self._beat_count(m, "read_answer", step, queue)
        resp = Mux(~head.ok | drs.payload.poison, RESP_SLVERR,
                   Mux(drs.payload.opcode == DRSOpcode.MEM_DATA_NXM, RESP_DECERR, RESP_OKAY))
        offered = queue.r_rdy & (~head.ok | drs.valid)
        m.d.comb += [axi.rvalid.eq(offered), axi.rid.eq(head.id), axi.rlast.eq(last),
                     axi.rresp.eq(resp), axi.rdata.eq(Mux(head.ok, drs.payload.data, 0)),
                     drs.ready.eq(queue.r_rdy & head.ok & axi.rready),
                     step.eq(offered & axi.rready)]

    def _write_requests(self, m, queue):
        """A MemWr (MemWrPtl with a partial ``WSTRB``) per W beat of each write burst served;
        the W beats of one that is not are taken and dropped. Returns the strobe of a burst's
        last W beat taken."""
        axi, rwd = self.s_axi, self.m2s_rwd
        step = Signal()
        head, beat, last = self._beat_count(m, "write_request", step, queue)
        full = axi.wstrb == (1 << len(axi.wstrb)) - 1
        tag = Signal(TAG_BITS)
        m.d.comb += [rwd.valid.eq(queue.r_rdy & head.ok & axi.wvalid),
                     axi.wready.eq(queue.r_rdy & (~head.ok | rwd.ready)),
                     step.eq(axi.wvalid & axi.wready),
                     rwd.payload.opcode.eq(Mux(full, RwDOpcode.MEM_WR, RwDOpcode.MEM_WR_PTL)),
                     rwd.payload.snp_type.eq(SnpType.NO_OP),
                     rwd.payload.meta_field.eq(MetaField.NO_OP),
                     rwd.payload.tag.eq(tag),
                     rwd.payload.address.eq(head.line + beat),
                     rwd.payload.byte_enable.eq(axi.wstrb),
                     rwd.payload.data.eq(axi.wdata)]
        with m.If(rwd.valid & rwd.ready):
            m.d.sync += tag.eq(tag + 1)
        return step & last

    def _write_answers(self, m, queue, written):
        """A B per write burst, once each of its lines has its completion; for a burst not
        served, once its W beats have all been taken (``written`` counts the bursts whose
        beats have)."""
        axi, ndr = self.s_axi, self.s2m_ndr
        responses = fifo.SyncFIFOBuffered(width=len(axi.bid) + 2, depth=self.QUEUE)
        m.submodules.b_responses = responses
        step = Signal()
        head, _, last = self._beat_count(m, "write_answer", step, queue)
        # Bursts whose W beats are all taken and whose B has not been queued.
        unanswered = Signal(range(self.QUEUE + 1))
        done = step & last
        m.d.sync += unanswered.eq(unanswered + written - done)
        m.d.comb += [ndr.ready.eq(queue.r_rdy & head.ok & responses.w_rdy),
                     step.eq(Mux(head.ok, ndr.valid & ndr.ready,
                                 queue.r_rdy & (unanswered != 0) & responses.w_rdy)),
                     responses.w_en.eq(done),
                     responses.w_data.eq(Cat(head.id, Mux(head.ok, RESP_OKAY, RESP_SLVERR))),
                     axi.bvalid.eq(responses.r_rdy), axi.bid.eq(responses.r_data[:len(axi.bid)]),
                     axi.bresp.eq(responses.r_data[len(axi.bid):]),
                     responses.r_en.eq(axi.bready)]
