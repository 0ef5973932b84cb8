"""The Supervisor's Worker processes (Topic Memory RFC, "In-memory queue and Workers",
"Retry and observability"): each Window runs in a child process (multiprocessing
``forkserver``) that opens its own backend, runs one
:class:`~powercontext.core.topic.supervision.WorkAssignment` through
:mod:`powercontext.entrypoints.topic_worker` and sends one small result dict over a
pipe; it sends no heartbeat. A crash, a hang or a kill of one Worker never touches the
serving process.

:class:`WorkerPool` starts Workers, collects the results of those that ended (a
crash without a result is ``worker_crash``; one past
``artifact_processing_worker_timeout_seconds`` is terminated, killed after
:data:`KILL_GRACE_SECONDS`, and reported as ``worker_timeout``) and terminates them
all when the term is lost or the Supervisor stops.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from powercontext.core.topic.supervision import WorkAssignment

__all__ = ["KILL_GRACE_SECONDS", "Emit", "Key", "Running", "WorkerPool", "start_forkserver"]

#: Seconds between terminate() and kill() of a Worker.
KILL_GRACE_SECONDS = 2.0

#: A key of the queue: (binding, Scope).
Key = tuple[str, str]


class Emit(Protocol):
    """The Supervisor's structured log: ``emit(level, event, key, **fields)``."""

    def __call__(self, level: int, event: str, key: Key | None, **fields: Any) -> None: ...


@attrs.define
class Running:
    """One Worker process: its result pipe, its assignment, what the scheduler wanted
    done (``work``, opaque here), when it started and when it was terminated."""

    process: Any
    conn: Any
    assignment: WorkAssignment
    work: Any
    started: float
    terminated_at: float | None = None


def _context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["powercontext.entrypoints.topic_worker"])
    return ctx


def start_forkserver() -> None:
    """Start the forkserver now (blocking: run it in a thread), not in the middle of a
    Leader's tick."""
    from multiprocessing import forkserver

    _context()
    forkserver.ensure_running()


class WorkerPool:
    """The running Workers of one Supervisor, at most one per key.

    ``db_url``, ``env`` and ``plugins`` are handed to every Worker (with
    :attr:`config_state`, set at start); ``timeout`` is the Worker timeout in seconds
    on ``clock`` (monotonic); ``stats`` the Supervisor's counters (``dispatched``,
    ``timeouts``, ``crashes``); ``emit`` its structured log."""

    def __init__(self, db_url: str, env: Mapping[str, str], plugins: tuple[str, ...], *,
                 timeout: float, clock: Callable[[], float], stats: Any, emit: Emit) -> None:
        self.db_url = db_url
        self.env = env
        self.plugins = plugins
        self.timeout = timeout
        self.clock = clock
        self.stats = stats
        self.emit = emit
        #: The loaded configuration as the Workers rebuild it (set at start).
        self.config_state: dict[str, Any] | None = None
        self.running: dict[Key, Running] = {}

    def spawn(self, key: Key, assignment: WorkAssignment, work: Any) -> None:
        """Start a Worker for ``assignment`` (one Window of ``key``)."""
        from powercontext.entrypoints.topic_worker import worker_main

        ctx = _context()
        reader, writer = ctx.Pipe(duplex=False)
        level = logging.getLogger("powercontext").getEffectiveLevel()
        process = ctx.Process(
            target=worker_main, name=f"powercontext-worker-{assignment.worker_id}",
            args=(writer, self.db_url, self.config_state, self.env, assignment,
                  self.plugins, level), daemon=True)
        try:
            process.start()
        finally:
            writer.close()
        self.running[key] = Running(process, reader, assignment, work, self.clock())
        self.stats.dispatched += 1
        self.emit(logging.INFO, "worker dispatched", key, stage="dispatch",
                  window_after=assignment.source_after, worker_id=assignment.worker_id,
                  mode=assignment.mode, target=assignment.target)

    def ended(self) -> list[tuple[Key, Running, dict[str, Any]]]:
        """The Workers that ended since the last call, each with its result: the dict it
        sent, else a ``failed`` result with code ``worker_timeout`` (it was terminated)
        or ``worker_crash``. A Worker past the timeout is terminated now (killed after
        :data:`KILL_GRACE_SECONDS`) and reported once it has ended."""
        from powercontext.entrypoints.topic_worker import (
            CODE_WORKER_CRASH,
            CODE_WORKER_TIMEOUT,
            result,
        )

        now = self.clock()
        out: list[tuple[Key, Running, dict[str, Any]]] = []
        for key, run in list(self.running.items()):
            res: dict[str, Any] | None = None
            if run.conn.poll():
                try:
                    res = run.conn.recv()
                except (EOFError, OSError):
                    res = None
            elif not run.process.is_alive():
                pass
            elif run.terminated_at is None:
                if now - run.started > self.timeout:
                    run.process.terminate()
                    run.terminated_at = now
                continue
            else:
                if now - run.terminated_at >= KILL_GRACE_SECONDS:
                    run.process.kill()
                continue
            del self.running[key]
            run.conn.close()
            run.process.join(0.5)
            if not isinstance(res, dict):
                code = CODE_WORKER_TIMEOUT if run.terminated_at is not None else CODE_WORKER_CRASH
                if code == CODE_WORKER_TIMEOUT:
                    self.stats.timeouts += 1
                else:
                    self.stats.crashes += 1
                res = result("failed", run.assignment.source_after, code=code, stage="worker")
            out.append((key, run, res))
        return out

    async def terminate_all(self) -> list[Key]:
        """Terminate every running Worker (killed after :data:`KILL_GRACE_SECONDS`;
        their Windows roll back) and forget them; returns their keys."""
        runs = list(self.running.values())
        self.running.clear()
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
        return [(run.assignment.binding_name, run.assignment.scope_id) for run in runs]
