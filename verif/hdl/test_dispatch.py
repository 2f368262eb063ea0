"""Dispatch alone (:class:`hdl.dispatch.Dispatch`): every route with random room, readiness
and slot states, checked against the rules of ``docs/controller.md`` (what each route waits
for, where it goes, what answers it, what a raw access of accumulator memory starts); and the
route of every kind of request (:func:`hdl.dispatch.route_of`)."""

import itertools

import numpy as np
from amaranth import Module, Signal

from bench.sim import simulate
from hdl.decode import decoded_layout
from hdl.dispatch import ANSWERED_NOW, ROUTES, Dispatch, Route, route_of
from hdl.ingress import Operation, request_layout
from hdl.responder import Source
from hdl.scan_tasks import Task
from spec.params import ControllerParams, DatapathParams, Mode

SEED = 58
TRIALS = 3000
FLAGS = ("head_valid", "blocked", "window_ready", "pool_ready", "read_room", "write_room",
         "any_dirty", "any_resident", "pool_idle", "answered")


def _expected(route, f):
    """What dispatch must do with a head of ``route`` given the flags ``f``."""
    free = f["head_valid"] and not f["blocked"]
    read_clean = not f["any_dirty"] and f["pool_idle"]
    write_clean = read_clean and not f["any_resident"]
    needs = {
        Route.IGNORE: True,
        Route.WINDOW: f["answered"] and f["window_ready"],
        Route.POOL: f["answered"] and f["pool_ready"],
        Route.LINE_READ: f["answered"] and f["read_room"],
        Route.RAW_READ: f["answered"] and f["read_room"] and read_clean,
        Route.LINE_WRITE: f["answered"] and f["write_room"],
        Route.RAW_WRITE: f["answered"] and f["write_room"] and write_clean,
        **dict.fromkeys(ANSWERED_NOW, f["answered"]),
    }
    fire = free and needs[route]
    go = free and f["answered"]
    source = (Source.NOW if route in ANSWERED_NOW else Source.WINDOW if route == Route.WINDOW
              else Source.POOL if route == Route.POOL else Source.MEMORY)
    return {
        "pop": fire, "completion_valid": fire and route != Route.IGNORE,
        "ignored": fire and route == Route.IGNORE,
        "window_valid": go and route == Route.WINDOW, "pool_valid": go and route == Route.POOL,
        "read_valid": go and f["read_room"] and (route == Route.LINE_READ or (
            route == Route.RAW_READ and read_clean)),
        "write_valid": go and (route == Route.LINE_WRITE or (
            route == Route.RAW_WRITE and write_clean)),
        "raw_start": free and ((route == Route.RAW_READ and f["any_dirty"]) or (
            route == Route.RAW_WRITE and (f["any_dirty"] or f["any_resident"]))),
        "source": source, "nxm": route == Route.BAD_READ,
        "bad_opcode": fire and route == Route.BAD_OPCODE,
        "bad_address": fire and route in (Route.BAD_READ, Route.BAD_WRITE),
        "poison": fire and route == Route.POISONED,
    }


def test_every_route_waits_for_what_it_needs():
    dut = Dispatch()
    rng = np.random.default_rng(SEED)

    async def testbench(ctx):
        for trial in range(TRIALS):
            route = Route(int(rng.integers(len(Route))))
            flags = {name: bool(rng.random() < 0.7) for name in FLAGS}
            operation = Operation.READ if "READ" in route.name else Operation.WRITE
            ctx.set(dut.route.as_value(), (1 << route.value)
                    | (int(route in ANSWERED_NOW) << len(Route)))
            ctx.set(dut.operation, operation)
            ctx.set(dut.tag, trial % 256)
            for name in FLAGS[:-1]:
                ctx.set(getattr(dut, name), flags[name])
            ctx.set(dut.completion.ready, flags["answered"])
            want = _expected(route, flags)
            got = {name: bool(ctx.get(getattr(dut, name))) for name in (
                "pop", "ignored", "window_valid", "pool_valid", "read_valid", "write_valid",
                "raw_start")}
            got.update(completion_valid=bool(ctx.get(dut.completion.valid)),
                       source=Source(ctx.get(dut.completion.payload.source)),
                       nxm=bool(ctx.get(dut.completion.payload.nxm)),
                       **{name: bool(ctx.get(dut.events[name]))
                          for name in ("bad_opcode", "bad_address", "poison")})
            differ = {name: (got[name], want[name]) for name in want if got[name] != want[name]}
            assert not differ, (f"seed {SEED}, trial {trial}, route {route.name}, flags "
                                f"{flags}: (got, expected) {differ}")
            if route in (Route.RAW_READ, Route.RAW_WRITE) and want["raw_start"]:
                want_task = Task.EVICT if route == Route.RAW_WRITE else Task.FLUSH
                assert ctx.get(dut.raw_task) == want_task, f"trial {trial}: raw task"
            assert ctx.get(dut.completion.payload.tag) == trial % 256, f"trial {trial}: tag"
            assert ctx.get(dut.completion.payload.data) == (operation == Operation.READ)

    simulate(dut, testbench, clock=None)


def _first_route(operation, out_of_range, poison, window, mode, accumulator):
    """The route ``docs/controller.md`` gives a request: the first rule that applies."""
    read = operation == Operation.READ
    rules = [(Route.IGNORE, operation == Operation.SPECULATIVE),
             (Route.BAD_OPCODE, operation == Operation.UNSUPPORTED),
             (Route.NO_ACCESS, operation == Operation.INVALIDATE),
             (Route.BAD_READ, out_of_range and read), (Route.BAD_WRITE, out_of_range),
             (Route.POISONED, poison), (Route.WINDOW, window),
             (Route.POOL, mode in (Mode.GBINARY, Mode.GTERNARY)),
             (Route.RAW_READ, accumulator and read), (Route.RAW_WRITE, accumulator),
             (Route.LINE_READ, read), (Route.LINE_WRITE, True)]
    return next(route for route, applies in rules if applies)


def test_route_of_every_request():
    params = ControllerParams(DatapathParams(line_bits=64), address_bits=20)
    m = Module()
    request = Signal(request_layout(params))
    decoded = Signal(decoded_layout(params))
    route = Signal(ROUTES)
    m.d.comb += route.eq(route_of(request, decoded))
    cases = list(itertools.product(Operation, *([(False, True)] * 3), Mode, (False, True)))

    async def testbench(ctx):
        for operation, out_of_range, poison, window, mode, accumulator in cases:
            ctx.set(request.operation, operation)
            ctx.set(request.out_of_range, out_of_range)
            ctx.set(request.poison, poison)
            ctx.set(decoded.window, window)
            ctx.set(decoded.mode, mode)
            ctx.set(decoded.accumulator, accumulator)
            want = _first_route(operation, out_of_range, poison, window, mode, accumulator)
            flags = ctx.get(route.as_value())
            where = (f"{operation.name}, out_of_range {out_of_range}, poison {poison}, "
                     f"window {window}, {mode.name}, accumulator {accumulator}")
            assert flags & ((1 << len(Route)) - 1) == 1 << want.value, \
                f"{where}: route flags {flags:#x}, expected {want.name}"
            assert ctx.get(route.now) == (want in ANSWERED_NOW), f"{where}: now"

    simulate(m, testbench, clock=None)
