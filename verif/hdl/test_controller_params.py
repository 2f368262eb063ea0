"""Controller and AXI master parameters: bad values refused with the value in the message."""

import pytest
from amaranth import Module

from bench.sim import simulate
from hdl.axi import AxiMemoryPort
from hdl.controller import CxlMemController
from hdl.slots import SlotPool
from spec.params import REGISTER_BITS, ControllerParams, DatapathParams


@pytest.mark.parametrize("kwargs, message", [
    ({"datapath": DatapathParams(line_bits=16)},
     "the controller needs lines of at least 32 bits (one register of the window), not 16"),
    ({"regions": 0}, "regions must be an integer from 1 to 32, not 0"),
    ({"address_bits": 70}, "address_bits must be an integer from 16 to 64, not 70"),
    ({"window_base": 0x800}, "window_base must be a multiple of 0x1000 inside the 40-bit "
                             "address space, not 2048"),
    ({"queue_depth": 6}, "queue_depth must be a power of two from 2 to 64, not 6"),
    ({"axi_id_bits": 0}, "axi_id_bits must be an integer from 1 to 16, not 0"),
    ({"slots": 3}, "slots must be a power of two from 2 to 4096, not 3"),
    ({"slots": 8192}, "slots must be a power of two from 2 to 4096, not 8192"),
])
def test_controller_params_refused(kwargs, message):
    with pytest.raises(ValueError) as error:
        ControllerParams(**kwargs)
    assert str(error.value) == message


def test_devload_limits_are_quarters_of_the_queues():
    assert ControllerParams(queue_depth=8).devload_limits == (4, 8, 12)


def test_controller_refuses_other_params():
    with pytest.raises(TypeError, match="params must be a ControllerParams, not 3"):
        CxlMemController(3)
    with pytest.raises(TypeError, match="params must be a ControllerParams, not 3"):
        SlotPool(3)
    with pytest.raises(ValueError, match="user_width must be a positive integer, not 0"):
        SlotPool(ControllerParams(), user_width=0)
    for bad in (16, 48, "128"):
        message = f"slice_bits must be a power of two of at least {REGISTER_BITS}, not"
        with pytest.raises(ValueError, match=message):
            SlotPool(ControllerParams(), slice_bits=bad)
    for bad in (-1, SlotPool.DATA_LAG + 1, 1.0):
        with pytest.raises(ValueError, match=rf"data_lag must be an integer from 0 to "
                                             rf"{SlotPool.DATA_LAG} \(the clocks before an "
                                             rf"op's line is read for P2\), not"):
            SlotPool(ControllerParams(), data_lag=bad)


def test_pool_slice_of_a_line_bit():
    """A line bit's slice is its column range's; a bit outside the line is refused."""
    pool = SlotPool(ControllerParams(), slice_bits=128)
    line_bits = ControllerParams().datapath.line_bits
    got = [pool.slice_of(bit) for bit in (0, 127, 128, line_bits - 1)]
    assert got == [0, 0, 1, line_bits // 128 - 1], f"slices of bits 0, 127, 128, last: {got}"
    for bad in (-1, line_bits, "0"):
        with pytest.raises(ValueError, match=f"bit must be a line bit, from 0 to "
                                             f"{line_bits - 1}, not"):
            pool.slice_of(bad)


def test_accumulators_are_powers_of_two_lines():
    """One line's accumulator (result line, then the state) is rounded up to a power of two
    lines, at most 4 KiB, so one burst writes it."""
    for width in range(1, 17):
        p = DatapathParams(counter_width=width)
        lines = p.accumulator_lines
        assert lines & (lines - 1) == 0 and lines // 2 < 1 + p.state_lines <= lines, width
        assert ControllerParams(p).accumulator_bytes_per_line <= 4096, width


@pytest.mark.parametrize("kwargs, message", [
    ({"line_bits": 4, "address_bits": 32}, "line_bits must be an integer of at least 8, not 4"),
    ({"line_bits": 96, "address_bits": 32},
     "line_bits must be a power of two up to 1024 (the widest AXI4 transfer), not 96"),
    ({"line_bits": 512, "address_bits": 32, "id_bits": 0},
     "id_bits must be an integer of at least 1, not 0"),
    ({"line_bits": 512, "address_bits": 32, "burst_beats": 0},
     "burst_beats must be an integer of at least 1, not 0"),
    ({"line_bits": 64, "address_bits": 32, "burst_beats": 257},
     "burst_beats must be at most 256 (AXI4 INCR bursts), not 257"),
    ({"line_bits": 64, "address_bits": 32, "bursts": 0},
     "bursts must be an integer of at least 1, not 0"),
    ({"line_bits": 64, "address_bits": 32, "primitives": "ice40"},
     "primitives must be one of (None, 'ecp5'), not 'ice40'"),
])
def test_axi_master_params_refused(kwargs, message):
    with pytest.raises(ValueError) as error:
        AxiMemoryPort(**{"id_bits": 1, "burst_beats": 2, "bursts": 3, **kwargs})
    assert str(error.value) == message


def test_times_constant_is_an_exact_product():
    from amaranth import Const

    from hdl.arith import times_constant
    with pytest.raises(ValueError, match="constant must be a non-negative integer, not -1"):
        times_constant(Const(1, 8), -1)
    cases = [(value, k) for value in (0, 1, 0xFF, 0x1234_5678) for k in (0, 1, 5, 320)]
    results = []

    async def testbench(ctx):
        for value, k in cases:
            results.append(ctx.get(times_constant(Const(value, 32), k)))
    simulate(Module(), testbench, clock=None)
    wrong = [(hex(value), k, hex(got)) for (value, k), got in zip(cases, results)
             if got != value * k]
    assert not wrong, f"times_constant (value, constant, product) wrong: {wrong}"
