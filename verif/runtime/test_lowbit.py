"""Compression, packing and unpacking of low-bit gradients (the rule in runtime.lowbit)."""

import numpy as np
import pytest
import torch

from runtime.lowbit import compress, pack, tie_mask, unpack
from runtime.routes import Route
from spec.formats import lines_to_bits, signs_to_lines

BINARY, TERNARY = Route("gbinary"), Route("gternary", 1)


@pytest.mark.parametrize("seed", [0, 1])
def test_gbinary_is_the_scaled_sign(seed):
    p = torch.randn(300, generator=torch.Generator().manual_seed(seed))
    values, scale = compress(p, BINARY.mode)
    assert set(values.tolist()) <= {-1, 1}, \
        f"seed {seed}: G-Binary values {sorted(set(values.tolist()))}, not only -1 and +1"
    assert torch.equal(values == -1, torch.signbit(p)), f"seed {seed}: signs differ"
    assert scale.item() == pytest.approx(p.abs().mean().item()), \
        f"seed {seed}: scale {scale.item()}, mean |p| {p.abs().mean().item()}"


def test_gternary_keeps_elements_above_the_mean_magnitude():
    p = torch.tensor([0.1, -2.0, 0.5, 3.0, -0.2, 0.0])     # mean |p| = 0.9666...
    values, scale = compress(p, TERNARY.mode)
    assert values.tolist() == [0, -1, 0, 1, 0, 0], f"ternary values {values.tolist()}"
    assert scale.item() == pytest.approx(2.5), \
        f"scale {scale.item()}, want the mean |p| of the kept elements, 2.5"


@pytest.mark.parametrize("route, lanes", [(BINARY, 64), (TERNARY, 32)])
def test_pack_then_unpack_gives_the_values_back(route, lanes):
    rng = np.random.default_rng(3)
    choices = [-1, 1] if route is BINARY else [-1, 0, 1]
    values = torch.from_numpy(rng.choice(choices, 150).astype(np.int8))
    lines = pack(values, route.mode, lanes, -(-150 // lanes))
    assert lines.shape == (-(-150 // lanes), 8), \
        f"{route}: {lines.shape} lines for 150 values of {lanes} lanes"
    back = unpack(lines, route.mode, 150)
    differ = np.flatnonzero(back.numpy() != values.numpy())
    assert not len(differ), f"{route}: lanes {differ[:8].tolist()} differ"


def test_gbinary_lines_are_the_spec_sign_lines():
    """Lane bit 1 iff negative, as spec.formats.signs_to_lines packs gradients."""
    p = torch.tensor([1.0, -1.0, 0.5, -0.0] * 16)
    values, _ = compress(p, BINARY.mode)
    assert (pack(values, BINARY.mode, 64, 1) == signs_to_lines(p.numpy()[None])).all(), \
        "G-Binary lines differ from spec.formats.signs_to_lines"
    assert lines_to_bits(pack(values, BINARY.mode, 64, 1))[0, :4].tolist() == [0, 1, 0, 1], \
        "lane bits of 1, -1, 0.5, -0.0: want 0, 1, 0, 1"


def test_the_tie_mask_is_the_same_for_the_same_lines_and_half_set():
    lines = np.array([3, 9, 4])
    mask = tie_mask(7, 1, lines, 64)
    assert mask.shape == (3, 64) and mask.dtype == np.uint8, mask.shape
    assert (tie_mask(7, 1, lines[[1]], 64)[0] == mask[1]).all(), "a line's mask depends on it alone"
    for other in (tie_mask(8, 1, lines, 64), tie_mask(7, 2, lines, 64)):
        assert (other != mask).any(), "another step or region gives the same mask"
    share = np.unpackbits(tie_mask(0, 0, np.arange(1000), 64)).mean()
    assert abs(share - 0.5) < 0.01, f"{share:.3f} of the mask bits are set, not half"


def test_masked_ties_read_minus_one_as_often_as_plus_one():
    """Four workers' signs with every lane tied: through the mask, the majority (2c > n) reads
    each lane's mask bit; lanes that are not tied read their majority, mask or not."""
    lanes, workers = 64 * 200, 4
    mask_bits = np.unpackbits(tie_mask(3, 0, np.arange(200), 8), bitorder="little")
    tied = np.array([[0, 1] * (lanes // 2)] * 2 + [[1, 0] * (lanes // 2)] * 2)
    negatives = (tied ^ mask_bits).sum(axis=0)
    result = (2 * negatives > workers).astype(np.uint8) ^ mask_bits
    assert (result == mask_bits).all() and abs(result.mean() - 0.5) < 0.02, result.mean()
    agreed = np.ones((workers, lanes), np.uint8)
    negatives = (agreed ^ mask_bits).sum(axis=0)
    assert ((2 * negatives > workers).astype(np.uint8) ^ mask_bits == 1).all(), \
        "a lane every worker agrees on reads its sign through the mask"
