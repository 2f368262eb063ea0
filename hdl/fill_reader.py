"""The fill reader: a line's accumulator read from device memory for the slot pool."""

from amaranth import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from .pipeline import out_of_reset, register_copies
from .slot_ops import fill_command_layout, fill_line_layout

__all__ = ["FillReader"]


class _Step(enum.Enum, shape=3):
    """The fill reader's steps."""
    IDLE = 0
    ISSUE_FIRST = 1
    FIRST = 2
    ISSUE_PLANES = 3
    PLANES = 4
    DONE = 5


class FillReader(wiring.Component):
    """Reads a line's accumulator from device memory for the pool: its result line (a result
    read of a line that is not resident), or its state (a fill): the ``n`` line, then the
    ``W`` bit-plane lines only if ``n`` is not 0 (a fresh or cleared line costs one line).

    One read at a time: ``start`` is ready only while the reader is idle, and the read's
    first command is offered on ``fill_read`` from the clock it starts, at the address the
    owner gives (``first``, from registers: no adder in front of the port's command mux).
    ``held`` rises on the clock after the last line arrives, a register, and stays high,
    with ``line``, ``image`` and ``error`` held, until the owner strobes ``finish``; the
    reader is idle from the next clock. A result read's line may be taken a clock earlier:
    ``done`` is ``held``, or a result read's line arriving (``line`` and ``error`` are then
    read from it). A state read is done only when held. Whether it reads the planes is
    decided on the clock after its ``n`` line, from the register that took it: a clock more
    for a state of ``n`` = 0, and no line's data in front of the reader's step.

    The lines are captured by column group (pipeline rule 2): each group of ``first`` and of
    the planes has its own copies of the reader's step and plane count, so the capture
    enables and ``line``'s select have no net that spans the line. A register takes the bus
    on every clock of its step, whether a line arrives or not: the line that arrives is the
    last it takes there, and no enable waits for the line's valid.

    Parameters
    ----------
    params : ControllerParams
        The addresses and lines of device memory.
    lanes : DatapathParams
        The columns the reader keeps of each line (``line_bits`` of them: a slice's,
        :class:`PoolSlice`).

    Members
    -------
    start : In(stream.Signature({"tag": address_bits, "first": address_bits, "state": 1}))
        ``tag``: the accumulator's first byte; ``state``: read the state, not the result line;
        ``first``: the address of the read's first line (:meth:`first_line`).
    fill_read : Out(stream.Signature(fill_command_layout(params)))
    fill_data : In(stream.Signature({"data": lanes.line_bits, "n": W, "error": 1},
                                    always_ready=True))
        The lines of ``fill_read``'s reads, in order: the reader's columns of each
        (``data``), and the line's first ``W`` bits (``n``: the count, in a state's ``n``
        line); both 0 with ``error``.
    done : Out(1)
    held : Out(1)
    held_next : Out(1)
        ``held`` after this clock edge, unless the owner strobes ``finish`` or ``cancel`` on
        this clock (from the reader's registers, the port and the lines alone).
    finish : In(1)
        Strobed only while ``done``.
    cancel : In(1)
        Drops the read under way, whatever its step, except while a command is offered and
        not taken: the reader is idle from the next clock, and skips the dropped read's lines
        still to come (they arrive before those of any later read).
    skipping : Out(1)
        Lines of a dropped read are still to come.
    line : Out(lanes.line_bits)
        The result line of a result read (0 after an error).
    image : Out(state_lines * lanes.line_bits)
        While ``held``: the state's memory image in the reader's columns, the bit planes,
        then the ``n`` line as :func:`hdl.datapath.planes_of_state` makes it (``n`` alone;
        planes 0 when ``n`` is 0; unspecified after an error).
    error : Out(1)
        Device memory answered a line of this read with an error.
    failed : Out(1)
        ``error`` as of the last clock edge (a register): the lines taken before this clock
        came with one. Equal to ``error`` while ``held``.
    """

    def __init__(self, params, lanes):
        self._params = params
        self._lanes = lanes
        super().__init__({
            "start": In(stream.Signature(data.StructLayout({
                "tag": unsigned(params.address_bits), "first": unsigned(params.address_bits),
                "state": 1}))),
            "fill_read": Out(stream.Signature(fill_command_layout(params))),
            "fill_data": In(stream.Signature(fill_line_layout(lanes), always_ready=True)),
            "done": Out(1),
            "held": Out(1),
            "held_next": Out(1),
            "finish": In(1),
            "cancel": In(1),
            "skipping": Out(1),
            "line": Out(lanes.line_bits),
            "image": Out(lanes.state_lines * lanes.line_bits),
            "error": Out(1),
            "failed": Out(1),
        })

    @staticmethod
    def first_line(params, tag, state):
        """The address of a read's first line: the ``n`` line of the state at ``tag`` while
        ``state``, else its result line."""
        p = params.datapath
        return Mux(state, tag + p.state_lines * p.line_bytes, tag)

    def elaborate(self, platform):
        m = Module()
        p, lanes = self._params.datapath, self._lanes
        width = p.counter_width
        step = Signal(_Step)
        next_step = Signal(_Step)
        # ``timed``: the step after this edge as the port and the lines move it, without the
        # owner's start, finish and cancel, which come late in the clock. ``held_next`` and
        # the capture's copies of the step follow it (``_capture``).
        timed = Signal(_Step)
        # The planes' read address, a register (no adder in front of the port's command mux).
        planes_address = Signal.like(self.start.payload.tag)
        first_address = Signal.like(self.start.payload.first)
        state = Signal()
        beats = Signal(range(width + 1))   # planes arrived
        next_beats = Signal.like(beats)
        error = Signal()
        planes = Signal(width * lanes.line_bits, reset_less=True)
        first = Signal(lanes.line_bits, reset_less=True)    # the result line, or the n line
        fill_n = Signal(width, reset_less=True)             # the n line's count
        beat = self.fill_data.payload
        # Lines of dropped reads still to come: they come first, and are not this read's.
        # Whether none is (``clear``) is a register of its own, set from ``skip``'s next
        # value, so that no compare of the count is in front of what a line's arrival steers.
        skip = Signal(range(2 * width + 2))
        clear = Signal(init=1)
        arriving = self.fill_data.valid & clear
        beat_error = beat.error & clear
        held = step == _Step.DONE
        idle = step == _Step.IDLE
        # A state read goes on to the planes if its n line came without an error and says
        # n != 0: decided on the clock after that line, from the register that took it (0
        # after an error), so that no line's data reaches the step (and its copies).
        has_planes = fill_n.any()
        last_plane = (step == _Step.PLANES) & arriving & (beats == width - 1)
        m.d.comb += [
            self.start.ready.eq(idle),
            self.done.eq(held | ((step == _Step.FIRST) & arriving & ~state)),
            self.held.eq(held),
            self.held_next.eq(timed == _Step.DONE),
            self.error.eq(Mux(held, error, error | beat_error)),
            self.failed.eq(error),
            self.skipping.eq(~clear),
            self.image.eq(Cat(planes, fill_n)),
            self.fill_read.valid.eq((step == _Step.ISSUE_FIRST)
                                    | ((step == _Step.ISSUE_PLANES) & has_planes)
                                    | (idle & self.start.valid)),
            self.fill_read.payload.address.eq(Mux(
                step == _Step.ISSUE_PLANES, planes_address,
                Mux(idle, self.start.payload.first, first_address))),
            self.fill_read.payload.beats.eq(Mux(step == _Step.ISSUE_PLANES, width, 1)),
        ]
        m.d.comb += [timed.eq(step), next_step.eq(timed), next_beats.eq(beats)]
        m.d.sync += [step.eq(next_step), beats.eq(next_beats)]
        live = out_of_reset(m)
        with m.If(live), m.Switch(step):  # see the hdl.slots docstring, Icarus
            with m.Case(_Step.IDLE):
                with m.If(self.start.valid):
                    m.d.sync += [planes_address.eq(self.start.payload.tag + p.line_bytes),
                                 first_address.eq(self.start.payload.first),
                                 state.eq(self.start.payload.state), error.eq(0)]
                    m.d.comb += next_beats.eq(0)
                    m.d.comb += next_step.eq(Mux(self.fill_read.ready, _Step.FIRST,
                                                 _Step.ISSUE_FIRST))
            with m.Case(_Step.ISSUE_FIRST):
                with m.If(self.fill_read.ready):
                    m.d.comb += timed.eq(_Step.FIRST)
            with m.Case(_Step.FIRST):
                with m.If(arriving):
                    m.d.sync += error.eq(beat.error)
                    m.d.comb += timed.eq(Mux(state, _Step.ISSUE_PLANES, _Step.DONE))
            with m.Case(_Step.ISSUE_PLANES):
                with m.If(~has_planes):
                    m.d.comb += timed.eq(_Step.DONE)
                with m.Elif(self.fill_read.ready):
                    m.d.comb += timed.eq(_Step.PLANES)
            with m.Case(_Step.PLANES):
                with m.If(arriving):
                    m.d.sync += error.eq(self.error)
                    m.d.comb += next_beats.eq(beats + 1)
                    with m.If(last_plane):
                        m.d.comb += timed.eq(_Step.DONE)
        with m.If(self.finish | self.cancel):
            m.d.comb += next_step.eq(_Step.IDLE)
        self._skip(m, step, skip, clear, arriving, beats, has_planes)
        self._capture(m, timed, Mux(step == _Step.PLANES, beats + arriving, 0), planes, first,
                      fill_n)
        return m

    def _skip(self, m, step, skip, clear, arriving, beats, has_planes):
        """``skip``: the lines of dropped reads still to come, a line fewer for each that
        arrives, and a cancelled read's lines on top, as its step says; ``clear``: whether
        it is 0. ``arriving``: a line of this read arrives."""
        width = self._params.datapath.counter_width
        taken = self.fill_read.valid & self.fill_read.ready
        # One Mux chain, a continuous assignment (hdl.slots, Icarus).
        in_flight = Mux(step == _Step.ISSUE_FIRST, taken,
                        Mux(step == _Step.FIRST, ~arriving,
                            Mux(step == _Step.ISSUE_PLANES, Mux(taken & has_planes, width, 0),
                                Mux(step == _Step.PLANES, width - beats - arriving, 0))))
        following = Signal.like(skip)
        m.d.comb += following.eq(skip - (self.fill_data.valid & ~clear)
                                 + Mux(self.cancel, in_flight, 0))
        m.d.sync += [skip.eq(following), clear.eq(following == 0)]

    def _capture(self, m, timed, timed_beats, planes, first, fill_n):
        """The lines, by column group, each with its own copies of the step and plane count.

        The copies follow ``timed`` and ``timed_beats`` (the plane count in PLANES, else 0):
        the step as the lines move it. They are the step itself, but for a clock after a
        start (the copies still IDLE, the step FIRST or ISSUE_FIRST) and after a finish or
        cancel (the copies still where the read was, the step IDLE). So ``first`` and the
        count take the line in IDLE as in FIRST, and the planes are zeroed in both; the
        line of a read being dropped may land in ``first`` or a plane, which the next read
        clears or overwrites in FIRST before it uses them."""
        lanes, width = self._lanes, self._params.datapath.counter_width
        beat = self.fill_data.payload
        # ``first`` takes the line of FIRST, plane ``k`` the ``k``-th line of PLANES; the
        # planes are zero from FIRST on (a read of ``n`` = 0 reads no plane).
        group_bits = lanes.control_copy_bits
        steps = register_copies(m, timed, lanes.control_copies, "reader_step")
        counts = register_copies(m, timed_beats, lanes.control_copies, "reader_beats")
        with m.If((steps[0] == _Step.FIRST) | (steps[0] == _Step.IDLE)):
            m.d.sync += fill_n.eq(beat.n)
        line = []
        for g, (copy, count) in enumerate(zip(steps, counts)):
            bits = slice(g * group_bits, (g + 1) * group_bits)
            starting = (copy == _Step.FIRST) | (copy == _Step.IDLE)
            with m.If(starting):
                m.d.sync += first[bits].eq(beat.data[bits])
            plane = [planes[k * lanes.line_bits:(k + 1) * lanes.line_bits][bits]
                     for k in range(width)]
            with m.If(starting):
                m.d.sync += [bits_of_plane.eq(0) for bits_of_plane in plane]
            with m.Elif(copy == _Step.PLANES):
                for k, bits_of_plane in enumerate(plane):
                    with m.If(count == k):
                        m.d.sync += bits_of_plane.eq(beat.data[bits])
            line.append(Mux(copy == _Step.DONE, first[bits], beat.data[bits]))
        m.d.comb += self.line.eq(Cat(line))
