"""The Source store of the in-memory backends (Memory and Topic): the synchronous
primitives a :class:`powercontext.adapters.storage.SourceJournal` runs (its
:class:`~powercontext.adapters.storage.SourceHost`; and the
Pending / Cursor / budget reads of
:class:`powercontext.adapters.topic_processing_store.TopicProcessingStatus`) over
a plain dict state:

* ``sources`` (source_id -> (position, Source)) and ``journal`` (Sources in store
  order; a Source's position is its index + 1);
* ``scope_journal`` (scope_id -> list of (source_id, lineage_only); position = index
  + 1) and ``scope_of`` (source_id -> (scope_id, position));
* ``pending`` ((binding_name, scope_id) -> PendingRow);
* ``cursors`` ((binding_name, scope_id) -> int; absent = 0);
* ``budgets`` ((scope_id, binding_name, source_after) -> BudgetRow).

The processing keys are created on first use (:func:`processing_state`), so a state
made before them still works."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from powercontext.adapters.storage import SourceJournal
from powercontext.core.models import Source
from powercontext.core.topic.processing import BudgetRow, JournalEntry, PendingRow

__all__ = ["InMemorySources", "SourceFront", "processing_state"]

_PROCESSING_KEYS = ("scope_journal", "scope_of", "pending", "cursors", "budgets", "scope_uris")


def processing_state(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with the processing tables (empty dicts) added when absent."""
    for key in _PROCESSING_KEYS:
        state.setdefault(key, {})
    return state


class InMemorySources:
    """Mixin: the Source-store and processing-read primitives over ``self._state``
    (the class it is mixed into provides it)."""

    _state: Any

    def _put_sources_sync(self, sources: Sequence[Source]) -> list[int]:
        out = []
        for s in sources:
            if s.source_id not in self._state["sources"]:
                self._state["journal"].append(s)
                self._state["sources"][s.source_id] = (len(self._state["journal"]), s)
            out.append(self._state["sources"][s.source_id][0])
        return out

    def _get_sources_sync(self, source_ids: Sequence[str]) -> list[tuple[int, Source]]:
        return [self._state["sources"][i] for i in source_ids if i in self._state["sources"]]

    def _journal_sync(self, after: int, limit: int) -> list[tuple[int, Source]]:
        return [(i + 1, s) for i, s in enumerate(self._state["journal"])][after:after + limit]

    # -- the Scope journal ------------------------------------------------------------

    def _scope_lock_sync(self, scope_id: str) -> None:
        """Nothing: the backend's write transaction is exclusive already."""

    def _scope_rows_sync(self, source_ids: Sequence[str]) -> list[tuple[str, str, int, bool]]:
        st = processing_state(self._state)
        out = []
        for sid in dict.fromkeys(source_ids):
            if sid in st["scope_of"]:
                scope, pos = st["scope_of"][sid]
                out.append((sid, scope, pos, st["scope_journal"][scope][pos - 1][1]))
        return out

    def _scope_head_sync(self, scope_id: str) -> int:
        return len(processing_state(self._state)["scope_journal"].get(scope_id, ()))

    def _scope_insert_sync(self, scope_id: str, position: int, source_id: str,
                           lineage_only: bool) -> None:
        st = processing_state(self._state)
        rows = st["scope_journal"].setdefault(scope_id, [])
        if source_id in st["scope_of"] or position != len(rows) + 1:
            raise RuntimeError(f"journal row ({scope_id!r}, {position}) breaks the keys")
        if source_id not in self._state["sources"]:
            raise RuntimeError(f"journal row of an unstored Source {source_id!r}")
        rows.append((source_id, lineage_only))
        st["scope_of"][source_id] = (scope_id, position)

    def _scope_uri_insert_sync(self, scope_id: str, uri_hash: str, position: int) -> None:
        uris = processing_state(self._state)["scope_uris"]
        uris.setdefault((scope_id, uri_hash), []).append(position)

    def _scope_uri_position_sync(self, scope_id: str, uri_hash: str) -> int | None:
        found = processing_state(self._state)["scope_uris"].get((scope_id, uri_hash))
        return min(found) if found else None

    def _scope_uris_backfill_rows_sync(self) -> list[tuple[str, int, str]]:
        return []  # every journal row of this backend got its uri row when it was added

    def _scope_recorded_sync(self, scope_id: str, positions: Sequence[int]) -> None:
        """Nothing: these dicts keep no recording times."""

    def _pending_raise_sync(self, binding_name: str, scope_id: str, through: int) -> None:
        pending = processing_state(self._state)["pending"]
        row = pending.get((binding_name, scope_id))
        pending[(binding_name, scope_id)] = (
            PendingRow(binding_name, scope_id, through) if row is None
            else attrs.evolve(row, source_through=max(row.source_through, through)))

    def _scope_journal_sync(self, scope_id: str, after: int,
                            limit: int) -> list[JournalEntry]:
        rows = processing_state(self._state)["scope_journal"].get(scope_id, [])
        return [JournalEntry(scope_id, i + 1, self._state["sources"][sid][1], lineage)
                for i, (sid, lineage) in enumerate(rows)][after:after + limit]

    # -- Pending / status ---------------------------------------------------------------

    def _pending_get_sync(self, binding_name: str, scope_id: str) -> PendingRow | None:
        row: PendingRow | None = processing_state(self._state)["pending"].get(
            (binding_name, scope_id))
        return row

    def _pending_flush_sync(self, binding_name: str, scope_id: str, head: int) -> None:
        pending = processing_state(self._state)["pending"]
        row = pending.get((binding_name, scope_id))
        pending[(binding_name, scope_id)] = (
            PendingRow(binding_name, scope_id, head, 1) if row is None
            else attrs.evolve(row, source_through=max(row.source_through, head),
                              flush_generation=row.flush_generation + 1))

    def _cursor_get_sync(self, binding_name: str, scope_id: str) -> int:
        return int(processing_state(self._state)["cursors"].get((binding_name, scope_id), 0))

    def _budget_get_sync(self, scope_id: str, binding_name: str,
                         source_after: int) -> BudgetRow | None:
        row: BudgetRow | None = processing_state(self._state)["budgets"].get(
            (scope_id, binding_name, source_after))
        return row

    def _processing_scopes_sync(self, binding_name: str) -> list[str]:
        st = processing_state(self._state)
        scopes = set(st["scope_journal"])
        scopes |= {s for b, s in st["pending"] if b == binding_name}
        scopes |= {s for b, s in st["cursors"] if b == binding_name}
        scopes |= {s for s, b, _ in st["budgets"] if b == binding_name}
        return list(scopes)


