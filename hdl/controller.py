"""The NEURON-Fabric CXL.mem controller: host channels in, device memory (AXI4) out.

One request is served at a time, start to finish, by the engine below; that is how every
contribution to a line is counted exactly once (``docs/controller.md``, "Hazards").
"""

from amaranth import C, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .arith import times_constant
from .axi import AxiLineMaster, axi4_signature
from .control import ControlRegisters
from .csr import csr_bus_signature
from .cxl import (DevLoad, DRSOpcode, MetaField, NDROpcode, ReqOpcode,
                  RwDOpcode, m2s_req_layout, m2s_rwd_layout, s2m_drs_layout, s2m_ndr_layout)
from .datapath import AggregationDatapath
from .decode import AddressDecoder
from .params import ControllerParams, Mode, Reason

__all__ = ["Operation", "CxlMemController"]


class Operation(enum.Enum, shape=3):
    """What the engine does with a host request (``docs/controller.md``, "Opcodes")."""
    READ = 0          # MemRd, MemRdData: one DRS MemData
    WRITE = 1         # MemWr, MemWrPtl: one NDR Cmp
    INVALIDATE = 2    # MemInv, MemInvNT: one NDR Cmp, no memory access
    SPECULATIVE = 3   # MemSpecRd: a hint; no access, no response
    UNSUPPORTED = 4   # any other opcode: one NDR Cmp, no effect, STATUS.BAD_OPCODE


