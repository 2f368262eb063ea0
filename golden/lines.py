"""Packing and unpacking lines (contract sections 1, 3 and 4).

A line is held as a ``(N, line_bytes)`` ``uint8`` array, little-endian: bit ``i`` of a line is bit
``i % 8`` of byte ``i // 8``. Lane ``k`` of a ``b``-bit format occupies line bits
``[b*k + b - 1 : b*k]``.
"""

import numpy as np

from hdl.params import TERNARY_INVALID, TERNARY_MINUS, TERNARY_PLUS, TERNARY_ZERO

__all__ = [
    "TERNARY_ZERO", "TERNARY_PLUS", "TERNARY_INVALID", "TERNARY_MINUS",
    "bits_to_lines", "lines_to_bits", "fields_to_bits", "bits_to_fields",
    "small_fields_to_lines", "lines_to_small_fields", "signs_to_lines", "lines_to_signs",
    "ternary_to_lines", "lines_to_ternary_codes",
    "ternary_codes_to_values", "lines_to_ints", "ints_to_lines", "bits_to_ints", "ints_to_bits",
]



def bits_to_lines(bits):
    """Pack ``(N, line_bits)`` 0/1 values into ``(N, line_bits // 8)`` bytes."""
    bits = np.asarray(bits, dtype=np.uint8)
    if bits.ndim != 2 or bits.shape[1] % 8:
        raise ValueError(f"bits must have shape (N, multiple of 8), not {bits.shape}")
    return np.packbits(bits, axis=1, bitorder="little")


def lines_to_bits(lines):
    """Unpack ``(N, line_bytes)`` bytes into ``(N, 8 * line_bytes)`` 0/1 values."""
    lines = np.asarray(lines, dtype=np.uint8)
    if lines.ndim != 2:
        raise ValueError(f"lines must have shape (N, line_bytes), not {lines.shape}")
    return np.unpackbits(lines, axis=1, bitorder="little")


def fields_to_bits(values, width):
    """Spread ``(N, K)`` integers into ``(N, K * width)`` bits, field ``k`` at bits
    ``[k*width +: width]``.

    Negative values are written in two's complement of ``width`` bits.
    """
    values = np.asarray(values, dtype=np.int64)
    shifts = np.arange(width, dtype=np.int64)
    bits = (values[..., None] >> shifts) & 1
    return bits.reshape(values.shape[0], values.shape[1] * width).astype(np.uint8)


def bits_to_fields(bits, width, signed=False):
    """Inverse of :func:`fields_to_bits`: ``(N, K * width)`` bits into ``(N, K)`` integers."""
    bits = np.asarray(bits, dtype=np.int64)
    fields = bits.reshape(bits.shape[0], bits.shape[1] // width, width)
    values = (fields << np.arange(width, dtype=np.int64)).sum(axis=2)
    if signed:
        values = np.where(values >= 1 << (width - 1), values - (1 << width), values)
    return values


def small_fields_to_lines(values, width):
    """Pack ``(N, K)`` unsigned fields of ``width`` bits (1, 2, 4 or 8) straight into bytes:
    field ``k`` at line bits ``[k*width +: width]``. Faster than :func:`fields_to_bits`."""
    per_byte = 8 // width
    values = np.asarray(values, dtype=np.uint8)
    values = values.reshape(values.shape[0], values.shape[1] // per_byte, per_byte)
    shifts = np.arange(0, 8, width, dtype=np.uint8)
    return np.bitwise_or.reduce(values << shifts, axis=2).astype(np.uint8)


def lines_to_small_fields(lines, width):
    """Inverse of :func:`small_fields_to_lines`: ``(N, line_bits // width)`` fields."""
    lines = np.asarray(lines, dtype=np.uint8)
    shifts = np.arange(0, 8, width, dtype=np.uint8)
    fields = (lines[:, :, None] >> shifts) & ((1 << width) - 1)
    return fields.reshape(lines.shape[0], lines.shape[1] * len(shifts))


def signs_to_lines(x):
    """G-Binary contribution lines from ``(N, lanes)`` floats: lane bit 1 iff the element is
    negative (its IEEE-754 sign bit, so ``-0.0`` counts as negative)."""
    return bits_to_lines(np.signbit(np.asarray(x)))


def lines_to_signs(lines):
    """``(N, lanes)`` sign bits (1 = negative) of G-Binary lines."""
    return lines_to_bits(lines)


def ternary_to_lines(values):
    """G-Ternary lines from ``(N, lanes)`` integers in {-1, 0, +1}."""
    values = np.asarray(values)
    if values.size and not np.isin(values, (-1, 0, 1)).all():
        bad = values[~np.isin(values, (-1, 0, 1))].flat[0].item()
        raise ValueError(f"ternary values must be -1, 0 or +1, not {bad!r}")
    codes = np.select([values > 0, values < 0], [TERNARY_PLUS, TERNARY_MINUS], TERNARY_ZERO)
    return small_fields_to_lines(codes, 2)


def lines_to_ternary_codes(lines):
    """``(N, line_bits // 2)`` raw 2-bit lane codes of G-Ternary lines (invalid codes kept)."""
    return lines_to_small_fields(lines, 2)


def ternary_codes_to_values(codes):
    """Values of lane codes: ``01`` is +1, ``11`` is -1, ``00`` and the invalid ``10`` are 0."""
    codes = np.asarray(codes)
    return np.select([codes == TERNARY_PLUS, codes == TERNARY_MINUS], [1, -1], 0)


def lines_to_ints(lines):
    """Python integers (bit ``i`` = line bit ``i``) of ``(N, line_bytes)`` lines, for simulators."""
    return [int.from_bytes(row.tobytes(), "little") for row in np.asarray(lines, dtype=np.uint8)]


def ints_to_lines(values, line_bytes):
    """Inverse of :func:`lines_to_ints`."""
    buf = b"".join(int(v).to_bytes(line_bytes, "little") for v in values)
    return np.frombuffer(buf, dtype=np.uint8).reshape(-1, line_bytes).copy()


def bits_to_ints(bits):
    """Python integers of ``(N, K)`` 0/1 rows, column ``i`` as bit ``i`` (any ``K``)."""
    bits = np.asarray(bits, dtype=np.uint8)
    padded = np.zeros((bits.shape[0], -(-bits.shape[1] // 8) * 8), dtype=np.uint8)
    padded[:, :bits.shape[1]] = bits
    return lines_to_ints(bits_to_lines(padded))


def ints_to_bits(values, width):
    """Inverse of :func:`bits_to_ints`: ``(N, width)`` 0/1 rows."""
    return lines_to_bits(ints_to_lines(values, -(-width // 8)))[:, :width]
