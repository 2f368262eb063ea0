"""Project hygiene: the pins in pyproject.toml and requirements.lock agree, and the tests share
their helpers through ``bench/`` only."""

import ast
import re
import tomllib

from bench.simulators import REPO


def test_every_pyproject_pin_is_the_locked_version():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        wanted += extra
    locked = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$",
                             (REPO / "requirements.lock").read_text(), flags=re.M))
    locked = {name.lower().replace("_", "-"): version for name, version in locked.items()}
    for requirement in wanted:
        name, version = requirement.split("==")
        assert locked.get(name.lower()) == version, \
            f"pyproject pins {name}=={version}, requirements.lock has {locked.get(name.lower())}"


def _imports(path):
    """``(line, module, names)`` of every import of a Python file."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.lineno, node.module, tuple(alias.name for alias in node.names)


def test_tests_share_helpers_only_through_bench():
    """No module of the test tree imports another (shared helpers live in ``bench/``), and no
    test builds its own ``amaranth.sim.Simulator`` (``bench.sim.simulate`` runs them all)."""
    wrong = []
    for path in sorted((REPO / "verif").rglob("*.py")):
        where = path.relative_to(REPO)
        for line, module, names in _imports(path):
            if module == "verif" or module.startswith("verif."):
                wrong.append(f"{where}:{line} imports {module}: shared helpers go in bench/")
            if module == "amaranth.sim" and (not names or "Simulator" in names):
                wrong.append(f"{where}:{line} imports amaranth.sim.Simulator: use "
                             f"bench.sim.simulate")
    assert not wrong, "\n".join(wrong)
