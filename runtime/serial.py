"""One thread that runs the hook's work, bucket after bucket, while the backward pass goes on.

DDP calls a communication hook for each bucket as soon as its gradients are ready and waits
for the futures only at the end of the backward pass. :class:`SerialWorker` takes each call's
work (:meth:`SerialWorker.submit`) and returns a future at once; one thread runs the works in
the order they were submitted, so that their collectives reach the process group in the same
order on every worker (DDP hands the buckets to the hook in the same order on every worker),
while autograd computes the gradients of the next buckets.

A work returns a tensor (the future's value) or a future of one (an asynchronous collective:
the thread goes on to the next work and the value follows when the collective completes); an
exception becomes the future's, and DDP raises it at the end of the backward pass. The thread
ends after a work submitted as ``last`` (the last bucket of a backward pass) when nothing is
queued behind it, or after ``idle_seconds`` with nothing to do (a backward pass that stopped
half-way), and starts again with the next work. It holds nothing of a work once it has run
it, and it is not a daemon: no thread of the hook outlives a step, nor is one cut off at exit
while it still holds collectives or tensors.
"""

import queue
import threading

import torch

__all__ = ["SerialWorker"]


def _forward(inner, outer):
    """Complete ``outer`` with ``inner``'s value or exception."""
    try:
        outer.set_result(inner.value())
    except Exception as error:   # the collective's failure is the bucket's
        outer.set_exception(error)


class SerialWorker:
    """Runs submitted works one after another on a thread of its own."""

    def __init__(self, idle_seconds=5.0):
        self.idle_seconds = idle_seconds
        self._works = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread = None
        self._unfinished = 0

    def idle(self):
        """Whether every submitted work has returned (a caller that is the only submitter may
        then run a work of its own without racing the thread)."""
        with self._lock:
            return self._unfinished == 0

    def submit(self, work, last=False):
        """Queue ``work`` (a callable without arguments); returns a ``torch.futures.Future``
        of what it returns. ``last``: the thread may end once it has run it."""
        future = torch.futures.Future()
        with self._lock:
            self._works.put((work, future, last))
            self._unfinished += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="neuron-fabric-hook")
                self._thread.start()
        return future

    def _loop(self):
        while True:
            try:
                work, future, last = self._works.get(timeout=self.idle_seconds)
            except queue.Empty:
                last = True
            else:
                self._run(work, future)
                del work, future
            if last:
                with self._lock:
                    if self._works.empty():
                        self._thread = None
                        return

    def _run(self, work, future):
        try:
            result = work()
        except Exception as error:
            future.set_exception(error)
            return
        finally:
            with self._lock:
                self._unfinished -= 1
        if isinstance(result, torch._C.Future):   # torch.futures.Future, or a collective's
            result.add_done_callback(lambda done: _forward(done, future))
        else:
            future.set_result(result)
