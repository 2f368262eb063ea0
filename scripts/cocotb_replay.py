"""Recorded reducer rounds replayed on the generated ``nf_controller`` (run by
:func:`scripts.replay.replay_on_rtl`; ``python -m scripts.replay``).

Environment, all set by :func:`scripts.replay.replay_on_rtl`:

- ``NF_FACTS``: the generated ``nf_controller.json`` (of the recording's parameters);
- ``NF_ROUNDS``: the rounds file (:func:`runtime.reducers.save_rounds`);
- ``NF_REPLAY_TRAFFIC``: the host and memory traffic pattern, a key of
  :data:`bench.controller_bench.TRAFFIC`;
- ``NF_REPLAY_OUT``: where the outcome goes (JSON): ``counts`` (the fields of
  :class:`runtime.replay.ReplayCounts`) and ``error``, the mismatch message or ``null``.

The device is :class:`bench.controller_bench.ControllerBench`'s (cocotbext-axi's ``AxiRam``
as device memory, :class:`bench.cxl_host.CxlHost` as the host and the driver's transport);
:func:`runtime.replay.replay` programs it, runs every round and compares. The seed is
cocotb's ``COCOTB_RANDOM_SEED``, logged with the configuration.
"""

import dataclasses
import json
import os
from pathlib import Path

import cocotb
import numpy as np

from bench.controller_bench import ControllerBench
from runtime.reducers import load_rounds
from runtime.replay import ReplayMismatchError, replay


@cocotb.test()
async def replay_rounds(dut):
    """Every round of ``NF_ROUNDS`` on the controller: its result lines bit-exact with the
    recorded ones, and no stray response."""
    path, out = os.environ["NF_ROUNDS"], Path(os.environ["NF_REPLAY_OUT"])
    bench = ControllerBench(dut, np.random.default_rng([cocotb.RANDOM_SEED, 28]),
                            os.environ["NF_REPLAY_TRAFFIC"])
    await bench.start()
    source = f"{path} on the RTL controller, {bench.where}"
    try:
        counts = await replay(bench.device, load_rounds(path), source)
    except ReplayMismatchError as error:
        out.write_text(json.dumps({"counts": dataclasses.asdict(error.counts),
                                   "error": str(error)}, indent=2) + "\n")
        raise
    await bench.finish()
    out.write_text(json.dumps({"counts": dataclasses.asdict(counts), "error": None},
                              indent=2) + "\n")
    dut._log.info("%s: %d rounds, %d lines, %d lanes bit-exact", source, counts.rounds,
                  counts.lines, counts.lanes)
