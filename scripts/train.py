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
import faulthandler
import json
import logging
import os
import sys
import sysconfig
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from bench.runtime import bind_golden
from runtime.binding import parameter_groups
from runtime.calibrate import Calibrator
from runtime.events import EventLog
from runtime.hook import NeuronFabricHook
from runtime.profile import parse_profile
from runtime.reducers import CollectiveReducer, FaultyReducer
from spec.params import ControllerParams

from . import overhead
from .training_report import final_loss, plot, report, runs_of

__all__ = ["TASKS", "replica_checksums", "arguments", "main"]

#: The optimizer's momentum of the parameters on FP32 (those on low-bit routes keep theirs in
#: the hook, before compression: runtime.lowbit).
MOMENTUM = 0.9

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
    model = task[4]().to(args.device)
    events, profile = EventLog(), parse_profile(profile_text, f"<{label} profile>")
    binding, device = bind_golden(model, profile, ControllerParams(), world, events)
    return model, binding, profile, events, device


def _binder(task, args, world):
    """``setup(profile, label)``: a fresh model of ``task`` bound by ``profile`` (as
    :func:`_setup` makes it)."""
    return lambda profile_text, label: _setup(task, profile_text, args, world, label)


def _loop(model, hook, task, args, steps):
    """Train ``model`` under ``hook`` for ``steps``; returns the losses, the test accuracy and
    the bytes per step, averaged over the run, on the wire (:attr:`NeuronFabricHook.traffic`)
    and of device lines (:attr:`NeuronFabricHook.device_traffic`), each by route."""
    x_train, y_train, x_test, y_test, _ = task
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    hook.register(ddp)
    optimizer = torch.optim.SGD(parameter_groups(model, hook.binding, momentum=MOMENTUM),
                                lr=args.lr)
    hook.guard(optimizer)
    batches = torch.Generator().manual_seed(args.seed * 1000 + dist.get_rank())
    losses, accuracy, traffic, device_traffic = [], [], Counter(), Counter()
    for step in range(steps):
        index = torch.randint(0, len(y_train), (args.batch,), generator=batches)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x_train[index].to(args.device)),
                                                 y_train[index].to(args.device))
        loss.backward()
        losses.append(hook.observe_loss(loss.item()))
        optimizer.step()
        traffic.update(hook.traffic)
        device_traffic.update(hook.device_traffic)
        if step % args.eval_every == 0 or step == steps - 1:
            with torch.no_grad():
                hits = (model(x_test.to(args.device)).argmax(dim=1).cpu()
                        == y_test).float().mean().item()
            accuracy.append((step, hits))
    return (losses, accuracy, {k: v / steps for k, v in traffic.items()},
            {k: v / steps for k, v in device_traffic.items()})


