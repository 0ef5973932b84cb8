"""TopicProcessingStoreMixin: the explicit flush and the read-only processing status of
the Topic backends (Topic Memory RFC, "Pending dirty set", "Automatic processing and
explicit flush", "Retry and observability"; TOPIC-MEMORY.md, "Flush").

Engine-neutral: the order of the I/O over five synchronous primitives the engine's
storage class implements (SQLite / OceanBase ``connection.py``, the in-memory
``InMemorySources``). The binding is always
:data:`~powercontext.core.topic.processing.BINDING`.

* :meth:`TopicProcessingStoreMixin.flush` -- one short write transaction: ``idle``
  (nothing written) when the Scope has no Source or its Cursor covers the Source head;
  else ``source_through = max(existing, head)``, ``flush_generation + 1`` (the row
  created with generation 1 when absent) and ``accepted``.
* :meth:`TopicProcessingStoreMixin.processing_status` -- one read snapshot: Source head,
  Cursor, Pending row and the budget row of the current frontier
  (``source_after = Cursor``).
"""

from __future__ import annotations

import abc

from powercontext.adapters.storage import SourceStore
from powercontext.core.errors import InvalidInputError
from powercontext.core.topic.content import check_scope_id
from powercontext.core.topic.models import TopicCapabilities
from powercontext.core.topic.processing import (
    BINDING,
    BudgetRow,
    FlushStatus,
    PendingRow,
    ScopeStatus,
)

__all__ = ["TopicProcessingStoreMixin"]


def _utf8(scope_id: str) -> bytes:
    return scope_id.encode("utf-8", "surrogatepass")


class TopicProcessingStoreMixin(SourceStore[TopicCapabilities]):
    """``flush`` and ``processing_status`` of
    :class:`powercontext.ports.topic.TopicMemoryBackend` over the primitives below
    (each runs inside the caller's transaction)."""

    @abc.abstractmethod
    def _pending_get_sync(self, binding_name: str, scope_id: str) -> PendingRow | None:
        """The Pending row of (binding, Scope), or None."""

    @abc.abstractmethod
    def _pending_flush_sync(self, binding_name: str, scope_id: str, head: int) -> None:
        """``source_through = max(existing, head)``, ``flush_generation + 1``; the row
        created as ``(head, 1, 0)`` when absent."""

    @abc.abstractmethod
    def _cursor_get_sync(self, binding_name: str, scope_id: str) -> int:
        """The Cursor (``pc_source_cursors.source_position``; 0 when no row)."""

    @abc.abstractmethod
    def _budget_get_sync(self, scope_id: str, binding_name: str,
                         source_after: int) -> BudgetRow | None:
        """The budget row of (scope, binding, source_after), or None."""

    @abc.abstractmethod
    def _processing_scopes_sync(self, binding_name: str) -> list[str]:
        """Every Scope with a journal row, or a Pending, Cursor or budget row of the
        binding (any order, no duplicates)."""

    # ------------------------------------------------------------------ flush

    async def flush(self, scope_id: str) -> FlushStatus:
        """The explicit flush (Topic Memory RFC, "Pending dirty set"), one short
        transaction: ``"idle"`` (nothing written) when the Scope has no Source or its
        Cursor covers the Source head; else ``source_through = max(existing, head)``,
        ``flush_generation + 1`` (the Pending row created if absent) and
        ``"accepted"``. A Scope at a terminal frontier is ``"accepted"`` too
        (:meth:`processing_status` shows why). InvalidInputError naming ``scope_id``
        for a bad Scope id."""
        scope = check_scope_id(scope_id)
        status: FlushStatus = await self._run(self._in_tx, True, self._flush_sync, scope)
        return status

    def _flush_sync(self, scope_id: str) -> FlushStatus:
        self._scope_lock_sync(scope_id)  # the head read below sees every committed Source
        head = self._scope_head_sync(scope_id)
        if head == 0 or self._cursor_get_sync(BINDING, scope_id) >= head:
            return "idle"
        self._pending_flush_sync(BINDING, scope_id, head)
        return "accepted"

    # ------------------------------------------------------------------ status

    async def processing_status(self, scope_id: str | None = None) -> tuple[ScopeStatus, ...]:
        """Read only (one snapshot; Topic Memory RFC, "Retry and observability"): the
        status of one Scope (always one item, zeros and None when unknown), or with
        None of every Scope with a journal row, Pending, Cursor or budget row, sorted
        by scope_id (UTF-8 binary). Each item: Source head, Cursor, Pending row and the
        budget row of the current frontier (``source_after`` = the Cursor).
        InvalidInputError naming ``scope_id`` for a bad Scope id."""
        if scope_id is None:
            return tuple(await self._run(self._in_tx, False, self._status_all_sync))
        if not isinstance(scope_id, str):
            raise InvalidInputError("scope_id", "must be a string or None")
        scope = check_scope_id(scope_id)
        return (await self._run(self._in_tx, False, self._status_sync, scope),)

    def _status_sync(self, scope_id: str) -> ScopeStatus:
        cursor = self._cursor_get_sync(BINDING, scope_id)
        return ScopeStatus(scope_id, BINDING, self._scope_head_sync(scope_id), cursor,
                           self._pending_get_sync(BINDING, scope_id),
                           self._budget_get_sync(scope_id, BINDING, cursor))

    def _status_all_sync(self) -> list[ScopeStatus]:
        scopes = sorted(set(self._processing_scopes_sync(BINDING)), key=_utf8)
        return [self._status_sync(s) for s in scopes]
