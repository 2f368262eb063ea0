"""Arithmetic helpers for wide address computations."""

from amaranth import Cat, Const, Signal

__all__ = ["times_constant", "registered_order", "any_of"]


def times_constant(value, constant):
    """``value * constant`` as shifts and adds: Yosys maps wide products to DSP blocks even
    when one side is a small constant."""
    if not isinstance(constant, int) or constant < 0:
        raise ValueError(f"constant must be a non-negative integer, not {constant!r}")
    terms = [value << bit for bit in range(constant.bit_length()) if constant >> bit & 1]
    total = Const(0, 1)
    for term in terms:
        total = total + term
    return total


def registered_order(m, low, high, name, *, or_equal=False):
    """``low < high`` (``low <= high`` when ``or_equal``) of two unsigned values, a clock
    late: both are zero-extended to one width, and the high halves' order and equality
    and the low halves' order are registered (``<name>_high_less``, ``<name>_high_equal``,
    ``<name>_low``); the result is the expression that combines them, so that no carry chain
    spans the whole width."""
    width = max(len(low), len(high))
    low, high = Cat(low, Const(0, width - len(low))), Cat(high, Const(0, width - len(high)))
    half = width // 2
    high_less = Signal(name=f"{name}_high_less")
    high_equal = Signal(name=f"{name}_high_equal")
    low_ordered = Signal(name=f"{name}_low")
    m.d.sync += [high_less.eq(low[half:] < high[half:]),
                 high_equal.eq(low[half:] == high[half:]),
                 low_ordered.eq(low[:half] <= high[:half] if or_equal
                                else low[:half] < high[:half])]
    return high_less | (high_equal & low_ordered)


def any_of(values):
    """Bitwise OR of ``values`` (an AND-OR select, when each is masked by its own select)."""
    total = Const(0, 1)
    for value in values:
        total = total | value
    return total
