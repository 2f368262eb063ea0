"""The NEURON-Fabric CXL.mem controller: host channels in, device memory (AXI4) out.

One request is served at a time, start to finish, by the engine below; that is how every
contribution to a line is counted exactly once (``docs/controller.md``, "Hazards").
"""

from amaranth import Array, Cat, Const, Module, Mux, ResetSignal, Signal, unsigned
from amaranth.lib import data, enum, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .arith import times_constant
from .axi import AxiLineMaster, axi4_signature
from .control import ControlRegisters, region_layout
from .csr import READ_LATENCY, csr_bus_signature
from .cxl import (DevLoad, DRSOpcode, MetaField, NDROpcode, ReqOpcode,
                  RwDOpcode, m2s_req_layout, m2s_rwd_layout, s2m_drs_layout, s2m_ndr_layout)
from .datapath import AggregationDatapath, planes_of_state, state_layout, state_of_planes
from .decode import AddressDecoder
from .params import ControllerParams, Reason, aggregates
from .pipeline import register_copies

__all__ = ["Operation", "CxlMemController"]


class Operation(enum.Enum, shape=3):
    """What the engine does with a host request (``docs/controller.md``, "Opcodes")."""
    READ = 0          # MemRd, MemRdData: one DRS MemData
    WRITE = 1         # MemWr, MemWrPtl: one NDR Cmp
    INVALIDATE = 2    # MemInv, MemInvNT: one NDR Cmp, no memory access
    SPECULATIVE = 3   # MemSpecRd: a hint; no access, no response
    UNSUPPORTED = 4   # any other opcode: one NDR Cmp, no effect, STATUS.BAD_OPCODE


#: Decision-input copies fed by one register (see ``CxlMemController._decision_inputs``).
_DECISION_FANOUT = 8

#: What each M2S Req opcode asks of the engine; any other opcode is ``UNSUPPORTED``.
_REQ_OPERATIONS = {
    ReqOpcode.MEM_RD: Operation.READ,
    ReqOpcode.MEM_RD_DATA: Operation.READ,
    ReqOpcode.MEM_INV: Operation.INVALIDATE,
    ReqOpcode.MEM_INV_NT: Operation.INVALIDATE,
    ReqOpcode.MEM_SPEC_RD: Operation.SPECULATIVE,
}


class _Route(enum.Enum, shape=4):
    """Where DISPATCH sends a request, chosen while it is decoded (see ``_route``)."""
    IGNORE = 0        # a hint: no access, no response
    BAD_OPCODE = 1    # an unsupported opcode: Cmp, STATUS.BAD_OPCODE
    NO_ACCESS = 2     # an invalidate: Cmp
    BAD_READ = 3      # a read beyond the address bits: MemData-NXM, STATUS.BAD_ADDRESS
    BAD_WRITE = 4     # a write beyond the address bits: Cmp, STATUS.BAD_ADDRESS
    POISONED = 5      # a poisoned write: Cmp, STATUS.POISON
    WINDOW = 6        # the register window
    STATE = 7         # an aggregating region: the line's state is read first
    LINE_READ = 8     # identity
    LINE_WRITE = 9    # identity


def _request_layout(params):
    """The request the engine is serving."""
    p = params.datapath
    return data.StructLayout({
        "operation": Operation,
        # operation is WRITE: the datapath's contribute, a register of its own so that no
        # decode of the operation is in front of the datapath's decision
        "write": 1,
        "read": 1,          # operation is READ, likewise for the engine's branches
        "tag": 16,
        "ld_id": 4,
        "address": unsigned(params.address_bits),  # first byte of the line
        "out_of_range": 1,                         # the host address is beyond address_bits
        "poison": 1,
        "byte_enable": unsigned(p.line_bytes),
        "full_line": 1,                            # every byte enable is set
        "data": unsigned(p.line_bits),
    })


#: The fields of :func:`_request_layout` that an ingress queue keeps of a host request.
_ENTRY_FIELDS = ("operation", "write", "read", "tag", "ld_id", "address", "out_of_range", "poison",
                 "full_line")


def _entry_layout(params):
    """A host request as its ingress queue keeps it: decoded on its way in (see
    :meth:`CxlMemController._ingress`), so that ``current`` loads it through the choice of
    queue alone. An RwD's line and byte enables wait in their groups' queues."""
    request = _request_layout(params)
    return data.StructLayout({name: request[name].shape for name in _ENTRY_FIELDS})


