"""Reducer backends: every worker gives the contribution lines of some lines of a region, every
worker gets the device's result lines (majority or gated). Backends are bit-exact with each
other on the same inputs.

Interface (:class:`Reducer`): ``reduce(plan, line_indices, lines)`` is collective over the
process group: every rank calls it with the same ``plan`` (a
:class:`runtime.binding.RegionPlan`) and ``line_indices`` (the lines of the region, an ``int``
array of ``N``), and its own ``(N, line_bytes)`` ``uint8`` contribution ``lines``; it returns
the ``(N, line_bytes)`` result lines, the same on every rank, or raises
:class:`driver.DeviceError`, on one rank or more, but only after its collectives (the hook then
agrees on the failure with the other ranks). The tensors of its collectives live on ``device``
(the CPU for gloo; the rank's GPU for NCCL). ``dev_load`` is the DevLoad of the device's last
response (:class:`spec.cxl.DevLoad`), or ``None`` where there is no device. ``sent`` counts the
bytes this rank has put on the wire in its collectives (what the backend really moves, not the
size of the lines). The device-model backend records the rounds it serves (``record=True``),
and :func:`save_rounds` writes them to a file (under ``build/``) for a replay on another device
(:mod:`runtime.replay`; through the RTL controller, ``python -m scripts.replay``).

- :class:`CollectiveReducer`: what a cluster without the device runs: per lane counts of
  negative signs (G-Binary) or sums of ternary values (G-Ternary) added up with
  ``all_reduce`` (an ``int32`` per lane on the wire), then the device's read-back rule
  (``docs/spec.md`` sections 3 and 4).
- :class:`PackedReducer`: a cluster without the device that saves bytes: the packed lines
  gathered with ``all_gather`` (a bit per G-Binary lane on the wire), counted on each rank by
  the same rules.
- :class:`DeviceModelReducer`: the device itself, through :class:`driver.NeuronFabric` and any
  transport (the golden model's, :class:`golden.transport.GoldenTransport`, in process): every
  rank gathers every rank's lines (as if each had written them to one shared device), writes
  them in rank order to its device, and reads the result lines back.
"""

import asyncio
import dataclasses
import json

import numpy as np
import torch
import torch.distributed as dist

from driver import DeviceError
from spec.formats import (
    bits_to_lines,
    lines_to_bits,
    lines_to_ternary_codes,
    small_fields_to_lines,
    ternary_codes_to_values,
)
from spec.params import (
    TERNARY_MINUS,
    TERNARY_PLUS,
    TERNARY_ZERO,
    ControllerParams,
    DatapathParams,
    Mode,
)
from spec.regmap import Region

__all__ = ["Reducer", "CollectiveReducer", "PackedReducer", "DeviceModelReducer", "FaultyReducer",
           "device_round",
           "save_rounds", "load_rounds", "load_rounds_params"]


class Reducer:
    """The backend interface (see the module docstring)."""

    name = "reducer"

    def __init__(self, group=None, device="cpu"):
        self.group = group
        self.device = torch.device(device)
        #: Bytes this rank has sent in the collectives of :meth:`reduce`, summed over calls.
        self.sent = 0

    @property
    def world_size(self):
        return dist.get_world_size(self.group)

    def reduce(self, plan, line_indices, lines):
        raise NotImplementedError(f"{type(self).__name__} does not reduce")

    @property
    def dev_load(self):
        return None

    def _gather(self, lines):
        """Every rank's ``lines``, ``(ranks, N, line_bytes)``, through one ``all_gather`` of
        the packed lines (what this rank sends is counted in ``sent``)."""
        local = torch.from_numpy(np.ascontiguousarray(lines, np.uint8)).to(self.device)
        gathered = [torch.empty_like(local) for _ in range(self.world_size)]
        dist.all_gather(gathered, local, group=self.group)
        self.sent += local.element_size() * local.numel()
        return np.stack([g.cpu().numpy() for g in gathered])


