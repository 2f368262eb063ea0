"""The hook's health decisions inside DDP, in one process (gloo, one worker): a faulty reducer
is caught by the sampled comparison, the parameter falls back, cools down and is re-admitted;
a non-finite gradient is never hidden; Severe DevLoad backs off; a run stopped and resumed
from the hook's state ends with the same weights."""

import asyncio
import copy
import threading

import numpy as np
import pytest
import torch

from bench.runtime import bind_golden
from driver import NeuronFabric
from golden.transport import GoldenTransport
from runtime.binding import parameter_groups
from runtime.events import EventLog
from runtime.hook import NeuronFabricHook, compare
from runtime.profile import parse_profile
from runtime.reducers import (
    CollectiveReducer,
    DeviceModelReducer,
    FaultyReducer,
    load_rounds,
    load_rounds_params,
    save_rounds,
)
from runtime.replay import replay
from spec.cxl import DevLoad
from spec.params import ControllerParams, DatapathParams

PARAMS = ControllerParams(DatapathParams(line_bits=64, counter_width=3), regions=4,
                          address_bits=20)
PROFILE = """\
[health]
sample_every = 1
cooldown_steps = 2
readmit_after = 2
sign_agreement_min = 0.4
sign_readmit_min = 0.5
devload_backoff_steps = 2
[[route]]
pattern = "0.weight"
route = "gbinary"
momentum = 0.0
"""



def _run(reducer_of, steps, between=lambda step, model, hook: None, profile=PROFILE,
         overlap=True, **ddp_options):
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Linear(16, 4))
    events = EventLog()
    profile = parse_profile(profile)
    binding, device = bind_golden(model, profile, PARAMS, 1, events)
    ddp = torch.nn.parallel.DistributedDataParallel(model, **ddp_options)
    hook = NeuronFabricHook(binding, profile, reducer_of(device), events, overlap=overlap)
    hook.trace = []
    hook.register(ddp)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(6)
    for step in range(steps):
        between(step, model, hook)
        optimizer.zero_grad()
        x = torch.randn(32, 16, generator=data)
        loss = ddp(x).square().mean()
        loss.backward()
        hook.observe_loss(loss.item())
        optimizer.step()
    routes = [route for _, name, route in hook.trace if name == "0.weight"]
    hook.weights = [p.detach().clone() for p in model.parameters()]
    return routes, events, hook


def test_a_faulty_reducer_trips_falls_back_and_is_readmitted(one_worker):
    reducer = FaultyReducer({3, 4, 5})
    sent = []   # bytes the reducer had sent before each step

    def between(step, model, hook):
        reducer.hook = hook
        sent.append(reducer.sent)
    routes, events, _ = _run(lambda device: reducer, 10, between)
    # Steps 0-2 healthy; 3 caught at once (FP32 mean applied); cool-down to step 6; probation
    # samples at 6 and 7 pass; re-admitted from step 8.
    want = ["gbinary"] * 3 + ["fp32"] * 5 + ["gbinary"] * 2
    assert routes == want, f"routes by step {routes}, wanted {want}\n" + \
        "\n".join(map(str, events))
    decisions = [(e.step, e.decision) for e in events if e.subject == "0.weight"
                 and e.step is not None]
    assert decisions == [(3, "trip"), (6, "probation"), (7, "readmit")], \
        f"decisions on 0.weight {decisions}"
    reason = events.of("trip")[0].reason
    assert "agrees with a worker's own contribution on 0.00" in reason, f"trip reason: {reason}"
    # Sampled every step, but in cool-down (steps 4 and 5) nothing is reduced low-bit; on
    # probation (6, 7) the samples are.
    per_step = np.diff(sent).tolist()
    assert per_step[4:6] == [0, 0] and all(per_step[6:8]), \
        f"bytes the reducer sent by step {per_step}: cool-down must not be shadow-reduced"


def test_a_fault_off_the_sampling_grid_is_caught_on_its_step(one_worker):
    """Results inverted from step 3, where no comparison with FP32 is sampled (every 10th
    step): the check of every result catches it on step 3 itself, and the FP32 mean is
    applied instead of the inverted update."""
    reducer = FaultyReducer({3, 4, 5})

    def between(step, model, hook):
        reducer.hook = hook
    routes, events, hook = _run(lambda device: reducer, 5, between,
                                PROFILE.replace("sample_every = 1", "sample_every = 10"))
    assert routes == ["gbinary"] * 3 + ["fp32"] * 2, f"routes by step {routes}"
    assert [e.step for e in events.of("trip")] == [3], [str(e) for e in events]


