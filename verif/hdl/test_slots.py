"""The slot pool in ``amaranth.sim`` against the golden datapath: random contributions and
reads, many back to back on the same line, few slots so that lines are evicted and filled
again, a device memory that answers late, and results stalled at random; then a flush of
every slot, after which device memory must hold every line's exact accumulator image."""

import types
from unittest import mock

import numpy as np
import pytest
from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.stream import Signature as StreamSignature
from amaranth.lib.wiring import In

from bench.sim import send, simulate
from golden.datapath import DatapathRequests, run_datapath
from hdl.pipeline import delayed
from hdl.slot_ops import SlotOp
from hdl.slots import PoolSlice, SlotPool
from spec.formats import state_to_memory, ternary_to_lines
from spec.params import (
    POOL_SLICE_BITS,
    REGISTER_BITS,
    ControllerParams,
    DatapathParams,
    Mode,
    Reason,
)

CONFIGS = [
    ControllerParams(DatapathParams(line_bits=64, counter_width=2, latency=1), regions=2,
                     address_bits=20, slots=4),
    ControllerParams(DatapathParams(line_bits=32, counter_width=3, latency=3), regions=2,
                     address_bits=20, slots=2),
]
ACC_BASE = 0x1_0000
ACC_STRIDE = 0x100          # bytes between two lines' accumulators: more than one needs
#: Clocks per op after which a missing result counts as a stall (a miss takes about 20).
WAIT_PER_OP = 30
#: The clock period (seconds): the simulation runs for a number of clocks.
CLOCK = 1e-8


