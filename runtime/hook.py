"""The DDP communication hook: each bucket split per parameter by route.

:class:`NeuronFabricHook` is the hook's state; :meth:`NeuronFabricHook.register` installs it
on a ``DistributedDataParallel`` model. For each bucket, on every worker:

1. Each parameter's route for this step: FP32 unless its binding admitted a low-bit route, its
   phase has begun (``start_step``) and the health monitor admits it. Every parameter bound to
   a low-bit route keeps a momentum of its gradient on each worker (:mod:`runtime.lowbit`),
   whatever route it takes this step; that momentum, not the gradient, is what it reduces.
2. Low-bit parameters are compressed (:func:`runtime.lowbit.compress`). One ``all_reduce``
   sums their scales, a non-finite flag per parameter and the workers' DevLoad; a parameter
   with a non-finite gradient on any worker trips and takes FP32 for this step (and its
   momentum starts again from zero).
3. FP32 slices, concatenated, go through one ``all_reduce`` and are divided by the number of
   workers, like PyTorch's default hook. A bucket with every parameter on FP32 at this step
   (and nothing sampled) is all-reduced in place, asynchronously: the hook returns the
   collective's future, and DDP overlaps it with the rest of the backward pass.
4. Low-bit slices are packed into lines (:func:`runtime.lowbit.pack`), region by region, G-Binary
   lines XORed with the tie-breaking mask (:func:`runtime.lowbit.tie_mask`), and reduced by
   the backend (:mod:`runtime.reducers`); the result lines are XORed back, unpacked and scaled
   by the workers' mean scale (the rule in :mod:`runtime.lowbit`).
5. On sampled steps every low-bit parameter that is admitted or on probation is also reduced
   the other way, and the health monitor compares the two (sign agreement, norm ratio); a
   parameter the comparison trips takes the FP32 mean on this very step. Parameters in
   cool-down or held back by DevLoad are not sampled: no comparison could change their state.
   A comparison with no evidence (no lane non-zero in both) is no sample.
6. After each region's reduce, one ``all_reduce`` agrees on whether the round failed on any
   worker: its reducer raised (any exception: a device error, an ``OSError``), the result
   lines differ between workers (a checksum), or the result does not agree with the workers'
   own contributions (:func:`agreement_with_own`). Then the region's parameters trip on
   every worker and take the FP32 mean: the bad update is never applied, on the step it
   happens, sampled or not.

Every worker makes the same decisions from the same reduced inputs, so the collectives of all
workers match. A bucket with low-bit parameters makes its decisions on the way and waits for
its collectives; by default (``overlap``) it does so on a thread of the hook's own
(:mod:`runtime.serial`), one bucket after another in DDP's order, and the hook returns a
future at once, so that the backward pass goes on meanwhile. Its collectives are ``all_reduce`` and
``all_gather`` on tensors on the reducer's ``device`` (or the bucket's own, for FP32), so that
NCCL takes them as gloo does; only gloo on the CPU is tested here.
"""

import math
import time
import zlib
from collections import Counter
from contextlib import contextmanager

import numpy as np
import torch
import torch.distributed as dist

from spec.params import Mode

from .guard import UpdateGuard
from .health import HealthMonitor, State
from .lowbit import compress, pack, tie_mask, unpack
from .routes import FP32
from .serial import SerialWorker

__all__ = ["NeuronFabricHook", "compare", "agreement_with_own"]


def _hook(state, bucket):
    return state.run(bucket)


class _Bucket:
    """What the hook needs of DDP's ``GradBucket``, taken on the thread DDP called it from."""

    def __init__(self, bucket):
        self._buffer, self._parameters = bucket.buffer(), bucket.parameters()
        self._last = bucket.is_last()

    def buffer(self):
        return self._buffer

    def parameters(self):
        return self._parameters

    def is_last(self):
        return self._last


