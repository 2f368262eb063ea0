"""The DDP hook across processes (gloo, ``torch.multiprocessing.spawn``, one spawn for every
scenario): the backends agree bit for bit, a device that cannot count the workers sends every
gradient through FP32, the applied update is the documented rule, any fault of one worker's
device (an error raised, a wrong result) sends every worker to FP32 on the same step with the
replicas identical, and workers bound differently are refused."""

import datetime
import json
import logging
import zlib

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from bench.runtime import RECORD_PROFILE, TiedModel, bind_golden
from driver import DeviceError
from runtime.binding import parameter_groups
from runtime.events import EventLog
from runtime.hook import NeuronFabricHook
from runtime.lowbit import tie_mask
from runtime.profile import parse_profile
from runtime.reducers import CollectiveReducer, DeviceModelReducer, PackedReducer
from spec.params import ControllerParams, DatapathParams

pytestmark = pytest.mark.slow

WORLD = 4
STEPS = 4
RANDOM_ROUNDS = 3
SEED = 2026
VOCAB = 40
# The head exact; the body's layers as :func:`bench.runtime.record_rounds` routes them.
PROFILE = """\
[health]
sample_every = 2
[[route]]
pattern = "head.*"
route = "fp32"
""" + RECORD_PROFILE
AGREEMENT_PARAMS = ControllerParams(DatapathParams(line_bits=128, counter_width=4), regions=4,
                                    address_bits=24)
# W = 2: a line counts at most 2**2 - 1 = 3 contributions, fewer than the 4 workers.
SMALL_PARAMS = ControllerParams(DatapathParams(line_bits=128, counter_width=2), regions=4,
                                address_bits=24)
# The update rule on set gradients: no trip may replace the low-bit update by the FP32 mean.
RULE_PROFILE = """\
[health]
sign_agreement_min = 0.001
sign_readmit_min = 0.001
norm_ratio_max = 1000.0
norm_readmit_max = 1000.0
[[route]]
pattern = "binary"
route = "gbinary"
[[route]]
pattern = "ternary"
route = "gternary"
threshold = 2
"""
RULE_SIZES = {"binary": 300, "ternary": 200}
RULE_STEPS = 3


def _train(make_reducer, params, profile, momentum_of_low_bit=0.0):
    """Parameters after ``STEPS`` steps of DDP with the hook (none when ``make_reducer`` gives
    ``None``: plain DDP), the hook and the binding. The optimizer is SGD, with
    ``momentum_of_low_bit`` on the parameters bound to low-bit routes (plain DDP's stand-in for
    the hook's own momentum)."""
    torch.manual_seed(SEED)
    model = TiedModel(VOCAB)
    events = EventLog()
    binding, device = bind_golden(model, profile, params, WORLD, events)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    hook = NeuronFabricHook(binding, profile, make_reducer(device), events)
    if hook.reducer is not None:
        hook.register(ddp)
    fp32, *low_bit = parameter_groups(model, binding)
    if low_bit:
        low_bit[0]["momentum"] = momentum_of_low_bit
    optimizer = torch.optim.SGD([fp32, *low_bit], lr=0.1)
    data = torch.Generator().manual_seed(SEED + dist.get_rank())
    for _ in range(STEPS):
        tokens = torch.randint(0, VOCAB, (16, 5), generator=data)
        target = torch.randint(0, VOCAB, (16,), generator=data)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(tokens), target)
        loss.backward()
        if hook.reducer is not None:
            hook.observe_loss(loss.item())
        optimizer.step()
    return {n: p.detach().clone() for n, p in model.named_parameters()}, hook, binding


def _compare_rounds(plan, indices, contributions, want, where, mismatches):
    """Reduce this rank's row of ``contributions`` with the collective and the packed
    backends; record lines that differ from ``want``; returns the number of lines compared."""
    for reducer in (CollectiveReducer(), PackedReducer()):
        got = reducer.reduce(plan, indices, contributions[dist.get_rank()])
        for i in np.flatnonzero((got != want).any(axis=1)):
            lanes = np.flatnonzero(np.unpackbits(got[i] ^ want[i], bitorder="little"))
            mismatches.append(f"{where}, {reducer.name} backend, region {plan.index} "
                              f"({plan.route}), line {int(indices[i])}: line bits "
                              f"{lanes[:8].tolist()} differ")
    return len(indices)