class _Lines:
    """The golden accumulator of every line, and the device memory the pool writes back to."""

    def __init__(self, params):
        self.params = params
        self.p = params.datapath
        self.state = {}             # tag -> packed state
        self.memory = {}            # byte address -> line bytes

    def run(self, tag, mode, data, contribute, full_line, threshold):
        p = self.p
        state = self.state.get(tag, np.zeros((1, -(-p.state_bits // 8)), np.uint8))
        enables = np.ones((1, p.line_bytes), bool)
        enables[0, 0] = full_line
        response = run_datapath(p, DatapathRequests(
            mode=np.array([mode]), contribute=np.array([contribute]),
            data=np.asarray(data, np.uint8).reshape(1, -1), byte_enable=enables, state=state,
            threshold=np.array([threshold]), user=np.array([0])))
        self.state[tag] = response.state
        return response

    def image(self, tag, mode, threshold):
        """The accumulator image of line ``tag``: result line, then the state's lines."""
        result = self.run(tag, mode, np.zeros(self.p.line_bytes, np.uint8), False, True,
                          threshold)
        return np.concatenate([result.line[0], state_to_memory(self.p, result.state)[0]])

    def read(self, address):
        return self.memory.get(address, np.zeros(self.p.line_bytes, np.uint8))


def _line(rng, p, mode):
    if mode == Mode.GBINARY.value:
        return rng.integers(0, 256, p.line_bytes, dtype=np.uint8)
    codes = rng.integers(-1, 2, (1, p.gternary_lanes))
    line = ternary_to_lines(codes)[0]
    if rng.random() < 0.1:              # an invalid code in some lane (01 -> 11 is -1, fine)
        line[rng.integers(len(line))] |= 0b10 << 2 * rng.integers(4)
    return line


#: Each configuration in one slice, and the first in slices of the fewest bits (two slices).
SLICED = [(params, POOL_SLICE_BITS) for params in CONFIGS] + [(CONFIGS[0], REGISTER_BITS)]


class _LateData(wiring.Component):
    """The pool behind an ``op`` port whose lines come with their ops: the pool's ``op`` is
    this one, but its ``data``, given ``data_lag`` clocks late, as the pool's ``data_lag``
    says, through that many registers."""

    def __init__(self, pool, data_lag):
        self.pool, self.data_lag = pool, data_lag
        super().__init__({"op": In(StreamSignature(pool.op.payload.shape()))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.pool = pool = self.pool
        data = delayed(m, self.op.payload.data, self.data_lag, "data_late")
        m.d.comb += [pool.op.valid.eq(self.op.valid), self.op.ready.eq(pool.op.ready),
                     pool.op.payload.eq(self.op.payload), pool.op.payload.data.eq(data)]
        return m


class _GoldenRun:
    """One run of :func:`test_slot_pool_against_golden`: six lines on few slots (two G-Binary
    and one G-Ternary line per slot pair, expected contributors below capacity on some lines
    so that they complete and keep going), their ops and golden results, and the processes
    that drive the pool, take its results and hint it."""

    THRESHOLD = 1

    def __init__(self, params, slice_bits, seed, hints, stream, data_lag=0):
        self.params, self.p = params, params.datapath
        self.hints, self.stream = hints, stream
        self.where = f"seed {seed}, hints {hints}, {stream} stream, data lag {data_lag}"
        self.rng = np.random.default_rng(seed)
        self.lines = _Lines(params)
        self.dut = SlotPool(params, user_width=16, slice_bits=slice_bits, data_lag=data_lag)
        self.top = _LateData(self.dut, data_lag)
        self.tags = [ACC_BASE + k * ACC_STRIDE for k in range(6)]
        self.modes = [Mode.GBINARY.value, Mode.GTERNARY.value] * 3
        self.expected = [self.p.capacity, 2, 0, self.p.capacity, 1, 3]
        self.ops = self._ops()
        self.results = [self.lines.run(self.tags[op["k"]], self.modes[op["k"]], op["data"],
                                       op["kind"] == SlotOp.CONTRIBUTE, op["full_line"],
                                       self.THRESHOLD)
                        for op in self.ops]
        self.errors = []
        # For the hints: the op being sent, the first one after the last eviction of every
        # slot, and whether one is under way (the hints stop meanwhile, as the controller's
        # would).
        self.sent = types.SimpleNamespace(op=0, horizon=0, evicting=False)

    def _ops(self):
        rng, ops = self.rng, []
        for run in range(160 if self.stream == "random" else 60):
            k = (int(rng.integers(0, len(self.tags))) if self.stream == "random"
                 else run % self.params.slots)
            # Now and then every slot is emptied first, as a clear or a raw write does, so
            # that fills find their slots empty (a prefetch may then install at once).
            evict = rng.random() < (0.1 if self.stream == "random" else 0.5 * (k == 0))
            # Back to back on the same line; in longer runs in turn, so that a run's ops give
            # the next line's prefetch the time to land.
            repeat = int(rng.integers(1, 4) if self.stream == "random" else rng.integers(4, 9))
            for _ in range(repeat):
                kind = SlotOp.READ if rng.random() < 0.2 else SlotOp.CONTRIBUTE
                ops.append(dict(kind=kind, k=k, data=_line(rng, self.p, self.modes[k]),
                                full_line=rng.random() > 0.05, evict_before=evict))
                evict = False
        return ops

    async def driver(self, ctx):
        dut, rng, sent, slots = self.dut, self.rng, self.sent, self.params.slots
        for number, op in enumerate(self.ops):
            if op["evict_before"]:
                sent.evicting = True
                for index in range(slots):
                    await send(ctx, self.top.op, kind=SlotOp.EVICT, index=index)
                await ctx.tick().until(dut.idle)
                sent.evicting, sent.horizon = False, number
            sent.op = number
            k = op["k"]
            await send(ctx, self.top.op, kind=op["kind"], index=k % slots, tag=self.tags[k],
                       data=int.from_bytes(op["data"].tobytes(), "little"),
                       full_line=int(op["full_line"]), mode=self.modes[k],
                       threshold=self.THRESHOLD, expected=self.expected[k], user=number)
            # Now and then a pause, short or long enough for the stages to empty, so that an
            # op also enters them on every clock of a miss behind (an install, say).
            if rng.random() < 0.15:
                await ctx.tick().repeat(int(rng.integers(1, 4) if rng.random() < 0.6
                                            else rng.integers(4, 30)))
        for index in range(slots):
            await send(ctx, self.top.op, kind=SlotOp.FLUSH, index=index)

    async def collector(self, ctx):
        dut, rng, waited = self.dut, self.rng, 0
        for number, (op, response) in enumerate(zip(self.ops, self.results)):
            where = f"{self.where}, op {number} ({op['kind'].name} of line {op['k']})"
            ready = rng.random() > 0.3
            ctx.set(dut.result.ready, ready)
            while True:
                _, _, valid, got = await ctx.tick().sample(dut.result.valid,
                                                           dut.result.payload)
                waited += 1
                if valid and ready:
                    break
                if waited > WAIT_PER_OP * len(self.ops):
                    self.errors.append(f"{where}: no result after {waited} clocks: the pool "
                                       f"stalled")
                    return
                ready = rng.random() > 0.3
                ctx.set(dut.result.ready, ready)
            ctx.set(dut.result.ready, 0)
            if got.user != number:
                self.errors.append(f"{where}: result for op {got.user} came instead")
                return
            if op["kind"] == SlotOp.READ:
                want = int.from_bytes(response.line[0].tobytes(), "little")
                if got.line != want:
                    self.errors.append(f"{where}: line {got.line:#x}, golden {want:#x}")
            else:
                fields = (got.accepted, Reason(got.reason), got.invalid)
                want = (int(response.accepted[0]), Reason(int(response.reason[0])),
                        int(response.invalid[0]))
                if fields != want:
                    self.errors.append(f"{where}: (accepted, reason, invalid) {fields}, "
                                       f"golden {want}")

    async def hinter(self, ctx):
        """``ahead``: each whole-line contribution is hinted once, in op order, on a clock
        while it is at most 8 ops ahead of the one being sent (on 80% of them), as the
        controller hints ops it has decoded, each flagged ``repeat`` if it is of the line
        hinted before it. ``random``: any line on 60% of the clocks, flagged ``repeat`` at
        random, and the prefetch held now and then."""
        dut, rng, sent, ops = self.dut, self.rng, self.sent, self.ops
        hinted = 0
        last = None         # the line hinted last
        while self.hints != "none":
            k = None
            hinted = max(hinted, sent.horizon)
            if self.hints == "random" and rng.random() < 0.6:
                k = int(rng.integers(0, len(self.tags)))
            elif (self.hints == "ahead" and not sent.evicting and rng.random() < 0.8
                  and hinted < min(len(ops), sent.op + 8)):
                op = ops[hinted]
                hinted += 1
                if op["kind"] == SlotOp.CONTRIBUTE and op["full_line"]:
                    k = op["k"]
            ctx.set(dut.hint.valid, k is not None)
            if k is not None:
                repeat = k == last if self.hints == "ahead" else rng.random() < 0.3
                ctx.set(dut.hint.payload, {"tag": self.tags[k], "index": k % self.params.slots,
                                           "repeat": repeat})
                last = k
            ctx.set(dut.hold_prefetch, self.hints == "random" and rng.random() < 0.1)
            await ctx.tick()

    def register_checker(self, slices):
        """A process that checks, on every clock T1 holds an op in any of ``slices`` (the nets
        of each :class:`PoolSlice`, filled as the simulator elaborates the pool), registers
        that stand for a compare or a word made elsewhere against what they stand for: the
        miss handler's ``t1_of_prefetch_line``, T1's line is ``prefetch_tag``'s; and, once
        T1's slot word is in (``t1_data_ok``), the tag check's ``occupied``, the word's valid
        bit."""
        lsb = self.params.accumulator_line_lsb
        names = ("valid", "data_ok", "tag", "prefetch_tag", "of_prefetch_line", "occupied",
                 "word_valid")

        async def checker(ctx):
            assert slices, "no slice's nets were recorded"
            watched = [(n.t1_valid, n.t1_data_ok, n.t1.tag, n.miss.prefetch_tag,
                        n.miss.t1_of_prefetch_line, n.tag_check.occupied, n.current.valid)
                       for n in slices]
            clock = 0
            async for _, _, *values in ctx.tick().sample(*(s for w in watched for s in w)):
                clock += 1
                for k in range(len(watched)):
                    t1 = dict(zip(names, values[len(names) * k:len(names) * (k + 1)]))
                    where = f"{self.where}, clock {clock}, slice {k}"
                    if not t1["valid"]:
                        continue
                    want = t1["tag"] >> lsb == t1["prefetch_tag"] >> lsb
                    if t1["of_prefetch_line"] != want:
                        self.errors.append(
                            f"{where}: t1_of_prefetch_line {t1['of_prefetch_line']}, but T1's "
                            f"tag {t1['tag']:#x} and the prefetch's {t1['prefetch_tag']:#x} "
                            f"are {'' if want else 'not '}of one line")
                    if t1["data_ok"] and t1["occupied"] != t1["word_valid"]:
                        self.errors.append(
                            f"{where}: the tag check's occupied {t1['occupied']}, T1's slot "
                            f"word (tag {t1['tag']:#x}) valid {t1['word_valid']}")
        return checker

    def check_memory(self):
        """After the flush, device memory holds every line's golden accumulator image."""
        p = self.p
        for k, tag in enumerate(self.tags):
            if tag not in self.lines.state:
                continue
            want = self.lines.image(tag, self.modes[k], self.THRESHOLD)
            got = np.concatenate([self.lines.read(tag + i * p.line_bytes)
                                  for i in range(1 + p.state_lines)])
            differ = np.flatnonzero(got != want)
            assert not len(differ), (f"{self.where}: line {k} ({Mode(self.modes[k]).name}, "
                                     f"tag {tag:#x}) after the flush: accumulator bytes "
                                     f"{differ[:8].tolist()} differ from golden")


def _golden_runs():
    """The runs of :func:`test_slot_pool_against_golden`: every configuration and slicing,
    seed, hint and stream kind. The quick tier runs seed 1 of random hints (resident lines or
    not, the prefetch held now and then: the others' cases and more) in every slicing, and of
    runs of ops in two slices (prefetches installed at once); the slow tier every run."""
    for params, slice_bits in SLICED:
        for seed in (1, 2):
            for hints, stream in (("none", "random"), ("ahead", "random"),
                                  ("random", "random"), ("ahead", "runs")):
                quick = seed == 1 and (hints == "random" or (
                    stream == "runs" and slice_bits < POOL_SLICE_BITS))
                yield pytest.param(params, slice_bits, seed, hints, stream, 0,
                                   id=f"{hints}-{stream}-{seed}-{params.datapath.name}_"
                                      f"S{params.slots}-slice{slice_bits}",
                                   marks=[] if quick else [pytest.mark.slow])
    # The ops' lines a clock late (the controller's), and as late as the pool allows.
    for seed, data_lag in ((1, 1), (2, SlotPool.DATA_LAG)):
        params, slice_bits = SLICED[0]
        yield pytest.param(params, slice_bits, seed, "ahead", "runs", data_lag,
                           id=f"ahead-runs-{seed}-{params.datapath.name}_S{params.slots}-"
                              f"slice{slice_bits}-data_lag{data_lag}",
                           marks=[] if data_lag == 1 else [pytest.mark.slow])


@pytest.mark.parametrize("params, slice_bits, seed, hints, stream, data_lag",
                         list(_golden_runs()))
def test_slot_pool_against_golden(params, slice_bits, seed, hints, stream, data_lag):
    """``hints``: none; the lines of the ops a few ahead of the one being sent, as the
    controller hints them; or any of the lines at random, resident or not, with the prefetch
    held now and then. ``stream``: each run of ops on a line at random, or on the lines of
    the first slots in turn (with the slots emptied now and then, most runs' first ops miss
    into an empty slot: prefetches install at once). Whatever the hints, every result and
    every accumulator is golden, also with the ops' lines given late (``data_lag``)."""
    run = _GoldenRun(params, slice_bits, seed, hints, stream, data_lag)
    memory = _random_memory(run.dut, run.lines, run.rng, run.errors, run.where)
    slices = []
    with _recording_nets(slices):
        simulate(run.top, run.driver, run.collector,
                 processes=[memory, run.hinter, run.register_checker(slices)],
                 clock=CLOCK, until=CLOCK * (WAIT_PER_OP * len(run.ops) + 200))
    assert not run.errors, "\n".join(run.errors[:10])
    run.check_memory()


def _recording_nets(slices):
    """A context in which every :class:`PoolSlice` elaborated appends the nets its sections
    share (``PoolSlice._nets``) to ``slices``, for checks of registers inside a slice."""
    nets = PoolSlice._nets

    def recorded(pool_slice):
        slices.append(nets(pool_slice))
        return slices[-1]
    return mock.patch.object(PoolSlice, "_nets", recorded)


def _random_memory(dut, lines, rng, errors, where):
    """The device memory of :func:`test_slot_pool_against_golden`: a process that lands the
    pool's write-backs in ``lines.memory`` and answers its fills from there, appending what
    goes wrong to ``errors`` (each message starting with ``where``)."""
    p = lines.p
    state_count = p.state_lines

    async def memory(ctx):
        """Holds every write-back in a port (``write_backs_held``) that sends one on 70% of
        the clocks, and lands each after a random wait, now and then a long one
        (``writes_pending`` meanwhile), in order; answers fill reads 1 to 4 clocks late, a line
        per clock."""
        held = []               # (address, lines) in the port
        pending = []            # (due clock, address, lines)
        reads = []              # (due clock, address)
        every_slice = (1 << dut.slices) - 1     # a flag, in every slice's copy
        clock = 0
        sending = False
        ctx.set(dut.fill_read.ready, 1)
        async for _, _, wb_valid, wb, wb_copies, fr_valid, fr in ctx.tick().sample(
                dut.write_back.valid, dut.write_back.payload, dut.write_back_copies,
                dut.fill_read.valid, dut.fill_read.payload):
            clock += 1
            if wb_copies != (every_slice if wb_valid else 0):
                errors.append(f"{where}, clock {clock}: write_back_copies {wb_copies:#b} with "
                              f"write_back.valid {wb_valid}: a slice's copy differs")
            if held and sending:
                # Now and then a write lands late: a fill must not overtake it. Writes land
                # in the order they were made, as AXI lands writes of one ID.
                delay = rng.integers(1, 6) if rng.random() < 0.8 else rng.integers(20, 60)
                due = max([clock + int(delay)] + [x[0] for x in pending])
                pending.append((due, *held.pop(0)))
            if wb_valid:
                held.append((wb.address, wb.lines))
                if len(held) > SlotPool.WRITE_BACKS:
                    errors.append(f"{where}, clock {clock}: a write-back made while the "
                                  f"port held {len(held) - 1}, WRITE_BACKS "
                                  f"{SlotPool.WRITE_BACKS}")
            if fr_valid:
                first = clock + int(rng.integers(1, 5))
                for beat in range(fr.beats):
                    reads.append((first + beat, fr.address + beat * p.line_bytes))
            for item in [x for x in pending if x[0] <= clock]:
                _, address, image = item
                for i in range(1 + state_count):
                    lines.memory[address + i * p.line_bytes] = np.frombuffer(
                        ((image >> (i * p.line_bits)) & ((1 << p.line_bits) - 1))
                        .to_bytes(p.line_bytes, "little"), np.uint8)
                pending.remove(item)
            sending = bool(rng.random() > 0.3)
            ctx.set(dut.write_backs_held, len(held))
            ctx.set(dut.writes_pending, every_slice if pending or held else 0)
            if reads and reads[0][0] <= clock:
                _, address = reads.pop(0)
                ctx.set(dut.fill_data.valid, every_slice)
                ctx.set(dut.fill_data.data,
                        int.from_bytes(lines.read(address).tobytes(), "little"))
            else:
                ctx.set(dut.fill_data.valid, 0)

    return memory


def _plain_memory(dut, p, written, port=None):
    """A device memory for directed tests: takes every write-back at once and lands it on the
    next clock (``writes_pending`` meanwhile), appending its address and
    lines to ``written``; answers each fill read 2 clocks late, a line per clock, from what
    has landed. With ``port`` (a namespace of ``sending``, ``held`` and ``most``), the
    write-backs wait in ``port.held`` (``write_backs_held``) while ``port.sending`` is false
    and leave it one per clock while it is true; ``port.most`` is the most it held."""
    port = port or types.SimpleNamespace(sending=True, held=[], most=0)

    async def memory(ctx):
        lines = {}
        pending = []            # (due clock, address, lines)
        reads = []              # (due clock, address)
        every_slice = (1 << dut.slices) - 1     # a flag, in every slice's copy
        clock = 0
        ctx.set(dut.fill_read.ready, 1)
        async for _, _, wb_valid, wb, fr_valid, fr in ctx.tick().sample(
                dut.write_back.valid, dut.write_back.payload,
                dut.fill_read.valid, dut.fill_read.payload):
            clock += 1
            if wb_valid:
                written.append((wb.address, wb.lines))
                port.held.append((wb.address, wb.lines))
                port.most = max(port.most, len(port.held))
            if port.sending and port.held:
                pending.append((clock + 1, *port.held.pop(0)))
            if fr_valid:
                reads += [(clock + 2 + beat, fr.address + beat * p.line_bytes)
                          for beat in range(fr.beats)]
            for due, address, image in [x for x in pending if x[0] <= clock]:
                for i in range(1 + p.state_lines):
                    lines[address + i * p.line_bytes] = (image >> (i * p.line_bits)) & (
                        (1 << p.line_bits) - 1)
                pending.remove((due, address, image))
            ctx.set(dut.write_backs_held, len(port.held))
            ctx.set(dut.writes_pending, every_slice if pending or port.held else 0)
            answer = bool(reads) and reads[0][0] <= clock
            ctx.set(dut.fill_data.valid, every_slice if answer else 0)
            ctx.set(dut.fill_data.data, lines.get(reads.pop(0)[1], 0) if answer else 0)
    return memory


async def _contribute(ctx, dut, p, tag, user, data=1):
    await send(ctx, dut.op, kind=SlotOp.CONTRIBUTE, index=0, tag=tag, data=data, full_line=1,
               mode=Mode.GBINARY.value, threshold=1, expected=p.capacity, user=user)


def test_clear_behind_a_fill_checks_the_filled_line():
    """A CLEAR that reaches P2 on the clock after a fill of its slot is installed checks the
    range against the filled line, not the line the fill evicted: with the evicted line Y in
    the range and the filled line X outside it, X stays, and the flush behind writes it back
    (Y once, at its eviction)."""
    params = CONFIGS[0]
    p = params.datapath
    dut = SlotPool(params, user_width=16)
    y, x = ACC_BASE, ACC_BASE + 4 * ACC_STRIDE        # both in slot 0
    written = []

    async def driver(ctx):
        ctx.set(dut.result.ready, 1)
        await _contribute(ctx, dut, p, y, 0)
        await _contribute(ctx, dut, p, x, 1)
        ctx.set(dut.clear_high, y + ACC_STRIDE)
        await send(ctx, dut.op, kind=SlotOp.CLEAR, index=0, tag=y)
        await send(ctx, dut.op, kind=SlotOp.FLUSH, index=0)
        await ctx.tick().repeat(60)

    simulate(dut, driver, processes=[_plain_memory(dut, p, written)])
    addresses = [address for address, _ in written]
    assert addresses == [y, x], (f"write-backs to {[hex(a) for a in addresses]}: want line Y "
                               f"{y:#x} at its eviction, then line X {x:#x} at the flush "
                               f"(the CLEAR of Y's range must leave X resident)")



def test_hits_are_taken_one_per_clock():
    """Contributions and result reads of a resident line, offered back to back with every
    result and write-back taken at once, are taken one per clock edge: no room check, no
    forwarding and no completion stops the intake. 64 ops: the line completes, then its
    later contributions are rejected at capacity, and a read goes between each two."""
    params = CONFIGS[0]
    p = params.datapath
    dut = SlotPool(params, user_width=16)
    ops = 64
    takes = []

    async def driver(ctx):
        ctx.set(dut.result.ready, 1)
        await _contribute(ctx, dut, p, ACC_BASE, 0)       # a miss: the line is filled
        await ctx.tick().until(dut.idle)
        ctx.set(dut.op.valid, 1)
        for k in range(ops):
            kind = SlotOp.READ if k % 3 == 2 else SlotOp.CONTRIBUTE
            for name, value in dict(kind=kind, index=0, tag=ACC_BASE, data=k, full_line=1,
                                    mode=Mode.GBINARY.value, threshold=1,
                                    expected=p.capacity, user=k).items():
                ctx.set(getattr(dut.op.payload, name), value)
            clock = 0
            while not ctx.get(dut.op.ready):
                await ctx.tick()
                clock += 1
                assert clock < WAIT_PER_OP, f"op {k} not taken in {WAIT_PER_OP} clocks"
            takes.append(clock)
            await ctx.tick()
        ctx.set(dut.op.valid, 0)
        await ctx.tick().until(dut.idle)

    simulate(dut, driver, processes=[_plain_memory(dut, p, [])])
    waited = {k: clocks for k, clocks in enumerate(takes) if clocks}
    assert len(takes) == ops and not waited, \
        f"ops of a resident line waited (op: clocks) {waited}, expected none"


def test_hit_latency():
    """A hit with nothing else in the pool (a result read, then a contribution, of a resident
    line) has its result taken ``SlotPool.HIT_LATENCY`` clock edges after the edge that takes
    the op (pipeline rule 4)."""
    params = CONFIGS[0]
    p = params.datapath
    dut = SlotPool(params, user_width=16)
    measured = {}

    async def driver(ctx):
        ctx.set(dut.result.ready, 1)
        await _contribute(ctx, dut, p, ACC_BASE, 0)       # a miss: the line is filled
        await ctx.tick().until(dut.idle)
        for kind in (SlotOp.READ, SlotOp.CONTRIBUTE):
            await send(ctx, dut.op, kind=kind, index=0, tag=ACC_BASE, data=1, full_line=1,
                       mode=Mode.GBINARY.value, threshold=1, expected=p.capacity, user=1)
            edges = 0
            while edges < 4 * SlotPool.HIT_LATENCY:
                edges += 1
                _, _, valid = await ctx.tick().sample(dut.result.valid)
                if valid:
                    break
            measured[kind.name] = edges
            await ctx.tick().until(dut.idle)

    simulate(dut, driver, processes=[_plain_memory(dut, p, [])])
    want = {"READ": SlotPool.HIT_LATENCY, "CONTRIBUTE": SlotPool.HIT_LATENCY}
    assert measured == want, (f"clock edges from op to result {measured}, "
                              f"SlotPool.HIT_LATENCY {SlotPool.HIT_LATENCY}")


def test_not_idle_while_an_op_is_on_its_way():
    """From the edge that takes an op until its result is in the result queue, ``idle`` is
    low: also while the op is in the relay to the slices or in an intake, where no slice's
    stage holds it yet (the controller starts a scan only on an idle pool). The result is in
    the queue ``RESULT_WRITE_LAG + 1`` edges before it can be taken."""
    params = CONFIGS[0]
    p = params.datapath
    dut = SlotPool(params, user_width=16)
    idle_at = []

    async def driver(ctx):
        ctx.set(dut.result.ready, 1)
        await _contribute(ctx, dut, p, ACC_BASE, 0)       # a miss: the line is filled
        await ctx.tick().until(dut.result.valid)
        await ctx.tick().until(dut.idle)
        await send(ctx, dut.op, kind=SlotOp.READ, index=0, tag=ACC_BASE, data=0, full_line=1,
                   mode=Mode.GBINARY.value, threshold=1, expected=p.capacity, user=1)
        # In the clock after the take's edge on.
        for clock in range(1, SlotPool.HIT_LATENCY - PoolSlice.RESULT_WRITE_LAG):
            if ctx.get(dut.idle):
                idle_at.append(clock)
            await ctx.tick()

    simulate(dut, driver, processes=[_plain_memory(dut, p, [])])
    assert not idle_at, (f"idle was high on clocks {idle_at} after the take of a read, "
                         f"before its result was queued (SlotPool.HIT_LATENCY "
                         f"{SlotPool.HIT_LATENCY})")


def test_prefetched_lines_are_taken_one_per_clock():
    """Contributions line after line (8 to each line, each line in an empty slot), each hinted
    8 ops ahead as the controller hints them, with a memory that answers 2 clocks late: the
    fill of every line after the first is read ahead and installed on the clock its first op
    misses, so no op after the first line's waits to be taken."""
    params = ControllerParams(DatapathParams(line_bits=64, counter_width=4, latency=1),
                              regions=2, address_bits=20, slots=8)
    dut = SlotPool(params, user_width=16)
    lines, per, ahead = 6, 8, 8
    ops = [line for line in range(lines) for _ in range(per)]
    waits = {}

    async def driver(ctx):
        ctx.set(dut.result.ready, 1)
        await ctx.tick().until(dut.idle)
        hinted = 0
        for k, line in enumerate(ops):
            for name, value in dict(kind=SlotOp.CONTRIBUTE, index=line, data=k, full_line=1,
                                    tag=ACC_BASE + line * ACC_STRIDE, mode=Mode.GBINARY.value,
                                    threshold=1, expected=per, user=k).items():
                ctx.set(getattr(dut.op.payload, name), value)
            ctx.set(dut.op.valid, 1)
            clock = 0
            while True:
                hint = hinted < min(len(ops), k + ahead)     # one op hinted per clock
                ctx.set(dut.hint.valid, hint)
                if hint:
                    ctx.set(dut.hint.payload, {
                        "tag": ACC_BASE + ops[hinted] * ACC_STRIDE, "index": ops[hinted],
                        "repeat": hinted > 0 and ops[hinted] == ops[hinted - 1]})
                    hinted += 1
                ready = ctx.get(dut.op.ready)
                await ctx.tick()
                if ready:
                    break
                clock += 1
                assert clock < WAIT_PER_OP, f"op {k} not taken in {WAIT_PER_OP} clocks"
            if clock and line:
                waits[k] = clock
        ctx.set(dut.op.valid, 0)
        ctx.set(dut.hint.valid, 0)
        await ctx.tick().until(dut.idle)

    simulate(dut, driver, processes=[_plain_memory(dut, params.datapath, [])])
    assert not waits, f"ops after the first line waited (op: clocks) {waits}, expected none"


def test_write_backs_use_the_memory_ports_room():
    """Flushes of 32 dirty slots, with the memory port sending none of the write-backs for a
    while: the pool makes write-backs until the port holds ``SlotPool.WRITE_BACKS`` of them,
    its whole room (which counts the port's latency, so it is more than the result queue's
    ``QUEUE_DEPTH``), and no more; once the port sends again, the rest follow, each slot's
    line written back once, in the order of the flushes."""
    params = ControllerParams(DatapathParams(line_bits=32, counter_width=2, latency=1),
                              regions=2, address_bits=20, slots=32)
    p = params.datapath
    dut = SlotPool(params, user_width=16)
    tags = [ACC_BASE + k * ACC_STRIDE for k in range(params.slots)]
    hold = 100
    port = types.SimpleNamespace(sending=True, held=[], most=0, stalled=None)
    written = []

    async def driver(ctx):
        ctx.set(dut.result.ready, 1)
        for k, tag in enumerate(tags):          # a dirty line in every slot
            await send(ctx, dut.op, kind=SlotOp.CONTRIBUTE, index=k, tag=tag, data=1,
                       full_line=1, mode=Mode.GBINARY.value, threshold=1,
                       expected=p.capacity, user=k)
        await ctx.tick().until(dut.idle)
        written.clear()
        port.sending = False
        for k in range(params.slots):
            await send(ctx, dut.op, kind=SlotOp.FLUSH, index=k)
        await ctx.tick().until(dut.idle)

    async def release(ctx):
        """Lets the port send again ``hold`` clocks after it stopped."""
        while port.sending:
            await ctx.tick()
        await ctx.tick().repeat(hold)
        port.stalled = len(port.held)
        port.sending = True

    simulate(dut, driver, release, processes=[_plain_memory(dut, p, written, port)])
    assert port.stalled == port.most == SlotPool.WRITE_BACKS, (
        f"the port held {port.stalled} write-backs after {hold} clocks of sending none, and "
        f"{port.most} at most: want WRITE_BACKS {SlotPool.WRITE_BACKS} both times "
        f"(QUEUE_DEPTH {SlotPool.QUEUE_DEPTH})")
    addresses = [address for address, _ in written]
    assert addresses == tags, (
        f"the flushes wrote back {[hex(a) for a in addresses]}, want each of the "
        f"{len(tags)} slots' lines once, in flush order: {[hex(a) for a in tags]}")
