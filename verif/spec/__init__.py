"""Tests of ``spec/``."""
