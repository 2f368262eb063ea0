"""Converting golden-model request/response arrays to and from the RTL's packed stream payloads.

Field offsets come from the Amaranth layouts in :mod:`hdl.datapath`, so the tests never repeat
them.
"""

import numpy as np

from golden.datapath import DatapathResponses
from spec.formats import bits_to_ints, ints_to_bits, ints_to_lines, lines_to_ints, state_bytes

__all__ = ["pack_fields", "unpack_fields", "request_payloads", "decode_responses"]


def pack_fields(layout, fields):
    """Packed payload ints from a dict of equally long per-field value lists.

    Fields missing from ``fields`` are 0. A value that does not fit its field raises, naming the
    field and the request index.
    """
    count = len(next(iter(fields.values())))
    words = [0] * count
    for name, field in layout:
        if name not in fields:
            continue
        for i, value in enumerate(fields[name]):
            value = int(value)
            if not 0 <= value < 1 << field.width:
                raise ValueError(f"request {i}: field {name}={value:#x} does not fit "
                                 f"{field.width} bits")
            words[i] |= value << field.offset
    return words


def unpack_fields(layout, words):
    """Per field name: the list of ints sliced out of packed payload ints."""
    return {name: [(w >> field.offset) & ((1 << field.width) - 1) for w in words]
            for name, field in layout}


def request_payloads(layout, req):
    """Packed request payload ints for the RTL from :class:`golden.datapath.DatapathRequests`."""
    return pack_fields(layout, {
        "data": lines_to_ints(req.data),
        "byte_enable": bits_to_ints(req.byte_enable),
        "state": lines_to_ints(req.state),
        "threshold": req.threshold,
        "mode": req.mode,
        "contribute": req.contribute,
        "user": req.user,
    })


def decode_responses(params, layout, words):
    """:class:`golden.datapath.DatapathResponses` from packed RTL response payload ints."""
    fields = unpack_fields(layout, words)
    status = unpack_fields(layout["status"].shape, fields["status"])
    return DatapathResponses(
        state=ints_to_lines(fields["state"], state_bytes(params)),
        line=ints_to_lines(fields["line"], params.line_bytes),
        byte_enable=ints_to_bits(fields["byte_enable"], params.line_bytes).astype(bool),
        accepted=np.array(status["accepted"], dtype=bool),
        reason=np.array(status["reason"], dtype=np.int64),
        invalid=np.array(status["invalid"], dtype=bool),
        user=np.array(fields["user"], dtype=np.int64),
    )
