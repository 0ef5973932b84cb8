"""The Topic Worker: the child-process entry the ArtifactProcessingSupervisor starts for
one :class:`~powercontext.core.topic.supervision.WorkAssignment` (Topic Memory RFC,
"In-memory queue and Workers"; TOPIC-MEMORY.md, "The Worker's transactions").

A Worker is a child of a ``multiprocessing.get_context("forkserver")`` context (this
module is the forkserver's preload). It opens its own backend with
:func:`powercontext.open_topic_processor` on the Supervisor's database and
configuration, runs exactly one Window through
:meth:`~powercontext.topic_processing.TopicProcessor.process_assignment` and sends one
small result dict back over a Pipe (:func:`result`)::

    {"status": "published" | "failed" | "idle", "through": int, "code": str | None,
     "terminal": bool, "control": bool, "stage": str}

``through``: the Cursor after the Window (published), else the assignment's
``source_after``. It sends no heartbeat; the Supervisor enforces the timeout. A Worker
that dies without a result is the Supervisor's ``worker_crash``.

The child logs to stderr (logger ``powercontext``) one line per record with the
structured fields as ``key=value`` (:class:`StructuredFormatter`); records never carry
Source text, prompts, model output, API keys or tokens.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

__all__ = [
    "CODE_WORKER_CRASH",
    "CODE_WORKER_ERROR",
    "CODE_WORKER_TIMEOUT",
    "FIELDS",
    "StructuredFormatter",
    "config_from_state",
    "config_state",
    "result",
    "worker_main",
]

#: A Worker that ended without a result (killed, crashed, exited early).
CODE_WORKER_CRASH = "worker_crash"
#: A Worker that ran past ``artifact_processing_worker_timeout_seconds``.
CODE_WORKER_TIMEOUT = "worker_timeout"
#: An unexpected error outside the Window (bootstrap, connection): the type only.
CODE_WORKER_ERROR = "worker_error"

#: The structured fields of the Supervisor's and the Workers' log records, in order.
FIELDS = ("binding", "scope_id", "window_after", "window_through", "stage", "error_code",
          "exception_type", "attempt_count", "failure_count", "retry_delay",
          "supervisor_generation", "worker_id")


class StructuredFormatter(logging.Formatter):
    """``<time> <level> <logger>: <message> key=value ...`` with every structured field
    the record carries, each once: :data:`FIELDS` in that order, then the names the
    record lists in its ``extra_fields`` attribute (a tuple of further attribute names,
    e.g. ``mode``, ``target``); None values are left out. The message itself never
    repeats a field. Text values are ``repr``-quoted so a Scope id cannot forge a field
    or a line. ``fmt`` replaces the line's prefix format (``topic process -v`` shows
    ``powercontext.topic: %(message)s``)."""

    def __init__(self, fmt: str = "%(asctime)s %(levelname)s %(name)s: %(message)s") -> None:
        super().__init__(fmt)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        parts = []
        names = dict.fromkeys((*FIELDS, *getattr(record, "extra_fields", ())))
        for name in names:
            value = getattr(record, name, None)
            if value is None:
                continue
            parts.append(f"{name}={value!r}" if isinstance(value, str) else
                         f"{name}={value}")
        return f"{line} {' '.join(parts)}" if parts else line


def result(status: str, through: int, *, code: str | None = None, terminal: bool = False,
           control: bool = False, stage: str = "") -> dict[str, Any]:
    """The result dict a Worker sends (see the module docstring)."""
    return {"status": status, "through": int(through), "code": code,
            "terminal": bool(terminal), "control": bool(control), "stage": stage}


def config_state(config: Any) -> dict[str, Any]:
    """A picklable copy of a ``PowerContextConfig`` (its tables are read-only mapping
    proxies, which do not pickle) for :func:`config_from_state` in the child."""
    def plain(value: Any) -> Any:
        if attrs.has(type(value)):
            return {f.name: plain(getattr(value, f.name)) for f in attrs.fields(type(value))}
        if isinstance(value, Mapping):
            return {k: plain(v) for k, v in value.items()}
        return value
    state: dict[str, Any] = plain(config)
    return state


def config_from_state(state: Mapping[str, Any]) -> Any:
    """The ``PowerContextConfig`` of a :func:`config_state` copy."""
    from powercontext.configuration import (
        InferenceConfig,
        PowerContextConfig,
        RuntimeConfig,
        ServerConfig,
    )

    return PowerContextConfig(
        runtime=RuntimeConfig(**state["runtime"]),
        inference=InferenceConfig(**state["inference"]),
        source=state.get("source"), origins=state.get("origins") or {},
        server=ServerConfig(**(state.get("server") or {})))


def _setup_logging(level: int) -> None:
    root = logging.getLogger("powercontext")
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(StructuredFormatter())
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False


async def _run(db_url: str, config: Any, env: Mapping[str, str], assignment: Any,
               plugins: Sequence[str]) -> dict[str, Any]:
    from powercontext.core.errors import (
        CapabilityNotSupportedError,
        InvalidInputError,
        TopicProcessingError,
    )
    from powercontext.plugins.loading import resolve
    from powercontext.plugins.registry import Registry
    from powercontext.runtime import open_topic_processor
    from powercontext.topic_processing import CONTROL_CODES

    after = assignment.source_after
    registry = Registry(plugins=[resolve(p) for p in plugins])
    try:
        processor = open_topic_processor(db_url, config=config, registry=registry, env=env)
    except (CapabilityNotSupportedError, InvalidInputError) as exc:
        logging.getLogger("powercontext.topic").warning(
            "topic worker cannot start: %s", type(exc).__name__,
            extra={"scope_id": assignment.scope_id, "stage": "bootstrap",
                   "error_code": "processing_unavailable",
                   "exception_type": type(exc).__name__,
                   "supervisor_generation": assignment.term.generation,
                   "worker_id": assignment.worker_id})
        return result("failed", after, code="processing_unavailable", stage="bootstrap")
    try:
        outcome = await processor.process_assignment(assignment)
    except TopicProcessingError as exc:
        return result("failed", after, code=exc.code, terminal=exc.terminal,
                      control=exc.code in CONTROL_CODES, stage=exc.stage or "attempt")
    finally:
        await processor.service.close()
    if outcome is None:
        return result("idle", after, stage="window")
    return result("published", outcome.through, stage="publish")


def worker_main(conn: Any, db_url: str, config: Mapping[str, Any],
                env: Mapping[str, str] | None, assignment: Any,
                plugins: Sequence[str] = (), log_level: int = logging.WARNING) -> None:
    """The child's entry: ``conn`` the write end of the result Pipe; ``config`` a
    :func:`config_state` copy; ``env`` the Supervisor's environment (it becomes the
    child's, so its provider keys and overrides apply); ``assignment`` the
    WorkAssignment; ``plugins`` dotted ``module:attribute`` names of extra plugin
    objects registered in the child's registry (test providers). Sends exactly one
    result and exits; an unexpected error is a failed result with
    ``worker_error`` (its type logged, never its text)."""
    _setup_logging(log_level)
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    try:
        out = asyncio.run(_run(db_url, config_from_state(config), env or os.environ,
                               assignment, plugins))
    except BaseException as exc:  # never a traceback text with content on the pipe
        logging.getLogger("powercontext.topic").warning(
            "topic worker failed: %s", type(exc).__name__,
            extra={"scope_id": getattr(assignment, "scope_id", None), "stage": "worker",
                   "error_code": CODE_WORKER_ERROR, "exception_type": type(exc).__name__,
                   "worker_id": getattr(assignment, "worker_id", None)})
        out = result("failed", getattr(assignment, "source_after", 0),
                     code=CODE_WORKER_ERROR, stage="worker")
    try:
        conn.send(out)
    finally:
        conn.close()
