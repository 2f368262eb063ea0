"""The compiled soak: ``make soak`` (``python -m scripts.soak --help``).

The controller runs in a Verilator C++ harness (:mod:`bench.compiled`) with a CXL.mem host and
an AXI4 device memory, no Python in its per-clock loop; the requests come from a stimulus file
that :mod:`bench.soak_traffic` writes (numpy, seeded), the responses and device memory at the
end go to files that :mod:`bench.soak_check` compares with the golden model, lane by lane.
Writes ``<out>/soak.md`` and ``soak.json``; exits 1 on any mismatch or a stalled run. With
``--waves``, a mismatch also writes an FST waveform of the clocks around the first one (a
build of the harness with tracing, the same stimulus and seed).
"""

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np

from bench import compiled
from bench.configs import SMALL_CONTROLLER
from bench.soak_check import check
from bench.soak_stimulus import Stimulus
from bench.soak_traffic import PATTERNS, Traffic, layout
from spec.cxl import DevLoad
from spec.params import ControllerParams

__all__ = ["CONFIGS", "generate", "soak", "report", "main"]

#: The configurations ``--config`` names: the small one (four slots, evictions all the time)
#: and the default.
CONFIGS = {"small": SMALL_CONTROLLER, "default": ControllerParams()}


def generate(params, files, *, contributions, seed, lines=None):
    """Write the stimulus and plan of a soak of at least ``contributions`` contributions into
    :class:`bench.compiled.Run` ``files``; returns the layout and what was sent (a Counter)."""
    where = layout(params, lines)
    stimulus = Stimulus(params, files.ops)
    traffic = Traffic(stimulus, where, np.random.default_rng(seed))
    traffic.configure()
    patterns = list(PATTERNS)
    epoch = 0
    while epoch < len(patterns) or traffic.tally["contributions"] < contributions:
        traffic.epoch(patterns[epoch % len(patterns)])
        epoch += 1
    traffic.finish()
    files.plan.write_text(stimulus.plan(seed, where.faults))
    traffic.tally["requests"] = stimulus.count
    return where, traffic.tally


def soak(params, work, *, contributions, seed, lines=None, waves_at=None, window=200):
    """Run a soak in folder ``work``; returns the figures (a dict) for :func:`report`."""
    timings = {}
    started = time.perf_counter()
    executable = compiled.harness(params)
    timings["build"] = time.perf_counter() - started
    work.mkdir(parents=True, exist_ok=True)
    files = compiled.Run(work)
    mark = time.perf_counter()
    where, sent = generate(params, files, contributions=contributions, seed=seed, lines=lines)
    timings["stimulus"] = time.perf_counter() - mark
    mark = time.perf_counter()
    summary = compiled.run(executable, files)
    timings["simulation"] = time.perf_counter() - mark
    mark = time.perf_counter()
    verdict = check(params, where, files)
    timings["check"] = time.perf_counter() - mark
    timings["total"] = time.perf_counter() - started
    figures = {"configuration": params.name, "seed": seed, "lines": where.lines,
               "sent": dict(sent), "summary": summary, "timings": timings,
               "mismatch_count": verdict.mismatch_count, "mismatches": verdict.mismatches,
               "first_mismatch_clock": verdict.first_clock, "events": verdict.events,
               "counters": verdict.counters, "dev_load": verdict.dev_load,
               "requests": verdict.requests,
               "waves": None}
    clock = waves_at if waves_at is not None else (
        verdict.first_clock if verdict.mismatch_count and window else None)
    if clock is not None:
        again = compiled.Run(work / "waves")         # the checked run's files stay as they are
        again.folder.mkdir(exist_ok=True)
        for name in ("plan", "ops"):
            shutil.copy(getattr(files, name), getattr(again, name))
        fst = work / "soak.fst"
        compiled.run(compiled.harness(params, waves=True), again,
                     waves=(fst, max(0, clock - window), clock + window))
        figures["waves"] = {"file": str(fst), "from": max(0, clock - window),
                            "to": clock + window}
    return figures


def _passed(figures):
    summary = figures["summary"]
    return not (figures["mismatch_count"] or summary["stalled"] or summary["unknown_tags"]
                or summary["wlast_errors"] or summary["errors"])


def _coverage_rows(figures):
    """``(what, count)`` rows of what the soak exercised."""
    sent, events, counters = figures["sent"], figures["events"], figures["counters"]
    stalls, requests = figures["summary"]["stall_clocks"], figures["requests"]
    rows = [(f"epochs of {p}", sent.get(f"epochs of {p}", 0)) for p in PATTERNS]
    rows += [(f"device {name.lower().replace('_', '-')} (CNT_{name})", counters.get(name, "-"))
             for name in ("FILLS", "EVICTIONS", "WRITE_BACKS", "HITS", "COMPLETED")]
    rows += [(what, sent.get(what, 0)) for what in
             ("flushes", "clears", "checkpoint restores", "result reads",
              "raw accumulator reads", "identity requests")]
    rows += [("rejected: line at capacity", events["capacity"]),
             ("rejected: partial contribution", events["partial"]),
             ("accepted with an invalid G-Ternary code", events["invalid_lines"]),
             ("poisoned writes", events["poison"]),
             ("requests beyond the address space", events["bad_address"]),
             ("unsupported opcodes (MemRdFwd, MemWrFwd, reserved)",
              requests.get("bad_opcode", 0)),
             ("MemSpecRd (no answer)", requests.get("hint", 0)),
             ("MemInv, MemInvNT", requests.get("invalidate", 0)),
             ("device-memory errors met (golden)", events["mem_error"]),
             ("S2M stall clocks (NDR, DRS)", f"{stalls['s2m_ndr']:,}, {stalls['s2m_drs']:,}"),
             ("M2S clocks held back by the device (Req, RwD)",
              f"{stalls['m2s_req']:,}, {stalls['m2s_rwd']:,}"),
             ("AXI stall clocks (AR, AW, W, R, B)",
              ", ".join(f"{stalls[c]:,}" for c in ("ar", "aw", "w", "r", "b"))),
             ("DevLoad of the responses (Light, Optimal, Moderate, Severe)",
              ", ".join(f"{figures['dev_load'].get(level.value, 0):,}" for level in DevLoad))]
    return rows


