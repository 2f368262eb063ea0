"""Calibration: a short run on FP32 that scores, per parameter, how well its low-bit aggregate
agrees with the FP32 mean, and proposes a profile that keeps the poorly agreeing ones on FP32.

:class:`Calibrator` is a DDP communication hook (:class:`runtime.hook.NeuronFabricHook`) whose
every step applies the FP32 mean to every parameter, while each parameter the base profile
puts on a low-bit route is also reduced that way (its momentum, as the hook reduces it), and
compared (:func:`runtime.hook.compare`).
The score of a parameter is the mean, over the steps, of the cosine similarity between its
low-bit update and the FP32 mean: 1 is the same direction, 0 no agreement. A step where no lane
is non-zero in both is no evidence and is left out; a parameter without any is not scored.
:meth:`Calibrator.propose` writes a profile, as TOML text, with an ``fp32`` rule for each
parameter scored below ``min_cosine`` (first, so they win), then the base profile's rules.
"""

import glob
import json
from collections import defaultdict

from .hook import NeuronFabricHook, compare
from .routes import FP32

__all__ = ["Calibrator"]


class Calibrator(NeuronFabricHook):
    """The hook's state for a calibration run; arguments as :class:`NeuronFabricHook`'s, with
    the base ``profile`` whose low-bit routes are scored."""

    def __init__(self, binding, profile, reducer, events, group=None):
        super().__init__(binding, profile, reducer, events, group)
        self.profile = profile
        #: ``{name: [(agreement, norm ratio, cosine) per step]}``.
        self.samples = defaultdict(list)

    def route(self, binding):
        return FP32

    def sampled(self):
        return True

    def _shadowed(self, b):
        return b.route.low_bit and self.step >= b.start_step

    def _compare(self, samples):
        for b, update, mean in samples:
            sample = compare(update, mean)
            if sample[0] is not None:   # no lane non-zero in both: no evidence, no score
                self.samples[b.name].append(sample)

    def scores(self):
        """``{name: (mean cosine, mean sign agreement, mean norm ratio, steps)}``."""
        out = {}
        for name, rows in self.samples.items():
            agreement, ratio, cosine = (sum(column) / len(rows) for column in zip(*rows))
            out[name] = (cosine, agreement, ratio, len(rows))
        return out

    def propose(self, min_cosine):
        """The proposed profile (TOML text): parameters whose mean cosine is below
        ``min_cosine`` on FP32, the base profile's rules after them."""
        scores = self.scores()
        names = {b.name: b.names for b in self.binding.parameters}
        lines = [f"# Proposed by runtime.calibrate from {self.step} steps on "
                 f"{self.binding.world_size} workers: parameters whose low-bit aggregate has a",
                 f"# mean cosine below {min_cosine} with the FP32 mean stay on FP32.",
                 "# Scores (cosine, sign agreement, norm ratio):"]
        lines += [f"#   {name}: {c:.3f}, {a:.3f}, {r:.3f}"
                  for name, (c, a, r, _) in sorted(scores.items())]
        lines += ["", "[phases]", f"fp32_warmup_steps = {self.profile.fp32_warmup_steps}", "",
                  "[health]"]
        lines += [f"{key} = {value!r}" for key, value in vars(self.profile.health).items()]
        for name, (cosine, *_) in sorted(scores.items()):
            if cosine < min_cosine:
                for alias in names[name]:
                    lines += ["", f"# {alias}: cosine {cosine:.3f} < {min_cosine}", "[[route]]",
                              f"pattern = {json.dumps(glob.escape(alias))}", 'route = "fp32"']
        for rule in self.profile.rules:
            lines += ["", "[[route]]", f"pattern = {json.dumps(rule.pattern)}",
                      f'route = "{rule.route.kind}"']
            if rule.route.threshold is not None:
                lines.append(f"threshold = {rule.route.threshold}")
            if rule.route.low_bit:
                lines.append(f"momentum = {rule.route.momentum!r}")
            if rule.start_step:
                lines.append(f"start_step = {rule.start_step}")
        return "\n".join(lines) + "\n"
