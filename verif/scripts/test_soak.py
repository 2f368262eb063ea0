"""``make soak`` in small: the compiled harness runs every traffic pattern and bad input on the
small controller and matches the golden model; a wrong response, a wrong line of device memory
and a response that never comes are each caught and named; a waveform is written on request;
the stimulus keeps requests that do not commute out of flight together."""

import shutil

import numpy as np
import pytest

from bench import compiled
from bench.configs import SMALL_CONTROLLER
from bench.soak_check import check
from bench.soak_records import answer_dtype, op_dtype
from bench.soak_stimulus import ADD, READ, WRITE, Stimulus
from bench.soak_traffic import PATTERNS, layout
from golden.messages import DRS
from scripts import soak

PARAMS = SMALL_CONTROLLER


@pytest.fixture(scope="module")
def small_soak(tmp_path_factory):
    """``(work folder, figures)`` of a soak of every pattern once."""
    work = tmp_path_factory.mktemp("soak")
    figures = soak.main(["--contributions", "0", "--work", str(work),
                         "--out", str(work / "reports")])
    return work / PARAMS.name, figures


def test_a_small_soak_matches_golden_and_covers_every_pattern_and_bad_input(small_soak):
    folder, figures = small_soak
    assert figures["mismatch_count"] == 0, "\n".join(figures["mismatches"])
    assert not figures["summary"]["stalled"] and not figures["summary"]["errors"]
    for pattern in PATTERNS:
        assert figures["sent"][f"epochs of {pattern}"] == 1, f"{pattern} did not run"
    events, counters, stalls = figures["events"], figures["counters"], \
        figures["summary"]["stall_clocks"]
    for event in ("capacity", "partial", "invalid_lines", "poison", "bad_address",
                  "mem_error", "completed"):
        assert events[event] > 0, f"the soak met no {event} event: {events}"
    for counter in ("FILLS", "EVICTIONS", "WRITE_BACKS", "HITS"):
        assert counters[counter] > 0, f"CNT_{counter} is 0 after the soak: {counters}"
    for kind in ("bad_opcode", "hint", "invalidate"):
        assert figures["requests"].get(kind, 0) > 0, f"no {kind} request: {figures['requests']}"
    for channel in ("s2m_ndr", "s2m_drs", "ar", "aw", "w"):
        assert stalls[channel] > 0, f"no stall on {channel}: {stalls}"
    assert figures["sent"]["flushes"] > 0 and figures["sent"]["clears"] > 0, figures["sent"]
    report = (folder.parent / "reports" / "soak.md").read_text()
    assert "| outcome | PASSED" in report and "| AXI stall clocks" in report, report


def _copy_run(folder, tmp_path):
    for name in ("plan.txt", "ops.bin", "answers.bin", "summary.json", "memory.bin"):
        shutil.copy(folder / name, tmp_path / name)
    return compiled.Run(tmp_path)


def test_a_wrong_result_line_is_named_by_op_lane_and_clock(small_soak, tmp_path):
    files = _copy_run(small_soak[0], tmp_path)
    where = layout(PARAMS)
    ops = np.fromfile(files.ops, op_dtype(PARAMS))
    answers = np.fromfile(files.answers, answer_dtype(PARAMS))
    base = where.regions[0].base // PARAMS.datapath.line_bytes << 1
    reads = np.flatnonzero((ops["channel"] == 0) & (ops["address"] == base)
                           & (answers["channel"] == DRS))
    victim = int(reads[-1])
    answers["data"][victim][0] ^= 0b100                 # G-Binary lane 2 of line 0
    answers.tofile(files.answers)
    verdict = check(PARAMS, where, files)
    assert verdict.mismatch_count == 1, verdict.mismatches
    text = verdict.mismatches[0]
    for part in (f"op {victim} ", "region 0 (GBINARY) line 0", "lanes [2]",
                 f"answered at clock {answers['answered'][victim]}", "the last write"):
        assert part in text, f"{part!r} not in {text!r}"


