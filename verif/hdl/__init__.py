"""Tests of ``hdl/``."""
