"""The runtime's event log: every admission, fallback, trip and re-admission is one event.

Events are kept in order (for tests and reports) and also sent to the ``logging`` logger
``runtime`` (INFO, or WARNING for a fallback or a trip), so that a training log shows them.
"""

import logging
from dataclasses import dataclass

import torch.distributed as dist

__all__ = ["Event", "EventLog"]

_LOGGER = logging.getLogger("runtime")

#: Decisions logged at WARNING: a route was taken away, or a profile rule matched nothing.
_WARNINGS = {"refuse", "fallback", "trip", "undo", "unmatched"}


@dataclass(frozen=True)
class Event:
    """One decision: at ``step`` (``None`` before training), about ``subject`` (a parameter
    name, or ``"*"`` for all), ``decision`` (a verb such as ``admit``, ``refuse``, ``trip``,
    ``readmit``) and the ``reason`` in words."""
    step: int | None
    subject: str
    decision: str
    reason: str

    def __str__(self):
        step = "setup" if self.step is None else f"step {self.step}"
        return f"{step}: {self.subject}: {self.decision}: {self.reason}"


class EventLog:
    """An ordered list of :class:`Event`. Every worker records the same decisions; only the
    process of rank ``log_rank`` (of the default process group, when there is one) logs
    them, so that a training log shows each once."""

    def __init__(self, log_rank=0):
        self.events = []
        self.log_rank = log_rank

    def record(self, step, subject, decision, reason):
        event = Event(step, subject, decision, reason)
        self.events.append(event)
        if not dist.is_initialized() or dist.get_rank() == self.log_rank:
            _LOGGER.log(logging.WARNING if decision in _WARNINGS else logging.INFO, "%s",
                        event)
        return event

    def of(self, decision=None, subject=None):
        """The events with this ``decision`` and ``subject`` (either may be ``None``: any)."""
        return [e for e in self.events if decision in (None, e.decision)
                and subject in (None, e.subject)]

    def __iter__(self):
        return iter(self.events)

    def __len__(self):
        return len(self.events)
