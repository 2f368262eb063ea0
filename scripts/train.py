"""``make train``: the host runtime's claims in miniature, on real data that works offline
(``python -m scripts.train --help``).

Workers are processes on this machine (gloo on 127.0.0.1, ``torch.multiprocessing.spawn``),
each drawing its own batches with a fixed seed; every run of a task starts from the same
weights. Low-bit gradients are reduced by the collective backend
(:class:`runtime.reducers.CollectiveReducer`), bit-exact with the device model
(``verif/runtime/test_ddp.py``), on the default device's capabilities. Two tasks:

- ``digits``: scikit-learn's bundled digits (1,797 8x8 images, 10 classes; a fixed 80/20
  split), an MLP with a ``head``. Runs ``fp32`` (every parameter on FP32), ``gbinary`` and
  ``gternary`` (every parameter low-bit from the first step), ``head_fp32`` (G-Binary, the head
  on FP32) and ``fault`` (G-Binary with a device fault injected, every result line inverted,
  on a tenth of the steps: the health monitor must catch it, fall back and re-admit).
- ``text``: next-character prediction on Python's own ``textwrap`` and ``argparse`` sources
  (every character a class; the last tenth held out), an embedding, an MLP and a head tied to
  the embedding. Runs ``fp32``, ``gbinary``, ``head_fp32`` (the tied head, and so the
  embedding, on FP32) and ``calibrated``: a calibration run (:mod:`runtime.calibrate`) on
  FP32 scores every parameter's G-Binary aggregate, and the proposed profile (the parameters
  below ``--min-cosine`` on FP32) is trained from the same first weights.

Then per task the hook's overhead: milliseconds per training step of plain DDP, of the hook
with every parameter on FP32, and with every parameter on G-Binary through each backend, with
the hook's time per phase.

Writes ``<out>/training.md`` (the claims, per task a table with accuracy, loss, trips and the
traffic by the routes taken, the fault run's events, the calibration's scores, the overhead),
``<out>/training.json`` and ``<out>/training_<task>.png`` (test accuracy and training loss).
"""

import argparse
import datetime
import json
import logging
import os
import statistics
import sysconfig
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from bench.runtime import bind_golden
from runtime.calibrate import Calibrator
from runtime.events import EventLog
from runtime.hook import NeuronFabricHook
from runtime.profile import parse_profile
from runtime.reducers import CollectiveReducer, DeviceModelReducer, FaultyReducer
from spec.params import ControllerParams

__all__ = ["TASKS", "OVERHEAD", "arguments", "main"]

_HEALTH = """\
[health]
sample_every = 5
cooldown_steps = 20
readmit_after = 2
"""
_ALL = '[[route]]\npattern = "*"\nroute = "{}"\n'
_HEAD_FP32 = '[[route]]\npattern = "head.*"\nroute = "fp32"\n' + _ALL.format("gbinary")

#: The run whose profile the calibration run starts from.
CALIBRATED_FROM = "gbinary"
#: Profiles of each task's runs, by name; ``calibrated`` (``None``) is made by the calibration
#: run from the ``CALIBRATED_FROM`` profile.
TASKS = {
    "digits": {
        "fp32": _ALL.format("fp32"),
        "gbinary": _ALL.format("gbinary"),
        "gternary": '[[route]]\npattern = "*"\nroute = "gternary"\nthreshold = 2\n',
        "head_fp32": _HEAD_FP32,
        "fault": _HEALTH + _ALL.format("gbinary"),
    },
    "text": {
        "fp32": _ALL.format("fp32"),
        "gbinary": _ALL.format("gbinary"),
        "head_fp32": _HEAD_FP32,
        "calibrated": None,
    },
}


class Classifier(torch.nn.Module):
    """An MLP: ``body`` (one hidden layer) and ``head``."""

    def __init__(self, inputs, hidden, classes):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(inputs, hidden), torch.nn.ReLU())
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


class CharModel(torch.nn.Module):
    """Next character from the ``context`` before it: an ``embed``-ding, a ``body`` and a
    ``head`` whose weight is the embedding's."""

    def __init__(self, classes, context, width=32, hidden=128):
        super().__init__()
        self.embed = torch.nn.Embedding(classes, width)
        self.body = torch.nn.Sequential(torch.nn.Linear(context * width, hidden),
                                        torch.nn.Tanh(), torch.nn.Linear(hidden, width))
        self.head = torch.nn.Linear(width, classes, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, x):
        return self.head(self.body(self.embed(x).flatten(1)))


