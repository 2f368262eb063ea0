"""Fixtures of the runtime's tests."""

import datetime

import pytest
import torch
import torch.distributed as dist


@pytest.fixture
def one_worker(tmp_path):
    """A gloo process group of this process alone (rendezvous through a file in
    ``tmp_path``), destroyed after the test."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0,
                            world_size=1, timeout=datetime.timedelta(seconds=60))
    yield
    dist.destroy_process_group()