def _lane_values(mode, lines):
    """Per lane of ``lines``: 1 for a negative G-Binary sign (else 0), or the G-Ternary value
    (an invalid code counts 0), as ``int32``."""
    if mode == Mode.GBINARY:
        return lines_to_bits(lines).astype(np.int32)
    return ternary_codes_to_values(lines_to_ternary_codes(lines)).astype(np.int32)


def _read_back(plan, total, workers):
    """The result lines of the lanes' sums ``total`` over ``workers`` contributions, by the
    device's rules (``docs/spec.md`` sections 3 and 4): majority, a tie +1; or the gate."""
    if plan.route.mode == Mode.GBINARY:
        return bits_to_lines(2 * total > workers)
    t = plan.route.threshold
    codes = np.where(total >= t, TERNARY_PLUS, np.where(total <= -t, TERNARY_MINUS,
                                                        TERNARY_ZERO))
    return small_fields_to_lines(codes, 2)


class CollectiveReducer(Reducer):
    """Sign counts (G-Binary) or ternary sums (G-Ternary) summed with ``all_reduce``: an
    ``int32`` per lane on the wire."""

    name = "collective"

    def reduce(self, plan, line_indices, lines):
        total = torch.from_numpy(_lane_values(plan.route.mode, lines)).to(self.device)
        dist.all_reduce(total, group=self.group)
        self.sent += total.element_size() * total.numel()
        return _read_back(plan, total.cpu().numpy(), self.world_size)


class PackedReducer(Reducer):
    """The packed lines themselves, gathered from every rank with ``all_gather`` (a bit per
    G-Binary lane, two per G-Ternary lane on the wire), then counted on each rank by the
    device's rules: a cluster without the device, saving bytes for a little arithmetic."""

    name = "packed"

    def reduce(self, plan, line_indices, lines):
        contributions = self._gather(lines)
        total = sum(_lane_values(plan.route.mode, rank_lines) for rank_lines in contributions)
        return _read_back(plan, total, len(contributions))


class FaultyReducer(CollectiveReducer):
    """Fault injection, for tests and demonstrations of the health monitor: the collective
    backend with every result bit inverted while ``hook.step`` is in ``steps`` (a device gone
    wrong without raising). Set ``hook`` to the :class:`runtime.hook.NeuronFabricHook` it
    serves before the first step."""

    name = "faulty"

    def __init__(self, steps, group=None, device="cpu"):
        super().__init__(group, device)
        self.steps, self.hook = steps, None

    def reduce(self, plan, line_indices, lines):
        result = super().reduce(plan, line_indices, lines)
        return ~result if self.hook.step in self.steps else result


class DeviceModelReducer(Reducer):
    """The device behind ``fabric`` (a :class:`driver.NeuronFabric` whose regions
    :func:`runtime.binding.program` has programmed). Each round clears the region, writes every
    rank's lines in rank order, checks that the device accepted every contribution
    (``CNT_ACCEPTED``, ``CNT_REJECTED``) and reads the result lines; a rejected contribution
    raises :class:`driver.DeviceError`. With ``record``, ``recorded`` keeps each round as
    ``(region, line_indices, contributions (ranks, N, line_bytes), results)``."""

    name = "device"

    def __init__(self, fabric, group=None, record=False, device="cpu"):
        super().__init__(group, device)
        self.fabric = fabric
        self.record = record
        self.recorded = []
        self._loop = asyncio.new_event_loop()

    @property
    def dev_load(self):
        return getattr(self.fabric.transport, "dev_load", None)

    def reduce(self, plan, line_indices, lines):
        contributions = self._gather(lines)
        results = self._loop.run_until_complete(device_round(
            self.fabric, plan.index, plan.region, np.asarray(line_indices), contributions))
        if self.record:
            self.recorded.append((plan.index, np.asarray(line_indices).copy(), contributions,
                                  results))
        return results


