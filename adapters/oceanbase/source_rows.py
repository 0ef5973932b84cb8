"""The OceanBase rows of the Source store (Memory RFC, "Sources"; Topic Memory RFC,
"Source, Window, Cursor, and Pending"): the global journal, the Scope journal, Pending
and the processing status reads. :class:`OceanBaseSourceRows` is a base of
:class:`~powercontext.adapters.oceanbase.connection.OceanBaseStorage`, which provides
``_exec``, ``_exec_many``, ``_all`` and ``_in_chunks``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from powercontext.adapters.storage import processing_rows
from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.rows import text as _text
from powercontext.adapters.storage.rows import utc_text
from powercontext.core.models import Source
from powercontext.core.topic.processing import BudgetRow, JournalEntry, PendingRow
from powercontext.sql import oceanbase as obsql
from powercontext.sql import oceanbase_topic as tsql
from powercontext.sql import templates

__all__ = ["OceanBaseSourceRows"]

DIALECT = "oceanbase"


class OceanBaseSourceRows:
    """The Source store primitives of :class:`~powercontext.adapters.storage.SourceStore`
    over the shared OceanBase tables."""

    if TYPE_CHECKING:  # provided by OceanBaseStorage
        def _exec(self, sql: str, params: Sequence[Any] | None = None) -> Any: ...
        def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...
        def _all(self, sql: str, params: Sequence[Any] | None = None
                 ) -> list[tuple[Any, ...]]: ...
        def _in_chunks(self, name: str, values: list[Any],
                       prefix: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
        def _begin_sync(self, write: bool) -> None: ...
        def _commit_sync(self) -> None: ...
        def _rollback_sync(self) -> None: ...
        def _scope_uris_ready_sync(self) -> bool: ...
        def _migrate_scope_uris_sync(self) -> None: ...

    def _migrate_scope_uris_in_tx_sync(self) -> None:
        """At open: the once-per-database backfill of ``pc_source_scope_uris`` (a
        journal written before the table existed) in its own write transaction under the
        journal lock; nothing when done already (a meta read)."""
        if self._scope_uris_ready_sync():
            return
        self._begin_sync(True)
        try:
            self._migrate_scope_uris_sync()
            self._commit_sync()
        except BaseException:
            self._rollback_sync()
            raise

    # ------------------------------------------------------------------ sources

    def _put_sources_sync(self, sources: Sequence[Source]) -> list[int]:
        self._all(obsql.journal_lock())  # serializes journal positions until COMMIT
        unique = list(dict.fromkeys(s.source_id for s in sources))
        stored = {s.source_id: pos for pos, s in self._get_sources_sync(unique)}
        position = int(self._all(obsql.journal_max())[0][0])
        by_id = {s.source_id: s for s in sources}
        for source_id in unique:
            if source_id in stored:
                continue
            s = by_id[source_id]
            position += 1
            self._exec(obsql.source_insert_at(), (
                position, s.source_id, s.kind, s.content, s.content_hash, s.uri,
                shared_rows.source_metadata(s)))
            stored[source_id] = position
        return [stored[s.source_id] for s in sources]

    def _get_sources_sync(self, source_ids: Sequence[str]) -> list[tuple[int, Source]]:
        ids = list(dict.fromkeys(source_ids))
        if not ids:
            return []
        return [shared_rows.source_row(r) for r in self._in_chunks("sources_by_id", ids)]

    def _journal_sync(self, after: int, limit: int) -> list[tuple[int, Source]]:
        return [shared_rows.source_row(r) for r in
                self._all(templates.render("journal", DIALECT), (after, limit))]

    # ------------------------------------------------------------------ Scope journal

    def _scope_lock_sync(self, scope_id: str) -> None:
        """The journal lock row ``FOR UPDATE`` (the one every Source write takes): the
        Scope's ``MAX(position)`` read after it is stable until COMMIT, so two writers
        never allocate one position, and a flush sees every committed Source."""
        self._all(obsql.journal_lock())

    def _scope_rows_sync(self, source_ids: Sequence[str]) -> list[tuple[str, str, int, bool]]:
        ids = list(dict.fromkeys(source_ids))
        if not ids:
            return []
        return [(_text(sid), _text(scope), int(pos), bool(int(lin)))
                for sid, scope, pos, lin in self._in_chunks("scope_journal_by_source", ids)]

    def _scope_head_sync(self, scope_id: str) -> int:
        return int(self._all(templates.render("scope_journal_head", DIALECT), (scope_id,))[0][0])

    def _scope_insert_sync(self, scope_id: str, position: int, source_id: str,
                           lineage_only: bool) -> None:
        self._exec(templates.render("scope_journal_insert", DIALECT),
                   (scope_id, position, source_id, lineage_only))

    def _scope_uri_insert_sync(self, scope_id: str, uri_hash: str, position: int) -> None:
        self._exec(templates.render("scope_uri_insert", DIALECT), (scope_id, uri_hash, position))

    def _scope_uri_position_sync(self, scope_id: str, uri_hash: str) -> int | None:
        rows = self._all(templates.render("scope_uri_position", DIALECT), (scope_id, uri_hash))
        return int(rows[0][0]) if rows else None

    def _scope_uris_backfill_rows_sync(self) -> list[tuple[str, int, str]]:
        have = {(_text(sc), int(p)) for sc, p in
                self._all(templates.render("scope_uris_all", DIALECT))}
        return [(_text(sc), int(p), _text(uri)) for sc, p, uri in
                self._all(templates.render("scope_journal_uris", DIALECT))
                if (_text(sc), int(p)) not in have]

    def _scope_recorded_sync(self, scope_id: str, positions: Sequence[int]) -> None:
        now = utc_text(self._all(tsql.utc_now())[0][0])
        self._exec_many(templates.render("scope_recorded_insert", DIALECT),
                        [(scope_id, p, now) for p in positions])

    def _pending_raise_sync(self, binding_name: str, scope_id: str, through: int) -> None:
        cur = self._exec(templates.render("pending_raise", DIALECT),
                         (through, through, binding_name, scope_id))
        if cur.rowcount == 0:  # FOUND_ROWS: matched rows, so 0 = no Pending row
            self._exec(templates.render("pending_insert", DIALECT),
                       (binding_name, scope_id, through, 0, 0))

    def _scope_journal_sync(self, scope_id: str, after: int,
                            limit: int) -> list[JournalEntry]:
        return [processing_rows.journal_entry(scope_id, r) for r in self._all(
            templates.render("scope_journal_after", DIALECT), (scope_id, after, limit))]

    # ------------------------------------------------------------------ Pending / status

    def _pending_get_sync(self, binding_name: str, scope_id: str) -> PendingRow | None:
        rows = self._all(templates.render("pending_get", DIALECT), (binding_name, scope_id))
        return processing_rows.pending_row(rows[0]) if rows else None

    def _pending_flush_sync(self, binding_name: str, scope_id: str, head: int) -> None:
        cur = self._exec(templates.render("pending_flush", DIALECT),
                         (head, head, binding_name, scope_id))
        if cur.rowcount == 0:
            self._exec(templates.render("pending_insert", DIALECT),
                       (binding_name, scope_id, head, 1, 0))

    def _cursor_get_sync(self, binding_name: str, scope_id: str) -> int:
        rows = self._all(templates.render("status_cursor_get", DIALECT),
                         (binding_name, scope_id))
        return int(rows[0][0]) if rows else 0

    def _budget_get_sync(self, scope_id: str, binding_name: str,
                         source_after: int) -> BudgetRow | None:
        rows = self._all(templates.render("status_budget_get", DIALECT),
                         (scope_id, binding_name, source_after))
        return processing_rows.budget_row(rows[0]) if rows else None

    def _processing_scopes_sync(self, binding_name: str) -> list[str]:
        return [_text(r[0]) for r in self._all(templates.render("processing_scopes", DIALECT),
                                               (binding_name, binding_name, binding_name))]
