"""What the Leader wants done and in which order (Topic Memory RFC, "In-memory queue and
Workers", "Automatic scheduling", "Pending dirty set", "Retry and observability").

* **Discovery** (:meth:`Scheduler.discover`): unhandled explicit flushes
  (``pending_page(flushed_only=True)``), the automatic wave when due
  (:func:`~powercontext.core.topic.supervision.auto_wave_due`; one ``freeze_wave``,
  then bounded pages of ``wave_targets``; targets backing off do not hold back the
  later pages), catch-up of ordinary Pending outside the frozen set while a wave is
  open. Every page is bounded (:data:`PAGE`) and at most :data:`MAX_KNOWN_KEYS` keys
  are held; nothing materialises the whole Pending set.
* **Dispatch** (:meth:`Scheduler.dispatch`): a
  :class:`~powercontext.core.topic.supervision.FairQueue` keyed by (binding, Scope), at
  most ``max_workers`` Workers, one per key; a key whose target is covered is settled
  without a Worker (a covered explicit flush is handled with ``handle_flush``), a
  terminal frontier is left alone until its Pending changes.
* **Results** (:meth:`Scheduler.settle`): an ordinary failure backs off
  (``retry_states[key]``, jittered, never blocking other keys); a control signal waits
  the fixed short delay and does not count; a terminal failure is left alone. An
  explicit flush freezes (``source_through``, ``flush_generation``) in memory for its
  Scope and the Window that reaches the target handles the claimed generation; an
  automatic wave completes with ``complete_wave`` once every target is covered.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from powercontext.core.topic.processing import PendingRow, ScopeStatus
from powercontext.core.topic.supervision import (
    CODE_TERM_LOST,
    CONTROL_DELAY_SECONDS,
    FairQueue,
    RetryState,
    SupervisorTerm,
    WorkAssignment,
    auto_wave_due,
)
from powercontext.entrypoints.supervisor_leases import Leadership
from powercontext.entrypoints.supervisor_workers import Emit, Key, Running, WorkerPool

__all__ = ["MAX_KNOWN_KEYS", "PAGE", "Scheduler", "Work"]

#: Rows per discovery page (Pending, wave targets); the port allows 1..1000.
PAGE = 100
#: At most this many keys known in memory (queued, running or deferred) before
#: discovery stops reading further pages: memory stays bounded however large Pending is.
MAX_KNOWN_KEYS = 4 * PAGE


@attrs.define
class Work:
    """What the Leader wants done for one key: ``mode``, the frozen ``target`` and
    (explicit) the claimed flush generation or (auto) the wave."""

    mode: str
    target: int
    claimed: int | None = None
    wave_id: str | None = None


class Scheduler:
    """The Leader's in-memory state (queue, wanted work, retry states, terminal
    frontiers, the open automatic wave and the discovery cursors), rebuilt from the
    database on every new term (:meth:`reset`).

    ``pool`` runs the Workers; ``leadership`` holds the term that fences every write;
    ``max_workers`` bounds the pool; ``interval`` is the automatic scheduling interval
    in seconds (None: no automatic waves); ``backoff(failures) -> seconds`` the retry
    delay; ``clock`` the monotonic clock; ``stats`` the Supervisor's counters; ``emit``
    its structured log. Every method takes the Topic backend to use (the Supervisor
    reopens it after a database error)."""

    def __init__(self, pool: WorkerPool, leadership: Leadership, *, max_workers: int,
                 interval: float | None, backoff: Callable[[int], float],
                 clock: Callable[[], float], stats: Any, emit: Emit) -> None:
        self.pool = pool
        self.leadership = leadership
        self.max_workers = max_workers
        self.interval = interval
        self.backoff = backoff
        self.clock = clock
        self.stats = stats
        self.emit = emit
        self.queue = FairQueue()
        #: The keys the Leader wants done (queued, running or deferred), with the work.
        self.work: dict[Key, Work] = {}
        self.retry: dict[Key, RetryState] = {}
        self.terminal: dict[Key, tuple[int, int] | None] = {}
        self.wave: str | None = None
        self._wave_after: str | None = None
        self._explicit_after: str | None = None
        self._catchup_after: str | None = None
        self._seq = 0

    def reset(self) -> None:
        """A new or lost term inherits nothing in memory."""
        self.queue.clear()
        self.work.clear()
        self.retry.clear()
        self.terminal.clear()
        self.wave = self._wave_after = None
        self._explicit_after = self._catchup_after = None

    # ------------------------------------------------------------------ discovery

    async def discover(self, backend: Any) -> None:
        """One discovery pass under the held term (module docstring)."""
        term = self.leadership.term
        assert term is not None
        if len(self.work) < MAX_KNOWN_KEYS:
            rows = await backend.pending_page(self._explicit_after, PAGE, flushed_only=True)
            self._explicit_after = rows[-1].scope_id if len(rows) == PAGE else None
            for row in rows:
                self._want(row, "explicit")
        if self.interval is None:
            return
        if self.wave is None:
            state = await backend.scheduling_state()
            if auto_wave_due(state, self.interval):
                wave_id = str(uuid.uuid4())
                if await backend.freeze_wave(term, wave_id):
                    self.wave, self._wave_after = wave_id, None
                    self.stats.auto_waves += 1
                    self.emit(logging.INFO, "automatic wave started", None, stage="wave",
                              wave_id=wave_id)
        if self.wave is not None:
            await self._wave_page(backend)
        if self.wave is not None and len(self.work) < MAX_KNOWN_KEYS:
            rows = await backend.pending_page(self._catchup_after, PAGE,
                                              outside_wave=self.wave)
            self._catchup_after = rows[-1].scope_id if len(rows) == PAGE else None
            for row in rows:
                self._want(row, "catchup")

    def _want(self, row: PendingRow, mode: str) -> None:
        key = (row.binding_name, row.scope_id)
        if key in self.terminal:
            if self.terminal[key] == (row.source_through, row.flush_generation):
                return  # a terminal frontier: left alone until its Pending changes
            del self.terminal[key]
        work = self.work.get(key)
        if work is not None:
            if (mode == "explicit" and work.mode != "explicit"
                    and key not in self.queue.running):
                # an explicit flush keeps its explicit semantics (handled generation)
                self.work[key] = Work("explicit", row.source_through, row.flush_generation)
                self.stats.explicit_waves += 1
            return
        explicit = mode == "explicit"
        self.work[key] = Work(mode, row.source_through,
                              row.flush_generation if explicit else None)
        if explicit:
            self.stats.explicit_waves += 1
        self.queue.offer(key)

    async def _wave_page(self, backend: Any) -> None:
        """One bounded page of the open wave's not-completed targets; the wave completes
        (one fenced transaction) once none is left and no Worker of it runs."""
        term, wave = self.leadership.term, self.wave
        assert term is not None and wave is not None
        now = self.clock()
        ready = sum(1 for k, w in self.work.items() if w.wave_id == wave
                    and not (k in self.retry and self.retry[k].next_retry_at > now))
        if ready >= PAGE or len(self.work) >= MAX_KNOWN_KEYS:
            # enough of the wave ready in memory already; targets backing off do not
            # count, so a page of failing targets never keeps later pages waiting
            return
        targets = await backend.wave_targets(wave, self._wave_after, PAGE)
        if not targets:
            if self._wave_after is not None:
                self._wave_after = None  # wrap around: deferred targets come again
                return
            if any(w.wave_id == wave for w in self.work.values()):
                return
            if await backend.complete_wave(term, wave):
                self.stats.auto_waves_completed += 1
                self.wave = None
                self.emit(logging.INFO, "automatic wave completed", None, stage="wave",
                          wave_id=wave)
            return
        self._wave_after = targets[-1].scope_id if len(targets) == PAGE else None
        for target in targets:
            key = (target.binding_name, target.scope_id)
            if key in self.work or key in self.terminal:
                continue  # owned by explicit work or a retry, or terminal: deferred
            self.work[key] = Work("auto", target.source_through, None, wave)
            self.queue.offer(key)

    # ------------------------------------------------------------------ dispatch

    async def dispatch(self, backend: Any) -> None:
        """Start Workers for the keys the queue hands out, while the pool has room and
        the term is still held."""
        term = self.leadership.term
        assert term is not None
        while len(self.pool.running) < self.max_workers and self.leadership.term is term:
            now = self.clock()
            waits = {k: r.next_retry_at for k, r in self.retry.items()
                     if r.next_retry_at > now}
            key = self.queue.take(now, waits)
            if key is None:
                return
            work = self.work.get(key)  # type: ignore[call-overload]
            if work is None:
                self.queue.done(key, more=False)
                continue
            try:
                await self._dispatch_key(backend, key, work, term)  # type: ignore[arg-type]
            except BaseException:
                if key not in self.pool.running:  # never left "running" without a Worker
                    self.queue.done(key, more=True)
                raise

    async def _dispatch_key(self, backend: Any, key: Key, work: Work,
                            term: SupervisorTerm) -> None:
        """Start a Worker for ``key``, or settle it without one (covered, terminal)."""
        binding, scope = key
        (status,) = await backend.processing_status(scope)
        if _terminal_frontier(status):
            self.terminal[key] = _snapshot(status)
            self.work.pop(key, None)
            self.queue.done(key, more=False)
            self.emit(logging.INFO, "terminal frontier left alone until its Pending "
                      "changes", key, stage="attempt",
                      error_code=status.budget.failure_code if status.budget else None,
                      window_after=status.cursor)
            return
        pending = status.pending
        if (work.mode != "explicit" and pending is not None
                and pending.flush_generation > pending.handled_flush_generation):
            # flushed since it was queued: the explicit semantics win (the Window
            # reaching the flush target handles the generation); its target covers
            # the frozen one, since source_through only rises
            work = Work("explicit", max(work.target, pending.source_through),
                        pending.flush_generation)
            self.work[key] = work
        if status.cursor >= work.target:
            if (work.mode == "explicit" and work.claimed is not None and pending is not None
                    and pending.handled_flush_generation < work.claimed):
                # the target is covered (by an earlier Window, another mode's Window or
                # a Window published while this flush arrived): the flush is handled
                # now, with no Window to publish (Topic Memory RFC, "Pending dirty set")
                await backend.handle_flush(scope, work.target, work.claimed, supervisor=term)
                self.emit(logging.INFO, "flush handled: its target was covered", key,
                          stage="wave", window_after=status.cursor, target=work.target,
                          claimed=work.claimed)
            await self._finished(backend, key, work)
            return
        self._seq += 1
        assignment = WorkAssignment(
            binding, scope, status.cursor, work.target, work.mode,  # type: ignore[arg-type]
            term, f"w{term.generation}.{self._seq}",
            claimed_flush_generation=work.claimed if work.mode == "explicit" else None,
            wave_id=work.wave_id if work.mode == "auto" else None)
        self.pool.spawn(key, assignment, work)

    # ------------------------------------------------------------------ results

    async def settle(self, backend: Any, key: Key, run: Running,
                     res: Mapping[str, Any]) -> None:
        """Act on one Worker's result (module docstring)."""
        a, work = run.assignment, run.work
        status = res.get("status")
        fields = {"window_after": a.source_after, "window_through": res.get("through"),
                  "worker_id": a.worker_id, "stage": res.get("stage") or None}
        if status == "published":
            self.stats.published += 1
            self.retry.pop(key, None)
            self.emit(logging.INFO, "window published", key, **fields)
            if int(res.get("through", 0)) >= work.target:
                await self._finished(backend, key, work)
            else:
                self.queue.done(key, more=True)  # more work: to the back of the queue
            return
        if status == "idle":
            await self._finished(backend, key, work)
            return
        code = res.get("code") or "worker_error"
        if res.get("terminal"):
            self.stats.failures += 1
            self.terminal[key] = None  # filled with the Pending snapshot at dispatch
            self.work.pop(key, None)
            self.queue.done(key, more=False)
            self.emit(logging.WARNING, "window failed at a terminal frontier", key,
                      error_code=code, **fields)
            return
        retry = self.retry.setdefault(key, RetryState())
        if res.get("control"):
            self.stats.control_signals += 1
            retry.next_retry_at = self.clock() + CONTROL_DELAY_SECONDS
            if code == CODE_TERM_LOST:
                self.leadership.confirm_soon()  # leases: confirm it on the next tick
            self.emit(logging.INFO, "control signal: retried after the fixed delay", key,
                      error_code=code, retry_delay=CONTROL_DELAY_SECONDS, **fields)
        else:
            self.stats.failures += 1
            retry.consecutive_failures += 1
            delay = float(self.backoff(retry.consecutive_failures))
            retry.next_retry_at = self.clock() + delay
            self.emit(logging.WARNING, "window failed: retried after backoff", key,
                      error_code=code, failure_count=retry.consecutive_failures,
                      retry_delay=round(delay, 3), **fields)
        self.queue.done(key, more=True)

    async def _finished(self, backend: Any, key: Key, work: Work) -> None:
        """The key reached its target (or there is nothing to do): forget it; an auto
        target is marked completed when its Cursor covers it."""
        self.work.pop(key, None)
        self.queue.done(key, more=False)
        term = self.leadership.term
        if (work.mode == "auto" and work.wave_id is not None and work.wave_id == self.wave
                and term is not None):
            await backend.complete_target(term, work.wave_id, key[1])


def _terminal_frontier(status: ScopeStatus) -> bool:
    budget = status.budget
    return budget is not None and budget.terminal and budget.source_after == status.cursor


def _snapshot(status: ScopeStatus) -> tuple[int, int] | None:
    p = status.pending
    return None if p is None else (p.source_through, p.flush_generation)