def report(figures, command):
    """The Markdown report of a soak."""
    summary, timings, sent = figures["summary"], figures["timings"], figures["sent"]
    contributions = sent["contributions"]
    problems = [f"{figures['mismatch_count']} mismatches"] if figures["mismatch_count"] else []
    problems += ["the run stalled"] if summary["stalled"] else []
    problems += [f"{summary[k]} {k.replace('_', ' ')}" for k in ("unknown_tags", "wlast_errors")
                 if summary[k]]
    problems += [f"{len(summary['errors'])} harness errors"] if summary["errors"] else []
    outcome = ("PASSED: every response and device memory at the end matched the golden model"
               if _passed(figures) else "FAILED: " + ", ".join(problems))
    out = ["# Soak: the controller against the golden model, compiled", "",
           f"`{command}`: `nf_controller` {figures['configuration']}, {figures['lines']} lines "
           f"per aggregating region, seed {figures['seed']}.", "",
           "| figure | value |", "|---|---|",
           f"| outcome | {outcome} |",
           f"| contributions | {contributions:,} (accepted {figures['events']['accepted']:,}) |",
           f"| requests in all | {sent['requests']:,} ({summary['answered']:,} answered) |",
           f"| reads | {figures['requests'].get('read', 0):,} (results, raw accumulators, "
           f"identity, registers) |",
           f"| identity requests | {sent.get('identity requests', 0):,} |",
           f"| clocks | {summary['clocks']:,} |",
           f"| wall time | {timings['total']:.1f} s: build {timings['build']:.1f} s, stimulus "
           f"{timings['stimulus']:.1f} s, simulation {timings['simulation']:.1f} s, check "
           f"{timings['check']:.1f} s |",
           f"| contributions per second | {contributions / timings['simulation']:,.0f} "
           f"simulated; {contributions / timings['total']:,.0f} end to end |",
           f"| clocks per second | {summary['clocks'] / max(summary['seconds'], 1e-9):,.0f} |",
           f"| mismatches | {figures['mismatch_count']} |",
           f"| seed | {figures['seed']} |", "", "## Coverage", "", "| what | count |",
           "|---|---|"]
    out += [f"| {what} | {count if isinstance(count, str) else f'{count:,}'} |"
            for what, count in _coverage_rows(figures)]
    if figures["mismatches"] or summary["errors"]:
        out += ["", "## Mismatches (the first ones)", ""]
        out += [f"- {text}" for text in summary["errors"] + figures["mismatches"]]
    if figures["waves"]:
        waves = figures["waves"]
        out += ["", f"Waveform of clocks {waves['from']} to {waves['to']}: `{waves['file']}`."]
    return "\n".join(out) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=list(CONFIGS), default="small",
                        help="the controller: small (L64, 4 slots) or default")
    parser.add_argument("--contributions", type=int, default=1_000_000,
                        help="contributions to send, at least (every pattern runs once)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lines", type=int, default=None,
                        help="lines per aggregating region (default: 4 per slot, 64 at least)")
    parser.add_argument("--waves", type=int, default=0, metavar="CLOCKS",
                        help="on a mismatch, write an FST waveform of this many clocks either "
                             "side of the first one")
    parser.add_argument("--waves-at", type=int, default=None, metavar="CLOCK",
                        help="write an FST waveform around this clock, mismatch or not")
    parser.add_argument("--out", default="build/reports")
    parser.add_argument("--work", default="build/soak", help="where the run's files go")
    args = parser.parse_args(argv)
    if args.contributions < 0 or args.waves < 0:
        parser.error("--contributions and --waves must not be negative")
    params = CONFIGS[args.config]
    figures = soak(params, Path(args.work) / params.name, contributions=args.contributions,
                   seed=args.seed, lines=args.lines, waves_at=args.waves_at,
                   window=args.waves or (200 if args.waves_at is not None else 0))
    command = (f"python -m scripts.soak --config {args.config} --contributions "
               f"{args.contributions} --seed {args.seed}"
               + (f" --lines {args.lines}" if args.lines else ""))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = report(figures, command)
    (out / "soak.md").write_text(text)
    (out / "soak.json").write_text(json.dumps(figures, indent=2, default=str) + "\n")
    print(text)
    print(f"wrote {out / 'soak.md'} and {out / 'soak.json'}")
    if not _passed(figures):
        raise SystemExit(1)
    return figures


if __name__ == "__main__":
    main()
