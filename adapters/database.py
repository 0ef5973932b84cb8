"""DatabaseMemoryBackend: the database-adapter SPI (Memory RFC, "Code structure and
abstraction boundaries").

This class owns every domain rule a database backend needs: async serialization over
one worker thread, the unit of work, canonical validation of the plan inside the write
transaction, manifest and entry-reference validation, search-hit filtering through the
authoritative manifest, admission and RRF. A concrete adapter (SQLite, OceanBase, a third
party's) implements only the synchronous primitives marked ``abstract`` below: CRUD, the
head compare-and-swap, schema, transactions and the search-dialect queries. Every
primitive runs on the worker thread, inside a transaction this class opened.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import contextlib
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, cast

import attrs

from powercontext.adapters import revision_codec
from powercontext.adapters.secret_scanner import default_scanner
from powercontext.core import admission, canonical, keys, rrf
from powercontext.core import analyzer as analyzers
from powercontext.core import query as query_bounds
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import (
    AnalyzerMismatchError,
    ArtifactNotFoundError,
    CapabilityNotSupportedError,
    CommitOutcomeUnknownError,
    IntegrityError,
    InvalidCitationError,
    InvalidInputError,
    PowerContextError,
    ProfileMismatchError,
    RevisionConflictError,
    UpgradeRequiredError,
    WritesPausedError,
)
from powercontext.core.manifest import ManifestView, splice
from powercontext.core.manifest import view as manifest_view
from powercontext.core.models import (
    MANIFEST_FORMAT,
    MEMORY_SCHEMA,
    ArtifactRef,
    Channel,
    CurrentHead,
    EmbeddingProfile,
    EmbeddingVector,
    MemoryCapabilities,
    MemoryChange,
    MemoryContent,
    MemoryEntryVersion,
    MemoryHit,
    MemoryManifestEntry,
    MemoryRevision,
    MemoryRevisionChanges,
    MemorySearchRequest,
    MemorySearchResult,
    RebuildReport,
    RehashReport,
    Source,
    SourceRef,
)
from powercontext.core.plan import MemoryPlan, ProjectionRow
from powercontext.core.secrets import check_sources
from powercontext.core.vectors import check_vector, prepare_vector

__all__ = [
    "HASH_FORMAT_KEY",
    "MEMORY_FAMILY",
    "Candidate",
    "DatabaseMemoryBackend",
    "DatabaseUnitOfWork",
    "RebuildReport",
    "RehashReport",
    "RevisionRow",
    "VectorRow",
    "check_vector",
]

MEMORY_FAMILY = "memory"
#: Deployment metadata key recording the formula of the stored Artifact content hashes
#: (``canonical.HASH_FORMAT`` or ``canonical.LEGACY_HASH_FORMAT``).
HASH_FORMAT_KEY = "hash_format"
REHASH_COMMAND = "powercontext memory rebuild --rehash"
T = TypeVar("T")
_MANIFEST_CACHE_SIZE = 64
#: The Revision cache also holds at most this many manifest items in all (a parsed item
#: with its bytes costs a few hundred bytes; 100k-entry Memories must not pin gigabytes).
_MANIFEST_CACHE_ITEMS = 400_000


@attrs.frozen
class RevisionRow:
    """One ``artifact_revisions`` row, as stored. ``content`` is in ``encoding`` (see
    :mod:`powercontext.adapters.revision_codec`; ``identity`` = the canonical RFC 8785
    bytes of the MemoryContent); ``lineage`` the canonical bytes of the RevisionLineage.
    An adapter stores ``encoding`` and ``content`` as given and returns them unchanged;
    one that cannot store the encoding leaves ``supports_revision_encodings`` False and
    is only ever given ``identity`` rows."""

    artifact_id: str
    revision: int
    family: str
    content: bytes
    content_hash: str
    lineage: bytes
    encoding: str = "identity"


@attrs.frozen
class VectorRow:
    """A vector projection to write beside a head row."""

    embedding_content_hash: str
    vector: EmbeddingVector


@attrs.frozen
class Candidate:
    """A search candidate read from the projection (not yet trusted)."""

    artifact_id: str
    entry_id: str
    entry_version_id: str
    entry_content_hash: str
    searchable_text: str
    distance: float | None = None


class _ParsedRevision:
    """A validated Revision with the memoized view of its manifest."""

    __slots__ = ("revision", "view")

    def __init__(self, revision: MemoryRevision, view: ManifestView) -> None:
        self.revision = revision
        self.view = view

    @property
    def by_entry(self) -> dict[str, MemoryManifestEntry]:
        return self.view.as_dict


class DatabaseMemoryBackend(abc.ABC):
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
        return max(limit * 4, 32)

    def __init__(
        self, *, profile: EmbeddingProfile | None = None, analyzer: str | Analyzer | None = None
    ) -> None:
        self._profile = profile
        self._analyzer_choice = _resolve_analyzer(analyzer)
        self._analyzer: Analyzer | None = None  # the database's, known once open
        self._analyzer_migration = False
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._open_lock = threading.Lock()
        self._opened = False
        self._db_caps: MemoryCapabilities | None = None
        self._manifest_cache: OrderedDict[tuple[str, int], _ParsedRevision] = OrderedDict()
        self._complete_cache: dict[tuple[str, int, str], bool] = {}
        self._pending_cache: tuple[ArtifactRef, _ParsedRevision] | None = None
        self._cache_lock = threading.Lock()
        self._legacy_hashes = False  # the stored Revisions use the pre-spec hash formula
        self._allow_legacy = False  # rehash() or resume_writes() runs on a legacy database

    # ------------------------------------------------------------------ primitives
    # Everything below until "shared logic" is what a concrete adapter implements.

    @abc.abstractmethod
    def _open_sync(self) -> MemoryCapabilities:
        """Connect, create the schema when missing, run the startup probes, and report
        what the database can do (fts, vector infrastructure for ``self._profile``)."""

    @abc.abstractmethod
    def _close_sync(self) -> None:
        """Close the connection (idempotent)."""

    @abc.abstractmethod
    def _begin_sync(self, write: bool) -> None:
        """Start a transaction: a write one takes the database's write lock (SQLite
        ``BEGIN IMMEDIATE``); a read one gives one consistent snapshot."""

    @abc.abstractmethod
    def _commit_sync(self) -> None:
        """COMMIT durably."""

    @abc.abstractmethod
    def _rollback_sync(self) -> None:
        """ROLLBACK; must not raise when no transaction is open."""

    @abc.abstractmethod
    def _database_error(self, exc: BaseException) -> PowerContextError | None:
        """Map a driver exception to a typed error (a unique-key violation on a revision
        or head to RevisionConflictError, ...), or None when it is not a known case."""

    @abc.abstractmethod
    def _meta_get_sync(self, key: str) -> str | None:
        """A value of the deployment metadata table (profile, analyzer, write pause)."""

    @abc.abstractmethod
    def _meta_set_sync(self, key: str, value: str | None) -> None:
        """Set (or with None delete) a metadata value."""

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

    @abc.abstractmethod
    def _put_sources_sync(self, sources: Sequence[Source]) -> list[int]:
        """Insert Sources not yet stored; return each one's journal position."""

    @abc.abstractmethod
    def _get_sources_sync(self, source_ids: Sequence[str]) -> list[tuple[int, Source]]:
        """Stored Sources with their journal positions (missing ids left out)."""

    @abc.abstractmethod
    def _journal_sync(self, after: int, limit: int) -> list[tuple[int, Source]]:
        """Sources after a journal position, ascending."""

    # ------------------------------------------------------------------ shared logic

    @property
    def profile(self) -> EmbeddingProfile | None:
        return self._profile

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=type(self).__name__
            )
        return await loop.run_in_executor(self._executor, self._guarded, fn, args)

    def _guarded(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        self._ensure_open_sync()
        return fn(*args)

    def _ensure_open_sync(self) -> None:
        with self._open_lock:
            if not self._opened:
                self._db_caps = self._open_sync()
                try:
                    self._check_profile_sync()
                    self._check_analyzer_sync()
                    self._legacy_hashes = self._check_hash_format_sync()
                except BaseException:
                    self._close_sync()
                    raise
                self._opened = True
        if self._legacy_hashes and not self._allow_legacy:
            raise UpgradeRequiredError(
                "this database stores Artifact content hashes in the pre-spec format "
                f"{canonical.LEGACY_HASH_FORMAT!r} (SHA-256 with a prefix the Memory RFC does "
                f"not write); upgrade it once with `{REHASH_COMMAND}`, which verifies "
                "every Revision against the old formula and rewrites only the stored hash"
            )

    def _check_hash_format_sync(self) -> bool:
        """True when the stored Revisions use the legacy hash format. A database without
        the marker is new (no Memory yet: marked with the spec's format) or was written
        before the marker existed (it has Memories: marked legacy)."""
        # a read first: an opened database never queues behind a writer for its marker
        stored = self._in_tx(False, self._meta_get_sync, HASH_FORMAT_KEY)
        if stored is None:
            stored = self._in_tx(True, self._mark_hash_format_sync)
        if stored not in (canonical.HASH_FORMAT, canonical.LEGACY_HASH_FORMAT):
            raise UpgradeRequiredError(
                f"this database records hash format {stored!r}, which this version of "
                "powercontext does not know (a newer version wrote it)"
            )
        return stored == canonical.LEGACY_HASH_FORMAT

    def _new_database_analyzer(self) -> Analyzer:
        """The analyzer a database created now records (the choice, else the default)."""
        return self._analyzer_choice or analyzers.get()

    def _check_analyzer_sync(self) -> None:
        stored = self._meta_get_sync("analyzer_version")
        if stored is None:
            # nothing recorded (an adapter that records nothing at creation): a new
            # database, which gets the choice or the default
            stored = self._new_database_analyzer().version
            self._begin_sync(True)
            try:
                self._meta_set_sync("analyzer_version", stored)
                self._commit_sync()
            except BaseException:
                self._rollback_sync()
                raise
        known = analyzers.ANALYZERS.get(stored) if stored is not None else None
        wanted = self._analyzer_choice
        if self._analyzer_migration:
            # opened for a rebuild, which migrates: full-text search waits for it
            self._analyzer = wanted or known or analyzers.get()
            if self._analyzer != known:
                self._fts_off_sync(stored)
            return
        if known is None or (wanted is not None and wanted != known):
            raise AnalyzerMismatchError(stored, (wanted or analyzers.get()).version)
        self._analyzer = known

    def _fts_off_sync(self, stored: str | None) -> None:
        assert self._analyzer is not None
        caps = self._db_caps or MemoryCapabilities(True, False, False, None)
        reason = (f"the FTS projection was built by analyzer {stored!r}, not "
                  f"{self._analyzer.version!r}: `powercontext memory rebuild` migrates it")
        self._db_caps = attrs.evolve(caps, fts=False, hybrid=False,
                                     reasons=(*caps.reasons, reason))

    def allow_analyzer_migration(self) -> None:
        """Let the next open accept a database built by another or an unknown analyzer
        (full-text search stays off until :meth:`rebuild` has migrated it). Only for the
        rebuild command, which must open such a database to migrate it."""
        self._analyzer_migration = True

    @property
    def _db_analyzer(self) -> Analyzer:
        assert self._analyzer is not None, "the database is not open"
        return self._analyzer

    async def analyzer(self) -> Analyzer:
        """The database's analyzer (recorded at creation; Memory RFC, "Normalization,
        hashing, and the search analyzer"). Opens the database: AnalyzerMismatchError
        when it records another version than the one asked for, or an unknown one."""
        await self._run(lambda: None)
        assert self._analyzer is not None
        return self._analyzer

    def _check_profile_sync(self) -> None:
        stored = self._meta_get_sync("embedding_profile")
        if self._profile is None:
            if stored is not None:
                # Opening without a profile still works for fts and authoritative reads.
                self._profile = _profile_from_json(stored)
                self._db_caps = attrs.evolve(
                    self._db_caps or MemoryCapabilities(True, False, False, None),
                    embedding_profile=self._profile,
                )
            return
        wanted = canonical.canonical_dumps(self._profile).decode()
        if stored is None and not (self._db_caps and self._db_caps.vector):
            return  # no vector projection here: nothing to fix the profile to
        if stored is None:
            self._begin_sync(True)
            try:
                self._meta_set_sync("embedding_profile", wanted)
                self._commit_sync()
            except BaseException:
                self._rollback_sync()
                raise
        elif stored != wanted:
            raise ProfileMismatchError(
                f"this database was created with embedding profile {stored}; "
                f"refusing to open it with {wanted} (a new profile needs "
                "`powercontext --embedding NAME memory rebuild --migrate`)"
            )

    def _in_tx(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        try:
            self._begin_sync(write)
            result = fn(*args)
            self._commit_sync()
            return result
        except BaseException as exc:
            self._rollback_sync()
            mapped = None if isinstance(exc, PowerContextError) else self._database_error(exc)
            if mapped is not None:
                raise mapped from exc
            raise

    async def open(self) -> None:
        """Open the database now (otherwise the first call does)."""
        await self._run(lambda: None)

    async def close(self) -> None:
        if self._executor is None:
            return
        executor = self._executor
        if self._opened:
            await asyncio.get_running_loop().run_in_executor(executor, self._close_sync)
        self._opened = False
        self._executor = None
        executor.shutdown(wait=True)

    def close_sync(self) -> None:
        """Close from synchronous code (e.g. after ``asyncio.run``)."""
        if self._executor is not None:
            self._executor.submit(self._close_sync).result()
            self._executor.shutdown(wait=True)
            self._executor = None
        self._opened = False

    async def capabilities(self) -> MemoryCapabilities:
        """Database capabilities from the startup probes (the model is the service's)."""
        await self._run(lambda: None)
        assert self._db_caps is not None
        return self._db_caps

    # -- reads ------------------------------------------------------------------

    def _cached(self, key: tuple[str, int]) -> _ParsedRevision | None:
        with self._cache_lock:
            hit = self._manifest_cache.get(key)
            if hit is not None:
                self._manifest_cache.move_to_end(key)
            return hit

    def _parsed_sync(self, artifact_id: str, revision: int) -> _ParsedRevision:
        """The validated Revision, decoding a delta chain from the nearest full row or
        cached Revision (each step's content hash checked)."""
        hit = self._cached((artifact_id, revision))
        if hit is not None:
            return hit
        low = max(1, revision - revision % revision_codec.CHECKPOINT_EVERY)
        base: _ParsedRevision | None = None
        for r in range(revision - 1, low - 1, -1):
            base = self._cached((artifact_id, r))
            if base is not None:
                low = r + 1
                break
        rows = self._revision_rows_sync(artifact_id, low - 1, revision)
        if rows and not revision_codec.is_full(rows[0].encoding) and base is None:
            rows = self._revision_rows_sync(artifact_id, 0, revision)  # no checkpoint: walk all
        if not rows or rows[-1].revision != revision:
            raise ArtifactNotFoundError(f"no Revision {revision} of Artifact {artifact_id!r}")
        start = max(i for i, row in enumerate(rows)
                    if revision_codec.is_full(row.encoding) or i == 0)
        if base is not None and not any(revision_codec.is_full(r.encoding) for r in rows):
            start = 0
        elif revision_codec.is_full(rows[start].encoding):
            base = None
        parsed = base
        for row in rows[start:]:
            parsed = self._decode_row(row, parsed)
        assert parsed is not None
        # only the Revision asked for: caching a whole delta chain evicted the heads of
        # other Memories (many Memories searched together thrashed the cache)
        self._cache_put((artifact_id, revision), parsed)
        return parsed

    def _decode_row(self, row: RevisionRow, base: _ParsedRevision | None) -> _ParsedRevision:
        if revision_codec.is_full(row.encoding):
            return self._parse_row(
                attrs.evolve(row, content=revision_codec.decode_full(row.encoding, row.content),
                             encoding=revision_codec.FULL))
        if row.family != MEMORY_FAMILY:
            raise ArtifactNotFoundError(f"Artifact {row.artifact_id!r} is not a Memory")
        if base is None or base.revision.ref.revision != row.revision - 1:
            raise IntegrityError(
                f"Revision {row.revision} of {row.artifact_id!r} is a delta without its base"
            )
        items, changes = revision_codec.decode_delta(row.content)
        view = splice(base.view, items)
        content = MemoryContent(view.manifest, changes)
        body = canonical.content_bytes(content, view.joined)
        if canonical.artifact_content_hash(body) != row.content_hash:
            raise IntegrityError(
                f"Revision {row.revision} of {row.artifact_id!r}: stored content does not "
                "match its content hash"
            )
        revision = MemoryRevision(
            ArtifactRef(row.artifact_id, row.revision), content, row.content_hash,
            canonical.parse_lineage(row.lineage),
        )
        return _ParsedRevision(revision, view)

    def _cache_put(self, key: tuple[str, int], parsed: _ParsedRevision) -> None:
        with self._cache_lock:
            cache = self._manifest_cache
            cache[key] = parsed
            cache.move_to_end(key)
            items = sum(len(p.revision.content.manifest.entries) for p in cache.values())
            while len(cache) > 1 and (len(cache) > _MANIFEST_CACHE_SIZE
                                      or items > _MANIFEST_CACHE_ITEMS):
                _, dropped = cache.popitem(last=False)
                items -= len(dropped.revision.content.manifest.entries)

    @staticmethod
    def _parse_row(row: RevisionRow) -> _ParsedRevision:
        if row.family != MEMORY_FAMILY:
            raise ArtifactNotFoundError(
                f"Artifact {row.artifact_id!r} is a {row.family!r} Artifact, not a Memory"
            )
        if canonical.artifact_content_hash(row.content) != row.content_hash:
            raise IntegrityError(
                f"Revision {row.revision} of {row.artifact_id!r}: stored content does not "
                "match its content hash"
            )
        content = canonical.parse_content(row.content)
        if canonical.content_bytes(content) != row.content:
            raise IntegrityError(
                f"Revision {row.revision} of {row.artifact_id!r}: content is not canonical"
            )
        revision = MemoryRevision(
            ArtifactRef(row.artifact_id, row.revision),
            content,
            row.content_hash,
            canonical.parse_lineage(row.lineage),
        )
        return _ParsedRevision(revision, manifest_view(content.manifest))

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

    # -- sources ------------------------------------------------------------------

    async def put_sources(self, sources: Sequence[Source]) -> tuple[int, ...]:
        """Persist Sources atomically; identical ones are kept once. ValueError for a
        different Source under an existing id or a Source whose hash is wrong;
        SecretDetectedError (a ValueError) for a Source holding a secret in its content,
        uri or metadata: nothing is stored (Sources are append-only)."""
        for s in sources:
            if not isinstance(s, Source):
                raise InvalidInputError("sources", "must be Source values")
            canonical.check_id(s.source_id, "source_id")
            if canonical.make_source(s.source_id, s.kind, s.content, s.uri, s.metadata) != s:
                raise InvalidInputError(
                    "sources",
                    f"Source {s.source_id!r} is not normalized (build it with make_source)",
                )
            if (
                canonical.source_content_hash(s.kind, s.content, s.uri, s.metadata)
                != s.content_hash
            ):
                raise InvalidInputError(
                    "source.content_hash", f"does not match the content of {s.source_id!r}"
                )
        check_sources(sources, default_scanner().scan)
        return tuple(await self._run(self._in_tx, True, self._put_sources_checked, list(sources)))

    def _put_sources_checked(self, sources: list[Source]) -> list[int]:
        existing = dict(
            (s.source_id, s) for _, s in self._get_sources_sync([s.source_id for s in sources])
        )
        for s in sources:
            old = existing.get(s.source_id)
            if old is not None and old != s:
                raise InvalidInputError(
                    "source_id", f"{s.source_id!r} is already stored with other content"
                )
        return self._put_sources_sync(sources)

    async def get_sources(self, source_ids: Sequence[str]) -> tuple[Source, ...]:
        rows = dict(
            (s.source_id, s)
            for _, s in await self._run(
                self._in_tx, False, self._get_sources_sync, list(source_ids)
            )
        )
        missing = [i for i in source_ids if i not in rows]
        if missing:
            raise ArtifactNotFoundError(f"no stored Source {missing[0]!r}")
        return tuple(rows[i] for i in source_ids)

    async def journal(self, after: int = 0, limit: int = 100) -> tuple[tuple[int, Source], ...]:
        return tuple(await self._run(self._in_tx, False, self._journal_sync, after, limit))

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
        canonical.check_id(plan.artifact_id, "plan.artifact_id")
        head = self._head_sync(plan.artifact_id)
        base_view: ManifestView | None = None
        if plan.base is None:
            if head is not None:
                raise RevisionConflictError(f"Memory {plan.artifact_id!r} already exists")
            if plan.revision != 1:
                raise InvalidInputError("plan.revision", "a new Memory starts at Revision 1")
        else:
            if plan.base.artifact_id != plan.artifact_id or plan.revision != plan.base.revision + 1:
                raise InvalidInputError("plan", "revision must be base.revision + 1")
            if head is None:
                raise ArtifactNotFoundError(f"no Memory Artifact {plan.artifact_id!r}")
            if head != plan.base.revision:
                raise RevisionConflictError(
                    f"Memory {plan.artifact_id!r} is at Revision {head}, not {plan.base.revision}"
                )
            base_view = self._parsed_sync(plan.artifact_id, plan.base.revision).view
        # 2. canonical validation of the planned content
        validated, changed_items = self._validate_plan_sync(plan, base_view)
        # 3. evidence exists exactly as cited
        self._validate_evidence_sync(plan)
        # 4. Revision, head CAS, versions
        encoding, stored = revision_codec.FULL, plan.content_bytes
        if self.supports_revision_encodings:
            encoding, stored = revision_codec.encode(
                plan.revision, plan.content, plan.content_bytes, changed_items
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
        # 5. projections: only what changed
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
        self._pending_cache = (
            plan.ref,
            _ParsedRevision(
                MemoryRevision(
                    plan.ref,
                    MemoryContent(validated.manifest, tuple(plan.content.changes)),
                    plan.content_hash,
                    plan.lineage,
                ),
                validated,
            ),
        )
        return plan.ref

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

    def _validate_plan_sync(
        self, plan: MemoryPlan, base: ManifestView | None
    ) -> tuple[ManifestView, dict[str, MemoryManifestEntry]]:
        """Re-derive the Revision from the stored base, the changes and the new versions,
        and require the plan's bytes to be exactly that. Returns the new manifest view.

        Cost is proportional to the changes, not to the Memory: the manifest is spliced
        from the base's cached item bytes and compared as bytes.
        """
        content = plan.content
        if not content.changes:
            raise InvalidInputError("plan.changes", "a Revision must change something")
        if content.schema != MEMORY_SCHEMA or content.manifest.format != MANIFEST_FORMAT:
            raise InvalidInputError("plan.content", "unknown schema or manifest format")
        ckeys = [c.entry_id.encode() for c in content.changes]
        if ckeys != sorted(ckeys) or len(set(ckeys)) != len(ckeys):
            raise InvalidInputError("changes", "must be sorted by UTF-8 entry_id, one per entry")
        new = {v.entry_version_id: v for v in plan.new_versions}
        if len(new) != len(plan.new_versions):
            raise InvalidInputError("plan.new_versions", "repeat an entry version id")
        predecessors = [v.previous_version_id for v in new.values() if v.previous_version_id]
        stored = {
            v.entry_version_id: v
            for v in self._entry_versions_sync(
                predecessors
                + [
                    c.to_entry_version_id
                    for c in content.changes
                    if c.op == "reactivate" and c.to_entry_version_id
                ]
            )
        }
        if self._entry_versions_sync(list(new)):
            raise RevisionConflictError("an entry version id of this plan already exists")
        items: dict[str, MemoryManifestEntry] = {}
        named: set[str] = set()
        for change in content.changes:
            if not isinstance(change, MemoryChange):
                raise InvalidInputError("changes", "must be MemoryChange values")
            canonical.check_id(change.entry_id, "changes.entry_id")
            if (
                change.reason is not None
                and canonical.normalize_reason(change.reason) != change.reason
            ):
                raise InvalidInputError("changes.reason", "is not normalized")
            old = base.get(change.entry_id) if base is not None else None
            items[change.entry_id] = self._changed_item(change, old, new, stored, plan)
            if change.op in ("add", "revise"):
                named.add(change.to_entry_version_id or "")
        if set(new) != named:
            raise InvalidInputError(
                "plan.new_versions", "must be exactly the added and revised versions"
            )
        added = [c.entry_id for c in content.changes if c.op == "add"]
        taken = self._entry_ids_elsewhere_sync(plan.artifact_id, added) if added else set()
        if taken:
            raise InvalidInputError(
                "entry_version.entry_id", f"{sorted(taken)[0]!r} belongs to another Memory"
            )
        expected = splice(base, items)
        body = canonical.content_bytes(
            MemoryContent(expected.manifest, content.changes), expected.joined
        )
        if body != plan.content_bytes:
            raise InvalidInputError(
                "plan.content", "is not the base manifest with exactly these changes applied"
            )
        # equal bytes: a plan the planner built knows its hash matches (no second SHA-256)
        if not plan.content_hash_matches:
            raise InvalidInputError("plan.content_hash", "does not match the content")
        # Projection rows: exactly the active entries that were added, revised or reactivated.
        if len({r.entry_id for r in plan.upserts}) != len(plan.upserts) or len(
            set(plan.deletes)
        ) != len(plan.deletes):
            raise InvalidInputError("plan.projection", "names an entry twice")
        want_up = {c.entry_id for c in content.changes if c.op != "deactivate"}
        want_del = {c.entry_id for c in content.changes if c.op == "deactivate"}
        if {r.entry_id for r in plan.upserts} != want_up or set(plan.deletes) != want_del:
            raise InvalidInputError("plan.projection", "must cover exactly the changed entries")
        for r in plan.upserts:
            item = items[r.entry_id]
            if (item.entry_version_id, item.entry_content_hash) != (
                r.entry_version_id,
                r.entry_content_hash,
            ):
                raise InvalidInputError(
                    "plan.projection", f"row of {r.entry_id!r} is not the manifest's"
                )
            version = new.get(r.entry_version_id) or stored.get(r.entry_version_id)
            if version is None or version.text != r.text:
                raise InvalidInputError("plan.projection", "text differs from the entry version")
            if r.searchable_text != self._db_analyzer.searchable_text(r.text):
                raise InvalidInputError(
                    "plan.projection",
                    f"searchable_text is not the output of analyzer {self._db_analyzer.version!r}",
                )
        return expected, items

    @staticmethod
    def _changed_item(
        change: MemoryChange,
        old: MemoryManifestEntry | None,
        new: dict[str, MemoryEntryVersion],
        stored: dict[str, MemoryEntryVersion],
        plan: MemoryPlan,
    ) -> MemoryManifestEntry:
        """The manifest item a change produces, after checking it against the base."""
        op = change.op
        bad = InvalidInputError("changes", f"{op} of {change.entry_id!r} does not fit the base")
        if op in ("add", "revise"):
            v = new.get(change.to_entry_version_id or "")
            if v is None or v.entry_id != change.entry_id:
                raise bad
            if v.memory_artifact_id != plan.artifact_id or v.created_in_revision != plan.revision:
                raise InvalidInputError("entry_version", "belongs to another Memory or Revision")
            _check_canonical_version(v)
            if not canonical.version_hash_ok(v):
                raise InvalidInputError(
                    "entry_version.entry_content_hash", "does not match content"
                )
            if op == "add":
                if old is not None or change.from_entry_version_id is not None:
                    raise bad
                if v.version != 1 or v.previous_version_id is not None:
                    raise InvalidInputError("entry_version", "a first version is 1 of a new entry")
            else:
                if (
                    old is None
                    or old.state != "active"
                    or (change.from_entry_version_id != old.entry_version_id)
                ):
                    raise bad
                prev = stored.get(v.previous_version_id or "")
                if (
                    prev is None
                    or prev.entry_version_id != old.entry_version_id
                    or prev.entry_id != v.entry_id
                    or prev.memory_artifact_id != v.memory_artifact_id
                    or v.version != prev.version + 1
                ):
                    raise InvalidInputError(
                        "entry_version.previous_version_id",
                        "must be the version of the same entry in the base manifest",
                    )
                if v.entry_content_hash == prev.entry_content_hash:
                    raise InvalidInputError("entry_version", "identical content is a no-op")
                if not set(prev.sources) <= set(v.sources) or not set(prev.artifacts) <= set(
                    v.artifacts
                ):
                    raise InvalidInputError(
                        "entry_version", "a revision keeps its predecessor's evidence"
                    )
            return MemoryManifestEntry(
                v.entry_id, v.entry_version_id, v.entry_content_hash, "active"
            )
        if old is None:
            raise bad
        if op == "deactivate":
            if (
                old.state != "active"
                or change.from_entry_version_id != old.entry_version_id
                or change.to_entry_version_id is not None
            ):
                raise bad
            return attrs.evolve(old, state="inactive")
        if op == "reactivate":
            if (
                old.state != "inactive"
                or change.from_entry_version_id is not None
                or change.to_entry_version_id != old.entry_version_id
            ):
                raise bad
            v = stored.get(old.entry_version_id)
            if v is None:
                raise IntegrityError(f"entry version {old.entry_version_id!r} is missing")
            _check_version_matches(v, old)
            return attrs.evolve(old, state="active")
        raise InvalidInputError("changes.op", f"unknown op {op!r}")

    def _validate_evidence_sync(self, plan: MemoryPlan) -> None:
        lineage_sources = set(plan.lineage.sources)
        lineage_artifacts = set(plan.lineage.artifacts)
        if lineage_sources:
            stored = {
                s.source_id: s.content_hash
                for _, s in self._get_sources_sync([r.source_id for r in lineage_sources])
            }
            for r in lineage_sources:
                if stored.get(r.source_id) != r.content_hash:
                    raise InvalidInputError(
                        "sources", f"Source {r.source_id!r} is not stored with that content"
                    )
        claimed = {a.ref: a for a in plan.evidence_artifacts}
        if set(claimed) != lineage_artifacts:
            raise InvalidInputError(
                "artifacts", "the lineage's Artifact refs must be the evidence Artifacts given"
            )
        for ref, a in claimed.items():
            rows = self._revision_rows_sync(ref.artifact_id, ref.revision - 1, ref.revision)
            if not rows or rows[0].revision != ref.revision:
                raise InvalidInputError("artifacts", f"no stored Artifact Revision {ref}")
            if (rows[0].family, rows[0].content_hash) != (a.family, a.content_hash):
                raise InvalidInputError(
                    "artifacts", f"Artifact {ref} is stored with another family or content hash"
                )
        for v in plan.new_versions:
            # entry evidence: operation evidence plus, for a revision, the predecessor's
            extra_s = set(v.sources) - lineage_sources
            extra_a = set(v.artifacts) - lineage_artifacts
            if extra_s or extra_a:
                prev = (
                    self._entry_versions_sync([v.previous_version_id])
                    if v.previous_version_id
                    else []
                )
                if (
                    not prev
                    or not extra_s <= set(prev[0].sources)
                    or not extra_a <= set(prev[0].artifacts)
                ):
                    raise InvalidInputError(
                        "entry.sources", "cites evidence outside the operation and its predecessor"
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
    ) -> dict[str, _ParsedRevision]:
        """The parsed head of every Memory the search names, read in its transaction.
        A :class:`CurrentHead` takes whatever the head is now; an ArtifactRef must be it
        (CapabilityNotSupportedError otherwise). ArtifactNotFoundError for no Memory."""
        manifests: dict[str, _ParsedRevision] = {}
        for m in memories:
            head = self._head_sync(m.artifact_id)
            if head is None:
                raise ArtifactNotFoundError(f"no Memory Artifact {m.artifact_id!r}")
            if isinstance(m, ArtifactRef) and head != m.revision:
                raise CapabilityNotSupportedError(
                    f"search needs current heads: Memory {m.artifact_id!r} is at Revision "
                    f"{head}, not {m.revision}"
                )
            manifests[m.artifact_id] = self._parsed_sync(m.artifact_id, head)
        return manifests

    def _search_sync(self, request: MemorySearchRequest) -> MemorySearchResult:
        manifests = self._heads_sync(request.memories)
        heads = [parsed.revision.ref for parsed in manifests.values()]
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
        channels: dict[str, list[tuple[str, str, str]]] = {}
        if mode in ("fts", "hybrid"):
            terms = query_bounds.search_terms(request.query, self._db_analyzer)
            channels["fts"] = []
            if terms:
                stream = self._fts_stream_sync(ids, terms, budget)
                channels["fts"] = self._channel_sync(
                    stream, budget, manifests, versions,
                    lambda c: admission.fts_admits(terms, c.searchable_text.split()),
                    stop_at_first_refusal=False,
                )
        if mode in ("vector", "hybrid"):
            assert request.query_vector is not None and self._profile is not None
            check_vector(request.query_vector, self._profile)
            stream = self._vector_stream_sync(ids, request.query_vector, budget)
            channels["vector"] = self._channel_sync(
                stream, budget, manifests, versions,
                lambda c: c.distance is not None and admission.vector_admits(c.distance),
                # admission is monotone in distance: no later candidate can pass
                stop_at_first_refusal=True,
            )
        hits = []
        for f in rrf.fuse(channels)[: request.limit]:
            v = versions[f.key[2]]
            hits.append(
                MemoryHit(
                    manifests[f.key[0]].revision.ref,
                    v.entry_id,
                    v.entry_version_id,
                    v.text,
                    f.score,
                    tuple(cast("list[Channel]", list(f.matched_by))),
                    v.kind,
                )
            )
        return MemorySearchResult(tuple(hits), mode, fallback)

    def _channel_sync(
        self,
        stream: Iterator[Candidate],
        budget: int,
        manifests: dict[str, _ParsedRevision],
        versions: dict[str, MemoryEntryVersion],
        admits: Callable[[Candidate], bool],
        *,
        stop_at_first_refusal: bool,
    ) -> list[tuple[str, str, str]]:
        """The first ``budget`` candidates of ``stream`` (the backend's order) that the
        head manifest trusts (active, same version, same content hash), whose stored
        version matches the manifest (canonical bytes hash to it) and that ``admits``
        accepts; as ``(memory_artifact_id, entry_id, entry_version_id)`` keys, with the
        versions read into ``versions``. Fewer only when the stream runs out."""
        out: list[tuple[str, str, str]] = []
        pending: list[Candidate] = []
        exhausted = False
        try:
            while len(out) < budget and not exhausted:
                # pull just enough candidates to fill the budget, then verify them in
                # one read; pull more only when some fail (damaged rows)
                while len(out) + len(pending) < budget:
                    c = next(stream, None)
                    if c is None:
                        exhausted = True
                        break
                    if not self._trusted(c, manifests):
                        continue
                    if not admits(c):
                        if stop_at_first_refusal:
                            exhausted = True
                            break
                        continue
                    pending.append(c)
                wanted = [c.entry_version_id for c in pending
                          if c.entry_version_id not in versions]
                if wanted:
                    versions.update(
                        (v.entry_version_id, v) for v in self._entry_versions_sync(wanted))
                for c in pending:
                    v = versions.get(c.entry_version_id)
                    item = manifests[c.artifact_id].by_entry[c.entry_id]
                    if v is None or v.memory_artifact_id != c.artifact_id:
                        continue
                    try:
                        _check_version_matches(v, item)
                    except IntegrityError:
                        continue
                    out.append((c.artifact_id, c.entry_id, c.entry_version_id))
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

    @staticmethod
    def _trusted(c: Candidate, manifests: dict[str, _ParsedRevision]) -> bool:
        parsed = manifests.get(c.artifact_id)
        item = parsed.by_entry.get(c.entry_id) if parsed else None
        return (
            item is not None
            and item.state == "active"
            and item.entry_version_id == c.entry_version_id
            and item.entry_content_hash == c.entry_content_hash
        )

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

    # -- offline rebuild ------------------------------------------------------------

    async def rebuild(
        self,
        model: Any = None,
        *,
        new_profile: EmbeddingProfile | None = None,
        analyzer: str | Analyzer | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        batch_size: int = 64,
    ) -> RebuildReport:
        """Rebuild every Memory's head, FTS and vector projection from the authoritative
        tables (Memory RFC, "Vector integrity and offline rebuilds").

        Writers are paused for the whole run (``WritesPausedError`` for them; a second
        rebuild is refused the same way) and resumed at the end, even on failure.
        Each Memory's active entries are re-validated (manifest membership, content hash,
        canonical bytes) and projected in one transaction per Memory. ``model`` (an
        EmbeddingModel whose profile matches, else ProfileMismatchError) embeds every
        active entry again. A vector is never removed because it cannot be refilled:
        without a model, when the model raises (anything: it is then unavailable for that
        batch) or when one of its vectors is refused (``prepare_vector``), the stored
        vector is kept if it still matches the entry and profile; every entry left
        without one is listed in ``report.missing`` and the rebuild goes on.
        ``new_profile`` migrates first and needs ``model`` of that profile
        (InvalidInputError otherwise; CapabilityNotSupportedError, with nothing changed,
        when the model fails a probe): the vector projection is dropped and recreated
        for that profile, which is stored as the deployment's. ``progress`` is called as
        ``progress(done, total, artifact_id)``.
        ``analyzer`` (a version name; InvalidInputError for an unknown one) migrates the
        full-text projection to that analyzer (Memory RFC, "Normalization, hashing, and
        the search analyzer"): every head row is re-analyzed and re-indexed, and the
        version is recorded once all are done (until then the database records no known
        version, so a crashed migration refuses to open until a rebuild completes).
        Without it a database built by an unknown analyzer migrates to the backend's
        choice or the default.
        """
        if new_profile is not None and (model is None or model.profile != new_profile):
            raise InvalidInputError(
                "model", "a migration needs the embedding model of the new profile "
                "(it refills every vector)"
            )
        target = _resolve_analyzer(analyzer)
        if not self._opened:
            self._analyzer_migration = True
        await self._run(self._in_tx, True, self._pause_sync)
        try:
            await self._run(self._in_tx, True, self._migrate_analyzer_sync, target)
            if new_profile is not None:
                await self._probe_model(model, new_profile)  # before any vector is dropped
                await self._run(self._in_tx, True, self._migrate_sync, new_profile)
            profile = self._profile
            if model is not None and (profile is None or model.profile != profile):
                raise ProfileMismatchError(
                    "the embedding model's profile differs from the database's; "
                    "migrate with a new profile first"
                )
            heads = await self._run(self._in_tx, False, self._all_heads_sync)
            report = RebuildReport()
            for done, (artifact_id, revision) in enumerate(heads, start=1):
                try:
                    rows = await self._run(
                        self._in_tx, False, self._rebuild_rows_sync,
                        ArtifactRef(artifact_id, revision),
                    )
                except IntegrityError as exc:
                    # authoritative data of this Memory fails its checks: report it, leave
                    # its projection alone, and go on with the others
                    report.corrupt.append((artifact_id, str(exc)))
                    if progress is not None:
                        progress(done, len(heads), artifact_id)
                    continue

                vectors: list[VectorRow | None] = [None] * len(rows)
                if profile is not None and self._db_caps and self._db_caps.vector:
                    vectors = await self._rebuild_vectors(
                        ArtifactRef(artifact_id, revision), rows, model, profile, batch_size,
                        report,
                    )
                await self._run(
                    self._in_tx,
                    True,
                    self._write_rebuild_sync,
                    ArtifactRef(artifact_id, revision),
                    rows,
                    vectors,
                )
                report.memories += 1
                report.entries += len(rows)
                report.vectors += sum(1 for v in vectors if v is not None)
                if progress is not None:
                    progress(done, len(heads), artifact_id)
            if profile is not None and self._db_caps and self._db_caps.vector:
                for artifact_id, revision in heads:
                    ok = await self._run(
                        self._in_tx, False, self._complete_sync, artifact_id, revision
                    )
                    if not ok:
                        report.incomplete.append(artifact_id)
            await self._run(self._in_tx, True, self._mark_rebuilt_sync)
            report.analyzer = self._db_analyzer.version
            return report
        finally:
            self._analyzer_migration = False
            await self._run(self._in_tx, True, self._meta_set_sync, "writes_paused", None)

    @staticmethod
    async def _probe_model(model: Any, profile: EmbeddingProfile) -> None:
        try:
            (raw,) = (await model.embed(("powercontext migration probe",))).vectors
            prepare_vector(raw, profile)
        except Exception as exc:
            raise CapabilityNotSupportedError(
                f"the new embedding model is unavailable ({type(exc).__name__}: {exc}); "
                "nothing was migrated"
            ) from exc

    async def _rebuild_vectors(
        self,
        ref: ArtifactRef,
        rows: list[ProjectionRow],
        model: Any,
        profile: EmbeddingProfile,
        batch_size: int,
        report: RebuildReport,
    ) -> list[VectorRow | None]:
        """A vector per row: a fresh one from ``model``; else (no model, the model
        failed, the vector was refused) the stored one when it still matches the
        profile and the entry; else None, reported in ``report.missing``. A vector is
        never dropped because it could not be refilled (Memory RFC, "Vector integrity
        and offline rebuilds")."""
        out: list[VectorRow | None] = [None] * len(rows)
        why: dict[int, str] = {}
        if model is None:
            why = dict.fromkeys(range(len(rows)), "no embedding model was given")
        for start in range(0, len(rows) if model is not None else 0, batch_size):
            chunk = rows[start : start + batch_size]
            try:
                raw = tuple((await model.embed(tuple(r.text for r in chunk))).vectors)
                if len(raw) != len(chunk):
                    raise InvalidInputError(
                        "vectors", f"{len(raw)} vectors for {len(chunk)} texts")
            except Exception as exc:  # any model failure: the model is unavailable
                for i in range(start, start + len(chunk)):
                    why[i] = f"the embedding model failed: {type(exc).__name__}: {exc}"
                continue
            for i, (r, vec) in enumerate(zip(chunk, raw, strict=True), start=start):
                try:
                    good = prepare_vector(vec, profile)
                except InvalidInputError as exc:
                    why[i] = f"the embedding model returned a refused vector: {exc}"
                    continue
                out[i] = VectorRow(
                    canonical.embedding_content_hash(profile, r.entry_content_hash), good
                )
        if why:
            stored = await self._run(self._in_tx, False, self._head_vectors_sync,
                                     ref.artifact_id)
            for i, reason in sorted(why.items()):
                r = rows[i]
                kept = stored.get(r.entry_version_id)
                if kept is not None and kept.embedding_content_hash == (
                    canonical.embedding_content_hash(profile, r.entry_content_hash)
                ):
                    try:
                        check_vector(kept.vector, profile)
                        out[i] = kept
                        report.kept += 1
                        continue
                    except InvalidInputError:
                        pass
                report.missing.append((ref.artifact_id, r.entry_id, reason))
        return out

    def _mark_hash_format_sync(self) -> str:
        stored = self._meta_get_sync(HASH_FORMAT_KEY)
        if stored is None:
            try:
                existing = bool(self._all_heads_sync())
            except CapabilityNotSupportedError:
                existing = False  # an adapter without the listing has no old databases
            stored = canonical.LEGACY_HASH_FORMAT if existing else canonical.HASH_FORMAT
            self._meta_set_sync(HASH_FORMAT_KEY, stored)
        return stored

    async def rehash(self) -> RehashReport:
        """Upgrade a database written with the pre-spec Artifact content hash (Memory RFC,
        "Normalization, hashing, and the search analyzer"; ``memory rebuild --rehash``).

        Such a database opens with :class:`UpgradeRequiredError` naming this command, so
        no Revision is ever reported corrupt or silently re-hashed. This call pauses
        writers (``WritesPausedError`` for them and for a second rebuild), then in one
        write transaction recomputes each Memory Revision's canonical MemoryContent bytes
        (decoding stored deltas), and where the stored hash equals the legacy formula
        SHA-256("powercontext:artifact-content:v1\\0" + bytes) rewrites only the stored
        ``content_hash`` to SHA-256(bytes); content, lineage and entry versions are never
        touched. A Revision matching neither formula is reported in ``corrupt`` and left
        as it was. The marker ``hash_format`` is set to the spec's format in the same
        transaction, and writers are resumed. Vector projections are not rewritten: their
        embedding hashes used a prefix too, so they no longer verify and vector search
        reports the projection incomplete until ``rebuild`` with the model refills it.
        Idempotent: on a database already in the spec's format it returns
        ``RehashReport(already=True)``."""
        self._allow_legacy = True
        try:
            await self._run(self._in_tx, True, self._pause_sync)
            try:
                report = await self._run(self._in_tx, True, self._rehash_sync)
            finally:
                await self._run(self._in_tx, True, self._meta_set_sync, "writes_paused", None)
        finally:
            self._allow_legacy = False
        self._legacy_hashes = False
        with self._cache_lock:
            self._manifest_cache.clear()
            self._complete_cache.clear()
        return report

    def _rehash_sync(self) -> RehashReport:
        report = RehashReport()
        if self._meta_get_sync(HASH_FORMAT_KEY) == canonical.HASH_FORMAT:
            report.already = True
            return report
        for artifact_id, head in self._all_heads_sync():
            base: ManifestView | None = None
            for row in self._revision_rows_sync(artifact_id, 0, head):
                try:
                    body, base = self._canonical_body(row, base)
                except (IntegrityError, ValueError, KeyError, TypeError) as exc:
                    report.corrupt.append((artifact_id, row.revision, str(exc)))
                    base = None
                    continue
                new = canonical.artifact_content_hash(body)
                if row.content_hash == new:
                    report.current += 1
                elif row.content_hash == canonical.legacy_artifact_content_hash(body):
                    if not self._set_revision_hash_sync(
                        artifact_id, row.revision, row.content_hash, new
                    ):
                        raise RevisionConflictError(
                            f"Revision {row.revision} of {artifact_id!r} changed during rehash"
                        )
                    report.rewritten += 1
                else:
                    report.corrupt.append((
                        artifact_id, row.revision,
                        "stored content matches its content hash under neither formula",
                    ))
        self._meta_set_sync(HASH_FORMAT_KEY, canonical.HASH_FORMAT)
        self._bump_generation_sync()
        return report

    @staticmethod
    def _canonical_body(
        row: RevisionRow, base: ManifestView | None
    ) -> tuple[bytes, ManifestView]:
        """The canonical MemoryContent bytes a stored row holds, and its manifest view."""
        if revision_codec.is_full(row.encoding):
            body = revision_codec.decode_full(row.encoding, row.content)
            content = canonical.parse_content(body)
            if canonical.content_bytes(content) != body:
                raise IntegrityError("content is not canonical")
            return body, manifest_view(content.manifest)
        if base is None:
            raise IntegrityError("a delta without its base")
        items, changes = revision_codec.decode_delta(row.content)
        view = splice(base, items)
        return canonical.content_bytes(MemoryContent(view.manifest, changes), view.joined), view

    def _migrate_analyzer_sync(self, target: Analyzer | None) -> None:
        """Start moving the FTS projection to ``target`` (None: the analyzer chosen at
        open): until :meth:`_mark_rebuilt_sync` the database records no known version."""
        target = target or self._db_analyzer
        stored = self._meta_get_sync("analyzer_version")
        if stored == target.version:
            return
        self._meta_set_sync("analyzer_version", f"incomplete-migration-to-{target.version}")
        self._analyzer = target
        if self._db_caps is not None and self._db_caps.fts:
            self._fts_off_sync(stored)

    def _mark_rebuilt_sync(self) -> None:
        """Every FTS projection now comes from the backend's analyzer: record it."""
        self._meta_set_sync("analyzer_version", self._db_analyzer.version)
        if self._db_caps is not None and not self._db_caps.fts:
            reasons = tuple(r for r in self._db_caps.reasons if "FTS projection" not in r)
            self._db_caps = attrs.evolve(self._db_caps, fts=True,
                                         hybrid=self._db_caps.vector, reasons=reasons)

    def _pause_sync(self) -> None:
        if self._meta_get_sync("writes_paused"):
            raise WritesPausedError(
                "writes are already paused: another rebuild is running "
                "(or one crashed; `powercontext memory rebuild --resume`)"
            )
        self._meta_set_sync("writes_paused", "rebuild")

    async def resume_writes(self) -> None:
        """Clear a pause left by a rebuild (or rehash) that crashed; works on a database
        that still needs ``rehash()`` (it reads no Revision)."""
        self._allow_legacy = True
        try:
            await self._run(self._in_tx, True, self._meta_set_sync, "writes_paused", None)
        finally:
            self._allow_legacy = False

    async def inventory(self) -> dict[str, Any]:
        """What the database holds, read in one snapshot: ``heads`` (every Memory's
        current head, a tuple of ArtifactRef sorted by id), ``sources`` (how many Sources
        are stored), ``analyzer_version`` (the Analyzer version its FTS projection was
        built with; None when unrecorded) and ``writes_paused``.
        CapabilityNotSupportedError when the adapter cannot list its heads."""
        return await self._run(self._in_tx, False, self._inventory_sync)

    def _inventory_sync(self) -> dict[str, Any]:
        heads = tuple(ArtifactRef(a, r) for a, r in self._all_heads_sync())
        sources, after = 0, 0
        while page := self._journal_sync(after, 1000):
            sources += len(page)
            after = page[-1][0]
        return {"heads": heads, "sources": sources,
                "analyzer_version": self._meta_get_sync("analyzer_version"),
                "writes_paused": bool(self._meta_get_sync("writes_paused"))}

    def _migrate_sync(self, profile: EmbeddingProfile) -> None:
        self._reset_vectors_sync(profile)
        self._bump_generation_sync()
        self._meta_set_sync("embedding_profile", canonical.canonical_dumps(profile).decode())
        self._profile = profile
        if self._db_caps is not None:
            self._db_caps = attrs.evolve(
                self._db_caps,
                embedding_profile=profile,
                vector=self._db_caps.fts,
                hybrid=self._db_caps.fts,
            )
        with self._cache_lock:
            self._complete_cache.clear()

    def _rebuild_rows_sync(self, ref: ArtifactRef) -> list[ProjectionRow]:
        parsed = self._parsed_sync(ref.artifact_id, ref.revision)
        active = [
            e.entry_id for e in parsed.revision.content.manifest.entries if e.state == "active"
        ]
        versions = self._versions_checked_sync(parsed.by_entry, active)
        return [
            ProjectionRow(
                v.entry_id,
                v.entry_version_id,
                v.entry_content_hash,
                self._db_analyzer.searchable_text(v.text),
                v.text,
            )
            for v in (versions[e] for e in active)
        ]

    def _write_rebuild_sync(
        self, ref: ArtifactRef, rows: list[ProjectionRow], vectors: list[VectorRow | None]
    ) -> None:
        if self._head_sync(ref.artifact_id) != ref.revision:
            raise RevisionConflictError(f"Memory {ref.artifact_id!r} moved during the rebuild")
        self._clear_projection_sync(ref.artifact_id)
        if rows:
            self._insert_projections_sync(ref.artifact_id, ref.revision, rows, vectors)
        self._bump_generation_sync()
        self._invalidate(ref.artifact_id)

    def _bump_generation_sync(self) -> None:
        current = int(self._meta_get_sync("projection_generation") or "0")
        self._meta_set_sync("projection_generation", str(current + 1))


def _resolve_analyzer(choice: str | Analyzer | None) -> Analyzer | None:
    """An explicit analyzer choice as a registered Analyzer (InvalidInputError when
    unknown), or None for no choice."""
    if choice is None or isinstance(choice, Analyzer):
        return choice
    return analyzers.get(choice)


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


def _check_canonical_version(v: MemoryEntryVersion) -> None:
    """A new entry version in canonical form: ASCII ids, integer version, NFC-trimmed
    text within limits, normalized kind, sorted and deduplicated references of the right
    types, and no secret. The hash alone cannot prove this: it is computed over whatever
    values the plan holds."""
    from powercontext.core.secrets import find_secret

    for field in ("memory_artifact_id", "entry_id", "entry_version_id"):
        canonical.check_id(getattr(v, field), f"entry_version.{field}")
    if v.previous_version_id is not None:
        canonical.check_id(v.previous_version_id, "entry_version.previous_version_id")
    for field in ("version", "created_in_revision"):
        value = getattr(v, field)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInputError(f"entry_version.{field}", "must be an integer >= 1")
    if canonical.normalize_kind(v.kind, "entry_version.kind") != v.kind:
        raise InvalidInputError("entry_version.kind", "is not normalized")
    if canonical.normalize_text(v.text, "entry_version.text") != v.text:
        raise InvalidInputError("entry_version.text", "is not NFC and trimmed")
    if find_secret(v.text) is not None:
        raise InvalidInputError("entry_version.text", "looks like a secret")
    if not isinstance(v.sources, tuple) or not isinstance(v.artifacts, tuple):
        raise InvalidInputError("entry_version", "references must be tuples")
    for r in v.sources:
        if not isinstance(r, SourceRef):
            raise InvalidInputError("entry_version.sources", "must be SourceRef values")
        canonical.check_id(r.source_id, "entry_version.sources.source_id")
        canonical.check_hash(r.content_hash, "entry_version.sources.content_hash")
    for a in v.artifacts:
        if not isinstance(a, ArtifactRef):
            raise InvalidInputError("entry_version.artifacts", "must be exact ArtifactRefs")
        canonical.check_json_int(a.revision, "entry_version.artifacts.revision", 1)
        canonical.check_id(a.artifact_id, "entry_version.artifacts.artifact_id")
    if canonical.sort_source_refs(v.sources) != v.sources or canonical.sort_artifact_refs(
        v.artifacts
    ) != v.artifacts:
        raise InvalidInputError("entry_version", "references must be sorted and unique")


def _check_version_matches(v: MemoryEntryVersion, item: MemoryManifestEntry) -> None:
    if v.entry_id != item.entry_id or v.entry_version_id != item.entry_version_id:
        raise IntegrityError(f"entry version {v.entry_version_id!r} is not the manifest's")
    if v.entry_content_hash != item.entry_content_hash or not canonical.version_hash_ok(v):
        raise IntegrityError(
            f"entry version {v.entry_version_id!r}: content does not match the manifest hash"
        )


def _profile_from_json(text: str) -> EmbeddingProfile:
    import json

    d = json.loads(text)
    return EmbeddingProfile(
        d["profile_id"], d["model"], int(d["dimension"]), d["distance"], d["normalization"]
    )
