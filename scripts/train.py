"""``make train``: the host runtime's claims in miniature, on real data that works offline
(``python -m scripts.train --help``).

Workers are processes on this machine (gloo on 127.0.0.1, ``torch.multiprocessing.spawn``),
each drawing its own batches with a fixed seed; every run starts from the same weights. The
task is scikit-learn's bundled digits (1,797 8x8 images, 10 classes; a fixed 80/20 split) and a
small MLP with a ``head``. Low-bit gradients are reduced by the collective backend
(:class:`runtime.reducers.CollectiveReducer`), bit-exact with the device model
(``verif/runtime/test_ddp.py``), on the default device's capabilities. Runs:

- ``fp32``: every parameter on FP32 (the hook's FP32 path is plain DDP's ``all_reduce``);
- ``gbinary``, ``gternary``: every parameter on the low-bit route from the first step;
- ``head_fp32``: G-Binary with the head on FP32;
- ``fault``: G-Binary with a device fault injected (every result line inverted) on a window of
  steps: the health monitor must catch it, fall back to FP32 and re-admit the route after.

Writes ``<out>/training.md`` (the table, the health events of the fault run, the traffic by
route), ``<out>/training.json`` and ``<out>/training_digits.png`` (test accuracy and loss).
"""

import argparse
import asyncio
import json
import logging
import os
import socket
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from driver import NeuronFabric
from golden.transport import GoldenTransport
from runtime.binding import bind, program
from runtime.capabilities import read_capabilities
from runtime.events import EventLog
from runtime.hook import NeuronFabricHook
from runtime.profile import parse_profile
from runtime.reducers import CollectiveReducer
from spec.params import ControllerParams

__all__ = ["RUNS", "main"]

_HEALTH = """\
[health]
sample_every = 5
cooldown_steps = 20
readmit_after = 2
"""

#: Profiles of the runs, by name.
RUNS = {
    "fp32": '[[route]]\npattern = "*"\nroute = "fp32"\n',
    "gbinary": '[[route]]\npattern = "*"\nroute = "gbinary"\n',
    "gternary": '[[route]]\npattern = "*"\nroute = "gternary"\nthreshold = 2\n',
    "head_fp32": '[[route]]\npattern = "head.*"\nroute = "fp32"\n'
                 '[[route]]\npattern = "*"\nroute = "gbinary"\n',
    "fault": _HEALTH + '[[route]]\npattern = "*"\nroute = "gbinary"\n',
}


class Classifier(torch.nn.Module):
    """An MLP: ``body`` (one hidden layer) and ``head``."""

    def __init__(self, inputs, hidden, classes):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(inputs, hidden), torch.nn.ReLU())
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


class FaultyReducer(CollectiveReducer):
    """An injected device fault: every result bit inverted while ``hook.step`` is in
    ``steps``."""

    def __init__(self, steps):
        super().__init__()
        self.steps, self.hook = steps, None

    def reduce(self, plan, line_indices, lines):
        result = super().reduce(plan, line_indices, lines)
        return ~result if self.hook.step in self.steps else result


def _digits(seed):
    """``(x_train, y_train, x_test, y_test)`` of the digits, a fixed 80/20 split."""
    from sklearn.datasets import load_digits
    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16
    y = torch.tensor(data.target, dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    cut = len(y) * 4 // 5
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def _train(name, args, data, world):
    """One run on every worker; returns its curves, traffic and events."""
    x_train, y_train, x_test, y_test = data
    params = ControllerParams()
    device = NeuronFabric(GoldenTransport(params), params)
    caps = asyncio.run(read_capabilities(device))
    torch.manual_seed(args.seed)
    model = Classifier(x_train.shape[1], args.hidden, int(y_train.max()) + 1)
    events, profile = EventLog(), parse_profile(RUNS[name], f"<{name} profile>")
    binding = bind(model, profile, caps, world, events)
    asyncio.run(program(device, binding))
    fault = range(args.steps // 3, args.steps // 3 + args.steps // 10)
    reducer = FaultyReducer(set(fault)) if name == "fault" else CollectiveReducer()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    hook = NeuronFabricHook(binding, profile, reducer, events)
    hook.trace = []
    if name == "fault":
        reducer.hook = hook
    hook.register(ddp)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    batches = torch.Generator().manual_seed(args.seed * 1000 + dist.get_rank())
    losses, accuracy, traffic = [], [], {}
    started = time.perf_counter()
    for step in range(args.steps):
        index = torch.randint(0, len(y_train), (args.batch,), generator=batches)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x_train[index]), y_train[index])
        loss.backward()
        losses.append(hook.observe_loss(loss.item()))
        optimizer.step()
        for route, count in hook.traffic.items():
            traffic[route] = traffic.get(route, 0) + count
        if step % args.eval_every == 0 or step == args.steps - 1:
            with torch.no_grad():
                hits = (model(x_test).argmax(dim=1) == y_test).float().mean().item()
            accuracy.append((step, hits))
    low_steps = sorted({s for s, _, route in hook.trace if route != "fp32"})
    return {"loss": losses, "accuracy": accuracy,
            "traffic": {k: v / args.steps for k, v in traffic.items()},
            "fp32_bytes": 4 * sum(p.numel() for p in model.parameters()),
            "events": [str(e) for e in events if e.step is not None],
            "low_bit_steps": len(low_steps), "fault": [fault.start, fault.stop],
            "trips": sum(1 for e in events if e.decision == "trip"),
            "seconds": time.perf_counter() - started}


