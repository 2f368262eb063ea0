"""Request vectors for the datapath: random and directed, as :class:`DatapathRequests`.

Shared by the amaranth.sim unit tests and the cocotb regressions so that both see the same
cases. Every generator takes a ``numpy.random.Generator`` so a logged seed reproduces a run.
"""

import numpy as np

from golden.datapath import DatapathRequests
from spec.formats import TERNARY_INVALID, bits_to_lines, fields_to_bits, pack_state, state_bytes
from spec.params import RESERVED_MODE, Mode

__all__ = ["random_requests", "directed_requests", "concat_requests"]

USER_BITS = 16


def _random_state(params, rng, mode, n):
    """Packed states consistent with ``mode`` and counts ``n`` (``c <= n``, ``|s| <= n``)."""
    count = len(n)
    if mode == Mode.GBINARY:
        lanes = rng.integers(0, n[:, None] + 1, size=(count, params.gbinary_lanes))
    else:
        lanes = rng.integers(-n[:, None], n[:, None] + 1, size=(count, params.gternary_lanes))
    return pack_state(params, mode, lanes, n)


def _requests(params, mode, contribute, data, byte_enable, state, threshold, rng):
    count = len(mode)
    return DatapathRequests(
        mode=np.asarray(mode, dtype=np.int64),
        contribute=np.broadcast_to(np.asarray(contribute, dtype=bool), (count,)).copy(),
        data=np.asarray(data, dtype=np.uint8),
        byte_enable=np.broadcast_to(np.asarray(byte_enable, dtype=bool),
                                    (count, params.line_bytes)).copy(),
        state=np.asarray(state, dtype=np.uint8),
        threshold=np.broadcast_to(np.asarray(threshold, dtype=np.int64), (count,)).copy(),
        user=rng.integers(0, 1 << USER_BITS, size=count),
    )


def random_requests(params, rng, count):
    """``count`` random requests over every mode, with some partial writes, lines at capacity,
    reserved modes and thresholds of 0 mixed in."""
    mode = rng.choice([Mode.IDENTITY.value, Mode.GBINARY.value, Mode.GTERNARY.value,
                       RESERVED_MODE], size=count, p=[0.2, 0.38, 0.38, 0.04])
    n = rng.integers(0, params.capacity + 1, size=count)
    n[rng.random(count) < 0.1] = params.capacity
    state = rng.integers(0, 256, size=(count, state_bytes(params)), dtype=np.uint8)
    state[:, -1] &= (1 << (params.state_bits % 8 or 8)) - 1
    for path in (Mode.GBINARY, Mode.GTERNARY):
        rows = mode == path.value
        state[rows] = _random_state(params, rng, path, n[rows])
    byte_enable = np.ones((count, params.line_bytes), dtype=bool)
    partial = rng.random(count) < 0.1
    byte_enable[partial] = rng.random((partial.sum(), params.line_bytes)) < 0.5
    threshold = rng.integers(1, params.capacity + 1, size=count)
    threshold[rng.random(count) < 0.02] = 0
    data = rng.integers(0, 256, size=(count, params.line_bytes), dtype=np.uint8)
    return _requests(params, mode, rng.random(count) < 0.8, data, byte_enable, state,
                     threshold, rng)


def directed_requests(params, rng):
    """Edge cases, as a list of ``(name, DatapathRequests)``.

    All-zero, all-one and alternating lines in each mode; majority ties; the capacity edge
    (``n = capacity - 1`` accepted, ``n = capacity`` rejected); the gate threshold edges
    ``s = T``, ``T - 1``, ``-T``, ``-T + 1``; one line per ternary lane with only that lane
    invalid; partial byte enables; the reserved mode; read-only requests.
    """
    cap, line_bytes = params.capacity, params.line_bytes
    patterns = np.array([[0x00] * line_bytes, [0xFF] * line_bytes,
                         [0x55] * line_bytes, [0xAA] * line_bytes], dtype=np.uint8)
    cases = []
    for mode in (Mode.IDENTITY, Mode.GBINARY, Mode.GTERNARY):
        empty = pack_state(params, Mode.GBINARY, np.zeros((4, 1)), np.zeros(4))
        cases.append((f"patterns-{mode.name}", _requests(
            params, [mode.value] * 4, True, patterns, True, empty, 1, rng)))

    # Ties: c = n / 2 reads 0, c = n / 2 + 1 reads 1 (n even, so only where capacity allows).
    n_even = cap - cap % 2
    half = np.full((2, params.gbinary_lanes), n_even // 2)
    half[1, 1::2] += 1
    tie_state = pack_state(params, Mode.GBINARY, half, [n_even, n_even])
    cases.append(("ties-GBINARY", _requests(
        params, [Mode.GBINARY.value] * 2, False, patterns[:2], True, tie_state, 1, rng)))

    for mode in (Mode.GBINARY, Mode.GTERNARY):
        edge = pack_state(params, mode, np.zeros((3, 1), dtype=np.int64),
                          [max(cap - 1, 0), cap, cap])
        cases.append((f"capacity-{mode.name}", _requests(
            params, [mode.value] * 3, [True, True, False], patterns[[1, 1, 1]], True, edge,
            1, rng)))

    threshold = max(cap // 2, 1)
    sums = np.array([threshold, threshold - 1, -threshold, -threshold + 1])
    gate_state = pack_state(params, Mode.GTERNARY,
                            np.repeat(sums[:, None], params.gternary_lanes, axis=1), [cap] * 4)
    cases.append(("threshold-edges-GTERNARY", _requests(
        params, [Mode.GTERNARY.value] * 4, False, patterns, True, gate_state, threshold, rng)))

    lanes = params.gternary_lanes
    codes = np.zeros((lanes, lanes), dtype=np.int64)
    codes[np.arange(lanes), np.arange(lanes)] = TERNARY_INVALID
    codes[:, ::3] = np.where(codes[:, ::3] == 0, 0b01, codes[:, ::3])
    zero_state = pack_state(params, Mode.GTERNARY, np.zeros((lanes, 1), dtype=np.int64),
                            np.zeros(lanes))
    cases.append(("invalid-each-lane-GTERNARY", _requests(
        params, [Mode.GTERNARY.value] * lanes, True, bits_to_lines(fields_to_bits(codes, 2)),
        True, zero_state, 1, rng)))

    partial = np.ones((3, line_bytes), dtype=bool)
    partial[0, 0] = partial[1, -1] = False
    partial[2] = False
    cases.append(("partial-enables", _requests(
        params, [Mode.GBINARY.value, Mode.GTERNARY.value, Mode.IDENTITY.value], True,
        patterns[1:4], partial, zero_state[:3], 1, rng)))

    cases.append(("reserved-mode", _requests(
        params, [RESERVED_MODE] * 2, [True, False], patterns[1:3], True, zero_state[:2], 1,
        rng)))
    return cases


def concat_requests(parts):
    """One :class:`DatapathRequests` holding every request of ``parts`` in order."""
    fields = DatapathRequests.__dataclass_fields__
    return DatapathRequests(**{name: np.concatenate([getattr(p, name) for p in parts])
                               for name in fields})
