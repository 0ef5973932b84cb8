"""Values and rules of the ArtifactProcessingSupervisor (Topic Memory RFC, "Artifact
Processing Supervisor", "Leases and terms", "Supervisor failover and recovery",
"In-memory queue and Workers", "Automatic scheduling", "Retry and observability";
TOPIC-MEMORY.md, "SQLite and other processes").

Pure: no I/O, no clock of its own (times are passed in). The storage adapters persist
:class:`SupervisorTerm` and :class:`WaveTarget`; the Supervisor process
(:mod:`powercontext.entrypoints.supervisor`) drives the rest.

* The Supervisor group is always :data:`SUPERVISOR_GROUP` (``global``).
* A term is (``holder_id``, ``supervisor_generation``): a UUIDv4 per Supervisor process
  and a generation that rises on every takeover (SQLite: on every start). Every fenced
  transaction (attempt admission, reservations, failure codes, publication, wave
  freeze and completion) checks it first: holder and generation equal, and on
  OceanBase an unexpired lease by database time. A stale term is
  :class:`~powercontext.core.errors.SupervisorTermError` (a RevisionConflictError:
  the whole transaction rolls back) or, where the port raises TopicProcessingError,
  code :data:`CODE_TERM_LOST` -- a control signal, never an ordinary failure.
* :class:`FairQueue` is the in-memory fair queue keyed by (binding_name, scope_id): one
  Worker per key, a key with more work goes to the back.
* :func:`backoff_delay` is the jittered exponential backoff (about 30 s doubling to
  about 30 min); control signals wait :data:`CONTROL_DELAY_SECONDS` instead.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping
from datetime import datetime, timedelta
from typing import Any, Literal

import attrs

__all__ = [
    "BACKOFF_BASE_SECONDS",
    "BACKOFF_CAP_SECONDS",
    "CODE_TERM_LOST",
    "CONTROL_DELAY_SECONDS",
    "SUPERVISOR_GROUP",
    "AssignmentMode",
    "FairQueue",
    "RetryState",
    "SchedulingState",
    "SupervisorTerm",
    "WaveTarget",
    "WorkAssignment",
    "auto_wave_due",
    "backoff_delay",
]

#: The only Supervisor group of the first release.
SUPERVISOR_GROUP = "global"

#: The failure code of a transaction refused because its Supervisor term is no longer
#: the current one (holder or generation changed, or the OceanBase lease expired).
CODE_TERM_LOST = "supervisor_term_lost"

#: Backoff of ordinary failures per key: ~30 s, ~1 min, ~2 min ... capped at ~30 min.
BACKOFF_BASE_SECONDS = 30.0
BACKOFF_CAP_SECONDS = 1_800.0
#: The fixed short delay of a control signal (Cursor / Head CAS conflict, superseded
#: attempt, lost term): no hot loop, and the failure count does not rise.
CONTROL_DELAY_SECONDS = 2.0
#: The jitter of :func:`backoff_delay`: a factor in [1 - _JITTER, 1 + _JITTER].
_JITTER = 0.2

AssignmentMode = Literal["explicit", "auto", "catchup"]


@attrs.frozen
class SupervisorTerm:
    """One leadership term of the Supervisor group: the Supervisor process's UUIDv4
    ``holder_id`` and the ``supervisor_generation`` (>= 1) it acquired. Carried by
    every fenced call of a Worker (``AttemptGrant.supervisor``,
    ``PublicationGuards.supervisor``)."""

    holder_id: str
    generation: int
    group: str = SUPERVISOR_GROUP


@attrs.frozen
class WaveTarget:
    """A row of ``pc_artifact_processing_auto_wave_targets``: the ``source_through``
    of a Pending Scope frozen when automatic wave ``wave_id`` of the binding started,
    and whether its Cursor was confirmed to cover it."""

    wave_id: str
    binding_name: str
    scope_id: str
    source_through: int
    completed: bool = False


@attrs.frozen
class SchedulingState:
    """``pc_artifact_processing_binding_states`` of one binding read with the database
    clock: ``last_auto_wave_completed_at`` (None: never, or no row) and
    ``database_now``, both timezone-aware UTC."""

    binding_name: str
    last_auto_wave_completed_at: datetime | None
    database_now: datetime


def auto_wave_due(state: SchedulingState, interval_seconds: float | None) -> bool:
    """Whether the binding may start an automatic wave now (Topic Memory RFC,
    "Automatic scheduling"): False when automatic scheduling is disabled
    (``interval_seconds`` None); True when no wave ever completed; else when
    ``database_now >= last_auto_wave_completed_at + interval``."""
    if interval_seconds is None:
        return False
    last = state.last_auto_wave_completed_at
    if last is None:
        return True
    return state.database_now >= last + timedelta(seconds=interval_seconds)


@attrs.frozen
class WorkAssignment:
    """What the Supervisor hands one Worker: one Window of (binding, Scope) after
    Cursor ``source_after``, never past ``target``.

    ``mode``: ``explicit`` (a flushed Scope: ``claimed_flush_generation`` is the flush
    generation frozen at its wave start and is handled by the Window that reaches
    ``target``; the Pending row is updated and deleted under the spec's condition),
    ``auto`` (a frozen target of automatic wave ``wave_id``: the Cursor advances,
    Pending is left in place) or ``catchup`` (ordinary Pending of a Scope outside the
    frozen set: like ``auto`` with no wave). ``term`` is the Supervisor term the
    Worker's fenced transactions carry; ``worker_id`` names the Worker in logs. No
    deadline: the Supervisor's timeout is not a database condition."""

    binding_name: str
    scope_id: str
    source_after: int
    target: int
    mode: AssignmentMode
    term: SupervisorTerm
    worker_id: str
    claimed_flush_generation: int | None = None
    wave_id: str | None = None


@attrs.define
class RetryState:
    """``retry_states[(binding_name, scope_id)]`` of the Supervisor (in memory only):
    ``consecutive_failures`` (ordinary failures; control signals do not count) and
    ``next_retry_at`` (the Supervisor's monotonic clock, seconds)."""

    consecutive_failures: int = 0
    next_retry_at: float = 0.0


def backoff_delay(failures: int, rng: random.Random | None = None) -> float:
    """Seconds to wait after the ``failures``-th consecutive ordinary failure (>= 1):
    ``BACKOFF_BASE_SECONDS * 2 ** (failures - 1)`` capped at ``BACKOFF_CAP_SECONDS``,
    with jitter (a factor in [0.8, 1.2], drawn from ``rng``), never above
    ``1.2 * BACKOFF_CAP_SECONDS``. ValueError for ``failures < 1``."""
    if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
        raise ValueError(f"failures must be an integer >= 1, not {failures!r}")
    # 2 ** 7 * 30 s > 30 min: cap the exponent so a huge count cannot overflow
    base = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2.0 ** min(failures - 1, 16))
    factor = (rng or random).uniform(1.0 - _JITTER, 1.0 + _JITTER)
    return min(base * factor, (1.0 + _JITTER) * BACKOFF_CAP_SECONDS)


