"""The fast formal checks (``formal.properties``, ``fast``): each property holds on its design,
and fails, with a counterexample trace, on its mutation (the whole controller's mutations in
the slow tier). ``make formal`` runs all of them. Also in simulation, the earliest trace of
the deep bounded checks' mutations, which their depths must reach, and ``make formal``'s
runner."""

import json
from unittest import mock

import pytest

import formal.run
import hdl.controller
from bench.sim import simulate
from bench.simulators import BUILD
from formal.controller import (
    ConfiguredControl,
    IdentityWriteChangesOnlyItsLine,
    formal_table,
)
from formal.mutations import MUTATIONS
from formal.properties import (
    POOL_DEPTHS,
    PORT_CONFIG,
    PORT_DEPTHS,
    PROPERTIES,
    check_mutation,
    check_property,
)
from formal.sby import Check
from formal.slots import LineCountExactThroughEvictions, ReadReflectsEveryContribution
from hdl.slot_ops import SlotOp
from hdl.slots import SlotPool
from spec.cxl import ReqOpcode, RwDOpcode
from spec.params import Mode

FAST = [prop for prop in PROPERTIES if prop.fast]


def _where(prop, check, outcome):
    failed = ", ".join(outcome.failed) or "none reported"
    return (f"{prop.name} ({prop.design}, {prop.params.name}, {check.engine}, "
            f"{check.summary}): {outcome.status}; failed assertions: {failed}; "
            f"counterexample: {outcome.trace}; log: {outcome.log}")


@pytest.mark.parametrize("prop", FAST, ids=lambda prop: prop.name)
def test_property_holds(prop):
    outcome = check_property(prop, BUILD)
    assert outcome.status == "PASS", _where(prop, prop.check, outcome)


#: The designs whose fast properties' mutation checks belong to the slow tier: a mutant of the
#: whole controller takes a proof's time again to fail, and the quick tier keeps its proof.
SLOW_MUTATIONS = ("CxlMemController",)


@pytest.mark.parametrize("prop", [
    pytest.param(prop, id=f"{prop.name}--{prop.mutation.name}",
                 marks=[pytest.mark.slow] if prop.design in SLOW_MUTATIONS else [])
    for prop in FAST])
def test_property_fails_on_its_mutation(prop):
    outcome = check_mutation(prop, BUILD)
    assert outcome.status == "FAIL", _where(prop, prop.mutant, outcome)
    assert outcome.trace is not None and outcome.trace.exists(), \
        f"no counterexample trace: {_where(prop, prop.mutant, outcome)}"


def test_every_property_has_a_mutation_and_every_mutation_a_property():
    harnesses = {prop.harness.__name__ for prop in PROPERTIES}
    assert harnesses == set(MUTATIONS), \
        f"properties without a mutation: {sorted(harnesses - set(MUTATIONS))}; " \
        f"mutations without a property: {sorted(set(MUTATIONS) - harnesses)}"


def test_a_check_refuses_unknown_modes_engines_and_depths():
    with pytest.raises(ValueError, match=r"mode must be one of \('bmc', 'prove'\), not 'live'"):
        Check("live", 5)
    with pytest.raises(ValueError, match=r"depth must be a positive integer, not 0"):
        Check("bmc", 0)
    with pytest.raises(ValueError, match=r"engine must be one of \('smtbmc boolector',\), "
                                         r"not 'smtbmc z3'"):
        Check("bmc", 5, "smtbmc z3")


#: Clocks within which the traces of :func:`_identity_race` and :func:`_pool_race` end.
RACE_CLOCKS = 60


def _assert_depth_reaches(depths, harness, clocks, event, *, exact=True):
    """The depth of ``harness`` in ``depths`` (``PORT_DEPTHS`` or ``POOL_DEPTHS``) covers the
    clock of ``event`` in a race's ``clocks``, where its mutation shows first (a check of depth
    ``d`` covers clocks 0 to ``d - 1``); ``exact``: and no more."""
    depth, _ = depths[harness]
    want = clocks[event] + 1
    assert depth == want if exact else depth >= want, \
        (f"{harness.__name__}'s depth is {depth}; its mutation shows first on clock "
         f"{clocks[event]} ({event}; {clocks}): set it to {'' if exact else 'at least '}{want}")


