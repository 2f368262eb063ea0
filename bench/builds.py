"""Generated Verilog and simulator builds, made once per configuration and source, and shared.

The tests, ``make soak``, ``make paper`` and the replay all need the same few artefacts: the
Verilog of a configuration (:func:`verilog`) and a simulator's build of it (:func:`cocotb_build`
for cocotb under Icarus or Verilator, :func:`bench.compiled.harness` for the compiled soak).
Each is made once, into ``build/cache/<kind>/<config>/<key>/``, where ``key`` hashes what the
artefact is made from:

- Verilog: every source file of the generator (``hdl/`` and ``spec/``), Amaranth's version and
  the configuration;
- a simulator build: the Verilog's text, the simulator, its version and its options.

So an unchanged configuration is never generated or compiled twice, in one test session or
across sessions, and an edit of the RTL makes new entries beside the old ones. A per-entry
lock makes concurrent test workers wait for the one that builds instead of building it twice;
an entry is complete once its ``ready`` file exists, so a build that was interrupted is made
again. Of each configuration and kind the :data:`KEEP` newest entries stay.
"""

import contextlib
import fcntl
import functools
import hashlib
import inspect
import shutil
import subprocess
from pathlib import Path

import amaranth
import cocotb

__all__ = ["REPO", "BUILD", "CACHE", "KEEP", "source_key", "cached", "tool_version", "verilog",
           "cocotb_build"]

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build"
CACHE = BUILD / "cache"

#: The generator's sources: what the Verilog of a configuration is made from.
GENERATOR_SOURCES = ("hdl", "spec")


@functools.cache
def source_key():
    """A hash of every file of :data:`GENERATOR_SOURCES` (path and content)."""
    digest = hashlib.sha256()
    for folder in GENERATOR_SOURCES:
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(REPO)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def _key(*parts):
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:16]


@contextlib.contextmanager
def _locked(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


#: Entries kept per configuration and kind: the newest (a session that edits the RTL and one
#: that runs the soak may each use their own).
KEEP = 3


def cached(kind, name, key, make):
    """The folder ``CACHE/kind/name/key``, made by ``make(folder)`` unless it is complete
    already. ``make`` writes into the (empty) folder it is given; when it returns, the entry is
    complete, and the entries of ``name`` beyond the :data:`KEEP` newest are deleted."""
    folder = CACHE / kind / name / key
    ready = folder / "ready"
    if ready.exists():
        return folder
    with _locked(folder.with_suffix(".lock")):
        if ready.exists():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        make(folder)
        ready.touch()
        done = sorted((entry for entry in folder.parent.iterdir()
                       if (entry / "ready").exists()),
                      key=lambda entry: (entry / "ready").stat().st_mtime, reverse=True)
        for stale in done[KEEP:]:
            shutil.rmtree(stale, ignore_errors=True)
    return folder


@functools.cache
def tool_version(tool):
    """What ``tool`` (``"icarus"`` or ``"verilator"``) prints of its version."""
    command = ["iverilog", "-V"] if tool == "icarus" else ["verilator", "--version"]
    result = subprocess.run(command, capture_output=True, text=True)
    return (result.stdout + result.stderr).splitlines()[0] if result.stdout + result.stderr \
        else ""


def verilog(design, params):
    """The Verilog of ``design`` (``"datapath"``, ``"controller"`` or ``"axi_reducer"``) at
    ``params``, with its facts (``<top>.json``) beside it: generated once per configuration and
    generator source."""
    from hdl.generate import (
        AXI_REDUCER_TOP,
        CONTROLLER_TOP,
        DATAPATH_TOP,
        write_axi_reducer,
        write_controller,
        write_datapath,
    )
    write, top = {"datapath": (write_datapath, DATAPATH_TOP),
                  "controller": (write_controller, CONTROLLER_TOP),
                  "axi_reducer": (write_axi_reducer, AXI_REDUCER_TOP)}[design]
    folder = cached(f"verilog-{design}", params.name,
                    _key(source_key(), amaranth.__version__, repr(params)),
                    lambda out: write(params, out))
    return folder / f"{top}.v"


def cocotb_build(simulator, design, params, *, waves=False):
    """The build folder of ``simulator`` (``"icarus"`` or ``"verilator"``) for :func:`verilog`
    of ``design`` at ``params``, ready for cocotb's ``Runner.test``: built once per Verilog
    text and options. ``waves`` builds with waveform dumping."""
    from bench.simulators import build_cocotb
    source = verilog(design, params)
    top = source.stem
    key = _key(simulator, waves, hashlib.sha256(source.read_bytes()).hexdigest(),
               tool_version(simulator), cocotb.__version__, inspect.getsource(build_cocotb),
               (REPO / "hdl" / "waivers.vlt").read_text() if simulator == "verilator" else "")
    name = f"{design}-{params.name}-{simulator}{'-waves' if waves else ''}"
    return cached("cocotb", name, key,
                  lambda out: build_cocotb(simulator, source, top, out, waves=waves))
