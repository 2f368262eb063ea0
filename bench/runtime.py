"""Shared pieces of the runtime's tests, ``make train`` and ``python -m scripts.replay``: a
golden device read through its capability registers, a model bound and programmed on it, a
small model with a tied head, and the recording of a small DDP run's reducer rounds."""

import asyncio
import datetime
import json
import logging
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from driver import NeuronFabric
from golden.transport import GoldenTransport
from runtime.binding import bind, program
from runtime.capabilities import read_capabilities
from runtime.events import EventLog
from runtime.hook import NeuronFabricHook
from runtime.profile import parse_profile
from runtime.reducers import CollectiveReducer, DeviceModelReducer, save_rounds
from spec.params import ControllerParams, DatapathParams

__all__ = ["golden_device", "bind_golden", "TiedModel", "RECORD_PARAMS", "RECORD_PROFILE",
           "RECORD_SEED", "record_rounds"]


def golden_device(params):
    """``(device, caps)``: a :class:`driver.NeuronFabric` over a fresh golden device model of
    ``params`` (:class:`golden.transport.GoldenTransport`, its ``transport``) and the
    capabilities read from its registers."""
    device = NeuronFabric(GoldenTransport(params), params)
    return device, asyncio.run(read_capabilities(device))


def bind_golden(model, profile, params, world_size, events):
    """``(binding, device)``: ``model`` bound by ``profile`` for ``world_size`` workers on a
    fresh golden device of ``params`` (decisions to ``events``), its regions programmed."""
    device, caps = golden_device(params)
    binding = bind(model, profile, caps, events, world_size)
    asyncio.run(program(device, binding))
    return binding, device


class TiedModel(torch.nn.Module):
    """Tokens to a class: an ``embed``-ding (averaged over the tokens), a ``body`` of two
    layers (``body.0``, ``body.2``) and a ``head`` whose weight is the embedding's."""

    def __init__(self, vocab=40, width=48):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.body = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh(),
                                        torch.nn.Linear(width, width))
        self.head = torch.nn.Linear(width, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        return self.head(self.body(self.embed(tokens).mean(dim=1)))


#: The device of :func:`record_rounds`: 64-bit lines (64 G-Binary or 32 G-Ternary lanes),
#: counters for 7 contributions, four on-chip slots (a round's lines are evicted and filled
#: again between one rank's contributions and the next).
RECORD_PARAMS = ControllerParams(DatapathParams(line_bits=64, counter_width=3, latency=1),
                                 regions=4, address_bits=20, queue_depth=4, slots=4)

#: The routes of :func:`record_rounds`: one G-Binary and one G-Ternary region.
RECORD_PROFILE = """\
[[route]]
pattern = "body.0.*"
route = "gbinary"
[[route]]
pattern = "body.2.*"
route = "gternary"
threshold = 2
"""

#: The seed of the model, the data and the order of :func:`record_rounds`.
RECORD_SEED = 2028


def _record_worker(rank, world, rendezvous, path, steps, seed, params, out):
    """One worker of :func:`record_rounds`: ``steps`` DDP steps of
    :class:`TiedModel` with the hook on the device-model backend recording;
    every recorded round also reduced by the collective backend and compared. Rank 0 saves the
    rounds to ``path``; every rank writes its comparison to ``out/rank<rank>.json``."""
    logging.getLogger("runtime").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=60))
    torch.manual_seed(seed)
    model = TiedModel()
    vocab = model.embed.num_embeddings
    profile = parse_profile(RECORD_PROFILE)
    binding, device = bind_golden(model, profile, params, world, EventLog())
    reducer = DeviceModelReducer(device, record=True)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    hook = NeuronFabricHook(binding, profile, reducer, EventLog())
    hook.register(ddp)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(seed + rank)
    for _ in range(steps):
        tokens = torch.randint(0, vocab, (16, 5), generator=data)
        target = torch.randint(0, vocab, (16,), generator=data)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(tokens), target)
        loss.backward()
        hook.observe_loss(loss.item())
        optimizer.step()
    collective, lines, mismatches = CollectiveReducer(), 0, []
    for number, (index, indices, contributions, want) in enumerate(reducer.recorded):
        got = collective.reduce(binding.regions[index], indices, contributions[rank])
        for i in np.flatnonzero((got != want).any(axis=1)):
            mismatches.append(f"round {number}, region {index}, line {int(indices[i])}: the "
                              f"collective backend gave {got[i].tolist()}, the device model "
                              f"{want[i].tolist()} (rank {rank}, seed {seed})")
        lines += len(indices)
    if rank == 0:
        save_rounds(path, binding.regions, reducer.recorded, params)
    (out / f"rank{rank}.json").write_text(json.dumps({
        "rounds": len(reducer.recorded), "lines": lines, "mismatches": mismatches,
        "routes": sorted({str(binding.regions[i].route) for i, *_ in reducer.recorded})}))
    dist.destroy_process_group()


def record_rounds(path, *, workers=4, steps=2, seed=RECORD_SEED, params=RECORD_PARAMS):
    """Record the rounds of ``steps`` DDP steps of ``workers`` worker processes (gloo) with
    the hook, on a golden device of ``params`` through the device-model backend, into the
    ``.npz`` file ``path`` (with ``params``). Returns what rank 0 saw: ``rounds``, result
    ``lines`` also reduced by the collective backend, the ``routes`` recorded and the
    ``mismatches`` between the two backends on every rank (empty: bit-exact)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        mp.spawn(_record_worker, args=(workers, scratch / "rendezvous", path, steps, seed,
                                       params, scratch), nprocs=workers)
        ranks = [json.loads((scratch / f"rank{r}.json").read_text()) for r in range(workers)]
    return dict(ranks[0], workers=workers, steps=steps, seed=seed,
                mismatches=[m for r in ranks for m in r["mismatches"]])
