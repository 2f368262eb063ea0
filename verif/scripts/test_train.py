"""``make train`` in small: two workers, a few steps of both tasks; the report, the figures,
the traffic, the fault run's health events and the calibrated profile."""

import re

import pytest

from scripts import overhead, train

WORKERS, STEPS = 2, 30


@pytest.mark.slow
def test_make_train_in_small(tmp_path):
    results = train.main(["--out", str(tmp_path), "--workers", str(WORKERS), "--steps",
                          str(STEPS), "--calibration-steps", "5", "--overhead-steps", "3",
                          "--overhead-warmup", "1", "--seeds", "1", "2",
                          "--runs", "fp32", "gbinary", "fault", "calibrated"])
    min_cosine = train.arguments().get_default("min_cosine")
    report = (tmp_path / "training.md").read_text()
    for task, runs in (("digits", ("fp32", "gbinary", "fault")),
                       ("text", ("fp32", "gbinary", "calibrated"))):
        assert (tmp_path / f"training_{task}.png").stat().st_size > 0, f"{task}: empty figure"
        assert set(results[task]) - {"calibration"} == set(runs), \
            f"{task}: runs {sorted(results[task])}, wanted {sorted(runs)}"
        section = report.split(f"## {task}\n")[1]
        for name in runs:
            assert re.search(rf"^\| {name} \| 0\.\d+ ± 0\.\d+ \|", section, flags=re.M), \
                f"no row for {task} {name} in\n{report}"
    for task in ("digits", "text"):
        for name, run in train.runs_of(results[task]).items():
            for seed in run["by_seed"]:
                assert len(set(seed["replicas"])) == 1, \
                    f"{task} {name}, seed {seed['seed']}: the replicas differ: {seed['replicas']}"
        assert "| identical in every seed |" in report, f"no replica checksum in\n{report}"
    digits = results["digits"]
    assert digits["fp32"]["low_bit_steps"] == 0, \
        f"the FP32 run took low-bit routes on {digits['fp32']['low_bit_steps']} steps"
    assert set(digits["fp32"]["traffic"]) == {"fp32"}, digits["fp32"]["traffic"]
    binary = digits["gbinary"]
    assert binary["low_bit_steps"] == STEPS and binary["traffic"]["gbinary"] > 0, \
        f"G-Binary run: {binary['low_bit_steps']} of {STEPS} steps low-bit, traffic " \
        f"{binary['traffic']}"
    lines, fp32 = binary["device_traffic"]["gbinary"], digits["fp32"]["traffic"]["fp32"]
    assert 0 < lines < fp32, f"G-Binary device lines {lines} bytes a step, FP32 {fp32}"
    full = digits["fp32"]
    assert binary["paper_bytes"] < full["paper_bytes"] == full["fp32_bytes"], \
        f"the paper's accounting: G-Binary {binary['paper_bytes']}, FP32 " \
        f"{full['paper_bytes']} of {full['fp32_bytes']} bytes"
    sampled = binary["traffic"].get("fp32", 0) + binary["traffic"].get("scales", 0) + lines
    assert sampled > binary["paper_bytes"], \
        f"with the device G-Binary sends {sampled} bytes a step, sampled steps and scales " \
        f"included; the paper's accounting says {binary['paper_bytes']}"
    start, stop = digits["fault"]["fault"]
    trips = [e for e in digits["fault"]["events"] if ": trip: " in e]
    assert trips and trips[0].startswith(f"step {start}:"), \
        f"fault on steps {start} to {stop - 1}; events: {digits['fault']['events']}"
    calibration = results["text"]["calibration"]
    routes = results["text"]["calibrated"]["routes"]
    for name, (cosine, *_) in calibration["scores"].items():
        want = "fp32" if cosine < min_cosine else train.CALIBRATED_FROM
        assert routes[name] == want, f"{name}: cosine {cosine:.3f}, route {routes[name]}"
    for claim in ("(a)", "(b)", "(d)"):
        assert re.search(rf"^- {re.escape(claim)} .*: \*\*(holds|does not hold)\*\*\.$", report,
                         re.M), f"claim {claim} has no verdict in\n{report}"
    assert all(len(run["by_seed"]) == 2 for task in ("digits", "text")
               for run in train.runs_of(results[task]).values()), "not every run has 2 seeds"
    for task in ("digits", "text"):
        modes = results["overhead"][task]
        assert set(modes) == set(overhead.MODES), f"{task}: overhead modes {sorted(modes)}"
        assert all(f["ms"] > 0 and f["bytes"] > 0 for f in modes.values()), \
            f"{task}: overhead {modes}"
        assert "reduce" in modes["hook, G-Binary, device model"]["phases"], \
            f"{task}: no reduce phase timed: {modes}"
        sent = {mode: f["bytes"] / f["fp32_bytes"] for mode, f in modes.items()}
        assert sent["plain DDP"] == 1 and sent["PyTorch fp16_compress_hook"] == 0.5, sent
        assert sent["hook, G-Binary, packed"] < sent["PyTorch PowerSGD, rank 4"] < 1, sent
        assert re.search(rf"^\| {task} \| hook, G-Binary, device model \| \d", report, re.M), \
            f"{task}: no overhead row for the device model in\n{report}"
