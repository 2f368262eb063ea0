"""Gradient traffic per training step: FP32 against G-Binary and G-Ternary, with and without
the task head on the FP32 path, from the layer tables in :mod:`scripts.models`.

Every tensor occupies whole lines (a region per tensor), in each format: FP32 32 bits per
element, G-Binary 1, G-Ternary 2 (our lane format) or 1.6 (five trits per byte, a denser
packing the device does not implement). A worker writes its gradient and reads the aggregate
back, so link bytes per worker and step are twice the stored bytes. The device side counts
device-memory lines read and written per step for all ``WORKERS`` workers together: a low-bit
line is aggregated on chip, so it costs its ``n`` line read once (the fill of a fresh line)
and one write-back of ``1 + state_lines`` lines when its last contribution arrives, and its
result reads come from the slot; an FP32 line is written and read by every worker.
"""

from dataclasses import dataclass
from math import ceil, prod

from spec.params import DatapathParams

from .models import MODELS

__all__ = ["FORMATS", "DEVICE_FORMATS", "WORKERS", "Traffic", "tensor_bytes", "step_traffic",
           "traffic_table", "markdown"]

#: name -> bits per element on the link
FORMATS = {"FP32": 32.0, "G-Binary": 1.0, "G-Ternary (2-bit lanes)": 2.0,
           "G-Ternary (1.6-bit dense)": 1.6}
#: workers per step on the device side (the paper's configuration)
WORKERS = 8

#: the formats the device stores (the dense packing exists on the link only)
DEVICE_FORMATS = ("FP32", "G-Binary", "G-Ternary (2-bit lanes)")


def tensor_bytes(elements, bits, line_bytes):
    """Bytes of whole lines holding ``elements`` at ``bits`` per element (1.6 bits: five trits
    per byte)."""
    stored = ceil(elements / 5) if bits == 1.6 else ceil(elements * bits / 8)
    return ceil(stored / line_bytes) * line_bytes


@dataclass
class Traffic:
    model: str
    fmt: str
    head_fp32: bool
    link_bytes: int            # per worker and step: write + read back
    fp32_link_bytes: int
    device_lines_read: int     # per step, all workers; None where the device has no such format
    device_lines_written: int

    @property
    def ratio(self):
        return self.link_bytes / self.fp32_link_bytes


def step_traffic(model, fmt, head_fp32, params=DatapathParams()):
    """The :class:`Traffic` of one worker's step for ``model`` in ``fmt``."""
    rows = MODELS[model][1]
    line = params.line_bytes
    stored = fp32 = lines_read = lines_written = 0
    for _, shape, head in rows:
        elements = prod(shape)
        fp32 += tensor_bytes(elements, 32, line)
        exact = fmt == "FP32" or (head and head_fp32)
        size = tensor_bytes(elements, 32 if exact else FORMATS[fmt], line)
        stored += size
        lines = size // line
        if exact:
            lines_read += WORKERS * lines
            lines_written += WORKERS * lines
        else:      # one fill (the n line), one write-back (result line and state)
            lines_read += lines
            lines_written += lines * (1 + params.state_lines)
    if fmt not in DEVICE_FORMATS:
        lines_read = lines_written = None
    return Traffic(model, fmt, head_fp32, 2 * stored, 2 * fp32, lines_read, lines_written)


def traffic_table(params=DatapathParams()):
    """Every model x format x head placement."""
    return [step_traffic(model, fmt, head, params) for model in MODELS for fmt in FORMATS
            for head in ((False,) if fmt == "FP32" else (False, True))]


def markdown(rows):
    out = ["| model | format | head | link MB per worker-step | % of FP32 | device lines read "
           f"per step ({WORKERS} workers) | device lines written |",
           "|---|---|---|---|---|---|---|"]
    for t in rows:
        head = "FP32" if t.head_fp32 or t.fmt == "FP32" else "low-bit"
        lines = ("-", "-") if t.device_lines_read is None else (
            f"{t.device_lines_read:,}", f"{t.device_lines_written:,}")
        out.append(f"| {t.model} | {t.fmt} | {head} | {t.link_bytes / 1e6:.2f} | "
                   f"{100 * t.ratio:.2f} | {lines[0]} | {lines[1]} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(markdown(traffic_table()))