def _columns(params, group):
    """The line bits and byte-enable bits of column group ``group`` (``DatapathParams``: one
    group per control copy), as slices."""
    width = params.control_copy_bits
    return (slice(group * width, (group + 1) * width),
            slice(group * width // 8, (group + 1) * width // 8))


def _copies(m, flag, count):
    """``count`` copies of the engine's one-bit register ``flag``, one per group of columns,
    each a register that takes ``flag``'s value a clock later: the engine decides once, into
    ``flag``, and the decision reaches the groups through a wire from one flip-flop to
    ``count``, with no logic on it.

    A copy holds a decision from two clocks after the clock in which the engine makes it. That
    is soon enough for a flag that the engine sets no later than the clock in which it makes a
    memory read command valid: the read's first line comes back four clocks later at the
    earliest (the master's command register, its address, the memory, its read register). A
    write's lines are offered by the groups themselves, on their copies (``_write_offers``), so
    they simply start two clocks after the decision. A copy is cleared a clock after ``flag``,
    when the run's last line has moved and no other line can move before the next command."""
    return register_copies(m, flag, count, f"{flag.name}_copy")


class CxlMemController(wiring.Component):
    """A CXL.mem Type-3 memory expander that aggregates low-bit gradient lines.

    See ``docs/controller.md`` for the behaviour per opcode, path and bad input, the register
    window, the clear engine and DevLoad.

    Parameters
    ----------
    params : ControllerParams

    Members
    -------
    m2s_req : In(stream.Signature(m2s_req_layout()))
    m2s_rwd : In(stream.Signature(m2s_rwd_layout(line_bits)))
    s2m_ndr : Out(stream.Signature(s2m_ndr_layout()))
    s2m_drs : Out(stream.Signature(s2m_drs_layout(line_bits)))
        The CXL.mem channels; ``ready`` stands in for link-layer credits.
    axi : Out(axi4_signature(...))
        Device memory, ``line_bits`` wide.
    csr : In(csr_bus_signature(...))
        The control registers' own bus. It has priority over the register window.
    """

    def __init__(self, params=ControllerParams()):
        if not isinstance(params, ControllerParams):
            raise TypeError(f"params must be a ControllerParams, not {params!r}")
        self._params = params
        p = params.datapath
        self._control = ControlRegisters(params)
        super().__init__({
            "m2s_req": In(stream.Signature(m2s_req_layout())),
            "m2s_rwd": In(stream.Signature(m2s_rwd_layout(p.line_bits))),
            "s2m_ndr": Out(stream.Signature(s2m_ndr_layout())),
            "s2m_drs": Out(stream.Signature(s2m_drs_layout(p.line_bits))),
            "axi": Out(axi4_signature(address_bits=params.address_bits, data_bits=p.line_bits,
                                      id_bits=params.axi_id_bits)),
            "csr": In(csr_bus_signature(len(self._control.bus.addr))),
        })

    @property
    def params(self):
        return self._params

    @property
    def regmap(self):
        return self._control.regmap

    def elaborate(self, platform):
        m = Module()
        params = self._params
        p = params.datapath

        m.submodules.control = control = self._control
        m.submodules.decoder = decoder = AddressDecoder(params)
        m.submodules.memory = memory = AxiLineMaster(
            line_bits=p.line_bits, address_bits=params.address_bits,
            id_bits=params.axi_id_bits, copies=p.control_copies)
        m.submodules.datapath = datapath = AggregationDatapath(p, user_width=1,
                                                               replicated_inputs=True)
        wiring.connect(m, memory.axi, wiring.flipped(self.axi))

        req_queue, rwd_queue, line_queues = self._ingress(m)
        # A Req leaves its queue the clock after the engine took it (see _accept), an RwD two
        # clocks after: ``rwd_taken`` says it was taken, and its copies, one per group of
        # columns, load the line (see _load_line) on the clock ``pop_rwd`` pops the queue.
        pop_req = Signal()
        rwd_taken = Signal()
        pop_rwd = Signal()
        m.d.comb += [req_queue.r_en.eq(pop_req), rwd_queue.r_en.eq(pop_rwd)]
        m.d.sync += [pop_req.eq(0), rwd_taken.eq(0), pop_rwd.eq(rwd_taken)]
        current = Signal(_request_layout(params))
        self._load_line(m, line_queues, current, _copies(m, rwd_taken, p.control_copies))
        m.d.comb += [decoder.address.eq(current.address), decoder.enable.eq(control.enable),
                     decoder.regions.eq(control.regions)]
        # The decoded address, as registered on DECODE's last clock: the path and state address
        # stay those of the table the request was decoded against.
        decoded = Signal.like(decoder.decoded)
        # The device-memory run of the request (or of a clear): first byte and lines. Set ahead
        # of the state that issues it, so that a command's payload is a register.
        run_address = Signal(params.address_bits)
        run_lines = Signal(params.address_bits)
        for command in (memory.read_command, memory.write_command):
            m.d.comb += [command.payload.address.eq(run_address),
                         command.payload.beats.eq(run_lines)]
        decode_wait = Signal(range(AddressDecoder.LATENCY + 1))
        # The engine is in DECODE: a flag of its own, so that ``decoded`` and the run registers
        # load on a flip-flop rather than on a decode of the engine's state (see below).
        decoding = Signal()
        events = control.events

        # Register window: the engine shares the control registers' bus with the csr port. Its
        # accesses wait in registers (``window_*``) until a cycle the csr port leaves free.
        window_pending = Signal()
        window_read = Signal()
        window_write = Signal()
        window_addr = Signal.like(self.csr.addr)
        window_wdata = Signal(32)
        external = self.csr.r_stb | self.csr.w_stb
        window_fire = window_pending & ~external
        m.d.comb += [
            control.bus.addr.eq(Mux(external, self.csr.addr, window_addr)),
            control.bus.r_stb.eq(self.csr.r_stb | (window_fire & window_read)),
            control.bus.w_stb.eq(self.csr.w_stb | (window_fire & window_write)),
            control.bus.w_data.eq(Mux(external, self.csr.w_data, window_wdata)),
            self.csr.r_data.eq(control.bus.r_data),
        ]

        # Responses; DevLoad follows the ingress queues' occupancy.
        reply_data = Signal(p.line_bits)
        reply_poison = Signal()
        reply_nxm = Signal()
        queued = req_queue.level + rwd_queue.level
        light, optimal, moderate = params.devload_limits
        dev_load = Signal(DevLoad)
        with m.If(queued <= light):
            m.d.comb += dev_load.eq(DevLoad.LIGHT)
        with m.Elif(queued <= optimal):
            m.d.comb += dev_load.eq(DevLoad.OPTIMAL)
        with m.Elif(queued <= moderate):
            m.d.comb += dev_load.eq(DevLoad.MODERATE)
        with m.Else():
            m.d.comb += dev_load.eq(DevLoad.SEVERE)
        for channel in (self.s2m_ndr, self.s2m_drs):
            m.d.comb += [channel.payload.tag.eq(current.tag),
                         channel.payload.ld_id.eq(current.ld_id),
                         channel.payload.meta_field.eq(MetaField.NO_OP),
                         channel.payload.dev_load.eq(dev_load)]
        m.d.comb += [
            self.s2m_ndr.payload.opcode.eq(NDROpcode.CMP),
            self.s2m_drs.payload.opcode.eq(Mux(reply_nxm, DRSOpcode.MEM_DATA_NXM,
                                               DRSOpcode.MEM_DATA)),
            self.s2m_drs.payload.poison.eq(reply_poison),
            self.s2m_drs.payload.data.eq(reply_data),
        ]

        # Accumulator state of the line being served, as its memory image (bit planes, see
        # planes_of_state): read from memory beat by beat into the top, written back from the
        # bottom; both shift down by one line. Whether a beat moves is decided by flags of
        # their own (set when a state read or a write-back is due, cleared when it is done),
        # the handshakes and the datapath's response, not by the engine's state. Each group of
        # buffer columns (the datapath's control copies) follows a copy of its own of each
        # flag, of the read's valid, of the write handshake and of the response's valid, so
        # that no enable net spans the line: the reading and sending flags are registers of the
        # engine that their copies follow a clock later (:func:`_copies`).
        state_reading = Signal()
        state_sending = Signal()
        reading_copies = _copies(m, state_reading, p.control_copies)
        sending_copies = _copies(m, state_sending, p.control_copies)
        line_writing = Signal()           # an identity write's line is on its way
        writing_copies = _copies(m, line_writing, p.control_copies)
        sending_lines = self._write_offers(m, memory, sending_copies, writing_copies)
        state = self._state_buffer(m, memory, datapath, reading_copies, sending_lines)
        beats = Signal(range(p.state_lines + 1))
        memory_error = Signal()
        # The request's state: some two thousand single-bit selects of the buffer. Assigned a
        # second time under a condition (which changes nothing), it is driven from one process:
        # Icarus Verilog would evaluate a continuous assignment of that many operands once per
        # changed operand (as in hdl.datapath._CombStage).
        request_state = Signal(p.state_bits)
        lane_order = state_of_planes(p, state)
        m.d.comb += request_state.eq(lane_order)
        with m.If(datapath.request.valid):
            m.d.comb += request_state.eq(lane_order)
        m.d.comb += [
            datapath.request.payload.data.eq(current.data),
            # The datapath needs the byte enables only to tell whether all are set: one
            # register (set at accept) rather than a reduction of the whole mask, and in one
            # bit, so that it reaches the datapath's decision alone. (The response's byte
            # enables, the rest of them set, are not read.)
            datapath.request.payload.byte_enable.eq(
                Cat(current.full_line, Const(-1, p.line_bytes - 1))),
            datapath.request.payload.state.eq(request_state),
            datapath.request.payload.threshold.eq(decoded.threshold),
            datapath.request.payload.mode.eq(decoded.mode),
            datapath.request.payload.contribute.eq(current.write),
        ]
        result = datapath.response.payload
        self._decision_inputs(m, datapath.decision_inputs, current, decoded, memory,
                              reading_copies)

        # Clear engine requests, served between host requests.
        clear_pending = Signal()
        clear_region = Signal.like(control.clear_region)
        clear_active = Signal()
        clear_copies = _copies(m, clear_active, p.control_copies)
        clear_target = Signal(region_layout(params))   # the region's descriptor
        clear_exists = Signal()                     # clear_region names a region
        clear_wanted = Signal()                     # the region exists and aggregates
        clear_lines = Signal(params.address_bits)   # its lines
        m.d.comb += control.clear_busy.eq(clear_pending | clear_active)

        # The decoded address and the run registers load on flags, not on a decode of the
        # engine's state: through DECODE, the decoder's output and the run of the request's
        # path (the decoder's output counts on DECODE's last clock, the last load); through a
        # clear, the clear's run (its descriptor is registered while the clear is pending, and
        # its lines follow it a clock later, so the run is settled by CLEAR_START).
        state_path = aggregates(decoder.decoded.mode)
        route = Signal(_Route)
        # The memory command DISPATCH makes valid, registered with the route (and read only in
        # DISPATCH, on the ``dispatching`` flag), so that no decode of the engine's state or of
        # the route is in front of the memory master's command registers.
        dispatch_read, dispatch_write = Signal(), Signal()
        with m.If(decoding):
            chosen = self._route(current, decoder.decoded)
            m.d.sync += [route.eq(chosen),
                         dispatch_read.eq((chosen == _Route.STATE) | (chosen == _Route.LINE_READ)),
                         dispatch_write.eq(chosen == _Route.LINE_WRITE)]
            m.d.sync += [decoded.eq(decoder.decoded),
                         run_address.eq(Mux(state_path, decoder.decoded.state_address,
                                            current.address)),
                         run_lines.eq(Mux(state_path, p.state_lines, 1))]
        with m.Elif(clear_active):
            m.d.sync += [run_address.eq(clear_target.acc),
                         run_lines.eq(times_constant(clear_lines, p.state_lines))]
        # clear_loading is clear_pending again, in a flip-flop of its own for the descriptor's
        # load below, so that the flag IDLE reads does not also enable that whole register.
        clear_loading = Signal()
        # The region number once more for each field of the descriptor, loaded with
        # clear_region, so that each field's select is a register of its own, placed by it.
        field_regions = {name: Signal(len(decoded.region), name=f"clear_region_{name}")
                         for name, _ in region_layout(params)}
        with m.If(control.clear_start):
            m.d.sync += [clear_pending.eq(1), clear_loading.eq(1),
                         clear_region.eq(control.clear_region),
                         *(number.eq(control.clear_region) for number in field_regions.values())]
        # The region's descriptor, on a flag rather than a decode of the engine's state: loaded
        # every clock of a pending clear, the last time on the clock IDLE takes it (the table
        # is applied then: IDLE takes nothing while an APPLY copies it).
        with m.If(clear_loading):
            m.d.sync += [clear_target[name].eq(control.regions[number][name])
                         for name, number in field_regions.items()]
            m.d.sync += clear_exists.eq(clear_region < params.regions)
        m.d.sync += [clear_wanted.eq(clear_exists & clear_target.enable
                                     & aggregates(clear_target.mode)),
                     clear_lines.eq((clear_target.end - clear_target.base)
                                    [p.line_bytes.bit_length() - 1:])]

        # Register window word loop: one 32-bit register per word of the line, word ``issued``
        # next. Its data and byte enables are selected in two registered steps, so that no
        # path runs from the counter through a select of the whole line into the window
        # registers: each group ``g`` of up to four words has a free-running register of its
        # word ``window_sub_<g>`` (the next word's place in its group), and a load takes the
        # register of the next word's group once ``staged`` says they hold the next word (one
        # clock after the previous load, so a word is issued every other clock at most).
        words = p.line_bytes // 4
        issued = Signal(range(words + 1))
        more_words = Signal()               # issued != words, kept as a register
        captured = Signal(range(words + 1))
        # The window's reads in flight, by age: a read's data comes READ_LATENCY clocks after
        # it is issued, and waits a clock more in ``window_r_data``, beside the reply's last
        # word, so that the register block's read register sits by the register block.
        capture = Signal(READ_LATENCY + 1)
        window_r_data = Signal(32)
        m.d.sync += window_r_data.eq(control.bus.r_data)
        window_word = current.address[2:params.window_bytes.bit_length() - 1]
        sub_bits = min(words, 4).bit_length() - 1       # a group has 2 ** sub_bits words
        # ``sub``, once per group: a register of each group's own, set by the same statements,
        # so that no one register selects the word of every group.
        subs = [Signal(sub_bits, name=f"window_sub_{g}") for g in range(words >> sub_bits)]
        staged = Signal()
        group_data, group_whole = self._window_word_groups(m, current, sub_bits, subs)
        group = issued[sub_bits:(words - 1).bit_length()]   # the next word's group
        m.d.sync += staged.eq(1)

        # The read reply, loaded from whichever source has it; every condition is a register or
        # a memory handshake (no decode of the engine's state), since reply_data is a whole
        # line of flip-flops. Each group of columns takes an identity read's line on its own
        # copies of ``line_reading`` and of the read's valid, and is zeroed the clock after IDLE
        # (the data of a MemData-NXM) by its copy of ``reply_zero`` (set in IDLE).
        line_reading = Signal()           # an identity read's line is on its way
        line_reading_copies = _copies(m, line_reading, p.control_copies)
        reply_zero = Signal(p.control_copies)
        m.d.sync += reply_zero.eq(0)
        shifted = Cat(reply_data[32:], window_r_data)
        for g in range(p.control_copies):
            bits = _columns(p, g)[0]
            with m.If(capture[-1]):
                m.d.sync += reply_data[bits].eq(shifted[bits])
            with m.Elif(line_reading_copies[g] & memory.read_valid_copies[g]):
                m.d.sync += reply_data[bits].eq(memory.read_data.payload.data[bits])
            with m.Elif(datapath.response_valid_copies[g]):
                m.d.sync += reply_data[bits].eq(result.line[bits])
            with m.Elif(reply_zero[g]):
                m.d.sync += reply_data[bits].eq(0)

        # The memory master's write data, driven from registers and from each group's copies
        # of the flags (never from a decode of the engine's state): the master registers it,
        # so these are timed paths into a line of flip-flops. A clear is a fill run of zeros,
        # which the master writes to every line of the region without taking any. (Read data
        # has no ready: the state buffer takes it while ``state_reading``, the reply while
        # ``line_reading``.)
        m.d.comb += memory.write_command.payload.fill.eq(clear_active)
        for g in range(p.control_copies):
            data_bits, strobe_bits = _columns(p, g)
            m.d.comb += [
                memory.write_data.data[data_bits].eq(
                    Mux(writing_copies[g], current.data[data_bits],
                        Mux(clear_copies[g], 0, state[data_bits]))),
                memory.write_data.strobe[strobe_bits].eq(
                    Mux(writing_copies[g], current.byte_enable[strobe_bits], -1)),
            ]

        # The engine is in IDLE: a flip-flop of its own, set at reset and on the way in, cleared
        # on the way out, so that the accept logic beside the queues reads one register rather
        # than a decode of the engine's state.
        idle = Signal(init=1)
        taken = Signal()        # a request is accepted this clock (see _accept)
        # The region table is applied (control.table_ready), and the memory master's last
        # write finished (write_done, with write_error), through registers beside the engine:
        # a clock late, which the table allows (ControlRegisters: it falls clocks before the
        # first region changes) and which costs a write one clock.
        table_ready = Signal()
        write_done = Signal()
        m.d.sync += [table_ready.eq(control.table_ready), write_done.eq(memory.write_done)]
        with m.If(idle):
            self._accept(m, params, req_queue, rwd_queue, current, pop_req, rwd_taken, taken,
                         table_ready & ~clear_pending)

        # idle falls as IDLE leaves (for a clear or a request taken, see IDLE below), decided
        # from registers and the queues' flags alone, not through the engine's state.
        with m.If(idle & table_ready & (clear_pending | req_queue.r_rdy | rwd_queue.r_rdy)):
            m.d.sync += idle.eq(0)

        def to_idle():
            m.next = "IDLE"
            m.d.sync += idle.eq(1)

        # What IDLE and WINDOW do to the registers beside the engine, on flags of their own that
        # say the engine is in that state, rather than on a decode of the engine's state.
        windowing = Signal()
        with m.If(idle):
            m.d.sync += [memory_error.eq(0), beats.eq(0), issued.eq(0), more_words.eq(1),
                         captured.eq(0), *(sub.eq(0) for sub in subs), staged.eq(0),
                         reply_poison.eq(0), reply_nxm.eq(0), decode_wait.eq(0),
                         reply_zero.eq(-1)]
        with m.If(windowing):
            # Loads word ``issued`` into the window registers whenever they are free or being
            # issued; a register read returns its data READ_LATENCY clocks after it is issued.
            reading = current.read
            with m.If(more_words & staged & (~window_pending | window_fire)):
                m.d.sync += [
                    window_pending.eq(1),
                    window_read.eq(reading),
                    window_write.eq(~reading & group_whole[group]),
                    window_addr.eq(window_word + issued),
                    window_wdata.eq(group_data[group]),
                    issued.eq(issued + 1),
                    more_words.eq(issued + 1 != words),
                    *(sub.eq((issued + 1)[:sub_bits]) for sub in subs),
                    staged.eq(0),
                ]
            with m.Elif(window_fire):
                m.d.sync += window_pending.eq(0)
            m.d.sync += capture.eq(Cat(window_fire & window_read, capture[:-1]))
            with m.If(capture[-1]):
                m.d.sync += captured.eq(captured + 1)

        # The memory master's commands are valid on flags set a state ahead, rather than on a
        # decode of the engine's state: DISPATCH's (see dispatch_read above); a write-back's
        # when the datapath's response to a contribution is accepted (write_back_pending: the
        # engine waits in RESULT for the response to a write); a clear's in CLEAR_START if the
        # region is wanted.
        write_back_pending = Signal()
        clear_write_start = Signal()
        dispatching = Signal()          # the engine is in DISPATCH
        m.d.comb += [
            memory.read_command.valid.eq(dispatching & dispatch_read),
            memory.write_command.valid.eq(
                (dispatching & dispatch_write)
                | (write_back_pending & datapath.response.valid & result.status.accepted)
                | clear_write_start),
        ]

        # A contribution's result counts on the same flag, not in RESULT's decode.
        with m.If(write_back_pending & datapath.response.valid):
            self._count_result(m, result, events)

        # The outputs the engine's state decodes are low during a reset, which is a condition of
        # all of them: Icarus Verilog evaluates an ``always @*`` block only when something it
        # reads changes, so an output decoded from registers that keep their initial values
        # through the reset (the state, ``route``) read X until one of them changed, and the
        # memory master's command register took that X on the first clock after the reset. (The
        # memory commands' valids and the result events above come from reset flags instead.)
        with m.If(~ResetSignal()), m.FSM(name="engine", init="IDLE"):
            with m.State("IDLE"):
                # The request's registers are cleared on the ``idle`` flag (see above).
                with m.If(~table_ready):
                    pass            # an APPLY is copying the region table: wait for all of it
                with m.Elif(clear_pending):
                    m.d.sync += [clear_pending.eq(0), clear_loading.eq(0), clear_active.eq(1)]
                    m.next = "CLEAR_LINES"
                with m.Elif(taken):
                    m.d.sync += decoding.eq(1)
                    m.next = "DECODE"

            with m.State("DECODE"):
                # The decoder needs its inputs steady for LATENCY clocks: count them again
                # whenever an APPLY copies the table meanwhile.
                with m.If(~table_ready):
                    m.d.sync += decode_wait.eq(0)
                with m.Elif(decode_wait == AddressDecoder.LATENCY):
                    m.d.sync += [decoding.eq(0), dispatching.eq(1)]
                    m.next = "DISPATCH"
                with m.Else():
                    m.d.sync += decode_wait.eq(decode_wait + 1)

            with m.State("DISPATCH"):
                m.d.sync += dispatching.eq(0)
                self._dispatch(m, route, events, reply_nxm, state_reading, line_reading,
                               line_writing, windowing, to_idle)

            with m.State("WINDOW"):
                # The word loop runs on the ``windowing`` flag (see above).
                with m.If(current.read & (captured == words)):
                    m.d.sync += windowing.eq(0)
                    m.next = "REPLY_DATA"
                with m.Elif(~current.read & ~more_words & ~window_pending):
                    m.d.sync += windowing.eq(0)
                    m.next = "REPLY_DONE"

            with m.State("LINE_READ"):
                with m.If(memory.read_data.valid):
                    m.d.sync += [line_reading.eq(0),
                                 reply_poison.eq(memory.read_data.payload.error)]
                    m.d.comb += events.mem_error.eq(memory.read_data.payload.error)
                    m.next = "REPLY_DATA"

            with m.State("LINE_WRITE"):
                with m.If(write_done):
                    m.d.sync += line_writing.eq(0)
                    m.d.comb += events.mem_error.eq(memory.write_error)
                    m.next = "REPLY_DONE"

            with m.State("STATE_READ"):
                with m.If(memory.read_data.valid):
                    m.d.sync += beats.eq(beats + 1)
                    with m.If(memory.read_data.payload.error):
                        m.d.sync += memory_error.eq(1)
                    with m.If(beats == p.state_lines - 1):
                        m.d.sync += state_reading.eq(0)
                        m.next = "COMPUTE"

            with m.State("COMPUTE"):
                with m.If(memory_error):
                    # The state is unknown: change nothing, answer with poisoned data.
                    m.d.comb += events.mem_error.eq(1)
                    m.d.sync += reply_poison.eq(1)
                    with m.If(current.read):
                        m.next = "REPLY_DATA"
                    with m.Else():
                        m.next = "REPLY_DONE"
                with m.Else():
                    m.d.comb += datapath.request.valid.eq(1)
                    m.d.sync += write_back_pending.eq(~current.read)
                    m.next = "RESULT"

            with m.State("RESULT"):
                with m.If(datapath.response.valid):
                    m.d.sync += write_back_pending.eq(0)
                    with m.If(current.read):
                        m.next = "REPLY_DATA"
                    with m.Elif(result.status.accepted):
                        m.d.sync += state_sending.eq(1)       # the write command is valid
                        m.next = "STATE_WRITE"
                    with m.Else():
                        m.next = "REPLY_DONE"

            with m.State("STATE_WRITE"):
                # Each group counts the lines it gives (_write_offers).
                with m.If(write_done):
                    m.d.sync += state_sending.eq(0)
                    m.d.comb += events.mem_error.eq(memory.write_error)
                    m.next = "REPLY_DONE"

            with m.State("REPLY_DATA"):
                m.d.comb += self.s2m_drs.valid.eq(1)
                with m.If(self.s2m_drs.ready):
                    m.d.comb += events.reads.eq(1)
                    to_idle()

            with m.State("REPLY_DONE"):
                m.d.comb += self.s2m_ndr.valid.eq(1)
                with m.If(self.s2m_ndr.ready):
                    m.d.comb += events.writes.eq(current.write)
                    to_idle()

            with m.State("CLEAR_LINES"):
                m.next = "CLEAR_SIZE"       # clear_wanted and clear_lines follow the descriptor

            with m.State("CLEAR_SIZE"):
                m.d.sync += clear_write_start.eq(clear_wanted)
                m.next = "CLEAR_START"      # the run registers load the clear's run

            with m.State("CLEAR_START"):
                m.d.sync += clear_write_start.eq(0)
                with m.If(clear_wanted):       # the write command is valid
                    m.next = "CLEAR_WRITE"
                with m.Else():
                    m.d.sync += clear_active.eq(0)
                    m.d.comb += control.clear_done.eq(1)
                    to_idle()

            with m.State("CLEAR_WRITE"):
                with m.If(write_done):
                    m.d.sync += clear_active.eq(0)
                    m.d.comb += [control.clear_done.eq(1),
                                 events.mem_error.eq(memory.write_error)]
                    to_idle()
        return m

    def _write_offers(self, m, memory, sending, writing):
        """Each group of columns offers the memory master its part of the lines of a write-back
        (``state_lines`` of them, while its copy of ``sending``) or of an identity write (one,
        while its copy of ``writing``), counting the lines taken itself, so that its valid and
        the enables that follow the handshake come from registers of its own. Returns, per
        group, whether it offers a line of the write-back (the state buffer shifts when it is
        taken).

        A group's count starts (at reset) as if every line had been given, and restarts from
        zero once both its copies are low: the copies have no reset (``register_copies``), so
        for a clock after a reset in the middle of a run they may still say that a run is on,
        and no line may be offered for it."""
        p = self._params.datapath
        sending_lines = []
        for g in range(p.control_copies):
            sent = Signal(range(p.state_lines + 1), init=p.state_lines, name=f"lines_sent_{g}")
            # sent != state_lines and sent == 0, registers beside the count rather than compares
            # of it, so that the state buffer's enable, which reads them, is one gate deep.
            unsent = Signal(name=f"lines_unsent_{g}")
            none_sent = Signal(name=f"lines_none_sent_{g}")
            sending_line = sending[g] & unsent
            m.d.comb += memory.write_valid[g].eq(sending_line | (writing[g] & none_sent))
            with m.If(~sending[g] & ~writing[g]):
                m.d.sync += [sent.eq(0), unsent.eq(1), none_sent.eq(1)]
            with m.Elif(memory.write_valid[g] & memory.write_ready[g]):
                m.d.sync += [sent.eq(sent + 1), unsent.eq(sent + 1 != p.state_lines),
                             none_sent.eq(0)]
            sending_lines.append(sending_line)
        return sending_lines

    def _state_buffer(self, m, memory, datapath, reading, sending_lines):
        """The accumulator state's memory image (``state_lines`` lines), kept as one register
        per group of columns; returns the image. A group shifts down by one line, the memory's
        read beat entering at the top, while ``reading`` and a beat is valid or when the memory
        master takes the line it offers of a write-back (``sending_lines``); it loads the
        datapath's result when the response is valid. Each group follows its own copy (bit) of
        ``reading``, of the read's valid, of the write handshake and of the response's valid."""
        p = self._params.datapath
        width = p.control_copy_bits
        groups = []
        for g in range(p.control_copies):
            group = Signal(p.state_lines * width, name=f"state_columns_{g}")
            columns = range(g * width, (g + 1) * width)
            incoming = memory.read_data.payload.data[g * width:][:width]
            with m.If((reading[g] & memory.read_valid_copies[g])
                      | (sending_lines[g] & memory.write_ready[g])):
                m.d.sync += group.eq(Cat(group[width:], incoming))
            with m.Elif(datapath.response_valid_copies[g]):
                m.d.sync += group.eq(planes_of_state(p, datapath.response.payload.state,
                                                     columns))
            groups.append(group)
        state = Signal(p.state_lines * p.line_bits)
        m.d.comb += state.eq(Cat(group[line * width:][:width]
                                 for line in range(p.state_lines) for group in groups))
        return state

    def _decision_inputs(self, m, inputs, current, decoded, memory, reading):
        """The datapath's decision inputs, one copy per group of columns, each a register by its
        group, so that each copy of the datapath's decisions is made from registers beside it:
        ``n`` from every line the group's state buffer takes while ``reading`` (the last line of
        a state read holds ``n``), the rest following the request's registers two clocks later,
        through a tree of registers of fan-out :data:`_DECISION_FANOUT` (the datapath reads them
        no sooner than a state read after they are set: DISPATCH, then at least the four clocks
        of a memory read)."""
        p = self._params.datapath
        beat = memory.read_data.payload.data
        beat_n = state_layout(p)(state_of_planes(
            p, Cat(Const(0, (p.state_lines - 1) * p.line_bits), beat))).n
        following = {name: register_copies(m, value, p.control_copies, f"decision_{name}_copy",
                                           fanout=_DECISION_FANOUT)
                     for name, value in (("mode", decoded.mode),
                                         ("threshold", decoded.threshold),
                                         ("contribute", current.write),
                                         ("full_line", current.full_line))}
        for g, copy in enumerate(inputs):
            with m.If(reading[g] & memory.read_valid_copies[g]):
                m.d.sync += copy.n.eq(beat_n)
            m.d.comb += [copy[name].eq(copies[g]) for name, copies in following.items()]

    def _ingress(self, m):
        """The ingress queues; returns the Req queue, the RwD queue and the RwD lines' queues.
        Their levels (the RwD queue's for RwDs) drive DevLoad.

        The Req and RwD queues keep each request as an entry (:func:`_entry_layout`, worked
        out by :meth:`_req_entry` and :meth:`_rwd_entry` on the way in). An RwD's line and the
        byte enables it writes (all of them for a MemWr) wait in one queue per group of columns
        (:func:`_columns`): every queue takes every RwD the host sends, and each line queue is
        popped by its group's own copy of the pop (:meth:`_load_line`), so that a queue's
        pointers and level sit beside the columns they address. The queues are alike, take and
        give up the same messages on the same clocks, and so always hold the same number. Each
        gives its head from a register (``SyncFIFOBuffered``), not from a read of its memory."""
        p = self._params.datapath
        depth = self._params.queue_depth
        req_queue = fifo.SyncFIFOBuffered(width=_entry_layout(self._params).size, depth=depth)
        m.submodules.req_queue = req_queue
        m.d.comb += [req_queue.w_data.eq(self._req_entry(m, self.m2s_req.payload)),
                     req_queue.w_en.eq(self.m2s_req.valid),
                     self.m2s_req.ready.eq(req_queue.w_rdy)]

        rwd = self.m2s_rwd.payload
        whole = rwd.opcode == RwDOpcode.MEM_WR      # writes the whole line whatever its mask
        rwd_queue = fifo.SyncFIFOBuffered(width=_entry_layout(self._params).size, depth=depth)
        m.submodules.rwd_queue = rwd_queue
        m.d.comb += [rwd_queue.w_data.eq(self._rwd_entry(m, rwd, whole)),
                     rwd_queue.w_en.eq(self.m2s_rwd.valid),
                     self.m2s_rwd.ready.eq(rwd_queue.w_rdy)]
        line_queues = []
        for g in range(p.control_copies):
            data_bits, strobe_bits = _columns(p, g)
            queue = fifo.SyncFIFOBuffered(width=p.control_copy_bits + p.control_copy_bits // 8,
                                          depth=depth)
            m.submodules[f"line_queue_{g}"] = queue
            m.d.comb += [queue.w_data.eq(Cat(rwd.data[data_bits],
                                             Mux(whole, -1, rwd.byte_enable[strobe_bits]))),
                         queue.w_en.eq(self.m2s_rwd.valid)]
            line_queues.append(queue)
        return req_queue, rwd_queue, line_queues

    @staticmethod
    def _window_word_groups(m, current, sub_bits, subs):
        """The first step of the window's word select: for each group ``g`` of ``2 ** sub_bits``
        words of the request's line, a register of word ``subs[g]`` of the group (its data, and
        whether all four of its byte enables are set), loaded every clock. Returns the two
        registers of every group as :class:`Array` s, indexed by group.

        Whether each word's byte enables are all set is registered a step ahead, beside the
        request's register (which holds the line and its byte enables from DECODE on, clocks
        before the word loop reads them), so that the select by ``subs[g]`` is all that stands
        in front of the group's register."""
        per_group = 1 << sub_bits
        data, whole = [], []
        for g, sub in enumerate(subs):
            bits, enables = current.data.word_select(g, 32 * per_group), \
                current.byte_enable.word_select(g, 4 * per_group)
            words_whole = Signal(per_group, name=f"window_group{g}_words_whole")
            data.append(Signal(32, name=f"window_group{g}_data"))
            whole.append(Signal(name=f"window_group{g}_whole"))
            m.d.sync += [words_whole.eq(Cat(enables.word_select(k, 4).all()
                                            for k in range(per_group))),
                         data[-1].eq(bits.word_select(sub, 32)),
                         whole[-1].eq(words_whole.bit_select(sub, 1))]
        return Array(data), Array(whole)

    def _req_entry(self, m, req):
        """The entry (:func:`_entry_layout`) of the M2S Req ``req``, for its ingress queue."""
        entry = Signal(_entry_layout(self._params))
        # A chain of Muxes rather than a Switch: a Switch becomes an ``always @*`` block, which
        # Icarus Verilog runs only once an input it reads changes, and the queue could take an
        # entry it had never worked out.
        operation = Operation.UNSUPPORTED
        for opcode, meaning in _REQ_OPERATIONS.items():
            operation = Mux(req.opcode == opcode, meaning, operation)
        m.d.comb += [entry.operation.eq(operation),
                     entry.read.eq(operation == Operation.READ),
                     entry.tag.eq(req.tag), entry.ld_id.eq(req.ld_id)]
        self._entry_address(m, entry, req.address[1:])   # Req addresses count half lines
        return entry

    def _rwd_entry(self, m, rwd, whole):
        """The entry (:func:`_entry_layout`) of the M2S RwD ``rwd``, for its ingress queue
        (``whole``: it is a MemWr)."""
        entry = Signal(_entry_layout(self._params))
        supported = whole | (rwd.opcode == RwDOpcode.MEM_WR_PTL)
        m.d.comb += [
            entry.operation.eq(Mux(supported, Operation.WRITE, Operation.UNSUPPORTED)),
            entry.write.eq(supported),
            entry.tag.eq(rwd.tag),
            entry.ld_id.eq(rwd.ld_id),
            entry.poison.eq(rwd.poison),
            entry.full_line.eq(whole | rwd.byte_enable.all()),
        ]
        self._entry_address(m, entry, rwd.address)
        return entry

    def _entry_address(self, m, entry, line):
        """Set ``entry``'s address from ``line``, a host address that counts lines: CXL's 64-byte
        lines at line_bits = 512, and lines of line_bytes in the scaled-down configurations."""
        offset_bits = self._params.datapath.line_bytes.bit_length() - 1
        line_bits = self._params.address_bits - offset_bits
        m.d.comb += [entry.address.eq(Cat(Const(0, offset_bits), line[:line_bits])),
                     entry.out_of_range.eq(line[line_bits:] != 0)]

    def _accept(self, m, params, req_queue, rwd_queue, current, pop_req, rwd_taken, taken,
                allowed):
        """In IDLE: load the next host request's entry into ``current`` (every clock, whether or
        not one is waiting or may be taken; the line itself follows in :meth:`_load_line`),
        alternating between the channels when both have one waiting, and, if one was and
        ``allowed`` (the region table is ready and no clear is pending), drive ``taken`` (IDLE
        leaves on it). ``current``'s enable is thus the ``idle`` flip-flop alone. The queue
        gives up the request later (``pop_req``, or ``rwd_taken`` and then ``pop_rwd``:
        registers), so that no path runs from the engine's decisions into the queues."""
        prefer_rwd = Signal()
        take_rwd = rwd_queue.r_rdy & (prefer_rwd | ~req_queue.r_rdy)
        take_req = req_queue.r_rdy & ~take_rwd
        entry = _entry_layout(params)(Mux(take_rwd, rwd_queue.r_data, req_queue.r_data))
        m.d.sync += [current[name].eq(entry[name]) for name in _ENTRY_FIELDS]
        m.d.comb += taken.eq((take_req | take_rwd) & allowed)
        with m.If(allowed & take_req):
            m.d.sync += [pop_req.eq(1), prefer_rwd.eq(1)]
        with m.Elif(allowed & take_rwd):
            m.d.sync += [rwd_taken.eq(1), prefer_rwd.eq(0)]

    def _load_line(self, m, line_queues, current, pop_copies):
        """Load the line and byte enables of an RwD into ``current`` on the clock its queues give
        it up (in DECODE, which does not read them), each group of columns from its own queue on
        its own copy of the pop (``pop_copies``), so no decode of the engine's state reaches
        the line. A Req carries no data and leaves them as they were; they are not read for
        it."""
        p = self._params.datapath
        for g, queue in enumerate(line_queues):
            data_bits, strobe_bits = _columns(p, g)
            m.d.comb += queue.r_en.eq(pop_copies[g])
            with m.If(pop_copies[g]):
                m.d.sync += [current.data[data_bits].eq(queue.r_data[:p.control_copy_bits]),
                             current.byte_enable[strobe_bits].eq(
                                 queue.r_data[p.control_copy_bits:])]

    @staticmethod
    def _route(current, decoded):
        """Where DISPATCH will send the request being decoded (``decoded`` is the decoder's
        output): the first route in order whose condition holds. A chain of Muxes, like the
        Req entry's operation (see ``_req_entry``)."""
        operation = current.operation
        choices = [
            (operation == Operation.SPECULATIVE, _Route.IGNORE),
            (operation == Operation.UNSUPPORTED, _Route.BAD_OPCODE),
            (operation == Operation.INVALIDATE, _Route.NO_ACCESS),
            (current.out_of_range & current.read, _Route.BAD_READ),
            (current.out_of_range, _Route.BAD_WRITE),
            (current.poison, _Route.POISONED),
            (decoded.window, _Route.WINDOW),
            (aggregates(decoded.mode), _Route.STATE),
            (current.read, _Route.LINE_READ),
        ]
        chosen = _Route.LINE_WRITE
        for condition, route in reversed(choices):
            chosen = Mux(condition, route, chosen)
        return chosen

    @staticmethod
    def _dispatch(m, route, events, reply_nxm, state_reading, line_reading, line_writing,
                  windowing, to_idle):
        """Start the path ``route`` chose for the request just decoded. The memory master is
        idle here (every earlier command has finished), so its command register is empty and
        takes the command (``run_address``, ``run_lines``, set in DECODE) at once."""
        with m.Switch(route):
            with m.Case(_Route.IGNORE):
                to_idle()
            with m.Case(_Route.BAD_OPCODE):
                m.d.comb += events.bad_opcode.eq(1)
                m.next = "REPLY_DONE"
            with m.Case(_Route.NO_ACCESS):
                m.next = "REPLY_DONE"
            with m.Case(_Route.BAD_READ):
                m.d.comb += events.bad_address.eq(1)
                m.d.sync += reply_nxm.eq(1)     # with the zero data loaded in IDLE
                m.next = "REPLY_DATA"
            with m.Case(_Route.BAD_WRITE):
                m.d.comb += events.bad_address.eq(1)
                m.next = "REPLY_DONE"
            with m.Case(_Route.POISONED):
                m.d.comb += events.poison.eq(1)
                m.next = "REPLY_DONE"
            with m.Case(_Route.WINDOW):
                m.d.sync += windowing.eq(1)
                m.next = "WINDOW"
            # The memory paths (their command is valid on dispatch_read or dispatch_write): the
            # flag of the run, the state that waits on it.
            for path, flag, state in ((_Route.STATE, state_reading, "STATE_READ"),
                                      (_Route.LINE_READ, line_reading, "LINE_READ"),
                                      (_Route.LINE_WRITE, line_writing, "LINE_WRITE")):
                with m.Case(path):
                    m.d.sync += flag.eq(1)
                    m.next = state

    @staticmethod
    def _count_result(m, result, events):
        """Events of a contribution's datapath result."""
        status = result.status
        m.d.comb += [
            events.accepted.eq(status.accepted),
            events.rejected.eq(~status.accepted),
            events.capacity.eq(status.reason == Reason.CAPACITY),
            events.partial.eq(status.reason == Reason.PARTIAL),
            events.invalid_code.eq(status.invalid),
            events.invalid_lines.eq(status.invalid),
        ]