def test_a_non_finite_gradient_takes_fp32_and_reaches_the_optimizer(one_worker):
    seen = {}

    def between(step, model, hook):
        if step == 1:
            model[0].weight.register_hook(lambda g: g.index_put((torch.tensor([0]),
                                                                 torch.tensor([0])),
                                                                torch.tensor(float("inf"))))
        if step == 2:
            seen["grad"] = model[0].weight.grad.clone()
    routes, events, hook = _run(lambda device: CollectiveReducer(), 3, between)
    assert routes[1] == "fp32", routes
    trip, = [e for e in events.of("trip") if e.step == 1]
    assert "non-finite gradient" in trip.reason, trip
    assert not torch.isfinite(seen["grad"]).all(), "the infinite gradient was hidden"


def test_severe_devload_backs_off_to_fp32(one_worker):
    def between(step, model, hook):
        hook.reducer.fabric.transport.dev_load = DevLoad.SEVERE if step == 1 else DevLoad.LIGHT
    routes, events, _ = _run(lambda device: DeviceModelReducer(device), 6, between)
    # Seen at step 1 (the hook reads DevLoad before reducing): FP32 for steps 2 and 3.
    assert routes == ["gbinary", "gbinary", "fp32", "fp32", "gbinary", "gbinary"], routes
    assert [(e.step, e.decision) for e in events.of("fallback")] == [(1, "fallback")]


def test_recorded_rounds_replay_on_a_fresh_device(one_worker, tmp_path):
    """Saved rounds hold all a replay needs: the region, the lines, every rank's
    contributions, the device's parameters; a fresh device given them reads back the
    recorded results."""
    recorders = []

    def make(device):
        recorders.append(DeviceModelReducer(device, record=True))
        return recorders[-1]
    _, _, hook = _run(make, 3)
    path = tmp_path / "rounds.npz"
    save_rounds(path, hook.binding.regions, recorders[0].recorded, PARAMS)
    rounds = load_rounds(path)
    assert len(rounds) == len(recorders[0].recorded) == 3, len(rounds)
    assert load_rounds_params(path) == PARAMS, load_rounds_params(path)
    fabric = NeuronFabric(GoldenTransport(PARAMS), PARAMS)
    counts = asyncio.run(replay(fabric, rounds, str(path)))
    assert (counts.rounds, counts.lines) == (3, sum(len(r[2]) for r in rounds)), counts


def test_a_comparison_without_evidence_is_no_sample(one_worker):
    """A zero gradient on a sampled step leaves no lane non-zero in both results: no
    evidence, so no sign test and no trip."""
    zero = torch.zeros(8)
    agreement, ratio, cosine = compare(zero, torch.linspace(-1, 1, 8))
    assert (agreement, ratio, cosine) == (None, 0.0, 0.0), \
        f"compare of a zero update gave {(agreement, ratio, cosine)}"

    def between(step, model, hook):
        if step == 2:
            model[0].weight.register_hook(torch.zeros_like)
    routes, events, _ = _run(lambda device: CollectiveReducer(), 4, between)
    assert routes == ["gbinary"] * 4, f"routes by step {routes}\n" + "\n".join(map(str, events))
    assert not events.of("trip"), [str(e) for e in events.of("trip")]


def _resumable(reducer_of, steps, saved=None):
    """``(weights, state)`` after ``steps`` steps of :func:`_run`'s model, started from
    ``saved`` (the model's, the optimizer's and the hook's state) when given."""
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Linear(16, 4))
    events, profile = EventLog(), parse_profile(PROFILE.replace("momentum = 0.0", ""))
    binding, device = bind_golden(model, profile, PARAMS, 1, events)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    hook = NeuronFabricHook(binding, profile, reducer_of(device), events)
    hook.register(ddp)
    optimizer = torch.optim.SGD(parameter_groups(model, binding, momentum=0.9), lr=0.05)
    data = torch.Generator().manual_seed(6)
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        hook.load_state_dict(saved["hook"])
        data.set_state(saved["data"])
    for _ in range(steps):
        optimizer.zero_grad()
        loss = ddp(torch.randn(32, 16, generator=data)).square().mean()
        loss.backward()
        hook.observe_loss(loss.item())
        optimizer.step()
    state = {"model": copy.deepcopy(model.state_dict()),
             "optimizer": copy.deepcopy(optimizer.state_dict()),
             "hook": copy.deepcopy(hook.state_dict()), "data": data.get_state()}
    return [p.detach().clone() for p in model.parameters()], state


