"""From a gradient to contribution lines, and from a majority or gated line back to an update.

The update rule, signSGD with majority vote and momentum ("Signum"; Bernstein et al.,
"signSGD: Compressed Optimisation for Non-Convex Problems", ICML 2018, and "signSGD with
Majority Vote is Communication Efficient and Fault Tolerant", ICLR 2019), with a scale:

- Each worker keeps a momentum of each low-bit parameter's gradient, ``p = beta * p + g``
  (``beta``: the route's ``momentum``; PyTorch's SGD momentum without dampening), and
  compresses ``p``, not ``g``.
- **G-Binary**: the contribution is the sign of ``p`` (lane bit 1 iff negative,
  ``docs/spec.md`` section 3); the worker's scale is ``a = ||p||_1 / d``.
- **G-Ternary**: the contribution is ``sign(p)`` where ``|p| >= ||p||_1 / d`` and 0 elsewhere;
  the scale ``a`` is the mean ``|p|`` of the kept elements (a ternary code times one scalar, as
  in TernGrad, Wen et al., NeurIPS 2017).
- The device returns the majority sign or the gated sum (``+1`` where the sum reaches ``T``,
  ``-1`` where it reaches ``-T``). With an even number of workers a G-Binary lane can split
  evenly, and the device reads a tie as ``+1``: the workers XOR their lines with a mask that
  every worker derives alike from the step and the lines (:func:`tie_mask`) and XOR the result
  with it again, so that a tie reads ``+1`` or ``-1`` with equal chance and lanes that are not
  tied read as they would.
- The update every worker applies is ``mean(a) * m``: the workers' mean scale (one FP32 value
  per parameter, summed with ``all_reduce``) times the decoded line, ``m`` in {-1, +1} for
  G-Binary and {-1, 0, +1} for G-Ternary. The optimizer must add no momentum of its own to
  these parameters (:func:`runtime.binding.parameter_groups`).

The measurements behind this rule (a worker's kept compression error, the optimizer's momentum
on top of a sign, ties read +1) are in ``docs/runtime.md``, "Update rule".
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

__all__ = ["compress", "pack", "unpack", "tie_mask"]


def compress(p, mode):
    """``(values, scale)`` of a flat float tensor ``p`` in ``mode`` (:class:`spec.params.Mode`,
    G-Binary or G-Ternary): the contribution as values in {-1, 0, +1} (``int8``; G-Binary
    values are never 0) and the worker's scale ``a`` (a 0-d tensor)."""
    magnitude = p.abs()
    mean = magnitude.mean() if p.numel() else p.new_zeros(())
    if mode == Mode.GBINARY:
        return torch.where(torch.signbit(p), -1, 1).to(torch.int8), mean
    values = (torch.sign(p) * (magnitude >= mean)).to(torch.int8)
    nonzero = values != 0
    return values, magnitude[nonzero].mean() if nonzero.any() else p.new_zeros(())


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


_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9),
        np.uint64(0x94D049BB133111EB))


def tie_mask(step, region, line_indices, line_bytes):
    """The ``(N, line_bytes)`` ``uint8`` mask that breaks G-Binary ties at random: a function
    of the ``step``, the ``region`` and each line's index in it only (SplitMix64 of the three),
    so that every worker makes the same mask for the same lines, whatever the buckets."""
    words = -(-line_bytes // 8)
    with np.errstate(over="ignore"):
        x = (np.asarray(line_indices, np.uint64)[:, None] * np.uint64(words)
             + np.arange(words, dtype=np.uint64)[None, :])
        x = x + (np.uint64(step) << np.uint64(24)) + (np.uint64(region) << np.uint64(56))
        x = x * _MIX[0]
        x = (x ^ (x >> np.uint64(30))) * _MIX[1]
        x = (x ^ (x >> np.uint64(27))) * _MIX[2]
        x = x ^ (x >> np.uint64(31))
    return x.astype("<u8").view(np.uint8).reshape(len(line_indices), -1)[:, :line_bytes]
