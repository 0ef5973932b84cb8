"""The Supervisor's pure rules (Topic Memory RFC, "In-memory queue and Workers",
"Automatic scheduling", "Retry and observability"): the fair queue, the jittered
backoff, the automatic-wave deadline."""

from __future__ import annotations

import random
import statistics
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from powercontext.core.topic.supervision import (
    BACKOFF_BASE_SECONDS,
    BACKOFF_CAP_SECONDS,
    FairQueue,
    SchedulingState,
    auto_wave_due,
    backoff_delay,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


# -- auto_wave_due ---------------------------------------------------------------------


def test_auto_wave_is_never_due_when_scheduling_is_disabled():
    assert not auto_wave_due(SchedulingState("b", None, T0), None)
    assert not auto_wave_due(SchedulingState("b", T0 - timedelta(days=9), T0), None)


def test_auto_wave_is_due_when_none_ever_completed():
    assert auto_wave_due(SchedulingState("b", None, T0), 300)


@given(st.floats(1, 31_536_000), st.floats(0, 40_000_000))
def test_auto_wave_due_exactly_when_the_interval_has_passed(interval, since):
    state = SchedulingState("b", T0, T0 + timedelta(seconds=since))
    assert auto_wave_due(state, interval) == (
        T0 + timedelta(seconds=since) >= T0 + timedelta(seconds=interval))


def test_auto_wave_due_at_the_boundary():
    assert auto_wave_due(SchedulingState("b", T0, T0 + timedelta(seconds=300)), 300)
    assert not auto_wave_due(
        SchedulingState("b", T0, T0 + timedelta(seconds=299.999)), 300)


# -- backoff_delay ---------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, None])
def test_backoff_refuses_a_failure_count_below_one(bad):
    with pytest.raises(ValueError, match="failures"):
        backoff_delay(bad)


@given(st.integers(1, 10_000), st.integers(0, 2**32))
def test_backoff_stays_within_its_bounds(failures, seed):
    delay = backoff_delay(failures, random.Random(seed))
    nominal = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** min(failures - 1, 16))
    assert 0.8 * nominal <= delay <= 1.2 * nominal
    assert 0.8 * BACKOFF_BASE_SECONDS <= delay <= 1.2 * BACKOFF_CAP_SECONDS


def test_backoff_median_doubles_then_caps():
    # the same draws for every count: the median is then exactly monotone
    medians = []
    for n in range(1, 12):
        rng = random.Random(7)
        medians.append(statistics.median(backoff_delay(n, rng) for _ in range(201)))
    assert medians == sorted(medians)
    assert medians[0] == pytest.approx(30, rel=0.1)
    assert medians[1] == pytest.approx(60, rel=0.1)
    assert medians[2] == pytest.approx(120, rel=0.1)
    assert medians[-1] == pytest.approx(BACKOFF_CAP_SECONDS, rel=0.1)


def test_backoff_is_jittered():
    rng = random.Random(1)
    assert len({backoff_delay(3, rng) for _ in range(20)}) > 1


# -- FairQueue -------------------------------------------------------------------------


def test_a_key_with_more_work_goes_behind_every_other_queued_key():
    q = FairQueue()
    for k in ("hot", "a", "b"):
        assert q.offer(k)
    assert q.take(0.0) == "hot"
    assert q.offer("c")
    q.done("hot", more=True)
    assert q.queued == ("a", "b", "c", "hot")


def test_a_key_is_never_queued_twice_nor_handed_out_while_running():
    q = FairQueue()
    assert q.offer("k")
    assert not q.offer("k")
    assert q.take(0.0) == "k"
    assert not q.offer("k")  # running: its next run is queued by done(more=True)
    assert q.take(0.0) is None
    q.done("k", more=False)
    assert len(q) == 0 and not q.running
    assert q.offer("k")


def test_take_skips_keys_whose_retry_time_has_not_come():
    q = FairQueue()
    q.offer("late")
    q.offer("ready")
    assert q.take(10.0, {"late": 11.0}) == "ready"
    assert q.take(10.0, {"late": 11.0}) is None
    assert q.take(11.0, {"late": 11.0}) == "late"


def test_discard_forgets_a_queued_or_running_key():
    q = FairQueue()
    q.offer("a")
    q.offer("b")
    assert q.take(0.0) == "a"
    q.discard("a")
    q.discard("b")
    assert len(q) == 0 and not q.running
    q.offer("c")
    q.clear()
    assert len(q) == 0 and "c" not in q


class FairQueueMachine(RuleBasedStateMachine):
    """The queue against a model: FIFO of queued keys, a running set; no key is ever
    both queued and running or handed out twice, and a key re-queued with more work
    is served only after every key queued before it."""

    def __init__(self) -> None:
        super().__init__()
        self.q = FairQueue()
        self.model: list[str] = []
        self.running: set[str] = set()

    keys = st.sampled_from("abcdef")

    @rule(key=keys)
    def offer(self, key):
        queued = self.q.offer(key)
        assert queued == (key not in self.model and key not in self.running)
        if queued:
            self.model.append(key)

    @rule()
    def take(self):
        key = self.q.take(0.0)
        if not self.model:
            assert key is None
            return
        assert key == self.model.pop(0)
        assert key not in self.running
        self.running.add(key)

    @precondition(lambda self: self.running)
    @rule(data=st.data(), more=st.booleans())
    def done(self, data, more):
        key = data.draw(st.sampled_from(sorted(self.running)))
        self.q.done(key, more=more)
        self.running.discard(key)
        if more:
            self.model.append(key)

    @invariant()
    def matches_the_model(self):
        assert list(self.q.queued) == self.model
        assert self.q.running == frozenset(self.running)
        assert not set(self.model) & self.running
        assert len(self.q) == len(self.model) == len(set(self.model))


TestFairQueueMachine = FairQueueMachine.TestCase