def test_a_resumed_run_ends_with_the_same_weights(one_worker):
    """Five steps, saved, five more in a fresh model, optimizer and hook, against ten steps in
    one go: the same weights, bit for bit (the momenta, the monitor and the step carried)."""
    through, _ = _resumable(lambda device: CollectiveReducer(), 10)
    _, saved = _resumable(lambda device: CollectiveReducer(), 5)
    assert saved["hook"]["step"] == 5 and saved["hook"]["momenta"], saved["hook"].keys()
    resumed, _ = _resumable(lambda device: CollectiveReducer(), 5, saved)
    for index, (a, b) in enumerate(zip(through, resumed)):
        assert torch.equal(a, b), f"parameter {index} differs after the resume by " \
                                  f"{(a - b).abs().max().item():.3g}"


def test_a_binding_for_other_workers_is_refused_at_register(one_worker):
    model = torch.nn.Sequential(torch.nn.Linear(16, 16))
    events, profile = EventLog(), parse_profile(PROFILE)
    binding, device = bind_golden(model, profile, PARAMS, 3, events)
    hook = NeuronFabricHook(binding, profile, CollectiveReducer(), events)
    with pytest.raises(ValueError, match="the binding is for 3 workers, the process group "
                                         "has 1: bind with world_size=1"):
        hook.register(torch.nn.parallel.DistributedDataParallel(model))


def test_a_parameter_added_after_binding_names_itself(one_worker):
    model = torch.nn.Sequential(torch.nn.Linear(16, 16))
    events, profile = EventLog(), parse_profile(PROFILE)
    binding, device = bind_golden(model, profile, PARAMS, 1, events)
    model.add_module("late", torch.nn.Linear(16, 2))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    hook = NeuronFabricHook(binding, profile, CollectiveReducer(), events)
    hook.register(ddp)
    with pytest.raises(RuntimeError, match="parameter late.(weight|bias) was not bound"):
        ddp(torch.randn(4, 16)).sum().backward()


def test_each_event_is_logged_by_one_worker_only(one_worker, caplog):
    with caplog.at_level("INFO", logger="runtime"):
        EventLog().record(1, "x", "trip", "logged by rank 0")
        EventLog(log_rank=1).record(1, "x", "trip", "kept, not logged, on rank 0")
    assert [r.message for r in caplog.records] == ["step 1: x: trip: logged by rank 0"], \
        [r.message for r in caplog.records]


