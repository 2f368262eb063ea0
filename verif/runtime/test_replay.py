"""Recorded rounds replayed through the RTL controller under Verilator, the third reducer
backend: a small DDP run of the hook (worker processes, a G-Binary and a G-Ternary region)
records its rounds on the device model, where the collective backend agrees with it; the
generated controller gives the same result lines, lane for lane. A corrupted recording fails a
replay with a message that says where."""

import asyncio

import numpy as np
import pytest

from bench.runtime import RECORD_PARAMS, RECORD_SEED, record_rounds
from bench.simulators import BUILD, SIMULATORS
from driver import NeuronFabric
from golden.transport import GoldenTransport
from runtime.reducers import load_rounds, load_rounds_params
from runtime.replay import ReplayMismatchError, replay
from scripts.replay import replay_on_rtl, simulation_seed
from spec.params import Mode

pytestmark = pytest.mark.slow

#: Four workers: G-Binary lanes can tie (read as +1), G-Ternary sums reach the threshold 2.
WORKERS, STEPS = 4, 2


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """``(rounds file, what the recording saw)`` of one small DDP run of the hook."""
    path = tmp_path_factory.mktemp("replay") / "rounds.npz"
    return path, record_rounds(path, workers=WORKERS, steps=STEPS)


def test_the_recording_covers_both_routes_where_the_backends_agree(recorded):
    path, summary = recorded
    assert not summary["mismatches"], "\n".join(summary["mismatches"][:20])
    assert summary["routes"] == ["gbinary", "gternary(T=2)"], \
        f"routes recorded {summary['routes']} (seed {RECORD_SEED})"
    assert load_rounds_params(path) == RECORD_PARAMS, load_rounds_params(path)


def _corrupt(path, out, number, row, byte):
    """A copy of the rounds file ``path`` at ``out`` with bit 0 of ``byte`` of result line
    ``row`` of round ``number`` inverted; returns the recorded byte and the corrupted one."""
    with np.load(path) as data:
        arrays = dict(data)
    results = arrays[f"round{number}_results"]
    before = int(results[row, byte])
    results[row, byte] ^= 1
    np.savez_compressed(out, **arrays)
    return before, int(results[row, byte])


def test_a_corrupted_result_fails_a_replay_and_says_where(recorded, tmp_path):
    path, _ = recorded
    rounds = load_rounds(path)
    number = next(n for n, r in enumerate(rounds) if r[0].mode == Mode.GTERNARY.value)
    region, index, lines, _, _ = rounds[number]
    row, byte = 3, 5
    right, wrong = _corrupt(path, tmp_path / "bad.npz", number, row, byte)
    fabric = NeuronFabric(GoldenTransport(RECORD_PARAMS), RECORD_PARAMS)
    with pytest.raises(ReplayMismatchError) as failure:
        asyncio.run(replay(fabric, load_rounds(tmp_path / "bad.npz"), "bad.npz"))
    message, counts = str(failure.value), failure.value.counts
    where = (f"round {number}, region {index} (GTERNARY), line {int(lines[row])}, lane "
             f"{byte * 4} (byte {byte}: expected {wrong:#04x}, got {right:#04x})")
    assert message.startswith("bad.npz: 1 of ") and where in message, \
        f"the message does not say {where!r}:\n{message}"
    assert counts.differing_lanes == 1 and counts.rounds == len(rounds), counts


def test_a_round_the_device_rejects_fails_a_replay_and_says_why(recorded):
    """Twice the recorded ranks overflow a line's counters (capacity 7): the device rejects the
    eighth contribution, and the replay reports the round as failed, with the counters."""
    path, _ = recorded
    rounds = load_rounds(path)
    region, index, lines, contributions, want = rounds[0]
    doubled = [(region, index, lines, np.concatenate([contributions, contributions]), want)]
    fabric = NeuronFabric(GoldenTransport(RECORD_PARAMS), RECORD_PARAMS)
    with pytest.raises(ReplayMismatchError) as failure:
        asyncio.run(replay(fabric, doubled, "doubled"))
    counts, message = failure.value.counts, str(failure.value)
    assert counts.failed_rounds == 1 and counts.lines == 0, counts
    assert f"round 0, region {index} ({Mode(region.mode).name}): region {index}: " in message \
        and "rejected" in message and "CAPACITY" in message, message


@pytest.mark.cocotb
def test_recorded_rounds_replay_bit_exact_on_the_rtl(recorded):
    if "verilator" not in SIMULATORS:
        pytest.skip(f"NF_SIMULATORS={','.join(SIMULATORS)} leaves Verilator out")
    path, _ = recorded
    rounds = load_rounds(path)
    counts = replay_on_rtl(path, BUILD / "sim" / "replay_test" / RECORD_PARAMS.name /
                           "verilator")
    where = f"{path}, COCOTB_RANDOM_SEED={simulation_seed()}"
    assert counts["rounds"] == len(rounds), f"{where}: {counts}"
    assert counts["lines"] == sum(len(lines) for _, _, lines, _, _ in rounds), \
        f"{where}: {counts}"
    assert set(counts["by_mode"]) == {"GBINARY", "GTERNARY"}, f"{where}: {counts}"
    print(f"{where}: {counts['rounds']} rounds, {counts['lines']} lines, {counts['lanes']} "
          f"lanes bit-exact on the RTL controller")
