"""The register window: host line accesses turned into register accesses."""

from amaranth import Cat, Const, Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from spec.params import ControllerParams
from spec.regmap import REGISTER_BITS, REGISTER_BYTES

from .csr import READ_LATENCY, WRITE_LATENCY, csr_bus_signature
from .pipeline import register_copies

__all__ = ["window_request_layout", "RegisterWindow"]


def window_request_layout(params, addr_width):
    p = params.datapath
    return data.StructLayout({
        "read": 1,
        "word": unsigned(addr_width),        # word address of the line's first register
        "data": unsigned(p.line_bits),
        "byte_enable": unsigned(p.line_bytes),
    })


class RegisterWindow(wiring.Component):
    """Serves one host line access to the register window at a time, a register per word of
    the line, in address order: a read reads every word and answers the line; a write writes
    each word whose four byte enables are all set (the others are left alone) and answers
    once the last write has reached its register (``WRITE_LATENCY``), so that whatever the
    host does after the completion sees it.

    A word goes to the bus on every other clock at most, so that the line's shift is enabled
    from registers. The bus is shared with the controller's ``csr`` port, which goes first: a
    word waits while ``bus_free`` is low.

    Parameters
    ----------
    params : ControllerParams
    addr_width : int
        Word address bits of the register bus.
    data_lag : int
        Clocks from a request's take to its ``data`` and ``byte_enable`` on ``request``: each
        word takes them by a copy of its own of the take that many clocks late, and the first
        word goes to the bus no earlier than the clock after.

    Members
    -------
    request : In(stream.Signature(window_request_layout(...)))
    result : Out(stream.Signature(line_bits))
        The line read, valid until taken; unspecified for a write (its answer has no data).
        The payload is the capture register itself, so no enable waits for the decision
        that the read is done (pipeline rule 1).
    bus : Out(csr_bus_signature(addr_width))
    bus_free : In(1)
    """

    def __init__(self, params=ControllerParams(), *, addr_width, data_lag=0):
        if not isinstance(data_lag, int) or data_lag < 0:
            raise ValueError(f"data_lag must be a non-negative integer, not {data_lag!r}")
        self._data_lag = data_lag
        self._params = params
        super().__init__({
            "request": In(stream.Signature(window_request_layout(params, addr_width))),
            "result": Out(stream.Signature(params.datapath.line_bits)),
            "bus": Out(csr_bus_signature(addr_width)),
            "bus_free": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params.datapath
        words = p.line_bytes // REGISTER_BYTES
        current = Signal.like(self.request.payload, reset_less=True)
        busy = Signal()
        issued = Signal(range(words + 1))
        captured = Signal(range(words + 1))
        settle = Signal(range(WRITE_LATENCY + 2))
        capture = Signal(READ_LATENCY)          # reads in flight, by age
        line = Signal(p.line_bits, reset_less=True)
        m.d.comb += self.result.payload.eq(line)

        # Whether the window is free (neither busy nor holding a result), in registers of
        # their own: ``request.ready``, and ``taking``, the enable of ``current`` (a line
        # wide), which takes every payload offered while the window is free, so that its
        # enable does not wait for ``request.valid`` (pipeline rule 1); one ``taking`` per
        # word of the line (rule 2), the first also for the narrow fields.
        free = Signal(init=1)
        taking = [Signal(init=1, name=f"taking_{k}") for k in range(words)]
        accepted = self.request.valid & free
        for copy in (free, *taking):
            with m.If(accepted):
                m.d.sync += copy.eq(0)
            with m.If(self.result.valid & self.result.ready):
                m.d.sync += copy.eq(1)
        m.d.comb += self.request.ready.eq(free)
        offered = self.request.payload
        with m.If(taking[0]):
            m.d.sync += [current.read.eq(offered.read), current.word.eq(offered.word)]
        taking_data, settled = self._late_takes(m, taking, busy)
        # The word issued is always the first of ``current``'s data and byte enables, which
        # shift down a word on the clock after it goes: each word of the line comes from its
        # neighbour, not through a mux that gathers the line's words from across the die;
        # and each word's shift is enabled by a register of its own (rule 2), a copy of the
        # bus's decision, which is made in one place within its clock. So a word goes on
        # every other clock at most (``shifting``: the line is shifting on this one).
        fire = Signal()
        *shifts, shifting = register_copies(m, fire, words + 1, "shift")
        m.d.comb += fire.eq(settled & (issued != words) & self.bus_free & ~shifting)
        later_data = Cat(current.data[REGISTER_BITS:], Const(0, REGISTER_BITS))
        later_enables = Cat(current.byte_enable[REGISTER_BYTES:], Const(0, REGISTER_BYTES))
        for k, (copy, shift) in enumerate(zip(taking_data, shifts)):
            with m.If(copy):
                m.d.sync += [
                    current.data.word_select(k, REGISTER_BITS).eq(
                        offered.data.word_select(k, REGISTER_BITS)),
                    current.byte_enable.word_select(k, REGISTER_BYTES).eq(
                        offered.byte_enable.word_select(k, REGISTER_BYTES))]
            with m.Elif(shift):
                m.d.sync += [
                    current.data.word_select(k, REGISTER_BITS).eq(
                        later_data.word_select(k, REGISTER_BITS)),
                    current.byte_enable.word_select(k, REGISTER_BYTES).eq(
                        later_enables.word_select(k, REGISTER_BYTES))]
        with m.If(accepted):
            m.d.sync += [busy.eq(1), issued.eq(0), captured.eq(0), settle.eq(0)]

        m.d.comb += [
            self.bus.addr.eq(current.word + issued),
            self.bus.w_data.eq(current.data[:REGISTER_BITS]),
            self.bus.r_stb.eq(fire & current.read),
            self.bus.w_stb.eq(fire & ~current.read & current.byte_enable[:REGISTER_BYTES].all()),
        ]
        with m.If(fire):
            m.d.sync += issued.eq(issued + 1)
        reading = fire & current.read
        m.d.sync += capture.eq(Cat(reading, capture[:-1]))
        with m.If(capture[-1]):
            m.d.sync += captured.eq(captured + 1)
        # The line shifts a word in as a read's data returns, each word of it enabled by a
        # copy of ``capture``'s last stage of its own (rule 2).
        captures = register_copies(m, Cat(reading, capture)[READ_LATENCY - 1], words,
                                   "capture_last")
        following = Cat(line[REGISTER_BITS:], self.bus.r_data)
        for k, shift in enumerate(captures):
            with m.If(shift):
                m.d.sync += line.word_select(k, REGISTER_BITS).eq(
                    following.word_select(k, REGISTER_BITS))

        with m.If(busy & (issued == words)):
            with m.If(current.read):
                with m.If(captured == words):
                    m.d.sync += [busy.eq(0), self.result.valid.eq(1)]
            with m.Elif(settle == WRITE_LATENCY + 1):
                m.d.sync += [busy.eq(0), self.result.valid.eq(1)]
            with m.Else():
                m.d.sync += settle.eq(settle + 1)
        with m.If(self.result.valid & self.result.ready):
            m.d.sync += self.result.valid.eq(0)
        return m

    def _late_takes(self, m, taking, busy):
        """The line's words and byte enables come ``data_lag`` clocks after the take: each
        word takes them by its copy of ``taking`` that many clocks late (the first list), and
        no word goes before the line is in (``settled``: ``busy`` on this clock and the
        ``data_lag`` before)."""
        taking_data, settled, busy_before = taking, busy, busy
        for lag in range(self._data_lag):
            later = [Signal(init=1, name=f"taking_{k}_late{lag}") for k in range(len(taking))]
            m.d.sync += [late.eq(copy) for late, copy in zip(later, taking_data)]
            taking_data = later
            earlier = Signal(name=f"busy_late{lag}")
            m.d.sync += earlier.eq(busy_before)
            busy_before = earlier
            settled = settled & earlier
        return taking_data, settled
