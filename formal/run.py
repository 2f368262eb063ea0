"""``python -m formal.run``: check every property and its mutation, and write
``<out>/formal.md`` and ``<out>/formal.json``.

Each property must PASS on its design; each mutation must FAIL with a counterexample trace.
The exit status is 1 if any did not. ``--fast`` runs only what ``make test`` runs; ``-k``
selects properties whose name contains a text; ``--jobs`` is how many checks run at once (by
default one per core): the harnesses are elaborated one after another, in this process, and
their solvers run side by side.
"""

import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .properties import PROPERTIES, prepare_mutation, prepare_property
from .sby import solve

__all__ = ["main"]


def _relative(path, root):
    if path is None:
        return None
    try:
        return str(Path(path).relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _outcomes(selected, build, mutations, jobs):
    """For each property of ``selected``, in order, a future of its check's
    :class:`formal.sby.Outcome` and one of its mutation's (``None`` without ``mutations``),
    solved ``jobs`` at a time. Each harness is elaborated in this thread (a mutation patches
    the design's modules while it is), the solvers in ``jobs`` threads."""
    pool = ThreadPoolExecutor(jobs)
    futures = []
    for prop in selected:
        checked = pool.submit(solve, prepare_property(prop, build))
        broken = pool.submit(solve, prepare_mutation(prop, build)) if mutations else None
        futures.append((prop, checked, broken))
    pool.shutdown(wait=False)
    return futures


def _rows(selected, build, mutations, say, jobs):
    root = Path(build).parent
    rows = []
    for prop, checked, broken in _outcomes(selected, build, mutations, jobs):
        outcome = checked.result()
        row = {"property": prop.name, "harness": prop.harness.__name__, "design": prop.design,
               "configuration": prop.params.name, "statement": prop.statement,
               "engine": prop.check.engine, "mode": prop.check.mode, "depth": prop.check.depth,
               "fast": prop.fast, "result": outcome.status,
               "seconds": round(outcome.seconds, 1),
               "trace": _relative(outcome.trace, root),
               "failed": [_relative(where, Path.cwd()) for where in outcome.failed]}
        say(f"{prop.name}: {outcome.status} ({outcome.seconds:.1f} s)")
        if broken is not None:
            broken = broken.result()
            row["mutation"] = {
                "name": prop.mutation.name, "fault": prop.mutation.fault,
                "mode": prop.mutant.mode, "depth": prop.mutant.depth,
                "result": broken.status, "seconds": round(broken.seconds, 1),
                "trace": _relative(broken.trace, root),
                "failed": [_relative(where, Path.cwd()) for where in broken.failed]}
            say(f"{prop.name} with {prop.mutation.name}: {broken.status} "
                f"({broken.seconds:.1f} s)")
        rows.append(row)
    return rows


def _markdown(rows):
    lines = ["# Formal proofs", "",
             "Written by `make formal` (`python -m formal.run`). Each property is checked with "
             "SymbiYosys on the named design at a small configuration: `prove` is k-induction "
             "(unbounded), `bmc` a bounded check of every trace of that many clocks from "
             "reset. Each property also runs on a deliberately broken design (its mutation), "
             "which must fail with a counterexample. Times are wall-clock seconds of each "
             "check on the machine that ran it, `--jobs` checks at a time.", "",
             "| property | design | configuration | engine | mode | depth | result | time (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['harness']} | {row['design']} | {row['configuration']} | "
                     f"{row['engine']} | {row['mode']} | {row['depth']} | {row['result']} | "
                     f"{row['seconds']} |")
    mutated = [row for row in rows if "mutation" in row]
    if mutated:
        lines += ["", "## Mutations (each must FAIL)", "",
                  "| property | configuration | mutation | fault | check | result | time (s) "
                  "| counterexample |", "|---|---|---|---|---|---|---|---|"]
        for row in mutated:
            mutation = row["mutation"]
            lines.append(f"| {row['harness']} | {row['configuration']} | {mutation['name']} | "
                         f"{mutation['fault']} | {mutation['mode']} {mutation['depth']} | "
                         f"{mutation['result']} | {mutation['seconds']} | "
                         f"`{mutation['trace']}` ({', '.join(mutation['failed'])}) |")
    lines += ["", "## Properties", ""]
    seen = set()
    for row in rows:
        if row["harness"] not in seen:
            seen.add(row["harness"])
            lines.append(f"- **{row['harness']}** ({row['design']}): {row['statement']}")
    return "\n".join(lines) + "\n"


def _failures(rows):
    wrong = [f"{row['property']}: {row['result']}" for row in rows if row["result"] != "PASS"]
    wrong += [f"{row['property']} with {row['mutation']['name']}: {row['mutation']['result']}"
              for row in rows if "mutation" in row
              and (row["mutation"]["result"] != "FAIL" or not row["mutation"]["trace"])]
    return wrong


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m formal.run", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("build/reports"),
                        help="folder of formal.md and formal.json")
    parser.add_argument("--build", type=Path, default=Path("build"),
                        help="build folder; the runs go in <build>/formal/")
    parser.add_argument("--fast", action="store_true", help="only what make test runs")
    parser.add_argument("-k", default="", help="only properties whose name contains this")
    parser.add_argument("--no-mutations", action="store_true",
                        help="do not check the mutations")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(),
                        help="checks that run at once (default: one per core)")
    args = parser.parse_args(argv)
    selected = [prop for prop in PROPERTIES
                if args.k in prop.name and (prop.fast or not args.fast)]
    if not selected:
        parser.error(f"no property matches -k {args.k!r}")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, not {args.jobs}")
    rows = _rows(selected, args.build, not args.no_mutations,
                 lambda text: print(text, flush=True), args.jobs)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "formal.md").write_text(_markdown(rows))
    (args.out / "formal.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {args.out / 'formal.md'} and {args.out / 'formal.json'}")
    wrong = _failures(rows)
    for text in wrong:
        print(f"error: {text}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
