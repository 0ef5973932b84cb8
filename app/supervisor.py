"""The ArtifactProcessingSupervisor of the ``global`` group (Topic Memory RFC,
"Artifact Processing Supervisor", "Leases and terms", "Supervisor failover and
recovery", "In-memory queue and Workers", "Automatic scheduling", "Retry and
observability"; TOPIC-MEMORY.md, "SQLite and other processes").

One asyncio task in the serving process (role ``all`` or ``background``):

* **Term.** At start a UUIDv4 ``holder_id``. SQLite: a whole-file lock on
  ``<db>-supervisor.lock`` first (a second Supervisor on the same file refuses to
  start: SupervisorUnavailableError), then ``acquire_lease`` (generation + 1 on every
  start). OceanBase: a candidate tries ``acquire_lease`` every poll; the Leader renews
  every ``lease_seconds / 3``; a failed or raising renewal stops dispatching at once and
  terminates its Workers; it becomes a candidate again. A new term inherits nothing in
  memory: it clears stale wave targets and rediscovers from Pending, flush
  generations, Cursors and the binding state.
* **Discovery** on every poll (``runtime.artifact_processing_poll_seconds``) and on
  :meth:`notify_flush` (latency only): unhandled explicit flushes
  (``pending_page(flushed_only=True)``), the automatic wave when due
  (:func:`~powercontext.core.topic.supervision.auto_wave_due`; one ``freeze_wave``,
  then bounded pages of ``wave_targets``), catch-up of ordinary Pending outside the
  frozen set. Every page is bounded; nothing materialises the whole Pending set.
* **Queue and Workers.** A :class:`~powercontext.core.topic.supervision.FairQueue`
  keyed by (binding, Scope); at most ``artifact_processing_max_workers`` Workers, one
  per key. A Worker is a child process (multiprocessing ``forkserver``) running one
  :class:`~powercontext.core.topic.supervision.WorkAssignment` (one Window) through
  :mod:`powercontext.topic_worker`; it sends no heartbeat. Past
  ``artifact_processing_worker_timeout_seconds`` it is terminated (then killed) and
  the key redispatched.
* **Retry.** An ordinary failure: ``retry_states[key]`` (jittered backoff, ~30 s
  doubling to ~30 min), never blocking other keys; a control signal (Cursor / Head
  CAS conflict, superseded attempt, lost term) waits the fixed short delay and does
  not count. A terminal frontier is not redispatched until its Pending changes.
* **Waves.** An explicit flush freezes (``source_through``, ``flush_generation``) in
  memory for its Scope; the Window that reaches the target handles the claimed
  generation; a flush during the wave makes the next discovery start exactly one
  successor. An automatic wave completes with ``complete_wave`` once every target is
  covered.
* **Logs** (logger ``powercontext.supervisor``, one record per event, fields as record
  attributes and in the message): binding, scope_id, window_after, window_through,
  stage, error_code, exception_type, failure_count, retry_delay, supervisor_generation,
  worker_id, traceback; never Source content, prompts, model output or secrets.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["ArtifactProcessingSupervisor", "SupervisorStats"]


@attrs.define
class SupervisorStats:
    """Counters of one Supervisor process (observability and tests; in memory only):
    terms acquired, Workers dispatched, Windows published, failures, control signals,
    timeouts, waves started (explicit and automatic) and completed."""

    terms: int = 0
    dispatched: int = 0
    published: int = 0
    failures: int = 0
    control_signals: int = 0
    timeouts: int = 0
    explicit_waves: int = 0
    auto_waves: int = 0
    auto_waves_completed: int = 0


class ArtifactProcessingSupervisor:
    """The ``global`` Supervisor on the database ``db_url`` with the loaded
    configuration ``config`` (a ``PowerContextConfig``; its ``runtime`` section sets
    the pool, timeout, lease, poll and automatic interval). ``env`` (default
    ``os.environ``) is passed to the Workers' configuration loading; ``registry`` picks
    the backend.

    Errors at :meth:`start`: SupervisorUnavailableError when another Supervisor holds
    this SQLite database; TopicProcessingUnavailableError when automatic scheduling is
    configured but Topic processing is unavailable (a start-up configuration error);
    with no automatic scheduling an unavailable configuration starts, logs why and
    dispatches nothing (flush still records intent)."""

    def __init__(self, db_url: str, config: Any, *, env: Mapping[str, str] | None = None,
                 registry: Any = None) -> None:
        raise NotImplementedError("p4-supervisor")

    async def start(self) -> None:
        """Take the SQLite lock / first term attempt and start the loop task; returns
        once started (OceanBase: possibly as a candidate, not yet Leader)."""
        raise NotImplementedError("p4-supervisor")

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop dispatching, terminate running Workers (their Windows roll back),
        release the lease (best effort) and the SQLite lock. Idempotent."""
        raise NotImplementedError("p4-supervisor")

    async def run_until(self, stop: asyncio.Event) -> None:
        """:meth:`start`, wait for ``stop``, :meth:`stop` (for ``serve --role
        background``)."""
        raise NotImplementedError("p4-supervisor")

    def notify_flush(self, scope_id: str) -> None:
        """The in-process flush signal: wake discovery now (latency only; the persisted
        flush generation is what counts). Thread-safe, never raises."""
        raise NotImplementedError("p4-supervisor")

    @property
    def holder_id(self) -> str:
        raise NotImplementedError("p4-supervisor")

    @property
    def term(self) -> Any:
        """The current :class:`~powercontext.core.topic.supervision.SupervisorTerm`
        while Leader, else None."""
        raise NotImplementedError("p4-supervisor")

    @property
    def available(self) -> bool:
        """Whether Topic processing can run here (a generation model is configured and
        passes the provider policy)."""
        raise NotImplementedError("p4-supervisor")

    @property
    def stats(self) -> SupervisorStats:
        raise NotImplementedError("p4-supervisor")
