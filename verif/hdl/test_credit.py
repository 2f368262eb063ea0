"""Credit links (hdl.credit): every payload arrives once and in order under random sends and
takes, through 0 to 3 relay stages each way; a receiver of ``credit_loop(stages)`` entries takes
a payload on every clock and one entry fewer does not, also with a receiver that passes a payload
on at once (``bypass``); the sender's ``ready`` is a register;
a sender with more credits than the receiver's depth raises ``overrun``; bad parameters are
refused with a message."""

import numpy as np
import pytest
from amaranth import Elaboratable, Module
from amaranth.lib import data, wiring

from bench.sim import simulate
from hdl.credit import CreditReceiver, CreditRelay, CreditSender, credit_loop
from hdl.pipeline import delayed

_ENTRY = data.StructLayout({"index": 12, "tag": 4})


class _Link(Elaboratable):
    """A sender, ``stages`` relay registers each way, and a receiver of ``depth`` entries;
    the sender starts with ``credits`` (the receiver's depth unless told). With
    ``write_lag``, the payloads reach the receiver that many clocks after their valids, as
    its ``write_lag`` says; with ``bypass``, the receiver's."""

    def __init__(self, *, stages, depth, credits=None, write_lag=0, bypass=False):
        self.sender = CreditSender(_ENTRY, credits=credits or depth)
        self.relay = CreditRelay(_ENTRY, stages=stages)
        self.receiver = CreditReceiver(_ENTRY, depth=depth, write_lag=write_lag, bypass=bypass)
        self.write_lag = write_lag

    def elaborate(self, platform):
        m = Module()
        m.submodules.sender, m.submodules.relay = self.sender, self.relay
        m.submodules.receiver = self.receiver
        wiring.connect(m, self.sender.source, self.relay.sink)
        arriving, sink = self.relay.source, self.receiver.sink
        payload = delayed(m, arriving.payload, self.write_lag, "payload_late")
        m.d.comb += [sink.valid.eq(arriving.valid), sink.payload.eq(payload),
                     arriving.credit.eq(sink.credit)]
        return m


def _run(link, offer, take, count):
    """Offer payloads 0.. on the clocks ``offer`` says and take them on the clocks ``take``
    says, until ``count`` have arrived; returns (what arrived, per clock whether one did)."""
    received, arrivals = [], []

    async def bench(ctx):
        sent = 0
        for clock in range(len(offer)):
            valid = offer[clock] and sent < count
            ctx.set(link.sender.sink.valid, valid)
            ctx.set(link.sender.sink.payload, {"index": sent, "tag": sent % 16})
            ctx.set(link.receiver.source.ready, take[clock])
            arrived = ctx.get(link.receiver.source.valid) and take[clock]
            if arrived:
                received.append(ctx.get(link.receiver.source.payload))
            arrivals.append(arrived)
            if valid and ctx.get(link.sender.sink.ready):
                sent += 1
            assert not ctx.get(link.receiver.overrun), \
                f"clock {clock}: a payload arrived at a full receiver"
            await ctx.tick()
            if len(received) == count:
                return

    simulate(link, bench)
    return received, arrivals


#: (relay stages, the receiver's write lag, its bypass) of the links under test.
_LINKS = [(0, 0, False), (1, 0, False), (3, 0, False), (0, 1, False), (1, 2, False),
          (0, 0, True), (1, 0, True), (2, 0, True)]


def _queue_clocks(write_lag, bypass):
    """The receiver's clocks from a write to a read (:func:`credit_loop`'s ``queue``)."""
    return 0 if bypass else 1 + write_lag


