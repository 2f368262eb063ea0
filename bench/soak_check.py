"""The golden check of a compiled soak: every response and device memory at the end, against
:class:`golden.messages.MessageModel` serving the same requests in the stimulus's order.

A request's response must match lane by lane (its channel, opcode, poison and the data the
specification defines; exactly one response, with the request's LD-ID); after the run, every
line of device memory must hold what the golden model holds (missing lines read zero). A
mismatch names the request (op index, kind, address, the clocks it was sent and answered), the
line's region and the lanes that differ, and for a result read the last contribution to that
line before it.
"""

from dataclasses import dataclass, field

import numpy as np

from golden.messages import DRS, NONE, RWD, MessageModel, Requests, request_kinds
from spec.formats import lines_to_small_fields
from spec.params import Mode
from spec.regmap import COUNTERS, REGISTER_BYTES

from .soak_records import answer_dtype, op_dtype

__all__ = ["Verdict", "check"]

#: Requests served by the golden model at a time.
CHUNK = 1 << 16


@dataclass
class Verdict:
    """What the check found: ``mismatches`` (the first ``limit`` in detail, ``mismatch_count``
    in all), the golden model's ``events``, the device's ``counters`` (from the last read of
    each in the run), the DevLoad of the responses and the requests by kind
    (:data:`golden.messages.KINDS`)."""
    mismatches: list = field(default_factory=list)
    mismatch_count: int = 0
    events: dict = field(default_factory=dict)
    counters: dict = field(default_factory=dict)
    dev_load: dict = field(default_factory=dict)
    requests: dict = field(default_factory=dict)
    first_clock: int | None = None

    def add(self, text, clock, limit):
        """A mismatch seen at ``clock`` (``None``: none, as for device memory at the end)."""
        self.mismatch_count += 1
        if clock is not None and (self.first_clock is None or clock < self.first_clock):
            self.first_clock = int(clock)
        if len(self.mismatches) < limit:
            self.mismatches.append(text)


def _requests(params, ops):
    """The golden :class:`golden.messages.Requests` of op records ``ops``."""
    line_bytes = params.datapath.line_bytes
    ops = np.array(ops)                                 # out of the memory map, at once
    lines = np.where(ops["channel"] == RWD, ops["address"], ops["address"] >> 1)
    enables = np.unpackbits(ops["byte_enable"], axis=1, bitorder="little")[:, :line_bytes]
    return Requests(channel=ops["channel"], opcode=ops["opcode"],
                    address=np.array([int(a) * line_bytes for a in lines], dtype=object),
                    data=np.asarray(ops["data"]), byte_enable=enables.astype(bool),
                    poison=ops["poison"].astype(bool))


