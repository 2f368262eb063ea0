"""``make train``'s runs launched as users launch them: ``torchrun`` on one host, and as two
nodes on this machine (``--nnodes 2``, c10d rendezvous on the loopback address), each with the
same results as the spawn launcher, bit for bit; the NCCL path where a GPU exists."""

import json
import socket
import subprocess
import sys

import pytest
import torch

from bench.builds import REPO
from scripts import train

pytestmark = pytest.mark.slow

ARGS = ["--steps", "8", "--tasks", "digits", "--runs", "fp32", "gbinary", "--seeds", "1",
        "--overhead-steps", "0"]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _figures(folder):
    """Per run of digits: its losses and its test accuracies."""
    results = json.loads((folder / "training.json").read_text())["digits"]
    return {name: (r["loss"], r["accuracy"]) for name, r in train.runs_of(results).items()}


def _run(commands, folder):
    """Run ``commands`` at once (each a torchrun), wait for all; their output on failure."""
    started = [subprocess.Popen(command + ["--out", str(folder)], cwd=REPO, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
               for command in commands]
    outputs = [process.communicate(timeout=600)[0] for process in started]
    assert all(p.returncode == 0 for p in started), "\n".join(o[-2000:] for o in outputs)


@pytest.fixture(scope="module")
def spawned(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spawn")
    train.main(ARGS + ["--workers", "2", "--out", str(folder)])
    return _figures(folder)


def test_torchrun_on_one_host_trains_as_spawn_does(spawned, tmp_path):
    _run([TORCHRUN + ["--standalone", "--nproc-per-node", "2", "-m", "scripts.train", *ARGS]],
         tmp_path)
    assert _figures(tmp_path) == spawned, "torchrun on one host differs from the spawn launcher"


def test_two_nodes_on_the_loopback_train_as_spawn_does(spawned, tmp_path):
    rendezvous = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                  "--rdzv-endpoint", f"127.0.0.1:{_free_port()}", "--rdzv-id", "nf-two-nodes"]
    _run([TORCHRUN + rendezvous + ["--node-rank", str(node), "-m", "scripts.train", *ARGS]
          for node in (0, 1)], tmp_path)
    assert _figures(tmp_path) == spawned, "two nodes differ from the spawn launcher"


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="NCCL here needs two CUDA GPUs")
def test_nccl_trains_as_gloo_does_within_rounding(spawned, tmp_path):
    _run([TORCHRUN + ["--standalone", "--nproc-per-node", "2", "-m", "scripts.train", *ARGS,
                      "--backend", "nccl"]], tmp_path)
    for name, (losses, _) in _figures(tmp_path).items():
        assert losses == pytest.approx(spawned[name][0], rel=1e-3), name
