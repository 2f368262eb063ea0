"""Arithmetic helpers for wide address computations."""

from amaranth import Const

__all__ = ["times_constant"]


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
