"""SQLMemoryRows: the Memory family's authoritative rows, each read or write one shared
template run through the engine port, written once for every engine (Memory RFC,
"Storage model"; ARCHITECTURE.md, Decisions: "Keys live in the database"): heads,
Revision rows and their hash, entry versions and business keys. The search projection
(:class:`~powercontext.ports.engine.MemorySearchProjection`) is each engine's own; the
Artifact writes every family shares (a Revision row, a head and its compare-and-set)
are the storage's (:mod:`powercontext.adapters.storage.sql_artifacts`).

Every method runs inside the caller's transaction on the backend's worker thread. A
backend that is not on a SQL engine (the contract kit's in-memory one) gives the
Memory backend another object with these methods.
"""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.adapters import memory_rows
from powercontext.adapters.revision_cache import MEMORY_FAMILY
from powercontext.adapters.source_citations import citing_versions
from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.rows import RevisionRow, text
from powercontext.core.models import MemoryEntryVersion
from powercontext.ports.engine import SQLEngine

__all__ = ["SQLMemoryRows"]


class SQLMemoryRows:
    """The Memory family's rows over ``engine`` (a
    :class:`~powercontext.ports.engine.SQLEngine`)."""

    def __init__(self, engine: SQLEngine) -> None:
        self.engine = engine

    # ------------------------------------------------------------------ heads, Revisions

    def head(self, artifact_id: str) -> int | None:
        """The current head revision of an Artifact (any family), or None."""
        rows = self.engine.query("head_get", (artifact_id,))
        return int(rows[0][0]) if rows else None

    def heads(self, artifact_ids: Sequence[str]) -> dict[str, int]:
        """The head revision of each of these Artifacts that exists, by id."""
        out = {}
        for artifact_id in dict.fromkeys(artifact_ids):
            head = self.head(artifact_id)
            if head is not None:
                out[artifact_id] = head
        return out

    def all_heads(self) -> list[tuple[str, int]]:
        """Every Memory Artifact's (artifact_id, head revision), sorted by id."""
        return [shared_rows.head(r) for r in self.engine.query("all_heads", (MEMORY_FAMILY,))]

    def revision_rows(self, artifact_id: str, after: int, upto: int) -> list[RevisionRow]:
        """Revision rows with ``after < revision <= upto`` in ascending order."""
        return [shared_rows.revision_row(r) for r in
                self.engine.query("revision_range", (artifact_id, after, upto))]

    def set_revision_hash(self, artifact_id: str, revision: int, old_hash: str,
                          new_hash: str) -> bool:
        """Rewrite one Revision's stored content hash when it is ``old_hash``; True when
        one row matched (only ``rehash()``: the one update a Revision row ever gets)."""
        return self.engine.execute("revision_hash_update",
                                   (new_hash, artifact_id, revision, old_hash)) == 1

    # ------------------------------------------------------------------ entry versions

    def entry_versions(self, entry_version_ids: Sequence[str]) -> list[MemoryEntryVersion]:
        """The stored entry versions with these ids (missing ids are left out)."""
        return [memory_rows.entry_version(r)
                for r in self.engine.query_in("versions_by_id", entry_version_ids)]

    def entry_ids_elsewhere(self, artifact_id: str, entry_ids: Sequence[str]) -> set[str]:
        """Those of ``entry_ids`` another Memory already uses (entry ids are globally
        unique)."""
        return {text(r[0]) for r in
                self.engine.query_in("entry_ids_elsewhere", entry_ids, (artifact_id,))}

    def insert_entry_versions(self, versions: Sequence[MemoryEntryVersion]) -> None:
        """Insert immutable entry versions (a duplicate raises the driver's error)."""
        # One row at a time: a version may be the predecessor of a later one.
        for v in versions:
            self.engine.execute("version_insert", memory_rows.entry_version_params(v))

    # ------------------------------------------------------------------ business keys

    def key_owner(self, key: str) -> str | None:
        """The Memory Artifact id stored for ``key`` (a binary comparison), or None."""
        rows = self.engine.query("memory_key_get", (key,))
        return text(rows[0][0]) if rows else None

    def all_keys(self) -> list[tuple[str, str]]:
        """Every stored (key, artifact_id), sorted by key."""
        return [memory_rows.key_pair(r) for r in self.engine.query("memory_keys_all")]

    def insert_key(self, key: str, artifact_id: str) -> None:
        """Insert one key row (the Memory's head row exists); a key stored already
        raises the driver's unique-key error (a RevisionConflictError once mapped)."""
        self.engine.execute("memory_key_insert", (key, artifact_id))

    def delete_key(self, key: str, artifact_id: str) -> bool:
        """Delete the row of ``key`` when it names ``artifact_id``; True when it did."""
        if self.key_owner(key) != artifact_id:
            return False
        self.engine.execute("memory_key_delete", (key, artifact_id))
        return True

    # ------------------------------------------------------------------ reverse evidence

    def citing_versions(self, source_id: str, limit: int) -> list[MemoryEntryVersion]:
        """The first ``limit`` stored entry versions (any Memory, by entry_version_id)
        whose SourceRefs name ``source_id``."""
        return citing_versions(self.engine.query, source_id, limit)

    def entry_kinds(self, artifact_id: str) -> dict[str, str]:
        """``{entry_version_id: kind}`` of every stored version of one Memory."""
        return {text(v): text(k) for v, k in
                self.engine.query("insight_entry_kinds", (artifact_id,))}
