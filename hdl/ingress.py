"""The host side's way in: the M2S Req and RwD ingress queues, one request out per clock."""

from amaranth import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from spec.cxl import LD_ID_BITS, TAG_BITS, ReqOpcode, RwDOpcode, m2s_req_layout, m2s_rwd_layout
from spec.params import ControllerParams

from .pipeline import EagerFIFO, delayed

__all__ = ["Operation", "request_layout", "request_fields_layout", "request_line_layout",
           "Ingress"]


class Operation(enum.Enum, shape=3):
    """What a host request asks (``docs/controller.md``, "Opcodes")."""
    READ = 0          # MemRd, MemRdData: one DRS MemData
    WRITE = 1         # MemWr, MemWrPtl: one NDR Cmp
    INVALIDATE = 2    # MemInv, MemInvNT: one NDR Cmp, no memory access
    SPECULATIVE = 3   # MemSpecRd: a hint; no access, no response
    UNSUPPORTED = 4   # any other opcode: one NDR Cmp, no effect, STATUS.BAD_OPCODE


#: What each M2S Req opcode asks; any other opcode is ``UNSUPPORTED``.
_REQ_OPERATIONS = {
    ReqOpcode.MEM_RD: Operation.READ,
    ReqOpcode.MEM_RD_DATA: Operation.READ,
    ReqOpcode.MEM_INV: Operation.INVALIDATE,
    ReqOpcode.MEM_INV_NT: Operation.INVALIDATE,
    ReqOpcode.MEM_SPEC_RD: Operation.SPECULATIVE,
}


def request_fields_layout(params):
    """A host request's fields but its line, decoded on its way in."""
    return data.StructLayout({
        "operation": Operation,
        "tag": TAG_BITS,
        "ld_id": LD_ID_BITS,
        "address": unsigned(params.address_bits),  # first byte of the line
        "out_of_range": 1,                         # the host address is beyond address_bits
        "poison": 1,
        "full_line": 1,                            # a write with every byte enable set
    })


def request_line_layout(params):
    """A request's line: a write's (byte enables all set for a MemWr); another request
    carries the RwD queue's head's, which nothing reads."""
    p = params.datapath
    return data.StructLayout({"byte_enable": unsigned(p.line_bytes),
                              "data": unsigned(p.line_bits)})


def request_layout(params):
    """A host request as the controller serves it: its fields, then its line."""
    fields, line = request_fields_layout(params), request_line_layout(params)
    return data.StructLayout({**{name: field.shape for name, field in fields},
                              **{name: field.shape for name, field in line}})


