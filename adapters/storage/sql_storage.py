"""SQLStorage: the family-neutral storage of every SQL backend, written once over a
composed engine (Memory RFC, "Code structure and abstraction boundaries", "Storage
model", "Sources"; Topic Memory RFC, "Source, Window, Cursor, and Pending").

The engine (:class:`~powercontext.ports.engine.SQLEngine`: SQLite's
:class:`~powercontext.adapters.sqlite.engine.SQLiteEngine`, OceanBase's
:class:`~powercontext.adapters.oceanbase.engine.OceanBaseEngine`, or a third party's)
owns the connection. The storage holds it in ``self.engine`` and runs, on its one
worker thread (:class:`~powercontext.adapters.storage.base.StorageBackend`), the
connection lifecycle, transactions, error mapping and the metadata table through it;
the Source store's primitives (the global journal, the Scope journal, Pending and the
processing status reads) and the Artifact rows every family shares (a Revision, a
head, its compare-and-set), each one shared template run by one method here. What
differs between engines is the engine's: how a Source gets its journal position
(:meth:`SQLEngine.put_sources`) and how Scope positions are serialised
(:meth:`SQLEngine.scope_lock`).

A family's backend builds on this class, sets ``self.engine`` from its ``__init__``
(:meth:`SQLStorage._use_engine`), and implements ``_open_sync``: ``_connect_sync()``
first, then its schema and probes (best inside :meth:`SQLEngine.opening`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from powercontext.adapters.storage import processing_rows
from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.base import StorageBackend
from powercontext.adapters.storage.rows import RevisionRow, text
from powercontext.core.errors import PowerContextError
from powercontext.core.models import Source
from powercontext.core.topic.processing import BudgetRow, JournalEntry, PendingRow
from powercontext.ports.engine import SQLEngine

__all__ = ["SQLStorage"]

C = TypeVar("C")


class SQLStorage(StorageBackend[C]):
    """:class:`StorageBackend` over the SQL engine in ``self.engine``: every primitive of
    the storage base, the Source primitives a
    :class:`~powercontext.adapters.storage.sources.SourceJournal` runs (a
    :class:`~powercontext.adapters.storage.sources.SourceHost`), the shared Artifact rows
    (``_insert_revision_sync``, ``_insert_head_sync``, ``_cas_head_sync``) and the
    shared templates by name (``_template_rows`` ...: the manifest log's
    :class:`~powercontext.adapters.manifest_log.LogEngine`)."""

    engine: SQLEngine

    def _use_engine(self, engine: SQLEngine) -> None:
        """Compose ``engine`` (called from the family backend's ``__init__``)."""
        self.engine = engine

    # ------------------------------------------------------------------ lifecycle

    def _connect_sync(self) -> None:
        """Connect the engine (its version gate and session setup); the first step of a
        family's ``_open_sync``."""
        self.engine.connect()

    def _close_sync(self) -> None:
        self.engine.close()

    def _begin_sync(self, write: bool) -> None:
        self.engine.begin(write, long_running=self.long_transactions)

    def _commit_sync(self) -> None:
        self.engine.commit()

    def _rollback_sync(self) -> None:
        if self.engine.rollback():
            self._rolled_back_sync()

    def _rolled_back_sync(self) -> None:
        """After a ROLLBACK of an open transaction: re-read any schema state the
        transaction may have changed (a family whose DDL runs in transactions overrides
        it). The default re-reads nothing."""

    def _database_error(self, exc: BaseException) -> PowerContextError | None:
        return self.engine.map_error(exc)

    def _contention_sync(self) -> None:
        self.engine.relieve_contention()

    def _meta_get_sync(self, key: str) -> str | None:
        return self.engine.meta_get(key)

    def _meta_set_sync(self, key: str, value: str | None) -> None:
        self.engine.meta_set(key, value)

    def _insight_rows(self, name: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The rows of the shared query ``name`` (the dashboard's reads,
        :mod:`powercontext.adapters.source_citations`)."""
        return self.engine.query(name, params)

    # ------------------------------------------------------------------ shared templates

    def _template_rows(self, name: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The rows of the shared statement ``name``."""
        return self.engine.query(name, params)

    def _template_rows_in(self, name: str, values: Sequence[Any],
                          before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of the shared ``IN`` statement ``name`` over ``values`` (deduplicated,
        in chunks), ``before`` bound first."""
        return self.engine.query_in(name, values, before)

    def _template_many(self, name: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run the shared statement ``name`` once per row of parameters."""
        self.engine.execute_many(name, rows)

    # ------------------------------------------------------------------ Artifact rows

    def _insert_revision_sync(self, row: RevisionRow) -> None:
        self.engine.execute("revision_insert", shared_rows.revision_params(row))

    def _insert_head_sync(self, artifact_id: str, revision: int) -> None:
        self.engine.execute("head_insert", (artifact_id, revision))

    def _cas_head_sync(self, artifact_id: str, base_revision: int, revision: int) -> bool:
        return self.engine.execute("head_cas", (revision, artifact_id, base_revision)) == 1

    # ------------------------------------------------------------------ sources

    def _put_sources_sync(self, sources: Sequence[Source]) -> list[int]:
        return self.engine.put_sources(sources)

    def _get_sources_sync(self, source_ids: Sequence[str]) -> list[tuple[int, Source]]:
        return [shared_rows.source_row(r)
                for r in self.engine.query_in("sources_by_id", source_ids)]

    def _journal_sync(self, after: int, limit: int) -> list[tuple[int, Source]]:
        return [shared_rows.source_row(r)
                for r in self.engine.query("journal", (after, limit))]

    # ------------------------------------------------------------------ Scope journal

    def _scope_lock_sync(self, scope_id: str) -> None:
        self.engine.scope_lock(scope_id)

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
