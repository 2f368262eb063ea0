"""Operating profiles: which route each parameter takes, from which step, and the health
monitor's thresholds, in a TOML file a person edits.

A profile (see ``runtime/profiles/example.toml``)::

    [phases]
    fp32_warmup_steps = 20        # every parameter on FP32 for the first 20 steps

    [health]                      # every key optional; defaults in HEALTH_DEFAULTS
    sample_every = 5

    [[route]]                     # rules in order; the first whose pattern matches wins
    pattern = "head.*"            # fnmatch pattern over parameter names
    route = "fp32"                # fp32, gbinary or gternary

    [[route]]
    pattern = "*"
    route = "gternary"
    threshold = 2                 # gternary only: the gate threshold T
    momentum = 0.9                # optional, default 0.9: the momentum kept before compression
    start_step = 100              # optional: FP32 before this step

A parameter no rule matches stays on FP32. Every fault raises :class:`ProfileError`, which
names the file, the line and the fix.
"""

import fnmatch
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .routes import DEFAULT_MOMENTUM, FP32, KINDS, Route

__all__ = ["ProfileError", "Rule", "Health", "Profile", "HEALTH_DEFAULTS", "load_profile",
           "parse_profile"]


class ProfileError(ValueError):
    """A profile that cannot be used: ``path``, ``line`` (1-based, or ``None``) and ``fix``."""

    def __init__(self, path, line, problem, fix):
        self.path, self.line, self.problem, self.fix = path, line, problem, fix
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {problem}; fix: {fix}")


#: Health thresholds (:mod:`runtime.health`), their defaults, and what each must be.
HEALTH_DEFAULTS = {
    "loss_window": 20,            # steps in the loss moving average
    "loss_spike_ratio": 3.0,      # trip: loss above this times the moving average ...
    "loss_spike_min": 0.1,        # ... and above it by this much, in the loss's own units
    "loss_readmit_ratio": 1.5,    # re-admit only while the loss stays below this times it
    "norm_ratio_max": 4.0,        # trip: |low-bit| / |FP32| outside [1/x, x] on a sample
    "norm_readmit_max": 2.0,      # re-admit only within [1/x, x]
    "sign_agreement_min": 0.55,   # trip: fewer sampled lanes agree in sign with FP32
    "sign_readmit_min": 0.65,     # re-admit only with at least this agreement
    "sample_every": 10,           # steps between sampled comparisons with FP32
    "cooldown_steps": 50,         # steps on FP32 after a trip before probation
    "readmit_after": 3,           # healthy samples in probation before re-admission
    "devload_backoff_steps": 10,  # steps on FP32 after a Severe-overload DevLoad
    "result_agreement_min": 0.5,  # trip: a result agrees with a worker's own signs on less
                                  # of its momentum's magnitude (checked every step)
}

_INTEGER_HEALTH = {"loss_window", "sample_every", "cooldown_steps", "readmit_after",
                   "devload_backoff_steps"}


@dataclass(frozen=True)
class Rule:
    """One ``[[route]]`` entry: parameters matching ``pattern`` take ``route`` from
    ``start_step`` on (FP32 before)."""
    pattern: str
    route: Route
    start_step: int = 0
    line: int | None = None


@dataclass(frozen=True)
class Health:
    """The health thresholds; fields are the keys of :data:`HEALTH_DEFAULTS`."""
    loss_window: int
    loss_spike_ratio: float
    loss_spike_min: float
    loss_readmit_ratio: float
    norm_ratio_max: float
    norm_readmit_max: float
    sign_agreement_min: float
    sign_readmit_min: float
    sample_every: int
    cooldown_steps: int
    readmit_after: int
    devload_backoff_steps: int
    result_agreement_min: float