@pytest.mark.parametrize("stages, write_lag, bypass", _LINKS)
@pytest.mark.parametrize("seed", [1, 2])
def test_link_delivers_every_payload_once_in_order(stages, write_lag, bypass, seed):
    rng = np.random.default_rng(seed)
    depth, count = credit_loop(stages, queue=_queue_clocks(write_lag, bypass)), 300
    offer = [bool(x) for x in rng.random(4000) < 0.7]
    take = [bool(x) for x in rng.random(4000) < 0.6]
    received, _ = _run(_Link(stages=stages, depth=depth, write_lag=write_lag, bypass=bypass),
                       offer, take, count)
    indices = [entry["index"] for entry in received]
    first_wrong = next((k for k, index in enumerate(indices) if index != k), None)
    where = f"seed {seed}, {stages} stages, write lag {write_lag}, bypass {bypass}"
    assert indices == list(range(count)), \
        f"{where}: {len(indices)} of {count} payloads; first out of order at {first_wrong}"
    assert all(entry["tag"] == entry["index"] % 16 for entry in received), \
        f"{where}: a payload's fields were mixed up"


@pytest.mark.parametrize("stages, write_lag, bypass", [
    link for link in _LINKS if link[0] < 3])
def test_a_receiver_of_the_credit_loop_takes_a_payload_every_clock(stages, write_lag, bypass):
    """Offered and taken on every clock: after the first arrival, one payload per clock with
    ``credit_loop`` entries; with one entry fewer, a clock in every loop is lost."""
    queue = _queue_clocks(write_lag, bypass)
    loop, clocks, count = credit_loop(stages, queue=queue), 400, 120
    assert loop == 2 * stages + 2 + queue, \
        "a relay's loop: its registers both ways, two, and the receiver's queue"
    for depth, rate in ((loop, 1.0), (loop - 1, (loop - 1) / loop)):
        _, arrivals = _run(_Link(stages=stages, depth=depth, write_lag=write_lag,
                                 bypass=bypass), [True] * clocks, [True] * clocks, count)
        first = arrivals.index(True)
        measured = count / (len(arrivals) - first)
        assert abs(measured - rate) < 0.02, \
            f"{stages} stages, bypass {bypass}, {depth} entries (loop {loop}): " \
            f"{measured:.3f} payloads per clock, expected {rate:.3f}"


def test_sender_ready_is_a_register():
    """A returned credit raises ``ready`` a clock later, not on the clock it arrives."""
    sender = CreditSender(_ENTRY, credits=1)

    async def bench(ctx):
        ctx.set(sender.sink.valid, 1)
        assert ctx.get(sender.sink.ready) and ctx.get(sender.source.valid)
        await ctx.tick()
        ctx.set(sender.sink.valid, 0)
        assert not ctx.get(sender.sink.ready), "one credit spent: ready stays high"
        ctx.set(sender.source.credit, 1)
        assert not ctx.get(sender.sink.ready), "a credit reached ready within its clock"
        await ctx.tick()
        ctx.set(sender.source.credit, 0)
        assert ctx.get(sender.sink.ready) and ctx.get(sender.credits) == 1, \
            "the credit returned is not held a clock later"

    simulate(sender, bench)


def test_too_many_credits_raise_overrun():
    link = _Link(stages=1, depth=2, credits=4)

    async def bench(ctx):
        ctx.set(link.sender.sink.valid, 1)
        for _ in range(8):
            await ctx.tick()
        assert ctx.get(link.receiver.overrun), "4 payloads into 2 entries without overrun"

    simulate(link, bench)


@pytest.mark.parametrize("make, message", [
    (lambda: CreditSender(_ENTRY, credits=0), "credits must be a positive integer"),
    (lambda: CreditRelay(_ENTRY, stages=-1), "stages must be a non-negative integer"),
    (lambda: credit_loop(2, back=-1), "back must be a non-negative integer"),
    (lambda: CreditReceiver(_ENTRY, depth=0), "depth must be a positive integer"),
    (lambda: CreditReceiver(_ENTRY, depth=2, write_lag=-1), "write_lag must be a non-negative"),
    (lambda: CreditReceiver(_ENTRY, depth=2, write_lag=1, bypass=True), "write_lag must be 0"),
])
def test_bad_parameters_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()
