"""SQLSourceStore: the Source store's primitives written once over the engine port
(Memory RFC, "Sources"; Topic Memory RFC, "Source, Window, Cursor, and Pending"): the
global journal reads, the Scope journal, Pending and the processing status reads, each
one shared template run through :class:`~powercontext.ports.engine.SQLEngine`.

What differs between engines is not here: how a Source gets its journal position
(``_put_sources_sync``: SQLite's rowid, OceanBase's explicit position under the journal
lock) and how Scope positions are serialised (``_scope_lock_sync``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from powercontext.adapters.storage import processing_rows
from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.rows import text
from powercontext.adapters.storage.sources import SourceStore
from powercontext.core.models import Source
from powercontext.core.topic.processing import BudgetRow, JournalEntry, PendingRow
from powercontext.ports.engine import SQLEngine

__all__ = ["SQLSourceStore"]

C = TypeVar("C")


class SQLSourceStore(SourceStore[C]):
    """:class:`SourceStore` over a SQL engine: the concrete adapter sets ``engine`` (its
    :class:`~powercontext.ports.engine.SQLEngine`) and implements the engine-specific
    ``_put_sources_sync`` and ``_scope_lock_sync``."""

    engine: SQLEngine

    # ------------------------------------------------------------------ sources

    def _get_sources_sync(self, source_ids: Sequence[str]) -> list[tuple[int, Source]]:
        return [shared_rows.source_row(r)
                for r in self.engine.query_in("sources_by_id", source_ids)]

    def _journal_sync(self, after: int, limit: int) -> list[tuple[int, Source]]:
        return [shared_rows.source_row(r)
                for r in self.engine.query("journal", (after, limit))]

    # ------------------------------------------------------------------ Scope journal

    def _scope_rows_sync(self, source_ids: Sequence[str]) -> list[tuple[str, str, int, bool]]:
        return [(text(sid), text(scope), int(pos), bool(int(lin))) for sid, scope, pos, lin
                in self.engine.query_in("scope_journal_by_source", source_ids)]

    def _scope_head_sync(self, scope_id: str) -> int:
        return int(self.engine.query("scope_journal_head", (scope_id,))[0][0])

    def _scope_insert_sync(self, scope_id: str, position: int, source_id: str,
                           lineage_only: bool) -> None:
        self.engine.execute("scope_journal_insert",
                            (scope_id, position, source_id, int(lineage_only)))

    def _scope_uri_insert_sync(self, scope_id: str, uri_hash: str, position: int) -> None:
        self.engine.execute("scope_uri_insert", (scope_id, uri_hash, position))

    def _scope_uri_position_sync(self, scope_id: str, uri_hash: str) -> int | None:
        rows = self.engine.query("scope_uri_position", (scope_id, uri_hash))
        return int(rows[0][0]) if rows else None

    def _scope_uris_backfill_rows_sync(self) -> list[tuple[str, int, str]]:
        have = {(text(sc), int(p)) for sc, p in self.engine.query("scope_uris_all")}
        return [(text(sc), int(p), text(uri)) for sc, p, uri in
                self.engine.query("scope_journal_uris") if (text(sc), int(p)) not in have]

    def _scope_recorded_sync(self, scope_id: str, positions: Sequence[int]) -> None:
        now = self.engine.database_now()
        self.engine.execute_many("scope_recorded_insert",
                                 [(scope_id, p, now) for p in positions])

    def _pending_raise_sync(self, binding_name: str, scope_id: str, through: int) -> None:
        if not self.engine.execute("pending_raise",
                                   (through, through, binding_name, scope_id)):
            self.engine.execute("pending_insert", (binding_name, scope_id, through, 0, 0))

    def _scope_journal_sync(self, scope_id: str, after: int,
                            limit: int) -> list[JournalEntry]:
        return [processing_rows.journal_entry(scope_id, r) for r in
                self.engine.query("scope_journal_after", (scope_id, after, limit))]

    # ------------------------------------------------------------------ Pending / status

    def _pending_get_sync(self, binding_name: str, scope_id: str) -> PendingRow | None:
        rows = self.engine.query("pending_get", (binding_name, scope_id))
        return processing_rows.pending_row(rows[0]) if rows else None

    def _pending_flush_sync(self, binding_name: str, scope_id: str, head: int) -> None:
        if not self.engine.execute("pending_flush", (head, head, binding_name, scope_id)):
            self.engine.execute("pending_insert", (binding_name, scope_id, head, 1, 0))

    def _cursor_get_sync(self, binding_name: str, scope_id: str) -> int:
        rows = self.engine.query("status_cursor_get", (binding_name, scope_id))
        return int(rows[0][0]) if rows else 0

    def _budget_get_sync(self, scope_id: str, binding_name: str,
                         source_after: int) -> BudgetRow | None:
        rows = self.engine.query("status_budget_get", (scope_id, binding_name, source_after))
        return processing_rows.budget_row(rows[0]) if rows else None

    def _processing_scopes_sync(self, binding_name: str) -> list[str]:
        return [text(r[0]) for r in self.engine.query(
            "processing_scopes", (binding_name, binding_name, binding_name))]