@dataclass(frozen=True)
class Profile:
    """A checked profile: ``rules`` in order, ``fp32_warmup_steps`` and ``health``."""
    rules: tuple
    fp32_warmup_steps: int
    health: Health
    path: str = "<profile>"

    def rule_for(self, name):
        """The first :class:`Rule` matching parameter ``name``, or ``None``."""
        return next((r for r in self.rules if fnmatch.fnmatchcase(name, r.pattern)), None)

    def route_for(self, name):
        """The route the profile asks for parameter ``name`` once its phase allows it."""
        rule = self.rule_for(name)
        return FP32 if rule is None else rule.route

    def start_step(self, name):
        """The first step on which ``name`` may take its low-bit route."""
        rule = self.rule_for(name)
        return max(self.fp32_warmup_steps, rule.start_step if rule else 0)


def load_profile(path):
    """The :class:`Profile` in the TOML file ``path``; a missing or unreadable file is a
    :class:`ProfileError` too."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise ProfileError(path, None, f"cannot read it ({error.strerror})",
                           "give the path of a TOML profile; runtime/profiles/example.toml "
                           "is one") from None
    return parse_profile(text, str(path))


def _locate(text, table, index, key):
    """The 1-based line of ``key`` in the ``index``-th ``[table]``/``[[table]]`` of ``text``
    (of the table header itself when ``key`` is ``None``), or ``None``."""
    lines = text.splitlines()
    header = re.compile(rf"^\s*\[\[?\s*{re.escape(table)}\s*\]\]?\s*(#.*)?$")
    starts = [i for i, line in enumerate(lines) if header.match(line)]
    if index >= len(starts):
        return None
    start = starts[index]
    if key is None:
        return start + 1
    assignment = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*=")
    for i in range(start + 1, len(lines)):
        if re.match(r"^\s*\[", lines[i]):
            break
        if assignment.match(lines[i]):
            return i + 1
    return start + 1


def _integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value):
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_profile(text, path="<profile>"):
    """The :class:`Profile` in TOML ``text`` (``path`` names it in errors)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line = re.search(r"line (\d+)", str(error))
        raise ProfileError(path, int(line.group(1)) if line else None, f"not TOML: {error}",
                           "correct the TOML syntax at that line") from None

    def fail(table, index, key, problem, fix):
        raise ProfileError(path, _locate(text, table, index, key) if table else None,
                           problem, fix)

    for key in data:
        if key not in ("phases", "health", "route"):
            line = next((i + 1 for i, t in enumerate(text.splitlines())
                         if re.match(rf"^\s*\[*\s*\"?{re.escape(key)}\b", t)), None)
            raise ProfileError(path, line, f"unknown table or key {key!r}",
                               "use [phases], [health] and [[route]] only")
    phases = data.get("phases", {})
    for key in phases:
        if key != "fp32_warmup_steps":
            fail("phases", 0, key, f"unknown key {key!r} in [phases]",
                 "the only phase key is fp32_warmup_steps")
    warmup = phases.get("fp32_warmup_steps", 0)
    if not _integer(warmup) or warmup < 0:
        fail("phases", 0, "fp32_warmup_steps", f"fp32_warmup_steps is {warmup!r}",
             "give a whole number of steps, 0 or more")
    health = _parse_health(data.get("health", {}), fail)
    entries = data.get("route", [])
    if not isinstance(entries, list):
        fail("route", 0, None, "route is a single table", "write each rule as [[route]]")
    if not entries:
        raise ProfileError(path, None, "no [[route]] rules",
                           "add at least one [[route]] with pattern and route")
    rules = tuple(_parse_rule(entry, i, fail, text) for i, entry in enumerate(entries))
    return Profile(rules, warmup, health, path)


