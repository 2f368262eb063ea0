"""The health monitor's state machine: trips, cool-down, probation with hysteresis,
re-admission, DevLoad back-off; every transition an event."""

import math

from runtime.events import EventLog
from runtime.health import HealthMonitor, State
from runtime.profile import parse_profile

HEALTH = """\
[health]
loss_window = 4
loss_spike_ratio = 2.0
loss_readmit_ratio = 1.2
sign_agreement_min = 0.5
sign_readmit_min = 0.7
norm_ratio_max = 4.0
norm_readmit_max = 2.0
sample_every = 1
cooldown_steps = 3
readmit_after = 2
devload_backoff_steps = 2
[[route]]
pattern = "*"
route = "gbinary"
"""

GOOD, BETWEEN, BAD = (0.9, 1.0), (0.6, 1.0), (0.3, 1.0)   # (agreement, norm ratio)


def _monitor(subjects=("a", "b")):
    events = EventLog()
    return HealthMonitor(parse_profile(HEALTH).health, events, list(subjects)), events


def test_a_bad_sample_trips_only_its_subject():
    monitor, events = _monitor()
    monitor.observe_sample(0, "a", *BAD)
    assert monitor.state == {"a": State.COOLDOWN, "b": State.ADMITTED}, \
        f"states after a failed sample of a: {monitor.state}"
    assert not monitor.admitted("a", 1) and monitor.admitted("b", 1), \
        "after a's trip at step 0: a must be on FP32 at step 1, b admitted"
    trip, = events.of("trip")
    assert trip.subject == "a" and "sign agreement 0.300 < 0.5" in trip.reason, trip


def test_a_norm_ratio_outside_the_band_trips():
    monitor, events = _monitor()
    monitor.observe_sample(0, "a", 0.9, 0.2)
    monitor.observe_sample(0, "b", 0.9, 5.0)
    assert [e.subject for e in events.of("trip")] == ["a", "b"], \
        f"trips of a loss spike: {[str(e) for e in events.of('trip')]}"
    assert "norm ratio 0.2 outside 1/4.0 to 4.0" in events.of("trip")[0].reason, \
        f"trip reason: {events.of('trip')[0].reason}"


def test_cooldown_probation_hysteresis_and_readmission():
    monitor, events = _monitor(["a"])
    monitor.observe_sample(0, "a", *BAD)            # trip: FP32 until step 4
    for step in range(1, 4):
        monitor.tick(step)
        monitor.observe_sample(step, "a", *GOOD)    # ignored while cooling down
        assert monitor.state["a"] == State.COOLDOWN, f"step {step}"
    monitor.tick(4)
    assert monitor.state["a"] == State.PROBATION and not monitor.admitted("a", 4), \
        f"after cool-down: a is {monitor.state['a']}, admitted {monitor.admitted('a', 4)}"
    monitor.observe_sample(4, "a", *GOOD)
    monitor.observe_sample(5, "a", *BETWEEN)        # passes the trip, not the re-admission
    assert monitor.state["a"] == State.PROBATION, "a sample between thresholds re-admitted"
    assert "count restarts" in events.of("hold")[0].reason, \
        f"hold reason: {events.of('hold')[0].reason}"
    monitor.observe_sample(6, "a", *GOOD)
    assert monitor.state["a"] == State.PROBATION, "re-admitted after one healthy sample"
    monitor.observe_sample(7, "a", *GOOD)
    assert monitor.admitted("a", 8), \
        f"not re-admitted after two healthy samples: {monitor.state['a']}"
    assert [e.decision for e in events] == ["trip", "probation", "hold", "readmit"], \
        f"decisions {[e.decision for e in events]}"