def _digits(args):
    """``(x_train, y_train, x_test, y_test, make_model)`` of the digits, a fixed 80/20 split."""
    from sklearn.datasets import load_digits
    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16
    y = torch.tensor(data.target, dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(args.seed))
    cut = len(y) * 4 // 5
    return (x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]],
            lambda: Classifier(x.shape[1], args.hidden, 10))


def _text(args):
    """The same for next-character prediction on two of Python's own modules: every window
    of ``args.context`` characters and the character after it; the last tenth is the test
    set."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    text = "".join((stdlib / name).read_text() for name in ("textwrap.py", "argparse.py"))
    alphabet = sorted(set(text))
    codes = torch.tensor([alphabet.index(c) for c in text], dtype=torch.int64)
    windows = codes.unfold(0, args.context + 1, 1)
    cut = len(windows) * 9 // 10
    x, y = windows[:, :-1], windows[:, -1]
    return (x[:cut], y[:cut], x[cut:][::7], y[cut:][::7],
            lambda: CharModel(len(alphabet), args.context))


def _setup(task, profile_text, args, world, label):
    """``(model, binding, profile, events, device)`` of a fresh model bound for one run."""
    torch.manual_seed(args.seed)
    model = task[4]()
    events, profile = EventLog(), parse_profile(profile_text, f"<{label} profile>")
    binding, device = bind_golden(model, profile, ControllerParams(), world, events)
    return model, binding, profile, events, device


def _loop(model, hook, task, args, steps):
    """Train ``model`` under ``hook`` for ``steps``; returns the losses, the test accuracy and
    the bytes per step, averaged over the run, on the wire (:attr:`NeuronFabricHook.traffic`)
    and of device lines (:attr:`NeuronFabricHook.device_traffic`), each by route."""
    x_train, y_train, x_test, y_test, _ = task
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    hook.register(ddp)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    batches = torch.Generator().manual_seed(args.seed * 1000 + dist.get_rank())
    losses, accuracy, traffic, device_traffic = [], [], Counter(), Counter()
    for step in range(steps):
        index = torch.randint(0, len(y_train), (args.batch,), generator=batches)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x_train[index]), y_train[index])
        loss.backward()
        losses.append(hook.observe_loss(loss.item()))
        optimizer.step()
        traffic.update(hook.traffic)
        device_traffic.update(hook.device_traffic)
        if step % args.eval_every == 0 or step == steps - 1:
            with torch.no_grad():
                hits = (model(x_test).argmax(dim=1) == y_test).float().mean().item()
            accuracy.append((step, hits))
    return (losses, accuracy, {k: v / steps for k, v in traffic.items()},
            {k: v / steps for k, v in device_traffic.items()})


def _train(name, profile_text, task, args, world):
    """One run on every worker; returns its curves, traffic and events."""
    model, binding, profile, events, _ = _setup(task, profile_text, args, world, name)
    fault = range(args.steps // 3, args.steps // 3 + args.steps // 10)
    reducer = FaultyReducer(set(fault)) if name == "fault" else CollectiveReducer()
    hook = NeuronFabricHook(binding, profile, reducer, events)
    hook.trace = []
    if name == "fault":
        reducer.hook = hook
    started = time.perf_counter()
    losses, accuracy, traffic, device_traffic = _loop(model, hook, task, args, args.steps)
    return {"loss": losses, "accuracy": accuracy, "traffic": traffic,
            "device_traffic": device_traffic,
            "fp32_bytes": sum(p.element_size() * p.numel() for p in model.parameters()),
            "routes": {b.name: str(b.route) for b in binding.parameters},
            "events": [str(e) for e in events if e.step is not None],
            "low_bit_steps": len({s for s, _, route in hook.trace if route != "fp32"}),
            "trips": sum(1 for e in events if e.decision == "trip"),
            "fault": [fault.start, fault.stop], "seconds": time.perf_counter() - started}


def _calibrate(task, base, args, world):
    """The calibration run from the ``base`` profile (TOML text): ``(proposed profile,
    scores)``."""
    model, binding, profile, events, _ = _setup(task, base, args, world, "calibration")
    calibrator = Calibrator(binding, profile, CollectiveReducer(), events)
    _loop(model, calibrator, task, args, args.calibration_steps)
    return calibrator.propose(args.min_cosine), calibrator.scores()


#: The modes of the overhead measurement: profile, backend (``None``: plain DDP, no hook).
_NO_SAMPLES = "[health]\nsample_every = 1000000\n"
OVERHEAD = {
    "plain DDP": (_ALL.format("fp32"), None),
    "hook, all FP32": (_ALL.format("fp32"), CollectiveReducer),
    "hook, G-Binary, collective": (_NO_SAMPLES + _ALL.format("gbinary"), CollectiveReducer),
    "hook, G-Binary, device model": (_NO_SAMPLES + _ALL.format("gbinary"), DeviceModelReducer),
}
_PHASES = ("compress", "exchange", "fp32", "pack", "reduce", "unpack")


def _overhead(task, args, world):
    """``{mode: (ms per step, {phase: ms per step})}`` on rank 0: the median of whole training
    steps (forward, backward, hook, optimizer) after ``args.overhead_warmup`` steps, and the
    hook's phases averaged over those steps, without the health monitor's sampled comparisons
    (the step-0 sample falls in the warm-up)."""
    x_train, y_train = task[0], task[1]
    out = {}
    for mode, (profile_text, backend) in OVERHEAD.items():
        model, binding, profile, events, device = _setup(task, profile_text, args, world, mode)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        hook = None
        if backend is not None:
            reducer = backend(device) if backend is DeviceModelReducer else backend()
            hook = NeuronFabricHook(binding, profile, reducer, events)
            hook.register(ddp)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
        batches = torch.Generator().manual_seed(args.seed * 1000 + dist.get_rank())
        times = []
        for step in range(args.overhead_warmup + args.overhead_steps):
            if step == args.overhead_warmup:
                dist.barrier()
                times = []
                if hook is not None:
                    hook.timing = Counter()
            index = torch.randint(0, len(y_train), (args.batch,), generator=batches)
            started = time.perf_counter()
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(ddp(x_train[index]), y_train[index]).backward()
            optimizer.step()
            times.append(time.perf_counter() - started)
        per_step = 1000 / args.overhead_steps
        phases = {k: v * per_step for k, v in (hook.timing if hook else {}).items()}
        out[mode] = (1000 * statistics.median(times), phases)
    return out


def _worker(rank, world, rendezvous, args, out):
    logging.getLogger("runtime").setLevel(logging.ERROR)   # the events go to the report
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=60))
    results = {}
    for task_name in args.tasks:
        task = {"digits": _digits, "text": _text}[task_name](args)
        runs, results[task_name] = TASKS[task_name], {}
        for name in [n for n in args.runs or runs if n in runs]:
            profile = runs[name]
            if profile is None:
                profile, scores = _calibrate(task, runs[CALIBRATED_FROM], args, world)
                results[task_name]["calibration"] = {"profile": profile, "scores": scores}
            results[task_name][name] = r = _train(name, profile, task, args, world)
            if rank == 0:
                print(f"{task_name} {name}: {args.steps} steps in {r['seconds']:.1f} s, test "
                      f"accuracy {r['accuracy'][-1][1]:.3f}, loss "
                      f"{_final_loss(r):.4g}", flush=True)
        if args.overhead_steps:
            overhead = _overhead(task, args, world)
            if rank == 0:
                results.setdefault("overhead", {})[task_name] = overhead
                print(f"{task_name} overhead: " + ", ".join(
                    f"{mode} {ms:.1f} ms" for mode, (ms, _) in overhead.items()), flush=True)
    if rank == 0:
        (out / "training.json").write_text(json.dumps(results, indent=1))
    dist.destroy_process_group()


def _runs(task_results):
    return {k: v for k, v in task_results.items() if k != "calibration"}


def _plot(task, results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for name, r in _runs(results).items():
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


def _final_loss(r):
    """The mean loss of a run's last ``FINAL_LOSS_STEPS`` steps (all of them, if fewer)."""
    last = r["loss"][-FINAL_LOSS_STEPS:]
    return sum(last) / len(last)


