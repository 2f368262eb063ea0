"""Slack of every timed endpoint of a routed design, from nextpnr's SDF, grouped by register
and by block.

nextpnr's report names one critical path per clock. Which registers stand in the way of a
target clock takes every endpoint's slack: this module reads the delays nextpnr writes with
``--sdf`` (cell delays, setup checks and the delay of every routed connection, all at the
slow corner it times with) and repeats its setup analysis for one clock:

- a path starts at a clocked output (an ``IOPATH`` from a clock port: ``CLK`` of a flip-flop,
  ``WCK`` of LUT RAM, ``CLKA``/``CLKB`` of block RAM) at its clock-to-output delay; the clock
  is ideal, as in nextpnr's out-of-context analysis, and top-level ports start no path (they
  are unconstrained out of context);
- it ends at a flip-flop input or a clocked input with a setup check (``SETUPHOLD``);
- slack is the clock period minus the path's delay and the setup time.

:func:`synth.flow.place_and_route` checks the analysis against nextpnr's own: the worst path
found here must take the time that the report's Fmax implies.
"""

import re
from collections import defaultdict, deque

__all__ = ["parse_sdf", "analyse", "register_family", "failing", "by_register", "block_of",
           "by_block", "direct_wires"]

_CLOCK_PORTS = {"CLK", "WCK", "CLKA", "CLKB"}
_VALUE = r"\(([-\d.]*):([-\d.]*):([-\d.]*)\)"
_INTERCONNECT = re.compile(r"\(INTERCONNECT (\S+) (\S+) " + _VALUE)
_CELL = re.compile(r"\(CELLTYPE \"([^\"]*)\"\)\s*\(INSTANCE ([^)]*)\)")
_IOPATH = re.compile(r"\(IOPATH (?:\((?:posedge|negedge) )?(\w+)\)? (\w+) " + _VALUE)
_SETUP = re.compile(r"\(SETUPHOLD \((?:posedge|negedge) (\w+)\) \(posedge (\w+)\) " + _VALUE)


def _name(token):
    """An SDF identifier without its escapes."""
    return token.replace("\\", "")


def _pin(token):
    """``instance/port`` of an SDF pin reference, as a pair."""
    instance, _, port = _name(token).rpartition("/")
    return instance, port


def parse_sdf(text):
    """The timing graph of an SDF written by nextpnr, delays in ns (the slow corner):

    - ``edges``: ``{(instance, port): [((instance, port), delay), ...]}``, routed connections
      and combinational cell arcs;
    - ``launches``: ``{(instance, port): clock-to-output delay}``;
    - ``checks``: ``{(instance, port): setup time}``, the endpoints;
    - ``cell_types``: ``{instance: cell type}``.
    """
    edges, launches, checks, cell_types = defaultdict(list), {}, {}, {}
    for match in _INTERCONNECT.finditer(text):
        edges[_pin(match[1])].append((_pin(match[2]), float(match[5]) / 1000))
    cells = list(_CELL.finditer(text))
    for cell, after in zip(cells, cells[1:] + [None]):
        body = text[cell.end():after.start() if after else len(text)]
        instance = _name(cell[2].strip())
        if not instance:
            continue                # the top level: interconnect only
        cell_types[instance] = cell[1]
        for arc in _IOPATH.finditer(body):
            source, sink, delay = arc[1], arc[2], float(arc[5]) / 1000
            if source in _CLOCK_PORTS:
                launches[(instance, sink)] = max(delay, launches.get((instance, sink), 0.0))
            else:
                edges[(instance, source)].append(((instance, sink), delay))
        for check in _SETUP.finditer(body):
            if check[2] in _CLOCK_PORTS:
                key = (instance, check[1])
                checks[key] = max(float(check[5]) / 1000, checks.get(key, 0.0))
    return {"edges": dict(edges), "launches": launches, "checks": checks,
            "cell_types": cell_types}