def test_a_bad_sample_in_probation_restarts_the_cooldown():
    monitor, events = _monitor(["a"])
    monitor.observe_sample(0, "a", *BAD)
    monitor.tick(4)
    monitor.observe_sample(4, "a", *BAD)
    assert monitor.state["a"] == State.COOLDOWN, f"a is {monitor.state['a']} right after its trip"
    monitor.tick(7)
    assert monitor.state["a"] == State.COOLDOWN, "cool-down did not restart at step 4"
    monitor.tick(8)
    assert monitor.state["a"] == State.PROBATION, \
        f"a is {monitor.state['a']} after the restarted cool-down"


def test_loss_spikes_and_non_finite_losses_trip_every_subject():
    monitor, events = _monitor()
    for step, loss in enumerate([1.0, 1.1, 0.9, 1.0]):
        monitor.observe_loss(step, loss)
    assert not events.of("trip"), "tripped before the window was full"
    assert not monitor.observe_loss(4, 1.9), "1.9 is below 2.0 times the average: no trip"
    assert not events.of("trip"), "1.9 is below 2.0 times the average"
    assert monitor.observe_loss(5, 3.0), "a spike must say it tripped"
    assert {e.subject for e in events.of("trip")} == {"a", "b"}, \
        f"trips of a loss spike: {[str(e) for e in events.of('trip')]}"
    assert "2.0" in events.of("trip")[0].reason, f"trip reason: {events.of('trip')[0].reason}"
    monitor2, events2 = _monitor()
    assert monitor2.observe_loss(0, math.nan), "a NaN loss must say it tripped"
    assert {e.subject for e in events2.of("trip")} == {"a", "b"}, \
        f"trips of a NaN loss: {[str(e) for e in events2.of('trip')]}"
    assert "loss is nan" in events2.of("trip")[0].reason, \
        f"trip reason: {events2.of('trip')[0].reason}"


def test_severe_devload_backs_off_without_tripping():
    monitor, events = _monitor()
    monitor.observe_devload(3, severe=True, moderate=False)
    assert not monitor.admitted("a", 4) and not monitor.admitted("a", 5), \
        "a must be on FP32 during the DevLoad back-off (steps 4 and 5)"
    assert monitor.admitted("a", 6), "a not back on its low-bit route after the back-off"
    assert monitor.state["a"] == State.ADMITTED, \
        f"DevLoad changed a's state to {monitor.state['a']}"
    assert [e.decision for e in events] == ["fallback"], f"decisions {[e.decision for e in events]}"
    monitor.observe_devload(7, severe=False, moderate=True)
    assert monitor.admitted("a", 8) and events.events[-1].decision == "note", \
        f"Moderate DevLoad: admitted {monitor.admitted('a', 8)}, last event {events.events[-1]}"


def test_an_undone_spike_stays_out_of_the_average():
    """A spike whose update is undone does not raise the moving average, so the same spike
    again trips again; one that stays (not undoable) raises it, and the next does not."""
    for undoable, trips in ((True, 2), (False, 1)):
        monitor, events = _monitor()
        for step, loss in enumerate([1.0, 1.1, 0.9, 1.0]):
            monitor.observe_loss(step, loss)
        monitor.observe_loss(4, 3.0, undoable=undoable)
        monitor.observe_loss(5, 3.0, undoable=undoable)
        got = sorted({e.step for e in events.of("trip")})
        assert len(got) == trips, f"undoable={undoable}: trips at steps {got}, wanted " \
                                  f"{trips} step(s)"


def test_a_loss_near_zero_that_triples_is_no_spike():
    """Near convergence a loss of 0.0025 after an average near 0.001 is more than twice its
    average (loss_spike_ratio 2) but only 0.0015 above it, below loss_spike_min (0.1): no
    trip; 0.5 after the same average is one."""
    monitor, events = _monitor()
    for step, loss in enumerate([0.001, 0.0012, 0.0009, 0.001]):
        monitor.observe_loss(step, loss)
    assert not monitor.observe_loss(4, 0.0025), "a loss of 0.0025 near zero tripped"
    assert not events.of("trip"), [str(e) for e in events]
    assert monitor.observe_loss(5, 0.5), "a loss of 0.5 after losses near 0.001 did not trip"
