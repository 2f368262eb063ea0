"""Compression, packing and unpacking of low-bit gradients (the rule in runtime.lowbit)."""

import numpy as np
import pytest
import torch

from runtime.lowbit import compress, pack, unpack
from runtime.routes import Route
from spec.formats import lines_to_bits, signs_to_lines

BINARY, TERNARY = Route("gbinary"), Route("gternary", 1)


@pytest.mark.parametrize("seed", [0, 1])
def test_gbinary_is_the_scaled_sign(seed):
    p = torch.randn(300, generator=torch.Generator().manual_seed(seed))
    values, scale, kept = compress(p, BINARY)
    assert set(values.tolist()) <= {-1, 1}, \
        f"seed {seed}: G-Binary values {sorted(set(values.tolist()))}, not only -1 and +1"
    assert torch.equal(values == -1, torch.signbit(p)), f"seed {seed}: signs differ"
    assert scale.item() == pytest.approx(p.abs().mean().item()), \
        f"seed {seed}: scale {scale.item()}, mean |p| {p.abs().mean().item()}"
    assert torch.allclose(kept, scale * values.float()), f"seed {seed}: kept is not scale * values"


def test_gternary_keeps_elements_above_the_mean_magnitude():
    p = torch.tensor([0.1, -2.0, 0.5, 3.0, -0.2, 0.0])     # mean |p| = 0.9666...
    values, scale, kept = compress(p, TERNARY)
    assert values.tolist() == [0, -1, 0, 1, 0, 0], f"ternary values {values.tolist()}"
    assert scale.item() == pytest.approx(2.5), \
        f"scale {scale.item()}, want the mean |p| of the kept elements, 2.5"
    assert kept.tolist() == [0.0, -2.5, 0.0, 2.5, 0.0, 0.0], f"kept {kept.tolist()}"


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
    values, _, _ = compress(p, BINARY)
    assert (pack(values, BINARY.mode, 64, 1) == signs_to_lines(p.numpy()[None])).all(), \
        "G-Binary lines differ from spec.formats.signs_to_lines"
    assert lines_to_bits(pack(values, BINARY.mode, 64, 1))[0, :4].tolist() == [0, 1, 0, 1], \
        "lane bits of 1, -1, 0.5, -0.0: want 0, 1, 0, 1"
