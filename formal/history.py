"""What a harness remembers of the past: values delayed by registers of its own.

Amaranth 0.5 has no ``Past``; a harness that relates a design's output to an input some clocks
earlier keeps the input in a chain of registers built here. Every register starts at zero, so
in the first clocks a delayed strobe reads 0 (no event happened before the start). A harness
that models what the design talks to (a memory, its queue of bursts) keeps it here too: a value
that starts free (:func:`starting_at`) and a queue in registers (:func:`queue`).
"""

from amaranth import Const, Mux, Signal, Value

__all__ = ["delayed", "started", "starting_at", "queue"]


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


def starting_at(m, init, name):
    """``(value, kept)``: ``value`` reads ``init`` (any value, even a free constant) on the
    first clock and the register ``kept`` after; ``kept`` holds ``value`` unless the caller
    assigns it (in the sync domain)."""
    value = Signal(len(init), name=name)
    kept = Signal(len(init), name=f"{name}_kept")
    loaded = Signal(name=f"{name}_loaded")
    m.d.sync += [loaded.eq(1), kept.eq(value)]
    m.d.comb += value.eq(Mux(loaded, kept, init))
    return value, kept


def queue(m, depth, width, push, push_data, pop, name):
    """A queue of up to ``depth`` entries of ``width`` bits, in registers: returns
    ``(level, head)``. ``push`` (with ``push_data``) and ``pop`` may come on one clock;
    the caller pushes only below ``depth`` and pops only above 0."""
    entries = [Signal(width, name=f"{name}_{k}") for k in range(depth)]
    level = Signal(range(depth + 1), name=f"{name}_level")
    m.d.sync += level.eq(level + push - pop)
    for k in range(depth):
        after = entries[k + 1] if k + 1 < depth else Const(0, width)
        kept = Mux(pop, after, entries[k])
        m.d.sync += entries[k].eq(Mux(push & (level - pop == k), push_data, kept))
    return level, entries[0]
