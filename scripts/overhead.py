"""The hook's cost against plain DDP and PyTorch's own compression hooks, measured interleaved
(``make train``'s last part; :func:`measure`).

Every mode trains its own copy of the task's model from the same first weights on the same
batches: plain DDP, DDP with PyTorch's ``fp16_compress_hook`` and with PowerSGD at ranks 1
and 4, and DDP with the NEURON-Fabric hook with every route on FP32 and with every route on
G-Binary through each backend. The modes take turns, one training step each (in an order that
rotates every step), so that whatever else the machine does weighs on all of them alike. Per
mode: the median and quartiles of the whole step's time (forward, backward, hook, optimizer)
after the warm-up, the bytes each worker sent per step, the hook's time per phase, and the
test accuracy after the last step.
"""

import contextlib
import statistics
import time
from collections import Counter

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

from runtime.binding import parameter_groups
from runtime.hook import NeuronFabricHook
from runtime.reducers import CollectiveReducer, DeviceModelReducer, PackedReducer

__all__ = ["MODES", "measure"]

_NO_SAMPLES = "[health]\nsample_every = 1000000\n"
_ALL = '[[route]]\npattern = "*"\nroute = "{}"\n'

#: The modes: ``(profile, how gradients are reduced)``: ``None`` for plain DDP, ``"fp16"`` or a
#: PowerSGD rank for PyTorch's hooks (the profile then only binds), or a reducer backend for
#: the NEURON-Fabric hook.
MODES = {
    "plain DDP": (_ALL.format("fp32"), None),
    "PyTorch fp16_compress_hook": (_ALL.format("fp32"), "fp16"),
    "PyTorch PowerSGD, rank 1": (_ALL.format("fp32"), 1),
    "PyTorch PowerSGD, rank 4": (_ALL.format("fp32"), 4),
    "hook, all FP32": (_ALL.format("fp32"), CollectiveReducer),
    "hook, G-Binary, packed": (_NO_SAMPLES + _ALL.format("gbinary"), PackedReducer),
    "hook, G-Binary, collective": (_NO_SAMPLES + _ALL.format("gbinary"), CollectiveReducer),
    "hook, G-Binary, device model": (_NO_SAMPLES + _ALL.format("gbinary"), DeviceModelReducer),
}

#: The first step PowerSGD compresses (before it, it sends FP32 like the default hook).
_POWER_SGD_START = 2


@contextlib.contextmanager
def _counted(sent):
    """Count in ``sent["bytes"]`` the bytes of every ``all_reduce`` and ``all_gather`` made
    from Python (PyTorch's hooks make theirs so), while the block runs."""
    reduce, gather = dist.all_reduce, dist.all_gather

    def counted_reduce(tensor, *args, **kwargs):
        sent["bytes"] += tensor.element_size() * tensor.numel()
        return reduce(tensor, *args, **kwargs)

    def counted_gather(tensors, tensor, *args, **kwargs):
        sent["bytes"] += tensor.element_size() * tensor.numel()
        return gather(tensors, tensor, *args, **kwargs)

    dist.all_reduce, dist.all_gather = counted_reduce, counted_gather
    try:
        yield
    finally:
        dist.all_reduce, dist.all_gather = reduce, gather


class _Mode:
    """One mode's model, DDP, hook and optimizer, and what was measured of it."""

    def __init__(self, setup, how, args):
        model, binding, profile, events, device = setup
        self.model, self.device = model, args.device
        self.ddp = torch.nn.parallel.DistributedDataParallel(model)
        self.hook, self.sent, self.times = None, Counter(), []
        self.fp32_bytes = sum(p.element_size() * p.numel() for p in model.parameters())
        if how == "fp16":
            self.ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
        elif isinstance(how, int):
            state = powerSGD_hook.PowerSGDState(process_group=None,
                                                matrix_approximation_rank=how,
                                                start_powerSGD_iter=_POWER_SGD_START)
            self.ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
        elif how is not None:
            reducer = how(device, device=args.device) if how is DeviceModelReducer \
                else how(device=args.device)
            self.hook = NeuronFabricHook(binding, profile, reducer, events)
            self.hook.register(self.ddp)
        self.counted = how is not None and self.hook is None
        self.optimizer = torch.optim.SGD(parameter_groups(model, binding, momentum=0.9),
                                         lr=args.lr)

    def step(self, x, y, timed):
        """One training step on batch ``x``, ``y``; its time and bytes are kept if ``timed``."""
        sent = Counter()
        started = time.perf_counter()
        with _counted(sent) if self.counted else contextlib.nullcontext():
            self.optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(self.ddp(x), y)
            loss.backward()
            self.optimizer.step()
        if not timed:
            return
        self.times.append(time.perf_counter() - started)
        if self.hook is not None:
            self.sent["bytes"] += sum(self.hook.traffic.values())
        elif self.counted:
            self.sent["bytes"] += sent["bytes"]
        else:
            self.sent["bytes"] += self.fp32_bytes        # DDP's all_reduce of the buckets

    def figures(self, steps, x_test, y_test):
        """``{ms, quartiles, bytes, fp32 bytes, phases, accuracy}`` after ``steps`` timed
        steps."""
        with torch.no_grad():
            hits = (self.model(x_test.to(self.device)).argmax(dim=1).cpu() == y_test)
        quartiles = statistics.quantiles(self.times, n=4) if len(self.times) > 1 else \
            [self.times[0]] * 3
        per_step = 1000 / steps
        return {"ms": 1000 * statistics.median(self.times),
                "quartiles": [1000 * quartiles[0], 1000 * quartiles[2]],
                "bytes": self.sent["bytes"] / steps, "fp32_bytes": self.fp32_bytes,
                "phases": {k: v * per_step for k, v in
                           (self.hook.timing if self.hook and self.hook.timing else {}).items()},
                "accuracy": hits.float().mean().item()}


def measure(task, args, setup):
    """``{mode: figures}`` (:meth:`_Mode.figures`) of every mode of :data:`MODES` on ``task``
    (``(x_train, y_train, x_test, y_test, make_model)``), ``args.overhead_warmup`` steps
    then ``args.overhead_steps`` timed ones, interleaved. ``setup(profile, label)`` gives a
    fresh bound model (:func:`scripts.train._setup`'s tuple)."""
    x_train, y_train, x_test, y_test, _ = task
    modes = {name: _Mode(setup(profile, name), how, args)
             for name, (profile, how) in MODES.items()}
    order = list(modes.values())
    batches = torch.Generator().manual_seed(args.seed * 1000 + dist.get_rank())
    for step in range(args.overhead_warmup + args.overhead_steps):
        timed = step >= args.overhead_warmup
        if step == args.overhead_warmup:
            dist.barrier()
            for mode in order:
                if mode.hook is not None:
                    mode.hook.timing = Counter()
        index = torch.randint(0, len(y_train), (args.batch,), generator=batches)
        x, y = x_train[index].to(args.device), y_train[index].to(args.device)
        shift = step % len(order)
        for mode in order[shift:] + order[:shift]:
            mode.step(x, y, timed)
    return {name: mode.figures(args.overhead_steps, x_test, y_test)
            for name, mode in modes.items()}
