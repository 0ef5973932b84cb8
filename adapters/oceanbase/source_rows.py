"""The OceanBase-only rows of the Source store (Memory RFC, "Sources"; Topic Memory
RFC, "Source, Window, Cursor, and Pending"): journal positions allocated under the
journal lock row, and the once-per-database backfill of ``pc_source_scope_uris``. The
rows every engine reads and writes alike are
:class:`~powercontext.adapters.storage.sql_sources.SQLSourceStore`'s.
:class:`OceanBaseSourceRows` is a base of
:class:`~powercontext.adapters.oceanbase.connection.OceanBaseStorage`, which provides
``_exec`` and ``_all``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from powercontext.adapters.storage import rows as shared_rows
from powercontext.core.models import Source
from powercontext.sql import oceanbase as obsql

__all__ = ["OceanBaseSourceRows"]

DIALECT = "oceanbase"


class OceanBaseSourceRows:
    """The OceanBase-only Source store primitives of
    :class:`~powercontext.adapters.storage.SourceStore`."""

    if TYPE_CHECKING:  # provided by OceanBaseStorage
        def _exec(self, sql: str, params: Sequence[Any] | None = None) -> Any: ...
        def _all(self, sql: str, params: Sequence[Any] | None = None
                 ) -> list[tuple[Any, ...]]: ...
        def _get_sources_sync(self, source_ids: Sequence[str]
                              ) -> list[tuple[int, Source]]: ...
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

    # ------------------------------------------------------------------ Scope journal

    def _scope_lock_sync(self, scope_id: str) -> None:
        """The journal lock row ``FOR UPDATE`` (the one every Source write takes): the
        Scope's ``MAX(position)`` read after it is stable until COMMIT, so two writers
        never allocate one position, and a flush sees every committed Source."""
        self._all(obsql.journal_lock())
