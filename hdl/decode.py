"""Address decode: which path a host address takes, and where its accumulator state lives."""

from amaranth import Cat, Const, Module, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .arith import times_constant
from .control import region_layout
from .params import ControllerParams, Mode

__all__ = ["decoded_layout", "AddressDecoder"]



def decoded_layout(params):
    """What the controller needs to know about one address."""
    return data.StructLayout({
        "window": 1,                                     # the register window
        "region": unsigned(max(1, (params.regions - 1).bit_length())),
        "mode": Mode,                                    # IDENTITY unless a region says otherwise
        "state_address": unsigned(params.address_bits),  # first byte of the line's state
        "threshold": unsigned(params.datapath.counter_width),
        "expected": unsigned(params.datapath.counter_width),
    })


class AddressDecoder(wiring.Component):
    """Decodes a byte address against the applied region table (combinational).

    An address in the register window decodes as ``window``. Otherwise the first enabled
    region with ``base <= address < end`` gives the mode (when ``enable`` is set), threshold,
    expected contributors and the address of the line's accumulator state:
    ``acc + (address - base) // line_bytes * accumulator_bytes_per_line``. Any other address,
    or any address while ``enable`` is low, is ``IDENTITY``. Validated tables have no
    overlapping regions, so at most one matches.

    Members
    -------
    address : In(params.address_bits)
    enable : In(1)
    regions : In(data.ArrayLayout(region_layout(params), params.regions))
    decoded : Out(decoded_layout(params))
    """

    def __init__(self, params=ControllerParams()):
        self._params = params
        super().__init__({
            "address": In(params.address_bits),
            "enable": In(1),
            "regions": In(data.ArrayLayout(region_layout(params), params.regions)),
            "decoded": Out(decoded_layout(params)),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        address, out = self.address, self.decoded
        # acc + (address - base) / line_bytes * accumulator_bytes_per_line, with the constant
        # part precomputed at APPLY (region_layout's state_offset): one shared multiply by a
        # constant, one adder after the region mux.
        line_shift = p.datapath.line_bytes.bit_length() - 1
        line_address = Cat(Const(0, line_shift), address[line_shift:])
        scaled = times_constant(line_address, p.datapath.state_lines)[:p.address_bits]
        window = ((address >= p.window_base)
                  & (address < p.window_base + p.window_bytes))
        m.d.comb += [out.window.eq(window), out.mode.eq(Mode.IDENTITY)]
        hits = [region.enable & (region.base <= address) & (address < region.end)
                for region in self.regions]
        with m.If(self.enable & ~window):
            for index, (hit, region) in enumerate(zip(hits, self.regions)):
                with (m.If if index == 0 else m.Elif)(hit):
                    m.d.comb += [
                        out.region.eq(index),
                        out.mode.eq(region.mode),
                        out.state_address.eq(scaled + region.state_offset),
                        out.threshold.eq(region.threshold),
                        out.expected.eq(region.expected),
                    ]
        return m
