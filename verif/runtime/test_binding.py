"""Model binding and admission: routes per parameter, tied parameters, refusals with reasons,
and regions the device applies (``docs/spec.md`` sections 5 and 8)."""

import asyncio

import pytest
import torch

from driver import NeuronFabric
from golden.transport import GoldenTransport
from runtime.binding import bind, program
from runtime.capabilities import read_capabilities
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


class TiedModel(torch.nn.Module):
    """An embedding, a body of two layers and a head tied to the embedding."""

    def __init__(self, vocab=50, width=40):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.body = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Linear(width,
                                                                                       width))
        self.head = torch.nn.Linear(width, vocab, bias=False)
        self.head.weight = self.embed.weight


def _setup(params=PARAMS, profile=PROFILE, world=4, model=None):
    transport = GoldenTransport(params)
    device = NeuronFabric(transport, params)
    caps = asyncio.run(read_capabilities(device))
    events = EventLog()
    binding = bind(model or TiedModel(), parse_profile(profile), caps, world, events)
    return binding, events, device, transport, caps


def test_routes_per_parameter_and_tied_parameters_on_one_route():
    binding, events, *_ = _setup()
    routes = {b.names: str(b.route) for b in binding.parameters}
    assert routes == {
        ("embed.weight", "head.weight"): "fp32",
        ("body.0.weight",): "gternary(T=2)", ("body.0.bias",): "gternary(T=2)",
        ("body.1.weight",): "gbinary", ("body.1.bias",): "gbinary",
    }, routes
    tie, = events.of("tie")
    assert tie.subject == "embed.weight" and "one route for all: fp32" in tie.reason, tie


def test_lines_and_regions_are_applied_by_the_device():
    binding, events, device, transport, caps = _setup()
    asyncio.run(program(device, binding))
    assert transport.device.regions[:len(binding.regions)] == binding.device_regions()
    for b in binding.parameters:
        if b.route.low_bit:
            lanes = caps.lanes(b.route.mode)
            assert b.lines == -(-b.numel // lanes), f"{b.name}: {b.lines} lines"
            plan = binding.regions[b.region]
            assert plan.route == b.route and b.first_line + b.lines <= plan.lines, b
    assert all(p.region.expected == 4 for p in binding.regions)
    assert {p.route.kind for p in binding.regions} == {"gbinary", "gternary"}


def test_more_workers_than_capacity_fall_back_to_fp32():
    binding, events, *_ = _setup(world=PARAMS.datapath.capacity + 1)
    assert not binding.regions
    assert all(not b.route.low_bit for b in binding.parameters)
    refused = events.of("refuse")
    assert len(refused) == 4, [str(e) for e in refused]
    assert all("8 workers exceed the 7 contributions" in e.reason
               and "CAP_LIMITS.CAPACITY" in e.reason for e in refused), refused[0]


def test_a_threshold_above_the_workers_is_refused():
    binding, events, *_ = _setup(world=1)
    assert [e.subject for e in events.of("refuse")] == ["body.0.weight", "body.0.bias"]
    assert "T = 2 exceeds the 1 workers" in events.of("refuse")[0].reason


def test_more_routes_than_regions_keep_the_largest():
    params = ControllerParams(PARAMS.datapath, regions=1, address_bits=20)
    binding, events, device, transport, _ = _setup(params=params)
    # body.0 (G-Ternary, 32 lanes a line) has more lines than body.1 (G-Binary, 64 lanes).
    assert [p.route.kind for p in binding.regions] == ["gternary"]
    assert {e.subject for e in events.of("refuse")} == {"body.1.weight", "body.1.bias"}
    assert "CAP_LIMITS.REGIONS" in events.of("refuse")[0].reason
    asyncio.run(program(device, binding))


def test_device_memory_runs_out():
    params = ControllerParams(PARAMS.datapath, regions=4, address_bits=16)
    # 65,536 weights are 1,024 lines of 8 bytes with 64-byte accumulators: 72 KiB of 60.
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 8))
    binding, events, device, transport, caps = _setup(
        params=params, profile='[[route]]\npattern = "*"\nroute = "gbinary"\n', model=model)
    refused = events.of("refuse")
    assert [e.subject for e in refused] == ["0.weight"], [str(e) for e in refused]
    assert "device memory" in refused[0].reason
    assert [b.route.kind for b in binding.parameters] == ["fp32", "gbinary", "gbinary",
                                                          "gbinary"]
    asyncio.run(program(device, binding))


@pytest.mark.parametrize("world", [2, 7])
def test_admitted_regions_expect_every_worker(world):
    binding, *_ = _setup(world=world)
    assert [p.region.expected for p in binding.regions] == [world] * len(binding.regions)
