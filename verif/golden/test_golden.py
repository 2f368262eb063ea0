"""Golden model against the specification, element by element with plain Python as the reference."""

import numpy as np
import pytest

from golden.aggregate import (
    admit,
    gbinary_accumulate,
    gbinary_majority,
    gternary_accumulate,
    gternary_gate,
    identity_write,
)
from spec.formats import (
    TERNARY_INVALID,
    bits_to_ints,
    bits_to_lines,
    fields_to_bits,
    ints_to_bits,
    ints_to_lines,
    lines_to_bits,
    lines_to_ints,
    lines_to_signs,
    lines_to_small_fields,
    lines_to_ternary_codes,
    memory_to_state,
    pack_state,
    signs_to_lines,
    small_fields_to_lines,
    state_to_memory,
    ternary_codes_to_values,
    ternary_to_lines,
    unpack_state,
)
from spec.params import DatapathParams, Mode

SEED = 20261122


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)


def test_line_bit_order_is_little_endian():
    lines = np.zeros((1, 64), dtype=np.uint8)
    lines[0, 1] = 0b0000_0100            # byte 1, bit 2 -> line bit 10
    assert np.flatnonzero(lines_to_bits(lines)[0]).tolist() == [10]
    assert lines_to_ints(lines) == [1 << 10]
    assert np.array_equal(ints_to_lines([1 << 10], 64), lines)


def test_signs_pack_sign_bits_including_negative_zero():
    x = np.array([[1.0, -1.0, 0.0, -0.0, np.inf, -np.inf, 3e-40, -3e-40]])
    assert lines_to_signs(signs_to_lines(x)).tolist() == [[0, 1, 0, 1, 0, 1, 0, 1]]


def test_ternary_codes_and_values(rng):
    values = rng.integers(-1, 2, size=(5, 256))
    lines = ternary_to_lines(values)
    codes = lines_to_ternary_codes(lines)
    expected = [[{0: 0b00, 1: 0b01, -1: 0b11}[int(v)] for v in row] for row in values]
    assert codes.tolist() == expected
    assert np.array_equal(ternary_codes_to_values(codes), values)
    # Lane k sits at line bits [2k+1:2k]: lane 3 = +1 sets bit 6 only.
    one = np.zeros((1, 256), dtype=np.int64)
    one[0, 3] = 1
    assert lines_to_ints(ternary_to_lines(one)) == [1 << 6]


def test_ternary_rejects_values_outside_minus_one_to_one():
    with pytest.raises(ValueError, match="ternary values must be -1, 0 or \\+1, not 2"):
        ternary_to_lines(np.array([[0, 2]]))


def test_bits_to_ints_round_trip_for_widths_not_multiple_of_8(rng):
    bits = rng.integers(0, 2, size=(7, 13))
    assert np.array_equal(ints_to_bits(bits_to_ints(bits), 13), bits)