class SourceFront:
    """Mixin: the coroutines of :class:`powercontext.ports.SourceStore` (and the scoped
    ones), each answered by ``self.source_journal`` (a
    :class:`~powercontext.adapters.storage.SourceJournal` the class it is mixed into
    builds over itself)."""

    source_journal: SourceJournal

    async def put_sources(self, sources: Sequence[Source]) -> tuple[int, ...]:
        """See :meth:`~powercontext.adapters.storage.SourceJournal.put_sources`."""
        return await self.source_journal.put_sources(sources)

    async def get_sources(self, source_ids: Sequence[str]) -> tuple[Source, ...]:
        """See :meth:`~powercontext.adapters.storage.SourceJournal.get_sources`."""
        return await self.source_journal.get_sources(source_ids)

    async def journal(self, after: int = 0, limit: int = 100) -> tuple[tuple[int, Source], ...]:
        """See :meth:`~powercontext.adapters.storage.SourceJournal.journal`."""
        return await self.source_journal.journal(after, limit)

    async def put_scoped_sources(self, scope_id: str, sources: Sequence[Source], *,
                                 once_per_uri: bool = False) -> tuple[int, ...]:
        """See :meth:`~powercontext.adapters.storage.SourceJournal.put_scoped_sources`."""
        return await self.source_journal.put_scoped_sources(scope_id, sources,
                                                     once_per_uri=once_per_uri)

    async def scope_position_of_uri(self, scope_id: str, uri: str) -> int | None:
        """See :meth:`~powercontext.adapters.storage.SourceJournal.scope_position_of_uri`."""
        return await self.source_journal.scope_position_of_uri(scope_id, uri)

    async def scope_journal(self, scope_id: str, after: int = 0,
                            limit: int = 100) -> tuple[JournalEntry, ...]:
        """See :meth:`~powercontext.adapters.storage.SourceJournal.scope_journal`."""
        return await self.source_journal.scope_journal(scope_id, after, limit)

    async def source_head(self, scope_id: str) -> int:
        """See :meth:`~powercontext.adapters.storage.SourceJournal.source_head`."""
        return await self.source_journal.source_head(scope_id)

    async def processing_cursor(self, binding_name: str, scope_id: str) -> int:
        """See :meth:`~powercontext.adapters.storage.SourceJournal.processing_cursor`."""
        return await self.source_journal.processing_cursor(binding_name, scope_id)
