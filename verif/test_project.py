"""Project hygiene: the pins in pyproject.toml and requirements.lock agree, the docs state
the numbers of their one source, the tests share their helpers through ``bench/`` only, the
block diagram is one, and the functions of ``hdl/`` stay small."""

import ast
import importlib
import pkgutil
import re
import textwrap
import tomllib

from amaranth import Elaboratable

import hdl
import hdl.controller
from bench.simulators import REPO
from spec.params import (
    LATENCY_CHOICES,
    LINE_BITS_CHOICES,
    MAX_COUNTER_WIDTH,
    MAX_REGIONS,
    MAX_SLOTS,
    ControllerParams,
    DatapathParams,
)


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


def _spec_parameter_rows():
    """``{parameter: range text}`` of the parameter table in docs/spec.md."""
    rows = {}
    for line in (REPO / "docs" / "spec.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        names = re.findall(r"`(\w+)`", cells[0])
        if len(cells) == 3 and names:
            rows[names[-1]] = cells[1]
    return rows


def test_the_spec_states_the_parameter_ranges_of_spec_params():
    """docs/spec.md restates the parameter ranges for users; they must be those of
    spec/params.py, the one source."""
    rows = _spec_parameter_rows()
    datapath, controller = DatapathParams(), ControllerParams()
    want = {
        "line_bits": f"{LINE_BITS_CHOICES[0]} to {LINE_BITS_CHOICES[-1]}, a power of two "
                     f"({datapath.line_bits})",
        "counter_width": f"1 to {MAX_COUNTER_WIDTH} ({datapath.counter_width})",
        "latency": f"{LATENCY_CHOICES[0]} to {LATENCY_CHOICES[-1]} ({datapath.latency})",
        "regions": f"1 to {MAX_REGIONS} ({controller.regions})",
        "slots": f"2 to {MAX_SLOTS}, a power of two ({controller.slots})",
    }
    for name, text in want.items():
        assert rows.get(name) == text, \
            f"docs/spec.md says {name}: {rows.get(name)!r}; spec/params.py gives {text!r}"


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


def _diagram(text, indent):
    """The first literal block of ``text`` that draws the controller (it names ``Dispatch``),
    its lines without ``indent``."""
    blocks = re.findall(r"(?:^|\n)((?:" + re.escape(indent) + r"[^\n]*\n|\n)+)", text)
    drawn = [block for block in blocks if "| Dispatch |" in block]
    assert drawn, "no block diagram with a Dispatch box"
    return [line[len(indent):] for line in drawn[0].strip("\n").split("\n")]


def test_one_block_diagram_whose_boxes_are_components():
    """The README, ``docs/controller.md`` and :mod:`hdl.controller` draw the same diagram, and
    every name in it (a word in CamelCase) is a component class of ``hdl/``."""
    readme = (REPO / "README.md").read_text().split("```\n")
    docs = (REPO / "docs" / "controller.md").read_text().split("```\n")
    copies = {
        "README.md": next(block for block in readme if "| Dispatch |" in block),
        "docs/controller.md": next(block for block in docs if "| Dispatch |" in block),
        "hdl/controller.py": "\n".join(_diagram(hdl.controller.__doc__, "    ")) + "\n",
    }
    copies = {where: textwrap.dedent(copy).strip("\n") for where, copy in copies.items()}
    reference = copies["docs/controller.md"]
    for where, copy in copies.items():
        assert copy == reference, \
            f"{where}'s block diagram differs from docs/controller.md's"
    classes = {name for module in pkgutil.iter_modules(hdl.__path__)
               for name, value in vars(importlib.import_module(f"hdl.{module.name}")).items()
               if isinstance(value, type) and issubclass(value, Elaboratable)}
    names = set(re.findall(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b", reference)) - {"DevLoad"}
    assert names <= classes, f"boxes that are no component in hdl/: {sorted(names - classes)}"


def test_hdl_functions_stay_small():
    """No function in ``hdl/`` is longer than 100 lines or takes more than 9 parameters."""
    wrong = []
    for path in sorted((REPO / "hdl").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                arguments = node.args
                count = len(arguments.posonlyargs + arguments.args + arguments.kwonlyargs)
                if length > 100 or count > 9:
                    wrong.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}: "
                                 f"{length} lines, {count} parameters")
    assert not wrong, "functions over 100 lines or 9 parameters:\n" + "\n".join(wrong)