def test_gbinary_accumulate_and_majority_match_scalar_reference(rng):
    capacity = 7
    count, lanes = 40, 64
    c = np.zeros((count, lanes), dtype=np.int64)
    n = np.zeros(count, dtype=np.int64)
    ref_c = [[0] * lanes for _ in range(count)]
    ref_n = [0] * count
    for _ in range(9):                    # two rounds past capacity
        lines = rng.integers(0, 256, size=(count, lanes // 8), dtype=np.uint8)
        c, n, accepted = gbinary_accumulate(c, n, lines, capacity)
        bits = lines_to_bits(lines)
        for i in range(count):
            ok = ref_n[i] < capacity
            assert accepted[i] == ok, f"line {i}: accepted {accepted[i]}, expected {ok}"
            if ok:
                ref_n[i] += 1
                for k in range(lanes):
                    ref_c[i][k] += int(bits[i, k])
    assert n.tolist() == ref_n and c.tolist() == ref_c
    majority = lines_to_bits(gbinary_majority(c, n))
    for i in range(count):
        for k in range(lanes):
            assert majority[i, k] == (2 * ref_c[i][k] > ref_n[i]), f"line {i} lane {k}"


def test_gbinary_tie_reads_zero():
    c = np.array([[1, 2, 3]])
    assert lines_to_bits(gbinary_majority(np.pad(c, ((0, 0), (0, 5))), np.array([4])))[0, :3] \
        .tolist() == [0, 0, 1]


def test_gternary_accumulate_invalid_counts_as_zero_and_is_counted(rng):
    codes = rng.integers(0, 4, size=(30, 128))
    lines = bits_to_lines(fields_to_bits(codes, 2))
    s, n, accepted, invalid = gternary_accumulate(np.zeros((30, 128)), np.zeros(30), lines, 3)
    assert accepted.all() and n.tolist() == [1] * 30
    expected = np.where(codes == 0b01, 1, np.where(codes == 0b11, -1, 0))
    assert np.array_equal(s, expected)
    assert invalid.tolist() == (codes == TERNARY_INVALID).sum(axis=1).tolist()


def test_gternary_gate_thresholds():
    s = np.array([[3, 2, 1, 0, -1, -2, -3, 0]])
    codes = lines_to_ternary_codes(gternary_gate(s, 2))
    assert codes.tolist() == [[0b01, 0b01, 0, 0, 0, 0b11, 0b11, 0]]


def test_capacity_rejection_leaves_state_unchanged(rng):
    capacity = 3
    c = rng.integers(0, 4, size=(4, 16))
    n = np.array([0, 2, 3, 3])
    lines = np.full((4, 2), 0xFF, dtype=np.uint8)
    new_c, new_n, accepted = gbinary_accumulate(c, n, lines, capacity)
    assert accepted.tolist() == [True, True, False, False]
    assert np.array_equal(new_c[2:], c[2:]) and new_n[2:].tolist() == [3, 3]
    s, sn, accepted, invalid = gternary_accumulate(c[:, :8], n, lines, capacity)
    assert np.array_equal(s[2:], c[2:, :8]) and invalid.tolist() == [0, 0, 0, 0]
    assert admit(np.array([2, 3]), capacity).tolist() == [True, False]


def test_identity_write_honours_byte_enables(rng):
    stored = rng.integers(0, 256, size=(6, 64), dtype=np.uint8)
    data = rng.integers(0, 256, size=(6, 64), dtype=np.uint8)
    enables = rng.random((6, 64)) < 0.5
    merged = identity_write(stored, data, enables)
    for i in range(6):
        for b in range(64):
            want = data[i, b] if enables[i, b] else stored[i, b]
            assert merged[i, b] == want, f"line {i} byte {b}"


@pytest.mark.parametrize("mode", [Mode.GBINARY, Mode.GTERNARY])
@pytest.mark.parametrize("params", [DatapathParams(), DatapathParams(line_bits=64,
                                                                     counter_width=3)],
                         ids=lambda p: p.name)
def test_state_pack_round_trip_and_offsets(params, mode, rng):
    lanes_count = params.gbinary_lanes if mode == Mode.GBINARY else params.gternary_lanes
    n = rng.integers(0, params.capacity + 1, size=9)
    low = 0 if mode == Mode.GBINARY else -n[:, None]
    lanes = rng.integers(low, n[:, None] + 1, size=(9, lanes_count))
    packed = pack_state(params, mode, lanes, n)
    got_lanes, got_n = unpack_state(params, mode, packed)
    assert np.array_equal(got_lanes, lanes) and np.array_equal(got_n, n)
    value = lines_to_ints(packed)[0]
    width = params.counter_width if mode == Mode.GBINARY else params.gternary_sum_width
    assert (value >> params.state_n_offset) == n[0]
    assert (value & ((1 << width) - 1)) == lanes[0, 0] % (1 << width)


@pytest.mark.parametrize("mode", [Mode.GBINARY, Mode.GTERNARY])
@pytest.mark.parametrize("params", [DatapathParams(), DatapathParams(line_bits=16,
                                                                     counter_width=16)],
                         ids=lambda p: p.name)
def test_state_memory_image_is_bit_planes_then_n(params, mode, rng):
    """Memory line ``b < W`` bit ``k`` is bit ``b`` of G-Binary lane ``k``; G-Ternary sum bit
    ``j`` of lane ``k`` is line ``j % W`` bit ``2k + j // W``; line ``W`` holds ``n``."""
    lanes_count = params.gbinary_lanes if mode == Mode.GBINARY else params.gternary_lanes
    n = rng.integers(0, params.capacity + 1, size=4)
    low = 0 if mode == Mode.GBINARY else -n[:, None]
    lanes = rng.integers(low, n[:, None] + 1, size=(4, lanes_count))
    packed = pack_state(params, mode, lanes, n)
    image = state_to_memory(params, packed)
    width = params.counter_width
    assert image.shape == (4, params.state_lines * params.line_bytes)
    memory_lines = [lines_to_ints(image[:, b * params.line_bytes:(b + 1) * params.line_bytes])
                    for b in range(params.state_lines)]
    lane_width = width if mode == Mode.GBINARY else 2 * width
    for row in range(4):
        for k in range(lanes_count):
            value = int(lanes[row, k]) % (1 << lane_width)
            for j in range(lane_width):
                line, bit = (j, k) if mode == Mode.GBINARY else (j % width, 2 * k + j // width)
                assert (memory_lines[line][row] >> bit) & 1 == (value >> j) & 1, \
                    f"{params.name} {mode.name} row {row} lane {k} bit {j}: line {line} bit {bit}"
        assert memory_lines[width][row] == n[row], \
            f"row {row}: n line {memory_lines[width][row]:#x}, expected {n[row]}"
    assert np.array_equal(memory_to_state(params, image), packed)


@pytest.mark.parametrize("width", [1, 2, 4, 8])
def test_small_field_packing_matches_bit_packing_including_no_lines(width, rng):
    for count in (0, 5):
        values = rng.integers(0, 1 << width, size=(count, 64 // width))
        packed = small_fields_to_lines(values, width)
        assert np.array_equal(packed, bits_to_lines(fields_to_bits(values, width)))
        assert np.array_equal(lines_to_small_fields(packed, width), values)
