"""The DDP hook across processes (gloo on 127.0.0.1, ``torch.multiprocessing.spawn``): the
backends agree bit for bit, and a device that cannot count the workers sends every gradient
through FP32."""

import asyncio
import json
import os
import socket

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
from runtime.reducers import CollectiveReducer, DeviceModelReducer
from spec.params import ControllerParams, DatapathParams

WORLD = 4
STEPS = 6
SEED = 2026
PROFILE = """\
[health]
sample_every = 2
[[route]]
pattern = "head.*"
route = "fp32"
[[route]]
pattern = "body.0.*"
route = "gbinary"
[[route]]
pattern = "body.2.*"
route = "gternary"
threshold = 2
"""


class TiedModel(torch.nn.Module):
    """Token embedding, two layers and a head tied to the embedding."""

    def __init__(self, vocab=40, width=48):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.body = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh(),
                                        torch.nn.Linear(width, width))
        self.head = torch.nn.Linear(width, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        return self.head(self.body(self.embed(tokens).mean(dim=1)))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(rank, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)


def _device(params):
    device = NeuronFabric(GoldenTransport(params), params)
    return device, asyncio.run(read_capabilities(device))


def _train(make_reducer, params, profile):
    """Parameters after ``STEPS`` steps of DDP with the hook, and the hook."""
    device, caps = _device(params)
    torch.manual_seed(SEED)
    model = TiedModel()
    events = EventLog()
    binding = bind(model, profile, caps, WORLD, events)
    asyncio.run(program(device, binding))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    hook = NeuronFabricHook(binding, profile, make_reducer(device), events)
    if hook.reducer is not None:
        hook.register(ddp)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(SEED + dist.get_rank())
    for _ in range(STEPS):
        tokens = torch.randint(0, 40, (16, 5), generator=data)
        target = torch.randint(0, 40, (16,), generator=data)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(tokens), target)
        loss.backward()
        if hook.reducer is not None:
            hook.observe_loss(loss.item())
        optimizer.step()
    return {n: p.detach().clone() for n, p in model.named_parameters()}, hook, binding


def _compare_rounds(collective, plan, indices, contributions, want, where, mismatches):
    """Reduce this rank's row of ``contributions`` with the collective backend; record lines
    that differ from ``want``; returns the number of lines compared."""
    got = collective.reduce(plan, indices, contributions[dist.get_rank()])
    for i in np.flatnonzero((got != want).any(axis=1)):
        lanes = np.flatnonzero(np.unpackbits(got[i] ^ want[i], bitorder="little"))
        mismatches.append(f"{where}, region {plan.index} ({plan.route}), line "
                          f"{int(indices[i])}: line bits {lanes[:8].tolist()} differ")
    return len(indices)


def _agreement_worker(rank, port, out):
    _start(rank, port)
    params = ControllerParams(DatapathParams(line_bits=128, counter_width=4), regions=4,
                              address_bits=24)
    profile = parse_profile(PROFILE)
    results = {"lines": 0, "lanes": 0, "mismatches": []}
    runs = {}
    for backend in ("collective", "device"):
        recorder = []

        def make(device, backend=backend, recorder=recorder):
            if backend == "collective":
                return CollectiveReducer()
            reducer = DeviceModelReducer(device, record=True)
            recorder.append(reducer)
            return reducer
        runs[backend], hook, binding = _train(make, params, profile)
    collective = CollectiveReducer()
    device_reducer, = recorder
    # Recorded rounds of the device backend, replayed through the collective one.
    for number, (region, indices, contributions, want) in enumerate(device_reducer.recorded):
        plan = binding.regions[region]
        lines = _compare_rounds(collective, plan, indices, contributions, want,
                                f"recorded round {number}, rank {rank}, seed {SEED}",
                                results["mismatches"])
        results["lines"] += lines
        results["lanes"] += lines * binding.caps.lanes(plan.route.mode)
    # Random lines, invalid G-Ternary codes included, through both backends.
    rng = np.random.default_rng(SEED)   # the same on every rank: each takes its own row
    for round_ in range(8):
        for plan in binding.regions:
            indices = rng.choice(plan.lines, size=min(plan.lines, 5), replace=False)
            contributions = rng.integers(0, 256, (WORLD, len(indices), params.datapath.line_bytes),
                                         dtype=np.uint8)
            want = device_reducer.reduce(plan, indices, contributions[rank])
            lines = _compare_rounds(collective, plan, indices, contributions, want,
                                    f"random round {round_}, seed {SEED}, rank {rank}",
                                    results["mismatches"])
            results["lines"] += lines
            results["lanes"] += lines * binding.caps.lanes(plan.route.mode)
    for name, tensor in runs["collective"].items():
        differ = (tensor != runs["device"][name]).flatten().nonzero().flatten()
        if len(differ):
            results["mismatches"].append(
                f"rank {rank}, seed {SEED}: after {STEPS} steps parameter {name} differs "
                f"between backends at elements {differ[:8].tolist()}")
    results["traffic"] = dict(hook.traffic)
    results["events"] = [str(e) for e in hook.events]
    (out / f"rank{rank}.json").write_text(json.dumps(results))
    dist.destroy_process_group()


def test_backends_agree_bit_for_bit(tmp_path):
    mp.spawn(_agreement_worker, args=(_free_port(), tmp_path), nprocs=WORLD)
    for rank in range(WORLD):
        results = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert not results["mismatches"], "\n".join(results["mismatches"][:20])
        assert results["lines"] > 0, f"rank {rank}: no line compared"
        assert results["traffic"].get("gbinary") and results["traffic"].get("gternary"), \
            f"rank {rank}: a low-bit route carried nothing: {results['traffic']}"
        print(f"rank {rank}: {results['lines']} lines, {results['lanes']} lanes bit-exact")


def _fallback_worker(rank, port, out):
    _start(rank, port)
    # W = 2: a line counts at most 3 contributions, fewer than the 4 workers.
    params = ControllerParams(DatapathParams(line_bits=128, counter_width=2), regions=4,
                              address_bits=24)
    profile = parse_profile(PROFILE)
    with_hook, hook, binding = _train(lambda device: DeviceModelReducer(device), params,
                                      profile)
    plain, _, _ = _train(lambda device: None, params, profile)
    results = {"mismatches": [], "events": [str(e) for e in hook.events],
               "routes": {b.name: str(b.route) for b in binding.parameters},
               "traffic": dict(hook.traffic)}
    for name, tensor in with_hook.items():
        if not torch.equal(tensor, plain[name]):
            results["mismatches"].append(f"rank {rank}: {name} differs from plain DDP by "
                                         f"{(tensor - plain[name]).abs().max().item():.3g}")
    (out / f"rank{rank}.json").write_text(json.dumps(results))
    dist.destroy_process_group()


def test_more_workers_than_capacity_run_on_fp32_like_plain_ddp(tmp_path):
    mp.spawn(_fallback_worker, args=(_free_port(), tmp_path), nprocs=WORLD)
    for rank in range(WORLD):
        results = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert not results["mismatches"], "\n".join(results["mismatches"])
        assert set(results["routes"].values()) == {"fp32"}, results["routes"]
        refused = [e for e in results["events"] if ": refuse: " in e]
        assert len(refused) == 4 and all("4 workers exceed the 3 contributions" in e
                                         for e in refused), refused
        assert set(results["traffic"]) == {"fp32"}, results["traffic"]
