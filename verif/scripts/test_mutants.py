"""``make mutants``: the catalogue still applies to the code, one edit each, and the runner
refuses names it does not know and reports what each mutant did."""

import pytest

from bench.builds import REPO
from bench.mutants import MUTANTS, Mutant
from scripts import mutants


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_each_mutant_changes_one_place_of_the_rtl(mutant, tmp_path):
    text = mutant.source(REPO)
    assert mutant.file.startswith("hdl/") and mutant.old != mutant.new, mutant.name
    (tmp_path / mutant.file).parent.mkdir(parents=True)
    (tmp_path / mutant.file).write_text(text)
    mutant.apply(tmp_path)
    changed = (tmp_path / mutant.file).read_text()
    assert changed.count(mutant.new) == text.count(mutant.new) + 1, mutant.name


def test_names_are_unique_and_a_stale_snippet_says_so(tmp_path):
    assert len({m.name for m in MUTANTS}) == len(MUTANTS), "two mutants share a name"
    stale = Mutant("stale", "nothing", "hdl/x.py", "gone", "here")
    (tmp_path / "hdl").mkdir()
    (tmp_path / "hdl" / "x.py").write_text("still here\n")
    with pytest.raises(ValueError, match="occurs 0 times in hdl/x.py, not once"):
        stale.apply(tmp_path)


def test_unknown_mutants_are_refused(capsys):
    with pytest.raises(SystemExit):
        mutants.main(["no_such_mutant"])
    assert "no mutants no_such_mutant" in capsys.readouterr().err


def test_the_report_says_killed_or_survived():
    text = mutants.report([
        {"name": "a", "fault": "f", "file": "hdl/a.py", "killed": True,
         "killed_by": ["verif/hdl/test_x.py::test_y"], "seconds": 12.0},
        {"name": "b", "fault": "g", "file": "hdl/b.py", "killed": False, "killed_by": [],
         "seconds": 300.0}])
    assert "2 mutants of `bench/mutants.py`, 1 killed" in text, text
    assert "| killed | verif/hdl/test_x.py::test_y | 12 |" in text, text
    assert "| **survived** | - | 300 |" in text, text