def test_a_wrong_line_of_device_memory_is_named(small_soak, tmp_path):
    files = _copy_run(small_soak[0], tmp_path)
    line_bytes = PARAMS.datapath.line_bytes
    records = np.fromfile(files.memory, np.dtype([("address", "<u8"),
                                                  ("data", "u1", (line_bytes,))]))
    records["data"][0][1] ^= 1
    records.tofile(files.memory)
    verdict = check(PARAMS, layout(PARAMS), files)
    assert verdict.mismatch_count == 1, verdict.mismatches
    assert f"device memory at {int(records['address'][0]):#x}" in verdict.mismatches[0]
    assert "bytes [1]" in verdict.mismatches[0], verdict.mismatches[0]


def test_a_response_that_never_comes_stalls_the_run_and_says_so(small_soak, tmp_path):
    """A MemSpecRd marked as owed a response: the harness waits, sees no progress and stops."""
    files = _copy_run(small_soak[0], tmp_path)
    ops = np.fromfile(files.ops, op_dtype(PARAMS))
    hint = int(np.flatnonzero(ops["answered"] == 0)[0])
    ops["answered"][hint] = 1
    ops.tofile(files.ops)
    summary = compiled.run(compiled.harness(PARAMS), files)
    assert summary["stalled"], summary
    assert summary["answered_in_order_up_to"] == hint, \
        f"the run should stop waiting for op {hint}: {summary}"


@pytest.mark.slow      # a second Verilator build, with tracing
def test_a_waveform_is_written_around_a_clock_on_request(tmp_path):
    figures = soak.main(["--contributions", "0", "--waves-at", "500", "--work", str(tmp_path),
                         "--out", str(tmp_path / "reports")])
    waves = figures["waves"]
    assert (waves["from"], waves["to"]) == (300, 700), waves
    assert (tmp_path / PARAMS.name / "soak.fst").stat().st_size > 1000, waves


def test_requests_that_do_not_commute_wait_for_each_other(tmp_path):
    s = Stimulus(PARAMS, tmp_path / "ops.bin")
    line = np.zeros(PARAMS.datapath.line_bytes, np.uint8)
    key = ("acc", 0, 0)
    first = s.write(0x100, line, touches=((key, ADD),))
    second = s.write(0x100, line, touches=((key, ADD),))
    read = s.request(1, 0x100, touches=((key, READ),))
    again = s.request(1, 0x100, touches=((key, READ),))
    late = s.write(0x100, line, touches=((key, ADD),))
    over = s.write(0x100, line, touches=((key, WRITE),))
    fence = s.read_register("STATUS")
    after_fence = s.write(0x200, line, touches=((("line", 0x200), WRITE),))
    s.flush()
    after = np.fromfile(tmp_path / "ops.bin", op_dtype(PARAMS))["after"]
    assert after[first] == after[second] == -1, "contributions to one line commute"
    assert after[read] == second and after[again] == second, "a read waits for the adds"
    assert after[late] == again, "an add waits for the reads before it"
    assert after[over] == late, "a write waits for everything on its line"
    assert after[fence] == fence - 1 and after[after_fence] == fence, "a fence holds all"


def test_a_request_sent_before_its_turn_is_named(small_soak, tmp_path):
    """The check holds the harness to the order it was given: a request sent before the one it
    waits for was answered makes the golden model's order one the device need not follow."""
    files = _copy_run(small_soak[0], tmp_path)
    ops = np.fromfile(files.ops, op_dtype(PARAMS))
    answers = np.fromfile(files.answers, answer_dtype(PARAMS))
    waiting = int(np.flatnonzero(ops["after"] >= 0)[-1])
    answers["issued"][waiting] = answers["answered"][ops["after"][waiting]]
    answers.tofile(files.answers)
    verdict = check(PARAMS, layout(PARAMS), files)
    assert any(f"op {waiting} was sent at clock" in m and "broke the order" in m
               for m in verdict.mismatches), verdict.mismatches
