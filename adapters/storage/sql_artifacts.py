"""SQLArtifactStore: the Artifact rows every family shares, written once over the
engine port (Memory RFC, "Storage model"; Topic Memory RFC, "Publication"): inserting a
Revision, inserting a head and moving it by compare-and-set, each one shared template
run through :class:`~powercontext.ports.engine.SQLEngine`."""

from __future__ import annotations

from typing import TypeVar

from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.rows import RevisionRow
from powercontext.adapters.storage.sql_sources import SQLSourceStore

__all__ = ["SQLArtifactStore"]

C = TypeVar("C")


class SQLArtifactStore(SQLSourceStore[C]):
    """:class:`SQLSourceStore` with the shared ``artifact_revisions`` and
    ``artifact_heads`` writes of both families."""

    def _insert_revision_sync(self, row: RevisionRow) -> None:
        self.engine.execute("revision_insert", shared_rows.revision_params(row))

    def _insert_head_sync(self, artifact_id: str, revision: int) -> None:
        self.engine.execute("head_insert", (artifact_id, revision))

    def _cas_head_sync(self, artifact_id: str, base_revision: int, revision: int) -> bool:
        return self.engine.execute("head_cas", (revision, artifact_id, base_revision)) == 1
