"""``make train`` in small: two workers, a few steps; the report, the figure, the traffic and
the fault run's health events."""

import re

from scripts import train


def test_make_train_in_small(tmp_path):
    results = train.main(["--out", str(tmp_path), "--workers", "2", "--steps", "30",
                          "--runs", "fp32", "gbinary", "fault"])
    report = (tmp_path / "training.md").read_text()
    assert (tmp_path / "training_digits.png").stat().st_size > 0
    for name in ("fp32", "gbinary", "fault"):
        assert re.search(rf"^\| {name} \| 0\.\d+ \|", report, flags=re.M), \
            f"no row for {name} in\n{report}"
    assert results["fp32"]["low_bit_steps"] == 0
    assert set(results["fp32"]["traffic"]) == {"fp32"}, results["fp32"]["traffic"]
    binary = results["gbinary"]
    assert binary["low_bit_steps"] == 30 and binary["traffic"]["gbinary"] > 0, binary
    assert sum(binary["traffic"].values()) < results["fp32"]["traffic"]["fp32"]
    start, stop = results["fault"]["fault"]
    trips = [e for e in results["fault"]["events"] if ": trip: " in e]
    assert trips and trips[0].startswith(f"step {start}:"), \
        f"fault on steps {start} to {stop - 1}; events: {results['fault']['events']}"
