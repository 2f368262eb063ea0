"""The host side's way out: every request's response, in the order the requests were taken."""

from amaranth import Cat, Module, Mux, ResetSignal, Signal, unsigned
from amaranth.lib import data, enum, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from spec.cxl import (
    LD_ID_BITS,
    TAG_BITS,
    DevLoad,
    DRSOpcode,
    MetaField,
    NDROpcode,
    s2m_drs_layout,
    s2m_ndr_layout,
)
from spec.params import ControllerParams

from .pipeline import out_of_reset
from .slot_ops import slot_result_layout

__all__ = ["Source", "completion_layout", "Responder"]


class Source(enum.Enum, shape=2):
    """Where a response's data (or its go-ahead) comes from."""
    NOW = 0        # nothing to wait for (bad input, MemInv): NDR Cmp, or DRS MemData-NXM
    MEMORY = 1     # an identity read's line (DRS) or write's B response (NDR)
    POOL = 2       # the slot pool's result (contribution: NDR; result read: DRS)
    WINDOW = 3     # the register window's line (read: DRS) or completion (write: NDR)


def completion_layout():
    """A response owed to the host, queued when its request is dispatched."""
    return data.StructLayout({
        "tag": TAG_BITS,
        "ld_id": LD_ID_BITS,
        "data": 1,          # a DRS (read data) rather than an NDR
        "source": Source,
        "nxm": 1,           # DRS MemData-NXM (NOW only)
        "write": 1,         # answers a MemWr or MemWrPtl (counted in CNT_WRITES)
    })


