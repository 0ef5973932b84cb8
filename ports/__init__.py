"""The interfaces the application drives (Memory RFC, "Code structure and abstraction
boundaries"): typing.Protocols only, no implementation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

from powercontext.core.analyzer import Analyzer
from powercontext.core.models import (
    ArtifactRef,
    EmbeddingProfile,
    EmbeddingResult,
    EmbeddingVector,
    MemoryCapabilities,
    MemoryEntryInput,
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
from powercontext.core.secrets import SecretFinding

__all__ = [
    "CandidatePipeline",
    "EmbeddingModel",
    "MemoryBackend",
    "MemoryInventory",
    "MemoryRebuild",
    "MemoryUnitOfWork",
    "SecretScanner",
    "SourceStore",
]


@runtime_checkable
class EmbeddingModel(Protocol):
    """Turns texts into unit vectors of the deployment's fixed profile (Memory RFC,
    "EmbeddingModel"). ``embed`` returns one vector per text, in input order.

    Consumers trust nothing a model returns: any exception from ``embed`` (a
    ``BackendError``, but also a third-party ``ConnectionError``, ``TimeoutError``, ...)
    means "model unavailable", and every vector goes through
    :func:`powercontext.core.vectors.prepare_vector`, which normalises a non-unit vector
    under a unit profile and refuses an empty, zero, non-finite or wrong-dimension
    vector for its own entry only (Memory RFC, "Backend capabilities" and "Vector
    integrity and offline rebuilds")."""

    @property
    def profile(self) -> EmbeddingProfile: ...

    async def embed(self, texts: tuple[str, ...]) -> EmbeddingResult: ...


@runtime_checkable
class SecretScanner(Protocol):
    """Finds secrets in text before anything is stored (Memory RFC, "Memory admission
    rules": never save secrets). ``scan`` is pure CPU work, never a network call, and
    returns every finding (rule, description, 1-based line, span when known) in text
    order; it never raises on any string. The service refuses or redacts with it."""

    def scan(self, text: str) -> tuple[SecretFinding, ...]: ...


class MemoryUnitOfWork(Protocol):
    """One atomic write: the Revision, entry versions, head projection, FTS and vectors
    commit together or not at all (Memory RFC, "Concurrency and transactions")."""

    async def commit(
        self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector] | None = None,
        *, key: str | None = None,
    ) -> ArtifactRef:
        """Commit ``plan``; ``vectors`` maps entry_version_id to its vector for the
        entries the plan projects. Raises RevisionConflictError when the base is stale.

        ``key`` (only with a plan that creates a Memory): the business key stored for the
        new Memory in the same transaction (ARCHITECTURE.md, Decisions: "Keys live in the
        database"). A key another writer stored first is a RevisionConflictError and
        nothing commits: the caller rereads the key and writes to that Memory's head.
        InvalidInputError (field ``key``) for a malformed key or a plan with a base."""
        ...

    async def rollback(self) -> None: ...


class SourceStore(Protocol):
    """Immutable Sources with stable SourceRefs and a journal position per store."""

    async def put_sources(self, sources: Sequence[Source]) -> tuple[int, ...]:
        """Persist Sources (idempotent for identical ones); returns journal positions.
        A different Source under an existing id raises ValueError; a Source holding a
        secret in its content, uri or metadata raises SecretDetectedError (a ValueError)
        and nothing is stored (Sources are append-only)."""
        ...

    async def get_sources(self, source_ids: Sequence[str]) -> tuple[Source, ...]:
        """The stored Sources; ArtifactNotFoundError names a missing id."""
        ...

    async def journal(self, after: int = 0, limit: int = 100) -> tuple[tuple[int, Source], ...]:
        """Sources stored after journal position ``after``, in position order."""
        ...


