"""The scan tasks alone (:class:`hdl.scan_tasks.ScanTasks`): flush, clear and evict against a
pool that takes scan ops at random and a memory port that takes zero writes at random;
each task must send one op per slot in order, clear exactly its region's accumulator lines,
wait for the pool and the writes, report done once, and hold dispatch meanwhile."""

import numpy as np
import pytest

from bench.sim import simulate
from hdl.scan_tasks import ScanTasks, Task
from hdl.slot_ops import SlotOp
from spec.params import ControllerParams, DatapathParams, Mode

PARAMS = ControllerParams(DatapathParams(line_bits=64, counter_width=2), regions=2,
                          address_bits=16, slots=8)
LINE = PARAMS.datapath.line_bytes
ACC, ACC_END = 0x2000, 0x2000 + 6 * LINE
SEED = 58
#: Clocks within which a task is over (every slot scanned, the pool idle, the zero writes).
TASK_CLOCKS = 200


def _dut():
    return ScanTasks(PARAMS, region_bits=3, id_bits=2, zero_id=1)


def _region(ctx, dut, k, *, enable, mode):
    region = dut.regions[k]
    for name, value in (("enable", enable), ("mode", mode), ("acc", ACC),
                        ("acc_end", ACC_END)):
        ctx.set(getattr(region, name), value)


async def _run(ctx, dut, rng, start):
    """Run a task started by ``start(ctx)``; returns the scan ops taken, the zero writes
    taken, and the clocks on which ``flush_done`` and ``clear_done`` rose."""
    ctx.set(dut.table_ready, 1)
    ctx.set(dut.pool_idle, 1)
    start(ctx)
    await ctx.tick()
    for name in ("flush_start", "clear_start", "raw_start"):
        ctx.set(getattr(dut, name), 0)
    ops, zeros, done = [], [], {"flush": [], "clear": []}
    for clock in range(TASK_CLOCKS):
        pool_ready = bool(rng.random() < 0.7)
        ctx.set(dut.pool_ready, pool_ready)
        ctx.set(dut.zero_write.ready, bool(rng.random() < 0.6))
        ctx.set(dut.pool_idle, bool(rng.random() < 0.5))
        ctx.set(dut.writes_pending, bool(zeros) and bool(rng.random() < 0.5))
        if ctx.get(dut.scan.valid) and pool_ready:
            ops.append((SlotOp(ctx.get(dut.scan.kind)), ctx.get(dut.scan.index),
                        ctx.get(dut.scan.low), ctx.get(dut.scan.high)))
        if ctx.get(dut.zero_write.valid) and ctx.get(dut.zero_write.ready):
            zeros.append(ctx.get(dut.zero_write.payload))
        for name in done:
            if ctx.get(getattr(dut, f"{name}_done")):
                done[name].append(clock)
        await ctx.tick()
        if not ctx.get(dut.blocked) and not ctx.get(dut.flush_busy) \
                and not ctx.get(dut.clear_busy) and clock > 2:
            return ops, zeros, done
    raise AssertionError(f"seed {SEED}: the task did not end in {TASK_CLOCKS} clocks "
                         f"({len(ops)} scan ops, {len(zeros)} zero writes)")


def _check_scan(ops, kind, low=0, high=0):
    want = [(kind, index, low, high) for index in range(PARAMS.slots)]
    assert [op[:2] for op in ops] == [op[:2] for op in want], \
        f"seed {SEED}: scan ops {[(op[0].name, op[1]) for op in ops]}, expected one " \
        f"{kind.name} per slot in order"
    if kind == SlotOp.CLEAR:
        assert all(op[2:] == (low, high) for op in ops), f"clear range {ops[0][2:]}"


