"""Tests of ``driver/``."""
