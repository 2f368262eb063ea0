"""The line and accumulator-state formats (``docs/spec.md`` sections 1, 3 and 4;
``docs/formats.md``): packing and unpacking, vectorized over lines.

A line is held as a ``(N, line_bytes)`` ``uint8`` array, little-endian: bit ``i`` of a line is bit
``i % 8`` of byte ``i // 8``. Lane ``k`` of a ``b``-bit format occupies line bits
``[b*k + b - 1 : b*k]``.
"""

import numpy as np

from .params import TERNARY_INVALID, TERNARY_MINUS, TERNARY_PLUS, TERNARY_ZERO, Mode

__all__ = [
    "TERNARY_ZERO", "TERNARY_PLUS", "TERNARY_INVALID", "TERNARY_MINUS",
    "bits_to_lines", "lines_to_bits", "fields_to_bits", "bits_to_fields",
    "small_fields_to_lines", "lines_to_small_fields", "signs_to_lines", "lines_to_signs",
    "ternary_to_lines", "lines_to_ternary_codes",
    "ternary_codes_to_values", "lines_to_ints", "ints_to_lines", "bits_to_ints", "ints_to_bits",
    "state_bytes", "pack_state", "unpack_state", "state_to_memory", "memory_to_state",
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


# The accumulator state of one line (docs/formats.md, "Accumulator state").

def state_bytes(params):
    return -(-params.state_bits // 8)


def pack_state(params, mode, lanes, n):
    """Pack per-lane values and ``n`` of ``N`` lines into ``(N, state_bytes)`` bytes.

    ``mode`` is one :class:`spec.params.Mode` for all lines: ``lanes`` holds counts ``c`` for
    ``GBINARY`` and signed sums ``s`` for ``GTERNARY`` (one value per line broadcasts). The
    lanes fill whole bytes, so ``n`` starts on a byte boundary.
    """
    width = _lane_width(params, mode)
    n = np.asarray(n, dtype=np.int64).reshape(-1, 1)
    lanes = np.broadcast_to(np.asarray(lanes, dtype=np.int64) & ((1 << width) - 1),
                            (n.shape[0], _lane_count(params, mode)))
    return np.concatenate([_fields_to_bytes(lanes, width),
                           _fields_to_bytes(n, 8 * (state_bytes(params) - params.state_n_offset
                                                    // 8))], axis=1)


def unpack_state(params, mode, state):
    """Inverse of :func:`pack_state`: ``(lanes, n)`` of packed states read as ``mode``."""
    state = np.asarray(state, dtype=np.uint8)
    width = _lane_width(params, mode)
    split = params.state_n_offset // 8
    lanes = _bytes_to_fields(state[:, :split], width)
    if mode == Mode.GTERNARY:
        lanes = np.where(lanes >= 1 << (width - 1), lanes - (1 << width), lanes)
    n = _bytes_to_fields(state[:, split:], 8 * (state.shape[1] - split))[:, 0]
    return lanes, n & ((1 << params.counter_width) - 1)


def state_to_memory(params, state):
    """The device-memory image of packed states: ``(N, state_bytes)`` bytes to
    ``(N, state_lines * line_bytes)``, the ``state_lines`` lines one after another.

    Memory holds a state in bit planes: line ``b < W`` holds bit ``b`` of every G-Binary count
    (its bit ``k`` is bit ``b`` of lane ``k``'s ``c``), and line ``W`` holds ``n`` in its low
    ``W`` bits, zeros above. Bit ``j`` of G-Ternary lane ``k``'s sum is therefore bit
    ``2k + j // W`` of line ``j % W``. Every line's bit ``k`` belongs to line bit ``k``'s lanes.
    """
    lines, width = params.line_bits, params.counter_width
    bits = lines_to_bits(state)
    planes = bits[:, :lines * width].reshape(-1, lines, width).transpose(0, 2, 1)
    n_line = np.zeros((bits.shape[0], lines), np.uint8)
    n_line[:, :width] = bits[:, params.state_n_offset:params.state_n_offset + width]
    return bits_to_lines(np.concatenate([planes.reshape(-1, lines * width), n_line], axis=1))


def memory_to_state(params, memory):
    """Inverse of :func:`state_to_memory`: packed states of their device-memory image (the
    bits above ``n`` in its line are ignored)."""
    lines, width = params.line_bits, params.counter_width
    bits = lines_to_bits(memory)
    lanes = bits[:, :lines * width].reshape(-1, width, lines).transpose(0, 2, 1)
    state = np.zeros((bits.shape[0], 8 * state_bytes(params)), np.uint8)
    state[:, :lines * width] = lanes.reshape(-1, lines * width)
    state[:, params.state_n_offset:params.state_n_offset + width] = \
        bits[:, lines * width:lines * width + width]
    return bits_to_lines(state)


def _fields_to_bytes(values, width):
    if 8 % width == 0:
        return small_fields_to_lines(values, width)
    return bits_to_lines(fields_to_bits(values, width))


def _bytes_to_fields(lines, width):
    if 8 % width == 0:
        return lines_to_small_fields(lines, width).astype(np.int64)
    return bits_to_fields(lines_to_bits(lines), width)


def _lane_width(params, mode):
    return {Mode.GBINARY: params.counter_width,
            Mode.GTERNARY: params.gternary_sum_width}[Mode(mode)]


def _lane_count(params, mode):
    return {Mode.GBINARY: params.gbinary_lanes,
            Mode.GTERNARY: params.gternary_lanes}[Mode(mode)]
