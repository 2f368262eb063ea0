"""Golden-model throughput: lines per second for each operation, vectorized over many lines.

    python scripts/bench_golden.py [--lines N] [--repeat R] [--line-bits B] [--counter-width W]

Prints one row per operation (best of ``R`` runs over ``N`` lines) and the configuration.
"""

import argparse
import time

import numpy as np

from bench.vectors import random_requests
from golden.aggregate import (
    gbinary_accumulate,
    gbinary_majority,
    gternary_accumulate,
    gternary_gate,
    identity_write,
)
from golden.datapath import run_datapath
from spec.formats import signs_to_lines, ternary_to_lines
from spec.params import DatapathParams


def best_time(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--line-bits", type=int, default=512)
    parser.add_argument("--counter-width", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    params = DatapathParams(line_bits=args.line_bits, counter_width=args.counter_width)
    rng = np.random.default_rng(args.seed)
    count, lanes = args.lines, params.gbinary_lanes

    floats = rng.standard_normal((count, lanes)).astype(np.float32)
    trits = rng.integers(-1, 2, size=(count, params.gternary_lanes))
    binary_lines = signs_to_lines(floats)
    ternary_lines = ternary_to_lines(trits)
    c = rng.integers(0, 8, size=(count, lanes))
    s = rng.integers(-7, 8, size=(count, params.gternary_lanes))
    n = rng.integers(0, params.capacity + 1, size=count)
    enables = rng.random((count, params.line_bytes)) < 0.5
    requests = random_requests(params, rng, min(count, 20_000))

    cases = {
        "pack signs (float32 -> G-Binary lines)": (count, lambda: signs_to_lines(floats)),
        "pack ternary (int -> G-Ternary lines)": (count, lambda: ternary_to_lines(trits)),
        "G-Binary accumulate": (count, lambda: gbinary_accumulate(c, n, binary_lines,
                                                                  params.capacity)),
        "G-Binary majority read-back": (count, lambda: gbinary_majority(c, n)),
        "G-Ternary accumulate": (count, lambda: gternary_accumulate(s, n, ternary_lines,
                                                                    params.capacity)),
        "G-Ternary gated read-back": (count, lambda: gternary_gate(s, 3)),
        "identity write with byte enables": (count, lambda: identity_write(
            binary_lines, ternary_lines, enables)),
        "datapath model (mixed requests)": (len(requests.mode),
                                            lambda: run_datapath(params, requests)),
    }
    print(f"configuration {params.name}, {count} lines, best of {args.repeat}, seed {args.seed}")
    print(f"{'operation':42s} {'lines/s':>14s}")
    for name, (lines, fn) in cases.items():
        print(f"{name:42s} {lines / best_time(fn, args.repeat):14,.0f}")


if __name__ == "__main__":
    main()