class MemoryBackend(SourceStore, Protocol):
    """Capability discovery, exact reads and retrieval (Memory RFC, "MemoryBackend")."""

    async def capabilities(self) -> MemoryCapabilities: ...

    async def analyzer(self) -> Analyzer:
        """The database's search analyzer, whose searchable_text every projection row of a
        plan must carry (Memory RFC, "Normalization, hashing, and the search analyzer")."""
        ...

    def begin(self) -> AbstractAsyncContextManager[MemoryUnitOfWork]: ...

    async def head(self, artifact_id: str) -> ArtifactRef | None: ...

    async def load_revision(self, ref: ArtifactRef) -> MemoryRevision: ...

    async def load_entry_versions(
        self, ref: ArtifactRef, entry_ids: Sequence[str] | None = None
    ) -> dict[str, MemoryEntryVersion]:
        """The versions the manifest of ``ref`` points to, by entry_id (all when None)."""
        ...

    async def changes(
        self, memory: ArtifactRef, since_revision: int | None
    ) -> tuple[MemoryRevisionChanges, ...]: ...

    async def search(self, request: MemorySearchRequest) -> MemorySearchResult: ...

    async def memory_key(self, key: str) -> str | None:
        """The Memory Artifact id the business ``key`` (e.g. ``repo:/abs/path``) names,
        or None. Keys are stored in the database (the unit of work writes them with the
        Memory they name), so every process and host opening it sees the same ones;
        compared in NFC form (:func:`powercontext.core.keys.normalize_key`,
        InvalidInputError field ``key``), exactly (case and bytes)."""
        ...

    async def memory_keys(self) -> dict[str, str]:
        """Every stored business key -> Memory Artifact id, sorted by key."""
        ...

    async def import_memory_keys(self, mapping: Mapping[str, str]) -> dict[str, str]:
        """Store, in one transaction, the keys of ``mapping`` (key -> Artifact id) that
        are not stored yet and name an existing Memory (a stored key keeps its Memory;
        idempotent). Returns the ones this call stored. InvalidInputError for a
        malformed key or id, before anything is stored."""
        ...

    async def expand(self, hits: Sequence[MemoryHit]) -> tuple[MemoryEntryVersion, ...]: ...

    async def close(self) -> None: ...


class CandidatePipeline(Protocol):
    """Proposes untrusted candidates from persisted evidence (Memory RFC, "Candidate
    generation and model-free fallback"). Runs outside any transaction."""

    async def extract(
        self,
        sources: tuple[Source, ...],
        current_entries: tuple[MemoryEntryVersion, ...],
        providers: tuple[str, ...] | None = None,
    ) -> tuple[MemoryEntryInput, ...]: ...


@runtime_checkable
class MemoryRebuild(Protocol):
    """The offline-rebuild capability (Memory RFC, "Vector integrity and offline
    rebuilds"): a backend that can re-derive every projection from its authoritative
    tables implements it; the CLI asks ``isinstance(backend, MemoryRebuild)`` and a
    backend without it answers ``memory rebuild`` with a clear refusal. The contract
    kit runs its rebuild tests only for backends that declare it.

    Every method pauses writers while it runs (``WritesPausedError`` for writers and for
    a second rebuild) and resumes them at the end, even on failure."""

    def allow_analyzer_migration(self) -> None:
        """Let the next open accept a database whose FTS projection was built by another
        Analyzer version (``AnalyzerMismatchError`` otherwise): the rebuild migrates it."""
        ...

    async def rebuild(
        self,
        model: Any = None,
        *,
        new_profile: EmbeddingProfile | None = None,
        analyzer: str | Analyzer | None = None,
        progress: Any = None,
        batch_size: int = 64,
    ) -> RebuildReport:
        """Rebuild every Memory's head, FTS and vector projection from the authoritative
        tables, one transaction per Memory. ``model``: an EmbeddingModel or None (stored
        vectors are kept); ``new_profile``: migrate to this embedding profile;
        ``analyzer``: the Analyzer version to rebuild FTS with; ``progress(done, total,
        artifact_id)`` after each Memory; ``batch_size`` texts per embed call."""
        ...

    async def rehash(self) -> RehashReport:
        """Rewrite Revisions stored with the pre-spec Artifact content hash to the spec's
        formula, in one write transaction (``memory rebuild --rehash``)."""
        ...

    async def resume_writes(self) -> None:
        """Clear a pause left by a rebuild or rehash that crashed."""
        ...


@runtime_checkable
class MemoryInventory(Protocol):
    """Listing capability: a backend that can enumerate what it holds (``memory list``,
    ``info``). A backend without it gets CapabilityNotSupportedError from those commands."""

    async def inventory(self) -> dict[str, Any]:
        """What the database holds, in one snapshot: ``heads`` (tuple of ArtifactRef by
        id), ``sources`` (count), ``analyzer_version`` (str or None), ``writes_paused``
        (bool). CapabilityNotSupportedError when the adapter cannot list its heads."""
        ...
