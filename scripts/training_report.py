"""The report of ``make train`` (:mod:`scripts.train`): the claims in words and numbers, per
task a table and a figure, the calibration's scores, the fault run's events and the hook's
overhead, from the results the training workers wrote."""

import math
import os
import statistics

__all__ = ["FINAL_LOSS_STEPS", "final_loss", "plot", "report", "runs_of"]

#: The hook's phases (:attr:`runtime.hook.NeuronFabricHook.timing`) the overhead table shows.
_PHASES = ("compress", "exchange", "fp32", "pack", "reduce", "unpack")


def runs_of(task_results):
    """The runs of a task's results (without its calibration)."""
    return {k: v for k, v in task_results.items() if k != "calibration"}


def plot(task, results, path):
    """Draw a task's test accuracy and training loss per run to the PNG ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for name, r in runs_of(results).items():
        steps, hits = zip(*r["accuracy"])
        left.plot(steps, hits, label=name)
        right.plot(r["loss"], label=name, linewidth=0.8)
    if "fault" in results:
        for axis in (left, right):
            axis.axvspan(*results["fault"]["fault"], color="red", alpha=0.15,
                         label="fault injected")
    left.set(title=f"{task}: test accuracy", xlabel="step", ylabel="accuracy")
    right.set(title=f"{task}: training loss (mean of workers)", xlabel="step", ylabel="loss",
              yscale="log")
    left.legend()
    right.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


#: Steps at the end of a run whose mean loss is its final loss.
FINAL_LOSS_STEPS = 20


def final_loss(r):
    """The mean loss of a run's last ``FINAL_LOSS_STEPS`` steps (all of them, if fewer)."""
    last = r["loss"][-FINAL_LOSS_STEPS:]
    return sum(last) / len(last)


def _accuracy(r):
    return r["accuracy"][-1][1]


def _by_route(traffic):
    return ", ".join(f"{k} {v:.0f}" for k, v in sorted(traffic.items())) or "-"


def _with_the_device(r):
    """Bytes a worker would send per step with a NEURON-Fabric device: its FP32 all_reduce
    (the FP32 routes, fallbacks and sampled steps included), the exchange of scales and flags,
    and its contribution lines instead of the collective backend's lanes."""
    return {"fp32": r["traffic"].get("fp32", 0), "scales": r["traffic"].get("scales", 0),
            **r["device_traffic"]}