def _agreement(rank):
    """The backends trained alike, recorded device rounds replayed through the collective and
    packed backends, random lines (invalid G-Ternary codes included) through all three; the
    packed backend's bytes on the wire."""
    profile = parse_profile(PROFILE)
    results = {"lines": 0, "lanes": 0, "mismatches": []}
    runs, recorder = {}, []

    def device_reducer(device):
        recorder.append(DeviceModelReducer(device, record=True))
        return recorder[-1]
    runs["collective"], _, _ = _train(lambda device: CollectiveReducer(), AGREEMENT_PARAMS,
                                      profile)
    runs["device"], hook, binding = _train(device_reducer, AGREEMENT_PARAMS, profile)
    device_reducer, = recorder
    for number, (region, indices, contributions, want) in enumerate(device_reducer.recorded):
        plan = binding.regions[region]
        lines = _compare_rounds(plan, indices, contributions, want,
                                f"recorded round {number}, rank {rank}, seed {SEED}",
                                results["mismatches"])
        results["lines"] += lines
        results["lanes"] += lines * binding.caps.lanes(plan.route.mode)
    rng = np.random.default_rng(SEED)   # the same on every rank: each takes its own row
    line_bytes = AGREEMENT_PARAMS.datapath.line_bytes
    for round_ in range(RANDOM_ROUNDS):
        for plan in binding.regions:
            indices = rng.choice(plan.lines, size=min(plan.lines, 5), replace=False)
            contributions = rng.integers(0, 256, (WORLD, len(indices), line_bytes),
                                         dtype=np.uint8)
            want = device_reducer.reduce(plan, indices, contributions[rank])
            lines = _compare_rounds(plan, indices, contributions, want,
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
    results["device_traffic"] = dict(hook.device_traffic)
    _, packed, binding = _train(lambda device: PackedReducer(), AGREEMENT_PARAMS, profile)
    results["packed"] = {"gbinary": packed.traffic["gbinary"],
                         "fp32": sum(4 * b.numel for b in binding.parameters
                                     if b.route.kind == "gbinary")}
    return results


def _fallback(rank):
    """A device too narrow for the workers: every route refused, training equal to plain
    DDP."""
    profile = parse_profile(PROFILE)
    with_hook, hook, binding = _train(lambda device: DeviceModelReducer(device), SMALL_PARAMS,
                                      profile)
    plain, _, _ = _train(lambda device: None, SMALL_PARAMS, profile)
    results = {"mismatches": [], "events": [str(e) for e in hook.events],
               "routes": {b.name: str(b.route) for b in binding.parameters},
               "requested": sum(1 for b in binding.parameters if b.requested.low_bit),
               "traffic": dict(hook.traffic)}
    for name, tensor in with_hook.items():
        if not torch.equal(tensor, plain[name]):
            results["mismatches"].append(f"rank {rank}: {name} differs from plain DDP by "
                                         f"{(tensor - plain[name]).abs().max().item():.3g}")
    return results


class _Bucket:
    """What the hook reads of a DDP ``GradBucket``: one bucket holding every parameter."""

    def __init__(self, tensors, gradients):
        self.tensors = tensors
        self.flat = torch.cat([g.reshape(-1) for g in gradients])

    def buffer(self):
        return self.flat

    def parameters(self):
        return self.tensors

    def is_last(self):
        return True


def _gradient(name, rank, step):
    """Worker ``rank``'s gradient of parameter ``name`` at ``step``: set, not trained, so every
    worker can work out every other's."""
    seed = [SEED, list(RULE_SIZES).index(name), rank, step]
    g = torch.randn(RULE_SIZES[name], generator=torch.Generator().manual_seed(
        int(np.random.SeedSequence(seed).generate_state(1)[0])), dtype=torch.float64)
    return g.float()


def _expected(route, p, threshold, ties_read_minus):
    """The documented rule, from every worker's momentum ``p`` (``(workers, d)``): the update.
    G-Binary lanes that tie read -1 where ``ties_read_minus`` (the tie mask's bits), else +1."""
    magnitude = p.abs()
    if route == "gbinary":
        scales = magnitude.mean(dim=1)
        negative = 2 * (p < 0).sum(dim=0)
        majority = torch.where(negative > len(p), -1.0, 1.0)
        majority[(negative == len(p)) & ties_read_minus] = -1.0
    else:
        values = torch.sign(p) * (magnitude >= magnitude.mean(dim=1, keepdim=True))
        scales = torch.stack([m[v != 0].mean() for m, v in zip(magnitude, values)])
        total = values.sum(dim=0)
        majority = torch.where(total >= threshold, 1.0,
                               torch.where(total <= -threshold, -1.0, 0.0))
    return scales.double().mean().float() * majority


def _ties_read_minus(binding, b, step):
    """Which lanes of parameter binding ``b`` read -1 when tied at ``step``: its bits of
    :func:`runtime.lowbit.tie_mask`."""
    line_bytes = AGREEMENT_PARAMS.datapath.line_bytes
    mask = tie_mask(step, b.region, np.arange(b.first_line, b.first_line + b.lines), line_bytes)
    return torch.from_numpy(np.unpackbits(mask, axis=1, bitorder="little").reshape(-1)
                            [:b.numel].astype(bool))


def _update_rule(rank):
    """Set gradients through the hook for ``RULE_STEPS`` steps, on both backends; the applied
    update and this worker's momentum against :func:`_expected`."""
    profile = parse_profile(RULE_PROFILE)
    mismatches, ties = [], 0
    for backend in ("collective", "device"):
        model = torch.nn.Module()
        for name, size in RULE_SIZES.items():
            model.register_parameter(name, torch.nn.Parameter(torch.zeros(size)))
        events = EventLog()
        binding, device = bind_golden(model, profile, AGREEMENT_PARAMS, WORLD, events)
        reducer = CollectiveReducer() if backend == "collective" else DeviceModelReducer(device)
        hook = NeuronFabricHook(binding, profile, reducer, events)
        tensors = [model.get_parameter(name) for name in RULE_SIZES]
        momenta = {name: torch.zeros(WORLD, size) for name, size in RULE_SIZES.items()}
        for step in range(RULE_STEPS):
            gradients = {name: torch.stack([_gradient(name, r, step) for r in range(WORLD)])
                         for name in RULE_SIZES}
            bucket = _Bucket(tensors, [gradients[name][rank] for name in RULE_SIZES])
            got = hook.run(bucket).wait()
            offset = 0
            for name, size in RULE_SIZES.items():
                b = binding.of(model.get_parameter(name))
                where = f"{backend}, step {step}, parameter {name} ({b.route}), rank {rank}"
                if b.route.kind != "g" + name:
                    mismatches.append(f"{where}: bound to {b.route}, not g{name}")
                p = momenta[name] = b.route.momentum * momenta[name] + gradients[name]
                want = _expected(b.route.kind, p, b.route.threshold,
                                 _ties_read_minus(binding, b, step))
                if b.route.kind == "gbinary":
                    ties += int(((p < 0).sum(dim=0) * 2 == WORLD).sum())
                applied = got[offset:offset + size]
                offset += size
                for lane in torch.nonzero(~torch.isclose(applied, want, rtol=1e-5,
                                                         atol=0)).flatten()[:4].tolist():
                    mismatches.append(f"{where}, lane {lane}: applied {applied[lane]:.6g}, "
                                      f"the rule gives {want[lane]:.6g}")
                kept = hook.momenta.get(name)
                for lane in torch.nonzero(~torch.isclose(kept, p[rank], rtol=1e-5, atol=1e-6)
                                          ).flatten()[:4].tolist():
                    mismatches.append(f"{where}, lane {lane}: momentum {kept[lane]:.6g}, "
                                      f"beta * momentum + gradient gives {p[rank][lane]:.6g}")
        trips = [str(e) for e in events.of("trip")]
        mismatches += [f"{backend}, rank {rank}: unexpected {e}" for e in trips]
    return {"mismatches": mismatches, "ties": ties}


class _FailsOnOneRank(CollectiveReducer):
    """A device that goes wrong on rank 1 only, after the round's collective: it raises a
    ``DeviceError`` or an ``OSError``, or answers the result inverted, or with 8 lanes of
    each line flipped."""

    def __init__(self, fault):
        super().__init__()
        self.fault = fault

    def reduce(self, plan, line_indices, lines):
        result = super().reduce(plan, line_indices, lines)
        if dist.get_rank() != 1:
            return result
        if self.fault == "device_error":
            raise DeviceError(f"region {plan.index}: rejected on rank 1")
        if self.fault == "os_error":
            raise OSError(5, "Input/output error", "/dev/cxl/mem0")
        if self.fault == "inverted":
            return ~result
        flipped = result.copy()
        flipped[:, 0] ^= 0xFF                               # 8 lanes of every line
        return flipped


#: The faults of rank 1's device, and the words of the trip reason on rank 0 and on rank 1.
FAULTS = {
    "device_error": ("device error on another worker", "rejected on rank 1"),
    "os_error": ("device error on another worker", "Input/output error"),
    "inverted": ("result lines differ", "result lines differ"),
    "flipped": ("result lines differ", "result lines differ"),
}


def _replica_digest(parameters):
    """A checksum of a worker's parameters, and whether every worker has the same."""
    digest = float(zlib.crc32(b"".join(t.numpy().tobytes() for t in parameters.values())))
    both = torch.tensor([digest, -digest], dtype=torch.float64)
    dist.all_reduce(both, op=dist.ReduceOp.MAX)
    return int(digest), both[0].item() == -both[1].item()


def _one_rank_fails(rank):
    """Each fault of :class:`_FailsOnOneRank` on rank 1: every rank falls back on the same step
    (no deadlock, no crash) and trains as plain DDP with the low-bit parameters' momentum in
    the optimizer; the replicas stay identical."""
    profile = parse_profile(PROFILE)
    out = {}
    for fault in FAULTS:
        with_hook, hook, binding = _train(lambda device, fault=fault: _FailsOnOneRank(fault),
                                          AGREEMENT_PARAMS, profile)
        momentum = {b.route.momentum for b in binding.parameters if b.route.low_bit}.pop()
        plain, _, _ = _train(lambda device: None, AGREEMENT_PARAMS, profile, momentum)
        mismatches = [f"rank {rank}, {fault}: {name} differs from plain DDP by "
                      f"{(tensor - plain[name]).abs().max().item():.3g}"
                      for name, tensor in with_hook.items()
                      if not torch.allclose(tensor, plain[name], rtol=1e-5, atol=1e-7)]
        out[fault] = {"mismatches": mismatches, "replicas": _replica_digest(with_hook),
                      "trips": [(e.step, e.subject, e.reason) for e in hook.events.of("trip")]}
    return out


def _different_profiles(rank):
    """Rank 1 bound with another profile: registering the hook raises on every rank."""
    profile = parse_profile(PROFILE if rank != 1 else PROFILE.replace('"body.0.*"', '"body.*"'))
    try:
        _train(lambda device: CollectiveReducer(), AGREEMENT_PARAMS, profile)
    except ValueError as error:
        return str(error)
    return None


SCENARIOS = {"agreement": _agreement, "fallback": _fallback, "update_rule": _update_rule,
             "one_rank_fails": _one_rank_fails, "different_profiles": _different_profiles}


def _worker(rank, rendezvous, out):
    logging.getLogger("runtime").setLevel(logging.ERROR)   # the events are checked, not shown
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank,
                            world_size=WORLD, timeout=datetime.timedelta(seconds=60))
    results = {name: scenario(rank) for name, scenario in SCENARIOS.items()}
    (out / f"rank{rank}.json").write_text(json.dumps(results))
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """``[{scenario: results}]`` of every rank, from one spawn of ``WORLD`` processes."""
    out = tmp_path_factory.mktemp("ddp")
    mp.spawn(_worker, args=(out / "rendezvous", out), nprocs=WORLD)
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(WORLD)]


