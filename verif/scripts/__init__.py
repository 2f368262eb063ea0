"""Tests of ``scripts/``."""
