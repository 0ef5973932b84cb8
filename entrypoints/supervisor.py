"""The ArtifactProcessingSupervisor of the ``global`` group (Topic Memory RFC,
"Artifact Processing Supervisor", "Leases and terms", "Supervisor failover and
recovery", "In-memory queue and Workers", "Automatic scheduling", "Retry and
observability"; TOPIC-MEMORY.md, "SQLite and other processes").

One asyncio task in the serving process (role ``all`` or ``background``), composed of
one collaborator per concept:

* **Term** (:mod:`powercontext.entrypoints.supervisor_leases`). At start a UUIDv4
  ``holder_id``; the backend declares its locking policy
  (:mod:`powercontext.ports.topic_supervision`). ``file-lock`` (SQLite): a whole-file
  lock on ``<db>-supervisor.lock`` first (a second Supervisor on the same file refuses
  to start: SupervisorUnavailableError), then ``acquire_lease`` (generation + 1 on every
  start). ``lease`` (OceanBase): a candidate tries ``acquire_lease`` every poll; the
  Leader renews every ``lease_seconds / 3``; a failed or raising renewal stops
  dispatching at once and terminates its Workers; it becomes a candidate again. A new
  term inherits nothing in memory: it clears stale wave targets and rediscovers from
  Pending, flush generations, Cursors and the binding state.
* **Discovery, queue, retry and waves**
  (:mod:`powercontext.entrypoints.supervisor_scheduling`) on every poll
  (``runtime.artifact_processing_poll_seconds``) and on :meth:`notify_flush` (latency
  only): explicit flushes, the automatic wave when due, catch-up while a wave is open,
  in bounded pages; a :class:`~powercontext.core.topic.supervision.FairQueue` keyed by
  (binding, Scope); backoff after an ordinary failure, the fixed short delay after a
  control signal, a terminal frontier left alone until its Pending changes. A flush
  whose target is already covered when its wave is dispatched is handled without a
  Worker (``handle_flush``), so every flush ends handled.
* **Workers** (:mod:`powercontext.entrypoints.supervisor_workers`): at most
  ``artifact_processing_max_workers`` child processes (multiprocessing
  ``forkserver``), one per key, each running one
  :class:`~powercontext.core.topic.supervision.WorkAssignment` (one Window) through
  :mod:`powercontext.entrypoints.topic_worker`; no heartbeat. Past
  ``artifact_processing_worker_timeout_seconds`` a Worker is terminated (then killed)
  and the key redispatched.
* **Logs** (logger ``powercontext.supervisor``, one record per event: the message is
  the event, the fields are record attributes that the StructuredFormatter appends
  once as ``key=value``): binding, scope_id, window_after, window_through,
  stage, error_code, exception_type, failure_count, retry_delay, supervisor_generation,
  worker_id, traceback; never Source content, prompts, model output or secrets.
  Tracebacks are logged as ``file:line:function`` frames only (an exception's text
  may quote content).

The runner ``python -m powercontext.entrypoints.supervisor --db URL [--config F]
[--plugin M:A]... [-v]`` (:func:`main`) runs one
Supervisor in the foreground until SIGTERM/SIGINT (role ``background`` semantics, so a
backend of the ``lease`` policy only, such as OceanBase: on SQLite, a ``file-lock``
backend, it refuses, as ``serve --role background`` does) and prints ``supervisor
ready holder=<id> generation=<n>`` to stderr whenever it holds a new term.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from powercontext.core.errors import (
    InvalidInputError,
    PowerContextError,
    SupervisorTermError,
    SupervisorUnavailableError,
    TopicProcessingUnavailableError,
)
from powercontext.core.topic.processing import BINDING
from powercontext.core.topic.supervision import CODE_TERM_LOST, SupervisorTerm, backoff_delay
from powercontext.entrypoints.supervisor_leases import Leadership, locking_of, locking_policy
from powercontext.entrypoints.supervisor_scheduling import Scheduler
from powercontext.entrypoints.supervisor_workers import Key, WorkerPool, start_forkserver
from powercontext.ports.topic_supervision import FILE_LOCK, SupervisorLocking

__all__ = ["ArtifactProcessingSupervisor", "SupervisorStats", "locking_policy", "main"]

_log = logging.getLogger("powercontext.supervisor")

#: The loop's tick while Workers run (their results and timeouts are checked each tick).
_BUSY_TICK_SECONDS = 0.05


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
        from powercontext.plugins.loading import resolve
        from powercontext.plugins.registry import Registry

        self.db_url = str(db_url)
        self.config = config
        plugins = tuple(worker_plugins)
        self._registry = (registry if registry is not None
                          else Registry(plugins=[resolve(p) for p in plugins]))
        runtime = config.runtime
        self._poll = float(runtime.artifact_processing_poll_seconds)
        self._stats = SupervisorStats()
        self._leadership = Leadership(
            self.db_url, float(runtime.artifact_processing_lease_seconds), clock)
        self._pool = WorkerPool(
            self.db_url, dict(os.environ if env is None else env), plugins,
            timeout=float(runtime.artifact_processing_worker_timeout_seconds), clock=clock,
            stats=self._stats, emit=self._emit)
        self._scheduler = Scheduler(
            self._pool, self._leadership,
            max_workers=int(runtime.artifact_processing_max_workers),
            interval=runtime.topic_memory_auto_interval_seconds,
            backoff=backoff or backoff_delay, clock=clock, stats=self._stats,
            emit=self._emit)
        self._service: Any = None
        self._available = False
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._stopping = False
        self._stopped = False

    # ------------------------------------------------------------------ public

    async def start(self) -> None:
        """Take the file lock (a ``file-lock`` backend) and the first term attempt and
        start the loop task; returns once started (``lease``: possibly as a candidate,
        not yet Leader)."""
        from powercontext import topic_provider
        from powercontext.entrypoints.topic_worker import config_state
        from powercontext.runtime import open_topic_service

        if self._task is not None:
            return
        if self._stopped:
            raise SupervisorUnavailableError("this Supervisor was stopped; start a new one")
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._pool.config_state = config_state(self.config)
        try:
            # opening is lazy: the policy is read and the lock taken before any I/O
            self._service = open_topic_service(self.db_url, registry=self._registry)
            self._leadership.choose(self._service.backend)
            model = topic_provider.check_startup(
                self.config, self._registry,
                embedding_model=self._service.embedding_model, logger=_log)
            self._available = model is not None
            if not self._available:
                _log.warning("supervisor started without Topic processing: nothing is "
                             "dispatched (flush still records intent)",
                             extra={"stage": "startup"})
            # the forkserver starts now, not in the middle of a Leader's tick
            await asyncio.to_thread(start_forkserver)
            try:
                await self._take_term()
            except Exception as exc:
                if not self._leadership.leases:
                    raise
                # leases: start as a candidate; the loop retries on every poll
                self._emit(logging.WARNING, "supervisor started as a candidate: the "
                           "lease could not be read", None, stage="lease",
                           exception_type=type(exc).__name__)
        except BaseException:
            await self._close_service()
            self._leadership.release_lock()
            raise
        self._task = asyncio.create_task(self._run_loop(), name="powercontext-supervisor")

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop dispatching, terminate running Workers (their Windows roll back),
        release the lease (best effort) and the file lock. Idempotent."""
        self._stopping = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._leadership.term is not None:
            try:  # results already sent by Workers that finished: counted and logged
                await self._reap()
            except Exception as exc:  # the database may be gone: stop anyway
                self._emit(logging.INFO, "supervisor final results not settled", None,
                           exception_type=type(exc).__name__)
        await self._terminate_all()
        term = self._leadership.drop()
        if term is not None and self._service is not None:
            try:
                await asyncio.wait_for(self._service.backend.release_lease(term),
                                       max(0.1, timeout))
            except Exception as exc:  # best effort: the lease expires anyway
                self._emit(logging.INFO, "supervisor lease not released", None,
                           exception_type=type(exc).__name__)
        await self._close_service()
        self._leadership.release_lock()
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
        return self._leadership.holder_id

    @property
    def locking(self) -> SupervisorLocking:
        """The Supervisor locking policy the backend declares
        (:mod:`powercontext.ports.topic_supervision`), known once started."""
        return self._leadership.locking

    @property
    def term(self) -> SupervisorTerm | None:
        """The current :class:`~powercontext.core.topic.supervision.SupervisorTerm`
        while Leader, else None."""
        return self._leadership.term

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
        return frozenset(self._pool.running)

    @property
    def known_keys(self) -> frozenset[Key]:
        """The (binding, Scope) keys the Leader wants done now (queued, running or
        backing off); a terminal frontier is not among them."""
        return frozenset(self._scheduler.work)

    # ------------------------------------------------------------------ the loop

    async def _run_loop(self) -> None:
        assert self._wake is not None
        while not self._stopping:
            try:
                limit = self._leadership.tick_timeout
                if limit is None:
                    await self._tick()
                else:  # a hanging connection must not keep a Leader dispatching
                    await asyncio.wait_for(self._tick(), limit)
            except asyncio.CancelledError:
                raise
            except SupervisorTermError as exc:
                await self._lose_term("term refused", exc)
            except Exception as exc:
                self._emit(logging.WARNING, "supervisor tick failed", None, stage="supervisor",
                           exception_type=type(exc).__name__, traceback=_frames(exc))
                if self._leadership.leases:  # a raising connection: stop dispatching now
                    await self._lose_term("database error", exc)
                await self._reopen()
            tick = _BUSY_TICK_SECONDS if self._pool.running else self._poll
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), tick)
            self._wake.clear()

    async def _tick(self) -> None:
        if self._service is None:
            await self._reopen()
        if self._leadership.term is None:
            if not await self._take_term():
                return  # a candidate: another Leader holds a valid lease
        elif (self._leadership.renewal_due()
              and not await self._leadership.renew(self._service.backend)):
            await self._lose_term("renewal refused", None)
            return
        await self._reap()
        if not self._available or self._leadership.term is None:
            return
        await self._scheduler.discover(self._service.backend)
        await self._scheduler.dispatch(self._service.backend)

    async def _reap(self) -> None:
        for key, run, res in self._pool.ended():
            await self._scheduler.settle(self._service.backend, key, run, res)

    async def _terminate_all(self) -> None:
        for key in await self._pool.terminate_all():
            self._scheduler.queue.discard(key)

    # ------------------------------------------------------------------ the term

    async def _take_term(self) -> bool:
        backend = self._service.backend
        term = await self._leadership.acquire(backend)
        if term is None:
            return False
        self._scheduler.reset()
        await backend.clear_wave_targets(term)
        self._leadership.hold(term)
        self._stats.terms += 1
        self._emit(logging.INFO, "supervisor term acquired", None, stage="lease",
                   holder_id=self._leadership.holder_id)
        return True

    async def _lose_term(self, why: str, exc: BaseException | None) -> None:
        term = self._leadership.drop()
        await self._terminate_all()
        self._scheduler.reset()
        if term is not None:
            self._stats.terms_lost += 1
            self._emit(logging.WARNING, f"supervisor term lost ({why}): dispatching "
                       "stopped, Workers terminated", None, stage="lease",
                       error_code=CODE_TERM_LOST, supervisor_generation=term.generation,
                       exception_type=type(exc).__name__ if exc is not None else None)

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

    # ------------------------------------------------------------------ logs

    def _emit(self, level: int, event: str, key: Key | None, **fields: Any) -> None:
        """One structured record: the message is the event alone, the fields are record
        attributes (those beyond the Worker's ``FIELDS`` named in ``extra_fields``), so
        :class:`~powercontext.entrypoints.topic_worker.StructuredFormatter` shows each
        once. Never Source content, prompts, model output or secrets."""
        from powercontext.entrypoints.topic_worker import FIELDS

        base: dict[str, Any] = {"binding": key[0] if key else BINDING,
                                "scope_id": key[1] if key else None}
        term = self._leadership.term
        base["supervisor_generation"] = term.generation if term else None
        base.update(fields)
        base["extra_fields"] = tuple(k for k in base if k not in FIELDS)
        _log.log(level, "%s", event, extra=base)


# ---------------------------------------------------------------------- the runner


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m powercontext.entrypoints.supervisor --db URL [--config F] [--plugin
    M:A]... [-v]``: one Supervisor in the foreground (role ``background`` semantics)
    until SIGTERM or SIGINT; prints ``supervisor ready holder=<id> generation=<n>`` to
    stderr each time it holds a new term. Exit 2 for a refused start: a backend of the
    ``file-lock`` policy such as SQLite (as ``serve --role background``: SQLite runs
    the Supervisor only inside ``serve --role all``), an unknown URL scheme, bad
    configuration, Topic processing unavailable with automatic scheduling."""
    from powercontext import configuration
    from powercontext.entrypoints.topic_worker import StructuredFormatter
    from powercontext.plugins.registry import UnknownPluginError

    parser = argparse.ArgumentParser(prog="python -m powercontext.entrypoints.supervisor")
    parser.add_argument("--db", required=True)
    parser.add_argument("--config", default=None)
    parser.add_argument("--plugin", action="append", default=[],
                        help="module:attribute of an extra plugin (Workers too)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    try:
        locking = locking_of(args.db, args.plugin)
    except (PowerContextError, UnknownPluginError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if locking == FILE_LOCK:
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
        config = configuration.load_config(args.config)
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
