"""Compare datapath responses with the golden model and say exactly what differed and where."""

import numpy as np

from spec.formats import lines_to_bits, unpack_state
from spec.params import Mode, Reason

__all__ = ["compare_responses"]

_SCALARS = ("accepted", "reason", "invalid", "user")


def _mode_name(code):
    return Mode(code).name if code in Mode._value2member_map_ else f"RESERVED({code})"


def _lanes(mode, bits_a, bits_b):
    """Lane numbers where two bit rows differ, for the lane width of ``mode``."""
    diff = np.flatnonzero(bits_a != bits_b)
    if mode == Mode.GTERNARY.value:
        diff = diff // 2
    elif mode == Mode.IDENTITY.value:
        diff = diff // 8
    return sorted(set(diff.tolist()))


def compare_responses(params, req, expected, actual, *, context, limit=20):
    """Mismatch messages (empty when equal), at most ``limit`` of them.

    Each message starts with ``context`` (configuration and seed), then names the request
    index, mode, user tag, field and lane (or byte, for identity).
    """
    errors = []
    count = len(req.mode)
    for i in range(count):
        mode = int(req.mode[i])
        where = f"{context}, request {i}, mode {_mode_name(mode)}, user {int(req.user[i]):#x}"
        for name in _SCALARS:
            want, got = getattr(expected, name)[i], getattr(actual, name)[i]
            if want != got:
                if name == "reason":
                    want, got = Reason(int(want)).name, Reason(int(got)).name
                errors.append(f"{where}: {name} expected {want}, got {got}")
        if not np.array_equal(expected.line[i], actual.line[i]):
            lanes = _lanes(mode, lines_to_bits(expected.line[i:i + 1])[0],
                           lines_to_bits(actual.line[i:i + 1])[0])
            unit = "bytes" if mode == Mode.IDENTITY.value else "lanes"
            errors.append(f"{where}: read-back line differs in {unit} {lanes[:16]}")
        if not np.array_equal(expected.byte_enable[i], actual.byte_enable[i]):
            errors.append(f"{where}: byte_enable differs in bytes "
                          f"{np.flatnonzero(expected.byte_enable[i] != actual.byte_enable[i])}")
        if not np.array_equal(expected.state[i], actual.state[i]):
            diff = _state_diff(params, mode, expected.state[i:i + 1], actual.state[i:i + 1])
            errors.append(f"{where}: state {diff}")
        if len(errors) >= limit:
            errors.append(f"(stopped after {limit} mismatches of {count} requests)")
            break
    return errors


def _state_diff(params, mode, want, got):
    if mode not in (Mode.GBINARY.value, Mode.GTERNARY.value):
        return f"differs in bytes {np.flatnonzero(want[0] != got[0]).tolist()[:16]}"
    want_lanes, want_n = unpack_state(params, Mode(mode), want)
    got_lanes, got_n = unpack_state(params, Mode(mode), got)
    lanes = np.flatnonzero(want_lanes[0] != got_lanes[0]).tolist()
    parts = []
    if want_n[0] != got_n[0]:
        parts.append(f"n expected {want_n[0]}, got {got_n[0]}")
    for k in lanes[:8]:
        parts.append(f"lane {k} expected {want_lanes[0, k]}, got {got_lanes[0, k]}")
    if not parts:
        parts.append("differs outside the lanes of this mode")
    return "; ".join(parts)
