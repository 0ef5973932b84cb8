"""MemoryService: the public async facade of the Memory family (Memory RFC,
"Code structure and abstraction boundaries": remember, forget, reactivate, organize,
changes, search, expand, and Handoff citations).

The service resolves modes, reads the exact base, asks the pure planners in
:mod:`powercontext.core.planning` for a plan, embeds changed texts outside the
transaction, and hands the plan to the backend's unit of work. A thin facade over one
collaborator per concept, each given what it needs when the service is built: business
keys (:class:`~powercontext.business_keys.BusinessKeys`), the secret check
(:class:`~powercontext.secret_check.SecretCheck`), ids
(:class:`~powercontext.ids.IdFactory`), the embedding model
(:class:`~powercontext.memory_embedding.MemoryEmbedding`), reads
(:class:`~powercontext.memory_reads.MemoryReads`), citations
(:class:`~powercontext.citations.Citations`), search
(:class:`~powercontext.memory_search.MemorySearch`) and the
remember/forget/reactivate/organize pipeline
(:class:`~powercontext.memory_writes.MemoryWrites`).
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Self

from powercontext.business_keys import BusinessKeys
from powercontext.citations import Citations
from powercontext.core import planning
from powercontext.core.errors import CommitOutcomeUnknownError
from powercontext.core.models import (
    Artifact,
    ArtifactRef,
    CurrentHead,
    HandoffCitation,
    MemoryCapabilities,
    MemoryEntryInput,
    MemoryEntryVersion,
    MemoryHit,
    MemoryRevision,
    MemoryRevisionChanges,
    MemorySearchResult,
    SearchMode,
    Source,
)
from powercontext.ids import IdFactory
from powercontext.memory_embedding import MemoryEmbedding
from powercontext.memory_reads import MemoryReads
from powercontext.memory_search import MAX_SEARCH_LIMIT, MemorySearch
from powercontext.memory_writes import MemoryWrites, RememberMode
from powercontext.ports import CandidatePipeline, EmbeddingModel, MemoryBackend, SecretScanner
from powercontext.secret_check import SecretCheck

__all__ = ["MAX_SEARCH_LIMIT", "MemoryService", "RememberMode"]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MemoryService:
    """The Memory family service.

    ``backend`` implements :class:`powercontext.ports.MemoryBackend`;
    ``embedding_model`` (optional) embeds entries and queries for vector and hybrid
    search; ``candidate_pipeline`` (optional) serves ``remember(mode="extract")``.
    ``secret_scanner`` (optional; default: the core rules plus detect-secrets, see
    :mod:`powercontext.adapters.secret_scanner`) refuses secrets before anything is stored.
    ``clock`` (milliseconds) and ``entropy`` (n -> n random bytes) feed the id factory.
    ``key_importer`` (optional) runs once, before the first use of business keys (the
    runtime imports the keys of an earlier release's JSON manifest with it).
    ``sleep`` (an awaitable of seconds; default :func:`asyncio.sleep`) waits between the
    retries of a write through a business key (:attr:`KEY_WRITE_ATTEMPTS`).
    An async context manager: leaving it closes the backend.
    """

    #: How many times a write through a business key rereads the key and the head
    #: after a concurrent writer moved them (each retry means another write landed).
    KEY_WRITE_ATTEMPTS = MemoryWrites.KEY_WRITE_ATTEMPTS

    def __init__(
        self,
        backend: MemoryBackend,
        *,
        embedding_model: EmbeddingModel | None = None,
        candidate_pipeline: CandidatePipeline | None = None,
        secret_scanner: SecretScanner | None = None,
        clock: Callable[[], int] = _now_ms,
        entropy: Callable[[int], bytes] = os.urandom,
        key_importer: Callable[[MemoryService], Awaitable[object]] | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.backend = backend
        self._keys = BusinessKeys(
            backend, functools.partial(key_importer, self) if key_importer else None)
        self._secrets = SecretCheck(secret_scanner)
        self._ids = IdFactory(clock, entropy)
        self._embedding = MemoryEmbedding(backend, embedding_model)
        self._reads = MemoryReads(backend, self._embedding)
        self._citations = Citations(backend)
        self._search = MemorySearch(backend, self._embedding)
        self._writes = MemoryWrites(
            backend, reads=self._reads, business_keys=self._keys, secrets=self._secrets,
            ids=self._ids, embedding=self._embedding, candidate_pipeline=candidate_pipeline,
            sleep=sleep)

    # ------------------------------------------------------------------ configuration

    @property
    def embedding_model(self) -> EmbeddingModel | None:
        """The model that embeds entries and queries (None: full text only); may be
        replaced."""
        return self._embedding.model

    @embedding_model.setter
    def embedding_model(self, model: EmbeddingModel | None) -> None:
        self._embedding.model = model

    @property
    def candidate_pipeline(self) -> CandidatePipeline | None:
        """The pipeline ``remember(mode="extract")`` asks (None: extract is refused);
        may be replaced."""
        return self._writes.candidate_pipeline

    @candidate_pipeline.setter
    def candidate_pipeline(self, pipeline: CandidatePipeline | None) -> None:
        self._writes.candidate_pipeline = pipeline

    @property
    def secret_scanner(self) -> SecretScanner:
        """The scanner every write checks Sources and entry texts with."""
        return self._secrets.scanner

    def check_secrets(self, sources: Sequence[Source] = (),
                      entries: Sequence[MemoryEntryInput] = (), key: str | None = None,
                      reason: object = None) -> None:
        """Raise SecretDetectedError (an InvalidInputError naming the field, the kind of
        secret and the line, never the secret) when a Source's content, uri or metadata,
        an entry's text or reason, the business ``key`` a write stores or the
        operation's ``reason`` (forget, reactivate: field ``reason``) holds a secret.
        Nothing has been stored at that point."""
        self._secrets.check(sources, entries, key, reason)

    def new_id(self, prefix: str) -> str:
        """A fresh time-ordered ASCII id with ``prefix`` (e.g. ``mem_ent_``)."""
        return self._ids.new_id(prefix)

    async def close(self) -> None:
        await self.backend.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ business keys

    async def memory_key(self, key: str) -> str | None:
        """The Memory Artifact id the business ``key`` names (stored in the database, see
        :meth:`powercontext.ports.MemoryBackend.memory_key`), or None. InvalidInputError
        (field ``key``) for a malformed key (:func:`powercontext.core.keys.normalize_key`)."""
        return await self._keys.memory_key(key)

    async def memory_keys(self) -> dict[str, str]:
        """Every business key -> Memory Artifact id, sorted by key."""
        return await self._keys.memory_keys()

    async def remove_memory_key(self, key: str, artifact_id: str) -> bool:
        """Delete the business ``key`` when it names ``artifact_id`` (see
        :meth:`powercontext.ports.MemoryBackend.remove_memory_key`); True when it did."""
        return await self._keys.remove_memory_key(key, artifact_id)

    async def keys_by_memory(self) -> dict[str, list[str]]:
        """The inverse of :meth:`memory_keys`: Memory Artifact id -> its business keys,
        each list sorted by key (a Memory without a key is absent)."""
        return await self._keys.keys_by_memory()

    # ------------------------------------------------------------------ reads

    async def head(self, memory: ArtifactRef | str) -> ArtifactRef:
        """The current head of a Memory. ArtifactNotFoundError when there is none."""
        return await self._reads.head(memory)

    async def capabilities(self) -> MemoryCapabilities:
        """Backend capabilities, with vector and hybrid off when no matching model is set."""
        return await self._reads.capabilities()

    async def commit_landed(self, error: CommitOutcomeUnknownError) -> bool:
        """After a write raised CommitOutcomeUnknownError: reread and tell whether its
        planned Revision exists (Memory RFC, "Concurrency and transactions": reread the
        head before deciding to replay). True when Revision ``error.planned`` is stored
        with ``error.content_hash`` (the commit landed: do not replay); False when it is
        absent or another writer's (nothing of this write exists: replaying it is safe).
        Raises InvalidInputError for an error without a planned ref, and the backend's
        error when the database still cannot be read (the outcome stays unknown)."""
        return await self._reads.commit_landed(error)

    async def inventory(self) -> dict[str, Any]:
        """The backend's inventory (:meth:`powercontext.ports.MemoryInventory.inventory`:
        ``{"heads": (ArtifactRef, ...), "sources", "analyzer_version",
        "writes_paused"}``). CapabilityNotSupportedError when the backend cannot list
        its Memories."""
        return await self._reads.inventory()

    async def revision(self, memory: ArtifactRef) -> MemoryRevision:
        """The validated Revision ``memory`` names (any Revision, not only the head)."""
        return await self._reads.revision(memory)

    async def entries(
        self, memory: ArtifactRef, entry_ids: Sequence[str] | None = None
    ) -> dict[str, MemoryEntryVersion]:
        """Entry versions the manifest of ``memory`` points to, by entry_id."""
        return await self._reads.entries(memory, entry_ids)

    async def changes(
        self, memory: ArtifactRef, since_revision: int | None = None
    ) -> tuple[MemoryRevisionChanges, ...]:
        """Memory RFC, "changes()". ``since_revision`` is exclusive; 0 reads the whole
        history; None only the target Revision. ArtifactNotFoundError / ValueError."""
        return await self._reads.changes(memory, since_revision)

    async def expand(
        self, hits: Sequence[MemoryHit | HandoffCitation], layer: str = "full"
    ) -> tuple[MemoryEntryVersion, ...]:
        """Memory RFC, "expand()": the exact entry versions the anchors name.
        InvalidCitationError on any mismatch of id, version, hash or canonical bytes."""
        return await self._reads.expand(hits, layer)

    # ------------------------------------------------------------------ citations

    @staticmethod
    def cite(
        hit: MemoryHit | MemoryEntryVersion, memory: ArtifactRef | None = None
    ) -> HandoffCitation:
        """The Handoff citation of a hit (or of an entry version read at ``memory``):
        ArtifactRef + entry_id + entry_version_id (Memory RFC, "Handoff citation")."""
        return Citations.cite(hit, memory)

    async def validate_citation(self, citation: HandoffCitation) -> MemoryEntryVersion:
        """Re-read the cited Revision and check id, version, hash and canonical bytes.
        Returns the exact version; InvalidCitationError when anything differs."""
        return await self._citations.validate(citation)

    # ------------------------------------------------------------------ search

    async def search(
        self,
        query: str,
        memories: Sequence[ArtifactRef | CurrentHead],
        *,
        limit: int = 8,
        mode: SearchMode = "auto",
    ) -> MemorySearchResult:
        """Memory RFC, "Search and reads".

        ``query``: at most 8,192 characters and 64 distinct Analyzer v1 terms
        (:mod:`powercontext.core.query`), checked before any database work;
        InvalidInputError naming ``query`` beyond that. ``memories``: one or more
        Memories (duplicates dropped), each an exact ArtifactRef that must be the current
        head (CapabilityNotSupportedError for an older Revision) or a
        :class:`CurrentHead`, whose head the backend reads in the search's own read
        transaction (a concurrent write never turns it into a non-head). ``limit``:
        1..1024 hits; each channel contributes its first ``max(limit * 4, 32)`` admitted
        candidates, so a smaller limit gives a prefix of a larger one. ``mode``: fts,
        vector, hybrid or auto (hybrid when possible, else fts; ``result.mode`` says
        which ran). An explicit vector/hybrid request that cannot be served raises
        CapabilityNotSupportedError. Any exception from the model counts as "model
        unavailable": ``auto`` then runs fts and sets ``result.fallback_reason``. A blank
        query (whitespace only) has no terms and is not embedded: it returns no hits,
        after the same checks (heads; for explicit vector/hybrid, whether the mode could be
        served, raising CapabilityNotSupportedError when not), with ``result.mode`` the
        requested mode (``fts`` for auto, reason "the query is blank").
        """
        return await self._search.search(query, memories, limit=limit, mode=mode)

    # ------------------------------------------------------------------ writes

    async def remember(
        self,
        memory: ArtifactRef | None = None,
        *,
        sources: Sequence[Source] = (),
        artifacts: Sequence[Artifact] = (),
        entries: Sequence[MemoryEntryInput] = (),
        mode: RememberMode = "auto",
        providers: Sequence[str] | None = None,
        key: str | None = None,
    ) -> ArtifactRef | None:
        """Memory RFC, "remember()".

        ``key`` (with ``memory=None``): a business key such as ``repo:/abs/path``. The
        write goes to the current head of the Memory the key names; when it names none,
        the new Memory and its key are stored in one transaction. A concurrent writer
        that stored the key or moved the head first makes this call reread both and
        write again (at most :attr:`KEY_WRITE_ATTEMPTS` times, then
        RevisionConflictError), so concurrent creators of one key get one Memory and no
        write is lost. InvalidInputError (field ``key``) for a malformed key or a key
        given with ``memory``.

        ``memory=None`` creates a new Memory only when something is worth saving
        (else returns None); otherwise ``memory`` must be the exact current head
        (RevisionConflictError if not) and an unchanged result returns it. ``mode``:
        ``append`` (needs entries), ``extract`` (needs Sources or Artifacts, no entries;
        CapabilityNotSupportedError without a candidate pipeline or for an unknown
        provider), ``auto`` (append when entries are given, else extract). Sources are
        persisted (idempotently): for append once the input has validated, for extract
        before the pipeline runs. ValueError when there is no work; SecretDetectedError
        (a ValueError naming e.g. ``sources[0].content`` and the line) when a Source or
        an entry holds a secret, before anything is stored.
        Returns the new head ArtifactRef.
        """
        return await self._writes.remember(
            memory, sources=sources, artifacts=artifacts, entries=entries, mode=mode,
            providers=providers, key=key)

    async def edit(
        self,
        memory: ArtifactRef,
        entries: Sequence[MemoryEntryInput],
        forget: Sequence[MemoryEntryVersion],
        *,
        reason: str | None = "user_edit",
        sources: Sequence[Source] = (),
    ) -> ArtifactRef:
        """A person's edit of a Memory in one Revision (Memory RFC, "remember()",
        "forget()"; :func:`powercontext.core.planning.plan_edit`): ``entries`` added or
        revised (each revision naming the exact current active version), ``forget``
        deactivated, every change with ``reason``; ``sources`` are the edit's evidence
        (persisted once the edit validates). ``memory`` must be the exact head
        (RevisionConflictError otherwise); nothing to change returns it.
        SecretDetectedError before anything is stored when a Source or a text holds a
        secret."""
        return await self._writes.edit(memory, entries, forget, reason=reason, sources=sources)

    async def forget(
        self,
        memory: ArtifactRef,
        entries: Sequence[MemoryEntryVersion | str],
        reason: str | None = None,
    ) -> ArtifactRef:
        """Memory RFC, "forget()": a new Revision marking the entries inactive; already
        inactive entries are a no-op (all inactive returns ``memory``). Entries are
        current MemoryEntryVersion objects (or entry ids, resolved at ``memory``). A
        ``reason`` holding a secret is refused (field ``reason``), nothing written."""
        return await self._writes.forget(memory, entries, reason)

    async def reactivate(
        self,
        memory: ArtifactRef,
        entries: Sequence[MemoryEntryVersion | str],
        reason: str | None = None,
    ) -> ArtifactRef:
        """Memory RFC, "reactivate()": a new Revision marking the same versions active
        again and restoring their projections; active entries are a no-op. A ``reason``
        holding a secret is refused (field ``reason``), nothing written."""
        return await self._writes.reactivate(memory, entries, reason)

    async def organize(
        self, memory: ArtifactRef, steps: Sequence[planning.OrganizeStep] = ("default",)
    ) -> ArtifactRef:
        """Memory RFC, "organize()": exact dedupe then reference normalization; returns
        ``memory`` when nothing changes."""
        return await self._writes.organize(memory, steps)
