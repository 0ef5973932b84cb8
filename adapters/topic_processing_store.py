"""TopicProcessingStatus: the explicit flush and the read-only processing status of
the Topic backends (Topic Memory RFC, "Pending dirty set", "Automatic processing and
explicit flush", "Retry and observability"; TOPIC-MEMORY.md, "Flush").

Engine-neutral: the order of the I/O over the host's Source-store reads (the SQL
storage's :mod:`powercontext.adapters.storage.sql_sources`, the in-memory
``InMemorySources``). The binding is always
:data:`~powercontext.core.topic.processing.BINDING`.

* :meth:`TopicProcessingStatus.flush` -- one short write transaction: ``idle``
  (nothing written) when the Scope has no Source or its Cursor covers the Source head;
  else ``source_through = max(existing, head)``, ``flush_generation + 1`` (the row
  created with generation 1 when absent) and ``accepted``.
* :meth:`TopicProcessingStatus.processing_status` -- one read snapshot: Source head,
  Cursor, Pending row and the budget row of the current frontier
  (``source_after = Cursor``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from powercontext.adapters.topic_host import TopicHost
from powercontext.core.errors import InvalidInputError
from powercontext.core.topic.content import check_scope_id
from powercontext.core.topic.processing import BINDING, FlushStatus, ScopeStatus

__all__ = ["TopicProcessingStatus"]

T = TypeVar("T")


def _utf8(scope_id: str) -> bytes:
    return scope_id.encode("utf-8", "surrogatepass")


class TopicProcessingStatus:
    """``flush`` and ``processing_status`` of
    :class:`powercontext.ports.topic.TopicMemoryBackend` over the host's Scope journal,
    Pending, Cursor and budget reads (each inside a transaction opened here)."""

    def __init__(self, host: TopicHost) -> None:
        self._host = host

    async def _tx(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        return await self._host._run(self._host._in_tx, write, fn, *args)

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
        status: FlushStatus = await self._tx(True, self._flush_sync, scope)
        return status

    def _flush_sync(self, scope_id: str) -> FlushStatus:
        self._host._scope_lock_sync(scope_id)  # the head read below sees every committed Source
        head = self._host._scope_head_sync(scope_id)
        if head == 0 or self._host._cursor_get_sync(BINDING, scope_id) >= head:
            return "idle"
        self._host._pending_flush_sync(BINDING, scope_id, head)
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
            return tuple(await self._tx(False, self._status_all_sync))
        if not isinstance(scope_id, str):
            raise InvalidInputError("scope_id", "must be a string or None")
        scope = check_scope_id(scope_id)
        return (await self._tx(False, self._status_sync, scope),)

    def _status_sync(self, scope_id: str) -> ScopeStatus:
        cursor = self._host._cursor_get_sync(BINDING, scope_id)
        return ScopeStatus(scope_id, BINDING, self._host._scope_head_sync(scope_id), cursor,
                           self._host._pending_get_sync(BINDING, scope_id),
                           self._host._budget_get_sync(scope_id, BINDING, cursor))

    def _status_all_sync(self) -> list[ScopeStatus]:
        scopes = sorted(set(self._host._processing_scopes_sync(BINDING)), key=_utf8)
        return [self._status_sync(s) for s in scopes]
