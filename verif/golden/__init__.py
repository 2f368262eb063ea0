"""Tests of ``golden/``."""
