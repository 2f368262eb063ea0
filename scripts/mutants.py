"""Tests that catch bugs, measured: ``make mutants`` (``python -m scripts.mutants --help``).

Each mutant of the catalogue (:data:`bench.mutants.MUTANTS`, one realistic single edit of the
RTL) is applied to a copy of the repository in ``<work>/<name>/``, and the quick tier
(``make test``'s tests) runs there, stopping at its first failure: first the tests most likely
to fail (``verif/hdl`` and the soak), then, if the mutant survived them, the rest. The tier
runs once on an unchanged copy first: a mutant counts as killed only by tests that pass
without it. The copy has its own ``build/``, so nothing the main tree built is reused or
disturbed. Writes
``<out>/mutants.md`` and ``mutants.json``: per mutant killed or survived, the test that killed
it, seconds. Exits 1 if any mutant survived.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from bench.builds import REPO
from bench.mutants import MUTANTS

__all__ = ["TierError", "copy_tree", "run_tests", "run_tier", "run_mutant", "baseline", "report",
           "main"]

#: The quick tier in two steps: the likeliest killers first, then the rest.
FIRST = ["verif/hdl", "verif/scripts/test_soak.py"]
STEPS = (FIRST, ["verif", *(f"--ignore={path}" for path in FIRST)])

#: The test that the catalogue still applies: in a mutant's tree, the mutant's own snippet is
#: gone (and so is that of a mutant of the same place), which says nothing of the design.
CATALOGUE_TEST = "verif/scripts/test_mutants.py"


def copy_tree(destination):
    """Copy the repository's files (tracked, and untracked ones git does not ignore) into
    ``destination``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=REPO, capture_output=True, check=True)
    shutil.rmtree(destination, ignore_errors=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


class TierError(RuntimeError):
    """The quick tier could not run (pytest itself failed, no test reported a failure)."""


def run_tests(tree, paths, junit, jobs):
    """Run the quick tier's tests of ``paths`` in ``tree`` until the first failure; returns the
    failed tests' ids (empty when all passed). Raises :class:`TierError` when pytest failed
    without a failed test (a collection error, say)."""
    junit.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [sys.executable, "-m", "pytest", *paths, "-m", "not slow", "-x", "-q",
               "-p", "no:cacheprovider", "-n", str(jobs), "--dist", "worksteal",
               f"--junitxml={junit}", f"--ignore={CATALOGUE_TEST}"]
    result = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    failed = []
    if junit.exists():
        for case in ElementTree.parse(junit).getroot().iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(f"{case.get('classname')}::{case.get('name')}")
    if result.returncode and not failed:
        raise TierError((result.stdout + result.stderr).strip()[-1500:])
    return failed


def run_tier(tree, work, label, jobs):
    """The quick tier in ``tree`` by :data:`STEPS`, up to the first failure: the failed tests
    (empty: all passed)."""
    for step, paths in enumerate(STEPS):
        failed = run_tests(tree, paths, work / f"{label}-{step}.xml", jobs)
        if failed:
            return failed
    return []


def run_mutant(mutant, work, jobs):
    """Apply ``mutant`` to a copy of the tree in ``work`` and run the quick tier there."""
    tree = work / mutant.name
    started = time.perf_counter()
    copy_tree(tree)
    mutant.apply(tree)
    try:
        failed, error = run_tier(tree, work, mutant.name, jobs), None
    except TierError as raised:
        failed, error = [], str(raised)
    shutil.rmtree(tree, ignore_errors=True)
    return {"name": mutant.name, "fault": mutant.fault, "file": mutant.file,
            "killed": bool(failed), "killed_by": failed[:3], "error": error,
            "seconds": time.perf_counter() - started}


def baseline(work, jobs):
    """Run the quick tier on an unchanged copy of the tree: a mutant is killed only by a test
    that passes without it. Raises ``SystemExit`` with the failures otherwise."""
    tree = work / "baseline"
    copy_tree(tree)
    try:
        failed = run_tier(tree, work, "baseline", jobs)
    except TierError as raised:
        failed = [str(raised)]
    shutil.rmtree(tree, ignore_errors=True)
    if failed:
        raise SystemExit("the quick tier fails without a mutant, so no mutant can be judged: "
                         + "; ".join(failed))


def report(results):
    killed = sum(r["killed"] for r in results)
    out = ["# Mutants: the quick tier against realistic bugs", "",
           f"`make mutants`: {len(results)} mutants of `bench/mutants.py`, {killed} killed by "
           f"`make test`'s tests, {len(results) - killed} survived.", "",
           "| mutant | fault | outcome | killed by | seconds |", "|---|---|---|---|---|"]
    for r in results:
        outcome = "killed" if r["killed"] else (
            "**survived**" if not r.get("error") else "**the tier did not run**")
        out.append(f"| `{r['name']}` ({r['file']}) | {r['fault']} | {outcome} | "
                   f"{'<br>'.join(r['killed_by']) or '-'} | {r['seconds']:.0f} |")
    return "\n".join(out) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="pytest workers per mutant")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the run of the quick tier on the unchanged tree first")
    parser.add_argument("--out", default="build/reports")
    parser.add_argument("--work", default="build/mutants")
    args = parser.parse_args(argv)
    known = {m.name: m for m in MUTANTS}
    unknown = sorted(set(args.names) - set(known))
    if unknown:
        parser.error(f"no mutants {', '.join(unknown)}; the catalogue has {', '.join(known)}")
    chosen = [known[n] for n in args.names] if args.names else list(MUTANTS)
    work, out = Path(args.work).resolve(), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    if not args.no_baseline:
        baseline(work, args.jobs)
    results = []
    for mutant in chosen:
        results.append(run_mutant(mutant, work, args.jobs))
        r = results[-1]
        verdict = "killed by " + r["killed_by"][0] if r["killed"] else \
            ("THE TIER DID NOT RUN: " + r["error"][-300:] if r["error"] else "SURVIVED")
        print(f"{r['name']}: {verdict} ({r['seconds']:.0f} s)", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutants.md").write_text(report(results))
    (out / "mutants.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out / 'mutants.md'} and {out / 'mutants.json'}")
    if not all(r["killed"] for r in results):
        raise SystemExit(1)
    return results


if __name__ == "__main__":
    main()
