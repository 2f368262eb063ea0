"""Golden model of the aggregation datapath component (:class:`hdl.datapath.AggregationDatapath`).

One request is a contribution or read of one line against that line's accumulated state; the
response is the new state, the read-back line and the accept/reject status. Requests are
independent, so the model takes arrays of ``N`` requests and answers all of them at once.

The packed state format (see ``docs/formats.md``): G-Binary count ``c`` of lane ``k`` at bits
``[k*W +: W]``; G-Ternary sum ``s`` of lane ``k`` (two's complement) at ``[k*2W +: 2W]``, the
bits of G-Binary lanes ``2k`` and ``2k + 1``; the contribution count ``n`` at
``[params.state_n_offset +: W]``. Widths and offsets come from
:class:`hdl.params.DatapathParams`.
"""

from dataclasses import dataclass

import numpy as np

from hdl.params import DatapathParams, Mode, Reason

from .aggregate import (gbinary_accumulate, gbinary_majority, gternary_accumulate,
                        gternary_gate)
from .lines import (bits_to_fields, bits_to_lines, fields_to_bits, lines_to_bits,
                    lines_to_small_fields, small_fields_to_lines)

__all__ = ["DatapathRequests", "DatapathResponses", "state_bytes", "pack_state",
           "unpack_state", "state_to_memory", "memory_to_state", "run_datapath"]


@dataclass
class DatapathRequests:
    """``N`` requests. Arrays: ``mode``, ``contribute``, ``threshold``, ``user`` of shape ``(N,)``;
    ``data`` ``(N, line_bytes)`` uint8; ``byte_enable`` ``(N, line_bytes)`` bool; ``state``
    ``(N, state_bytes)`` uint8 as made by :func:`pack_state`."""
    mode: np.ndarray
    contribute: np.ndarray
    data: np.ndarray
    byte_enable: np.ndarray
    state: np.ndarray
    threshold: np.ndarray
    user: np.ndarray


@dataclass
class DatapathResponses:
    """``N`` responses: ``state`` and ``line`` as packed bytes, ``byte_enable`` as bool, and
    ``accepted``, ``reason`` (:class:`hdl.params.Reason` values), ``invalid``, ``user``."""
    state: np.ndarray
    line: np.ndarray
    byte_enable: np.ndarray
    accepted: np.ndarray
    reason: np.ndarray
    invalid: np.ndarray
    user: np.ndarray


def state_bytes(params):
    return -(-params.state_bits // 8)


def pack_state(params, mode, lanes, n):
    """Pack per-lane values and ``n`` of ``N`` lines into ``(N, state_bytes)`` bytes.

    ``mode`` is one :class:`hdl.params.Mode` for all lines: ``lanes`` holds counts ``c`` for
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


def run_datapath(params: DatapathParams, req: DatapathRequests) -> DatapathResponses:
    """Answer every request as the datapath does (see :class:`hdl.datapath.AggregationDatapath`).

    - Mode code 3: rejected (``Reason.MODE``), read-back line 0.
    - ``IDENTITY``: accepted; line and byte enables pass through; state unchanged.
    - ``GBINARY``/``GTERNARY`` with ``contribute``: rejected with ``Reason.PARTIAL`` unless every
      byte enable is set, else with ``Reason.CAPACITY`` if ``n`` is at capacity, else accumulated.
      Rejected requests leave the state exactly as it was.
    - Without ``contribute`` the state is unchanged and the request is accepted.
    - The read-back line is the majority (G-Binary) or gated (G-Ternary) line of the new state.
    - ``invalid`` is set for accepted G-Ternary contributions holding an invalid lane code.

    States must be ones the datapath can produce (all zero, then only its own updates):
    ``c <= n`` and ``|s| <= n`` in every lane. The hardware's shared lane-pair adders rely on it.
    """
    mode = np.asarray(req.mode, dtype=np.int64)
    count = mode.shape[0]
    contribute = np.asarray(req.contribute, dtype=bool)
    byte_enable = np.asarray(req.byte_enable, dtype=bool)
    aggregating = (mode == Mode.GBINARY.value) | (mode == Mode.GTERNARY.value)

    reason = np.full(count, Reason.NONE.value, dtype=np.int64)
    _, n = unpack_state(params, Mode.GBINARY, req.state)
    at_capacity = n >= params.capacity
    reason[contribute & aggregating & at_capacity] = Reason.CAPACITY.value
    reason[contribute & aggregating & ~byte_enable.all(axis=1)] = Reason.PARTIAL.value
    reason[~aggregating & (mode != Mode.IDENTITY.value)] = Reason.MODE.value
    accepted = reason == Reason.NONE.value
    adding = accepted & contribute

    new_state = np.array(req.state, dtype=np.uint8, copy=True)
    line = np.zeros_like(np.asarray(req.data, dtype=np.uint8))
    invalid = np.zeros(count, dtype=bool)

    identity = mode == Mode.IDENTITY.value
    line[identity] = np.asarray(req.data)[identity]

    for path in (Mode.GBINARY, Mode.GTERNARY):
        rows = mode == path.value
        if not rows.any():
            continue
        lanes, n = unpack_state(params, path, req.state[rows])
        if path == Mode.GBINARY:
            lanes, n, _ = gbinary_accumulate(lanes, n, req.data[rows], params.capacity,
                                             adding[rows])
            line[rows] = gbinary_majority(lanes, n)
        else:
            lanes, n, _, bad_lanes = gternary_accumulate(lanes, n, req.data[rows],
                                                         params.capacity, adding[rows])
            line[rows] = gternary_gate(lanes, np.asarray(req.threshold)[rows])
            invalid[rows] = bad_lanes > 0
        new_state[rows] = pack_state(params, path, lanes, n)

    return DatapathResponses(state=new_state, line=line, byte_enable=byte_enable.copy(),
                             accepted=accepted, reason=reason, invalid=invalid,
                             user=np.asarray(req.user).copy())