def _request_layout(params):
    """The request the engine is serving."""
    p = params.datapath
    return data.StructLayout({
        "operation": Operation,
        "tag": 16,
        "ld_id": 4,
        "address": unsigned(params.address_bits),  # first byte of the line
        "out_of_range": 1,                         # the host address is beyond address_bits
        "poison": 1,
        "byte_enable": unsigned(p.line_bytes),
        "data": unsigned(p.line_bits),
    })


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
            id_bits=params.axi_id_bits)
        m.submodules.datapath = datapath = AggregationDatapath(p, user_width=1)
        wiring.connect(m, memory.axi, wiring.flipped(self.axi))

        req_queue, rwd_queue = self._ingress(m)
        current = Signal(_request_layout(params))
        m.d.comb += [decoder.address.eq(current.address), decoder.enable.eq(control.enable),
                     decoder.regions.eq(control.regions)]
        # The decoded address, registered once per request (state DECODE): the path and state
        # address stay those of the table when the request began.
        decoded = Signal.like(decoder.decoded)
        events = control.events

        # Register window: the engine shares the control registers' bus with the csr port.
        csr_read, csr_write = Signal(), Signal()
        csr_addr = Signal.like(self.csr.addr)
        csr_wdata = Signal(32)
        external = self.csr.r_stb | self.csr.w_stb
        m.d.comb += [
            control.bus.addr.eq(Mux(external, self.csr.addr, csr_addr)),
            control.bus.r_stb.eq(self.csr.r_stb | (csr_read & ~external)),
            control.bus.w_stb.eq(self.csr.w_stb | (csr_write & ~external)),
            control.bus.w_data.eq(Mux(external, self.csr.w_data, csr_wdata)),
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

        # Accumulator state of the line being served: read from memory beat by beat into the
        # top, written back from the bottom; both shift down by one line.
        state = Signal(p.state_lines * p.line_bits)
        shift_state = Signal()
        with m.If(shift_state):
            m.d.sync += state.eq(Cat(state[p.line_bits:], memory.read_data.payload.data))
        beats = Signal(range(p.state_lines + 1))
        memory_error = Signal()
        m.d.comb += [
            datapath.request.payload.data.eq(current.data),
            datapath.request.payload.byte_enable.eq(current.byte_enable),
            datapath.request.payload.state.eq(state[:p.state_bits]),
            datapath.request.payload.threshold.eq(decoded.threshold),
            datapath.request.payload.mode.eq(decoded.mode),
            datapath.request.payload.contribute.eq(current.operation == Operation.WRITE),
            datapath.response.ready.eq(1),
        ]
        result = datapath.response.payload

        # Clear engine requests, served between host requests.
        clear_pending = Signal()
        clear_region = Signal.like(control.clear_region)
        clear_active = Signal()
        m.d.comb += control.clear_busy.eq(clear_pending | clear_active)
        with m.If(control.clear_start):
            m.d.sync += [clear_pending.eq(1), clear_region.eq(control.clear_region)]

        # Register window word loop: one 32-bit register per word of the line.
        words = p.line_bytes // 4
        issued = Signal(range(words + 1))
        captured = Signal(range(words + 1))
        capture = Signal()
        word = issued[:max(1, (words - 1).bit_length())] if words > 1 else C(0)
        window_offset = current.address[:params.window_bytes.bit_length() - 1]
        word_enabled = current.byte_enable.word_select(word, 4).all()

        with m.FSM(name="engine"):
            with m.State("START"):
                # One cycle after reset, so that the state register changes once: Icarus
                # Verilog evaluates an ``always @*`` block only when something it reads changes,
                # and outputs decoded from the state alone would read X until then.
                m.next = "IDLE"

            with m.State("IDLE"):
                m.d.sync += [memory_error.eq(0), beats.eq(0), issued.eq(0), captured.eq(0),
                             reply_poison.eq(0), reply_nxm.eq(0)]
                with m.If(clear_pending):
                    m.d.sync += [clear_pending.eq(0), clear_active.eq(1)]
                    m.next = "CLEAR"
                with m.Else():
                    self._accept(m, params, req_queue, rwd_queue, current)

            with m.State("DECODE"):
                m.d.sync += decoded.eq(decoder.decoded)
                m.next = "DISPATCH"

            with m.State("DISPATCH"):
                self._dispatch(m, current, decoded, memory, events, reply_nxm, reply_data)

            with m.State("WINDOW"):
                reading = current.operation == Operation.READ
                more = issued != words
                go = more & ~external
                with m.If(reading):
                    m.d.comb += csr_read.eq(go)
                with m.Else():
                    m.d.comb += csr_write.eq(go & word_enabled)
                m.d.comb += [csr_addr.eq((window_offset >> 2) + issued),
                             csr_wdata.eq(current.data.word_select(word, 32))]
                with m.If(go):
                    m.d.sync += issued.eq(issued + 1)
                m.d.sync += capture.eq(go & reading)
                with m.If(capture):
                    m.d.sync += [reply_data.eq(Cat(reply_data[32:], control.bus.r_data)),
                                 captured.eq(captured + 1)]
                with m.If(reading & (captured == words)):
                    m.next = "REPLY_DATA"
                with m.Elif(~reading & ~more):
                    m.next = "REPLY_DONE"

            with m.State("LINE_READ"):
                m.d.comb += memory.read_data.ready.eq(1)
                with m.If(memory.read_data.valid):
                    m.d.sync += [reply_data.eq(memory.read_data.payload.data),
                                 reply_poison.eq(memory.read_data.payload.error)]
                    m.d.comb += events.mem_error.eq(memory.read_data.payload.error)
                    m.next = "REPLY_DATA"

            with m.State("LINE_WRITE"):
                m.d.comb += [memory.write_data.valid.eq(1),
                             memory.write_data.payload.data.eq(current.data),
                             memory.write_data.payload.strobe.eq(current.byte_enable)]
                with m.If(memory.write_done):
                    m.d.comb += events.mem_error.eq(memory.write_error)
                    m.next = "REPLY_DONE"

            with m.State("STATE_READ"):
                m.d.comb += [memory.read_data.ready.eq(1),
                             shift_state.eq(memory.read_data.valid)]
                with m.If(memory.read_data.valid):
                    m.d.sync += beats.eq(beats + 1)
                    with m.If(memory.read_data.payload.error):
                        m.d.sync += memory_error.eq(1)
                    with m.If(beats == p.state_lines - 1):
                        m.next = "COMPUTE"

            with m.State("COMPUTE"):
                with m.If(memory_error):
                    # The state is unknown: change nothing, answer with poisoned data.
                    m.d.comb += events.mem_error.eq(1)
                    m.d.sync += reply_poison.eq(1)
                    with m.If(current.operation == Operation.READ):
                        m.next = "REPLY_DATA"
                    with m.Else():
                        m.next = "REPLY_DONE"
                with m.Else():
                    m.d.comb += datapath.request.valid.eq(1)
                    m.next = "RESULT"

            with m.State("RESULT"):
                with m.If(datapath.response.valid):
                    self._count_result(m, current, result, events)
                    m.d.sync += [reply_data.eq(result.line), state.eq(result.state),
                                 beats.eq(0)]
                    with m.If(current.operation == Operation.READ):
                        m.next = "REPLY_DATA"
                    with m.Elif(result.status.accepted):
                        m.d.comb += [memory.write_command.valid.eq(1),
                                     memory.write_command.payload.address.eq(
                                         decoded.state_address),
                                     memory.write_command.payload.beats.eq(p.state_lines)]
                        m.next = "STATE_WRITE"
                    with m.Else():
                        m.next = "REPLY_DONE"

            with m.State("STATE_WRITE"):
                m.d.comb += [memory.write_data.valid.eq(beats != p.state_lines),
                             memory.write_data.payload.data.eq(state[:p.line_bits]),
                             memory.write_data.payload.strobe.eq(-1)]
                with m.If(memory.write_data.valid & memory.write_data.ready):
                    m.d.comb += shift_state.eq(1)
                    m.d.sync += beats.eq(beats + 1)
                with m.If(memory.write_done):
                    m.d.comb += events.mem_error.eq(memory.write_error)
                    m.next = "REPLY_DONE"

            with m.State("REPLY_DATA"):
                m.d.comb += self.s2m_drs.valid.eq(1)
                with m.If(self.s2m_drs.ready):
                    m.d.comb += events.reads.eq(1)
                    m.next = "IDLE"

            with m.State("REPLY_DONE"):
                m.d.comb += self.s2m_ndr.valid.eq(1)
                with m.If(self.s2m_ndr.ready):
                    m.d.comb += events.writes.eq(current.operation == Operation.WRITE)
                    m.next = "IDLE"

            with m.State("CLEAR"):
                region = control.regions[clear_region[:len(decoded.region)]]
                lines = (region.end - region.base)[p.line_bytes.bit_length() - 1:]
                aggregating = (region.mode == Mode.GBINARY) | (region.mode == Mode.GTERNARY)
                with m.If((clear_region < params.regions) & region.enable & aggregating):
                    m.d.comb += [memory.write_command.valid.eq(1),
                                 memory.write_command.payload.address.eq(region.acc),
                                 memory.write_command.payload.beats.eq(
                                     times_constant(lines, p.state_lines))]
                    m.next = "CLEAR_WRITE"
                with m.Else():
                    m.d.sync += clear_active.eq(0)
                    m.d.comb += control.clear_done.eq(1)
                    m.next = "IDLE"

            with m.State("CLEAR_WRITE"):
                m.d.comb += [memory.write_data.valid.eq(1),
                             memory.write_data.payload.strobe.eq(-1)]
                with m.If(memory.write_done):
                    m.d.sync += clear_active.eq(0)
                    m.d.comb += [control.clear_done.eq(1),
                                 events.mem_error.eq(memory.write_error)]
                    m.next = "IDLE"
        return m

    def _ingress(self, m):
        """The two ingress queues; their levels drive DevLoad."""
        depth = self._params.queue_depth
        queues = []
        for name, channel in (("req_queue", self.m2s_req), ("rwd_queue", self.m2s_rwd)):
            queue = fifo.SyncFIFOBuffered(width=channel.payload.shape().size, depth=depth)
            m.submodules[name] = queue
            m.d.comb += [queue.w_data.eq(channel.payload), queue.w_en.eq(channel.valid),
                         channel.ready.eq(queue.w_rdy)]
            queues.append(queue)
        return queues

    def _accept(self, m, params, req_queue, rwd_queue, current):
        """Take the next host request into ``current``, alternating between the channels when
        both have one waiting."""
        p = params.datapath
        req = m2s_req_layout()(req_queue.r_data)
        rwd = m2s_rwd_layout(p.line_bits)(rwd_queue.r_data)
        prefer_rwd = Signal()
        take_rwd = rwd_queue.r_rdy & (prefer_rwd | ~req_queue.r_rdy)
        take_req = req_queue.r_rdy & ~take_rwd
        # The Address fields count lines: CXL's 64-byte lines at line_bits = 512, and lines of
        # line_bytes in the scaled-down configurations.
        offset_bits = p.line_bytes.bit_length() - 1
        line_bits = params.address_bits - offset_bits

        with m.If(take_req):
            line = req.address[1:]   # Req addresses count half lines (bits [51:5])
            operation = Signal(Operation)
            with m.Switch(req.opcode):
                with m.Case(ReqOpcode.MEM_RD, ReqOpcode.MEM_RD_DATA):
                    m.d.comb += operation.eq(Operation.READ)
                with m.Case(ReqOpcode.MEM_INV, ReqOpcode.MEM_INV_NT):
                    m.d.comb += operation.eq(Operation.INVALIDATE)
                with m.Case(ReqOpcode.MEM_SPEC_RD):
                    m.d.comb += operation.eq(Operation.SPECULATIVE)
                with m.Default():
                    m.d.comb += operation.eq(Operation.UNSUPPORTED)
            m.d.comb += req_queue.r_en.eq(1)
            m.d.sync += [
                current.operation.eq(operation),
                current.tag.eq(req.tag),
                current.ld_id.eq(req.ld_id),
                current.address.eq(Cat(Const(0, offset_bits), line[:line_bits])),
                current.out_of_range.eq(line[line_bits:] != 0),
                current.poison.eq(0),
                prefer_rwd.eq(1),
            ]
            m.next = "DECODE"
        with m.Elif(take_rwd):
            supported = (rwd.opcode == RwDOpcode.MEM_WR) | (rwd.opcode == RwDOpcode.MEM_WR_PTL)
            m.d.comb += rwd_queue.r_en.eq(1)
            m.d.sync += [
                current.operation.eq(Mux(supported, Operation.WRITE, Operation.UNSUPPORTED)),
                current.tag.eq(rwd.tag),
                current.ld_id.eq(rwd.ld_id),
                current.address.eq(Cat(Const(0, offset_bits), rwd.address[:line_bits])),
                current.out_of_range.eq(rwd.address[line_bits:] != 0),
                current.poison.eq(rwd.poison),
                # MemWr writes the whole line whatever the mask says.
                current.byte_enable.eq(Mux(rwd.opcode == RwDOpcode.MEM_WR, -1,
                                           rwd.byte_enable)),
                current.data.eq(rwd.data),
                prefer_rwd.eq(0),
            ]
            m.next = "DECODE"

    def _dispatch(self, m, current, decoded, memory, events, reply_nxm, reply_data):
        """Choose the path of the request just accepted, and start it. The memory master is idle
        here (every earlier command has finished), so a command is taken at once."""
        p = self._params.datapath
        operation = current.operation
        reading = operation == Operation.READ
        aggregating = (decoded.mode == Mode.GBINARY) | (decoded.mode == Mode.GTERNARY)
        with m.If(operation == Operation.SPECULATIVE):
            m.next = "IDLE"
        with m.Elif(operation == Operation.UNSUPPORTED):
            m.d.comb += events.bad_opcode.eq(1)
            m.next = "REPLY_DONE"
        with m.Elif(operation == Operation.INVALIDATE):
            m.next = "REPLY_DONE"
        with m.Elif(current.out_of_range):
            m.d.comb += events.bad_address.eq(1)
            with m.If(reading):
                m.d.sync += [reply_nxm.eq(1), reply_data.eq(0)]
                m.next = "REPLY_DATA"
            with m.Else():
                m.next = "REPLY_DONE"
        with m.Elif(current.poison):
            m.d.comb += events.poison.eq(1)
            m.next = "REPLY_DONE"
        with m.Elif(decoded.window):
            m.next = "WINDOW"
        with m.Elif(aggregating):
            m.d.comb += [memory.read_command.valid.eq(1),
                         memory.read_command.payload.address.eq(decoded.state_address),
                         memory.read_command.payload.beats.eq(p.state_lines)]
            m.next = "STATE_READ"
        with m.Elif(reading):
            m.d.comb += [memory.read_command.valid.eq(1),
                         memory.read_command.payload.address.eq(current.address),
                         memory.read_command.payload.beats.eq(1)]
            m.next = "LINE_READ"
        with m.Else():
            m.d.comb += [memory.write_command.valid.eq(1),
                         memory.write_command.payload.address.eq(current.address),
                         memory.write_command.payload.beats.eq(1)]
            m.next = "LINE_WRITE"

    @staticmethod
    def _count_result(m, current, result, events):
        """Events of a contribution's datapath result."""
        with m.If(current.operation == Operation.WRITE):
            status = result.status
            m.d.comb += [
                events.accepted.eq(status.accepted),
                events.rejected.eq(~status.accepted),
                events.capacity.eq(status.reason == Reason.CAPACITY),
                events.partial.eq(status.reason == Reason.PARTIAL),
                events.invalid_code.eq(status.invalid),
                events.invalid_lines.eq(status.invalid),
            ]
