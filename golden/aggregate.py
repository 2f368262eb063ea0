"""Accumulation, read-back and capacity rules (``docs/spec.md`` sections 2 to 5), vectorized
over lines.

State of ``N`` lines is a pair of arrays: ``lanes`` of shape ``(N, lanes)`` (G-Binary counts ``c``
or G-Ternary sums ``s``) and ``n`` of shape ``(N,)`` (accepted contributions per line).
"""

import numpy as np

from spec.formats import (
    TERNARY_INVALID,
    TERNARY_MINUS,
    TERNARY_PLUS,
    TERNARY_ZERO,
    bits_to_lines,
    lines_to_bits,
    lines_to_ternary_codes,
    small_fields_to_lines,
    ternary_codes_to_values,
)

__all__ = ["admit", "gbinary_accumulate", "gbinary_majority", "gternary_accumulate",
           "gternary_gate", "identity_write"]


def admit(n, capacity, wanted=True):
    """Which lines accept one more contribution: ``n < capacity`` (and ``wanted``).

    A line at capacity rejects the contribution whole; nothing wraps (``docs/spec.md``
    section 5).
    """
    return np.asarray(wanted, dtype=bool) & (np.asarray(n) < capacity)


def gbinary_accumulate(c, n, lines, capacity, wanted=True):
    """Add G-Binary contribution ``lines`` to counts ``c`` and ``n`` where admitted.

    Returns ``(c, n, accepted)``; rejected lines keep their state exactly.
    """
    accepted = admit(n, capacity, wanted)
    bits = lines_to_bits(lines).astype(np.int64)
    c = np.asarray(c, dtype=np.int64) + bits * accepted[:, None]
    return c, np.asarray(n, dtype=np.int64) + accepted, accepted


def gbinary_majority(c, n):
    """Majority lines: lane bit 1 iff ``2c > n`` (a tie reads 0)."""
    return bits_to_lines(2 * np.asarray(c) > np.asarray(n)[:, None])


def gternary_accumulate(s, n, lines, capacity, wanted=True):
    """Add G-Ternary contribution ``lines`` to sums ``s`` and counts ``n`` where admitted.

    Invalid lane codes (``10``) count as 0. Returns ``(s, n, accepted, invalid_lanes)`` where
    ``invalid_lanes`` counts the invalid codes in each line (0 for rejected lines).
    """
    accepted = admit(n, capacity, wanted)
    codes = lines_to_ternary_codes(lines)
    s = np.asarray(s, dtype=np.int64) + ternary_codes_to_values(codes) * accepted[:, None]
    invalid_lanes = (codes == TERNARY_INVALID).sum(axis=1) * accepted
    return s, np.asarray(n, dtype=np.int64) + accepted, accepted, invalid_lanes


def gternary_gate(s, threshold):
    """Gated lines: lane code ``01`` if ``s >= T``, else ``11`` if ``s <= -T``, else ``00``.

    ``threshold`` is a scalar or one value per line. The first rule wins, which only matters for
    the threshold 0 that the controller refuses to configure.
    """
    s = np.asarray(s)
    t = np.broadcast_to(np.asarray(threshold), s.shape[:1])[:, None]
    codes = np.select([s >= t, s <= -t], [TERNARY_PLUS, TERNARY_MINUS], TERNARY_ZERO)
    return small_fields_to_lines(codes, 2)


def identity_write(stored, data, byte_enable):
    """The FP32 path: bytes of ``data`` where ``byte_enable`` is set, ``stored`` elsewhere.

    ``byte_enable`` has shape ``(N, line_bytes)`` (truthy = write that byte).
    """
    return np.where(np.asarray(byte_enable, dtype=bool), data, stored).astype(np.uint8)
