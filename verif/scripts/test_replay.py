"""``python -m scripts.replay`` without a simulation: what it refuses, and its report (the replay
itself runs in ``verif/runtime/test_replay.py``)."""

import pytest

from bench.runtime import RECORD_PARAMS
from runtime.reducers import save_rounds
from scripts import replay


def test_a_missing_file_is_refused_with_the_way_to_make_one(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        replay.main([str(tmp_path / "none.npz"), "--out", str(tmp_path)])
    assert exit_.value.code == 2
    assert "make one with --record" in capsys.readouterr().err


def test_a_file_without_device_parameters_is_refused(tmp_path, capsys):
    path = tmp_path / "rounds.npz"
    save_rounds(path, [], [])
    with pytest.raises(SystemExit) as exit_:
        replay.main([str(path), "--out", str(tmp_path)])
    assert exit_.value.code == 2
    assert "holds no device parameters" in capsys.readouterr().err


def test_the_report_gives_the_counts_and_the_outcome():
    counts = {"rounds": 4, "lines": 222, "lanes": 9472, "bytes": 1776, "contributions": 888,
              "by_mode": {"GTERNARY": 148, "GBINARY": 74}, "differing_lanes": 0,
              "failed_rounds": 0, "mismatches": []}
    text = replay.report("r.npz", RECORD_PARAMS, counts, seed=7, simulator="verilator",
                         traffic="full_rate", recorded=None, seconds=3.0)
    for row in ("| rounds | 4 |", "| result lines | 222 (GBINARY 74, GTERNARY 148) |",
                "| lanes | 9472 |", "| lanes that differ | 0 |", "COCOTB_RANDOM_SEED=7",
                f"`nf_controller` {RECORD_PARAMS.name}", "every lane bit-exact"):
        assert row in text, f"{row!r} not in the report:\n{text}"
    failed = replay.report("r.npz", RECORD_PARAMS, counts, seed=7, simulator="verilator",
                           traffic="full_rate", recorded=None, seconds=3.0,
                           error="round 0, region 0 (GBINARY), line 7, lane 16")
    assert "FAILED" in failed and "line 7, lane 16" in failed, failed