def analyse(graph, *, cells=True, wires=True):
    """Every endpoint's latest arrival (ns, setup included) and where its latest path starts:
    ``{(instance, port): (required_ns, start_instance)}``. Required time = arrival + setup; at a
    clock period ``T`` the endpoint's slack is ``T - required_ns``.

    ``cells=False`` counts every cell's delay as zero (clock-to-output, logic and setup), and
    ``wires=False`` every routed connection's (an edge between two instances): what the
    placement's wires alone, or the logic alone, would allow."""
    edges = {pin: [(sink, delay if (wires if sink[0] != pin[0] else cells) else 0.0)
                   for sink, delay in sinks]
             for pin, sinks in graph["edges"].items()}
    launches = {pin: delay if cells else 0.0 for pin, delay in graph["launches"].items()}
    reached = set(launches)
    queue = deque(launches)
    while queue:                                   # the part of the graph paths can reach
        node = queue.popleft()
        for successor, _ in edges.get(node, ()):
            if successor not in reached:
                reached.add(successor)
                queue.append(successor)
    fan_in = dict.fromkeys(reached, 0)
    for node in reached:
        for successor, _ in edges.get(node, ()):
            fan_in[successor] += 1
    arrival = {node: (delay, node[0]) for node, delay in launches.items()}
    ready = deque(node for node in reached if fan_in[node] == 0)
    ordered = 0
    while ready:                                   # longest paths, in topological order
        node = ready.popleft()
        ordered += 1
        time, start = arrival[node]
        for successor, delay in edges.get(node, ()):
            if successor not in arrival or arrival[successor][0] < time + delay:
                arrival[successor] = (time + delay, start)
            fan_in[successor] -= 1
            if fan_in[successor] == 0:
                ready.append(successor)
    if ordered != len(reached):
        raise ValueError(f"the SDF's timing graph has a combinational loop "
                         f"({len(reached) - ordered} pins on it or after it)")
    return {pin: (arrival[pin][0] + (setup if cells else 0.0), arrival[pin][1])
            for pin, setup in graph["checks"].items() if pin in arrival}


def register_family(instance):
    """The register an endpoint's cell belongs to: the net name Yosys gave its flip-flops
    (``name_TRELLIS_FF_Q_12`` -> ``name``) with indices replaced by ``*`` (``state_columns_7``
    -> ``state_columns_*``), so copies of one register count together."""
    base = re.sub(r"_TRELLIS_FF_Q.*$", "", instance)
    return re.sub(r"\d+", "*", base)


def failing(required, period_ns):
    """How many endpoints fail a clock of ``period_ns``: their path and setup take longer."""
    return sum(time > period_ns for time, _ in required.values())


def _grouped(required, period_ns, key, label):
    """Endpoints grouped by ``key(instance)``: for each group (``label``: its name), the
    endpoints, those failing at ``period_ns``, the worst slack and the register its worst path
    starts from."""
    groups = {}
    for (instance, _), (time, start) in required.items():
        name = key(instance)
        group = groups.setdefault(name, {label: name, "endpoints": 0, "failing": 0,
                                         "worst_slack_ns": None, "worst_from": None})
        slack = period_ns - time
        group["endpoints"] += 1
        group["failing"] += slack < 0
        if group["worst_slack_ns"] is None or slack < group["worst_slack_ns"]:
            group["worst_slack_ns"], group["worst_from"] = slack, register_family(start)
    for group in groups.values():
        group["worst_slack_ns"] = round(group["worst_slack_ns"], 3)
    return list(groups.values())


def by_register(required, period_ns):
    """Endpoints grouped by :func:`register_family`, worst slack first (:func:`_grouped`)."""
    return sorted(_grouped(required, period_ns, register_family, "register"),
                  key=lambda f: (f["worst_slack_ns"], -f["failing"]))


def block_of(instance, depth=2):
    """The block an endpoint's cell sits in: the first ``depth`` levels of its hierarchical name
    (``pool.slice1.t1_TRELLIS_FF_Q`` -> ``pool.slice1``), ``(top)`` for a cell of the top
    level."""
    return ".".join(instance.split(".")[:-1][:depth]) or "(top)"


def direct_wires(graph, period_ns, rows):
    """The connections that go straight from a clocked output to a timed input, no logic
    between, that still fail a clock of ``period_ns``: the part of the failing paths that no
    change of logic can mend, only placement or pipelining (a register between).

    Returns ``{"connections": ..., "failing": ..., "worst": [...]}``: how many direct
    connections the design has, how many fail, and at most ``rows`` of the failing ones, slowest
    first, each ``{"from": ..., "to": ..., "ns": ...}`` (registers named as
    :func:`register_family`; ``ns``: clock-to-output, wire and setup)."""
    edges, checks = graph["edges"], graph["checks"]
    connections, slow = 0, []
    for pin, clock_to_out in graph["launches"].items():
        for sink, wire in edges.get(pin, ()):
            if sink not in checks:
                continue
            connections += 1
            time = clock_to_out + wire + checks[sink]
            if time > period_ns:
                slow.append((time, pin[0], sink[0]))
    slow.sort(reverse=True)
    return {"connections": connections, "failing": len(slow),
            "worst": [{"from": register_family(source), "to": register_family(sink),
                       "ns": round(time, 3)} for time, source, sink in slow[:rows]]}


def by_block(required, period_ns, depth=2):
    """Endpoints grouped by :func:`block_of`, most failing first (:func:`_grouped`): where on
    the design the failures are, which the registers with the worst slack alone do not show."""
    return sorted(_grouped(required, period_ns, lambda i: block_of(i, depth), "block"),
                  key=lambda b: (-b["failing"], b["worst_slack_ns"]))