async def device_round(fabric, index, region, line_indices, contributions):
    """One round on the device behind ``fabric`` (a :class:`driver.NeuronFabric` whose region
    ``index`` is ``region``, a :class:`spec.regmap.Region`, programmed and enabled): clear the
    region, write every rank's lines of ``contributions`` (``(ranks, N, line_bytes)``
    ``uint8``) in rank order to lines ``line_indices`` of the region, check that the device
    accepted every contribution (``CNT_ACCEPTED``, ``CNT_REJECTED``) and read the result lines.
    Returns the ``(N, line_bytes)`` result lines; raises :class:`driver.DeviceError` when a
    contribution was rejected or went uncounted."""
    transport = fabric.transport
    line = fabric.params.datapath.line_bytes
    full = (1 << line) - 1
    addresses = [region.base + int(i) * line for i in line_indices]
    await fabric.clear(index)
    accepted = await fabric.read("CNT_ACCEPTED")
    rejected = await fabric.read("CNT_REJECTED")
    for rank_lines in contributions:
        for address, data in zip(addresses, rank_lines):
            await transport.write_line(address, bytes(data), full)
    wrap = 1 << 32
    got_accepted = (await fabric.read("CNT_ACCEPTED") - accepted) % wrap
    got_rejected = (await fabric.read("CNT_REJECTED") - rejected) % wrap
    if got_rejected or got_accepted != contributions.shape[0] * len(addresses):
        status = {k for k, v in (await fabric.status()).items() if v}
        raise DeviceError(f"region {index}: {got_accepted} contributions accepted, "
                          f"{got_rejected} rejected, of {contributions.shape[0]} ranks x "
                          f"{len(addresses)} lines; STATUS {sorted(status)}")
    return np.stack([np.frombuffer(await transport.read_line(a), np.uint8)
                     for a in addresses]) if addresses else contributions[0]


def save_rounds(path, plans, rounds, params=None):
    """Write recorded ``rounds`` (:attr:`DeviceModelReducer.recorded`) and the region
    ``plans`` they used (:attr:`runtime.binding.Binding.regions`) to the ``.npz`` file
    ``path``, for a replay through another backend (the RTL controller, say). ``params``, the
    recording device's :class:`spec.params.ControllerParams` (``fabric.params``), goes with
    them when given: a replay on hardware needs a controller of that configuration
    (:func:`load_rounds_params`)."""
    arrays = {}
    if params is not None:
        arrays["params"] = np.array(json.dumps(dataclasses.asdict(params)))
    for number, (region, indices, contributions, results) in enumerate(rounds):
        plan = plans[region]
        r = plan.region
        arrays[f"round{number}_region"] = np.array(
            [region, r.mode, r.base, r.size, r.acc, r.threshold, r.expected], np.int64)
        arrays[f"round{number}_lines"] = np.asarray(indices, np.int64)
        arrays[f"round{number}_contributions"] = contributions
        arrays[f"round{number}_results"] = results
    np.savez_compressed(path, rounds=np.int64(len(rounds)), **arrays)


def load_rounds(path):
    """The rounds of :func:`save_rounds`: a list of ``(Region, region index, line_indices,
    contributions (ranks, N, line_bytes), results (N, line_bytes))``."""
    out = []
    with np.load(path) as data:
        for number in range(int(data["rounds"])):
            index, mode, base, size, acc, threshold, expected = \
                data[f"round{number}_region"].tolist()
            out.append((Region(True, mode, base, size, acc, threshold, expected), index,
                        data[f"round{number}_lines"], data[f"round{number}_contributions"],
                        data[f"round{number}_results"]))
    return out


def load_rounds_params(path):
    """The :class:`spec.params.ControllerParams` that :func:`save_rounds` wrote with the rounds
    of ``path``, or ``None`` when it was given none."""
    with np.load(path) as data:
        if "params" not in data:
            return None
        fields = json.loads(str(data["params"]))
    return ControllerParams(DatapathParams(**fields.pop("datapath")), **fields)