class NeuronFabricHook:
    """The hook's state for a model bound by :func:`runtime.binding.bind`.

    Parameters
    ----------
    binding : runtime.binding.Binding
    profile : runtime.profile.Profile
        Its ``health`` thresholds drive the monitor.
    reducer : runtime.reducers.Reducer
    events : runtime.events.EventLog
    group : torch.distributed.ProcessGroup or None
    overlap : bool
        Run each bucket's work on a thread of the hook's own (:mod:`runtime.serial`), so that
        its collectives and decisions overlap the rest of the backward pass (the default);
        ``False``: on the thread DDP calls the hook from.
    """

    def __init__(self, binding, profile, reducer, events, group=None, overlap=True):
        self.binding = binding
        self.reducer = reducer
        self.events = events
        self.group = group
        self.monitor = HealthMonitor(profile.health, events,
                                     [b.name for b in binding.parameters if b.route.low_bit])
        self.step = 0
        #: ``{name: tensor}``: this worker's momentum of each low-bit parameter's gradient.
        self.momenta = {}
        #: Bytes this worker put on the wire in the last finished step, as its collectives
        #: carried them: per route (``fp32``; ``gbinary`` and ``gternary`` as the reducer
        #: reports them, :attr:`runtime.reducers.Reducer.sent`) and for the exchange of
        #: scales, flags and DevLoad (``scales``).
        self.traffic, self._traffic = Counter(), Counter()
        #: Bytes of contribution lines this worker gave the reducer in the last finished step,
        #: per low-bit route: what it would send a NEURON-Fabric device (device traffic).
        self.device_traffic, self._device_traffic = Counter(), Counter()
        #: ``(step, name, route applied)`` of every parameter, when ``trace`` is a list.
        self.trace = None
        #: Seconds spent per phase of the hook, summed over buckets, when ``timing`` is a
        #: ``Counter``: ``hook`` (all of it), ``compress``, ``exchange`` (scales, flags and
        #: DevLoad), ``fp32`` (the FP32 all_reduce), ``pack``, ``reduce``, ``unpack``,
        #: ``compare``.
        self.timing = None
        self._ticked = -1
        self._names = {}
        self._buckets = {}
        self._guard = None
        self._serial = SerialWorker() if overlap else None

    def register(self, ddp_model):
        """Install the hook on ``ddp_model`` (``DistributedDataParallel``); raises
        ``ValueError`` when its process group has another number of workers than the binding
        was made for, or when the workers were bound differently (a collective)."""
        workers = dist.get_world_size(self.group)
        if workers != self.binding.world_size:
            raise ValueError(f"the binding is for {self.binding.world_size} workers, the "
                             f"process group has {workers}: bind with world_size={workers} "
                             f"(or leave it out: bind reads the process group)")
        if self._serial is not None and getattr(ddp_model, "find_unused_parameters", False):
            raise ValueError("with find_unused_parameters=True, DDP all-reduces its map of used "
                             "parameters on its own thread while the hook's thread may still be "
                             "reducing buckets, in an order that can differ between workers: "
                             "make the hook with overlap=False")
        self._agree_on_the_binding()
        self._names = {id(t): n for n, t in
                       ddp_model.module.named_parameters(remove_duplicate=False)}
        ddp_model.register_comm_hook(self, _hook)

    def _agree_on_the_binding(self):
        """Raise ``ValueError`` on every worker when the workers were bound differently (another
        profile on one of them, say): their collectives would not match."""
        digest = float(zlib.crc32(repr(
            [(b.names, str(b.route), b.region, b.first_line, b.lines, b.start_step)
             for b in self.binding.parameters]
            + [plan.region for plan in self.binding.regions]).encode()))
        both = torch.tensor([digest, -digest], dtype=torch.float64, device=self.reducer.device)
        dist.all_reduce(both, op=dist.ReduceOp.MAX, group=self.group)
        if both[0].item() != -both[1].item():
            raise ValueError(f"the workers were bound differently (binding digests from "
                             f"{int(-both[1].item()):#010x} to {int(both[0].item()):#010x}; "
                             f"this worker's is {int(digest):#010x}): give every worker the "
                             f"same model and profile")

    def _binding_of(self, tensor):
        """The :class:`runtime.binding.ParameterBinding` of a tensor of a bucket; a parameter
        that was not bound (added to the model after :func:`runtime.binding.bind`) names
        itself."""
        try:
            return self.binding.of(tensor)
        except KeyError:
            name = self._names.get(id(tensor), f"of shape {tuple(tensor.shape)}")
            raise RuntimeError(f"parameter {name} was not bound: bind the model after it has "
                               f"every parameter, then make the hook") from None

    def state_dict(self):
        """The hook's state, to save beside the model's and the optimizer's: the step, this
        worker's momenta and the health monitor's state. A run resumed from it
        (:meth:`load_state_dict`) takes the same routes and updates as one never stopped."""
        return {"step": self.step, "momenta": {k: v.clone() for k, v in self.momenta.items()},
                "monitor": self.monitor.state_dict()}

    def load_state_dict(self, saved):
        """Take up the state of :meth:`state_dict` (before the first step of the resumed
        run)."""
        unknown = set(saved["momenta"]) - set(self.monitor.state)
        if unknown:
            raise ValueError(f"the saved hook has momenta of {sorted(unknown)}, which this "
                             f"binding has no low-bit route for: load it into a hook of the "
                             f"same model and profile")
        self.monitor.load_state_dict(saved["monitor"])
        self.step = saved["step"]
        self.momenta = {k: v.clone() for k, v in saved["momenta"].items()}
        self._ticked = -1

    def route(self, binding):
        """The route of a :class:`runtime.binding.ParameterBinding` at the current step."""
        if (binding.route.low_bit and self.step >= binding.start_step
                and self.monitor.admitted(binding.name, self.step)):
            return binding.route
        return FP32

    def observe_loss(self, loss):
        """Give the monitor the loss of the step just finished (call after ``backward``, before
        ``optimizer.step()``); the workers' mean is used, so every worker decides alike;
        returns that mean. With :meth:`guard`, a loss that trips the monitor undoes the update
        that led to it."""
        value = torch.tensor([float(loss)], dtype=torch.float64, device=self.reducer.device)
        dist.all_reduce(value, group=self.group)
        mean = value.item() / dist.get_world_size(self.group)
        undoable = self._guard is not None and self._guard.can_undo()
        if self.monitor.observe_loss(self.step - 1, mean, undoable=undoable):
            if undoable:
                self.momenta = self._guard.undo()
                self.events.record(self.step - 1, "*", "undo",
                                   "the loss tripped: weights, their optimizer state and the "
                                   "momenta back to before the last update; this step "
                                   "applies none")
        elif self._guard is not None:
            self._guard.keep()
        return mean

    def guard(self, optimizer):
        """Let a loss spike (or a non-finite loss) undo the update that led to it
        (:class:`runtime.guard.UpdateGuard`).

        From now on each :meth:`observe_loss` keeps a copy of ``optimizer``'s parameters, their
        optimizer state and this worker's momenta, as they are before that step's update. A
        loss that trips the monitor puts back the copy kept a step earlier (the weights before
        the update that the tripping loss was measured after), records an ``undo`` event,
        leaves the loss out of the monitor's average and clears the gradients of the step, so
        that ``optimizer.step()`` applies nothing; learning rates are left as they are. Every
        worker decides on the same mean loss, so the replicas stay identical. It costs a copy
        of the parameters and their optimizer state per step; a resumed run has nothing to
        undo before its second step."""
        self._guard = UpdateGuard(optimizer)

    # The hook.
    @contextmanager
    def _timed(self, phase):
        if self.timing is None:
            yield
            return
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timing[phase] += time.perf_counter() - start

    def run(self, bucket):
        """The hook for DDP's ``bucket``: a future of its reduced gradients. With
        ``overlap``, the work of a bucket with low-bit parameters (and of any bucket behind
        one) runs on the hook's :class:`runtime.serial.SerialWorker` while the backward pass
        goes on; otherwise on the calling thread."""
        taken = _Bucket(bucket)
        if self._serial is None or (self._serial.idle() and not self._slices(taken)[1]):
            # Nothing low-bit in it and nothing queued before it: the bucket's all_reduce is
            # asynchronous anyway, and a hop to the thread would only add its latency.
            return self._timed_run(taken)
        return self._serial.submit(lambda: self._timed_run(taken), last=taken.is_last())

    def _timed_run(self, bucket):
        with self._timed("hook"):
            return self._run(bucket)

    def _run(self, bucket):
        if self._ticked != self.step:
            self.monitor.tick(self.step)
            self._ticked = self.step
            if self._guard is not None:
                self._guard.step_begins(self.momenta)
        buffer = bucket.buffer()
        slices, low_bit_bound = self._slices(bucket)
        if not low_bit_bound:
            return self._all_fp32(bucket, buffer, slices)
        self._keep_momenta(buffer, slices)
        sampled = self.sampled()
        low, shadow, fp32 = [], [], []
        for b, where in slices:
            if self.route(b).low_bit:
                low.append((b, where))
            else:
                fp32.append((b, where))
                if sampled and self._shadowed(b):
                    shadow.append((b, where))
        if not low and not shadow:
            return self._all_fp32(bucket, buffer, slices)
        compressed = self._compress(buffer, low, shadow)
        fp32 += [(b, w) for b, w in low if b.name not in compressed]
        low = [(b, w) for b, w in low if b.name in compressed]
        shadow = [(b, w) for b, w in shadow if b.name in compressed]
        with self._timed("fp32"):
            means = self._fp32(buffer, fp32 + (low if sampled else []))
        updates = self._low_bit(buffer, low + shadow, compressed, means)
        if sampled:
            with self._timed("compare"):
                self._compare([(b, updates[b.name], means[b.name]) for b, _ in low + shadow
                               if b.name in updates])
        applied = {}
        for b, where in low:
            # A sample that tripped the parameter keeps its low-bit update out of this step.
            if b.name in updates and self.monitor.state[b.name] == State.ADMITTED:
                buffer[where] = updates[b.name]
                applied[b.name] = str(b.route)
            else:
                buffer[where] = means[b.name]
        for b, where in fp32:
            buffer[where] = means[b.name]
        self._end_bucket(bucket, slices, applied)
        future = torch.futures.Future()
        future.set_result(buffer)
        return future

    def _slices(self, bucket):
        """``([(binding, slice of the bucket)], whether any is bound to a low-bit route)`` of
        a bucket, worked out the first time its parameters come in this order (DDP rebuilds
        its buckets after the first step, then keeps them)."""
        tensors = bucket.parameters()
        key = tuple(map(id, tensors))
        if key not in self._buckets:
            slices, offset = [], 0
            for tensor in tensors:
                slices.append((self._binding_of(tensor),
                               slice(offset, offset + tensor.numel())))
                offset += tensor.numel()
            self._buckets[key] = (slices, any(b.route.low_bit for b, _ in slices))
        return self._buckets[key]

    def _all_fp32(self, bucket, buffer, slices):
        """A bucket whose every parameter takes FP32 at this step, with nothing to compare:
        one asynchronous ``all_reduce`` of the bucket in place, as PyTorch's default hook
        does, so that DDP overlaps it with the rest of the backward pass."""
        self._traffic["fp32"] += buffer.element_size() * buffer.numel()
        self._end_bucket(bucket, slices, {})
        group = self.group or dist.group.WORLD
        world = group.size()
        # The process group's own allreduce, as DDP's C++ reducer calls it: the checks of
        # dist.all_reduce's Python wrapper cost a tenth of a millisecond a bucket.
        future = group.allreduce([buffer]).get_future()
        return future.then(lambda done: done.value()[0].div_(world))

    def _end_bucket(self, bucket, slices, applied):
        """The trace of a bucket's routes; after the last bucket of a step, its traffic and
        the next step."""
        if self.trace is not None:
            self.trace += [(self.step, b.name, applied.get(b.name, "fp32")) for b, _ in slices]
        if bucket.is_last():
            self.traffic, self._traffic = self._traffic, Counter()
            self.device_traffic, self._device_traffic = self._device_traffic, Counter()
            self.step += 1

    def _shadowed(self, b):
        """Whether parameter binding ``b``, on FP32 at this sampled step, is reduced low-bit as
        well: a low-bit route past its start step, on probation (its samples decide its
        re-admission); not in cool-down, and not while DevLoad holds every route back."""
        return (b.route.low_bit and self.step >= b.start_step
                and self.monitor.state.get(b.name) == State.PROBATION
                and not self.monitor.backing_off(self.step))

    def _keep_momenta(self, buffer, slices):
        """Each low-bit parameter's momentum takes this step's gradient, and stands in for it
        in ``buffer`` from here on: whatever route the parameter takes, it reduces its
        momentum (the optimizer adds none of its own to it)."""
        for b, where in slices:
            if b.route.low_bit:
                gradient = buffer[where].detach()
                momentum = self.momenta.get(b.name)
                momentum = gradient.clone() if momentum is None \
                    else momentum.mul_(b.route.momentum).add_(gradient)
                self.momenta[b.name] = momentum
                buffer[where] = momentum

    def _compress(self, buffer, low, shadow):
        """``{name: (values, mean scale)}`` of the low-bit and shadow parameters whose
        momenta are finite on every worker; the others trip (and ``low`` ones move to FP32 for
        this step), and their momenta start again from zero."""
        entries = low + shadow
        if not entries:   # the same on every worker: no collective to match
            return {}
        with self._timed("compress"):
            local = [(b, compress(buffer[where], b.route.mode)) for b, where in entries]
            finite = [bool(torch.isfinite(buffer[where]).all()) for _, where in entries]
            scales = [float(scale) if ok else 0.0 for (_, (_, scale)), ok in zip(local, finite)]
        load = self.reducer.dev_load
        stats = torch.tensor(scales + [0.0 if ok else 1.0 for ok in finite]
                             + [float(load is not None and load.name == "SEVERE"),
                                float(load is not None and load.name == "MODERATE")],
                             dtype=torch.float64, device=self.reducer.device)
        with self._timed("exchange"):
            dist.all_reduce(stats, group=self.group)
        stats = stats.cpu()
        world = dist.get_world_size(self.group)
        self._traffic["scales"] += stats.element_size() * stats.numel()
        self.monitor.observe_devload(self.step, stats[-2] > 0, stats[-1] > 0)
        out = {}
        for i, (b, (values, _)) in enumerate(local):
            if stats[len(entries) + i] > 0:
                self.monitor.trip(self.step, b.name, "non-finite gradient on a worker")
                self.momenta.pop(b.name, None)
                continue
            out[b.name] = (values, stats[i].item() / world)
        return out

    def _fp32(self, buffer, entries):
        """``{name: mean gradient}`` of ``entries``, through one ``all_reduce``."""
        if not entries:
            return {}
        flat = torch.cat([buffer[where].detach().reshape(-1) for _, where in entries])
        dist.all_reduce(flat, group=self.group)
        flat /= dist.get_world_size(self.group)
        self._traffic["fp32"] += flat.element_size() * flat.numel()
        out, offset = {}, 0
        for b, where in entries:
            size = where.stop - where.start
            out[b.name] = flat[offset:offset + size]
            offset += size
        return out

    def _low_bit(self, buffer, entries, compressed, means):
        """``{name: update}`` of low-bit ``entries``, region by region. A region whose round
        fails its checks (:meth:`_reduce_region`) on any worker trips its parameters on every
        worker, which then take the FP32 mean: the bad update is never applied."""
        updates = {}
        for plan in self.binding.regions:
            members = [(b, w) for b, w in entries if b.region == plan.index]
            if not members:
                continue
            decoded, fault = self._reduce_region(plan, members, buffer, compressed)
            if fault:
                missing = [(b, w) for b, w in members if b.name not in means]
                means.update(self._fp32(buffer, missing))
                for b, _ in members:
                    self.monitor.trip(self.step, b.name, fault)
                continue
            for b, _ in members:
                updates[b.name] = (compressed[b.name][1] * decoded[b.name]).to(buffer.device,
                                                                              buffer.dtype)
        return updates

    def _reduce_region(self, plan, members, buffer, compressed):
        """One round of region ``plan`` for ``members``: their lines packed (G-Binary XORed
        with the tie mask), reduced, decoded; then one ``all_reduce`` tells every worker
        whether any worker's round failed: an exception from its reducer (its device), result
        lines that differ between workers (a checksum), or results that agree with a worker's
        own contributions on less than ``result_agreement_min`` of its momentum's magnitude
        (a device answering something else than their aggregate). Returns ``({name: decoded
        values}, None)``, or ``(None, reason)`` on every worker alike."""
        lanes = self.binding.caps.lanes(plan.route.mode)
        with self._timed("pack"):
            lines = np.concatenate([pack(compressed[b.name][0], plan.route.mode, lanes,
                                         b.lines) for b, _ in members])
            indices = np.concatenate([np.arange(b.first_line, b.first_line + b.lines)
                                      for b, _ in members])
            mask = tie_mask(self.step, plan.index, indices, lines.shape[1]) \
                if plan.route.mode == Mode.GBINARY else np.zeros_like(lines)
        sent, error, decoded, agreeing, mass = self.reducer.sent, None, {}, 0.0, 0.0
        try:
            with self._timed("reduce"):
                results = self.reducer.reduce(plan, indices, lines ^ mask) ^ mask
        except Exception as raised:   # any fault of this worker's device
            error, results = raised, np.zeros_like(lines)
        self._traffic[plan.route.kind] += self.reducer.sent - sent
        first = 0
        with self._timed("unpack"):
            for b, where in members:
                decoded[b.name] = unpack(results[first:first + b.lines], plan.route.mode,
                                         b.numel)
                first += b.lines
                agreed, total = agreement_with_own(buffer[where], compressed[b.name][0],
                                                   decoded[b.name])
                agreeing, mass = agreeing + agreed, mass + total
        checksum = float(zlib.crc32(results.tobytes()))
        checks = torch.tensor([float(error is not None), checksum, -checksum,
                               -(agreeing / mass if mass else 1.0)], dtype=torch.float64,
                              device=self.reducer.device)
        with self._timed("exchange"):
            dist.all_reduce(checks, op=dist.ReduceOp.MAX, group=self.group)
        self._traffic["scales"] += checks.element_size() * checks.numel()
        failed, high, low, worst = checks.cpu().tolist()
        least = self.monitor.health.result_agreement_min
        if failed:
            return None, (f"{self.reducer.name}: {error}" if error is not None else
                          f"{self.reducer.name}: device error on another worker")
        if high != -low:
            return None, (f"{self.reducer.name}: the workers' result lines differ (checksums "
                          f"{int(-low):#010x} to {int(high):#010x}): a device answered wrong")
        if -worst < least:
            return None, (f"{self.reducer.name}: the result agrees with a worker's own "
                          f"contribution on {-worst:.2f} of its magnitude, below "
                          f"result_agreement_min {least}: not the workers' aggregate")
        self._device_traffic[plan.route.kind] += lines.nbytes
        return decoded, None

    def sampled(self):
        """Whether the current step compares low-bit results with FP32."""
        return self.monitor.sampled(self.step)

    def _compare(self, samples):
        """Sampled low-bit updates against the FP32 means (``(binding, update, mean)`` each),
        to the monitor, as every worker agrees on them: the least sign agreement and the
        norm ratio farthest from 1 over the workers (one ``all_reduce``: a worker whose device
        answered wrong decides for all). A comparison without evidence on every worker
        (:func:`compare` gives agreement ``None``) is not a sample."""
        if not samples:   # the same on every worker: no collective to match
            return
        local = [compare(update, mean) for _, update, mean in samples]
        worst = torch.tensor([x for agreement, ratio, _ in local for x in (
            -2.0 if agreement is None else -agreement, math.log(ratio) if ratio else -1e300,
            -math.log(ratio) if ratio else 1e300)], dtype=torch.float64,
            device=self.reducer.device)
        dist.all_reduce(worst, op=dist.ReduceOp.MAX, group=self.group)
        self._traffic["scales"] += worst.element_size() * worst.numel()
        for (b, _, _), (least, high, low) in zip(samples, worst.view(-1, 3).cpu().tolist()):
            if least > -2.0:
                ratio = math.exp(high if high >= low else -low)
                self.monitor.observe_sample(self.step, b.name, -least, ratio)


