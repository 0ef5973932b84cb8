"""DatabaseMemoryBackend: the database-adapter SPI (Memory RFC, "Code structure and
abstraction boundaries"), the page a backend author reads.

:class:`DatabaseMemoryBackend` implements :class:`powercontext.ports.MemoryBackend`
(and the capability ports :class:`~powercontext.ports.MemoryRebuild` and
:class:`~powercontext.ports.MemoryInventory`) for any SQL database. A concrete adapter
(SQLite, OceanBase, a third party's) subclasses it and implements only the synchronous
primitives declared here (``abc.abstractmethod``; the optional ones refuse with
CapabilityNotSupportedError by default) and in the family-neutral storage base
(:mod:`powercontext.adapters.storage`: ``_open_sync``, transactions, ``_database_error``,
the metadata table, the Source store): CRUD, the head compare-and-swap, schema,
transactions and the search-dialect queries. Every primitive runs on the worker thread,
inside a transaction the base opened.

The rules are not here. Each commit descends once into the core,
:func:`powercontext.core.verify.verify` (canonical bytes, manifest, entry references,
evidence); each search once into :mod:`powercontext.core.ranking` (manifest trust,
admission, RRF). The I/O around them is composed from one mixin per concept, a linear
chain of bases of this class:

- :mod:`powercontext.adapters.storage`: the worker thread, transactions, retries, error
  mapping, metadata, the Source store (StorageBackend, SourceStore);
- :mod:`powercontext.adapters.memory_rehash`: the hash upgrade and the write pause;
- :mod:`powercontext.adapters.memory_deployment`: the checks at open (profile, analyzer,
  hash format);
- :mod:`powercontext.adapters.memory_rebuild`: the offline rebuild and the inventory;
- :mod:`powercontext.adapters.memory_reads`: head, Revisions, entry versions, changes,
  expand, business keys;
- :mod:`powercontext.adapters.memory_commit`: the unit of work
  (:class:`~powercontext.adapters.memory_commit.DatabaseUnitOfWork`);
- :mod:`powercontext.adapters.memory_search`: search.

This class adds the constructor, the Revision cache
(:mod:`powercontext.adapters.revision_cache`) and its delegates, ``profile`` and
``capabilities``.
"""

from __future__ import annotations

import abc
import functools
import threading
from collections.abc import Sequence

from powercontext.adapters import manifest_log
from powercontext.adapters.manifest_log import ManifestLog
from powercontext.adapters.memory_commit import DatabaseUnitOfWork
from powercontext.adapters.memory_rebuild import resolve_analyzer as _resolve_analyzer
from powercontext.adapters.memory_rehash import HASH_FORMAT_KEY
from powercontext.adapters.memory_rows import MEMORY_FAMILY, VectorRow
from powercontext.adapters.memory_search import MemorySearchMixin
from powercontext.adapters.revision_cache import LogDecoder, RevisionCache
from powercontext.adapters.revision_cache import ParsedRevision as _ParsedRevision
from powercontext.adapters.storage.rows import RevisionRow
from powercontext.adapters.vector_gaps import VectorGaps
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import CapabilityNotSupportedError
from powercontext.core.models import (
    ArtifactRef,
    EmbeddingProfile,
    EmbeddingVector,
    MemoryCapabilities,
    MemoryEntryVersion,
    RebuildReport,
    RehashReport,
)
from powercontext.core.plan import ProjectionRow
from powercontext.core.ranking import SearchCandidate
from powercontext.core.vectors import check_vector

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