class _Checker:
    def __init__(self, params, where, ops, answers, limit):
        self.params, self.where, self.ops, self.answers = params, where, ops, answers
        self.limit = limit
        self.model = MessageModel(params, faults=where.faults)
        self.verdict = Verdict()

    def _region_of(self, address):
        for index, region in enumerate(self.where.regions):
            if region.base <= address < region.base + region.size:
                return index, region
        return None, None

    def _describe(self, i, address):
        op, answer = self.ops[i], self.answers[i]
        kind = "RwD" if op["channel"] == RWD else "Req"
        text = (f"op {i} ({kind} opcode {op['opcode']:#06b}, address {address:#x}, sent at "
                f"clock {answer['issued']}, answered at clock {answer['answered']})")
        index, region = self._region_of(address)
        if region is not None and region.aggregating:
            line = (address - region.base) // self.params.datapath.line_bytes
            text += f", region {index} ({Mode(region.mode).name}) line {line}"
        return text

    def _lanes(self, address, got, want):
        """Which lanes of a result line differ, for a line of an aggregating region."""
        _, region = self._region_of(address)
        if region is None or not region.aggregating:
            differ = np.flatnonzero(got != want)
            return f"bytes {differ[:8].tolist()} differ: got {got[differ[:8]].tolist()}, " \
                   f"golden {want[differ[:8]].tolist()}"
        p = self.params.datapath
        lanes = p.gbinary_lanes if region.mode == Mode.GBINARY.value else p.gternary_lanes
        got_codes, want_codes = (lines_to_small_fields(line[None], p.line_bits // lanes)[0]
                                 for line in (got, want))
        differ = np.flatnonzero(got_codes != want_codes)
        return (f"lanes {differ[:8].tolist()} differ: got {got_codes[differ[:8]].tolist()}, "
                f"golden {want_codes[differ[:8]].tolist()}")

    def _last_contribution(self, i):
        op = self.ops[i]
        field = op["address"] >> 1 if op["channel"] != RWD else op["address"]
        before = self.ops[:i]
        hits = np.flatnonzero((before["channel"] == RWD) & (before["address"] == field))
        if not len(hits):
            return ""
        k = int(hits[-1])
        return f"; the last write of the line before it: op {k}, answered at clock " \
               f"{self.answers[k]['answered']}"

    def _compare(self, first, requests, expected):
        answers = self.answers[first:first + len(requests)]
        owed = expected.channel != NONE
        bad = (answers["channel"] != expected.channel)
        bad |= owed & (answers["count"] != answers["polls"])      # one response per send
        bad |= owed & (answers["opcode"] != expected.opcode)
        bad |= owed & (answers["ld_id"] != self.ops[first:first + len(requests)]["ld_id"])
        drs = expected.channel == DRS
        bad |= drs & (answers["poison"].astype(bool) != expected.poison)
        data_bad = drs & ((answers["data"] != expected.data) & expected.defined).any(axis=1)
        for k in np.flatnonzero(bad | data_bad):
            i, address = first + int(k), int(requests.address[k])
            answer = answers[k]
            if bad[k]:
                what = (f"response channel {answer['channel']} x{answer['count']} opcode "
                        f"{answer['opcode']} poison {answer['poison']} LD-ID {answer['ld_id']}, "
                        f"golden channel {expected.channel[k]} opcode {expected.opcode[k]} "
                        f"poison {int(expected.poison[k])}")
            else:
                got = np.asarray(answer["data"])
                want = np.where(expected.defined[k], expected.data[k], got)
                what = self._lanes(address, got, want) + self._last_contribution(i)
            self.verdict.add(f"{self._describe(i, address)}: {what}",
                             answer["answered"] or answer["issued"] or None, self.limit)

    def run(self):
        for first in range(0, len(self.ops), CHUNK):
            requests = _requests(self.params, self.ops[first:first + CHUNK])
            for kind in request_kinds(requests):
                self.verdict.requests[kind] = self.verdict.requests.get(kind, 0) + 1
            sends = np.maximum(self.answers["polls"][first:first + CHUNK], 1)
            self._compare(first, requests, self.model.serve(requests, sends))
        return self.verdict

    def memory(self, dump):
        """Compare device memory at the end (records of address and line) with golden's."""
        line_bytes = self.params.datapath.line_bytes
        records = np.fromfile(dump, np.dtype([("address", "<u8"),
                                              ("data", "u1", (line_bytes,))]))
        device = {int(a): d for a, d in zip(records["address"], records["data"])}
        golden = self.model.transport.device.memory
        zero = np.zeros(line_bytes, np.uint8)
        for address in sorted(set(device) | set(golden)):
            got, want = device.get(address, zero), golden.get(address, zero)
            if (got != want).any():
                differ = np.flatnonzero(got != want)
                self.verdict.add(f"device memory at {address:#x} after the run: bytes "
                                 f"{differ[:8].tolist()} differ: got {got[differ[:8]].tolist()},"
                                 f" golden {want[differ[:8]].tolist()}", None, self.limit)
        return len(device)

    def order(self):
        """Check that the harness sent every request only once the requests it waits for
        (``after``: all up to that index) were answered: otherwise the golden model's order is
        not one the device could have served."""
        answered = np.maximum.accumulate(self.answers["answered"].astype(np.int64))
        after, issued = self.ops["after"], self.answers["issued"].astype(np.int64)
        waits = after >= 0
        early = np.flatnonzero(waits & (issued <= answered[np.maximum(after, 0)]))
        for i in early[:self.limit]:
            self.verdict.add(f"op {i} was sent at clock {issued[i]}, before op {after[i]} or "
                             f"an op before it was answered (clock {answered[after[i]]}): the "
                             f"harness broke the order it was given", int(issued[i]),
                             self.limit)


def _counters(params, regmap, ops, answers):
    """The device's counters from the last read of each in the run."""
    line_bytes = params.datapath.line_bytes
    reads = np.flatnonzero((ops["channel"] == 0) & (answers["channel"] == DRS))
    found = {}
    for counter in COUNTERS:
        offset = regmap[f"CNT_{counter.name}"].offset
        field = (params.window_base + offset - offset % line_bytes) // line_bytes << 1
        hits = reads[ops["address"][reads] == field]
        if len(hits):
            data = np.asarray(answers["data"][hits[-1]])
            start = offset % line_bytes
            found[counter.name] = int.from_bytes(data[start:start + REGISTER_BYTES].tobytes(),
                                                 "little")
    return found


def check(params, where, files, *, limit=20):
    """Check the run in :class:`bench.compiled.Run` ``files`` of the soak laid out as
    :class:`bench.soak_traffic.Layout` ``where``; returns a :class:`Verdict`."""
    ops = np.memmap(files.ops, op_dtype(params), mode="r")
    answers = np.memmap(files.answers, answer_dtype(params), mode="r")
    checker = _Checker(params, where, ops, answers, limit)
    verdict = checker.run()
    checker.memory(files.memory)
    checker.order()
    verdict.events = dict(checker.model.transport.device.events)
    verdict.counters = _counters(params, checker.model.transport.regmap, ops, answers)
    answered = answers["channel"] != NONE
    verdict.dev_load = {int(v): int(c) for v, c in zip(*np.unique(
        answers["dev_load"][answered], return_counts=True))}
    return verdict
