"""Model binding: each parameter of a ``torch.nn.Module`` gets a route, the low-bit ones are
admitted against the device's capacity and placed in regions, and the regions are programmed
through :class:`driver.NeuronFabric`.

Contract of :func:`bind`:

- Parameters are taken from ``named_parameters(remove_duplicate=False)``; one tensor under
  several names (a head tied to an embedding) is bound once, on one route: the route, among its
  names' routes, that keeps most of the gradient (FP32, then G-Ternary, then G-Binary), with an
  event when they differ.
- A low-bit route is refused, and the parameter falls back to FP32 with a ``refuse`` event, when
  the device cannot count it exactly (``docs/spec.md`` sections 5 and 8): more workers than a
  line's capacity (``CAP_LIMITS.CAPACITY``), a G-Ternary threshold above the number of workers
  (every lane would read 0), more low-bit routes than regions (``CAP_LIMITS.REGIONS``; the
  routes with most lines keep theirs), or not enough device memory for its lines and their
  accumulators (``CAP_POOL.ACC_LINES`` lines each).
- Each low-bit route has one region: its parameters' lines back to back, in binding order, each
  parameter starting on a line of its own; the accumulators of every region follow, aligned to
  one accumulator. ``EXPECTED`` is the number of workers, so a line completes once each worker
  has written it.
"""

import fnmatch
from dataclasses import dataclass, field

import torch.distributed as dist

from spec.params import Mode
from spec.regmap import Region

from .routes import FIDELITY, FP32

__all__ = ["ParameterBinding", "RegionPlan", "Binding", "bind", "parameter_groups", "program"]


@dataclass
class ParameterBinding:
    """One parameter tensor: its ``names`` (more than one when tied), the ``requested`` route of
    the profile and the ``route`` admitted; for a low-bit route, its ``region`` (index into
    :attr:`Binding.regions`), ``first_line`` in the region and ``lines``."""
    names: tuple
    numel: int
    requested: object
    route: object
    start_step: int = 0
    region: int | None = None
    first_line: int = 0
    lines: int = 0

    @property
    def name(self):
        return self.names[0]


@dataclass
class RegionPlan:
    """A region of the device for one low-bit route: ``region`` is the descriptor the driver
    programs, at index ``index``; ``lines`` its number of lines."""
    index: int
    route: object
    region: Region
    lines: int


@dataclass
class Binding:
    """The bound parameters (in ``named_parameters`` order) and the device regions."""
    parameters: list
    regions: list
    world_size: int
    caps: object
    by_tensor: dict = field(default_factory=dict, repr=False)   # id(tensor) -> binding

    def of(self, tensor):
        """The :class:`ParameterBinding` of a parameter tensor of the bound model."""
        return self.by_tensor[id(tensor)]

    def device_regions(self):
        """The region table to program (index = region number)."""
        return [plan.region for plan in self.regions]