class DatabaseMemoryBackend(MemorySearchMixin):
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

    def __init__(
        self, *, profile: EmbeddingProfile | None = None, analyzer: str | Analyzer | None = None
    ) -> None:
        super().__init__()
        self._profile = profile
        self._analyzer_choice = _resolve_analyzer(analyzer)
        self._analyzer: Analyzer | None = None  # the database's, known once open
        self._analyzer_migration = False
        self._analyzer_target: tuple[str | None, str] | None = None  # a rebuild migrates
        self._revisions = RevisionCache()  # parsed Revisions, shared by every read
        #: the manifest log (an adapter that has its tables sets it; None: Revision rows
        #: hold their manifests, as deltas and checkpoints)
        self._manifest_log: ManifestLog | None = None
        #: the per-Memory count of head rows without a valid vector (an adapter that has
        #: its table sets it; None: completeness is counted over every head row)
        self._vector_gaps: VectorGaps | None = None
        self._complete_cache: dict[tuple[str, int, str], bool] = {}
        self._pending_cache: tuple[ArtifactRef, _ParsedRevision] | None = None
        self._cache_lock = threading.Lock()
        self._legacy_hashes = False  # the stored Revisions use the pre-spec hash formula
        self._allow_legacy = False  # rehash() or resume_writes() runs on a legacy database

    # ------------------------------------------------------------------ primitives
    # Everything below until "state and cache" is what a concrete adapter implements:
    # the Memory family's primitives (the mixins declare the ones they call under
    # TYPE_CHECKING). The family-neutral ones (_open_sync, transactions,
    # _database_error, the metadata table, the Source store) are declared by
    # StorageBackend and SourceStore (powercontext.adapters.storage).

    @abc.abstractmethod
    def _head_sync(self, artifact_id: str) -> int | None:
        """The current head revision of an Artifact, or None."""

    def _heads_many_sync(self, artifact_ids: Sequence[str]) -> dict[str, int]:
        """The current head revision of each of these Artifacts that exists, by id (one
        statement where the adapter can; the default asks :meth:`_head_sync` per id)."""
        out = {}
        for artifact_id in dict.fromkeys(artifact_ids):
            head = self._head_sync(artifact_id)
            if head is not None:
                out[artifact_id] = head
        return out

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
    ) -> list[SearchCandidate]:
        """Head rows of these Memories matching any of ``terms`` (Analyzer v1 tokens, to
        be quoted, never raw syntax; every term counts, none is dropped), filtered by
        Memory inside the index: positions ``offset .. offset + limit - 1`` of one total
        order, best first (the engine's relevance over the OR of the terms, then a
        stable tie-break such as the projection id), so consecutive pages neither
        repeat nor skip a row. Fewer than ``limit`` rows only at the end. The caller
        applies admission to every row (:meth:`_fts_stream_sync`)."""

    def _vector_candidates_sync(
        self, artifact_ids: Sequence[str], vector: EmbeddingVector, limit: int
    ) -> list[SearchCandidate]:
        """The ``limit`` nearest head rows by L2 with ``distance`` set (all of them when
        there are fewer), filtered by Memory inside the KNN scan, sorted by distance
        with a stable tie-break among equal distances."""
        raise CapabilityNotSupportedError("this backend has no vector search")

    def _vector_projection_sync(self, artifact_id: str) -> list[tuple[str, str | None]]:
        """For every head row of the Memory: (entry_content_hash, embedding_content_hash
        or None when the vector or its metadata is missing)."""
        raise CapabilityNotSupportedError("this backend has no vector search")

    def _vector_projection_of_sync(self, artifact_id: str, entry_ids: Sequence[str]
                                   ) -> list[tuple[str, str | None]]:
        """:meth:`_vector_projection_sync` for the head rows of these entries only."""
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
    def _delete_memory_key_sync(self, key: str, artifact_id: str) -> bool:
        """Delete the row of ``key`` inside the open write transaction when it names
        ``artifact_id``; True when a row was deleted."""

    @abc.abstractmethod
    def _insert_memory_key_sync(self, key: str, artifact_id: str) -> None:
        """Insert one key row inside the open write transaction; the Memory's head row
        exists. A key stored already raises the driver's unique-key error (mapped by
        :meth:`_database_error` to RevisionConflictError)."""

    # ------------------------------------------------------------------ state and cache

    @property
    def profile(self) -> EmbeddingProfile | None:
        """The deployment's fixed embedding profile (None: no vector projection)."""
        return self._profile

    async def capabilities(self) -> MemoryCapabilities:
        """Database capabilities from the startup probes (the model is the service's)."""
        return await super().capabilities()

    def _cached(self, key: tuple[str, int]) -> _ParsedRevision | None:
        return self._revisions.get(key)

    def _log_decoder(self) -> LogDecoder | None:
        """How the Revision cache reads a Revision from the manifest log (None: no log)."""
        log = self._manifest_log
        return None if log is None else functools.partial(
            manifest_log.read, log, self._revision_rows_sync)

    def _parsed_sync(self, artifact_id: str, revision: int) -> _ParsedRevision:
        """The validated Revision from the Revision cache (read and decoded on a miss:
        from the manifest log when it holds the Revision)."""
        return self._revisions.parsed(artifact_id, revision, self._revision_rows_sync,
                                      self._log_decoder())

    def _cache_put(self, key: tuple[str, int], parsed: _ParsedRevision) -> None:
        self._revisions.put(key, parsed)
