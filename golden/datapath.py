"""Golden model of the aggregation datapath component (:class:`hdl.datapath.AggregationDatapath`).

One request is a contribution or read of one line against that line's accumulated state; the
response is the new state, the read-back line and the accept/reject status. Requests are
independent, so the model takes arrays of ``N`` requests and answers all of them at once.

States are packed as :func:`spec.formats.pack_state` packs them (``docs/formats.md``).
"""

from dataclasses import dataclass

import numpy as np

from spec.formats import pack_state, unpack_state
from spec.params import DatapathParams, Mode, Reason

from .aggregate import gbinary_accumulate, gbinary_majority, gternary_accumulate, gternary_gate

__all__ = ["DatapathRequests", "DatapathResponses", "run_datapath"]


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
    ``accepted``, ``reason`` (:class:`spec.params.Reason` values), ``invalid``, ``user``."""
    state: np.ndarray
    line: np.ndarray
    byte_enable: np.ndarray
    accepted: np.ndarray
    reason: np.ndarray
    invalid: np.ndarray
    user: np.ndarray


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