def _lines(numel, caps, route):
    lanes = caps.lanes(route.mode)
    return -(-numel // lanes)


def bind(model, profile, caps, events, world_size=None):
    """Bind ``model``'s parameters with ``profile`` (:class:`runtime.profile.Profile`) for
    ``world_size`` workers (default: the size of the default process group) on a device of
    :class:`runtime.capabilities.Capabilities` ``caps``; decisions go to ``events``
    (:class:`runtime.events.EventLog`), with an ``unmatched`` warning for each rule of the
    profile that matches no parameter (a misspelt pattern, say)."""
    if world_size is None:
        if not dist.is_initialized():
            raise RuntimeError("bind needs the number of workers: initialize torch.distributed "
                               "first (init_process_group) or pass world_size")
        world_size = dist.get_world_size()
    tensors, names = {}, {}
    for name, tensor in model.named_parameters(remove_duplicate=False):
        if tensor.requires_grad:
            tensors.setdefault(id(tensor), tensor)
            names.setdefault(id(tensor), []).append(name)
    bound = []
    for key, tensor in tensors.items():
        tied = tuple(names[key])
        routes = [profile.route_for(n) for n in tied]
        route = max(routes, key=lambda r: FIDELITY[r.kind])
        if len(set(routes)) > 1:
            events.record(None, tied[0], "tie",
                          f"tied with {', '.join(tied[1:])}; the profile asks "
                          f"{', '.join(map(str, routes))}; one route for all: {route}")
        bound.append(ParameterBinding(tied, tensor.numel(), route, route,
                                      max(profile.start_step(n) for n in tied)))
    every_name = [n for tied in names.values() for n in tied]
    for rule in profile.rules:
        if not any(fnmatch.fnmatchcase(n, rule.pattern) for n in every_name):
            events.record(None, rule.pattern, "unmatched",
                          f"{profile.path}:{rule.line}: no parameter matches the pattern; the "
                          f"model's are {', '.join(every_name[:6])}"
                          f"{', ...' if len(every_name) > 6 else ''}")
    regions = _admit(bound, caps, world_size, events)
    return Binding(bound, regions, world_size, caps, dict(zip(tensors, bound)))


def parameter_groups(model, binding, **fp32_options):
    """Optimizer parameter groups for ``model`` bound by ``binding``: the parameters bound to
    FP32 with ``fp32_options`` (``momentum=0.9``, say), and those bound to a low-bit route
    with no momentum: the hook keeps theirs before compressing (:mod:`runtime.lowbit`), and a
    second one on top of the sign would integrate the majority's noise
    (``docs/runtime.md``, "Update rule")."""
    fp32, low_bit, seen = [], [], set()
    for tensor in model.parameters():
        if tensor.requires_grad and id(tensor) not in seen:
            seen.add(id(tensor))
            (low_bit if binding.of(tensor).route.low_bit else fp32).append(tensor)
    return [group for group in ({"params": fp32, **fp32_options},
                                {"params": low_bit, "momentum": 0.0}) if group["params"]]


def _refuse(binding, events, reason):
    events.record(None, binding.name, "refuse", f"{binding.requested} refused, FP32 instead: "
                                                f"{reason}")
    binding.route = FP32


def _admit(bound, caps, world_size, events):
    """Refuse what the device cannot count, place the rest; returns the region plans."""
    low = [b for b in bound if b.route.low_bit]
    for b in bound:
        if not b.route.low_bit:
            events.record(None, b.name, "fp32", "the profile's route")
    if world_size > caps.capacity:
        for b in low:
            _refuse(b, events, f"{world_size} workers exceed the {caps.capacity} contributions "
                               f"a line can count (CAP_LIMITS.CAPACITY, W = "
                               f"{caps.counter_width})")
        return []
    for b in low:
        if b.route.threshold is not None and b.route.threshold > world_size:
            _refuse(b, events, f"gate threshold T = {b.route.threshold} exceeds the "
                               f"{world_size} workers: every lane would read 0")
    low = [b for b in low if b.route.low_bit]
    routes = list(dict.fromkeys(b.route for b in low))
    if len(routes) > caps.regions:
        lines = {r: sum(_lines(b.numel, caps, r) for b in low if b.route == r) for r in routes}
        kept = sorted(routes, key=lambda r: -lines[r])[:caps.regions]
        for b in low:
            if b.route not in kept:
                _refuse(b, events, f"{len(routes)} low-bit routes need {len(routes)} regions, "
                                   f"the device has {caps.regions} (CAP_LIMITS.REGIONS); "
                                   f"the {caps.regions} routes with most lines keep theirs")
        low = [b for b in low if b.route.low_bit]
    return _place(low, caps, world_size, events)


def _place(low, caps, world_size, events):
    start, end = caps.free_space()
    line, acc = caps.line_bytes, caps.accumulator_bytes

    def needed(total_lines):
        acc_start = -(-(start + total_lines * line) // acc) * acc
        return acc_start + total_lines * acc - start

    used, lines_of = 0, {}
    for b in low:
        lines = _lines(b.numel, caps, b.route)
        if needed(used + lines) > end - start:
            _refuse(b, events, f"device memory: its {lines} lines and their accumulators need "
                               f"{needed(used + lines) - needed(used)} bytes, "
                               f"{end - start - needed(used)} of {end - start} are left")
            continue
        used += lines
        lines_of[id(b)] = lines
    admitted = [b for b in low if b.route.low_bit]
    routes = list(dict.fromkeys(b.route for b in admitted))
    plans, base = [], start
    acc_base = start + needed(used) - used * acc
    for index, route in enumerate(routes):
        members = [b for b in admitted if b.route == route]
        count = 0
        for b in members:
            b.region, b.first_line, b.lines = index, count, lines_of[id(b)]
            count += b.lines
            events.record(None, b.name, "admit",
                          f"{route} in region {index}, lines {b.first_line} to "
                          f"{b.first_line + b.lines - 1}, from step {b.start_step}")
        region = Region(True, route.mode.value, base, count * line, acc_base,
                        route.threshold if route.mode == Mode.GTERNARY else 1, world_size)
        plans.append(RegionPlan(index, route, region, count))
        base += count * line
        acc_base += count * acc
    if used > caps.slots:
        events.record(None, "*", "note",
                      f"{used} low-bit lines, {caps.slots} on-chip slots (CAP_POOL.SLOTS): "
                      f"the device evicts lines to device memory, exactly but slower")
    return plans


async def program(device, binding):
    """Program and apply the binding's regions through ``device`` (a
    :class:`driver.NeuronFabric`), enable aggregation and clear every region."""
    await device.configure(binding.device_regions())
    await device.enable()
    for plan in binding.regions:
        await device.clear(plan.index)
