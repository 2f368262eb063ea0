"""The SDF slack analysis on hand-made delay files (the flow's test checks it against nextpnr)."""

import pytest

from synth.sta import (
    analyse,
    block_of,
    by_block,
    by_register,
    direct_wires,
    failing,
    parse_sdf,
    register_family,
)


def _cell(kind, instance, body):
    return f'  (CELL\n    (CELLTYPE "{kind}")\n    (INSTANCE {instance})\n{body}  )\n'


def _ff(instance, data_port="DI", setup_ps=100):
    return _cell("TRELLIS_FF", instance,
                 "    (DELAY (ABSOLUTE (IOPATH CLK Q (400:450:500) (400:450:500))))\n"
                 f"    (TIMINGCHECK (SETUPHOLD (posedge {data_port}) (posedge CLK) "
                 f"(0:0:{setup_ps}) (0:0:0)))\n")


def _lut(instance):
    return _cell("TRELLIS_COMB", instance,
                 "    (DELAY (ABSOLUTE (IOPATH A F (200:218:236) (200:218:236))\n"
                 "      (IOPATH B F (200:218:236) (200:218:236))))\n")


def _sdf(wires, cells):
    top = "".join(f"        (INTERCONNECT {a} {b} (0:0:{ps}) (0:0:{ps}))\n"
                  for a, b, ps in wires)
    return ('(DELAYFILE\n  (SDFVERSION "3.0")\n  (CELL\n    (CELLTYPE "top")\n    (INSTANCE )\n'
            f"    (DELAY\n      (ABSOLUTE\n{top}      )\n    )\n  )\n" + "".join(cells) + ")\n")


# Two copies of a register feed a LUT into a third register; a port feeds the LUT as well.
SDF = _sdf(
    [("src_TRELLIS_FF_Q_0/Q", "f_LUT4_Z/A", 1000), ("src_TRELLIS_FF_Q_1/Q", "f_LUT4_Z/B", 700),
     ("in_port/O", "f_LUT4_Z/B", 9000), ("f_LUT4_Z/F", r"dst\$1_TRELLIS_FF_Q/DI", 300),
     ("src_TRELLIS_FF_Q_0/Q", "copy_3_TRELLIS_FF_Q_2/M", 250)],
    [_ff("src_TRELLIS_FF_Q_0"), _ff("src_TRELLIS_FF_Q_1"), _lut("f_LUT4_Z"),
     _ff(r"dst\$1_TRELLIS_FF_Q"), _ff("copy_3_TRELLIS_FF_Q_2", "M", 50)])


def test_required_time_is_the_longest_register_path_plus_setup():
    required = analyse(parse_sdf(SDF))
    # clock-to-Q 0.5 + wire 1.0 + LUT 0.236 + wire 0.3 + setup 0.1; the port is not timed
    time, start = required[("dst$1_TRELLIS_FF_Q", "DI")]
    assert time == pytest.approx(2.136), time
    assert start == "src_TRELLIS_FF_Q_0"
    assert required[("copy_3_TRELLIS_FF_Q_2", "M")][0] == pytest.approx(0.8)
    assert len(required) == 2, sorted(required)


def test_logic_alone_and_wires_alone_bound_the_required_time():
    graph = parse_sdf(SDF)
    logic = analyse(graph, wires=False)[("dst$1_TRELLIS_FF_Q", "DI")][0]
    wires = analyse(graph, cells=False)[("dst$1_TRELLIS_FF_Q", "DI")][0]
    # clock-to-Q 0.5 + LUT 0.236 + setup 0.1; the wires 1.0 + 0.3
    assert logic == pytest.approx(0.836), logic
    assert wires == pytest.approx(1.3), wires
    assert analyse(graph, cells=False)[("copy_3_TRELLIS_FF_Q_2", "M")][0] == pytest.approx(0.25)


def test_registers_group_copies_and_count_failing_endpoints():
    rows = by_register(analyse(parse_sdf(SDF)), period_ns=2.0)
    assert rows == [
        {"register": "dst$*", "endpoints": 1, "failing": 1, "worst_slack_ns": -0.136,
         "worst_from": "src"},
        {"register": "copy_*", "endpoints": 1, "failing": 0, "worst_slack_ns": 1.2,
         "worst_from": "src"}], rows
    assert register_family("state_columns_7_TRELLIS_FF_Q_12") == "state_columns_*"


def test_failing_counts_the_endpoints_slower_than_the_clock():
    required = analyse(parse_sdf(SDF))         # endpoints at 2.136 ns and 0.8 ns
    counts = {period: failing(required, period) for period in (0.5, 1.0, 2.0, 2.2)}
    assert counts == {0.5: 2, 1.0: 1, 2.0: 1, 2.2: 0}, counts


def test_blocks_count_failing_endpoints_by_the_first_levels_of_the_name():
    # One register at the top feeds a register in each of two slices of a pool, over wires of
    # 1.5 and 0.5 ns (clock-to-Q 0.5, setup 0.1): at 2 ns, only slice1's endpoint fails.
    nested = _sdf([("src_TRELLIS_FF_Q/Q", r"pool\.slice1\.t1_TRELLIS_FF_Q/DI", 1500),
                   ("src_TRELLIS_FF_Q/Q", r"pool\.slice0\.t1_TRELLIS_FF_Q/DI", 500)],
                  [_ff("src_TRELLIS_FF_Q"), _ff(r"pool\.slice1\.t1_TRELLIS_FF_Q"),
                   _ff(r"pool\.slice0\.t1_TRELLIS_FF_Q")])
    rows = by_block(analyse(parse_sdf(nested)), period_ns=2.0)
    assert rows == [
        {"block": "pool.slice1", "endpoints": 1, "failing": 1, "worst_slack_ns": -0.1,
         "worst_from": "src"},
        {"block": "pool.slice0", "endpoints": 1, "failing": 0, "worst_slack_ns": 0.9,
         "worst_from": "src"}], rows
    assert block_of("pool.slice2.ops.produce_TRELLIS_FF_Q_3") == "pool.slice2"
    assert block_of("pool.slice2.ops.produce_TRELLIS_FF_Q_3", depth=1) == "pool"
    assert block_of("command_TRELLIS_FF_Q") == "(top)"


def test_direct_wires_are_register_to_register_connections_with_no_logic():
    # Only src_0 -> copy is direct (0.5 + 0.25 + 0.05 ns); the paths through the LUT are not.
    graph = parse_sdf(SDF)
    slow = direct_wires(graph, period_ns=0.7, rows=5)
    assert slow == {"connections": 1, "failing": 1,
                    "worst": [{"from": "src", "to": "copy_*", "ns": 0.8}]}, slow
    fast = direct_wires(graph, period_ns=0.8, rows=5)
    assert fast == {"connections": 1, "failing": 0, "worst": []}, fast


def test_a_combinational_loop_is_an_error():
    looped = _sdf([("src_TRELLIS_FF_Q_0/Q", "f_LUT4_Z/A", 100), ("f_LUT4_Z/F", "g/A", 100),
                   ("g/F", "f_LUT4_Z/B", 100), ("g/F", "dst_TRELLIS_FF_Q/DI", 100)],
                  [_ff("src_TRELLIS_FF_Q_0"), _lut("f_LUT4_Z"), _lut("g"),
                   _ff("dst_TRELLIS_FF_Q")])
    with pytest.raises(ValueError, match="combinational loop"):
        analyse(parse_sdf(looped))
