"""Dispatch: where each decoded request goes, and when (``docs/controller.md``)."""

from amaranth import Cat, Const, Module, Mux
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from spec.params import aggregates

from .ingress import Operation
from .responder import Source, completion_layout
from .scan_tasks import Task

__all__ = ["Route", "ROUTES", "ANSWERED_NOW", "route_of", "DISPATCH_EVENTS", "Dispatch"]


class Route(enum.Enum, shape=4):
    """Where dispatch sends a decoded request: the first that applies, in this order. A
    request carries its route one-hot (:data:`ROUTES`)."""
    IGNORE = 0        # MemSpecRd, a hint: no access, no response
    BAD_OPCODE = 1    # an unsupported opcode: Cmp, STATUS.BAD_OPCODE
    NO_ACCESS = 2     # an invalidate: Cmp
    BAD_READ = 3      # a read beyond the address bits: MemData-NXM, STATUS.BAD_ADDRESS
    BAD_WRITE = 4     # a write beyond the address bits: Cmp, STATUS.BAD_ADDRESS
    POISONED = 5      # a poisoned write: Cmp, STATUS.POISON, dropped
    WINDOW = 6        # the register window
    POOL = 7          # an aggregating region: the slot pool
    RAW_READ = 8      # identity, in accumulator memory: the slots are written back first
    RAW_WRITE = 9     # identity, in accumulator memory: the slots are written back and emptied
    LINE_READ = 10    # identity
    LINE_WRITE = 11   # identity


#: A route, one-hot: a flag per :class:`Route`, named after it; and ``now``, whether it is one
#: of the routes answered at once (:data:`ANSWERED_NOW`), a flag of its own for dispatch.
ROUTES = data.StructLayout({**{route.name.lower(): 1 for route in Route}, "now": 1})

#: The routes of bad input and of MemInv: answered at once, with no access.
ANSWERED_NOW = (Route.BAD_OPCODE, Route.NO_ACCESS, Route.BAD_READ, Route.BAD_WRITE,
                Route.POISONED)

#: The controller's events that dispatch makes (:func:`hdl.control.event_layout`).
DISPATCH_EVENTS = ("bad_opcode", "bad_address", "poison")


def route_of(request, decoded):
    """The route of a request (:func:`hdl.ingress.request_layout`) with its decoded address
    (:func:`hdl.decode.decoded_layout`), one-hot (:data:`ROUTES`): the first in order whose
    condition holds."""
    operation = request.operation
    read = operation == Operation.READ
    conditions = {
        Route.IGNORE: operation == Operation.SPECULATIVE,
        Route.BAD_OPCODE: operation == Operation.UNSUPPORTED,
        Route.NO_ACCESS: operation == Operation.INVALIDATE,
        Route.BAD_READ: request.out_of_range & read,
        Route.BAD_WRITE: request.out_of_range,
        Route.POISONED: request.poison,
        Route.WINDOW: decoded.window,
        Route.POOL: aggregates(decoded.mode),
        Route.RAW_READ: decoded.accumulator & read,
        Route.RAW_WRITE: decoded.accumulator,
        Route.LINE_READ: read,
        Route.LINE_WRITE: 1,
    }
    flags = {}
    taken = Const(0)                    # an earlier route applies
    for route in Route:
        flags[route] = conditions[route] & ~taken
        taken = taken | conditions[route]
    return Cat(*flags.values(), Cat(flags[route] for route in ANSWERED_NOW).any())


