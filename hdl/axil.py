"""The control registers on AXI4-Lite: a subordinate port in front of the register bus of
:mod:`hdl.csr` (``docs/controller.md``, "Register window and CSR port")."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out

from spec.params import REGISTER_BITS
from spec.regmap import REGISTER_BYTES, Access

from .axi import RESP_OKAY, RESP_SLVERR
from .csr import READ_LATENCY, WRITE_LATENCY, csr_bus_signature

__all__ = ["axi4_lite_signature", "AxiLiteRegisters"]


def axi4_lite_signature(*, address_bits, data_bits=REGISTER_BITS):
    """An AXI4-Lite interface from the manager's side (``awvalid`` is an output). Members are
    named after the AXI signals without their prefix, so that a port named ``s_axil`` becomes
    ``s_axil_awvalid`` and so on in a generated top."""
    return wiring.Signature({
        "awvalid": Out(1), "awready": In(1), "awaddr": Out(address_bits), "awprot": Out(3),
        "wvalid": Out(1), "wready": In(1), "wdata": Out(data_bits),
        "wstrb": Out(data_bits // 8),
        "bvalid": In(1), "bready": Out(1), "bresp": In(2),
        "arvalid": Out(1), "arready": In(1), "araddr": Out(address_bits), "arprot": Out(3),
        "rvalid": In(1), "rready": Out(1), "rdata": In(data_bits), "rresp": In(2),
    })


class _Step(enum.Enum, shape=3):
    IDLE = 0
    READ = 1          # the register block reads (READ_LATENCY clocks)
    WRITE = 2         # the register block writes (WRITE_LATENCY clocks)
    R = 3             # R offered
    B = 4             # B offered


class AxiLiteRegisters(wiring.Component):
    """An AXI4-Lite subordinate for the control registers: one access at a time, in the order
    they arrive (a read first when both wait). ``RVALID`` rises ``READ_LATENCY + 1`` clock
    edges after the one that takes AR, ``BVALID`` ``WRITE_LATENCY + 1`` after the one that
    takes AW and W (together: each waits for the other). A read's data is taken from the bus
    into a register as it arrives, so that ``RDATA`` holds while ``RVALID`` waits for ``RREADY``
    whatever the register bus's other initiator (the CXL.mem window) reads meanwhile.

    The port answers SLVERR, and leaves every register alone, for the accesses the register map
    refuses:

    - a read or write of an address where the map has no register (the read's data is 0);
    - a write to a register with no writable field;
    - a write whose ``WSTRB`` is not all ones (a register is written whole);
    - a write to a lockable register while ``CTRL.LOCK`` is set or an APPLY checks the table
      (``locked_write``, which also sets ``STATUS.LOCKED_WRITE``).

    ``AxPROT`` is ignored. Addresses are bytes from the start of the register window; the low
    two bits are ignored.

    Parameters
    ----------
    regmap : spec.regmap.RegisterMap
    address_bits : int
        Width of ``awaddr`` and ``araddr``: the window's bytes.

    Members
    -------
    s_axil : In(axi4_lite_signature(address_bits=address_bits))
    bus : Out(csr_bus_signature(address_bits - 2))
        To the register block (:class:`hdl.control.ControlRegisters`).
    locked_write : In(1)
        The register block refused a write, ``WRITE_LATENCY`` clocks after its strobe.
    """

    def __init__(self, regmap, *, address_bits):
        self._regmap = regmap
        super().__init__({
            "s_axil": In(axi4_lite_signature(address_bits=address_bits)),
            "bus": Out(csr_bus_signature(address_bits - 2)),
            "locked_write": In(1),
        })

    def _decode(self, word):
        """Whether word address ``word`` has a register, and whether that register has a
        writable field (combinational)."""
        registers = list(self._regmap)
        known = Cat(word == reg.offset // REGISTER_BYTES for reg in registers).any()
        writable = Cat(word == reg.offset // REGISTER_BYTES for reg in registers
                       if any(f.access != Access.R for f in reg.fields)).any()
        return known, writable

    def elaborate(self, platform):
        m = Module()
        axil, bus = self.s_axil, self.bus
        step = Signal(_Step)
        address = Signal(len(bus.addr))
        data = Signal(REGISTER_BITS)
        full_strobe = Signal()
        wait = Signal(range(max(READ_LATENCY, WRITE_LATENCY) + 1))
        rdata = Signal(REGISTER_BITS)
        refused = Signal()
        idle = step == _Step.IDLE
        read = idle & axil.arvalid
        write = idle & ~axil.arvalid & axil.awvalid & axil.wvalid
        # The access's address decoded as it is taken, into registers.
        known, writable = Signal(), Signal()
        decoded = self._decode(Mux(read, axil.araddr, axil.awaddr)[2:])
        with m.If(read | write):
            m.d.sync += [known.eq(decoded[0]), writable.eq(decoded[1])]
        m.d.comb += [axil.arready.eq(read), axil.awready.eq(write), axil.wready.eq(write),
                     bus.addr.eq(address), bus.w_data.eq(data),
                     axil.rvalid.eq(step == _Step.R), axil.bvalid.eq(step == _Step.B),
                     axil.rresp.eq(Mux(refused, RESP_SLVERR, RESP_OKAY)),
                     axil.bresp.eq(Mux(refused, RESP_SLVERR, RESP_OKAY)),
                     axil.rdata.eq(rdata)]
        with m.If(read):
            m.d.sync += [address.eq(axil.araddr[2:]), wait.eq(0), step.eq(_Step.READ)]
        with m.If(write):
            m.d.sync += [address.eq(axil.awaddr[2:]), data.eq(axil.wdata), wait.eq(0),
                         full_strobe.eq(axil.wstrb == (1 << len(axil.wstrb)) - 1),
                         step.eq(_Step.WRITE)]
        with m.If((step == _Step.READ) | (step == _Step.WRITE)):
            m.d.sync += wait.eq(wait + 1)
        # The strobe goes on the clock after the handshake, from registers.
        first = wait == 0
        with m.If((step == _Step.READ) & first):
            m.d.comb += bus.r_stb.eq(known)
            m.d.sync += refused.eq(~known)
        with m.If((step == _Step.READ) & (wait == READ_LATENCY)):
            m.d.sync += [step.eq(_Step.R), rdata.eq(Mux(refused, 0, bus.r_data))]
        with m.If((step == _Step.WRITE) & first):
            m.d.comb += bus.w_stb.eq(writable & full_strobe)
            m.d.sync += refused.eq(~(writable & full_strobe))
        with m.If((step == _Step.WRITE) & (wait == WRITE_LATENCY) & self.locked_write):
            m.d.sync += refused.eq(1)
        with m.If((step == _Step.WRITE) & (wait == WRITE_LATENCY)):
            m.d.sync += step.eq(_Step.B)
        with m.If(((step == _Step.R) & axil.rready) | ((step == _Step.B) & axil.bready)):
            m.d.sync += step.eq(_Step.IDLE)
        return m
