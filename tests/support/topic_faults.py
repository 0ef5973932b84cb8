"""The contract kit's ``FaultInjection`` hook for the SQL Topic backends: a subclass of
a :class:`~powercontext.adapters.topic_database.SQLTopicBackend` adapter whose
publication steps (the statements of the publication transaction, in the spec's
order, and its COMMIT) raise on demand, plus ``topic_integrity()`` when the adapter
can report its index state. Used by tests/conformance/test_topic_*.py.

A step is named as the primitive it was before the Topic backend was composed of
collaborators (the kit only passes the names back); :data:`STEPS` says which
collaborator's method each one is (None: the storage's own method)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["GUARD_PRIMITIVES", "PUBLICATION_PRIMITIVES", "with_publication_faults"]

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
_ONLY_PUBLISHING = frozenset({"_commit_sync", *GUARD_PRIMITIVES})

#: point -> (the backend's collaborator, its method), or None for the storage's method.
STEPS: dict[str, tuple[str, str] | None] = {
    "_set_shape_sync": ("topic_rows", "set_shape"),
    "_cas_head_sync": None,
    "_insert_head_sync": None,
    "_insert_revision_sync": None,
    "_insert_lineage_sync": ("topic_rows", "insert_lineage"),
    "_database_utc_now_sync": ("topic_rows", "now"),
    "_insert_publication_sync": ("topic_rows", "insert_publication"),
    "_delete_active_sync": ("projection", "delete_active"),
    "_insert_active_sync": ("projection", "insert_active"),
    "_commit_sync": None,
    "_cursor_sync": ("ledger_rows", "cursor"),
    "_budget_row_sync": ("ledger_rows", "budget_row"),
    "_cursor_insert_sync": ("ledger_rows", "cursor_insert"),
    "_cursor_cas_sync": ("ledger_rows", "cursor_cas"),
    "_pending_row_sync": ("ledger_rows", "pending_row"),
    "_pending_handled_sync": ("ledger_rows", "pending_handled"),
    "_pending_delete_sync": ("ledger_rows", "pending_delete"),
    "_budget_delete_sync": ("ledger_rows", "budget_delete"),
}


def _wrap(backend: Any, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def step(*args: Any, **kw: Any) -> Any:
        if backend.fail_at == name and (name not in _ONLY_PUBLISHING or backend._publishing):
            raise RuntimeError(f"injected failure at {name}")
        return method(*args, **kw)

    return step


def _faulty(name: str) -> Callable[..., Any]:
    def primitive(self: Any, *args: Any, **kw: Any) -> Any:
        if self.fail_at == name and (name not in _ONLY_PUBLISHING or self._publishing):
            raise RuntimeError(f"injected failure at {name}")
        return getattr(super(self._faulty_base, self), name)(*args, **kw)

    primitive.__name__ = name
    return primitive


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
        for name, where in STEPS.items():
            if where is not None:  # the collaborator's own object: wrap its method there
                part = getattr(self, where[0])
                setattr(part, where[1], _wrap(self, name, getattr(part, where[1])))

    ns: dict[str, Any] = {name: _faulty(name) for name, where in STEPS.items()
                          if where is None}
    ns.update(__init__=__init__, fail_at=None, _publishing=False, fault_points=fault_points,
              guard_fault_points=guard_fault_points, inject_fault=inject_fault,
              publish=publish)
    if integrity is not None:
        async def topic_integrity(self: Any) -> list[str]:
            return await self._run(integrity, self)

        ns["topic_integrity"] = topic_integrity
    sub = type(f"Faulty{cls.__name__}", (cls,), ns)
    sub._faulty_base = sub  # type: ignore[attr-defined]
    return sub