class Dispatch(wiring.Component):
    """The head request goes where its route says once everything it needs has room, and its
    response is queued with the responder (``completion``) on the same clock.

    The decision is a sum of products of registers: the route is one-hot (chosen as the
    request entered the decoded queue), and each route's product names what it needs.
    Accumulator memory is read only once memory holds every slot's state and no write-back is
    on its way, and written only with no slot resident; until then a raw access starts the
    scan that makes it so (``raw_start``), and waits. Only the valids depend on the route: the
    destinations' payloads are the head's whatever the route (a route deciding a line-wide
    payload would reach every bit of it).

    Members
    -------
    route : In(ROUTES)
        The head request's route, valid while ``head_valid``.
    head_valid : In(1)
    operation : In(Operation)
    tag, ld_id : In(completion_layout()'s)
        The head request's, for its response.
    blocked : In(1)
        A scan task runs or waits to (:class:`hdl.scan_tasks.ScanTasks`): hold the head.
    window_ready, pool_ready : In(1)
        The register window and the slot pool take a request on this clock.
    read_room, write_room : In(1)
        The host's identity read and write queues have room (and reads in flight, for a
        read).
    any_dirty, any_resident, pool_idle : In(1)
        The slots may hold lines memory lacks, or lines at all; the pool is idle.
    completion : Out(stream.Signature(completion_layout()))
        The head's response, queued with the responder as the head leaves.
    pop : Out(1)
        The head leaves on this clock.
    window_valid, pool_valid, read_valid, write_valid : Out(1)
        The head goes to the window, the pool, or the identity read or write queue.
    raw_start : Out(1)
    raw_task : Out(Task)
        A raw access asks for a scan first (FLUSH before a read, EVICT before a write).
    ignored : Out(1)
        The head (a MemSpecRd) leaves without a response.
    events : Out(StructLayout({name: 1 for name in DISPATCH_EVENTS}))
    """

    def __init__(self):
        super().__init__({
            "route": In(ROUTES), "head_valid": In(1), "operation": In(Operation),
            "tag": In(completion_layout()["tag"].shape),
            "ld_id": In(completion_layout()["ld_id"].shape),
            "blocked": In(1),
            "window_ready": In(1), "pool_ready": In(1),
            "read_room": In(1), "write_room": In(1),
            "any_dirty": In(1), "any_resident": In(1), "pool_idle": In(1),
            "completion": Out(stream.Signature(completion_layout())),
            "pop": Out(1),
            "window_valid": Out(1), "pool_valid": Out(1),
            "read_valid": Out(1), "write_valid": Out(1),
            "raw_start": Out(1), "raw_task": Out(Task),
            "ignored": Out(1),
            "events": Out(data.StructLayout({name: 1 for name in DISPATCH_EVENTS})),
        })

    def elaborate(self, platform):
        m = Module()
        route, completion = self.route, self.completion
        is_read = self.operation == Operation.READ
        now = route.now
        answered = completion.ready
        line_read_ready = answered & self.read_room
        line_write_ready = answered & self.write_room
        raw_read_clean = ~self.any_dirty & self.pool_idle
        raw_write_clean = ~self.any_dirty & ~self.any_resident & self.pool_idle
        ready = ((route.ignore)
                 | (now & answered)
                 | (route.window & answered & self.window_ready)
                 | (route.pool & answered & self.pool_ready)
                 | (route.line_read & line_read_ready)
                 | (route.raw_read & line_read_ready & raw_read_clean)
                 | (route.line_write & line_write_ready)
                 | (route.raw_write & line_write_ready & raw_write_clean))
        free = ~self.blocked & self.head_valid
        fire = free & ready
        go = free & answered
        m.d.comb += [
            completion.payload.tag.eq(self.tag), completion.payload.ld_id.eq(self.ld_id),
            completion.payload.data.eq(is_read),
            completion.payload.write.eq(self.operation == Operation.WRITE),
            completion.payload.source.eq(Mux(now, Source.NOW, Mux(
                route.window, Source.WINDOW, Mux(route.pool, Source.POOL, Source.MEMORY)))),
            completion.payload.nxm.eq(route.bad_read),
            completion.valid.eq(fire & ~route.ignore),
            self.pop.eq(fire), self.ignored.eq(fire & route.ignore),
            self.window_valid.eq(go & route.window),
            self.pool_valid.eq(go & route.pool),
            # The identity queues take the head only with room, as it leaves.
            self.read_valid.eq(go & (route.line_read | (route.raw_read & raw_read_clean))
                               & self.read_room),
            self.write_valid.eq(go & (route.line_write | (route.raw_write & raw_write_clean))),
            self.raw_start.eq(free & ((route.raw_read & self.any_dirty)
                                      | (route.raw_write
                                         & (self.any_dirty | self.any_resident)))),
            self.raw_task.eq(Mux(route.raw_write, Task.EVICT, Task.FLUSH)),
            self.events.bad_opcode.eq(fire & route.bad_opcode),
            self.events.bad_address.eq(fire & (route.bad_read | route.bad_write)),
            self.events.poison.eq(fire & route.poisoned),
        ]
        return m