class Responder(wiring.Component):
    """Sends each queued completion on ``s2m_ndr`` or ``s2m_drs`` once its source has it, in
    queue order. Every source gives its answers in the order of its requests: ``memory_data``
    (identity reads), ``memory_written`` (a pulse per identity write's B response),
    ``pool_result`` and ``window_result``. A response waits while its channel is not ready,
    and so do the ones behind it. Responses carry the request's tag and LD-ID, MetaField
    No-Op and ``dev_load``.

    Members
    -------
    completion : In(stream.Signature(completion_layout()))
    memory_data : In(stream.Signature({"data", "error"}))
    memory_written : In(1)
    pool_result : In(stream.Signature(slot_result_layout(params, TAG_BITS)))
        The slot pool's results, each with its request's tag as ``user``.
    window_result : In(stream.Signature(line_bits))
    dev_load : In(DevLoad)
    s2m_ndr, s2m_drs : Out(stream.Signature(...))
    sent_read, sent_write : Out(1)
        A DRS went out; an NDR answering a write went out (for CNT_READS and CNT_WRITES).
    """

    #: Completions the queue holds. Dispatch may queue one while the queue held fewer than
    #: ``DEPTH - 1`` on the last clock, so ``DEPTH - 1`` requests in flight can hold it up.
    DEPTH = 16

    def __init__(self, params=ControllerParams()):
        self._params = params
        line_bits = params.datapath.line_bits
        super().__init__({
            "completion": In(stream.Signature(completion_layout())),
            "memory_data": In(stream.Signature(data.StructLayout({
                "data": unsigned(line_bits), "error": 1}))),
            "memory_written": In(1),
            "pool_result": In(stream.Signature(slot_result_layout(params, TAG_BITS))),
            "window_result": In(stream.Signature(line_bits)),
            "dev_load": In(DevLoad),
            "s2m_ndr": Out(stream.Signature(s2m_ndr_layout())),
            "s2m_drs": Out(stream.Signature(s2m_drs_layout(line_bits))),
            "sent_read": Out(1),
            "sent_write": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        # Each entry carries its source also as one bit per source, so that the decision to
        # send reads four flip-flops of its own rather than the source field, which also
        # steers the line mux over every lane.
        sources = list(Source)
        layout = completion_layout()
        m.submodules.queue = queue = fifo.SyncFIFOBuffered(width=layout.size + len(sources),
                                                           depth=self.DEPTH)
        # ``completion.ready`` is a register, for dispatch's decision reads it: the queue held
        # fewer than ``DEPTH - 1`` on the last clock, so it has room for the one this clock
        # may bring (the level's compare and adder stay out of dispatch's clock).
        room = Signal(init=1)
        m.d.sync += room.eq(queue.level < self.DEPTH - 1)
        m.d.comb += [queue.w_data.eq(Cat(self.completion.payload,
                                          *(self.completion.payload.source == source
                                            for source in sources))),
                     queue.w_en.eq(self.completion.valid & room),
                     self.completion.ready.eq(room)]
        head = layout(queue.r_data[:layout.size])
        head_is = dict(zip(sources, queue.r_data[layout.size:]))

        # B responses of identity writes not yet answered, and whether there are any (a
        # register: its next value chosen last by the pulses, as EagerFIFO's flags).
        written = Signal(range(self.DEPTH + 1))
        written_any = Signal()

        line = Signal.like(self.s2m_drs.payload.data)
        poison = Signal()
        # Under an If of a register out of reset (see the hdl.slots docstring, Icarus).
        with m.If(out_of_reset(m)), m.Switch(head.source):
            with m.Case(Source.MEMORY):
                m.d.comb += [line.eq(self.memory_data.payload.data),
                             poison.eq(self.memory_data.payload.error)]
            with m.Case(Source.POOL):
                m.d.comb += [line.eq(self.pool_result.payload.line),
                             poison.eq(self.pool_result.payload.error)]
            with m.Case(Source.WINDOW):
                m.d.comb += line.eq(self.window_result.payload)
        # Whether each source has the head's answer. The head's source is one-hot, so the
        # response goes from a source as a product of registers and the channel's ready
        # (``sent_from``): a source's pop does not wait for the other sources' valids.
        has = {Source.NOW: 1,
               Source.MEMORY: Mux(head.data, self.memory_data.valid, written_any),
               Source.POOL: self.pool_result.valid,
               Source.WINDOW: self.window_result.valid}
        ready = Mux(head.data, self.s2m_drs.ready, self.s2m_ndr.ready)
        # No response leaves during a reset, its first clock included (out_of_reset is
        # still high then).
        head_valid = queue.r_rdy & ~ResetSignal()
        send = head_valid & Cat(head_is[source] & has[source] for source in sources).any()
        sent_from = {source: head_valid & head_is[source] & has[source] & ready
                     for source in sources}
        sent = Cat(sent_from.values()).any()
        for channel in (self.s2m_ndr, self.s2m_drs):
            m.d.comb += [channel.payload.tag.eq(head.tag), channel.payload.ld_id.eq(head.ld_id),
                         channel.payload.meta_field.eq(MetaField.NO_OP),
                         channel.payload.dev_load.eq(self.dev_load)]
        m.d.comb += [
            self.s2m_ndr.valid.eq(send & ~head.data),
            self.s2m_ndr.payload.opcode.eq(NDROpcode.CMP),
            self.s2m_drs.valid.eq(send & head.data),
            self.s2m_drs.payload.opcode.eq(Mux(head.nxm, DRSOpcode.MEM_DATA_NXM,
                                               DRSOpcode.MEM_DATA)),
            self.s2m_drs.payload.data.eq(line),
            self.s2m_drs.payload.poison.eq(poison),
            queue.r_en.eq(sent),
            self.memory_data.ready.eq(sent_from[Source.MEMORY] & head.data),
            self.pool_result.ready.eq(sent_from[Source.POOL]),
            self.window_result.ready.eq(sent_from[Source.WINDOW]),
            self.sent_read.eq(sent & head.data),
            self.sent_write.eq(sent & ~head.data & head.write),
        ]
        answered = sent_from[Source.MEMORY] & ~head.data
        grows, shrinks = self.memory_written & ~answered, answered & ~self.memory_written
        m.d.sync += [written.eq(written + self.memory_written - answered),
                     written_any.eq(Mux(grows, 1, Mux(shrinks, written != 1, written_any)))]
        return m