def test_a_loss_spike_undoes_the_update_that_led_to_it(one_worker):
    """Weights corrupted after step 3's update (scaled 30x, as a wrong result applied would)
    make step 4's loss spike: the guard puts back the weights, their optimizer state and the
    hook's momenta of before step 3's update, step 4 applies nothing, the learning rate set
    meanwhile stays, and the next loss is back to normal; unguarded, the corruption stays."""
    def train(guarded):
        torch.manual_seed(5)
        model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Linear(16, 4))
        events = EventLog()
        profile = parse_profile(PROFILE.replace("[health]\n", "[health]\nloss_window = 3\n")
                                .replace("momentum = 0.0", "momentum = 0.5"))
        binding, _ = bind_golden(model, profile, PARAMS, 1, events)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        hook = NeuronFabricHook(binding, profile, CollectiveReducer(), events)
        hook.register(ddp)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
        if guarded:
            hook.guard(optimizer)
        data, before, losses = torch.Generator().manual_seed(6), [], []
        for step in range(7):
            if step == 4:
                optimizer.param_groups[0]["lr"] = 0.04   # a scheduler's, say
                with torch.no_grad():
                    model[1].weight.mul_(30)
            before.append(([p.detach().clone() for p in model.parameters()],
                           {i: s["momentum_buffer"].clone() for i, s in
                            optimizer.state_dict()["state"].items()},
                           {k: v.clone() for k, v in hook.momenta.items()}))
            optimizer.zero_grad()
            loss = ddp(torch.randn(32, 16, generator=data)).square().mean()
            loss.backward()
            losses.append(hook.observe_loss(loss.item()))
            optimizer.step()
            if step == 4:
                after = ([p.detach().clone() for p in model.parameters()],
                         {i: s["momentum_buffer"].clone() for i, s in
                          optimizer.state_dict()["state"].items()},
                         {k: v.clone() for k, v in hook.momenta.items()},
                         optimizer.param_groups[0]["lr"])
        return before, after, losses, events

    before, after, losses, events = train(guarded=True)
    assert [(e.step, e.subject) for e in events.of("undo")] == [(4, "*")], \
        [str(e) for e in events]
    weights, buffers, momenta, lr = after
    for index, (got, want) in enumerate(zip(weights, before[3][0])):
        assert torch.equal(got, want), f"parameter {index} after the undo differs from before " \
                                       f"step 3's update by {(got - want).abs().max().item():.3g}"
    assert buffers.keys() == before[3][1].keys() and all(
        torch.equal(buffers[i], before[3][1][i]) for i in buffers), \
        "the optimizer's momentum buffers are not those of before step 3's update"
    assert momenta.keys() == before[3][2].keys() == {"0.weight"} and torch.equal(
        momenta["0.weight"], before[3][2]["0.weight"]), \
        "the hook's momenta are not those of before step 3's gradient"
    assert lr == 0.04, f"the undo changed the learning rate to {lr}"
    assert losses[5] < 2 * max(losses[:4]), f"losses by step {losses}: not back after the undo"
    _, (unguarded, *_), plain_losses, plain_events = train(guarded=False)
    assert not plain_events.of("undo") and plain_events.of("trip"), \
        [str(e) for e in plain_events]
    assert not torch.equal(unguarded[2], before[3][0][2]), "unguarded, nothing is undone"
    assert plain_losses[5] > 2 * max(plain_losses[:4]), f"losses unguarded {plain_losses}"


def test_the_hook_thread_changes_no_route_no_event_and_no_weight(one_worker):
    """Ten steps with a fault on steps 3-5, a bucket per parameter (FP32 ones and a low-bit
    one), the buckets' work on the hook's thread (overlap) and on DDP's: the low-bit bucket is
    reduced on the hook's thread only with overlap, and routes, decisions and weights are the
    same, bit for bit."""
    def run(overlap):
        reducer, threads = FaultyReducer({3, 4, 5}), set()
        reduce = reducer.reduce

        def reduce_on_record(*args):
            threads.add(threading.current_thread().name)
            return reduce(*args)
        reducer.reduce = reduce_on_record

        def between(step, model, hook):
            reducer.hook = hook
        out = _run(lambda device: reducer, 10, between, overlap=overlap, bucket_cap_mb=1e-6)
        singles = sum(len(key) == 1 for key in out[2]._buckets)   # after DDP's first step
        assert singles == 4, f"{singles} buckets of one parameter, wanted 4"
        return out, threads
    ((routes, events, hook), threads), ((plain_routes, plain_events, plain), plain_threads) = \
        run(True), run(False)
    assert threads == {"neuron-fabric-hook"} and plain_threads == {"MainThread"}, \
        f"reduced on threads {threads} with overlap, {plain_threads} without"
    assert routes == plain_routes, f"routes with the thread {routes}, without {plain_routes}"
    assert list(map(str, events)) == list(map(str, plain_events)), \
        "\n".join(map(str, events)) + "\n--- without the thread ---\n" + \
        "\n".join(map(str, plain_events))
    for index, (a, b) in enumerate(zip(hook.weights, plain.weights)):
        assert torch.equal(a, b), f"parameter {index} differs by {(a - b).abs().max().item():.3g}"


def test_overlap_refuses_ddp_that_finds_unused_parameters(one_worker):
    model = torch.nn.Sequential(torch.nn.Linear(16, 16))
    events, profile = EventLog(), parse_profile(PROFILE)
    binding, _ = bind_golden(model, profile, PARAMS, 1, events)
    ddp = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    with pytest.raises(ValueError, match="make the hook with overlap=False"):
        NeuronFabricHook(binding, profile, CollectiveReducer(), events).register(ddp)
    NeuronFabricHook(binding, profile, CollectiveReducer(), events, overlap=False).register(ddp)
