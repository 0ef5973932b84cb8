"""SQLMemoryBackend: the Memory family on a SQL engine, written once for every engine
(Memory RFC, "Code structure and abstraction boundaries"). It is the
:class:`~powercontext.adapters.database.DatabaseMemoryBackend` facade with the SQL
collaborators: the Memory rows over the engine port
(:class:`~powercontext.adapters.memory_sql_rows.SQLMemoryRows`), the manifest log and
vector-gap tables, and the dashboard's read-only view of who cites a Source
(:class:`~powercontext.adapters.source_citations.SourceCitations`: the ports
:class:`~powercontext.ports.SourceCitations` and :class:`~powercontext.ports.EntryKinds`).

A concrete engine's backend (:class:`~powercontext.adapters.sqlite.SQLiteMemoryBackend`,
:class:`~powercontext.adapters.oceanbase.OceanBaseMemoryBackend`) builds its engine and
its search projection and nothing else of the Memory family.
"""

from __future__ import annotations

from typing import Any

from powercontext.adapters.database import DatabaseMemoryBackend
from powercontext.adapters.manifest_log import LogEngine, ManifestLog
from powercontext.adapters.memory_sql_rows import SQLMemoryRows
from powercontext.adapters.source_citations import SourceCitations
from powercontext.adapters.vector_gaps import VectorGaps
from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingProfile, MemoryEntryVersion
from powercontext.core.topic.scope import SourceScope
from powercontext.ports.engine import SQLEngine

__all__ = ["SQLMemoryBackend"]


class SQLMemoryBackend(DatabaseMemoryBackend):
    """The Memory backend over ``self.engine`` (set by the engine's storage before this
    constructor runs) and ``projection`` (the engine's
    :class:`~powercontext.ports.engine.MemorySearchProjection`). ``templates``: what
    runs the manifest log's and the vector-gap table's shared templates in bulk
    (:class:`~powercontext.adapters.manifest_log.LogEngine`); ``rows``: the Memory
    rows (default :class:`SQLMemoryRows` over the engine). Revision rows store their
    encoding; the manifest log and the vector-gap counts are kept."""

    engine: SQLEngine

    def __init__(self, *, projection: Any, templates: LogEngine,
                 rows: SQLMemoryRows | None = None, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None) -> None:
        super().__init__(rows=rows or SQLMemoryRows(self.engine), projection=projection,
                         profile=profile, analyzer=analyzer, log=ManifestLog(templates),
                         gaps=VectorGaps(templates), revision_encodings=True)
        self._citations = SourceCitations(self)

    async def source_scope(self, source_id: str) -> SourceScope | None:
        """The Scope journal row of ``source_id`` (see
        :meth:`SourceCitations.source_scope`)."""
        return await self._citations.source_scope(source_id)

    async def citing_entry_versions(self, source_id: str, limit: int = 200
                                    ) -> tuple[MemoryEntryVersion, ...]:
        """Every stored entry version whose SourceRefs name ``source_id`` (see
        :meth:`SourceCitations.citing_entry_versions`)."""
        return await self._citations.citing_entry_versions(source_id, limit)

    async def entry_kinds(self, artifact_id: str) -> dict[str, str]:
        """``{entry_version_id: kind}`` of every stored version of a Memory."""
        return await self._citations.entry_kinds(artifact_id)
