"""The golden-model benchmark runs and reports a positive rate for every operation."""

import re

from scripts.bench_golden import main


def test_benchmark_reports_every_operation(capsys):
    main(["--lines", "200", "--repeat", "1", "--line-bits", "64", "--counter-width", "3"])
    out = capsys.readouterr().out
    table = out.split("lines/s\n", 1)[1]
    rows = re.findall(r"^(.+?)\s+([\d,]+)$", table, flags=re.M)
    assert len(rows) == 8, out
    assert all(int(rate.replace(",", "")) > 0 for _, rate in rows), out