def compare(update, mean):
    """``(sign agreement, norm ratio, cosine)`` of a low-bit ``update`` against the FP32
    ``mean``: the fraction of lanes, among those where both are non-zero, whose signs agree
    (``None`` when there are none: no evidence either way); ``|update| / |mean|``; and their
    cosine similarity (0 when either is zero)."""
    both = (update != 0) & (mean != 0)
    agreement = (torch.sign(update[both]) == torch.sign(mean[both])).float().mean().item() \
        if both.any() else None
    norm, reference = update.norm().item(), mean.norm().item()
    ratio = norm / reference if reference else (1.0 if norm == 0 else math.inf)
    cosine = torch.dot(update.double(), mean.double()).item() / (norm * reference) \
        if norm and reference else 0.0
    return agreement, ratio, cosine


def agreement_with_own(p, values, result):
    """``(agreeing, total)``: the magnitude of ``p`` (a worker's momentum) on the lanes where
    the ``result`` (decoded) has the sign of the worker's own contribution ``values``, and on
    all lanes where both are non-zero. A worker's vote is part of the majority, so over a
    region the result agrees with its larger lanes more often than not (with four workers
    and signs that are noise, on about 69% of lanes); a result that is not the workers'
    aggregate (inverted, say) falls far below one half."""
    weight = p.detach().abs().double().cpu()
    voted = (values != 0) & (result != 0)
    return (weight[voted & (values.to(result.dtype) == result)].sum().item(),
            weight[voted].sum().item())
