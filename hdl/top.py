"""The generated tops, as IP blocks with the port names that vendor tools infer interfaces
from (``docs/controller.md``, "Ports"): ``nf_controller`` (CXL.mem channels) and
``nf_axi_reducer`` (an AXI4 subordinate instead)."""

from amaranth import ClockDomain, ClockSignal, Module, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from spec.params import REGISTER_BITS, ControllerParams

from .axi import axi4_signature
from .axi_front import AxiToCxl
from .axil import AxiLiteRegisters, axi4_lite_signature
from .controller import CxlMemController

__all__ = ["ControllerTop", "ReducerTop", "PORT_INTERFACES"]

#: The interface each port of :class:`ControllerTop` implements, and how its signals are named
#: in the generated Verilog: ``prefix`` + the member's name (the CXL.mem channels keep
#: Amaranth's ``<channel>__valid``, ``__ready`` and ``__payload``).
PORT_INTERFACES = {
    "aclk": ("clock of every port (AXI ACLK)", "aclk"),
    "aresetn": ("reset, active low, synchronous to aclk (AXI ARESETn)", "aresetn"),
    "m2s_req": ("CXL.mem M2S Req channel, valid/ready (ready stands in for credits)",
                "m2s_req__"),
    "m2s_rwd": ("CXL.mem M2S RwD channel, valid/ready", "m2s_rwd__"),
    "s2m_ndr": ("CXL.mem S2M NDR channel, valid/ready", "s2m_ndr__"),
    "s2m_drs": ("CXL.mem S2M DRS channel, valid/ready", "s2m_drs__"),
    "m_axi": ("AXI4 manager: device memory, a line per beat, INCR bursts with IDs", "m_axi_"),
    "s_axi": ("AXI4 subordinate: the host's reads and writes, a line per beat, INCR bursts "
              "with IDs", "s_axi_"),
    "s_axil": (f"AXI4-Lite subordinate, {REGISTER_BITS}-bit: the control registers (SLVERR "
               f"for refused accesses)", "s_axil_"),
}


class _Top(wiring.Component):
    """What the tops share: the controller (``core``), the ``sync`` domain from ``aclk`` and
    ``aresetn``, its registers on ``s_axil`` and device memory on ``m_axi``; ``host`` gives the
    host-side members from the core."""

    def __init__(self, params, primitives, host):
        self.core = CxlMemController(params, primitives=primitives)
        window_bits = (params.window_bytes - 1).bit_length()
        super().__init__({
            "aclk": In(1), "aresetn": In(1), **host(self.core),
            "m_axi": self.core.signature.members["axi"],
            "s_axil": In(axi4_lite_signature(address_bits=window_bits)),
        })

    @property
    def params(self):
        return self.core.params

    @property
    def regmap(self):
        return self.core.regmap

    def _clocked_core(self, m):
        """The domain, the core, its registers and device memory port; returns the core."""
        m.domains.sync = ClockDomain("sync")
        m.d.comb += [ClockSignal("sync").eq(self.aclk), ResetSignal("sync").eq(~self.aresetn)]
        m.submodules.core = core = self.core
        m.submodules.registers = registers = AxiLiteRegisters(
            core.regmap, address_bits=len(self.s_axil.awaddr))
        wiring.connect(m, wiring.flipped(self.s_axil), registers.s_axil)
        wiring.connect(m, registers.bus, core.csr)
        m.d.comb += registers.locked_write.eq(core.csr_refused)
        wiring.connect(m, core.axi, wiring.flipped(self.m_axi))
        return core


#: The CXL.mem channels, host side first.
_CHANNELS = ("m2s_req", "m2s_rwd", "s2m_ndr", "s2m_drs")


class ControllerTop(_Top):
    """The CXL.mem controller (:class:`hdl.controller.CxlMemController`) with its control
    registers on AXI4-Lite (:class:`hdl.axil.AxiLiteRegisters`), clocked by ``aclk`` and reset
    by ``aresetn`` (low: reset), as :mod:`hdl.generate` writes it: ``nf_controller``.

    Parameters
    ----------
    params : ControllerParams
    primitives : None or "ecp5"
        As :class:`hdl.controller.CxlMemController`'s.

    Members
    -------
    Those of :data:`PORT_INTERFACES` but ``s_axi``.
    """

    def __init__(self, params=ControllerParams(), *, primitives=None):
        super().__init__(params, primitives, lambda core: {
            name: core.signature.members[name] for name in _CHANNELS})

    def elaborate(self, platform):
        m = Module()
        core = self._clocked_core(m)
        for name in _CHANNELS[:2]:
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(core, name))
        for name in _CHANNELS[2:]:
            wiring.connect(m, getattr(core, name), wiring.flipped(getattr(self, name)))
        return m


class ReducerTop(_Top):
    """The controller behind an AXI4 subordinate port (:class:`hdl.axi_front.AxiToCxl`)
    instead of CXL.mem channels, with the same registers, device memory port, clock and reset
    as :class:`ControllerTop`: ``nf_axi_reducer``.

    Parameters
    ----------
    params : ControllerParams
        ``axi_id_bits`` is the width of the IDs of both AXI4 ports.
    primitives : None or "ecp5"

    Members
    -------
    Those of :data:`PORT_INTERFACES` but the CXL.mem channels.
    """

    def __init__(self, params=ControllerParams(), *, primitives=None):
        super().__init__(params, primitives, lambda core: {
            "s_axi": In(axi4_signature(address_bits=params.address_bits,
                                       data_bits=params.datapath.line_bits,
                                       id_bits=params.axi_id_bits))})

    def elaborate(self, platform):
        m = Module()
        core = self._clocked_core(m)
        m.submodules.front = front = AxiToCxl(self.params, id_bits=self.params.axi_id_bits)
        wiring.connect(m, wiring.flipped(self.s_axi), front.s_axi)
        for name in _CHANNELS[:2]:
            wiring.connect(m, getattr(front, name), getattr(core, name))
        for name in _CHANNELS[2:]:
            wiring.connect(m, getattr(core, name), getattr(front, name))
        return m