def _parse_health(table, fail):
    values = dict(HEALTH_DEFAULTS)
    for key, value in table.items():
        if key not in HEALTH_DEFAULTS:
            fail("health", 0, key, f"unknown health key {key!r}",
                 f"use one of {', '.join(HEALTH_DEFAULTS)}")
        if key in _INTEGER_HEALTH and (not _integer(value) or value < 1):
            fail("health", 0, key, f"{key} is {value!r}", "give a whole number, 1 or more")
        if key not in _INTEGER_HEALTH and (not _number(value) or value <= 0):
            fail("health", 0, key, f"{key} is {value!r}", "give a positive number")
        values[key] = value
    if values["result_agreement_min"] > 1:
        fail("health", 0, "result_agreement_min",
             f"result_agreement_min is {values['result_agreement_min']!r}",
             "give a share from above 0 to 1; 0.5 catches a result that is not the workers' "
             "aggregate")
    ordered = [
        ("loss_readmit_ratio", "loss_spike_ratio", "1 < loss_readmit_ratio <= loss_spike_ratio",
         1 < values["loss_readmit_ratio"] <= values["loss_spike_ratio"]),
        ("norm_readmit_max", "norm_ratio_max", "1 < norm_readmit_max <= norm_ratio_max",
         1 < values["norm_readmit_max"] <= values["norm_ratio_max"]),
        ("sign_readmit_min", "sign_agreement_min",
         "0 < sign_agreement_min <= sign_readmit_min <= 1",
         0 < values["sign_agreement_min"] <= values["sign_readmit_min"] <= 1),
    ]
    for readmit, trip, rule, holds in ordered:
        if not holds:
            key = readmit if readmit in table else trip
            fail("health", 0, key if key in table else None,
                 f"{readmit} = {values[readmit]} and {trip} = {values[trip]} give no hysteresis",
                 f"choose values with {rule}: re-admission must be stricter than the trip")
    return Health(**values)


_RULE_KEYS = {"pattern", "route", "threshold", "momentum", "start_step"}


def _parse_rule(entry, index, fail, text):
    if "error_feedback" in entry:
        fail("route", index, "error_feedback", "error_feedback is no longer a setting",
             "remove it: each worker's kept error is not what the majority vote applies, and "
             "training diverged with it (docs/runtime.md, \"Update rule\"); the route keeps "
             "a momentum before compression instead (momentum = 0.9)")
    for key in entry:
        if key not in _RULE_KEYS:
            fail("route", index, key, f"unknown key {key!r} in rule {index + 1}",
                 f"use {', '.join(sorted(_RULE_KEYS))}")
    pattern = entry.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        fail("route", index, "pattern" if "pattern" in entry else None,
             f"rule {index + 1} has no pattern", 'add pattern = "<fnmatch pattern>", say "*"')
    kind = entry.get("route")
    if kind not in KINDS:
        fail("route", index, "route" if "route" in entry else None,
             f"rule {index + 1} has route {kind!r}",
             "route = " + ", ".join(f'"{k}"' for k in KINDS[:-1]) + f' or "{KINDS[-1]}"')
    threshold = entry.get("threshold")
    if kind == "gternary" and (not _integer(threshold) or threshold < 1):
        fail("route", index, "threshold" if "threshold" in entry else None,
             f"gternary rule {index + 1} has threshold {threshold!r}",
             "give the gate threshold T, a whole number from 1 (the device refuses more than "
             "its capacity; admission refuses more than the number of workers)")
    if kind != "gternary" and threshold is not None:
        fail("route", index, "threshold", f"{kind} rule {index + 1} has a threshold",
             "remove it: only gternary routes gate")
    momentum = entry.get("momentum", DEFAULT_MOMENTUM)
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) \
            or not 0 <= momentum < 1:
        fail("route", index, "momentum", f"momentum is {momentum!r}",
             "give a number from 0 (none) to below 1, say 0.9")
    if kind == "fp32" and "momentum" in entry:
        fail("route", index, "momentum", f"fp32 rule {index + 1} has a momentum",
             "remove it: an FP32 parameter's momentum is the optimizer's")
    start = entry.get("start_step", 0)
    if not _integer(start) or start < 0:
        fail("route", index, "start_step", f"start_step is {start!r}",
             "give a whole number of steps, 0 or more")
    route = FP32 if kind == "fp32" else Route(kind, threshold, float(momentum))
    return Rule(pattern, route, start, _locate(text, "route", index, None))