def _table(results):
    lines = [f"| run | test accuracy | loss, last {FINAL_LOSS_STEPS} steps | steps with low-bit "
             "| trips | sent per step by route, this run | % of FP32 | sent per step with the "
             "device | % of FP32 | the paper's accounting, % of FP32 | replicas |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in runs_of(results).items():
        wire, device = sum(r["traffic"].values()), sum(_with_the_device(r).values())
        lines.append(f"| {name} | {_spread(r)} | {_spread(r, 'loss')} "
                     f"| {r['low_bit_steps']} | {r['trips']} | {_by_route(r['traffic'])} | "
                     f"{100 * wire / r['fp32_bytes']:.1f} | {_by_route(_with_the_device(r))} "
                     f"| {100 * device / r['fp32_bytes']:.1f} "
                     f"| {100 * r['paper_bytes'] / r['fp32_bytes']:.1f} | {_replicas(r)} |")
    return lines


def _replicas(r):
    """Whether the workers' copies of the model ended identical in every seed (their
    checksums)."""
    differ = [seed for seed in r["by_seed"] if len(set(seed["replicas"])) > 1]
    if not differ:
        return "identical in every seed"
    return "**differ** in " + "; ".join(
        f"seed {seed['seed']} (" + ", ".join(f"{c:08x}" for c in seed["replicas"]) + ")"
        for seed in differ)


def _course(r):
    """How a run's loss went: the first step whose loss passed twice the first step's, and
    the first trip of the health monitor."""
    up = next((step for step, loss in enumerate(r["loss"]) if loss > 2 * r["loss"][0]), None)
    trip = next((e.split(":")[0] for e in r["events"] if ": trip: " in e), None)
    return (f"loss {r['loss'][0]:.3g} at step 0, {final_loss(r):.4g} at the end, "
            f"twice its first value {'never' if up is None else f'from step {up}'}; first "
            f"trip {trip or 'none'}")


def _seeds(r, key="accuracy"):
    """``(mean, standard deviation, seeds)`` of a run's final ``key`` over its seeds."""
    values = [seed[key] for seed in r["by_seed"]]
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0, \
        len(values)


def _spread(r, key="accuracy"):
    mean, sd, n = _seeds(r, key)
    return f"{mean:.3f} ± {sd:.3f}"


def _difference(a, b):
    """``(mean of a - mean of b, twice its standard error)``: beyond the second is beyond seed
    noise (about 95%, if the seeds' figures are normal)."""
    (ma, sa, na), (mb, sb, nb) = _seeds(a), _seeds(b)
    return ma - mb, 2 * math.sqrt(sa * sa / na + sb * sb / nb)


def _verdict(holds):
    return "**holds**" if holds else "**does not hold**"


def _claims(results):
    """Each claim with its numbers (mean ± standard deviation over the seeds) and a verdict,
    from rules fixed in advance: (a) within noise, |difference| <= twice its standard error;
    (b) beyond it; (c) the head on FP32 recovers at least half of (b)'s gap; (d) the
    calibrated profile keeps the head on FP32 in every seed and trains within noise of
    (c)."""
    out = []
    digits, text = results.get("digits", {}), results.get("text", {})
    if "fp32" in digits and "gbinary" in digits:
        diff, noise = _difference(digits["gbinary"], digits["fp32"])
        line = (f"- (a) low-bit within noise of FP32 on the easy task (digits): FP32 "
                f"{_spread(digits['fp32'])}, G-Binary {_spread(digits['gbinary'])} "
                f"({100 * diff:+.1f} points, noise ±{100 * noise:.1f})")
        if "gternary" in digits:
            ternary, ternary_noise = _difference(digits["gternary"], digits["fp32"])
            line += (f", G-Ternary {_spread(digits['gternary'])} ({100 * ternary:+.1f}, "
                     f"±{100 * ternary_noise:.1f})")
        out.append(f"{line}: {_verdict(abs(diff) <= noise)}.")
    gap = None
    if "fp32" in text and "gbinary" in text:
        gap, noise = _difference(text["fp32"], text["gbinary"])
        out.append(f"- (b) every parameter low-bit loses clearly on the hard task (text): FP32 "
                   f"{_spread(text['fp32'])} ({_course(text['fp32'])}), all G-Binary "
                   f"{_spread(text['gbinary'])} ({_course(text['gbinary'])}), "
                   f"{100 * gap:+.1f} points for FP32, noise ±{100 * noise:.1f}: "
                   f"{_verdict(gap > noise)}.")
    if gap is not None and "head_fp32" in text:
        got = _seeds(text["head_fp32"])[0] - _seeds(text["gbinary"])[0]
        share = got / gap if gap > 0 else None
        out.append(f"- (c) the head on FP32 recovers most of that loss: "
                   f"{_spread(text['head_fp32'])}, "
                   + (f"{100 * share:.0f}% of the gap" if share is not None else
                      "there is no gap to recover")
                   + f" ({_course(text['head_fp32'])}): "
                   f"{_verdict(share is not None and gap > noise and share >= 0.5)}.")
    if "calibrated" in text:
        kept = [sorted(name for name, route in seed["routes"].items() if route == "fp32")
                for seed in text["calibrated"]["by_seed"]]
        head = all("embed.weight" in names for names in kept)
        line = (f"- (d) calibration finds the head and its profile trains like (c): FP32 kept "
                f"per seed: {'; '.join(', '.join(names) or 'nothing' for names in kept)}; the "
                f"calibrated runs reach {_spread(text['calibrated'])}")
        if "head_fp32" in text:
            diff, noise = _difference(text["calibrated"], text["head_fp32"])
            line += f", {100 * diff:+.1f} points from (c), noise ±{100 * noise:.1f}"
            out.append(f"{line}: {_verdict(head and abs(diff) <= noise)}.")
        else:
            out.append(f"{line}; (c) was not run, so only finding the head is judged: "
                       f"{_verdict(head)}.")
    if "fault" in digits:
        r = digits["fault"]
        first = next((e for e in r["events"] if ": trip: " in e), "no trip")
        back = [e for e in r["events"] if ": readmit: " in e]
        out.append(f"- (e) fault on steps {r['fault'][0]} to {r['fault'][1] - 1}: first "
                   f"trip \"{first}\"; {len(back)} re-admissions, the last \""
                   f"{back[-1] if back else 'none'}\"; final accuracy {_accuracy(r):.3f}.")
    out.append("- (f) traffic per step: the tables' last five columns: what each worker sent "
               "in this run (the collective backend), what it would send with the device, "
               "FP32 routes and sampled steps included, and the paper's accounting, which "
               "counts each parameter's route once and nothing else.")
    return out


def report(results, args, seconds):
    """The Markdown report of ``results``."""
    lines = ["# make train: the runtime on real data", "",
             f"{args.workers} worker processes (gloo), {args.steps} steps of {args.batch} "
             f"samples per worker, SGD lr {args.lr} (momentum 0.9 on FP32 parameters, in "
             f"the hook before compression on low-bit ones), seeds "
             f"{', '.join(map(str, args.seeds))} (accuracy and loss: mean ± standard deviation "
             f"over them; the other columns, the curves and the events: seed {args.seeds[0]}); "
             f"{seconds:.0f} s wall. Command: `python -m scripts.train --steps {args.steps} "
             f"--workers {args.workers} --seeds {' '.join(map(str, args.seeds))}` "
             f"(`make train`).", "", "## Claims", ""]
    overhead = results.get("overhead", {})
    results = {k: v for k, v in results.items() if k != "overhead"}
    lines += _claims(results)
    for task, task_results in results.items():
        if not runs_of(task_results):
            continue
        lines += ["", f"## {task}", "", f"![{task}](training_{task}.png)", ""]
        lines += _table(task_results)
        if "calibration" in task_results:
            calibration = task_results["calibration"]
            lines += ["", f"Calibration: {args.calibration_steps} steps on FP32, every "
                      "parameter's G-Binary aggregate scored by its mean cosine with the FP32 "
                      f"mean; below {args.min_cosine} stays on FP32:", "",
                      "| parameter | cosine | sign agreement | norm ratio |", "|---|---|---|---|"]
            lines += [f"| {name} | {c:.3f} | {a:.3f} | {r:.3f} |" for name, (c, a, r, _)
                      in sorted(calibration["scores"].items())]
        if "fault" in task_results:
            r = task_results["fault"]
            lines += ["", f"Health monitor, fault injected on steps {r['fault'][0]} to "
                      f"{r['fault'][1] - 1} (every result line inverted). Events:", ""]
            lines += [f"- {e}" for e in r["events"]] or ["- none"]
    if overhead:
        lines += _overhead(overhead, args)
    lines += ["", "Traffic is the bytes each worker sends per step, averaged over the run, "
              "from the routes actually taken, as a share of its FP32 gradient. *This run*: "
              "what its collectives carried: FP32 gradients, the collective backend's "
              "all_reduce of one int32 per low-bit lane (`gbinary`, `gternary`: a cluster "
              "without the device sends more than FP32 there), and the small exchange of "
              "scales, flags and DevLoad per bucket (`scales`). *With the device*: the same "
              "FP32 and `scales`, and the packed contribution lines the worker would write to a "
              "NEURON-Fabric device instead of the lanes (it reads as many result lines "
              "back). Every `sample_every` steps (a profile setting) the health monitor's "
              "comparison sends the low-bit parameters' FP32 gradients too, and a parameter a "
              "trip sent to FP32 sends its FP32 gradient: both are in these two columns. *The "
              "paper's accounting* counts each parameter once on the route its profile gives "
              "it, lines or FP32, and nothing else."]
    return "\n".join(lines) + "\n"


def _overhead(overhead, args):
    """The overhead section: every mode of :data:`scripts.overhead.MODES` side by side."""
    lines = ["", "## Overhead, against plain DDP and PyTorch's compression hooks", "",
             f"Every mode trains its own copy of the model from the same weights on the same "
             f"batches, the modes taking turns step by step ({args.overhead_steps} timed steps "
             f"after {args.overhead_warmup}, the order rotating), {args.workers} workers "
             f"sharing this machine's {os.cpu_count()} cores. Milliseconds per whole training "
             f"step on rank 0 (forward, backward, hook, optimizer): median and quartiles; bytes "
             f"each worker sent per step (PyTorch's hooks: what their collectives carried; "
             f"plain DDP: its gradient); test accuracy after the last step; the NEURON-Fabric "
             f"hook's phases in ms per step, without sampled comparisons.", "",
             "| task | mode | ms per step | quartiles | × plain DDP | bytes per step | % of FP32 "
             "| accuracy | hook | " + " | ".join(_PHASES) + " |",
             "|---" * (9 + len(_PHASES)) + "|"]
    for task, modes in overhead.items():
        plain = modes["plain DDP"]["ms"]
        for mode, f in modes.items():
            phases = f["phases"]
            cells = [f"{phases[k]:.2f}" if k in phases else "-" for k in _PHASES]
            low, high = f["quartiles"]
            hook = f"{phases['hook']:.2f}" if "hook" in phases else "-"
            lines.append(f"| {task} | {mode} | {f['ms']:.2f} | {low:.2f}-{high:.2f} | "
                         f"{f['ms'] / plain:.2f} | {f['bytes']:,.0f} | "
                         f"{100 * f['bytes'] / f['fp32_bytes']:.1f} | {f['accuracy']:.3f} | "
                         f"{hook} | " + " | ".join(cells) + " |")
    lines += ["", "A bucket with every parameter on FP32 is all-reduced asynchronously, as "
              "PyTorch's default hook does, and overlaps the rest of the backward pass; a "
              "bucket with low-bit parameters decides on the way (scales, checks) and waits "
              "for its collectives on the hook's own thread, while the backward pass goes "
              "on (on a machine with a spare core). `reduce` of the device model is the "
              "golden model in Python, line by line, not the device's speed."]
    return lines
