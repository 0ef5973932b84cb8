"""DatabaseMemoryBackend: the database-adapter SPI (Memory RFC, "Code structure and
abstraction boundaries").

This class owns every Memory-family rule a database backend needs: the unit of work,
canonical validation of the plan inside the write transaction, manifest and
entry-reference validation, search-hit filtering through the authoritative manifest,
admission and RRF. It builds on the family-neutral storage base
(:mod:`powercontext.adapters.storage`: the worker thread, transactions, retries, error
mapping, metadata, the Source store), owns a Revision cache
(:mod:`powercontext.adapters.revision_cache`) and inherits the offline rebuild
(:mod:`powercontext.adapters.memory_rebuild`). A concrete adapter (SQLite, OceanBase, a
third party's) implements only the synchronous primitives marked ``abstract`` here and
in the storage base: CRUD, the head compare-and-swap, schema, transactions and the
search-dialect queries. Every primitive runs on the worker thread, inside a transaction
this class opened.
"""

from __future__ import annotations

import abc
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence

from powercontext.adapters import revision_codec
from powercontext.adapters.memory_rebuild import MemoryRebuildMixin
from powercontext.adapters.memory_rebuild import resolve_analyzer as _resolve_analyzer
from powercontext.adapters.memory_rehash import HASH_FORMAT_KEY
from powercontext.adapters.memory_rows import MEMORY_FAMILY, VectorRow
from powercontext.adapters.revision_cache import ParsedRevision as _ParsedRevision
from powercontext.adapters.revision_cache import RevisionCache
from powercontext.adapters.storage.rows import RevisionRow
from powercontext.core import canonical, keys, ranking, verify
from powercontext.core import query as query_bounds
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import (
    ArtifactNotFoundError,
    CapabilityNotSupportedError,
    CommitOutcomeUnknownError,
    IntegrityError,
    InvalidCitationError,
    InvalidInputError,
    PowerContextError,
    RevisionConflictError,
    WritesPausedError,
)
from powercontext.core.manifest import ManifestView
from powercontext.core.models import (
    ArtifactRef,
    Channel,
    CurrentHead,
    EmbeddingProfile,
    EmbeddingVector,
    MemoryCapabilities,
    MemoryEntryVersion,
    MemoryHit,
    MemoryManifestEntry,
    MemoryRevision,
    MemoryRevisionChanges,
    MemorySearchRequest,
    MemorySearchResult,
    RebuildReport,
    RehashReport,
)
from powercontext.core.plan import MemoryPlan, ProjectionRow
from powercontext.core.ranking import SearchCandidate, SearchHead
from powercontext.core.vectors import check_vector

__all__ = [
    "HASH_FORMAT_KEY",
    "MEMORY_FAMILY",
    "Candidate",
    "DatabaseMemoryBackend",
    "DatabaseUnitOfWork",
    "RebuildReport",
    "RehashReport",
    "RevisionRow",
    "SearchCandidate",
    "VectorRow",
    "check_vector",
]


#: The SPI's former name of :class:`~powercontext.core.ranking.SearchCandidate` (the
#: projection row a search channel reads), kept so adapters written against it import.
Candidate = SearchCandidate


