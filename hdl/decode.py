"""Address decode: which path a host address takes, and where its accumulator state lives."""

from amaranth import Cat, Const, Module, Signal, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from spec.params import ControllerParams, Mode, aggregates

from .arith import any_of, registered_order, times_constant
from .control import region_layout
from .pipeline import register_copies

__all__ = ["decoded_layout", "AddressDecoder"]



def decoded_layout(params):
    """What the controller needs to know about one address."""
    return data.StructLayout({
        "window": 1,                                     # the register window
        "region": unsigned(max(1, (params.regions - 1).bit_length())),
        "mode": Mode,                                    # IDENTITY unless a region says otherwise
        "state_address": unsigned(params.address_bits),  # first byte of the line's accumulator
        # the address is in an enabled aggregating region's accumulators (whatever CTRL.ENABLE)
        "accumulator": 1,
        "threshold": unsigned(params.datapath.counter_width),
        "expected": unsigned(params.datapath.counter_width),
    })


class AddressDecoder(wiring.Component):
    """Decodes a byte address against the applied region table, in ``LATENCY`` clocks.

    An address in the register window decodes as ``window``. Otherwise the first enabled
    region with ``base <= address < end`` gives the mode (when ``enable`` is set), threshold,
    expected contributors and the address of the line's accumulator:
    ``acc + (address - base) // line_bytes * accumulator_bytes_per_line``. Any other address,
    or any address while ``enable`` is low, is ``IDENTITY``. ``accumulator`` says that the
    address lies in the accumulators of an enabled aggregating region (``enable`` or not).
    Validated tables have no overlapping regions, so at most one matches; the fields of the
    matching region are selected by an AND-OR of the hits rather than a priority chain.

    A change of ``address`` reaches ``decoded`` exactly ``LATENCY`` clocks later; changes of
    ``enable`` and ``regions`` enter at later steps, so they arrive sooner and may show mixed
    values on the way. The registered steps: a copy of the address for each region; the
    compares, each bound of each region in two halves (the high halves' order and equality, the
    low halves' order); the hits; the selection; the state address sum. Its user holds the inputs
    steady for ``LATENCY`` clocks before reading it.

    Members
    -------
    address : In(params.address_bits)
    enable : In(1)
    regions : In(data.ArrayLayout(region_layout(params), params.regions))
    decoded : Out(decoded_layout(params))
    ahead : Out(StructLayout({"mode": Mode, "state_address": address_bits}))
        ``decoded``'s mode and state address a clock early (before the last step's
        registers): of the address that entered ``LATENCY - 1`` clocks ago.
    """

    #: Clocks from a steady input to its ``decoded``.
    LATENCY = 5

    def __init__(self, params=ControllerParams()):
        self._params = params
        super().__init__({
            "address": In(params.address_bits),
            "enable": In(1),
            "regions": In(data.ArrayLayout(region_layout(params), params.regions)),
            "decoded": Out(decoded_layout(params)),
            "ahead": Out(data.StructLayout({"mode": Mode,
                                            "state_address": unsigned(params.address_bits)})),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        out = self.decoded

        # Step 0: a copy of the address for each region, beside its compares.
        copies = register_copies(m, self.address, p.regions, "address_copy")
        address = Signal.like(self.address)
        m.d.sync += address.eq(self.address)

        # Step 1: the compares in halves, and the address part of the accumulator address,
        # (address - base) / line_bytes * accumulator_lines * line_bytes + acc
        #   = address * accumulator_lines + state_offset (state_offset precomputed at APPLY).
        line_shift = p.datapath.line_bytes.bit_length() - 1
        line_address = Cat(Const(0, line_shift), address[line_shift:])
        scaled = Signal(p.address_bits)
        window = Signal()
        enabled = Signal(p.regions)         # the region is enabled, as is the decode
        # The window is window_bytes (a power of two) long and aligned to its length: an
        # equality of the high bits, with no carry chain.
        window_shift = p.window_bytes.bit_length() - 1
        window_hit = address[window_shift:] == p.window_base >> window_shift
        m.d.sync += [
            scaled.eq(times_constant(line_address, p.datapath.accumulator_lines)),
            window.eq(window_hit),
            enabled.eq(Cat(self.enable & region.enable for region in self.regions)),
        ]
        above_base = Cat(registered_order(m, region.base, copy, f"above_base_{r}", or_equal=True)
                         for r, (region, copy) in enumerate(zip(self.regions, copies)))
        below_end = Cat(registered_order(m, copy, region.end, f"below_end_{r}")
                        for r, (region, copy) in enumerate(zip(self.regions, copies)))
        above_acc = Cat(registered_order(m, region.acc, copy, f"above_acc_{r}", or_equal=True)
                        for r, (region, copy) in enumerate(zip(self.regions, copies)))
        below_acc_end = Cat(registered_order(m, copy, region.acc_end, f"below_acc_end_{r}")
                            for r, (region, copy) in enumerate(zip(self.regions, copies)))
        keeps = Signal(p.regions)           # the region is enabled and aggregates
        m.d.sync += keeps.eq(Cat(region.enable & aggregates(region.mode)
                                 for region in self.regions))

        # Step 2: the hits.
        hits = Signal(p.regions)
        scaled_2 = Signal.like(scaled)
        window_2 = Signal()
        accumulator_2 = Signal()
        m.d.sync += [hits.eq(above_base & below_end & enabled & ~window.replicate(p.regions)),
                     scaled_2.eq(scaled), window_2.eq(window),
                     accumulator_2.eq((above_acc & below_acc_end & keeps).any())]

        # Step 3: the matching region's fields (all zero when none matches: IDENTITY).
        selected = Signal(decoded_layout(p))
        scaled_3 = Signal.like(scaled)
        window_3 = Signal()
        accumulator_3 = Signal()
        fields = {"region": [Const(r, len(selected.region)) for r in range(p.regions)],
                  "mode": [r.mode.as_value() for r in self.regions],
                  "state_address": [r.state_offset for r in self.regions],
                  "threshold": [r.threshold for r in self.regions],
                  "expected": [r.expected for r in self.regions]}
        for name, values in fields.items():
            m.d.sync += Value.cast(getattr(selected, name)).eq(
                any_of(value & hits[r].replicate(len(value)) for r, value in enumerate(values)))
        m.d.sync += [scaled_3.eq(scaled_2), window_3.eq(window_2),
                     accumulator_3.eq(accumulator_2)]

        # Step 4: the state address.
        m.d.comb += [self.ahead.mode.eq(selected.mode),
                     self.ahead.state_address.eq(scaled_3 + selected.state_address)]
        m.d.sync += [
            out.eq(selected),
            out.window.eq(window_3),
            out.accumulator.eq(accumulator_3),
            out.state_address.eq(self.ahead.state_address),
        ]
        return m