def _worker(rank, world, port, args, out):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    logging.getLogger("runtime").setLevel(logging.ERROR)   # the events go to the report
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    data = _digits(args.seed)
    results = {}
    for name in args.runs:
        results[name] = _train(name, args, data, world)
        if rank == 0:
            r = results[name]
            print(f"digits {name}: {args.steps} steps in {r['seconds']:.1f} s, test accuracy "
                  f"{r['accuracy'][-1][1]:.3f}, loss {sum(r['loss'][-20:]) / 20:.3f}",
                  flush=True)
    if rank == 0:
        (out / "training.json").write_text(json.dumps(results, indent=1))
    dist.destroy_process_group()


def _plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for name, r in results.items():
        steps, hits = zip(*r["accuracy"])
        left.plot(steps, hits, label=name)
        right.plot(r["loss"], label=name, linewidth=0.8)
    if "fault" in results:
        for axis in (left, right):
            axis.axvspan(*results["fault"]["fault"], color="red", alpha=0.15,
                         label="fault injected")
    left.set(title="digits: test accuracy", xlabel="step", ylabel="accuracy")
    right.set(title="digits: training loss (mean of workers)", xlabel="step", ylabel="loss",
              yscale="log")
    left.legend()
    right.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def report(results, args, seconds):
    """The Markdown report of ``results``."""
    lines = ["# make train: the runtime on real data", "",
             f"Digits (scikit-learn), {args.workers} worker processes (gloo), {args.steps} "
             f"steps of {args.batch} samples per worker, SGD lr {args.lr} momentum 0.9, "
             f"seed {args.seed}; {seconds:.0f} s wall. Command: `python -m scripts.train "
             f"--steps {args.steps} --workers {args.workers}`.", "",
             "![digits](training_digits.png)", "",
             "| run | test accuracy | loss, last 20 steps | steps with low-bit | trips | bytes "
             "per step by route | % of FP32 |", "|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        sent = sum(r["traffic"].values())
        routes = ", ".join(f"{k} {v:.0f}" for k, v in sorted(r["traffic"].items()))
        lines.append(f"| {name} | {r['accuracy'][-1][1]:.3f} | {sum(r['loss'][-20:]) / 20:.3f} "
                     f"| {r['low_bit_steps']} | {r['trips']} | {routes} | "
                     f"{100 * sent / r['fp32_bytes']:.1f} |")
    def low_bit_share(r):
        return 100 * sum(r["traffic"].get(k, 0) for k in ("gbinary", "gternary")) \
            / r["fp32_bytes"]
    lines += ["", "Low-bit lines alone, % of FP32: " + ", ".join(
        f"{name} {low_bit_share(r):.1f}" for name, r in results.items() if name != "fp32")
        + "."]
    if "fp32" in results:
        base = results["fp32"]["accuracy"][-1][1]
        lines += ["", "Test accuracy against FP32 (points): " + ", ".join(
            f"{name} {100 * (r['accuracy'][-1][1] - base):+.1f}"
            for name, r in results.items() if name != "fp32") + "."]
    lines += ["", "Traffic is what each worker sent per step, averaged over the run, from the "
              "routes actually taken: FP32 gradients (4 bytes an element), low-bit lines "
              "(1 or 2 bits a lane, whole lines), and the small exchange of scales, flags and "
              "DevLoad per bucket (`scales`, 8 bytes an entry). Every `sample_every` steps the "
              "health monitor's comparison sends the low-bit parameters' FP32 gradients too: "
              "with the routes a trip took to FP32, that is the FP32 traffic of the low-bit "
              "runs. A device-side reduction answers each worker with the result lines, "
              "counted here once per worker as its lines sent."]
    if "fault" in results:
        r = results["fault"]
        lines += ["", f"## Health monitor: fault injected on steps {r['fault'][0]} to "
                  f"{r['fault'][1] - 1}", "",
                  "Every result line inverted (a faulty device). Events of the run:", ""]
        lines += [f"- {e}" for e in r["events"]] or ["- none"]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("build/reports"))
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", nargs="+", default=list(RUNS), choices=list(RUNS))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.perf_counter()
    mp.spawn(_worker, args=(args.workers, port, args, args.out), nprocs=args.workers)
    seconds = time.perf_counter() - started
    results = json.loads((args.out / "training.json").read_text())
    _plot(results, args.out / "training_digits.png")
    (args.out / "training.md").write_text(report(results, args, seconds))
    print(f"wrote {args.out / 'training.md'} ({seconds:.0f} s)")
    return results


if __name__ == "__main__":
    main()
