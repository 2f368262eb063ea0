"""From a gradient to contribution lines, and from a majority or gated line back to an update.

The update rule:

- Each worker compresses ``p = g + e``, its gradient plus the error it kept from its last
  compressed step (error feedback; ``e = 0`` when the route has ``error_feedback = false``).
- **G-Binary**: the contribution is the sign of ``p`` (lane bit 1 iff negative,
  ``docs/spec.md`` section 3); the worker's scale is ``a = ||p||_1 / d``. This is the scaled
  sign of EF-SignSGD (Karimireddy et al., "Error Feedback Fixes SignSGD and other Gradient
  Compression Schemes", ICML 2019), whose kept error is ``e = p - a * sign(p)``.
- **G-Ternary**: the contribution is ``sign(p)`` where ``|p| >= ||p||_1 / d`` and 0 elsewhere;
  the scale ``a`` is the mean ``|p|`` of the kept elements (a ternary code times one scalar, as
  in TernGrad, Wen et al., NeurIPS 2017), and ``e = p - a * t``.
- The device returns the majority sign (signSGD with majority vote, Bernstein et al.,
  "signSGD: Compressed Optimisation for Non-Convex Problems", ICML 2018) or the gated sum
  (``+1`` where at least ``T`` workers' sum reaches ``T``, ``-1`` where it reaches ``-T``).
- The update every worker applies is ``mean(a) * m``: the workers' mean scale (one FP32 value
  per parameter, summed with ``all_reduce``) times the decoded line, ``m`` in {-1, +1} for
  G-Binary (a tie reads +1) and {-1, 0, +1} for G-Ternary.
"""

import numpy as np
import torch

from spec.formats import (
    bits_to_lines,
    lines_to_bits,
    lines_to_ternary_codes,
    ternary_codes_to_values,
    ternary_to_lines,
)
from spec.params import Mode

__all__ = ["compress", "pack", "unpack"]


def compress(p, route):
    """``(values, scale, kept)`` of a flat float tensor ``p`` on a low-bit ``route``: the
    contribution as values in {-1, 0, +1} (``int8``; G-Binary values are never 0), the
    worker's scale ``a`` (a 0-d tensor) and ``a * values``, what the contribution stands for
    (so the error kept is ``p - kept``)."""
    magnitude = p.abs()
    mean = magnitude.mean() if p.numel() else p.new_zeros(())
    if route.mode == Mode.GBINARY:
        values = torch.where(torch.signbit(p), -1, 1).to(torch.int8)
        scale = mean
    else:
        values = (torch.sign(p) * (magnitude >= mean)).to(torch.int8)
        nonzero = values != 0
        scale = magnitude[nonzero].mean() if nonzero.any() else p.new_zeros(())
    return values, scale, scale * values.to(p.dtype)


def pack(values, mode, lanes, lines):
    """``(lines, line_bytes)`` contribution lines of ``values`` (from :func:`compress`), padded
    with zero lanes (``+0`` for G-Binary: lane bit 0)."""
    padded = np.zeros(lines * lanes, np.int8)
    padded[:values.numel()] = values.cpu().numpy()
    padded = padded.reshape(lines, lanes)
    if mode == Mode.GBINARY:
        return bits_to_lines(padded < 0)
    return ternary_to_lines(padded)


def unpack(lines, mode, numel):
    """The decoded values (``float32`` CPU tensor of ``numel``) of result ``lines``: G-Binary lane
    bit 1 is -1 and 0 is +1; G-Ternary codes are their values (``docs/spec.md`` sections 3
    and 4)."""
    if mode == Mode.GBINARY:
        values = 1 - 2 * lines_to_bits(lines).astype(np.int64)
    else:
        values = ternary_codes_to_values(lines_to_ternary_codes(lines))
    return torch.from_numpy(values.reshape(-1)[:numel].astype(np.float32))