def _identity_race(params):
    """Clocks of the earliest trace in which an identity write could change a checked read of
    the line after it (:class:`formal.controller.IdentityWriteChangesOnlyItsLine`), in
    ``amaranth.sim`` at ``params`` with the harnesses' configured control registers.

    A read of a line outside the region, its accumulators and the register window is taken
    on clock 0 (the first a request may be taken), a MemWr of the line before it on clock 1
    (the harness checks no read taken on a write's clock, and none taken while a write is
    owed: a write's response waits for memory's B, so a write first is the longer race).
    Device memory is the harness's (:func:`formal.controller.axi_memory`) as fast as it can
    be: it takes AR and AW at once, a W beat from the clock after its AW, and answers the
    read with its beat once its AR is in and on the clock after the write's W beat at the
    earliest (the first whose data the W changed), held until taken. Returns
    ``{event: clock}`` for ``read``, ``write``, ``ar``, ``aw``, ``w``, ``r`` and ``drs``."""
    line_bytes = params.datapath.line_bytes
    _, (_, _, _, acc_end) = formal_table(params, 1)
    line = acc_end + line_bytes             # it and the line before it are identity lines
    assert not params.window_base <= line < params.window_base + params.window_bytes, \
        f"the race's line {line:#x} is in the register window"
    with mock.patch.object(hdl.controller, "ControlRegisters",
                           lambda params: ConfiguredControl(params, 1)):
        dut = hdl.controller.CxlMemController(params)
    clocks = {}

    async def testbench(ctx):
        axi, req, rwd = dut.axi, dut.m2s_req, dut.m2s_rwd
        for ready in (axi.arready, axi.awready, dut.s2m_ndr.ready, dut.s2m_drs.ready):
            ctx.set(ready, 1)
        ctx.set(req.payload, {"opcode": ReqOpcode.MEM_RD, "address": line // line_bytes << 1,
                              "tag": 1})
        ctx.set(rwd.payload, {"opcode": RwDOpcode.MEM_WR,
                              "address": (line - line_bytes) // line_bytes, "tag": 2})
        ctx.set(req.valid, 1)
        for clock in range(RACE_CLOCKS):
            ctx.set(rwd.valid, clock == 1)
            ctx.set(axi.wready, "aw" in clocks)
            ctx.set(axi.rvalid, "ar" in clocks and "w" in clocks and "r" not in clocks)
            ctx.set(axi.rlast, 1)
            for event, happens in (
                    ("read", ctx.get(req.valid) & ctx.get(req.ready)),
                    ("write", ctx.get(rwd.valid) & ctx.get(rwd.ready)),
                    ("ar", ctx.get(axi.arvalid)),
                    ("aw", ctx.get(axi.awvalid)), ("w", ctx.get(axi.wvalid & axi.wready)),
                    ("r", ctx.get(axi.rvalid & axi.rready)), ("drs", ctx.get(dut.s2m_drs.valid))):
                if happens and event not in clocks:
                    clocks[event] = clock
            if ctx.get(axi.arvalid):
                ctx.set(axi.rid, ctx.get(axi.arid))
            await ctx.tick()
            ctx.set(req.valid, 0)
    simulate(dut, testbench, clock=1e-8, name="identity_race")
    return clocks


def test_identity_write_depth_reaches_its_mutation():
    """The depth of :class:`IdentityWriteChangesOnlyItsLine` is that of the earliest clock its
    mutation (an identity write that lands on the line after its own) can show: that of a
    read answered with a write's line, the write taken a clock behind the read. A lag added
    on the write's way to memory or the read's way back moves that clock beyond the depth,
    and the mutation would escape; a shorter way makes the depth longer than it needs."""
    clocks = _identity_race(PORT_CONFIG)
    assert (clocks.get("read"), clocks.get("write")) == (0, 1), \
        f"at {PORT_CONFIG.name} the read and the write were not taken on clocks 0 and 1: {clocks}"
    assert clocks.keys() == {"read", "write", "ar", "aw", "w", "r", "drs"}, \
        f"the race at {PORT_CONFIG.name} did not finish within {RACE_CLOCKS} clocks: {clocks}"
    _assert_depth_reaches(PORT_DEPTHS, IdentityWriteChangesOnlyItsLine, clocks, "drs")


def test_make_formal_runs_checks_side_by_side_and_reports_them_in_order(tmp_path, capsys):
    """``python -m formal.run --jobs 2``: a property and its mutation solved at once, both in
    the report, in the catalogue's order, with their verdicts; and a bad ``--jobs`` refused."""
    name = next(prop.name for prop in FAST if prop.design == "AggregationDatapath")
    status = formal.run.main(["--fast", "-k", name, "--jobs", "2", "--out", str(tmp_path),
                              "--build", str(tmp_path / "build")])
    (row,) = json.loads((tmp_path / "formal.json").read_text())
    assert status == 0 and (row["property"], row["result"], row["mutation"]["result"]) == \
        (name, "PASS", "FAIL"), row
    assert f"| {row['harness']} |" in (tmp_path / "formal.md").read_text()
    assert capsys.readouterr().out.splitlines()[:2] == [
        f"{name}: PASS ({row['seconds']:.1f} s)",
        f"{name} with {row['mutation']['name']}: FAIL ({row['mutation']['seconds']:.1f} s)"]
    with pytest.raises(SystemExit):
        formal.run.main(["--jobs", "0"])
    assert "--jobs must be at least 1, not 0" in capsys.readouterr().err


def _pool_race(params, behind):
    """Clocks of the earliest trace in which a contribution could be missing from what the
    slot pool of the harnesses (:mod:`formal.slots`) gives for its line, in ``amaranth.sim``
    at ``params``: a whole-line contribution to line 0 offered from clock 0 (the pool takes
    its first op once its reset's scan of the slots is over), and an op of kind ``behind``
    (a ``READ`` of the line, a ``FLUSH`` of its slot) offered from the clock after its take.
    Device memory is the harness's as fast as it can be: it takes a fill read at once and
    gives a line on every clock after it; results and write-backs are taken at once, and
    none is pending. Returns ``{event: clock}`` for ``contribution`` and ``behind`` (taken),
    ``fill`` (the first read taken), ``answer`` (the result of ``behind``, if it has one)
    and ``idle`` (the first clock after ``behind``'s take that the pool is idle)."""
    p = params.datapath
    dut = SlotPool(params, user_width=1)
    clocks = {}

    async def testbench(ctx):
        ctx.set(dut.result.ready, 1)
        ctx.set(dut.op.payload, {"kind": SlotOp.CONTRIBUTE, "tag": 0, "index": 0,
                                 "data": (1 << p.line_bits) - 1, "full_line": 1,
                                 "mode": Mode.GBINARY, "threshold": 1, "expected": p.capacity,
                                 "user": 0})
        ctx.set(dut.op.valid, 1)
        left = 0                            # lines of the fill read still to come
        for clock in range(RACE_CLOCKS):
            ctx.set(dut.fill_read.ready, not left)
            ctx.set(dut.fill_data.valid, (1 << dut.slices) - 1 if left else 0)
            taken = ctx.get(dut.op.valid) and ctx.get(dut.op.ready)
            if taken:
                clocks.setdefault("behind" if "contribution" in clocks else "contribution",
                                  clock)
            if ctx.get(dut.fill_read.valid) and not left:
                clocks.setdefault("fill", clock)
                left = ctx.get(dut.fill_read.payload.beats) + 1
            if ctx.get(dut.result.valid) and ctx.get(dut.result.payload.user):
                clocks.setdefault("answer", clock)
            if "behind" in clocks and clock > clocks["behind"] and ctx.get(dut.idle):
                clocks.setdefault("idle", clock)
            left = max(left - 1, 0)
            await ctx.tick()
            if taken:
                ctx.set(dut.op.payload.kind, behind)
                ctx.set(dut.op.payload.user, 1)
                ctx.set(dut.op.valid, "behind" not in clocks)
    simulate(dut, testbench, clock=1e-8, name="pool_race")
    return clocks


def test_pool_read_depth_reaches_its_mutation():
    """The depth of :class:`ReadReflectsEveryContribution` is that of the earliest clock its
    mutation (a contribution's slot write that keeps the lane counts from before it) can
    show: that of a read answered right behind the first contribution to its line, which
    missed and was filled. A lag on the way moves that clock beyond the depth (stop 73's
    result queue lag did), and the mutation would escape."""
    clocks = _pool_race(PORT_CONFIG, SlotOp.READ)
    assert clocks.keys() == {"contribution", "behind", "fill", "answer", "idle"}, \
        f"the race at {PORT_CONFIG.name} did not finish within {RACE_CLOCKS} clocks: {clocks}"
    assert clocks["contribution"] < clocks["fill"] < clocks["answer"], clocks
    _assert_depth_reaches(POOL_DEPTHS, ReadReflectsEveryContribution, clocks, "answer")


def test_pool_count_depth_reaches_its_mutation():
    """The depth of :class:`LineCountExactThroughEvictions` reaches the earliest clock its
    mutation (slot writes that leave the slot clean, so that a flush writes nothing back)
    can show: the first clock the pool is idle after a flush of the slot of the line's first
    contribution, on the mutant, when device memory still lacks the contribution."""
    with MUTATIONS["LineCountExactThroughEvictions"].applied():
        clocks = _pool_race(PORT_CONFIG, SlotOp.FLUSH)
    assert {"contribution", "behind", "idle"} <= clocks.keys(), \
        f"the race at {PORT_CONFIG.name} did not finish within {RACE_CLOCKS} clocks: {clocks}"
    _assert_depth_reaches(POOL_DEPTHS, LineCountExactThroughEvictions, clocks, "idle",
                          exact=False)