class FairQueue:
    """The Leader's in-memory fair queue keyed by (binding_name, scope_id) (Topic Memory
    RFC, "In-memory queue and Workers"): FIFO of ready keys, each key at most once in
    the queue and at most once running; :meth:`take` hands out the first ready key
    that is not running and whose retry time has come; :meth:`done` ends a key's run,
    and with ``more=True`` puts it at the back, so a hot Scope cannot starve others.
    Bounded by the number of distinct keys offered."""

    def __init__(self) -> None:
        # insertion-ordered dict as the FIFO: O(1) membership, removal and append
        self._queued: dict[Hashable, None] = {}
        self._running: set[Hashable] = set()

    def offer(self, key: Hashable) -> bool:
        """Queue ``key`` unless it is queued or running already; True when queued."""
        if key in self._queued or key in self._running:
            return False
        self._queued[key] = None
        return True

    def take(self, now: float, not_before: Mapping[Any, float] | None = None
             ) -> Hashable | None:
        """The first queued key that is not running and whose ``not_before[key]`` (if
        any) is <= ``now``; it becomes running. None when there is none."""
        waits = not_before or {}
        for key in self._queued:
            if waits.get(key, now) <= now:
                del self._queued[key]
                self._running.add(key)
                return key
        return None

    def done(self, key: Hashable, *, more: bool) -> None:
        """End ``key``'s run; ``more``: it has more work, queue it at the back."""
        self._running.discard(key)
        if more:
            self._queued.pop(key, None)
            self._queued[key] = None

    def discard(self, key: Hashable) -> None:
        """Forget ``key`` (queued or running), e.g. when leadership is lost."""
        self._queued.pop(key, None)
        self._running.discard(key)

    def clear(self) -> None:
        """Forget every key (a lost term: the next Leader rediscovers)."""
        self._queued.clear()
        self._running.clear()

    def __len__(self) -> int:
        """The number of queued (not running) keys."""
        return len(self._queued)

    def __contains__(self, key: object) -> bool:
        return key in self._queued or key in self._running

    @property
    def queued(self) -> tuple[Hashable, ...]:
        """The queued keys in order (front first)."""
        return tuple(self._queued)

    @property
    def running(self) -> frozenset[Hashable]:
        """The keys handed out by :meth:`take` and not yet :meth:`done`."""
        return frozenset(self._running)