def _train(name, profile_text, task, args, world):
    """One run on every worker; returns its curves, traffic and events."""
    model, binding, profile, events, _ = _setup(task, profile_text, args, world, name)
    fault = range(args.steps // 3, args.steps // 3 + args.steps // 10)
    reducer = FaultyReducer(set(fault), device=args.device) if name == "fault" \
        else CollectiveReducer(device=args.device)
    hook = NeuronFabricHook(binding, profile, reducer, events)
    hook.trace = []
    if name == "fault":
        reducer.hook = hook
    started = time.perf_counter()
    losses, accuracy, traffic, device_traffic = _loop(model, hook, task, args, args.steps)
    return {"loss": losses, "accuracy": accuracy, "traffic": traffic,
            "replicas": replica_checksums(model, args.device),
            "device_traffic": device_traffic,
            "fp32_bytes": sum(p.element_size() * p.numel() for p in model.parameters()),
            "paper_bytes": sum(b.lines * binding.caps.line_bytes if b.route.low_bit
                               else 4 * b.numel for b in binding.parameters),
            "routes": {b.name: str(b.route) for b in binding.parameters},
            "events": [str(e) for e in events if e.step is not None],
            "low_bit_steps": len({s for s, _, route in hook.trace if route != "fp32"}),
            "trips": sum(1 for e in events if e.decision == "trip"),
            "fault": [fault.start, fault.stop], "seconds": time.perf_counter() - started}


def replica_checksums(model, device="cpu"):
    """Every worker's checksum (CRC-32) of its copy of ``model``'s parameters, in rank order:
    all the same while the replicas stay identical (the collective's tensors on ``device``)."""
    digest = zlib.crc32(b"".join(p.detach().cpu().numpy().tobytes()
                                 for p in model.parameters()))
    gathered = [torch.zeros(1, dtype=torch.int64, device=device)
                for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, torch.tensor([digest], dtype=torch.int64, device=device))
    return [int(g.item()) for g in gathered]


def _calibrate(task, base, args, world):
    """The calibration run from the ``base`` profile (TOML text): ``(proposed profile,
    scores)``."""
    model, binding, profile, events, _ = _setup(task, base, args, world, "calibration")
    calibrator = Calibrator(binding, profile, CollectiveReducer(device=args.device), events)
    _loop(model, calibrator, task, args, args.calibration_steps)
    return calibrator.propose(args.min_cosine), calibrator.scores()


def _seeded(args, seed):
    """``args`` with ``seed`` as its seed."""
    return argparse.Namespace(**{**vars(args), "seed": seed})


def _task_runs(task_name, args, world, rank):
    """Every run of ``task_name`` under each of ``args.seeds``: the first seed's record of
    each run (curves, traffic, events), with ``by_seed``, each seed's final figures, and
    the calibration of the first seed."""
    runs, results = TASKS[task_name], {}
    for seed in args.seeds:
        seeded = _seeded(args, seed)
        task = {"digits": _digits, "text": _text}[task_name](seeded)
        for name in [n for n in args.runs or runs if n in runs]:
            profile = runs[name]
            if profile is None:
                profile, scores = _calibrate(task, runs[CALIBRATED_FROM], seeded, world)
                calibration = {"profile": profile, "scores": scores}
                results.setdefault("calibration", calibration)
            r = _train(name, profile, task, seeded, world)
            figures = {"seed": seed, "accuracy": r["accuracy"][-1][1], "loss": final_loss(r),
                       "trips": r["trips"], "low_bit_steps": r["low_bit_steps"],
                       "replicas": r["replicas"], "routes": r["routes"]}
            results.setdefault(name, r).setdefault("by_seed", []).append(figures)
            if rank == 0:
                print(f"{task_name} {name}, seed {seed}: {args.steps} steps in "
                      f"{r['seconds']:.1f} s, test accuracy {figures['accuracy']:.3f}, loss "
                      f"{figures['loss']:.4g}", flush=True)
    return results


def _worker(rank, world, rendezvous, args, out):
    """One worker: ``rendezvous`` is the file of the spawn launcher's process group, or
    ``None`` under ``torchrun`` (whose environment gives it)."""
    faulthandler.enable()
    logging.getLogger("runtime").setLevel(logging.ERROR)   # the events go to the report
    torch.set_num_threads(1)
    args = argparse.Namespace(**vars(args), device=torch.device("cpu"))
    if args.backend == "nccl":
        args.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
        torch.cuda.set_device(args.device)
    dist.init_process_group(args.backend, rank=rank, world_size=world,
                            init_method=f"file://{rendezvous}" if rendezvous else "env://",
                            timeout=datetime.timedelta(seconds=60))
    results = {}
    for task_name in args.tasks:
        results[task_name] = _task_runs(task_name, args, world, rank)
        if args.overhead_steps:
            seeded = _seeded(args, args.seeds[0])
            task = {"digits": _digits, "text": _text}[task_name](seeded)
            figures = overhead.measure(task, seeded, _binder(task, seeded, world))
            if rank == 0:
                results.setdefault("overhead", {})[task_name] = figures
                print(f"{task_name} overhead: " + ", ".join(
                    f"{mode} {f['ms']:.1f} ms" for mode, f in figures.items()), flush=True)
    if rank == 0:
        (out / "training.json").write_text(json.dumps(results, indent=1))
    dist.destroy_process_group()


def _spawned_worker(rank, world, rendezvous, args, out):
    """:func:`_worker` as a process of the spawn launcher: it leaves as :func:`_leave` says."""
    _worker(rank, world, rendezvous, args, out)
    _leave()


def _leave():
    """End a worker process whose process group is destroyed and whose output is written:
    flush its output and exit at once, without the interpreter's finalization. That
    finalization tears down torch's own threads and objects, which our code no longer uses,
    and a worker has been seen to abort there with SIGABRT ("terminate called without an
    active exception": a C++ thread that needs the interpreter as it goes away) after its
    runs were done. ``faulthandler`` is on in every worker, so that an abort anywhere else
    prints every thread's Python stack."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def arguments():
    """The command line's parser (its defaults are the full run's)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("build/reports"))
    parser.add_argument("--workers", type=int, default=4,
                        help="worker processes to spawn (under torchrun: its world size)")
    parser.add_argument("--backend", choices=["gloo", "nccl"], default="gloo",
                        help="torch.distributed backend: gloo on CPUs, nccl on one GPU per "
                             "worker (LOCAL_RANK)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--context", type=int, default=8, help="characters before the target")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3],
                        help="every run is repeated with each seed (data split, first weights, "
                             "batches); figures are their mean and standard deviation")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--runs", nargs="+", help="only these runs of each task")
    parser.add_argument("--calibration-steps", type=int, default=30)
    parser.add_argument("--min-cosine", type=float, default=0.5,
                        help="calibration: parameters scored below stay on FP32")
    parser.add_argument("--overhead-steps", type=int, default=200,
                        help="timed steps per mode of the overhead measurement, interleaved "
                             "(0: none)")
    parser.add_argument("--overhead-warmup", type=int, default=10)
    return parser


def _torchrun():
    """``(rank, world size)`` when ``torchrun`` started this process, else ``None``."""
    if all(name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")):
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return None


def main(argv=None):
    """Run ``make train`` with the command line ``argv``; returns the results (as
    ``<out>/training.json`` holds them), on rank 0 (``None`` on the other ranks of a
    ``torchrun`` launch)."""
    parser = arguments()
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    valid = {name for runs in TASKS.values() for name in runs}
    unknown = sorted(set(args.runs or ()) - valid)
    if unknown:
        parser.error(f"unknown --runs {', '.join(unknown)}: choose from "
                     f"{', '.join(sorted(valid))}")
    if args.backend == "nccl" and not torch.cuda.is_available():
        parser.error("--backend nccl needs CUDA GPUs, and this machine has none; use gloo")
    launched, started = _torchrun(), time.perf_counter()
    if launched:
        rank, args.workers = launched
        _worker(rank, args.workers, None, args, args.out)
        if rank:
            return None
    else:
        with tempfile.TemporaryDirectory() as rendezvous:
            mp.spawn(_spawned_worker, nprocs=args.workers,
                     args=(args.workers, Path(rendezvous) / "rendezvous", args, args.out))
    seconds = time.perf_counter() - started
    results = json.loads((args.out / "training.json").read_text())
    for task, task_results in results.items():
        if task != "overhead" and runs_of(task_results):
            plot(task, task_results, args.out / f"training_{task}.png")
    (args.out / "training.md").write_text(report(results, args, seconds))
    print(f"wrote {args.out / 'training.md'} ({seconds:.0f} s)")
    return results


if __name__ == "__main__":
    main()
    if _torchrun():
        _leave()