def test_the_packed_backend_sends_a_tenth_of_fp32_at_most(ranks):
    """Four workers, G-Binary through the packed backend: the lines it gathers carry a bit
    per lane, against FP32's 32."""
    packed = ranks[0]["agreement"]["packed"]
    assert 0 < packed["gbinary"] <= packed["fp32"] / 10, \
        f"the packed backend sent {packed['gbinary']} bytes in a step for G-Binary " \
        f"parameters of {packed['fp32']} FP32 bytes"


def test_backends_agree_bit_for_bit(ranks):
    for rank, results in enumerate(ranks):
        results = results["agreement"]
        assert not results["mismatches"], "\n".join(results["mismatches"][:20])
        assert results["lines"] > 0, f"rank {rank}: no line compared"
        traffic = results["device_traffic"]
        assert traffic.get("gbinary") and traffic.get("gternary"), \
            f"rank {rank}: a low-bit route carried nothing: {traffic}"
        print(f"rank {rank}: {results['lines']} lines, {results['lanes']} lanes bit-exact")


def test_more_workers_than_capacity_run_on_fp32_like_plain_ddp(ranks):
    capacity = 2 ** SMALL_PARAMS.datapath.counter_width - 1
    for rank, results in enumerate(ranks):
        results = results["fallback"]
        assert not results["mismatches"], "\n".join(results["mismatches"])
        assert set(results["routes"].values()) == {"fp32"}, \
            f"rank {rank}: routes admitted beyond capacity: {results['routes']}"
        refused = [e for e in results["events"] if ": refuse: " in e]
        reason = f"{WORLD} workers exceed the {capacity} contributions"
        assert len(refused) == results["requested"] > 0 and all(reason in e for e in refused), \
            f"rank {rank}: wanted {results['requested']} refusals saying {reason!r}: {refused}"
        assert set(results["traffic"]) == {"fp32"}, \
            f"rank {rank}: traffic off FP32: {results['traffic']}"


