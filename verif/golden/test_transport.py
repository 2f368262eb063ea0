"""The driver over :class:`golden.transport.GoldenTransport`: the whole device, registers
included, without a simulator (``docs/spec.md`` sections 3 to 8)."""

import asyncio

import numpy as np
import pytest

from bench.regions import PARAMS, good_regions, with_region
from driver import ConfigurationError, NeuronFabric
from golden.transport import GoldenTransport
from spec.formats import lines_to_bits, signs_to_lines
from spec.regmap import ConfigError, Region

LINE = PARAMS.datapath.line_bytes
FULL = (1 << LINE) - 1


def _device():
    transport = GoldenTransport(PARAMS)
    return NeuronFabric(transport, PARAMS), transport


def _run(coroutine):
    return asyncio.run(coroutine)


def test_identify_reads_the_capabilities_of_the_params():
    device, _ = _device()
    caps = _run(device.identify())
    assert caps["CAP_LIMITS.CAPACITY"] == PARAMS.datapath.capacity, \
        f"CAPACITY {caps['CAP_LIMITS.CAPACITY']}, params {PARAMS.datapath.capacity}"
    assert caps["CAP_LINE.LINE_BITS"] == PARAMS.datapath.line_bits, \
        f"LINE_BITS {caps['CAP_LINE.LINE_BITS']}, params {PARAMS.datapath.line_bits}"
    assert caps["CAP_LIMITS.REGIONS"] == PARAMS.regions, \
        f"REGIONS {caps['CAP_LIMITS.REGIONS']}, params {PARAMS.regions}"


def test_gbinary_round_reads_the_majority_and_the_state():
    device, transport = _device()
    regions = good_regions()
    _run(device.configure(regions))
    _run(device.enable())
    rng = np.random.default_rng(7)
    lanes = PARAMS.datapath.gbinary_lanes
    grads = rng.standard_normal((5, 3, lanes))          # 5 workers, 3 lines
    for worker in grads:
        for i, line in enumerate(signs_to_lines(worker)):
            _run(transport.write_line(regions[0].base + i * LINE, bytes(line), FULL))
    negatives = (grads < 0).sum(axis=0)
    for i in range(3):
        got = lines_to_bits(np.frombuffer(
            _run(transport.read_line(regions[0].base + i * LINE)), np.uint8)[None])[0]
        want = (2 * negatives[i] > 5).astype(np.uint8)
        assert (got == want).all(), f"line {i}: lanes {np.flatnonzero(got != want)} differ"
        c, n = _run(device.read_state(regions[0], i))
        assert n == 5 and (c == negatives[i]).all(), f"line {i}: state n={n}, c={c}"
    assert _run(device.counters())["ACCEPTED"] == 15, \
        f"counters {_run(device.counters())}: want 15 accepted (3 lines x 5)"


def test_refused_apply_keeps_the_table_and_reports_region_and_reason():
    device, transport = _device()
    _run(device.configure(good_regions()))
    with pytest.raises(ConfigurationError) as error:
        _run(device.configure(with_region(1, threshold=0)))
    assert (error.value.region, error.value.reason) == (1, ConfigError.BAD_THRESHOLD), \
        f"refusal region {error.value.region}, reason {error.value.reason}"
    assert transport.device.regions == good_regions(), "a refused APPLY changed the applied table"
    assert _run(device.status())["CFG_ERROR"], "STATUS.CFG_ERROR not raised by a refused APPLY"
    assert _run(device.counters())["CFG_ERRORS"] == 1, \
        f"counters {_run(device.counters())}: want CFG_ERRORS 1"


def test_capacity_and_partial_contributions_are_rejected_and_flagged():
    device, transport = _device()
    regions = good_regions()
    _run(device.configure(regions))
    _run(device.enable())
    line = bytes(LINE)
    for _ in range(PARAMS.datapath.capacity + 1):
        _run(transport.write_line(regions[0].base, line, FULL))
    _run(transport.write_line(regions[0].base + LINE, line, FULL >> 1))
    status, counters = _run(device.status()), _run(device.counters())
    assert status["CAPACITY"] and status["PARTIAL"], status
    assert counters["REJECTED"] == 2, counters
    assert _run(device.read_state(regions[0], 0))[1] == PARAMS.datapath.capacity, \
        "line 0 of region 0 does not hold capacity contributions"
    _run(device.clear_status())
    assert not any(_run(device.status()).values()), \
        f"STATUS after clear_status: {_run(device.status())}"


def test_clear_zeroes_the_region_only():
    device, transport = _device()
    regions = good_regions()
    _run(device.configure(regions))
    _run(device.enable())
    ones = bytes([0xFF]) * LINE
    _run(transport.write_line(regions[0].base, ones, FULL))
    _run(transport.write_line(regions[2].base, ones, FULL))
    _run(device.clear(0))
    assert _run(device.read_state(regions[0], 0))[1] == 0, "CLEAR left a count in region 0, line 0"
    assert _run(transport.read_line(regions[0].base)) == bytes(LINE), \
        "CLEAR left data in region 0, line 0"
    assert _run(transport.read_line(regions[2].base)) == ones, "identity data changed"


def test_lock_ignores_region_writes():
    device, transport = _device()
    _run(device.configure(good_regions()))
    _run(device.lock())
    _run(device.configure([Region()]))
    assert _run(device.status())["LOCKED_WRITE"], \
        "STATUS.LOCKED_WRITE not raised by a write after LOCK"
    assert transport.device.regions == good_regions(), "a locked table changed"
