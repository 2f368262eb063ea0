"""The health monitor: when a parameter's low-bit route is taken away, and when it is given back.

Each low-bit parameter (a *subject*) is in one of three states:

- ``ADMITTED``: it takes its low-bit route.
- ``COOLDOWN``: tripped; on FP32 until ``cooldown_steps`` have passed.
- ``PROBATION``: on FP32; each sampled comparison with FP32 must pass the *re-admission*
  thresholds (stricter than the trip's: hysteresis), ``readmit_after`` in a row, before it is
  ``ADMITTED`` again. A sample that fails the trip thresholds sends it back to ``COOLDOWN``;
  one that passes those but not the re-admission ones restarts the count.

Trips: a non-finite gradient on any worker (that parameter), a non-finite loss or a loss above
``loss_spike_ratio`` times its moving average over ``loss_window`` steps and above it by
``loss_spike_min`` (every subject: a loss near zero that triples by a hair is no spike), a
result that fails the hook's checks of every step (:mod:`runtime.hook`), and on
sampled steps (every ``sample_every``) a sign agreement with the FP32 mean below
``sign_agreement_min`` or a norm ratio ``|low-bit update| / |FP32 mean|`` outside
``[1 / norm_ratio_max, norm_ratio_max]``. A Severe-overload DevLoad puts every subject on FP32
for ``devload_backoff_steps`` without changing its state. Every transition is an event.

Inputs must be the same on every worker (the hook reduces them first), so that every worker
takes the same routes.
"""

import enum
import math
from collections import deque

__all__ = ["State", "HealthMonitor"]


class State(enum.Enum):
    ADMITTED = "admitted"
    COOLDOWN = "cooldown"
    PROBATION = "probation"


def _misses(agreement, norm_ratio, sign_min, norm_max):
    """What a sampled comparison falls short of: sign agreement below ``sign_min``, or a norm
    ratio outside ``1/norm_max`` to ``norm_max`` (empty when it passes)."""
    misses = []
    if agreement < sign_min:
        misses.append(f"sign agreement {agreement:.3f} < {sign_min}")
    if not 1 / norm_max <= norm_ratio <= norm_max:
        misses.append(f"norm ratio {norm_ratio:.3g} outside 1/{norm_max} to {norm_max}")
    return misses


