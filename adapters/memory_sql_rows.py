"""SQLMemoryRows: the Memory family's storage primitives that run one shared template
each, written once over the engine port (Memory RFC, "Storage model", "Business
keys"): the head, Revision rows and their hash, entry versions and business keys. The
search projection (:class:`~powercontext.ports.engine.MemorySearchProjection`) and the
vector reads stay with each engine."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.adapters import memory_rows
from powercontext.adapters.database import DatabaseMemoryBackend
from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.rows import RevisionRow, text
from powercontext.core.models import MemoryEntryVersion
from powercontext.ports.engine import SQLEngine

__all__ = ["SQLMemoryRows"]


class SQLMemoryRows(DatabaseMemoryBackend):
    """:class:`DatabaseMemoryBackend`'s shared-template primitives over ``engine`` (the
    concrete adapter's :class:`~powercontext.ports.engine.SQLEngine`)."""

    engine: SQLEngine

    # ------------------------------------------------------------------ revisions

    def _head_sync(self, artifact_id: str) -> int | None:
        rows = self.engine.query("head_get", (artifact_id,))
        return int(rows[0][0]) if rows else None

    def _revision_rows_sync(self, artifact_id: str, after: int, upto: int) -> list[RevisionRow]:
        return [shared_rows.revision_row(r) for r in
                self.engine.query("revision_range", (artifact_id, after, upto))]

    def _set_revision_hash_sync(self, artifact_id: str, revision: int, old_hash: str,
                                new_hash: str) -> bool:
        return self.engine.execute("revision_hash_update",
                                   (new_hash, artifact_id, revision, old_hash)) == 1

    # ------------------------------------------------------------------ entry versions

    def _entry_versions_sync(self, entry_version_ids: Sequence[str]) -> list[MemoryEntryVersion]:
        return [memory_rows.entry_version(r)
                for r in self.engine.query_in("versions_by_id", entry_version_ids)]

    def _entry_ids_elsewhere_sync(self, artifact_id: str, entry_ids: Sequence[str]) -> set[str]:
        return {text(r[0]) for r in
                self.engine.query_in("entry_ids_elsewhere", entry_ids, (artifact_id,))}

    def _insert_entry_versions_sync(self, versions: Sequence[MemoryEntryVersion]) -> None:
        # One row at a time: a version may be the predecessor of a later one.
        for v in versions:
            self.engine.execute("version_insert", memory_rows.entry_version_params(v))

    # ------------------------------------------------------------------ business keys

    def _memory_key_sync(self, key: str) -> str | None:
        rows = self.engine.query("memory_key_get", (key,))
        return text(rows[0][0]) if rows else None

    def _memory_keys_sync(self) -> list[tuple[str, str]]:
        return [memory_rows.key_pair(r) for r in self.engine.query("memory_keys_all")]

    def _insert_memory_key_sync(self, key: str, artifact_id: str) -> None:
        self.engine.execute("memory_key_insert", (key, artifact_id))

    def _delete_memory_key_sync(self, key: str, artifact_id: str) -> bool:
        if self._memory_key_sync(key) != artifact_id:
            return False
        self.engine.execute("memory_key_delete", (key, artifact_id))
        return True