def test_flush_scans_every_slot_once():
    dut = _dut()
    rng = np.random.default_rng(SEED)

    async def testbench(ctx):
        ctx.set(dut.table_ready, 1)         # an applied table from the start
        ctx.set(dut.pool_accepted, 1)
        await ctx.tick()
        ctx.set(dut.pool_accepted, 0)
        assert ctx.get(dut.any_dirty), "an accepted contribution leaves any_dirty set"
        ops, zeros, done = await _run(ctx, dut, rng,
                                      lambda ctx: ctx.set(dut.flush_start, 1))
        _check_scan(ops, SlotOp.FLUSH)
        assert not zeros, f"a flush wrote {len(zeros)} zero lines"
        assert len(done["flush"]) == 1 and not done["clear"], f"done strobes {done}"
        assert not ctx.get(dut.any_dirty), "a flush leaves no slot dirty"

    simulate(dut, testbench)


@pytest.mark.parametrize(("enable", "mode"), [(1, Mode.GBINARY), (1, Mode.GTERNARY),
                                               (0, Mode.GBINARY), (1, Mode.IDENTITY)])
def test_clear_empties_and_zeroes_its_region(enable, mode):
    dut = _dut()
    rng = np.random.default_rng(SEED)
    wanted = enable and mode != Mode.IDENTITY

    async def testbench(ctx):
        _region(ctx, dut, 1, enable=enable, mode=mode)

        def start(ctx):
            ctx.set(dut.clear_start, 1)
            ctx.set(dut.clear_region, 1)

        ops, zeros, done = await _run(ctx, dut, rng, start)
        assert len(done["clear"]) == 1 and not done["flush"], f"done strobes {done}"
        if not wanted:
            assert not ops and not zeros, f"a clear of a region that does not aggregate " \
                                          f"scanned {len(ops)} slots, wrote {len(zeros)} lines"
            return
        _check_scan(ops, SlotOp.CLEAR, ACC, ACC_END)
        addresses = [zero.address for zero in zeros]
        assert addresses == list(range(ACC, ACC_END, LINE)), \
            f"zero writes at {[hex(a) for a in addresses]}"
        assert all((zero.line, zero.strobe, zero.id) == (0, (1 << LINE) - 1, 1)
                   for zero in zeros), "a zero write is a whole line of zeros with the pool's ID"

    simulate(dut, testbench)


@pytest.mark.parametrize("task", [Task.FLUSH, Task.EVICT])
def test_raw_access_scan(task):
    dut = _dut()
    rng = np.random.default_rng(SEED)

    async def testbench(ctx):
        ctx.set(dut.table_ready, 1)
        for name in ("pool_accepted", "pool_fills"):
            ctx.set(getattr(dut, name), 1)
        await ctx.tick()
        for name in ("pool_accepted", "pool_fills"):
            ctx.set(getattr(dut, name), 0)

        def start(ctx):
            ctx.set(dut.raw_start, 1)
            ctx.set(dut.raw_task, task)

        ops, _, done = await _run(ctx, dut, rng, start)
        _check_scan(ops, SlotOp.EVICT if task == Task.EVICT else SlotOp.FLUSH)
        assert not done["flush"] and not done["clear"], "a raw access's scan is no command"
        assert not ctx.get(dut.any_dirty), f"{task.name}: any_dirty after the scan"
        assert ctx.get(dut.any_resident) == (task == Task.FLUSH), \
            f"{task.name}: any_resident after the scan"

    simulate(dut, testbench)


def test_apply_evicts_every_slot_once_the_table_is_ready():
    dut = _dut()
    rng = np.random.default_rng(SEED)

    async def testbench(ctx):
        ctx.set(dut.table_ready, 1)
        await ctx.tick().repeat(2)
        ctx.set(dut.table_ready, 0)           # an APPLY copies its table
        for _ in range(5):
            await ctx.tick()
            assert ctx.get(dut.blocked), "dispatch must wait while the table changes"
            assert not ctx.get(dut.scan.valid), "no scan before the table is applied"
        ops, _, _ = await _run(ctx, dut, rng, lambda ctx: None)
        _check_scan(ops, SlotOp.EVICT)

    simulate(dut, testbench)
