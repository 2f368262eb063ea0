"""The controller bench's line check says where a result line differs from golden: the
bytes of an identity line, the lanes (and their codes) of an aggregated one."""

from types import SimpleNamespace

import numpy as np
import pytest

from bench.controller_bench import ControllerBench
from spec.params import ControllerParams, DatapathParams, Mode

PARAMS = ControllerParams(DatapathParams(line_bits=32, counter_width=2, latency=1), slots=2)


@pytest.mark.parametrize("mode, named", [
    (None, "bytes [1] differ; got [12], golden [0]"),
    (Mode.GBINARY, "GBINARY lanes [10, 11] differ; got [1, 1], golden [0, 0]"),
    (Mode.GTERNARY, "GTERNARY lanes [5] differ; got [3], golden [0]"),
])
def test_a_differing_line_names_its_bytes_or_lanes(mode, named):
    bench = SimpleNamespace(where="L32 seed 5", params=PARAMS)
    golden = np.zeros(PARAMS.datapath.line_bytes, np.uint8)
    got = golden.copy()
    got[1] = 0b0000_1100                    # line bits 10 and 11
    with pytest.raises(AssertionError) as failure:
        ControllerBench.check_line(bench, "result", 0x40, got.tobytes(), golden, mode)
    assert str(failure.value) == f"L32 seed 5: result at 0x40: {named}"
    ControllerBench.check_line(bench, "result", 0x40, golden.tobytes(), golden, mode)