class Ingress(wiring.Component):
    """Two ingress queues of ``queue_depth`` entries, M2S Req and M2S RwD, each request decoded
    on its way in (what its opcode asks, its line's byte address, whether that is beyond
    ``address_bits``, whether a write covers its whole line). ``request`` gives one per clock;
    when both queues hold one it alternates between them. Its line comes ``LINE_LAG`` clocks
    after it, on ``line``: the RwD queue reads its line columns through a tree of copies of
    its read pointer (:class:`hdl.pipeline.EagerFIFO`'s ``lag``), so that the choice of queue,
    made in one place, reaches no line column within a clock. Its write side is built alike:
    an RwD request is in its queue ``RWD_WRITE_LAG`` clocks after the port gives it.

    Address fields count lines: CXL's 64-byte lines at ``line_bits = 512`` (a Req's bit 5 is
    ignored), the smaller configurations' own lines otherwise. MemWr writes its whole line
    whatever its mask.

    Members
    -------
    m2s_req : In(stream.Signature(m2s_req_layout()))
    m2s_rwd : In(stream.Signature(m2s_rwd_layout(line_bits)))
    request : Out(stream.Signature(request_fields_layout(params)))
    line : Out(request_line_layout(params))
        The line of the request taken ``LINE_LAG`` clocks before.
    """

    #: Clocks from a request's take to its line on ``line``: the levels of the tree that
    #: carries the RwD queue's read pointer to its line columns, two so that no register
    #: drives more than a few far copies.
    LINE_LAG = 2

    #: Clocks from an RwD request's take to its entry in the RwD queue's memory: the queue's
    #: column groups are written at copies of its write pointer that come through a tree
    #: (:class:`hdl.pipeline.EagerFIFO`'s ``write_lag``), so that the port's valid reaches no
    #: line column within a clock. A request waits that much longer; the port's ``ready``
    #: counts it from its take, as without, so the queue's loop is a clock longer and a queue
    #: of the smallest ``queue_depth`` (2) cannot take an RwD request on every clock.
    RWD_WRITE_LAG = 1

    def __init__(self, params=ControllerParams()):
        self._params = params
        super().__init__({
            "m2s_req": In(stream.Signature(m2s_req_layout())),
            "m2s_rwd": In(stream.Signature(m2s_rwd_layout(params.datapath.line_bits))),
            "request": Out(stream.Signature(request_fields_layout(params))),
            "line": Out(request_line_layout(params)),
        })

    def elaborate(self, platform):
        m = Module()
        params = self._params
        layout = request_layout(params)
        # A request's fields before its line's: the Req queue holds only these, and the
        # choice of queue reaches only these (the line fields are always the RwD queue's).
        narrow = request_fields_layout(params).size
        queues = []
        for name, channel, entry, width, lag, write_lag in (
                ("req_queue", self.m2s_req, self._req_entry, narrow, None, 0),
                ("rwd_queue", self.m2s_rwd, self._rwd_entry, layout.size,
                 (narrow, self.LINE_LAG), self.RWD_WRITE_LAG)):
            queue = EagerFIFO(width=width, depth=params.queue_depth, lag=lag,
                              write_lag=(0, write_lag))
            m.submodules[name] = queue
            # The entry, ``write_lag`` clocks after the take.
            w_data = delayed(m, entry(m, channel.payload).as_value()[:width], write_lag,
                             f"{name}_entry")
            m.d.comb += [queue.w_data.eq(w_data),
                         queue.w_en.eq(channel.valid), channel.ready.eq(queue.w_rdy)]
            queues.append(queue)
        req_queue, rwd_queue = queues

        prefer_rwd = Signal()
        take_rwd = rwd_queue.r_rdy & (prefer_rwd | ~req_queue.r_rdy)
        m.d.comb += [
            self.request.valid.eq(req_queue.r_rdy | rwd_queue.r_rdy),
            self.request.payload.eq(Mux(take_rwd, rwd_queue.r_data[:narrow],
                                        req_queue.r_data)),
            self.line.eq(rwd_queue.r_data[narrow:]),
            req_queue.r_en.eq(self.request.ready & ~take_rwd),
            rwd_queue.r_en.eq(self.request.ready & take_rwd),
        ]
        with m.If(self.request.valid & self.request.ready):
            m.d.sync += prefer_rwd.eq(~take_rwd)
        return m

    def _req_entry(self, m, req):
        entry = Signal(request_layout(self._params))
        # A chain of Muxes rather than a Switch: a Switch becomes an ``always @*`` block, which
        # Icarus Verilog runs only once an input it reads changes, and the queue could take an
        # entry it had never worked out.
        operation = Operation.UNSUPPORTED
        for opcode, meaning in _REQ_OPERATIONS.items():
            operation = Mux(req.opcode == opcode, meaning, operation)
        m.d.comb += [entry.operation.eq(operation), entry.tag.eq(req.tag),
                     entry.ld_id.eq(req.ld_id)]
        self._entry_address(m, entry, req.address[1:])   # Req addresses count half lines
        return entry

    def _rwd_entry(self, m, rwd):
        entry = Signal(request_layout(self._params))
        whole = rwd.opcode == RwDOpcode.MEM_WR
        supported = whole | (rwd.opcode == RwDOpcode.MEM_WR_PTL)
        m.d.comb += [
            entry.operation.eq(Mux(supported, Operation.WRITE, Operation.UNSUPPORTED)),
            entry.tag.eq(rwd.tag),
            entry.ld_id.eq(rwd.ld_id),
            entry.poison.eq(rwd.poison),
            entry.full_line.eq(whole | rwd.byte_enable.all()),
            entry.byte_enable.eq(Mux(whole, -1, rwd.byte_enable)),
            entry.data.eq(rwd.data),
        ]
        self._entry_address(m, entry, rwd.address)
        return entry

    def _entry_address(self, m, entry, line):
        """Set ``entry``'s address from ``line``, a host address that counts lines."""
        offset_bits = self._params.datapath.line_bytes.bit_length() - 1
        line_bits = self._params.address_bits - offset_bits
        m.d.comb += [entry.address.eq(Cat(Const(0, offset_bits), line[:line_bits])),
                     entry.out_of_range.eq(line[line_bits:] != 0)]
