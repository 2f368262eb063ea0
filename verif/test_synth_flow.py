"""The synthesis flow on a tiny configuration: the report's numbers are the tools' numbers."""

import json

from synth.flow import main


def test_report_numbers_come_from_yosys_and_nextpnr_outputs(tmp_path, capsys):
    main(["--line-bits", "16", "--counter-width", "1", "--latency", "1", "--seeds", "1", "2",
          "--freq", "100", "--out", str(tmp_path)])
    report = json.loads((tmp_path / "synth.json").read_text())
    (design,) = report["designs"]
    folder = tmp_path / "datapath" / "L16_W1_D1"

    cells = json.loads((folder / "stat.json").read_text())["design"]["num_cells_by_type"]
    assert design["cells"]["lut4"] == cells["LUT4"] > 0
    assert design["cells"]["ff"] == cells["TRELLIS_FF"] > 0
    cmos = json.loads((folder / "cmos.json").read_text())["design"]
    assert design["cells"]["generic_transistors"] == cmos["estimated_num_transistors"]

    for run in design["pnr"]:
        pnr = json.loads((folder / f"pnr_seed{run['seed']}.json").read_text())
        assert run["fmax_mhz"] == pnr["fmax"]["clk"]["achieved"] > 0, f"seed {run['seed']}"
        assert run["constraint_mhz"] == pnr["fmax"]["clk"]["constraint"] == 100
    assert [r["seed"] for r in design["pnr"]] == [1, 2]
    table = (tmp_path / "synth.md").read_text()
    assert f"| datapath | L16_W1_D1 | {cells['LUT4']:,} | {cells['TRELLIS_FF']:,} |" in table
    assert "wrote" in capsys.readouterr().out
