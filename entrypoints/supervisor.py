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
  then bounded pages of ``wave_targets``; targets backing off do not hold back the
  later pages), catch-up of ordinary Pending outside the frozen set while a wave is
  open. Every page is bounded and at most ``MAX_KNOWN_KEYS`` keys are held; nothing
  materialises the whole Pending set.
* **Queue and Workers.** A :class:`~powercontext.core.topic.supervision.FairQueue`
  keyed by (binding, Scope); at most ``artifact_processing_max_workers`` Workers, one
  per key. A Worker is a child process (multiprocessing ``forkserver``) running one
  :class:`~powercontext.core.topic.supervision.WorkAssignment` (one Window) through
  :mod:`powercontext.entrypoints.topic_worker`; it sends no heartbeat. Past
  ``artifact_processing_worker_timeout_seconds`` it is terminated (then killed) and
  the key redispatched.
* **Retry.** An ordinary failure: ``retry_states[key]`` (jittered backoff, ~30 s
  doubling to ~30 min), never blocking other keys; a control signal (Cursor / Head
  CAS conflict, superseded attempt, lost term) waits the fixed short delay and does
  not count. A terminal frontier is not redispatched until its Pending changes.
* **Waves.** An explicit flush freezes (``source_through``, ``flush_generation``) in
  memory for its Scope; the Window that reaches the target handles the claimed
  generation; a flush during the wave makes the next discovery start exactly one
  successor, which publishes its Windows or, when its target is covered already,
  handles the generation with ``handle_flush`` (no Worker). An automatic wave
  completes with ``complete_wave`` once every target is covered.
* **Logs** (logger ``powercontext.entrypoints.supervisor``, one record per event: the message is
  the event, the fields are record attributes that the StructuredFormatter appends
  once as ``key=value``): binding, scope_id, window_after, window_through,
  stage, error_code, exception_type, failure_count, retry_delay, supervisor_generation,
  worker_id, traceback; never Source content, prompts, model output or secrets.
  Tracebacks are logged as ``file:line:function`` frames only (an exception's text
  may quote content).

The runner ``python -m powercontext.entrypoints.supervisor --db URL [--config F] [--plugin
M:A]... [-v]`` runs one Supervisor in the foreground until SIGTERM/SIGINT (role
``background`` semantics, so an OceanBase database only: on SQLite it refuses, as
``serve --role background`` does) and prints ``supervisor ready holder=<id>
generation=<n>`` to stderr whenever it holds a new term.

A flush whose target is already covered when its wave is dispatched (a flush during
a wave with no new Source, or one covered by an automatic or catch-up Window) is
handled without a Worker: ``handle_flush`` raises the handled generation and deletes
Pending under the spec's condition, so every flush ends handled.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from powercontext.core.errors import (
    InvalidInputError,
    SupervisorTermError,
    SupervisorUnavailableError,
    TopicProcessingUnavailableError,
)
from powercontext.core.topic.processing import BINDING, PendingRow, ScopeStatus
from powercontext.core.topic.supervision import (
    CODE_TERM_LOST,
    CONTROL_DELAY_SECONDS,
    FairQueue,
    RetryState,
    SupervisorTerm,
    WorkAssignment,
    auto_wave_due,
    backoff_delay,
)

__all__ = ["ArtifactProcessingSupervisor", "SupervisorStats", "main"]

_log = logging.getLogger("powercontext.supervisor")

#: Rows per discovery page (Pending, wave targets); the port allows 1..1000.
PAGE = 100
#: At most this many keys known in memory (queued, running or deferred) before
#: discovery stops reading further pages: memory stays bounded however large Pending is.
MAX_KNOWN_KEYS = 4 * PAGE
#: Seconds between terminate() and kill() of a Worker.
KILL_GRACE_SECONDS = 2.0
#: The loop's tick while Workers run (their results and timeouts are checked each tick).
_BUSY_TICK_SECONDS = 0.05

Key = tuple[str, str]


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
    crashes: int = 0
    terms_lost: int = 0


@attrs.define
class _Work:
    """What the Leader wants done for one key: ``mode``, the frozen ``target`` and
    (explicit) the claimed flush generation or (auto) the wave."""

    mode: str
    target: int
    claimed: int | None = None
    wave_id: str | None = None


