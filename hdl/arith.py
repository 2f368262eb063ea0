"""Arithmetic helpers: wide address computations, and compares made as ECP5 carry chains."""

from amaranth import Cat, Const, Instance, Signal

from .bram import PRIMITIVES

__all__ = ["times_constant", "registered_order", "any_of", "CCU2C_ADD", "sum_bits"]


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


#: The INIT of each half of an ECP5 CCU2C that adds its ``A`` and ``B`` (with ``C`` 0, ``D`` 1
#: and no injected carry): its LUT4 is ``A ^ B``, the carry's propagate, and its LUT2 (the
#: INIT's low four bits) is ``A``, the carry it makes where ``A`` and ``B`` agree. Yosys maps
#: every ECP5 adder to the same cells.
CCU2C_ADD = 0b1001011010101010


def sum_bits(m, terms, *, primitives=None, name="sum_bits"):
    """Bit ``bit`` of ``a + b`` for each ``(a, b, bit)`` of ``terms``: ``a`` and ``b`` unsigned,
    of one width ``w``, and ``bit`` at most ``w`` (``w``: the carry out). Returns the bits, in
    the order of ``terms``.

    With ``primitives`` ``"ecp5"``, one CCU2C carry chain makes them all: each term's bits,
    then a position that adds 0 to 0, whose sum is the term's carry out and which stops the
    carry there, so the next term starts from none. nextpnr's packer spends about four logic
    cells at the ends of every chain, more than a short compare's own: one chain for several
    compares pays them once. (Yosys makes a chain of each term's adder, even of one adder
    written over several terms with zeros between them.) Otherwise (``None``) each is
    ``a + b`` of its own.
    """
    if primitives not in PRIMITIVES:
        raise ValueError(f"primitives must be one of {PRIMITIVES}, not {primitives!r}")
    for a, b, bit in terms:
        if len(a) != len(b) or not 0 <= bit <= len(a):
            raise ValueError(f"a term adds two values of one width and reads a bit up to "
                             f"it: widths {len(a)} and {len(b)}, bit {bit}")
    if primitives is None:
        return [(Cat(a, Const(0, 1)) + Cat(b, Const(0, 1)))[bit] for a, b, bit in terms]
    zero = Const(0, 1)
    left, right, reads = [], [], []
    for a, b, bit in terms:
        reads.append(len(left) + bit)
        left += [*a, zero]
        right += [*b, zero]
    if len(left) % 2:
        left.append(zero)
        right.append(zero)
    total = Signal(len(left), name=name)
    carry = zero
    for i in range(0, len(left), 2):
        carry_out = Signal(name=f"{name}_carry{i // 2}")
        m.submodules[f"{name}_ccu{i // 2}"] = Instance(
            "CCU2C", p_INIT0=Const(CCU2C_ADD, 16), p_INIT1=Const(CCU2C_ADD, 16),
            p_INJECT1_0="NO", p_INJECT1_1="NO", i_CIN=carry,
            i_A0=left[i], i_B0=right[i], i_C0=0, i_D0=1,
            i_A1=left[i + 1], i_B1=right[i + 1], i_C1=0, i_D1=1,
            o_S0=total[i], o_S1=total[i + 1], o_COUT=carry_out)
        carry = carry_out
    return [total[read] for read in reads]
