"""The configurations the regressions and the Verilog lint run: the default and small ones that
reach corners the default does not (short lines, narrow counters, short pipelines, few regions
and slots)."""

from spec.params import ControllerParams, DatapathParams

__all__ = ["DATAPATH_CONFIGS", "CONTROLLER_CONFIGS"]

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