class HealthMonitor:
    """The state machine of ``subjects`` (parameter names) with thresholds ``health``
    (:class:`runtime.profile.Health`); decisions go to ``events``
    (:class:`runtime.events.EventLog`)."""

    def __init__(self, health, events, subjects):
        self.health = health
        self.events = events
        self.state = {s: State.ADMITTED for s in subjects}
        self._until = {}
        self._healthy = {}
        self._losses = deque(maxlen=health.loss_window)
        self._loss_ok = True
        self._devload_until = 0

    # Checkpoints.
    def state_dict(self):
        """What the monitor knows, as plain values (for ``torch.save``)."""
        return {"state": {s: state.value for s, state in self.state.items()},
                "until": dict(self._until), "healthy": dict(self._healthy),
                "losses": list(self._losses), "loss_ok": self._loss_ok,
                "devload_until": self._devload_until}

    def load_state_dict(self, saved):
        """Take up where :meth:`state_dict` left off; raises ``ValueError`` when it was made
        for other subjects."""
        if set(saved["state"]) != set(self.state):
            raise ValueError(f"the saved monitor watches {sorted(saved['state'])}, this one "
                             f"{sorted(self.state)}: load it into a hook of the same binding")
        self.state = {s: State(value) for s, value in saved["state"].items()}
        self._until, self._healthy = dict(saved["until"]), dict(saved["healthy"])
        self._losses.clear()
        self._losses.extend(saved["losses"])
        self._loss_ok, self._devload_until = saved["loss_ok"], saved["devload_until"]

    # Queries.
    def admitted(self, subject, step):
        """Whether ``subject`` takes its low-bit route at ``step``."""
        return self.state.get(subject) == State.ADMITTED and not self.backing_off(step)

    def backing_off(self, step):
        """Whether a Severe-overload DevLoad holds every low-bit route on FP32 at ``step``."""
        return step < self._devload_until

    def sampled(self, step):
        """Whether ``step`` compares low-bit results with FP32."""
        return step % self.health.sample_every == 0

    # Transitions.
    def _trip(self, step, subject, reason):
        self.state[subject] = State.COOLDOWN
        self._until[subject] = step + 1 + self.health.cooldown_steps
        self.events.record(step, subject, "trip",
                           f"{reason}; FP32 until step {self._until[subject]}, then probation")

    def trip(self, step, subject, reason):
        """Take ``subject``'s low-bit route away at ``step`` (if it is not already)."""
        if self.state.get(subject) == State.ADMITTED:
            self._trip(step, subject, reason)
        elif subject in self.state:
            self._until[subject] = step + 1 + self.health.cooldown_steps
            self.state[subject] = State.COOLDOWN
            self.events.record(step, subject, "trip", f"{reason} (already on FP32); "
                               f"cool-down restarts, until step {self._until[subject]}")

    def tick(self, step):
        """Start of ``step``: subjects whose cool-down is over go to probation."""
        for subject, state in self.state.items():
            if state == State.COOLDOWN and step >= self._until[subject]:
                self.state[subject] = State.PROBATION
                self._healthy[subject] = 0
                self.events.record(step, subject, "probation",
                                   f"cool-down over; re-admitted after "
                                   f"{self.health.readmit_after} healthy samples in a row")

    def observe_loss(self, step, loss, undoable=False):
        """The loss of ``step`` (the mean over workers); returns whether it tripped every
        subject (non-finite, or a spike). ``undoable``: the update that led to it will be
        undone if it trips, so a spike does not enter the moving average."""
        h = self.health
        if not math.isfinite(loss):
            for subject in self.state:
                self.trip(step, subject, f"loss is {loss}")
            return True
        full = len(self._losses) == self._losses.maxlen
        average = sum(self._losses) / len(self._losses) if self._losses else loss
        spike = full and loss > h.loss_spike_ratio * average and loss > average + h.loss_spike_min
        if not (spike and undoable):
            self._losses.append(loss)
            self._loss_ok = not full or loss <= h.loss_readmit_ratio * average
        if spike:
            for subject in self.state:
                self.trip(step, subject, f"loss {loss:.4g} is {loss / average:.2f} times its "
                                         f"{h.loss_window}-step average {average:.4g} "
                                         f"(loss_spike_ratio {h.loss_spike_ratio})")
        return spike

    def observe_devload(self, step, severe, moderate):
        """DevLoad seen by any worker at ``step``: Severe overload puts every subject on FP32
        for ``devload_backoff_steps``; Moderate is noted."""
        if severe:
            self._devload_until = step + 1 + self.health.devload_backoff_steps
            self.events.record(step, "*", "fallback",
                               f"DevLoad Severe overload; low-bit routes on FP32 until step "
                               f"{self._devload_until}")
        elif moderate:
            self.events.record(step, "*", "note", "DevLoad Moderate overload")

    def observe_sample(self, step, subject, agreement, norm_ratio):
        """A sampled comparison of ``subject``'s low-bit update with the FP32 mean: the
        fraction of lanes whose signs agree, and the ratio of their norms."""
        h = self.health
        trips = _misses(agreement, norm_ratio, h.sign_agreement_min, h.norm_ratio_max)
        state = self.state[subject]
        if state == State.ADMITTED:
            if trips:
                self._trip(step, subject, "; ".join(trips))
            return
        if state == State.COOLDOWN:
            return
        if trips:
            self._trip(step, subject, "in probation: " + "; ".join(trips))
            return
        misses = _misses(agreement, norm_ratio, h.sign_readmit_min, h.norm_readmit_max)
        if not self._loss_ok:
            misses.append(f"loss above {h.loss_readmit_ratio} times its average")
        if misses:
            self._healthy[subject] = 0
            self.events.record(step, subject, "hold", "; ".join(misses) + "; count restarts")
            return
        self._healthy[subject] += 1
        if self._healthy[subject] >= h.readmit_after:
            self.state[subject] = State.ADMITTED
            self.events.record(step, subject, "readmit",
                               f"{self._healthy[subject]} healthy samples in a row")
