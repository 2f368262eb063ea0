"""Routes a gradient can take (``docs/spec.md`` section 2): FP32 through ``all_reduce``, or one
of the device's aggregating modes."""

from dataclasses import dataclass

from spec.params import Mode

__all__ = ["Route", "FP32", "FIDELITY", "KINDS", "DEFAULT_MOMENTUM"]

#: Route names as profiles spell them, and the device mode of each.
_MODES = {"fp32": Mode.IDENTITY, "gbinary": Mode.GBINARY, "gternary": Mode.GTERNARY}

#: Route kinds, as profiles spell them.
KINDS = tuple(_MODES)


#: The momentum of a low-bit route unless its profile rule says otherwise: SGD's usual 0.9.
DEFAULT_MOMENTUM = 0.9


@dataclass(frozen=True)
class Route:
    """A route: ``kind`` is ``"fp32"``, ``"gbinary"`` or ``"gternary"``; ``threshold`` is the
    G-Ternary gate threshold ``T`` (``None`` for the others); ``momentum`` is the factor of
    the momentum each worker keeps of a low-bit parameter's gradient before it is compressed
    (:mod:`runtime.lowbit`; 0 for FP32, whose momentum is the optimizer's)."""
    kind: str
    threshold: int | None = None
    momentum: float = DEFAULT_MOMENTUM

    def __post_init__(self):
        if self.kind not in _MODES:
            raise ValueError(f"route must be one of {sorted(_MODES)}, not {self.kind!r}")
        if (self.kind == "gternary") != (self.threshold is not None):
            raise ValueError(f"a threshold goes with gternary routes only, not {self!r}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must be from 0 to below 1, not {self.momentum!r}")

    @property
    def mode(self):
        """The device mode (:class:`spec.params.Mode`) of the route."""
        return _MODES[self.kind]

    @property
    def low_bit(self):
        return self.kind != "fp32"

    def __str__(self):
        return self.kind if self.threshold is None else f"{self.kind}(T={self.threshold})"


#: The full-precision route.
FP32 = Route("fp32", momentum=0.0)

#: Route kinds by how much they keep of a gradient: a tie between tied parameters' routes
#: takes the one that keeps most.
FIDELITY = {"fp32": 2, "gternary": 1, "gbinary": 0}
