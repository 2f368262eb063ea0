"""``make paper``'s experiments in small form, and their arithmetic checked by hand."""

import json
from math import ceil, prod

import pytest

from scripts import paper, traffic
from scripts.models import MODELS, parameter_count
from spec.params import ControllerParams, DatapathParams

PUBLISHED = {   # parameter counts of the reference implementations
    "ResNet-18 / CIFAR-10": 11_173_962, "ResNet-18 / CIFAR-100": 11_220_132,
    "DistilBERT / SST-2": 66_955_010, "GPT-2 small": 124_439_808,
}


@pytest.mark.parametrize("model", MODELS)
def test_layer_tables_match_published_parameter_counts(model):
    assert parameter_count(MODELS[model][1]) == PUBLISHED[model]


def test_tensor_bytes_pad_to_lines():
    assert traffic.tensor_bytes(513, 1, 64) == 128          # 513 bits: two lines
    assert traffic.tensor_bytes(320, 1.6, 64) == 64         # 64 bytes of five trits each
    assert traffic.tensor_bytes(321, 1.6, 64) == 128
    assert traffic.tensor_bytes(16, 32, 64) == 64


def test_resnet18_cifar100_traffic_by_hand():
    rows = MODELS["ResNet-18 / CIFAR-100"][1]
    fp32 = sum(ceil(prod(s) * 4 / 64) * 64 for _, s, _ in rows)
    binary = sum(ceil(prod(s) * (32 if head else 1) / 8 / 64) * 64 for _, s, head in rows)
    t = traffic.step_traffic("ResNet-18 / CIFAR-100", "G-Binary", True)
    assert (t.link_bytes, t.fp32_link_bytes) == (2 * binary, 2 * fp32)
    assert round(100 * t.ratio, 2) == 3.57          # the paper's 3.6 %
    dense = traffic.step_traffic("ResNet-18 / CIFAR-100", "G-Ternary (1.6-bit dense)", True)
    assert round(100 * dense.ratio, 2) == 5.44      # the paper's 5.4 %
    state = DatapathParams().state_lines
    low_lines = sum(ceil(prod(s) / 512) for _, s, head in rows if not head)
    head_lines = sum(ceil(prod(s) / 16) for _, s, head in rows if head)
    assert t.device_lines_written == low_lines * (1 + state) + traffic.WORKERS * head_lines
    assert t.device_lines_read == low_lines + traffic.WORKERS * head_lines


def test_exposed_overhead_arithmetic():
    figures = {"0": {"identity read": 8, "resident G-Binary read": 9,
                     "completed G-Binary read": 13, "identity write": 7}}
    rows = paper.exposed_overhead(figures, [500.0], [250.0])
    assert rows[0]["resident G-Binary read"] == {
        "added_cycles": 1, "at": {"500.0": {"added_ns": 2.0,
                                            "overhead_percent": {"250.0": 0.8}}}}
    assert rows[0]["completed G-Binary read"]["added_cycles"] == 5


def test_controller_clock_from_the_report(tmp_path):
    assert paper.controller_clock(tmp_path / "synth.json") is None
    (tmp_path / "synth.json").write_text(json.dumps({"designs": [
        {"design": "datapath", "fmax_median_mhz": 280.0},
        {"design": "controller", "fmax_median_mhz": 151.5}]}))
    assert paper.controller_clock(tmp_path / "synth.json") == 151.5


@pytest.mark.slow
def test_small_paper_run(tmp_path, monkeypatch):
    """The experiments at 64-bit lines: each measured figure agrees with the arithmetic that
    must hold for it (memory lines per contribution, the overhead's definition). The output
    folder is given relative, as ``make paper`` gives it."""
    monkeypatch.chdir(tmp_path)
    paper.main(["--line-bits", "64", "--counter-width", "2", "--latency", "1", "--regions",
                "4", "--slots", "8", "--simulator", "icarus", "--latencies", "0", "7",
                "--stream-lines", "2", "--intervals", "1", "3", "--out", "reports"])
    tmp_path = tmp_path / "reports"
    result = json.loads((tmp_path / "paper.json").read_text())
    hw, params = result["hardware"], ControllerParams(
        DatapathParams(line_bits=64, counter_width=2, latency=1), regions=4, slots=8)
    for latency, paths in hw["latency"].items():
        for read in paper.READS:
            assert result["overhead"][latency][read]["added_cycles"] == \
                paths[read] - paths["identity read"]
    workers, lines = hw["workers"], hw["lines"]
    for interval, run in hw["bandwidth"].items():
        agg, ident = run["contributions"], run["identity writes"]
        # Each line: its n line read once, one write-back when its last contribution arrives.
        assert agg["memory_beats"] == lines * (2 + params.datapath.state_lines), run
        assert agg["requests"] == ident["requests"] == workers * lines, run
        assert ident["memory_beats"] == ident["requests"], run
        assert ident["cycles"] >= (ident["memory_beats"] - 1) * int(interval), \
            "memory moved faster than its interval"
    text = (tmp_path / "paper.md").read_text()
    assert "| claim (paper) | our figure | how measured |" in text
    # The AXI4 front end: the same runs through nf_axi_reducer, the same memory lines.
    axi = result["axi_hardware"]
    for interval, run in axi["bandwidth"].items():
        assert run["contributions"]["memory_beats"] == \
            hw["bandwidth"][interval]["contributions"]["memory_beats"], run
        assert run["identity writes"]["memory_beats"] == run["identity writes"]["requests"], run
        assert f"| AXI4 (`nf_axi_reducer`) | {interval} |" in text, interval
