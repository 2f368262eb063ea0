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


def registered_order(m, low, high, name, *, or_equal=False, levels=1):
    """``low < high`` (``low <= high`` when ``or_equal``) of two unsigned values, ``levels``
    clocks late (rule 3 of :mod:`hdl.pipeline`).

    Both are zero-extended to one width and cut into ``2 ** levels`` parts; each part's order
    and equality are registered (``<name>_<level>_<part>_less`` and ``_equal``, part 0 the
    least significant), then each pair of neighbouring parts' are combined and registered
    again, until two parts are left; the result is the expression that combines those two.
    Equality is a tree of XORs and ORs: written as ``==``, Yosys works it out from the part's
    subtraction, and the tree then waits for the carry chain's outputs."""
    if not isinstance(levels, int) or levels < 1:
        raise ValueError(f"levels must be a positive integer, not {levels!r}")
    width = max(len(low), len(high))
    low, high = Cat(low, Const(0, width - len(low))), Cat(high, Const(0, width - len(high)))
    count = 1 << levels
    bounds = [width * k // count for k in range(count + 1)]
    parts = []                      # (less, equal) of each part, least significant first
    for k, (start, stop) in enumerate(zip(bounds, bounds[1:])):
        a, b = low[start:stop], high[start:stop]
        parts.append((a <= b if or_equal and k == 0 else a < b, ~(a ^ b).any()))
    for level in range(levels):
        if level:
            parts = [(more[0] | (more[1] & less[0]), more[1] & less[1])
                     for less, more in zip(parts[::2], parts[1::2])]
        registered = []
        for k, values in enumerate(parts):
            pair = (Signal(name=f"{name}_{level}_{k}_less"),
                    Signal(name=f"{name}_{level}_{k}_equal"))
            m.d.sync += [pair[0].eq(values[0]), pair[1].eq(values[1])]
            registered.append(pair)
        parts = registered
    (low_less, _), (high_less, high_equal) = parts
    return high_less | (high_equal & low_less)


def any_of(values):
    """Bitwise OR of ``values`` (an AND-OR select, when each is masked by its own select)."""
    total = Const(0, 1)
    for value in values:
        total = total | value
    return total
