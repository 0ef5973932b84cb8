"""TEMPORARY (until p2-store's in-memory scoped Sources land): the Scope journal,
flush and processing status over the in-memory Topic backend's dict state, with the
same table names the budget mixin uses (``cursors``, ``pending``, ``budgets``)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from powercontext.core.errors import InvalidInputError
from powercontext.core.models import Source
from powercontext.core.topic.content import check_scope_id
from powercontext.core.topic.processing import (
    BINDING,
    JournalEntry,
    PendingRow,
    ScopeStatus,
)
from powercontext.plugins.testing import InMemoryTopicBackend


class ScopedInMemoryTopicBackend(InMemoryTopicBackend):
    def _journal(self) -> dict[str, list[JournalEntry]]:
        return self._state.setdefault("scope_journal", {})

    async def put_scoped_sources(self, scope_id: str,
                                 sources: Sequence[Source]) -> tuple[int, ...]:
        scope = check_scope_id(scope_id)
        await self.put_sources(sources)
        journal = self._journal()
        owner = {e.source.source_id: (s, e.position) for s, rows in journal.items()
                 for e in rows}
        out = []
        for src in sources:
            if src.source_id in owner:
                s, pos = owner[src.source_id]
                if s != scope:
                    raise InvalidInputError("scope_id", "Source is in another Scope")
                out.append(pos)
                continue
            rows = journal.setdefault(scope, [])
            pos = len(rows) + 1
            rows.append(JournalEntry(scope, pos, src))
            owner[src.source_id] = (scope, pos)
            key = (BINDING, scope)
            pending = self._table("pending")
            row = pending.get(key)
            pending[key] = (PendingRow(BINDING, scope, pos) if row is None
                            else attrs.evolve(row, source_through=max(row.source_through, pos)))
            out.append(pos)
        return tuple(out)

    async def scope_journal(self, scope_id: str, after: int = 0,
                            limit: int = 100) -> tuple[JournalEntry, ...]:
        rows = self._journal().get(check_scope_id(scope_id), [])
        return tuple(rows[after:after + limit])

    async def source_head(self, scope_id: str) -> int:
        return len(self._journal().get(check_scope_id(scope_id), []))

    async def flush(self, scope_id: str) -> str:
        scope = check_scope_id(scope_id)
        head = await self.source_head(scope)
        cursor = self._table("cursors").get((BINDING, scope), 0)
        if head == 0 or cursor >= head:
            return "idle"
        key = (BINDING, scope)
        row = self._table("pending").get(key) or PendingRow(BINDING, scope, head)
        self._table("pending")[key] = attrs.evolve(
            row, source_through=max(row.source_through, head),
            flush_generation=row.flush_generation + 1)
        return "accepted"

    async def processing_status(self, scope_id: str | None = None) -> tuple[ScopeStatus, ...]:
        assert scope_id is not None
        scope = check_scope_id(scope_id)
        cursor = self._table("cursors").get((BINDING, scope), 0)
        return (ScopeStatus(scope, BINDING, await self.source_head(scope), cursor,
                            self._table("pending").get((BINDING, scope)),
                            self._table("budgets").get((scope, BINDING, cursor))),)

    def mark_lineage_only(self, scope_id: str, position: int) -> None:
        rows = self._journal()[scope_id]
        rows[position - 1] = attrs.evolve(rows[position - 1], lineage_only=True)
