"""The configurations the regressions and the Verilog lint run: the default and small ones that
reach corners the default does not (short lines, narrow counters, short pipelines, few regions
and slots). The default (full-size) ones belong to the slow tier (:func:`tiered`)."""

import pytest

from spec.params import ControllerParams, DatapathParams

__all__ = ["DATAPATH_CONFIGS", "CONTROLLER_CONFIGS", "SMALL_CONTROLLER", "full_size", "tiered"]

DATAPATH_CONFIGS = [
    DatapathParams(),                                           # the default: L512_W4_D5
    DatapathParams(line_bits=128, counter_width=3, latency=2),
    DatapathParams(line_bits=64, counter_width=5, latency=1),
]

CONTROLLER_CONFIGS = [
    ControllerParams(),                                                  # the default
    # Four slots: evictions and refills under random traffic.
    ControllerParams(DatapathParams(line_bits=64, counter_width=2, latency=1), regions=4,
                     address_bits=32, queue_depth=4, slots=4),
]

#: The small controller: the soak's first configuration and the quick tier's system test.
SMALL_CONTROLLER = CONTROLLER_CONFIGS[1]


def full_size(params):
    """Whether ``params`` (datapath or controller) has the default's full 512-bit lines."""
    datapath = getattr(params, "datapath", params)
    return datapath.line_bits == DatapathParams().line_bits


def tiered(configs):
    """``configs`` as pytest parameters named by configuration, the full-size ones marked
    ``slow`` (``make test-all`` runs them; ``make test`` the rest)."""
    return [pytest.param(p, id=p.name, marks=[pytest.mark.slow] if full_size(p) else [])
            for p in configs]
