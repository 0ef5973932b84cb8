"""The contract kit's ``FaultInjection`` hook for the SQL Topic backends: a subclass of
a :class:`~powercontext.adapters.topic_database.SQLTopicBackend` adapter whose
publication steps (the statements of the publication transaction, in the spec's
order, and its COMMIT) raise on demand, plus ``topic_integrity()`` when the adapter
can report its index state. Used by tests/conformance/test_topic_*.py.

The faults wrap the backend's engine in place (every collaborator holds that one
engine): a step that runs a shared statement fails at the engine's ``execute``,
``execute_many`` or ``query`` by the statement's *name*, whichever collaborator runs
it; the database clock and COMMIT fail at the engine's ``database_now`` and
``commit``. Only the two steps of the engine's own search projection, whose statements
are the engine's own and have no shared name, fail at the projection's port method
(:class:`~powercontext.ports.engine.TopicSearchProjection`). A step keeps the name of
the primitive it was before the Topic backend was composed of collaborators (the kit
only passes the names back); :data:`STEPS` says where each one fails."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["GUARD_PRIMITIVES", "PUBLICATION_PRIMITIVES", "STEPS", "with_publication_faults"]

#: Every SPI primitive a publication runs inside its write transaction, then COMMIT.
PUBLICATION_PRIMITIVES = (
    "_set_shape_sync",
    "_cas_head_sync",
    "_insert_head_sync",
    "_insert_revision_sync",
    "_insert_lineage_sync",
    "_database_utc_now_sync",
    "_insert_publication_sync",
    "_delete_active_sync",
    "_insert_active_sync",
    "_commit_sync",
)

#: The guard primitives a guarded publication runs (Cursor CAS and advance, budget fence
#: and delete, Pending update); each fails only inside a publication (begin_attempt and
#: reserve use some of them too).
GUARD_PRIMITIVES = (
    "_cursor_sync",
    "_budget_row_sync",
    "_cursor_insert_sync",
    "_cursor_cas_sync",
    "_pending_row_sync",
    "_pending_handled_sync",
    "_pending_delete_sync",
    "_budget_delete_sync",
)
#: Steps that fail only inside a publication: COMMIT and the database clock end every
#: transaction and stamp other writes too; the guard statements run in begin_attempt
#: and reserve.
_ONLY_PUBLISHING = frozenset({"_commit_sync", "_database_utc_now_sync", *GUARD_PRIMITIVES})

#: point -> where it fails: ``("statement", name)`` the shared statement ``name`` at the
#: engine, ``("engine", method)`` the engine's port method, ``("projection", method)``
#: the engine's search projection.
STEPS: dict[str, tuple[str, str]] = {
    "_set_shape_sync": ("statement", "topic_shape_delete"),
    "_cas_head_sync": ("statement", "head_cas"),
    "_insert_head_sync": ("statement", "head_insert"),
    "_insert_revision_sync": ("statement", "revision_insert"),
    "_insert_lineage_sync": ("statement", "topic_lineage_source_insert"),
    "_database_utc_now_sync": ("engine", "database_now"),
    "_insert_publication_sync": ("statement", "topic_publication_insert"),
    "_delete_active_sync": ("projection", "delete_active"),
    "_insert_active_sync": ("projection", "insert_active"),
    "_commit_sync": ("engine", "commit"),
    "_cursor_sync": ("statement", "guard_cursor_get"),
    "_budget_row_sync": ("statement", "budget_get"),
    "_cursor_insert_sync": ("statement", "guard_cursor_insert"),
    "_cursor_cas_sync": ("statement", "guard_cursor_cas"),
    "_pending_row_sync": ("statement", "guard_pending_get"),
    "_pending_handled_sync": ("statement", "guard_pending_handled"),
    "_pending_delete_sync": ("statement", "guard_pending_delete"),
    "_budget_delete_sync": ("statement", "budget_delete"),
}
#: The engine's statement calls, each given the statement's name first.
_STATEMENT_CALLS = ("execute", "execute_many", "query")


def _fails(backend: Any, point: str) -> None:
    if backend.fail_at == point and (point not in _ONLY_PUBLISHING or backend._publishing):
        raise RuntimeError(f"injected failure at {point}")


def _wrap(backend: Any, point: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def step(*args: Any, **kw: Any) -> Any:
        _fails(backend, point)
        return method(*args, **kw)

    return step


def _by_name(backend: Any, method: Callable[..., Any],
             points: dict[str, str]) -> Callable[..., Any]:
    def statement(name: str, *args: Any, **kw: Any) -> Any:
        point = points.get(name)
        if point is not None:
            _fails(backend, point)
        return method(name, *args, **kw)

    return statement


def install_faults(backend: Any) -> None:
    """Wrap ``backend.engine`` (and its projection's two own steps) in place so that
    the step ``backend.fail_at`` raises RuntimeError (see :data:`STEPS`)."""
    engine = backend.engine
    by_statement = {name: point for point, (kind, name) in STEPS.items()
                    if kind == "statement"}
    for call in _STATEMENT_CALLS:
        setattr(engine, call, _by_name(backend, getattr(engine, call), by_statement))
    for point, (kind, name) in STEPS.items():
        if kind in ("engine", "projection"):
            holder = engine if kind == "engine" else backend.projection
            setattr(holder, name, _wrap(backend, point, getattr(holder, name)))


def with_publication_faults(cls: type, integrity: Callable[[Any], list[str]] | None = None
                            ) -> type:
    """``cls`` with ``fault_points()``, ``guard_fault_points()``, ``inject_fault(point)`` and, given
    ``integrity(backend) -> problems`` (run on the worker thread), ``topic_integrity()``."""

    def fault_points(self: Any) -> tuple[str, ...]:
        return PUBLICATION_PRIMITIVES

    def guard_fault_points(self: Any) -> tuple[str, ...]:
        return GUARD_PRIMITIVES

    def inject_fault(self: Any, point: str | None) -> None:
        if point is not None and point not in PUBLICATION_PRIMITIVES + GUARD_PRIMITIVES:
            raise ValueError(f"unknown fault point {point!r}")
        self.fail_at = point

    async def publish(self: Any, publication: Any) -> Any:
        self._publishing = True
        try:
            return await super(sub, self).publish(publication)
        finally:
            self._publishing = False

    def __init__(self: Any, *args: Any, **kw: Any) -> None:
        super(sub, self).__init__(*args, **kw)
        install_faults(self)

    ns: dict[str, Any] = dict(
        __init__=__init__, fail_at=None, _publishing=False, fault_points=fault_points,
        guard_fault_points=guard_fault_points, inject_fault=inject_fault, publish=publish)
    if integrity is not None:
        async def topic_integrity(self: Any) -> list[str]:
            return await self._run(integrity, self)

        ns["topic_integrity"] = topic_integrity
    sub = type(f"Faulty{cls.__name__}", (cls,), ns)
    return sub
