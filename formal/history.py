"""What a harness remembers of the past: values delayed by registers of its own.

Amaranth 0.5 has no ``Past``; a harness that relates a design's output to an input some clocks
earlier keeps the input in a chain of registers built here. Every register starts at zero, so
in the first clocks a delayed strobe reads 0 (no event happened before the start).
"""

from amaranth import Const, Signal, Value

__all__ = ["delayed", "started"]


def delayed(m, value, clocks, name):
    """``value`` as it was ``clocks`` clocks ago (0 before the start): the last of a chain of
    ``clocks`` registers named ``<name>_past<k>``. ``clocks`` = 0 gives ``value`` itself."""
    if not isinstance(clocks, int) or clocks < 0:
        raise ValueError(f"clocks must be a non-negative integer, not {clocks!r}")
    value = Value.cast(value)
    for k in range(1, clocks + 1):
        past = Signal(value.shape(), name=f"{name}_past{k}")
        m.d.sync += past.eq(value)
        value = past
    return value


def started(m, name="started"):
    """A flag that is 0 on the first clock and 1 ever after: a harness that compares a value
    with its own past skips the first clock, which has no past."""
    return delayed(m, Const(1, 1), 1, name)