def _accuracy(r):
    return r["accuracy"][-1][1]


def _by_route(traffic):
    return ", ".join(f"{k} {v:.0f}" for k, v in sorted(traffic.items())) or "-"


def _table(results):
    lines = [f"| run | test accuracy | loss, last {FINAL_LOSS_STEPS} steps | steps with low-bit "
             "| trips | wire bytes per step by route | wire, % of FP32 | device lines per "
             "step by route | device lines, % of FP32 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in _runs(results).items():
        wire, device = sum(r["traffic"].values()), sum(r["device_traffic"].values())
        lines.append(f"| {name} | {_accuracy(r):.3f} | {_final_loss(r):.4g} "
                     f"| {r['low_bit_steps']} | {r['trips']} | {_by_route(r['traffic'])} | "
                     f"{100 * wire / r['fp32_bytes']:.1f} | {_by_route(r['device_traffic'])} "
                     f"| {100 * device / r['fp32_bytes']:.1f} |")
    return lines


def _course(r):
    """How a run's loss went: the first step whose loss passed twice the first step's, and
    the first trip of the health monitor."""
    up = next((step for step, loss in enumerate(r["loss"]) if loss > 2 * r["loss"][0]), None)
    trip = next((e.split(":")[0] for e in r["events"] if ": trip: " in e), None)
    return (f"loss {r['loss'][0]:.3g} at step 0, {_final_loss(r):.4g} at the end, "
            f"twice its first value {'never' if up is None else f'from step {up}'}; first "
            f"trip {trip or 'none'}")


def _claims(results):
    """What each claim's runs show, in words and numbers (no verdict is tuned for)."""
    out = []
    digits, text = results.get("digits", {}), results.get("text", {})

    def points(a, b):
        return f"{100 * (_accuracy(a) - _accuracy(b)):+.1f} points"
    if "fp32" in digits and "gbinary" in digits:
        line = (f"- (a) easy task, digits: FP32 {_accuracy(digits['fp32']):.3f}; G-Binary "
                f"{_accuracy(digits['gbinary']):.3f} "
                f"({points(digits['gbinary'], digits['fp32'])})")
        if "gternary" in digits:
            line += (f", G-Ternary {_accuracy(digits['gternary']):.3f} "
                     f"({points(digits['gternary'], digits['fp32'])})")
        out.append(line + ".")
    if "fp32" in text and "gbinary" in text:
        out.append(f"- (b) many classes, text: FP32 {_accuracy(text['fp32']):.3f} "
                   f"({_course(text['fp32'])}); every parameter on G-Binary "
                   f"{_accuracy(text['gbinary']):.3f}, {points(text['gbinary'], text['fp32'])} "
                   f"({_course(text['gbinary'])}).")
        if "head_fp32" in text:
            gap = _accuracy(text["fp32"]) - _accuracy(text["gbinary"])
            got = _accuracy(text["head_fp32"]) - _accuracy(text["gbinary"])
            share = f", {100 * got / gap:.0f}% of the gap" if gap > 0 else \
                " (there is no gap to recover)"
            out.append(f"- (c) head (tied embedding) on FP32: {_accuracy(text['head_fp32']):.3f}"
                       f", {points(text['head_fp32'], text['gbinary'])} over all G-Binary"
                       f"{share} ({_course(text['head_fp32'])}).")
    if "calibration" in text:
        routes = text["calibrated"]["routes"]
        kept = sorted(name for name, route in routes.items() if route == "fp32")
        out.append(f"- (d) calibration keeps on FP32: {', '.join(kept) or 'nothing'}; the head "
                   f"{'is' if 'embed.weight' in kept else 'is not'} among them; the "
                   f"calibrated run reaches {_accuracy(text['calibrated']):.3f}.")
    if "fault" in digits:
        r = digits["fault"]
        first = next((e for e in r["events"] if ": trip: " in e), "no trip")
        back = [e for e in r["events"] if ": readmit: " in e]
        out.append(f"- (e) fault on steps {r['fault'][0]} to {r['fault'][1] - 1}: first "
                   f"trip \"{first}\"; {len(back)} re-admissions, the last \""
                   f"{back[-1] if back else 'none'}\"; final accuracy {_accuracy(r):.3f}.")
    out.append("- (f) traffic per step by route: the tables' last four columns, the bytes the "
               "collective backend put on the wire and the contribution lines a NEURON-Fabric "
               "device would carry.")
    return out


def report(results, args, seconds):
    """The Markdown report of ``results``."""
    lines = ["# make train: the runtime on real data", "",
             f"{args.workers} worker processes (gloo), {args.steps} steps of {args.batch} "
             f"samples per worker, SGD lr {args.lr} momentum 0.9, seed {args.seed}; "
             f"{seconds:.0f} s wall. Command: `python -m scripts.train --steps {args.steps} "
             f"--workers {args.workers}` (`make train`).", "", "## Claims", ""]
    overhead = results.get("overhead", {})
    results = {k: v for k, v in results.items() if k != "overhead"}
    lines += _claims(results)
    for task, task_results in results.items():
        if not _runs(task_results):
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
        lines += ["", "## Hook overhead", "",
                  f"Milliseconds per training step (forward, backward, hook, optimizer) on rank "
                  f"0, the median of {args.overhead_steps} steps after {args.overhead_warmup}, "
                  f"{args.workers} workers sharing this machine's {os.cpu_count()} cores; the "
                  "hook's phases in ms per step (their mean, summed over buckets), without the "
                  "health monitor's sampled comparisons. With more workers than cores the "
                  "figures move from run to run by tens of percent; compare modes within one "
                  "run.", "",
                  "| task | mode | ms per step | over plain DDP | hook | "
                  + " | ".join(_PHASES) + " |", "|---" * (5 + len(_PHASES)) + "|"]
        dominant = []
        for task, modes in overhead.items():
            plain = modes["plain DDP"][0]
            for mode, (ms, phases) in modes.items():
                cells = [f"{phases[k]:.2f}" if k in phases else "-" for k in _PHASES]
                hook = f"{phases['hook']:.2f}" if "hook" in phases else "-"
                lines.append(f"| {task} | {mode} | {ms:.2f} | {ms - plain:+.2f} | {hook} | "
                             + " | ".join(cells) + " |")
                parts = {k: phases[k] for k in _PHASES if k in phases}
                if parts:
                    top = max(parts, key=parts.get)
                    dominant.append(f"- {task}, {mode}: `{top}`, {parts[top]:.2f} of "
                                    f"{phases['hook']:.2f} ms")
        lines += ["", "What dominates the hook, per step:", ""] + dominant
        lines += ["", "The first collective of a bucket (`exchange` on low-bit routes, `fp32` "
                  "with every parameter on FP32) also waits for the slowest worker to finish "
                  "its backward pass; `reduce` of the device model is the golden model in "
                  "Python, line by line, not the device's speed. The hook runs its "
                  "collectives at once and returns a completed future, where plain DDP's "
                  "all_reduce runs asynchronously alongside the rest of the backward pass."]
    lines += ["", "Traffic is per worker and per step, averaged over the run, from the routes "
              "actually taken. *Wire* bytes are what the worker's collectives carried: FP32 "
              "gradients, the collective backend's all_reduce of one int32 per low-bit lane "
              "(`gbinary`, `gternary`: a cluster without the device sends more than FP32 "
              "there), and the small exchange of scales, flags and DevLoad per bucket "
              "(`scales`). *Device lines* are the packed contribution lines the worker gave the "
              "reducer: what it would write to a NEURON-Fabric device, which answers with as "
              "many result lines. Every `sample_every` steps the health monitor's comparison "
              "sends the low-bit parameters' FP32 gradients too: with the routes a trip took to "
              "FP32, that is the FP32 traffic of the low-bit runs."]
    return "\n".join(lines) + "\n"


def arguments():
    """The command line's parser (its defaults are the full run's)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("build/reports"))
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--context", type=int, default=8, help="characters before the target")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--runs", nargs="+", help="only these runs of each task")
    parser.add_argument("--calibration-steps", type=int, default=30)
    parser.add_argument("--min-cosine", type=float, default=0.5,
                        help="calibration: parameters scored below stay on FP32")
    parser.add_argument("--overhead-steps", type=int, default=30,
                        help="timed steps per mode of the hook's overhead (0: none)")
    parser.add_argument("--overhead-warmup", type=int, default=5)
    return parser


def main(argv=None):
    """Run ``make train`` with the command line ``argv``; returns the results (as
    ``<out>/training.json`` holds them)."""
    parser = arguments()
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    valid = {name for runs in TASKS.values() for name in runs}
    unknown = sorted(set(args.runs or ()) - valid)
    if unknown:
        parser.error(f"unknown --runs {', '.join(unknown)}: choose from "
                     f"{', '.join(sorted(valid))}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as rendezvous:
        mp.spawn(_worker, args=(args.workers, Path(rendezvous) / "rendezvous", args, args.out),
                 nprocs=args.workers)
    seconds = time.perf_counter() - started
    results = json.loads((args.out / "training.json").read_text())
    for task, task_results in results.items():
        if task != "overhead" and _runs(task_results):
            _plot(task, task_results, args.out / f"training_{task}.png")
    (args.out / "training.md").write_text(report(results, args, seconds))
    print(f"wrote {args.out / 'training.md'} ({seconds:.0f} s)")
    return results


if __name__ == "__main__":
    main()