def test_the_applied_update_is_the_documented_rule(ranks):
    for rank, results in enumerate(ranks):
        results = results["update_rule"]
        assert not results["mismatches"], "\n".join(results["mismatches"][:20])
        assert results["ties"] > 0, f"rank {rank}: no G-Binary tie exercised"


@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_of_one_ranks_device_sends_every_rank_to_fp32_together(ranks, fault):
    first = ranks[0]["one_rank_fails"][fault]["trips"]
    assert first, f"rank 0 saw no trip for rank 1's {fault}"
    assert {step for step, _, _ in first} == {0}, f"{fault}: caught on steps {first}"
    for rank, results in enumerate(ranks):
        results = results["one_rank_fails"][fault]
        words = FAULTS[fault][rank == 1]
        assert all(words in reason for _, _, reason in results["trips"]), \
            f"{fault}: rank {rank}'s trips do not say {words!r}: {results['trips']}"
        assert not results["mismatches"], "\n".join(results["mismatches"])
        got = [(step, subject) for step, subject, _ in results["trips"]]
        assert got == [(step, subject) for step, subject, _ in first], \
            f"{fault}: rank {rank} tripped {got}, rank 0 {first}"
        digest, identical = results["replicas"]
        assert identical, f"{fault}: rank {rank}'s replica (checksum {digest:#010x}) differs"


def test_workers_bound_differently_are_refused_on_every_rank(ranks):
    for rank, results in enumerate(ranks):
        message = results["different_profiles"]
        assert message and "the workers were bound differently" in message, \
            f"rank {rank}: {message}"
