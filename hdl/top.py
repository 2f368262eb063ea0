"""The generated controller as an IP block: ``nf_controller`` with the port names that vendor
tools infer interfaces from (``docs/controller.md``, "Ports")."""

from amaranth import ClockDomain, ClockSignal, Module, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from spec.params import ControllerParams

from .axil import AxiLiteRegisters, axi4_lite_signature
from .controller import CxlMemController

__all__ = ["ControllerTop", "PORT_INTERFACES"]

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
    "s_axil": ("AXI4-Lite subordinate, 32-bit: the control registers (SLVERR for refused "
               "accesses)", "s_axil_"),
}


class ControllerTop(wiring.Component):
    """The CXL.mem controller (:class:`hdl.controller.CxlMemController`) with its control
    registers on AXI4-Lite (:class:`hdl.axil.AxiLiteRegisters`), clocked by ``aclk`` and reset
    by ``aresetn`` (low: reset), as :mod:`hdl.generate` writes it.

    Parameters
    ----------
    params : ControllerParams
    primitives : None or "ecp5"
        As :class:`hdl.controller.CxlMemController`'s.

    Members
    -------
    Those of :data:`PORT_INTERFACES`.
    """

    def __init__(self, params=ControllerParams(), *, primitives=None):
        self.core = CxlMemController(params, primitives=primitives)
        members = {name: member for name, member in self.core.signature.members.items()
                   if name in ("m2s_req", "m2s_rwd", "s2m_ndr", "s2m_drs")}
        self._window_bits = (params.window_bytes - 1).bit_length()
        super().__init__({
            "aclk": In(1), "aresetn": In(1), **members,
            "m_axi": self.core.signature.members["axi"],
            "s_axil": In(axi4_lite_signature(address_bits=self._window_bits)),
        })

    @property
    def params(self):
        return self.core.params

    @property
    def regmap(self):
        return self.core.regmap

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain("sync")
        m.d.comb += [ClockSignal("sync").eq(self.aclk), ResetSignal("sync").eq(~self.aresetn)]
        m.submodules.core = core = self.core
        m.submodules.registers = registers = AxiLiteRegisters(
            core.regmap, address_bits=self._window_bits)
        wiring.connect(m, wiring.flipped(self.s_axil), registers.s_axil)
        wiring.connect(m, registers.bus, core.csr)
        m.d.comb += registers.locked_write.eq(core.csr_refused)
        for name in ("m2s_req", "m2s_rwd"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(core, name))
        for name in ("s2m_ndr", "s2m_drs"):
            wiring.connect(m, getattr(core, name), wiring.flipped(getattr(self, name)))
        wiring.connect(m, core.axi, wiring.flipped(self.m_axi))
        return m
