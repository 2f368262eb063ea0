"""Tests of ``synth/``."""
