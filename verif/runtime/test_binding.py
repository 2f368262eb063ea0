"""Model binding and admission: routes per parameter, tied parameters, refusals with reasons,
and regions the device applies (``docs/spec.md`` sections 5 and 8)."""

import asyncio

import pytest
import torch

from bench.runtime import TiedModel, golden_device
from runtime.binding import bind, parameter_groups, program
from runtime.events import EventLog
from runtime.profile import parse_profile
from spec.params import ControllerParams, DatapathParams

PARAMS = ControllerParams(DatapathParams(line_bits=64, counter_width=3), regions=4,
                          address_bits=20)

PROFILE = """\
[[route]]
pattern = "head.*"
route = "fp32"
[[route]]
pattern = "body.0.*"
route = "gternary"
threshold = 2
[[route]]
pattern = "*"
route = "gbinary"
"""


def _setup(params=PARAMS, profile=PROFILE, world=4, model=None):
    device, caps = golden_device(params)
    events = EventLog()
    binding = bind(model or TiedModel(vocab=50, width=40), parse_profile(profile), caps, events,
                   world)
    return binding, events, device, device.transport, caps


def test_routes_per_parameter_and_tied_parameters_on_one_route():
    binding, events, *_ = _setup()
    routes = {b.names: str(b.route) for b in binding.parameters}
    assert routes == {
        ("embed.weight", "head.weight"): "fp32",
        ("body.0.weight",): "gternary(T=2)", ("body.0.bias",): "gternary(T=2)",
        ("body.2.weight",): "gbinary", ("body.2.bias",): "gbinary",
    }, f"routes by parameter: {routes}"
    tie, = events.of("tie")
    assert tie.subject == "embed.weight" and "one route for all: fp32" in tie.reason, \
        f"the tie event names {tie.subject!r}: {tie}"


def test_lines_and_regions_are_applied_by_the_device():
    binding, events, device, transport, caps = _setup()
    asyncio.run(program(device, binding))
    assert transport.device.regions[:len(binding.regions)] == binding.device_regions()
    for b in binding.parameters:
        if b.route.low_bit:
            lanes = caps.lanes(b.route.mode)
            assert b.lines == -(-b.numel // lanes), f"{b.name}: {b.lines} lines"
            plan = binding.regions[b.region]
            assert plan.route == b.route and b.first_line + b.lines <= plan.lines, \
                f"{b.name} ({b.route}) lines {b.first_line}+{b.lines} outside region " \
                f"{plan.index} ({plan.route}, {plan.lines} lines)"
    expected = [p.region.expected for p in binding.regions]
    assert expected == [binding.world_size] * len(binding.regions), \
        f"EXPECTED {expected} for {binding.world_size} workers"
    kinds = {p.route.kind for p in binding.regions}
    assert kinds == {"gbinary", "gternary"}, f"regions for {kinds}"


def test_more_workers_than_capacity_fall_back_to_fp32():
    capacity = PARAMS.datapath.capacity
    binding, events, *_ = _setup(world=capacity + 1)
    assert not binding.regions, f"regions placed beyond capacity: {binding.regions}"
    on_low_bit = [b.name for b in binding.parameters if b.route.low_bit]
    assert not on_low_bit, f"low-bit beyond capacity: {on_low_bit}"
    refused = events.of("refuse")
    requested = [b.name for b in binding.parameters if b.requested.low_bit]
    assert [e.subject for e in refused] == requested, [str(e) for e in refused]
    reason = f"{capacity + 1} workers exceed the {capacity} contributions"
    assert all(reason in e.reason and "CAP_LIMITS.CAPACITY" in e.reason for e in refused), \
        f"refusals do not say {reason!r}: {[str(e) for e in refused]}"


def test_a_threshold_above_the_workers_is_refused():
    binding, events, *_ = _setup(world=1)
    refused = [e.subject for e in events.of("refuse")]
    assert refused == ["body.0.weight", "body.0.bias"], f"refused {refused}"
    reason = events.of("refuse")[0].reason
    assert "T = 2 exceeds the 1 workers" in reason, f"refusal reason: {reason}"


def test_more_routes_than_regions_keep_the_largest():
    params = ControllerParams(PARAMS.datapath, regions=1, address_bits=20)
    binding, events, device, transport, _ = _setup(params=params)
    # body.0 (G-Ternary, 32 lanes a line) has more lines than body.2 (G-Binary, 64 lanes).
    kinds = [p.route.kind for p in binding.regions]
    assert kinds == ["gternary"], f"the one region went to {kinds}"
    refused = {e.subject for e in events.of("refuse")}
    assert refused == {"body.2.weight", "body.2.bias"}, f"refused {refused}"
    reason = events.of("refuse")[0].reason
    assert "CAP_LIMITS.REGIONS" in reason, f"refusal reason: {reason}"
    asyncio.run(program(device, binding))


def test_device_memory_runs_out():
    params = ControllerParams(PARAMS.datapath, regions=4, address_bits=16)
    # 65,536 weights are 1,024 lines of 8 bytes with 64-byte accumulators: 72 KiB of 60.
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 8))
    binding, events, device, transport, caps = _setup(
        params=params, profile='[[route]]\npattern = "*"\nroute = "gbinary"\n', model=model)
    refused = events.of("refuse")
    assert [e.subject for e in refused] == ["0.weight"], [str(e) for e in refused]
    assert "device memory" in refused[0].reason, f"refusal reason: {refused[0].reason}"
    kinds = [b.route.kind for b in binding.parameters]
    assert kinds == ["fp32", "gbinary", "gbinary", "gbinary"], f"routes {kinds}"
    asyncio.run(program(device, binding))