@attrs.define
class _Running:
    process: Any
    conn: Any
    assignment: WorkAssignment
    work: _Work
    started: float
    terminated_at: float | None = None


def _context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["powercontext.entrypoints.topic_worker"])
    return ctx


def _start_forkserver() -> None:
    from multiprocessing import forkserver

    _context()
    forkserver.ensure_running()


def _frames(exc: BaseException) -> str:
    """The traceback as ``file:line:function`` frames only: an exception's text may
    quote content, its frames never do."""
    return " < ".join(f"{os.path.basename(f.filename)}:{f.lineno}:{f.name}"
                      for f in reversed(traceback.extract_tb(exc.__traceback__)))


class ArtifactProcessingSupervisor:
    """The ``global`` Supervisor on the database ``db_url`` with the loaded
    configuration ``config`` (a ``PowerContextConfig``; its ``runtime`` section sets
    the pool, timeout, lease, poll and automatic interval). ``env`` (default
    ``os.environ``) is passed to the Workers' configuration loading; ``registry`` picks
    the backend.

    ``worker_plugins``: dotted ``module:attribute`` names of extra plugin objects
    registered in every Worker's registry (and in this process's when ``registry`` is
    None), e.g. a test generation provider. ``backoff(failures) -> seconds`` replaces
    :func:`~powercontext.core.topic.supervision.backoff_delay` (tests); ``clock`` is
    the monotonic clock of the retry times and the Worker timeout.

    Errors at :meth:`start`: SupervisorUnavailableError when another Supervisor holds
    this SQLite database; TopicProcessingUnavailableError when automatic scheduling is
    configured but Topic processing is unavailable (a start-up configuration error);
    with no automatic scheduling an unavailable configuration starts, logs why and
    dispatches nothing (flush still records intent)."""

    def __init__(self, db_url: str, config: Any, *, env: Mapping[str, str] | None = None,
                 registry: Any = None, worker_plugins: Sequence[str] = (),
                 backoff: Callable[[int], float] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        from powercontext.plugins.builtin import resolve
        from powercontext.plugins.registry import Registry, url_scheme

        self.db_url = str(db_url)
        self.config = config
        self._env = dict(os.environ if env is None else env)
        self._plugins = tuple(worker_plugins)
        self._registry = (registry if registry is not None
                          else Registry(plugins=[resolve(p) for p in self._plugins]))
        self._backoff = backoff or backoff_delay
        self._clock = clock
        self._holder = str(uuid.uuid4())
        self._sqlite = url_scheme(self.db_url) in (None, "sqlite")
        runtime = config.runtime
        self._max_workers = int(runtime.artifact_processing_max_workers)
        self._timeout = float(runtime.artifact_processing_worker_timeout_seconds)
        self._lease = float(runtime.artifact_processing_lease_seconds)
        self._poll = float(runtime.artifact_processing_poll_seconds)
        self._interval = runtime.topic_memory_auto_interval_seconds
        self._stats = SupervisorStats()
        self._term: SupervisorTerm | None = None
        self._lock: Any = None
        self._service: Any = None
        self._available = False
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._stopping = False
        self._stopped = False
        self._last_renew = 0.0
        self._seq = 0
        self._queue = FairQueue()
        self._work: dict[Key, _Work] = {}
        self._retry: dict[Key, RetryState] = {}
        self._running: dict[Key, _Running] = {}
        self._terminal: dict[Key, tuple[int, int] | None] = {}
        self._wave: str | None = None
        self._wave_after: str | None = None
        self._explicit_after: str | None = None
        self._catchup_after: str | None = None
        self._config_state: dict[str, Any] | None = None

    # ------------------------------------------------------------------ public

    async def start(self) -> None:
        """Take the SQLite lock / first term attempt and start the loop task; returns
        once started (OceanBase: possibly as a candidate, not yet Leader)."""
        from powercontext import topic_config
        from powercontext.entrypoints.topic_worker import config_state
        from powercontext.runtime import acquire_supervisor_lock, open_topic_service

        if self._task is not None:
            return
        if self._stopped:
            raise SupervisorUnavailableError("this Supervisor was stopped; start a new one")
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._config_state = config_state(self.config)
        if self._sqlite:
            self._lock = acquire_supervisor_lock(self.db_url)
        try:
            self._service = open_topic_service(self.db_url, registry=self._registry)
            model = topic_config.check_startup(
                self.config, self._registry,
                embedding_model=self._service.embedding_model, logger=_log)
            self._available = model is not None
            if not self._available:
                _log.warning("supervisor started without Topic processing: nothing is "
                             "dispatched (flush still records intent)",
                             extra={"stage": "startup"})
            # the forkserver starts now, not in the middle of a Leader's tick
            await asyncio.to_thread(_start_forkserver)
            try:
                await self._take_term()
            except Exception as exc:
                if self._sqlite:
                    raise
                # OceanBase: start as a candidate; the loop retries on every poll
                self._emit(logging.WARNING, "supervisor started as a candidate: the "
                           "lease could not be read", None, stage="lease",
                           exception_type=type(exc).__name__)
        except BaseException:
            await self._close_service()
            self._release_lock()
            raise
        self._task = asyncio.create_task(self._run_loop(), name="powercontext-supervisor")

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop dispatching, terminate running Workers (their Windows roll back),
        release the lease (best effort) and the SQLite lock. Idempotent."""
        self._stopping = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._term is not None:
            try:  # results already sent by Workers that finished: counted and logged
                await self._reap()
            except Exception as exc:  # the database may be gone: stop anyway
                self._emit(logging.INFO, "supervisor final results not settled", None,
                           exception_type=type(exc).__name__)
        await self._terminate_all()
        term, self._term = self._term, None
        if term is not None and self._service is not None:
            try:
                await asyncio.wait_for(self._service.backend.release_lease(term),
                                       max(0.1, timeout))
            except Exception as exc:  # best effort: the lease expires anyway
                self._emit(logging.INFO, "supervisor lease not released", None,
                           exception_type=type(exc).__name__)
        await self._close_service()
        self._release_lock()
        self._stopped = True

    async def run_until(self, stop: asyncio.Event) -> None:
        """:meth:`start`, wait for ``stop``, :meth:`stop` (for ``serve --role
        background``)."""
        await self.start()
        try:
            await stop.wait()
        finally:
            await self.stop()

    def notify_flush(self, scope_id: str) -> None:
        """The in-process flush signal: wake discovery now (latency only; the persisted
        flush generation is what counts). Thread-safe, never raises."""
        loop, wake = self._loop, self._wake
        if loop is None or wake is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed
            loop.call_soon_threadsafe(wake.set)

    @property
    def holder_id(self) -> str:
        return self._holder

    @property
    def term(self) -> SupervisorTerm | None:
        """The current :class:`~powercontext.core.topic.supervision.SupervisorTerm`
        while Leader, else None."""
        return self._term

    @property
    def available(self) -> bool:
        """Whether Topic processing can run here (a generation model is configured and
        passes the provider policy)."""
        return self._available

    @property
    def stats(self) -> SupervisorStats:
        return self._stats

    @property
    def running_keys(self) -> frozenset[Key]:
        """The (binding, Scope) keys with a Worker running now."""
        return frozenset(self._running)

    # ------------------------------------------------------------------ the loop

    async def _run_loop(self) -> None:
        assert self._wake is not None
        while not self._stopping:
            try:
                if self._sqlite:
                    await self._tick()
                else:  # a hanging connection must not keep a Leader dispatching
                    await asyncio.wait_for(self._tick(), max(1.0, self._lease / 2))
            except asyncio.CancelledError:
                raise
            except SupervisorTermError as exc:
                await self._lose_term("term refused", exc)
            except Exception as exc:
                self._emit(logging.WARNING, "supervisor tick failed", None, stage="supervisor",
                           exception_type=type(exc).__name__, traceback=_frames(exc))
                if not self._sqlite:  # a raising connection: stop dispatching at once
                    await self._lose_term("database error", exc)
                await self._reopen()
            tick = _BUSY_TICK_SECONDS if self._running else self._poll
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), tick)
            self._wake.clear()

    async def _tick(self) -> None:
        if self._service is None:
            await self._reopen()
        if self._term is None:
            if not await self._take_term():
                return  # a candidate: another Leader holds a valid lease
        elif not self._sqlite and self._clock() - self._last_renew >= self._lease / 3:
            assert self._term is not None
            if not await self._service.backend.renew_lease(self._term, self._lease):
                await self._lose_term("renewal refused", None)
                return
            self._last_renew = self._clock()
        await self._reap()
        if not self._available or self._term is None:
            return
        await self._discover()
        await self._dispatch()

    # ------------------------------------------------------------------ the term

    async def _take_term(self) -> bool:
        lease = None if self._sqlite else self._lease
        term = await self._service.backend.acquire_lease(self._holder, lease)
        if term is None:
            return False
        self._reset_memory()
        await self._service.backend.clear_wave_targets(term)
        self._term = term
        self._last_renew = self._clock()
        self._stats.terms += 1
        self._emit(logging.INFO, "supervisor term acquired", None, stage="lease",
                   holder_id=self._holder)
        return True

    async def _lose_term(self, why: str, exc: BaseException | None) -> None:
        term, self._term = self._term, None
        await self._terminate_all()
        self._reset_memory()
        if term is not None:
            self._stats.terms_lost += 1
            self._emit(logging.WARNING, f"supervisor term lost ({why}): dispatching "
                       "stopped, Workers terminated", None, stage="lease",
                       error_code=CODE_TERM_LOST, supervisor_generation=term.generation,
                       exception_type=type(exc).__name__ if exc is not None else None)

    def _reset_memory(self) -> None:
        """A new or lost term inherits nothing in memory."""
        self._queue.clear()
        self._work.clear()
        self._retry.clear()
        self._terminal.clear()
        self._wave = self._wave_after = None
        self._explicit_after = self._catchup_after = None

    async def _reopen(self) -> None:
        from powercontext.runtime import open_topic_service

        await self._close_service()
        try:
            self._service = open_topic_service(self.db_url, registry=self._registry)
        except Exception as exc:
            self._emit(logging.WARNING, "supervisor cannot reopen the database", None,
                       stage="supervisor", exception_type=type(exc).__name__)

    async def _close_service(self) -> None:
        service, self._service = self._service, None
        if service is not None:
            with contextlib.suppress(Exception):  # a broken connection: nothing to save
                await service.close()

    def _release_lock(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    # ------------------------------------------------------------------ discovery

    async def _discover(self) -> None:
        backend, term = self._service.backend, self._term
        assert term is not None
        if len(self._work) < MAX_KNOWN_KEYS:
            rows = await backend.pending_page(self._explicit_after, PAGE, flushed_only=True)
            self._explicit_after = rows[-1].scope_id if len(rows) == PAGE else None
            for row in rows:
                self._want(row, "explicit")
        if self._interval is None:
            return
        if self._wave is None:
            state = await backend.scheduling_state()
            if auto_wave_due(state, self._interval):
                wave_id = str(uuid.uuid4())
                if await backend.freeze_wave(term, wave_id):
                    self._wave, self._wave_after = wave_id, None
                    self._stats.auto_waves += 1
                    self._emit(logging.INFO, "automatic wave started", None, stage="wave",
                               wave_id=wave_id)
        if self._wave is not None:
            await self._wave_page()
        if self._wave is not None and len(self._work) < MAX_KNOWN_KEYS:
            rows = await backend.pending_page(self._catchup_after, PAGE,
                                              outside_wave=self._wave)
            self._catchup_after = rows[-1].scope_id if len(rows) == PAGE else None
            for row in rows:
                self._want(row, "catchup")

    def _want(self, row: PendingRow, mode: str) -> None:
        key = (row.binding_name, row.scope_id)
        if key in self._terminal:
            if self._terminal[key] == (row.source_through, row.flush_generation):
                return  # a terminal frontier: left alone until its Pending changes
            del self._terminal[key]
        work = self._work.get(key)
        if work is not None:
            if (mode == "explicit" and work.mode != "explicit"
                    and key not in self._queue.running):
                # an explicit flush keeps its explicit semantics (handled generation)
                self._work[key] = _Work("explicit", row.source_through, row.flush_generation)
                self._stats.explicit_waves += 1
            return
        explicit = mode == "explicit"
        self._work[key] = _Work(mode, row.source_through,
                                row.flush_generation if explicit else None)
        if explicit:
            self._stats.explicit_waves += 1
        self._queue.offer(key)

    async def _wave_page(self) -> None:
        """One bounded page of the open wave's not-completed targets; the wave completes
        (one fenced transaction) once none is left and no Worker of it runs."""
        backend, term, wave = self._service.backend, self._term, self._wave
        assert term is not None and wave is not None
        now = self._clock()
        ready = sum(1 for k, w in self._work.items() if w.wave_id == wave
                    and not (k in self._retry and self._retry[k].next_retry_at > now))
        if ready >= PAGE or len(self._work) >= MAX_KNOWN_KEYS:
            # enough of the wave ready in memory already; targets backing off do not
            # count, so a page of failing targets never keeps later pages waiting
            return
        targets = await backend.wave_targets(wave, self._wave_after, PAGE)
        if not targets:
            if self._wave_after is not None:
                self._wave_after = None  # wrap around: deferred targets come again
                return
            if any(w.wave_id == wave for w in self._work.values()):
                return
            if await backend.complete_wave(term, wave):
                self._stats.auto_waves_completed += 1
                self._wave = None
                self._emit(logging.INFO, "automatic wave completed", None, stage="wave",
                           wave_id=wave)
            return
        self._wave_after = targets[-1].scope_id if len(targets) == PAGE else None
        for target in targets:
            key = (target.binding_name, target.scope_id)
            if key in self._work or key in self._terminal:
                continue  # owned by explicit work or a retry, or terminal: deferred
            self._work[key] = _Work("auto", target.source_through, None, wave)
            self._queue.offer(key)

    # ------------------------------------------------------------------ dispatch

    async def _dispatch(self) -> None:
        term = self._term
        assert term is not None
        while len(self._running) < self._max_workers and self._term is term:
            now = self._clock()
            waits = {k: r.next_retry_at for k, r in self._retry.items()
                     if r.next_retry_at > now}
            key = self._queue.take(now, waits)
            if key is None:
                return
            work = self._work.get(key)  # type: ignore[call-overload]
            if work is None:
                self._queue.done(key, more=False)
                continue
            try:
                await self._dispatch_key(key, work, term)  # type: ignore[arg-type]
            except BaseException:
                if key not in self._running:  # never left "running" without a Worker
                    self._queue.done(key, more=True)
                raise

    async def _dispatch_key(self, key: Key, work: _Work, term: SupervisorTerm) -> None:
        """Start a Worker for ``key``, or settle it without one (covered, terminal)."""
        binding, scope = key
        (status,) = await self._service.backend.processing_status(scope)
        if self._terminal_frontier(status):
            self._terminal[key] = self._snapshot(status)
            self._work.pop(key, None)
            self._queue.done(key, more=False)
            self._emit(logging.INFO, "terminal frontier left alone until its Pending "
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
            work = _Work("explicit", max(work.target, pending.source_through),
                         pending.flush_generation)
            self._work[key] = work
        if status.cursor >= work.target:
            if (work.mode == "explicit" and work.claimed is not None and pending is not None
                    and pending.handled_flush_generation < work.claimed):
                # the target is covered (by an earlier Window, another mode's Window or
                # a Window published while this flush arrived): the flush is handled
                # now, with no Window to publish (Topic Memory RFC, "Pending dirty set")
                await self._service.backend.handle_flush(scope, work.target, work.claimed,
                                                         supervisor=term)
                self._emit(logging.INFO, "flush handled: its target was covered", key,
                           stage="wave", window_after=status.cursor, target=work.target,
                           claimed=work.claimed)
            await self._finished(key, work)
            return
        self._seq += 1
        assignment = WorkAssignment(
            binding, scope, status.cursor, work.target, work.mode,  # type: ignore[arg-type]
            term, f"w{term.generation}.{self._seq}",
            claimed_flush_generation=work.claimed if work.mode == "explicit" else None,
            wave_id=work.wave_id if work.mode == "auto" else None)
        self._spawn(key, assignment, work)

    @staticmethod
    def _terminal_frontier(status: ScopeStatus) -> bool:
        budget = status.budget
        return (budget is not None and budget.terminal
                and budget.source_after == status.cursor)

    @staticmethod
    def _snapshot(status: ScopeStatus) -> tuple[int, int] | None:
        p = status.pending
        return None if p is None else (p.source_through, p.flush_generation)

    def _spawn(self, key: Key, assignment: WorkAssignment, work: _Work) -> None:
        from powercontext.entrypoints.topic_worker import worker_main

        ctx = _context()
        reader, writer = ctx.Pipe(duplex=False)
        level = logging.getLogger("powercontext").getEffectiveLevel()
        process = ctx.Process(
            target=worker_main, name=f"powercontext-worker-{assignment.worker_id}",
            args=(writer, self.db_url, self._config_state, self._env, assignment,
                  self._plugins, level), daemon=True)
        try:
            process.start()
        finally:
            writer.close()
        self._running[key] = _Running(process, reader, assignment, work, self._clock())
        self._stats.dispatched += 1
        self._emit(logging.INFO, "worker dispatched", key, stage="dispatch",
                   window_after=assignment.source_after, worker_id=assignment.worker_id,
                   mode=assignment.mode, target=assignment.target)

    # ------------------------------------------------------------------ Workers

    async def _reap(self) -> None:
        from powercontext.entrypoints.topic_worker import (
            CODE_WORKER_CRASH,
            CODE_WORKER_TIMEOUT,
            result,
        )

        now = self._clock()
        for key, run in list(self._running.items()):
            res: dict[str, Any] | None = None
            ended = False
            if run.conn.poll():
                ended = True
                try:
                    res = run.conn.recv()
                except (EOFError, OSError):
                    res = None
            elif not run.process.is_alive():
                ended = True
            elif run.terminated_at is None:
                if now - run.started > self._timeout:
                    run.process.terminate()
                    run.terminated_at = now
                continue
            elif now - run.terminated_at >= KILL_GRACE_SECONDS:
                run.process.kill()
                continue
            else:
                continue
            if not ended:
                continue
            del self._running[key]
            run.conn.close()
            run.process.join(0.5)
            if not isinstance(res, dict):
                code = CODE_WORKER_TIMEOUT if run.terminated_at is not None else CODE_WORKER_CRASH
                if code == CODE_WORKER_TIMEOUT:
                    self._stats.timeouts += 1
                else:
                    self._stats.crashes += 1
                res = result("failed", run.assignment.source_after, code=code, stage="worker")
            await self._settle(key, run, res)

    async def _settle(self, key: Key, run: _Running, res: Mapping[str, Any]) -> None:
        a, work = run.assignment, run.work
        status = res.get("status")
        fields = {"window_after": a.source_after, "window_through": res.get("through"),
                  "worker_id": a.worker_id, "stage": res.get("stage") or None}
        if status == "published":
            self._stats.published += 1
            self._retry.pop(key, None)
            self._emit(logging.INFO, "window published", key, **fields)
            if int(res.get("through", 0)) >= work.target:
                await self._finished(key, work)
            else:
                self._queue.done(key, more=True)  # more work: to the back of the queue
            return
        if status == "idle":
            await self._finished(key, work)
            return
        code = res.get("code") or "worker_error"
        if res.get("terminal"):
            self._stats.failures += 1
            self._terminal[key] = None  # filled with the Pending snapshot at dispatch
            self._work.pop(key, None)
            self._queue.done(key, more=False)
            self._emit(logging.WARNING, "window failed at a terminal frontier", key,
                       error_code=code, **fields)
            return
        retry = self._retry.setdefault(key, RetryState())
        if res.get("control"):
            self._stats.control_signals += 1
            retry.next_retry_at = self._clock() + CONTROL_DELAY_SECONDS
            if code == CODE_TERM_LOST and not self._sqlite:
                self._last_renew = float("-inf")  # confirm the lease on the next tick
            self._emit(logging.INFO, "control signal: retried after the fixed delay", key,
                       error_code=code, retry_delay=CONTROL_DELAY_SECONDS, **fields)
        else:
            self._stats.failures += 1
            retry.consecutive_failures += 1
            delay = float(self._backoff(retry.consecutive_failures))
            retry.next_retry_at = self._clock() + delay
            self._emit(logging.WARNING, "window failed: retried after backoff", key,
                       error_code=code, failure_count=retry.consecutive_failures,
                       retry_delay=round(delay, 3), **fields)
        self._queue.done(key, more=True)

    async def _finished(self, key: Key, work: _Work) -> None:
        """The key reached its target (or there is nothing to do): forget it; an auto
        target is marked completed when its Cursor covers it."""
        self._work.pop(key, None)
        self._queue.done(key, more=False)
        if (work.mode == "auto" and work.wave_id is not None and work.wave_id == self._wave
                and self._term is not None):
            await self._service.backend.complete_target(self._term, work.wave_id, key[1])

    async def _terminate_all(self) -> None:
        runs = list(self._running.values())
        self._running.clear()
        for run in runs:
            if run.process.is_alive():
                run.process.terminate()
        for _ in range(int(KILL_GRACE_SECONDS / 0.05)):
            if not any(r.process.is_alive() for r in runs):
                break
            await asyncio.sleep(0.05)
        for run in runs:
            if run.process.is_alive():
                run.process.kill()
            run.process.join(1.0)
            run.conn.close()
            self._queue.discard((run.assignment.binding_name, run.assignment.scope_id))

    # ------------------------------------------------------------------ logs

    def _emit(self, level: int, event: str, key: Key | None, **fields: Any) -> None:
        """One structured record: the message is the event alone, the fields are record
        attributes (those beyond the Worker's ``FIELDS`` named in ``extra_fields``), so
        :class:`~powercontext.entrypoints.topic_worker.StructuredFormatter` shows each once. Never
        Source content, prompts, model output or secrets."""
        from powercontext.entrypoints.topic_worker import FIELDS

        base: dict[str, Any] = {"binding": key[0] if key else BINDING,
                                "scope_id": key[1] if key else None}
        term = self._term
        base["supervisor_generation"] = term.generation if term else None
        base.update(fields)
        base["extra_fields"] = tuple(k for k in base if k not in FIELDS)
        _log.log(level, "%s", event, extra=base)


# ---------------------------------------------------------------------- the runner


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m powercontext.entrypoints.supervisor --db URL [--config F] [--plugin M:A]...
    [-v]``: one Supervisor in the foreground (role ``background`` semantics) until SIGTERM or
    SIGINT; prints ``supervisor ready holder=<id> generation=<n>`` to stderr each time
    it holds a new term. Exit 2 for a refused start: a SQLite database (as ``serve
    --role background``: SQLite runs the Supervisor only inside ``serve --role all``),
    bad configuration, Topic processing unavailable with automatic scheduling."""
    from powercontext import topic_config
    from powercontext.entrypoints.topic_worker import StructuredFormatter

    parser = argparse.ArgumentParser(prog="python -m powercontext.entrypoints.supervisor")
    parser.add_argument("--db", required=True)
    parser.add_argument("--config", default=None)
    parser.add_argument("--plugin", action="append", default=[],
                        help="module:attribute of an extra plugin (Workers too)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    from powercontext.plugins.registry import url_scheme

    if url_scheme(args.db) in (None, "sqlite"):
        # the same refusal as `serve --role background` (Topic Memory RFC, "Process
        # roles": the first SQLite release runs only the single-process role all)
        print("error: role: SQLite supports only `powercontext serve --role all` (one "
              "process serving the API and running the Supervisor); this runner is the "
              "background role, which needs OceanBase", file=sys.stderr)
        return 2
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(StructuredFormatter())
    root = logging.getLogger("powercontext")
    root.addHandler(handler)
    root.setLevel(logging.INFO if args.verbose else logging.WARNING)
    try:
        config = topic_config.load_config(args.config)
    except InvalidInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    async def run() -> int:
        sup = ArtifactProcessingSupervisor(args.db, config, worker_plugins=args.plugin)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await sup.start()
        except (SupervisorUnavailableError, TopicProcessingUnavailableError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        shown: int | None = None
        try:
            while not stop.is_set():
                term = sup.term
                if term is not None and term.generation != shown:
                    shown = term.generation
                    print(f"supervisor ready holder={sup.holder_id} "
                          f"generation={term.generation}", file=sys.stderr, flush=True)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.1)
        finally:
            await sup.stop()
        return 0

    return asyncio.run(run())


if __name__ == "__main__":
    sys.exit(main())
