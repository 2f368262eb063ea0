"""The hook's worker thread: works run one after another in the order submitted, off the
submitting thread; values, futures of values and exceptions reach the futures it returns;
the thread ends when idle and starts again with the next work."""

import threading
import time

import pytest
import torch

from runtime.serial import SerialWorker


def test_works_run_in_order_on_one_other_thread():
    worker, ran, gate = SerialWorker(), [], threading.Event()

    def work(index):
        def run():
            if index == 0:
                gate.wait(5)   # the first work holds the thread: the others must queue
            ran.append((index, threading.get_ident()))
            return torch.tensor([float(index)])
        return run
    futures = [worker.submit(work(index)) for index in range(20)]
    assert not any(f.done() for f in futures), "submit must not wait for the work"
    gate.set()
    values = [f.wait().item() for f in futures]
    assert values == [float(i) for i in range(20)], f"values by submission {values}"
    assert [index for index, _ in ran] == list(range(20)), f"order of the works {ran}"
    threads = {thread for _, thread in ran}
    assert len(threads) == 1 and threading.get_ident() not in threads, \
        f"threads of the works {threads}, the submitter's {threading.get_ident()}"


def test_a_future_returned_by_a_work_completes_the_submitted_one():
    worker, inner = SerialWorker(), torch.futures.Future()
    outer = worker.submit(lambda: inner)
    after = worker.submit(lambda: torch.tensor([2.0]))
    assert after.wait().item() == 2.0, "the next work must not wait for the inner future"
    assert not outer.done(), "completed before its inner future"
    inner.set_result(torch.tensor([1.0]))
    assert outer.wait().item() == 1.0, f"value {outer.wait()}"


def test_exceptions_reach_the_futures_and_the_next_work_still_runs():
    worker, failing = SerialWorker(), torch.futures.Future()

    def boom():
        raise RuntimeError("parameter x was not bound")
    raised = worker.submit(boom)
    forwarded = worker.submit(lambda: failing)
    fine = worker.submit(lambda: torch.tensor([3.0]))
    failing.set_exception(OSError("connection closed by peer"))
    with pytest.raises(RuntimeError, match="parameter x was not bound"):
        raised.wait()
    with pytest.raises(OSError, match="connection closed by peer"):
        forwarded.wait()
    assert fine.wait().item() == 3.0, "a failed work must not stop the ones after it"


def test_the_thread_ends_when_idle_and_starts_again():
    worker = SerialWorker(idle_seconds=0.05)
    first = []
    worker.submit(lambda: first.append(threading.current_thread()) or torch.zeros(1)).wait()
    deadline = time.monotonic() + 5
    while first[0].is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not first[0].is_alive(), "the idle thread did not end"
    assert worker.submit(lambda: torch.ones(1)).wait().item() == 1.0, \
        "no thread ran the work submitted after the idle one ended"


def test_idle_only_when_every_work_has_returned():
    worker, gate = SerialWorker(), threading.Event()
    assert worker.idle(), "a new worker has nothing to do"
    held = worker.submit(lambda: gate.wait(5) and torch.zeros(1))
    queued = worker.submit(lambda: torch.ones(1))
    assert not worker.idle(), "idle with two works unfinished"
    gate.set()
    held.wait(), queued.wait()
    deadline = time.monotonic() + 5
    while not worker.idle() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert worker.idle(), "not idle after every work returned"


def test_the_thread_ends_after_the_last_work_of_a_step():
    """A work submitted as ``last`` with nothing behind it ends the thread at once (long before
    its idle time), so no thread of the hook outlives a backward pass."""
    worker, seen = SerialWorker(idle_seconds=60), []
    worker.submit(lambda: seen.append(threading.current_thread()) or torch.zeros(1))
    worker.submit(lambda: torch.ones(1), last=True).wait()
    seen[0].join(timeout=5)
    assert not seen[0].is_alive(), "the thread outlived the last work of its step"
    assert not seen[0].daemon, "a daemon thread can be cut off at exit holding tensors"
