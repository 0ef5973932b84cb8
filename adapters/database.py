"""DatabaseMemoryBackend: the Memory family's engine-neutral backend (Memory RFC, "Code
structure and abstraction boundaries"), the page a backend author reads.

:class:`DatabaseMemoryBackend` implements :class:`powercontext.ports.MemoryBackend` and
the capability ports :class:`~powercontext.ports.MemoryRebuild` and
:class:`~powercontext.ports.MemoryInventory` for any store of rows. It is a facade: it
*is* the storage (the worker thread, transactions, the metadata table:
:class:`~powercontext.adapters.storage.StorageBackend`) and *has* one collaborator per
concept, each given what it needs in its constructor:

- :class:`~powercontext.adapters.storage.sources.SourceJournal`: the Source store and
  its journals (:class:`powercontext.ports.SourceStore`, answered through it);

- :class:`~powercontext.adapters.memory_tables.MemoryTables`: the Memory rows (heads,
  Revisions, entry versions, business keys: for a SQL engine
  :class:`~powercontext.adapters.memory_sql_rows.SQLMemoryRows`), the Revision cache,
  the manifest log and the vector-gap counts;
- the engine's search projection
  (:class:`~powercontext.ports.engine.MemorySearchProjection`: head rows with their
  full-text and vector rows, the candidates of each channel);
- :class:`~powercontext.adapters.memory_deployment.MemoryDeployment`: the profile, the
  analyzer and the hash format, checked at open;
- :class:`~powercontext.adapters.memory_completeness.VectorCompleteness`: whether a
  Memory's vectors are complete;
- :class:`~powercontext.adapters.memory_reads.MemoryStore`: reads and business keys;
- :class:`~powercontext.adapters.memory_search.MemorySearch`: search;
- :class:`~powercontext.adapters.memory_commit.MemoryCommit`: the unit of work
  (:class:`~powercontext.adapters.memory_commit.DatabaseUnitOfWork`);
- :class:`~powercontext.adapters.memory_rehash.MemoryRehash` and
  :class:`~powercontext.adapters.memory_rebuild.MemoryRebuild`: upkeep;
- :class:`~powercontext.adapters.source_citations.SourceCitations`: who cites a Source
  (:class:`~powercontext.ports.SourceCitations`, :class:`~powercontext.ports.EntryKinds`).

The rules are not here. Each commit descends once into the core,
:func:`powercontext.core.verify.verify` (canonical bytes, manifest, entry references,
evidence); each search once into :mod:`powercontext.core.ranking` (manifest trust,
admission, RRF). A backend author gives the storage's primitives (its base's abstract
methods), a rows object and a projection; :class:`~powercontext.testing.InMemoryBackend`
is the smallest worked example. A SQL engine's backend
(:class:`~powercontext.adapters.sqlite.SQLiteMemoryBackend`,
:class:`~powercontext.adapters.oceanbase.OceanBaseMemoryBackend`) gives the rows over
its engine (:class:`~powercontext.adapters.memory_sql_rows.SQLMemoryRows`), the
manifest log, the vector-gap table and its projection, and holds nothing else of the
Memory family.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from powercontext.adapters.manifest_log import ManifestLog
from powercontext.adapters.memory_commit import DatabaseUnitOfWork, MemoryCommit
from powercontext.adapters.memory_completeness import VectorCompleteness
from powercontext.adapters.memory_deployment import HASH_FORMAT_KEY, MemoryDeployment
from powercontext.adapters.memory_reads import MemoryStore
from powercontext.adapters.memory_rebuild import MemoryRebuild
from powercontext.adapters.memory_rehash import MemoryRehash
from powercontext.adapters.memory_rows import MEMORY_FAMILY, VectorRow
from powercontext.adapters.memory_search import MemorySearch
from powercontext.adapters.memory_tables import MemoryTables
from powercontext.adapters.revision_cache import RevisionCache
from powercontext.adapters.source_citations import SourceCitations
from powercontext.adapters.storage import StorageBackend
from powercontext.adapters.storage.rows import RevisionRow
from powercontext.adapters.storage.sources import SourceJournal
from powercontext.adapters.vector_gaps import VectorGaps
from powercontext.core import ranking
from powercontext.core.analyzer import Analyzer
from powercontext.core.models import (
    ArtifactRef,
    EmbeddingProfile,
    EmbeddingVector,
    MemoryCapabilities,
    MemoryEntryVersion,
    MemoryHit,
    MemoryRevision,
    MemoryRevisionChanges,
    MemorySearchRequest,
    MemorySearchResult,
    RebuildReport,
    RehashReport,
    Source,
)
from powercontext.core.plan import MemoryPlan
from powercontext.core.ranking import SearchCandidate
from powercontext.core.topic.processing import JournalEntry
from powercontext.core.topic.scope import SourceScope
from powercontext.core.vectors import check_vector
from powercontext.ports.engine import MemoryRows, MemorySchema, MemorySearchProjection

__all__ = [
    "HASH_FORMAT_KEY",
    "MEMORY_FAMILY",
    "DatabaseMemoryBackend",
    "DatabaseUnitOfWork",
    "RebuildReport",
    "RehashReport",
    "RevisionRow",
    "SearchCandidate",
    "VectorRow",
    "check_vector",
]


class DatabaseMemoryBackend(StorageBackend[MemoryCapabilities]):
    """The Memory family's backend over a storage; implements
    :class:`powercontext.ports.MemoryBackend`.

    ``rows``: the Memory rows (see :class:`~powercontext.adapters.memory_sql_rows.SQLMemoryRows`
    for the methods); ``projection``: the engine's
    :class:`~powercontext.ports.engine.MemorySearchProjection`; ``sources``: the Source
    store, a :class:`~powercontext.adapters.storage.sources.SourceJournal` over this
    storage's Source primitives (:class:`~powercontext.adapters.storage.sql_storage.SQLStorage`'s
    on a SQL engine); ``log``: the manifest
    log (None: Revision rows hold their manifests); ``gaps``: the vector-gap counts
    (None: completeness is counted over every head row); ``revision_encodings``: the
    rows store ``RevisionRow.encoding`` (deltas can be written); ``schema``: the
    engine's schema and startup probes (``open(profile, analyzer_version) ->
    MemoryCapabilities``; None: the storage's ``_open_sync`` reports by itself).

    ``profile`` is the deployment's fixed embedding profile (None: no vector
    infrastructure). The first open of a database stores the profile; a later open with
    another profile raises :class:`ProfileMismatchError`. ``analyzer`` (a version name
    or an :class:`~powercontext.core.analyzer.Analyzer`; None: no choice) is used only
    when the database is new: it records its version (the default one without a
    choice). Opening a database whose recorded version differs from an explicit choice,
    or is unknown (the ambiguous ``analyzer-v1`` of earlier releases), raises
    :class:`AnalyzerMismatchError`; :meth:`rebuild` with ``analyzer`` migrates (Memory
    RFC, "Normalization, hashing, and the search analyzer").
    """

    def __init__(
        self, *, rows: MemoryRows, projection: MemorySearchProjection,
        sources: SourceJournal, profile: EmbeddingProfile | None = None,
        analyzer: str | Analyzer | None = None, log: ManifestLog | None = None,
        gaps: VectorGaps | None = None, revision_encodings: bool = False,
        schema: MemorySchema | None = None,
    ) -> None:
        super().__init__()
        #: the Source store (:class:`powercontext.ports.SourceStore`), over this storage
        self.source_journal = sources
        self.projection = projection
        self._schema = schema
        tables = self._memory_tables = MemoryTables(rows, log, gaps)
        deployment = self._deployment = MemoryDeployment(self, rows, profile=profile,
                                                         analyzer=analyzer)
        completeness = self._completeness = VectorCompleteness(
            self, tables, projection, deployment)
        self._store = MemoryStore(self, tables)
        self._search = MemorySearch(self, tables, projection, deployment, completeness)
        self._commit = MemoryCommit(self, tables, projection, deployment, completeness,
                                    revision_encodings=revision_encodings)
        self._rehash = MemoryRehash(self, tables, deployment, completeness)
        self._rebuild = MemoryRebuild(self, tables, projection, self._store, deployment,
                                      completeness, self._rehash)
        self._citations = SourceCitations(self, rows)

    # ------------------------------------------------------------------ open hooks

    def _open_schema_sync(self) -> MemoryCapabilities:
        """On an open connection: create or check the Memory schema and run the startup
        probes (the engine's ``schema``), for the deployment's profile; a new database
        records the analyzer of :meth:`MemoryDeployment.new_database_analyzer`."""
        assert self._schema is not None, "this backend has no schema collaborator"
        deployment = self._deployment
        return self._schema.open(deployment.profile,
                                 deployment.new_database_analyzer().version)

    def _check_open_sync(self) -> None:
        self._deployment.check_open()

    def _check_ready_sync(self) -> None:
        self._deployment.check_ready()

    # ------------------------------------------------------------------ state

    @property
    def profile(self) -> EmbeddingProfile | None:
        """The deployment's fixed embedding profile (None: no vector projection)."""
        return self._deployment.profile

    @property
    def _db_analyzer(self) -> Analyzer:
        """The database's analyzer (the database is open)."""
        return self._deployment.db_analyzer

    @property
    def _revisions(self) -> RevisionCache:
        """The Revision cache (parsed Revisions, shared by every read)."""
        return self._memory_tables.revisions

    @property
    def _manifest_log(self) -> ManifestLog | None:
        """The manifest log (None: Revision rows hold their manifests)."""
        return self._memory_tables.log

    @_manifest_log.setter
    def _manifest_log(self, log: ManifestLog | None) -> None:
        self._memory_tables.log = log

    async def analyzer(self) -> Analyzer:
        """The database's analyzer (recorded at creation; Memory RFC, "Normalization,
        hashing, and the search analyzer"). Opens the database: AnalyzerMismatchError
        when it records another version than the one asked for, or an unknown one."""
        await self._run(lambda: None)
        return self._deployment.db_analyzer

    # ------------------------------------------------------------------ writes

    @contextlib.asynccontextmanager
    async def begin(self) -> AsyncIterator[DatabaseUnitOfWork]:
        """A unit of work; its ``commit`` runs the whole transaction in one worker call
        (:class:`~powercontext.adapters.memory_commit.MemoryCommit`)."""
        uow = DatabaseUnitOfWork(self._run_commit)
        try:
            yield uow
        finally:
            await uow.rollback()

    async def _run_commit(self, *args: Any) -> ArtifactRef:
        return await self._run(self._commit_plan_sync, *args)

    def _commit_plan_sync(self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector] | None,
                          key: str | None = None) -> ArtifactRef:
        return self._commit.commit_plan_sync(plan, vectors, key)

    # ------------------------------------------------------------------ reads

    async def head(self, artifact_id: str) -> ArtifactRef | None:
        """The current head ArtifactRef of a Memory, or None when it does not exist."""
        return await self._store.head(artifact_id)

    async def load_revision(self, ref: ArtifactRef) -> MemoryRevision:
        """The validated Revision (hash and canonical bytes checked). ArtifactNotFoundError."""
        return await self._store.load_revision(ref)

    async def load_entry_versions(self, ref: ArtifactRef, entry_ids: Sequence[str] | None = None
                                  ) -> dict[str, MemoryEntryVersion]:
        """Versions the manifest of ``ref`` points to, by entry_id, each hash-checked."""
        return await self._store.load_entry_versions(ref, entry_ids)

    async def changes(self, memory: ArtifactRef, since_revision: int | None = None
                      ) -> tuple[MemoryRevisionChanges, ...]:
        """Memory RFC, "changes()" (see :meth:`MemoryStore.changes`)."""
        return await self._store.changes(memory, since_revision)

    async def expand(self, hits: Sequence[MemoryHit]) -> tuple[MemoryEntryVersion, ...]:
        """Memory RFC, "expand()" (see :meth:`MemoryStore.expand`). InvalidCitationError."""
        return await self._store.expand(hits)

    async def memory_key(self, key: str) -> str | None:
        """The Memory Artifact id the business ``key`` names, or None."""
        return await self._store.memory_key(key)

    async def memory_keys(self) -> dict[str, str]:
        """Every business key and the Memory Artifact id it names, sorted by key."""
        return await self._store.memory_keys()

    async def import_memory_keys(self, mapping: Mapping[str, str]) -> dict[str, str]:
        """Store the keys of ``mapping`` not stored yet (see
        :meth:`MemoryStore.import_memory_keys`)."""
        return await self._store.import_memory_keys(mapping)

    async def remove_memory_key(self, key: str, artifact_id: str) -> bool:
        """Delete the business ``key`` when it names ``artifact_id``."""
        return await self._store.remove_memory_key(key, artifact_id)

    # ------------------------------------------------------------------ search

    @staticmethod
    def candidate_budget(limit: int) -> int:
        """Candidate budget per channel (Memory RFC: max(limit * 4, 32))."""
        return ranking.candidate_budget(limit)

    async def search(self, request: MemorySearchRequest) -> MemorySearchResult:
        """Memory RFC, "Search and reads" (see :meth:`MemorySearch.search`)."""
        return await self._search.search(request)

    # ------------------------------------------------------------------ upkeep

    def allow_analyzer_migration(self) -> None:
        """Let the next open accept a database built by another or an unknown analyzer
        (only for the rebuild command, which migrates it)."""
        self._rebuild.allow_analyzer_migration()

    async def rebuild(self, model: Any = None, *, new_profile: EmbeddingProfile | None = None,
                      analyzer: str | Analyzer | None = None,
                      progress: Callable[[int, int, str], None] | None = None,
                      batch_size: int = 64) -> RebuildReport:
        """Rebuild every Memory's projections (see :meth:`MemoryRebuild.rebuild`)."""
        return await self._rebuild.rebuild(model, new_profile=new_profile, analyzer=analyzer,
                                           progress=progress, batch_size=batch_size)

    async def inventory(self) -> dict[str, Any]:
        """What the database holds (see :meth:`MemoryRebuild.inventory`)."""
        return await self._rebuild.inventory()

    async def rehash(self) -> RehashReport:
        """Upgrade a database of pre-spec hashes (see :meth:`MemoryRehash.rehash`)."""
        return await self._rehash.rehash()

    async def resume_writes(self) -> None:
        """Clear a pause left by a rebuild or rehash that crashed."""
        await self._rehash.resume_writes()

    # ------------------------------------------------------------------ Sources

    async def put_sources(self, sources: Sequence[Source]) -> tuple[int, ...]:
        """See :meth:`SourceJournal.put_sources` (:class:`powercontext.ports.SourceStore`)."""
        return await self.source_journal.put_sources(sources)

    async def get_sources(self, source_ids: Sequence[str]) -> tuple[Source, ...]:
        """See :meth:`SourceJournal.get_sources`."""
        return await self.source_journal.get_sources(source_ids)

    async def journal(self, after: int = 0, limit: int = 100) -> tuple[tuple[int, Source], ...]:
        """See :meth:`SourceJournal.journal`."""
        return await self.source_journal.journal(after, limit)

    async def put_scoped_sources(self, scope_id: str, sources: Sequence[Source], *,
                                 once_per_uri: bool = False) -> tuple[int, ...]:
        """See :meth:`SourceJournal.put_scoped_sources`."""
        return await self.source_journal.put_scoped_sources(scope_id, sources,
                                                     once_per_uri=once_per_uri)

    async def scope_position_of_uri(self, scope_id: str, uri: str) -> int | None:
        """See :meth:`SourceJournal.scope_position_of_uri`."""
        return await self.source_journal.scope_position_of_uri(scope_id, uri)

    async def scope_journal(self, scope_id: str, after: int = 0,
                            limit: int = 100) -> tuple[JournalEntry, ...]:
        """See :meth:`SourceJournal.scope_journal`."""
        return await self.source_journal.scope_journal(scope_id, after, limit)

    async def source_head(self, scope_id: str) -> int:
        """See :meth:`SourceJournal.source_head`."""
        return await self.source_journal.source_head(scope_id)

    async def processing_cursor(self, binding_name: str, scope_id: str) -> int:
        """See :meth:`SourceJournal.processing_cursor`."""
        return await self.source_journal.processing_cursor(binding_name, scope_id)

    # ------------------------------------------------------------------ reverse evidence

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
