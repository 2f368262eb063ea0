"""Replay of recorded reducer rounds on a device, compared lane by lane with the recording.

The rounds a :class:`runtime.reducers.DeviceModelReducer` recorded (``record=True``, saved by
:func:`runtime.reducers.save_rounds`, read by :func:`runtime.reducers.load_rounds`) are given
again to any device behind a :class:`driver.NeuronFabric`: the golden model through
:class:`golden.transport.GoldenTransport`, or the generated RTL controller in a cocotb
simulation through :class:`bench.cxl_host.CxlHost` (``python -m scripts.replay``). The device
runs each round the way the device-model backend does (:func:`runtime.reducers.device_round`),
so a replay holds that device bit-exact with the one that recorded the rounds.

:func:`replay` is a coroutine on the transport's event loop (cocotb's, in a simulation).
"""

from dataclasses import dataclass, field

import numpy as np

from driver import DeviceError
from spec.formats import lines_to_bits, lines_to_ternary_codes
from spec.params import Mode
from spec.regmap import Region

from .reducers import device_round

__all__ = ["ReplayCounts", "ReplayMismatchError", "region_table", "replay"]

#: Differences :class:`ReplayMismatchError` describes one by one (the rest are counted).
SHOWN = 12


@dataclass
class ReplayCounts:
    """What a replay compared: ``rounds``, result ``lines`` (and by mode name, ``by_mode``),
    their ``lanes`` and ``bytes``, and the contribution lines written (``contributions``);
    ``differing_lanes`` and ``failed_rounds`` (a :class:`driver.DeviceError`) went wrong, and
    ``mismatches`` describes the first of them (empty: every lane bit-exact)."""
    rounds: int = 0
    lines: int = 0
    lanes: int = 0
    bytes: int = 0
    contributions: int = 0
    by_mode: dict = field(default_factory=dict)
    differing_lanes: int = 0
    failed_rounds: int = 0
    mismatches: list = field(default_factory=list)


class ReplayMismatchError(AssertionError):
    """A replayed device gave other results than the recording; ``counts`` is the
    :class:`ReplayCounts` of the whole replay, the message its first differences."""

    def __init__(self, counts, source):
        self.counts = counts
        shown = "\n".join(f"  {m}" for m in counts.mismatches[:SHOWN])
        more = counts.differing_lanes + counts.failed_rounds - min(SHOWN, len(counts.mismatches))
        super().__init__(
            f"{source}: {counts.differing_lanes} of {counts.lanes} lanes differ from the "
            f"recording, {counts.failed_rounds} of {counts.rounds} rounds failed:\n{shown}"
            + (f"\n  ... and {more} more" if more > 0 else ""))


def region_table(rounds):
    """The region table (index = region number, unused indices disabled) that the rounds of
    :func:`runtime.reducers.load_rounds` use; raises ``ValueError`` when two rounds give one
    region index different descriptors."""
    table = {}
    for number, (region, index, *_) in enumerate(rounds):
        if table.setdefault(index, region) != region:
            raise ValueError(f"round {number} gives region {index} as {region}, an earlier "
                             f"round as {table[index]}: not one recording")
    return [table.get(i, Region()) for i in range(max(table, default=-1) + 1)]


def _lane_values(mode, lines):
    """``(codes, describe)``: the raw lane codes ``(N, lanes)`` of ``mode`` result lines, and
    a function that says what a code reads as."""
    if mode == Mode.GBINARY:
        return lines_to_bits(lines), lambda c: f"{'-1' if c else '+1'} (bit {c})"
    names = {0b00: "0", 0b01: "+1", 0b10: "invalid", 0b11: "-1"}
    return lines_to_ternary_codes(lines), lambda c: f"{names[int(c)]} (code {int(c):#04b})"


def _compare(counts, where, mode, line_indices, want, got, line_bytes):
    """Add the lanes of ``got`` that differ from ``want`` to ``counts.mismatches``."""
    want_lanes, describe = _lane_values(mode, want)
    got_lanes, _ = _lane_values(mode, got)
    width = 8 * line_bytes // want_lanes.shape[1]
    for row, lane in zip(*np.nonzero(want_lanes != got_lanes)):
        counts.differing_lanes += 1
        if len(counts.mismatches) < SHOWN:
            byte = lane * width // 8
            counts.mismatches.append(
                f"{where}, line {int(line_indices[row])}, lane {lane} (byte {byte}: expected "
                f"{int(want[row, byte]):#04x}, got {int(got[row, byte]):#04x}): expected "
                f"{describe(want_lanes[row, lane])}, got {describe(got_lanes[row, lane])}")
    return want_lanes.shape[1]


async def replay(fabric, rounds, source="replay"):
    """Replay ``rounds`` (:func:`runtime.reducers.load_rounds`) on the device behind ``fabric``
    (a :class:`driver.NeuronFabric` of the recording's line size, fresh or holding nothing the
    rounds need): program and enable :func:`region_table`, run every round with
    :func:`runtime.reducers.device_round` and compare its result lines lane by lane with the
    recorded ones. ``source`` names the recording (file, seed) in the messages. Returns the
    :class:`ReplayCounts`; raises :class:`ReplayMismatchError` after the last round when any lane
    differed or any round failed (a :class:`driver.DeviceError`: a contribution rejected)."""
    line_bytes = fabric.params.datapath.line_bytes
    counts = ReplayCounts()
    await fabric.configure(region_table(rounds))
    await fabric.enable()
    for number, (region, index, line_indices, contributions, want) in enumerate(rounds):
        mode = Mode(region.mode)
        where = f"round {number}, region {index} ({mode.name})"
        if contributions.shape[-1] != line_bytes:
            raise ValueError(f"{source}: {where} has {contributions.shape[-1]}-byte lines, the "
                             f"device {line_bytes}-byte ones")
        counts.rounds += 1
        try:
            got = await device_round(fabric, index, region, line_indices, contributions)
        except DeviceError as error:
            counts.failed_rounds += 1
            counts.mismatches.append(f"{where}: {error}")
            continue
        lanes = _compare(counts, where, mode, line_indices, want, got, line_bytes)
        counts.lines += len(line_indices)
        counts.lanes += lanes * len(line_indices)
        counts.bytes += want.size
        counts.contributions += contributions.shape[0] * contributions.shape[1]
        counts.by_mode[mode.name] = counts.by_mode.get(mode.name, 0) + len(line_indices)
    if counts.mismatches:
        raise ReplayMismatchError(counts, source)
    return counts