class DatabaseMemoryBackend(MemoryRebuildMixin):
    """Base class of SQL backends; implements :class:`powercontext.ports.MemoryBackend`.

    ``profile`` is the deployment's fixed embedding profile (None: no vector
    infrastructure). The first open of a database stores the profile; a later open with
    another profile raises :class:`ProfileMismatchError`. ``model`` is the query-time
    EmbeddingModel used only to decide ``capabilities()``; embeddings themselves are
    computed by the service outside the transaction.

    ``analyzer`` (a version name or an :class:`~powercontext.core.analyzer.Analyzer`;
    None: no choice) is used only when the database is new: it records its version
    (the default one without a choice). Opening a database whose recorded version differs
    from an explicit choice, or is unknown (the ambiguous ``analyzer-v1`` of earlier
    releases), raises :class:`AnalyzerMismatchError`; :meth:`rebuild` with ``analyzer``
    migrates (Memory RFC, "Normalization, hashing, and the search analyzer").
    """

    #: True when the adapter stores RevisionRow.encoding (so deltas can be written).
    supports_revision_encodings = False

    #: The largest ``k`` :meth:`_vector_candidates_sync` can answer (None: no cap).
    vector_k_cap: int | None = None

    #: Candidate budget per channel (Memory RFC: max(limit * 4, 32)), counted in
    #: admitted candidates (see :meth:`search`).
    @staticmethod
    def candidate_budget(limit: int) -> int:
        return ranking.candidate_budget(limit)

    def __init__(
        self, *, profile: EmbeddingProfile | None = None, analyzer: str | Analyzer | None = None
    ) -> None:
        super().__init__()
        self._profile = profile
        self._analyzer_choice = _resolve_analyzer(analyzer)
        self._analyzer: Analyzer | None = None  # the database's, known once open
        self._analyzer_migration = False
        self._revisions = RevisionCache()  # parsed Revisions, shared by every read
        self._complete_cache: dict[tuple[str, int, str], bool] = {}
        self._pending_cache: tuple[ArtifactRef, _ParsedRevision] | None = None
        self._cache_lock = threading.Lock()
        self._legacy_hashes = False  # the stored Revisions use the pre-spec hash formula
        self._allow_legacy = False  # rehash() or resume_writes() runs on a legacy database

    # ------------------------------------------------------------------ primitives
    # Everything below until "shared logic" is what a concrete adapter implements: the
    # Memory family's primitives. The family-neutral ones (_open_sync, transactions,
    # _database_error, the metadata table, the Source store) are declared by
    # StorageBackend and SourceStore (powercontext.adapters.storage).

    @abc.abstractmethod
    def _head_sync(self, artifact_id: str) -> int | None:
        """The current head revision of an Artifact, or None."""

    @abc.abstractmethod
    def _revision_rows_sync(self, artifact_id: str, after: int, upto: int) -> list[RevisionRow]:
        """Revision rows with ``after < revision <= upto`` in ascending order."""

    @abc.abstractmethod
    def _entry_versions_sync(self, entry_version_ids: Sequence[str]) -> list[MemoryEntryVersion]:
        """The stored entry versions with these ids (missing ids are left out)."""

    @abc.abstractmethod
    def _insert_revision_sync(self, row: RevisionRow) -> None:
        """Insert one Revision row; a duplicate key raises the driver's error."""

    @abc.abstractmethod
    def _insert_head_sync(self, artifact_id: str, revision: int) -> None:
        """Create the head row of a new Artifact; a duplicate raises the driver's error."""

    @abc.abstractmethod
    def _cas_head_sync(self, artifact_id: str, base_revision: int, revision: int) -> bool:
        """``UPDATE artifact_heads SET revision = :revision WHERE artifact_id = :id AND
        revision = :base``; True when exactly one row matched."""

    @abc.abstractmethod
    def _insert_entry_versions_sync(self, versions: Sequence[MemoryEntryVersion]) -> None:
        """Insert immutable entry versions."""

    @abc.abstractmethod
    def _delete_projections_sync(self, artifact_id: str, entry_ids: Sequence[str]) -> None:
        """Delete the head rows of these entries with their FTS and vector rows."""

    @abc.abstractmethod
    def _insert_projections_sync(
        self,
        artifact_id: str,
        head_revision: int,
        rows: Sequence[ProjectionRow],
        vectors: Sequence[VectorRow | None],
    ) -> None:
        """Insert head rows (the entries have none at this point) with FTS rows and,
        where ``vectors[i]`` is not None, the vector projection."""

    @abc.abstractmethod
    def _fts_candidates_sync(
        self,
        artifact_ids: Sequence[str],
        terms: Sequence[str],
        limit: int,
        *,
        offset: int = 0,
    ) -> list[Candidate]:
        """Head rows of these Memories matching any of ``terms`` (Analyzer v1 tokens, to
        be quoted, never raw syntax; every term counts, none is dropped), filtered by
        Memory inside the index: positions ``offset .. offset + limit - 1`` of one total
        order, best first (the engine's relevance over the OR of the terms, then a
        stable tie-break such as the projection id), so consecutive pages neither
        repeat nor skip a row. Fewer than ``limit`` rows only at the end. The caller
        applies admission to every row (:meth:`_fts_stream_sync`)."""

    def _vector_candidates_sync(
        self, artifact_ids: Sequence[str], vector: EmbeddingVector, limit: int
    ) -> list[Candidate]:
        """The ``limit`` nearest head rows by L2 with ``distance`` set (all of them when
        there are fewer), filtered by Memory inside the KNN scan, sorted by distance
        with a stable tie-break among equal distances."""
        raise CapabilityNotSupportedError("this backend has no vector search")

    def _vector_projection_sync(self, artifact_id: str) -> list[tuple[str, str | None]]:
        """For every head row of the Memory: (entry_content_hash, embedding_content_hash
        or None when the vector or its metadata is missing)."""
        raise CapabilityNotSupportedError("this backend has no vector search")

    def _set_revision_hash_sync(
        self, artifact_id: str, revision: int, old_hash: str, new_hash: str
    ) -> bool:
        """``UPDATE artifact_revisions SET content_hash = :new WHERE artifact_id = :id AND
        revision = :revision AND content_hash = :old``; True when one row matched. Only
        ``rehash()`` calls it (the one update a Revision row ever gets)."""
        raise CapabilityNotSupportedError(f"{type(self).__name__} cannot rewrite stored hashes")

    def _entry_ids_elsewhere_sync(self, artifact_id: str, entry_ids: Sequence[str]) -> set[str]:
        """Those of ``entry_ids`` that another Memory already uses (entry ids are globally
        unique). The default finds none; a SQL adapter answers from an index."""
        return set()

    # Offline rebuild primitives (Memory RFC, "Vector integrity and offline rebuilds").
    # Defaults refuse, so a backend without them still passes the rest of the contract.

    def _all_heads_sync(self) -> list[tuple[str, int]]:
        """Every Memory Artifact's (artifact_id, head revision), sorted by id."""
        raise CapabilityNotSupportedError(f"{type(self).__name__} cannot rebuild projections")

    def _head_vectors_sync(self, artifact_id: str) -> dict[str, VectorRow]:
        """The stored vectors of one Memory's head rows, by entry_version_id: only those
        whose metadata names the head row's exact version and entry content hash. A
        rebuild keeps these when it cannot make new ones."""
        raise CapabilityNotSupportedError(
            f"{type(self).__name__} cannot read stored vectors; a rebuild without a "
            "working model would drop them"
        )

    def _clear_projection_sync(self, artifact_id: str) -> None:
        """Delete every head, FTS and vector row of one Memory (whatever they hold)."""
        raise CapabilityNotSupportedError(f"{type(self).__name__} cannot rebuild projections")

    def _reset_vectors_sync(self, profile: EmbeddingProfile | None) -> None:
        """Drop the vector projection of every Memory and recreate it for ``profile``
        (None: no vector projection). Runs inside a write transaction where the database
        allows DDL in one; the caller stores the new profile."""
        raise CapabilityNotSupportedError(f"{type(self).__name__} cannot migrate profiles")

    # Business keys (ARCHITECTURE.md, Decisions: "Keys live in the database").

    @abc.abstractmethod
    def _memory_key_sync(self, key: str) -> str | None:
        """The Memory Artifact id stored for ``key`` (an exact, binary comparison), or None."""

    @abc.abstractmethod
    def _memory_keys_sync(self) -> list[tuple[str, str]]:
        """Every stored (key, artifact_id), sorted by key."""

    @abc.abstractmethod
    def _insert_memory_key_sync(self, key: str, artifact_id: str) -> None:
        """Insert one key row inside the open write transaction; the Memory's head row
        exists. A key stored already raises the driver's unique-key error (mapped by
        :meth:`_database_error` to RevisionConflictError)."""

    # ------------------------------------------------------------------ shared logic

    @property
    def profile(self) -> EmbeddingProfile | None:
        return self._profile

    # -- reads ------------------------------------------------------------------

    async def capabilities(self) -> MemoryCapabilities:
        """Database capabilities from the startup probes (the model is the service's)."""
        return await super().capabilities()

    def _cached(self, key: tuple[str, int]) -> _ParsedRevision | None:
        return self._revisions.get(key)

    def _parsed_sync(self, artifact_id: str, revision: int) -> _ParsedRevision:
        """The validated Revision from the Revision cache (read and decoded on a miss)."""
        return self._revisions.parsed(artifact_id, revision, self._revision_rows_sync)

    def _cache_put(self, key: tuple[str, int], parsed: _ParsedRevision) -> None:
        self._revisions.put(key, parsed)

    def _require_head_sync(self, ref: ArtifactRef) -> int:
        head = self._head_sync(ref.artifact_id)
        if head is None:
            raise ArtifactNotFoundError(f"no Memory Artifact {ref.artifact_id!r}")
        return head

    def _load_revision_sync(self, ref: ArtifactRef) -> MemoryRevision:
        head = self._require_head_sync(ref)
        if not 1 <= ref.revision <= head:
            raise ArtifactNotFoundError(
                f"Memory {ref.artifact_id!r} has Revisions 1..{head}; {ref.revision} is not one"
            )
        return self._parsed_sync(ref.artifact_id, ref.revision).revision

    async def head(self, artifact_id: str) -> ArtifactRef | None:
        """The current head ArtifactRef of a Memory, or None when it does not exist."""
        rev = await self._run(self._in_tx, False, self._head_sync, artifact_id)
        return None if rev is None else ArtifactRef(artifact_id, rev)

    async def load_revision(self, ref: ArtifactRef) -> MemoryRevision:
        """The validated Revision (hash and canonical bytes checked). ArtifactNotFoundError."""
        return await self._run(self._in_tx, False, self._load_revision_sync, ref)

    def _versions_checked_sync(
        self, manifest: dict[str, MemoryManifestEntry], entry_ids: Sequence[str]
    ) -> dict[str, MemoryEntryVersion]:
        wanted = {}
        for entry_id in entry_ids:
            item = manifest.get(entry_id)
            if item is None:
                raise ArtifactNotFoundError(f"no entry {entry_id!r} in this Revision")
            wanted[item.entry_version_id] = item
        found = {v.entry_version_id: v for v in self._entry_versions_sync(list(wanted))}
        out: dict[str, MemoryEntryVersion] = {}
        for version_id, item in wanted.items():
            v = found.get(version_id)
            if v is None:
                raise IntegrityError(f"entry version {version_id!r} of the manifest is missing")
            _check_version_matches(v, item)
            out[item.entry_id] = v
        return out

    def _load_entry_versions_sync(
        self, ref: ArtifactRef, entry_ids: Sequence[str] | None
    ) -> dict[str, MemoryEntryVersion]:
        rev = self._load_revision_sync(ref)
        manifest = self._parsed_sync(ref.artifact_id, ref.revision).by_entry
        ids = [e.entry_id for e in rev.content.manifest.entries] if entry_ids is None else entry_ids
        return self._versions_checked_sync(manifest, ids)

    async def load_entry_versions(
        self, ref: ArtifactRef, entry_ids: Sequence[str] | None = None
    ) -> dict[str, MemoryEntryVersion]:
        """Versions the manifest of ``ref`` points to, by entry_id, each hash-checked."""
        return await self._run(self._in_tx, False, self._load_entry_versions_sync, ref, entry_ids)

    def _changes_sync(
        self, memory: ArtifactRef, since_revision: int | None
    ) -> tuple[MemoryRevisionChanges, ...]:
        self._load_revision_sync(memory)  # target exists and is at most the head
        if since_revision is None:
            after = memory.revision - 1
        else:
            if isinstance(since_revision, bool) or not isinstance(since_revision, int):
                raise InvalidInputError("since_revision", "must be an integer")
            if since_revision < 0:
                raise InvalidInputError("since_revision", "must be 0 or a positive Revision")
            if since_revision > memory.revision:
                raise InvalidInputError(
                    "since_revision",
                    f"{since_revision} is after the target Revision {memory.revision}",
                )
            after = since_revision
        out = []
        for r in range(after + 1, memory.revision + 1):
            parsed = self._parsed_sync(memory.artifact_id, r)
            out.append(MemoryRevisionChanges(parsed.revision.ref, parsed.revision.content.changes))
        return tuple(out)

    async def changes(
        self, memory: ArtifactRef, since_revision: int | None = None
    ) -> tuple[MemoryRevisionChanges, ...]:
        """Memory RFC, "changes()": per-Revision changes after ``since_revision``
        (exclusive; 0 = the whole history; None = the target Revision only), ascending.
        ArtifactNotFoundError for an unknown Artifact or Revision; ValueError for a
        negative or too-large ``since_revision``."""
        return await self._run(self._in_tx, False, self._changes_sync, memory, since_revision)

    def _expand_sync(self, hits: Sequence[MemoryHit]) -> tuple[MemoryEntryVersion, ...]:
        out = []
        for hit in hits:
            try:
                self._load_revision_sync(hit.memory_ref)
            except ArtifactNotFoundError as exc:
                raise InvalidCitationError(f"citation names no stored Revision: {exc}") from exc
            manifest = self._parsed_sync(hit.memory_ref.artifact_id, hit.memory_ref.revision)
            item = manifest.by_entry.get(hit.entry_id)
            if item is None or item.entry_version_id != hit.entry_version_id:
                raise InvalidCitationError(
                    f"Revision {hit.memory_ref.revision} of {hit.memory_ref.artifact_id!r} "
                    f"does not hold entry {hit.entry_id!r} at version {hit.entry_version_id!r}"
                )
            found = self._entry_versions_sync([hit.entry_version_id])
            if not found:
                raise InvalidCitationError(f"entry version {hit.entry_version_id!r} is missing")
            v = found[0]
            try:
                _check_version_matches(v, item)
            except IntegrityError as exc:
                raise InvalidCitationError(str(exc)) from exc
            if v.memory_artifact_id != hit.memory_ref.artifact_id:
                raise InvalidCitationError("entry version belongs to another Memory")
            out.append(v)
        return tuple(out)

    async def expand(self, hits: Sequence[MemoryHit]) -> tuple[MemoryEntryVersion, ...]:
        """Memory RFC, "expand()": the exact versions the anchors name, after checking
        id, version id, content hash and canonical bytes. InvalidCitationError."""
        return await self._run(self._in_tx, False, self._expand_sync, hits)

    # -- business keys ----------------------------------------------------------

    async def memory_key(self, key: str) -> str | None:
        """The Memory Artifact id the business ``key`` names, or None (ARCHITECTURE.md,
        Decisions: "Keys live in the database"). ``key`` is compared in its NFC form
        (:func:`powercontext.core.keys.normalize_key`; InvalidInputError, field ``key``).
        Every process and host that opens the database sees the same keys."""
        key = keys.normalize_key(key)
        return await self._run(self._in_tx, False, self._memory_key_sync, key)

    async def memory_keys(self) -> dict[str, str]:
        """Every business key and the Memory Artifact id it names, sorted by key."""
        rows = await self._run(self._in_tx, False, self._memory_keys_sync)
        return dict(rows)

    async def import_memory_keys(self, mapping: Mapping[str, str]) -> dict[str, str]:
        """Store the keys of ``mapping`` (key -> Memory Artifact id) that are not stored
        yet and name an existing Memory, in one transaction; a stored key keeps its
        Memory. Returns the keys stored by this call. InvalidInputError (field ``key`` or
        ``artifact_id``) for a malformed pair, before anything is stored."""
        pairs = []
        for key, artifact_id in mapping.items():
            canonical.check_id(artifact_id, "artifact_id")
            pairs.append((keys.normalize_key(key), artifact_id))
        if not pairs:
            return {}
        return await self._run(self._in_tx, True, self._import_memory_keys_sync, pairs)

    def _import_memory_keys_sync(self, pairs: list[tuple[str, str]]) -> dict[str, str]:
        if self._meta_get_sync("writes_paused"):
            raise WritesPausedError("writes are paused by an offline rebuild; retry later")
        stored: dict[str, str] = {}
        for key, artifact_id in pairs:
            if key in stored or self._memory_key_sync(key) is not None:
                continue
            if self._head_sync(artifact_id) is None:
                continue  # the Memory is not in this database
            self._insert_memory_key_sync(key, artifact_id)
            stored[key] = artifact_id
        return stored

    # -- writes -----------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def begin(self) -> AsyncIterator[DatabaseUnitOfWork]:
        """A unit of work; its ``commit`` runs the whole transaction in one worker call."""
        uow = DatabaseUnitOfWork(self)
        try:
            yield uow
        finally:
            await uow.rollback()

    def _commit_plan_sync(
        self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector] | None,
        key: str | None = None,
    ) -> ArtifactRef:
        self._pending_cache = None
        try:
            self._begin_sync(True)
            if self._meta_get_sync("writes_paused"):
                raise WritesPausedError("writes are paused by an offline rebuild; retry later")
            ref = self._apply_plan_sync(plan, vectors or {})
            if key is not None:
                self._claim_key_sync(plan, key)
            self._commit_sync()
        except CommitOutcomeUnknownError as exc:
            self._rollback_sync()
            self._invalidate(plan.artifact_id)
            # name what the commit may have created, so the caller can reread it
            raise CommitOutcomeUnknownError(
                f"{exc} (the planned Revision is {plan.ref.artifact_id}@{plan.ref.revision})",
                planned=plan.ref, content_hash=plan.content_hash,
            ) from exc
        except BaseException as exc:
            self._rollback_sync()
            mapped = None if isinstance(exc, PowerContextError) else self._database_error(exc)
            if mapped is not None:
                raise mapped from exc
            raise
        self._invalidate(plan.artifact_id)
        pending, self._pending_cache = self._pending_cache, None
        if pending is not None and pending[0] == ref:
            self._cache_put((ref.artifact_id, ref.revision), pending[1])
        return ref

    def _claim_key_sync(self, plan: MemoryPlan, key: str) -> None:
        """Store ``key`` for the Memory ``plan`` creates, in the plan's transaction: a key
        another writer stored first is a RevisionConflictError (nothing commits)."""
        if plan.base is not None:
            raise InvalidInputError("key", "only the write that creates a Memory stores its key")
        owner = self._memory_key_sync(key)
        if owner is not None:
            raise RevisionConflictError(
                f"key {key!r} already names Memory {owner!r}: reread the key and write there")
        self._insert_memory_key_sync(key, plan.artifact_id)

    def _invalidate(self, artifact_id: str) -> None:
        with self._cache_lock:
            for key in [k for k in self._complete_cache if k[0] == artifact_id]:
                del self._complete_cache[key]

    def _apply_plan_sync(
        self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector]
    ) -> ArtifactRef:
        # 1. head compare-and-swap precondition and base manifest
        verify.check_head(plan, self._head_sync(plan.artifact_id))
        base_view: ManifestView | None = None
        if plan.base is not None:
            base_view = self._parsed_sync(plan.artifact_id, plan.base.revision).view
        # 2. the stored facts (bulk reads), then the whole plan checked in core
        verified = verify.verify(plan, base_view, self._plan_facts_sync(plan))
        # 3. Revision, head CAS, versions
        encoding, stored = revision_codec.FULL, plan.content_bytes
        if self.supports_revision_encodings:
            encoding, stored = revision_codec.encode(
                plan.revision, plan.content, plan.content_bytes, dict(verified.items)
            )
        self._insert_revision_sync(
            RevisionRow(
                plan.artifact_id,
                plan.revision,
                MEMORY_FAMILY,
                stored,
                plan.content_hash,
                canonical.lineage_bytes(plan.lineage),
                encoding,
            )
        )
        if plan.base is None:
            self._insert_head_sync(plan.artifact_id, plan.revision)
        elif not self._cas_head_sync(plan.artifact_id, plan.base.revision, plan.revision):
            raise RevisionConflictError(
                f"Memory {plan.artifact_id!r} moved past Revision {plan.base.revision}"
            )
        if plan.new_versions:
            self._insert_entry_versions_sync(plan.new_versions)
        # 4. projections: only what changed
        touched = list(plan.deletes) + [r.entry_id for r in plan.upserts]
        if touched:
            self._delete_projections_sync(plan.artifact_id, touched)
        if plan.upserts:
            self._insert_projections_sync(
                plan.artifact_id,
                plan.revision,
                plan.upserts,
                [self._vector_row(r, vectors) for r in plan.upserts],
            )
        self._pending_cache = (plan.ref, _ParsedRevision(verified.revision, verified.view))
        return plan.ref

    def _plan_facts_sync(self, plan: MemoryPlan) -> verify.PlanFacts:
        """What :func:`powercontext.core.verify.verify` needs from the store, read inside
        the write transaction: one read of entry versions, one of entry ids used
        elsewhere, one of Sources, one per evidence Artifact Revision."""
        wanted = verify.lookups(plan)
        found = (self._entry_versions_sync(list(wanted.entry_version_ids))
                 if wanted.entry_version_ids else [])
        versions = {v.entry_version_id: v for v in found}
        elsewhere = (
            self._entry_ids_elsewhere_sync(plan.artifact_id, list(wanted.added_entry_ids))
            if wanted.added_entry_ids else set()
        )
        sources = (
            {s.source_id: s.content_hash
             for _, s in self._get_sources_sync(list(wanted.source_ids))}
            if wanted.source_ids else {}
        )
        artifacts: dict[ArtifactRef, tuple[str, str]] = {}
        for ref in wanted.artifacts:
            rows = self._revision_rows_sync(ref.artifact_id, ref.revision - 1, ref.revision)
            if rows and rows[0].revision == ref.revision:
                artifacts[ref] = (rows[0].family, rows[0].content_hash)
        return verify.PlanFacts(
            versions, frozenset(elsewhere), sources, artifacts, self._db_analyzer
        )

    def _vector_row(
        self, row: ProjectionRow, vectors: dict[str, EmbeddingVector]
    ) -> VectorRow | None:
        vec = vectors.get(row.entry_version_id)
        if vec is None:
            return None
        if self._profile is None or not (self._db_caps and self._db_caps.vector):
            raise CapabilityNotSupportedError(
                "vectors given but this database has no vector projection"
            )
        check_vector(vec, self._profile)
        return VectorRow(
            canonical.embedding_content_hash(self._profile, row.entry_content_hash), vec
        )

    # -- search ---------------------------------------------------------------------

    def _complete_sync(self, artifact_id: str, revision: int) -> bool:
        # A rebuild changes projections without changing heads: the generation it bumps
        # is read in this transaction, so another process's rebuild is never missed.
        key = (artifact_id, revision, self._meta_get_sync("projection_generation") or "0")
        with self._cache_lock:
            if key in self._complete_cache:
                return self._complete_cache[key]
        assert self._profile is not None
        profile = self._profile
        ok = all(
            emb is not None and emb == canonical.embedding_content_hash(profile, h)
            for h, emb in self._vector_projection_sync(artifact_id)
        )
        with self._cache_lock:
            self._complete_cache[key] = ok
        return ok

    def _vector_ready_sync(self, memories: Sequence[ArtifactRef]) -> str | None:
        """None when vector search can run on every Memory, else the reason it cannot."""
        if self._profile is None or not (self._db_caps and self._db_caps.vector):
            return "the database has no vector projection"
        for m in memories:
            if not self._complete_sync(m.artifact_id, m.revision):
                return (
                    f"the vector projection of Memory {m.artifact_id!r} is incomplete "
                    "(fill it offline: `powercontext memory rebuild` with the model)"
                )
        return None

    def _heads_sync(
        self, memories: Sequence[ArtifactRef | CurrentHead]
    ) -> dict[str, SearchHead]:
        """The head of every Memory the search names, read in its transaction.
        A :class:`CurrentHead` takes whatever the head is now; an ArtifactRef must be it
        (CapabilityNotSupportedError otherwise). ArtifactNotFoundError for no Memory."""
        manifests: dict[str, SearchHead] = {}
        for m in memories:
            head = self._head_sync(m.artifact_id)
            if head is None:
                raise ArtifactNotFoundError(f"no Memory Artifact {m.artifact_id!r}")
            if isinstance(m, ArtifactRef) and head != m.revision:
                raise CapabilityNotSupportedError(
                    f"search needs current heads: Memory {m.artifact_id!r} is at Revision "
                    f"{head}, not {m.revision}"
                )
            parsed = self._parsed_sync(m.artifact_id, head)
            manifests[m.artifact_id] = SearchHead(parsed.revision.ref, parsed.by_entry)
        return manifests

    def _search_sync(self, request: MemorySearchRequest) -> MemorySearchResult:
        manifests = self._heads_sync(request.memories)
        heads = [head.ref for head in manifests.values()]
        mode = request.mode
        fallback: str | None = None
        blank = not request.query.strip()
        if mode == "auto":
            fallback = (
                "no query vector (no embedding model, or it is unavailable)"
                if request.query_vector is None
                else self._vector_ready_sync(heads)
            )
            mode = "hybrid" if fallback is None else "fts"
        elif mode in ("vector", "hybrid"):
            if request.query_vector is None and not blank:
                raise CapabilityNotSupportedError(f"{mode} search needs an embedding model")
            reason = self._vector_ready_sync(heads)
            if reason is not None:
                raise CapabilityNotSupportedError(f"{mode} search is unavailable: {reason}")
        if mode in ("fts", "hybrid") and self._db_caps is not None and not self._db_caps.fts:
            raise CapabilityNotSupportedError(
                "full-text search is unavailable: " + "; ".join(self._db_caps.reasons)
            )
        if blank and request.query_vector is None:  # nothing to search with: no hits
            return MemorySearchResult((), mode, fallback)
        budget = self.candidate_budget(request.limit)
        ids = sorted(manifests)
        versions: dict[str, MemoryEntryVersion] = {}
        channels: dict[Channel, list[SearchCandidate]] = {}
        if mode in ("fts", "hybrid"):
            terms = query_bounds.search_terms(request.query, self._db_analyzer)
            channels["fts"] = []
            if terms:
                stream = self._fts_stream_sync(ids, terms, budget)
                channels["fts"] = self._channel_sync(
                    "fts", stream, budget, manifests, versions, terms)
        if mode in ("vector", "hybrid"):
            assert request.query_vector is not None and self._profile is not None
            check_vector(request.query_vector, self._profile)
            stream = self._vector_stream_sync(ids, request.query_vector, budget)
            channels["vector"] = self._channel_sync(
                "vector", stream, budget, manifests, versions)
        hits = ranking.rank(channels, manifests, versions, request.limit)
        return MemorySearchResult(hits, mode, fallback)

    def _channel_sync(
        self,
        channel: Channel,
        stream: Iterator[SearchCandidate],
        budget: int,
        heads: dict[str, SearchHead],
        versions: dict[str, MemoryEntryVersion],
        terms: Sequence[str] = (),
    ) -> list[SearchCandidate]:
        """The first ``budget`` rows of ``stream`` (the backend's order) that the head
        manifest trusts, that the channel's admission accepts (over ``terms`` for fts)
        and whose stored version core confirms (:mod:`powercontext.core.ranking`), with
        the versions read into ``versions``. Fewer only when the stream runs out (or, on
        a channel whose admission is monotone, at the first refusal)."""
        out: list[SearchCandidate] = []
        pending: list[SearchCandidate] = []
        exhausted = False
        stops = ranking.refusal_ends_channel(channel)
        try:
            while len(out) < budget and not exhausted:
                # pull just enough candidates to fill the budget, then verify them in
                # one read; pull more only when some fail (damaged rows)
                while len(out) + len(pending) < budget:
                    c = next(stream, None)
                    if c is None:
                        exhausted = True
                        break
                    if not ranking.trusted(c, heads):
                        continue
                    if not ranking.admit(channel, c, terms):
                        if stops:
                            exhausted = True
                            break
                        continue
                    pending.append(c)
                wanted = [c.entry_version_id for c in pending
                          if c.entry_version_id not in versions]
                if wanted:
                    versions.update(
                        (v.entry_version_id, v) for v in self._entry_versions_sync(wanted))
                out.extend(c for c in pending
                           if ranking.confirmed(c, versions.get(c.entry_version_id), heads))
                pending = []
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # an adapter's open cursor ends with the channel
        return out

    def _fts_stream_sync(
        self, artifact_ids: Sequence[str], terms: Sequence[str], first: int
    ) -> Iterator[Candidate]:
        """Every head row of these Memories matching any of ``terms``, lazily, in the
        backend's total order (best first, a stable tie-break): pages of
        :meth:`_fts_candidates_sync`, the first of ``first`` rows, each next one twice
        as large. An adapter may override it with a cheaper exact walk.

        The pages are not pre-filtered by the admission minimum: the channel applies
        admission to every row, and on SQLite counting the minimum in FTS5 (a ``rowid
        IN`` of per-term rowid lists) measured slower than paging (10k LoCoMo turns, 50
        questions, fts limit 10: p50 19.1 ms / p95 135 ms pre-filtered against 5.6 /
        18.2 ms paged, same hits)."""
        offset, size = 0, first
        while True:
            page = self._fts_candidates_sync(artifact_ids, terms, size, offset=offset)
            yield from page
            if len(page) < size:
                return
            offset += size
            size *= 2

    def _vector_stream_sync(
        self, artifact_ids: Sequence[str], vector: EmbeddingVector, first: int
    ) -> Iterator[Candidate]:
        """Head rows of these Memories by ascending L2 distance (the adapter's tie-break
        within equal distances), lazily, from nearest-neighbour queries of growing ``k``
        (``first + 1``, then doubling). A row is yielded only once its place is certain:
        either the answer was shorter than ``k`` (every row seen) or its distance is
        below the ``k``-th one (rows at that distance may be missing from the answer).
        Past :attr:`vector_k_cap` the rows of the largest answer are yielded as given."""
        cap = self.vector_k_cap
        k = first + 1 if cap is None else min(first + 1, cap)
        done = 0
        while True:
            page = self._vector_candidates_sync(artifact_ids, vector, k)
            if len(page) < k or (cap is not None and k >= cap):
                yield from page[done:]
                return
            last = page[-1].distance
            certain = [c for c in page if c.distance is not None and last is not None
                       and c.distance < last]
            yield from certain[done:]
            done = max(done, len(certain))
            k = k * 2 if cap is None else min(k * 2, cap)

    async def search(self, request: MemorySearchRequest) -> MemorySearchResult:
        """Memory RFC, "Search and reads": one read transaction; only active entries of
        the current heads, re-checked against the manifest; admission then RRF.

        ``request.memories``: exact ArtifactRefs (each must be the head:
        CapabilityNotSupportedError otherwise) or :class:`CurrentHead` names, whose head
        is read inside the same transaction (never a race with a concurrent write).
        Each channel contributes the first ``max(limit * 4, 32)`` candidates, in the
        backend's order (bm25-like relevance over the OR of every query term; L2
        distance), that the manifest trusts and that pass the channel's admission: the
        spec's "max(limit * 4, 32) candidates" counted after admission, so a candidate
        refused by admission never takes an admitted one's place, and the hits at a
        smaller limit are the first ones at a larger limit (fts, vector) or as many as
        there are (hybrid, auto). ArtifactNotFoundError for an unknown Memory;
        InvalidInputError for a query over the bounds of :mod:`powercontext.core.query`;
        CapabilityNotSupportedError for an unservable mode."""
        return await self._run(self._in_tx, False, self._search_sync, request)

class DatabaseUnitOfWork:
    """The unit of work of :class:`DatabaseMemoryBackend`. ``commit`` is all-or-nothing."""

    def __init__(self, backend: DatabaseMemoryBackend) -> None:
        self._backend = backend
        self._done = False

    async def commit(
        self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector] | None = None,
        *, key: str | None = None,
    ) -> ArtifactRef:
        """See :meth:`powercontext.ports.MemoryUnitOfWork.commit`."""
        if self._done:
            raise RuntimeError("this unit of work has already committed")
        if key is not None:
            key = keys.normalize_key(key)
        self._done = True
        args = (plan, vectors) if key is None else (plan, vectors, key)
        return await self._backend._run(self._backend._commit_plan_sync, *args)

    async def rollback(self) -> None:
        self._done = True


def _check_version_matches(v: MemoryEntryVersion, item: MemoryManifestEntry) -> None:
    verify.check_version_matches(v, item)