@pytest.mark.parametrize("world", [2, 7])
def test_admitted_regions_expect_every_worker(world):
    binding, *_ = _setup(world=world)
    expected = [p.region.expected for p in binding.regions]
    assert expected == [world] * len(binding.regions), f"EXPECTED {expected} for {world} workers"


def test_parameter_groups_give_low_bit_parameters_no_momentum_of_the_optimizer():
    model = TiedModel(vocab=50, width=40)
    binding, *_ = _setup(model=model)
    groups = parameter_groups(model, binding, momentum=0.9)
    fp32, low_bit = groups
    assert fp32["momentum"] == 0.9 and low_bit["momentum"] == 0.0, groups
    routes = {id(t): binding.of(t).route.low_bit for t in model.parameters()}
    assert all(not routes[id(t)] for t in fp32["params"]), "a low-bit parameter in the FP32 group"
    assert all(routes[id(t)] for t in low_bit["params"]), "an FP32 parameter in the low-bit group"
    every = [id(t) for g in groups for t in g["params"]]
    assert sorted(every) == sorted(set(routes)), "each parameter once (the tied one too)"


def test_a_rule_that_matches_nothing_warns_with_its_line(caplog):
    profile = PROFILE + '[[route]]\npattern = "bdy.*"\nroute = "gbinary"\n'
    with caplog.at_level("WARNING", logger="runtime"):
        _, events, *_ = _setup(profile=profile)
    unmatched = events.of("unmatched")
    assert [e.subject for e in unmatched] == ["bdy.*"], [str(e) for e in events]
    assert "<profile>:11: no parameter matches" in unmatched[0].reason, unmatched[0].reason
    assert any("bdy.*" in r.message for r in caplog.records), "the warning was not logged"


def test_the_number_of_workers_comes_from_the_process_group(one_worker):
    device, caps = golden_device(PARAMS)
    binding = bind(TiedModel(vocab=50, width=40), parse_profile(PROFILE), caps, EventLog())
    assert binding.world_size == 1, binding.world_size


def test_binding_without_a_process_group_asks_for_the_workers():
    device, caps = golden_device(PARAMS)
    with pytest.raises(RuntimeError, match="initialize torch.distributed first"):
        bind(TiedModel(), parse_profile(PROFILE), caps, EventLog())
