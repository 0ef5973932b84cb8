"""MemoryService: the public async facade of the Memory family (Memory RFC,
"Code structure and abstraction boundaries": remember, forget, reactivate, organize,
changes, search, expand, and Handoff citations).

The service resolves modes, reads the exact base, asks the pure planners in
:mod:`powercontext.core.planning` for a plan, embeds changed texts outside the
transaction, and hands the plan to the backend's unit of work.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

from powercontext.core import canonical, keys, planning, secrets
from powercontext.core import query as query_bounds
from powercontext.core.errors import (
    ArtifactNotFoundError,
    CapabilityNotSupportedError,
    CommitOutcomeUnknownError,
    InvalidCitationError,
    InvalidInputError,
    PowerContextError,
    RevisionConflictError,
)
from powercontext.core.manifest import view as manifest_view
from powercontext.core.models import (
    Artifact,
    ArtifactRef,
    CurrentHead,
    EmbeddingVector,
    HandoffCitation,
    MemoryCapabilities,
    MemoryEntryInput,
    MemoryEntryVersion,
    MemoryHit,
    MemoryRevision,
    MemoryRevisionChanges,
    MemorySearchRequest,
    MemorySearchResult,
    SearchMode,
    Source,
)
from powercontext.core.plan import MemoryPlan, NoChange
from powercontext.core.vectors import prepare_vector
from powercontext.ports import CandidatePipeline, EmbeddingModel, MemoryBackend, SecretScanner

__all__ = ["MAX_SEARCH_LIMIT", "MemoryService", "RememberMode"]

log = logging.getLogger("powercontext")
RememberMode = Literal["append", "extract", "auto"]
#: max(limit * 4, 32) candidates per channel must stay within vec0's k cap of 4096.
MAX_SEARCH_LIMIT = 1024
_SEARCH_MODES = ("fts", "vector", "hybrid", "auto")


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if not isinstance(exc, PowerContextError) else str(exc)


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
    """

    #: How many times a write through a business key rereads the key and the head
    #: after a concurrent writer moved them (each retry means another write landed).
    KEY_WRITE_ATTEMPTS = 40

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
    ) -> None:
        self.backend = backend
        self._key_importer = key_importer
        self.embedding_model = embedding_model
        self.candidate_pipeline = candidate_pipeline
        self._secret_scanner = secret_scanner
        self._clock = clock
        self._entropy = entropy

    @property
    def secret_scanner(self) -> SecretScanner:
        """The scanner every write checks Sources and entry texts with."""
        if self._secret_scanner is None:
            from powercontext.adapters.secret_scanner import default_scanner

            self._secret_scanner = default_scanner()
        return self._secret_scanner

    def check_secrets(self, sources: Sequence[Source] = (),
                      entries: Sequence[MemoryEntryInput] = ()) -> None:
        """Raise SecretDetectedError (an InvalidInputError naming the field, the kind of
        secret and the line, never the secret) when a Source's content, uri or metadata,
        or an entry's text, holds a secret. Nothing has been stored at that point."""
        scan = self.secret_scanner.scan
        secrets.check_sources(sources, scan)
        for i, e in enumerate(entries):
            if isinstance(e, MemoryEntryInput) and isinstance(e.text, str):
                secrets.check_text(f"entries[{i}].text", e.text, scan)
                if isinstance(e.reason, str):
                    secrets.check_text(f"entries[{i}].reason", e.reason, scan)

    def new_id(self, prefix: str) -> str:
        """A fresh time-ordered ASCII id with ``prefix`` (e.g. ``mem_ent_``)."""
        return canonical.make_id(prefix, self._clock(), self._entropy(10))

    async def close(self) -> None:
        await self.backend.close()

    async def __aenter__(self) -> MemoryService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ business keys

    async def _keys_ready(self) -> None:
        importer, self._key_importer = self._key_importer, None
        if importer is not None:
            await importer(self)

    async def memory_key(self, key: str) -> str | None:
        """The Memory Artifact id the business ``key`` names (stored in the database, see
        :meth:`powercontext.ports.MemoryBackend.memory_key`), or None. InvalidInputError
        (field ``key``) for a malformed key (:func:`powercontext.core.keys.normalize_key`)."""
        key = keys.normalize_key(key)
        await self._keys_ready()
        return await self.backend.memory_key(key)

    async def memory_keys(self) -> dict[str, str]:
        """Every business key -> Memory Artifact id, sorted by key."""
        await self._keys_ready()
        return await self.backend.memory_keys()

    # ------------------------------------------------------------------ reads

    async def capabilities(self) -> MemoryCapabilities:
        """Backend capabilities, with vector and hybrid off when no matching model is set."""
        caps = await self.backend.capabilities()
        reasons = list(caps.reasons)
        vector = caps.vector
        if vector and self.embedding_model is None:
            vector = False
            reasons.append("no embedding model is configured")
        elif vector and self.embedding_model.profile != caps.embedding_profile:  # type: ignore[union-attr]
            vector = False
            reasons.append("the embedding model's profile differs from the database's")
        return MemoryCapabilities(
            caps.fts, vector, vector and caps.fts, caps.embedding_profile, tuple(reasons)
        )

    async def head(self, memory: ArtifactRef | str) -> ArtifactRef:
        """The current head of a Memory. ArtifactNotFoundError when there is none."""
        artifact_id = memory if isinstance(memory, str) else memory.artifact_id
        head = await self.backend.head(artifact_id)
        if head is None:
            raise ArtifactNotFoundError(f"no Memory Artifact {artifact_id!r}")
        return head

    async def commit_landed(self, error: CommitOutcomeUnknownError) -> bool:
        """After a write raised CommitOutcomeUnknownError: reread and tell whether its
        planned Revision exists (Memory RFC, "Concurrency and transactions": reread the
        head before deciding to replay). True when Revision ``error.planned`` is stored
        with ``error.content_hash`` (the commit landed: do not replay); False when it is
        absent or another writer's (nothing of this write exists: replaying it is safe).
        Raises InvalidInputError for an error without a planned ref, and the backend's
        error when the database still cannot be read (the outcome stays unknown)."""
        planned = error.planned
        if not isinstance(planned, ArtifactRef) or error.content_hash is None:
            raise InvalidInputError("error", "names no planned Revision")
        head = await self.backend.head(planned.artifact_id)
        if head is None or head.revision < planned.revision:
            return False
        rev = await self.backend.load_revision(planned)
        return rev.content_hash == error.content_hash

    async def revision(self, memory: ArtifactRef) -> MemoryRevision:
        """The validated Revision ``memory`` names (any Revision, not only the head)."""
        return await self.backend.load_revision(memory)

    async def entries(
        self, memory: ArtifactRef, entry_ids: Sequence[str] | None = None
    ) -> dict[str, MemoryEntryVersion]:
        """Entry versions the manifest of ``memory`` points to, by entry_id."""
        return await self.backend.load_entry_versions(memory, entry_ids)

    async def changes(
        self, memory: ArtifactRef, since_revision: int | None = None
    ) -> tuple[MemoryRevisionChanges, ...]:
        """Memory RFC, "changes()". ``since_revision`` is exclusive; 0 reads the whole
        history; None only the target Revision. ArtifactNotFoundError / ValueError."""
        return await self.backend.changes(memory, since_revision)

    async def expand(
        self, hits: Sequence[MemoryHit | HandoffCitation], layer: str = "full"
    ) -> tuple[MemoryEntryVersion, ...]:
        """Memory RFC, "expand()": the exact entry versions the anchors name.
        InvalidCitationError on any mismatch of id, version, hash or canonical bytes."""
        if layer != "full":
            raise InvalidInputError("layer", "only 'full' is defined")
        anchors = [h if isinstance(h, MemoryHit) else h.as_hit() for h in hits]
        return await self.backend.expand(anchors)

    # ------------------------------------------------------------------ citations

    @staticmethod
    def cite(
        hit: MemoryHit | MemoryEntryVersion, memory: ArtifactRef | None = None
    ) -> HandoffCitation:
        """The Handoff citation of a hit (or of an entry version read at ``memory``):
        ArtifactRef + entry_id + entry_version_id (Memory RFC, "Handoff citation")."""
        if isinstance(hit, MemoryHit):
            return HandoffCitation(hit.memory_ref, hit.entry_id, hit.entry_version_id)
        if memory is None:
            raise InvalidInputError("memory", "citing an entry version needs its Revision")
        return HandoffCitation(memory, hit.entry_id, hit.entry_version_id)

    async def validate_citation(self, citation: HandoffCitation) -> MemoryEntryVersion:
        """Re-read the cited Revision and check id, version, hash and canonical bytes.
        Returns the exact version; InvalidCitationError when anything differs."""
        if not isinstance(citation, HandoffCitation):
            raise InvalidCitationError("not a HandoffCitation")
        ref = citation.memory_ref
        if (not isinstance(ref, ArtifactRef) or isinstance(ref.revision, bool)
                or not isinstance(ref.revision, int) or ref.revision < 1):
            raise InvalidCitationError("memory_ref must be an ArtifactRef with an integer Revision")
        try:
            canonical.check_id(citation.memory_ref.artifact_id, "memory_ref.artifact_id")
            canonical.check_id(citation.entry_id, "entry_id")
            canonical.check_id(citation.entry_version_id, "entry_version_id")
        except InvalidInputError as exc:
            raise InvalidCitationError(str(exc)) from exc
        (version,) = await self.backend.expand([citation.as_hit()])
        return version

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
        canonical._check_str("query", query)
        query_bounds.search_terms(query)
        if mode not in _SEARCH_MODES:
            raise InvalidInputError("mode", f"must be one of {', '.join(_SEARCH_MODES)}")
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= MAX_SEARCH_LIMIT
        ):
            raise InvalidInputError("limit", f"must be an integer in 1..{MAX_SEARCH_LIMIT}")
        refs: list[ArtifactRef | CurrentHead] = []
        for i, m in enumerate(memories):
            if not isinstance(m, ArtifactRef | CurrentHead):
                raise InvalidInputError(f"memories[{i}]", "must be an ArtifactRef or CurrentHead")
            if isinstance(m, CurrentHead):
                canonical._check_str(f"memories[{i}].artifact_id", m.artifact_id)
            if m not in refs:
                refs.append(m)
        if not refs:
            raise InvalidInputError("memories", "search needs at least one explicit Memory")
        blank = not query.strip()
        vector: EmbeddingVector | None = None
        problem: str | None = None
        if mode in ("vector", "hybrid", "auto"):
            vector, problem = await self._query_vector(
                query, explicit=mode != "auto", embed=not blank
            )
        if blank:
            # Validate the heads (and, for vector/hybrid, completeness), answer nothing.
            served = "fts" if mode == "auto" else mode
            await self.backend.search(MemorySearchRequest("", tuple(refs), limit, served, None))
            return MemorySearchResult(
                (), served, "the query is blank: nothing to embed" if mode == "auto" else None
            )
        result = await self.backend.search(
            MemorySearchRequest(query, tuple(refs), limit, mode, vector)
        )
        if mode == "auto" and result.mode == "fts":
            reason = problem or result.fallback_reason or "the backend served full text only"
            result = MemorySearchResult(result.hits, result.mode, reason)
        return result

    async def _query_vector(
        self, query: str, *, explicit: bool, embed: bool = True
    ) -> tuple[EmbeddingVector | None, str | None]:
        """(query vector, None) or (None, why there is none). CapabilityNotSupportedError
        instead when ``explicit``. ``embed=False`` checks the model without calling it."""
        model = self.embedding_model
        caps = await self.backend.capabilities()
        problem = None
        if model is None:
            problem = "no embedding model is configured"
        elif not caps.vector or caps.embedding_profile is None:
            problem = "the database has no vector projection (" + "; ".join(caps.reasons) + ")"
        elif model.profile != caps.embedding_profile:
            problem = "the embedding model's profile differs from the database's"
        if problem is None and not embed:
            return None, None
        if problem is None:
            assert model is not None and caps.embedding_profile is not None
            try:
                result = await model.embed((query,))
                (raw,) = result.vectors
                return prepare_vector(raw, caps.embedding_profile), None
            except Exception as exc:  # any model failure means "model unavailable"
                problem = f"the embedding model failed: {_describe(exc)}"
        if explicit:
            raise CapabilityNotSupportedError(f"vector search is unavailable: {problem}")
        return None, problem

    # ------------------------------------------------------------------ writes

    async def _base(
        self, memory: ArtifactRef, entry_ids: Sequence[str] | None
    ) -> planning.MemoryBase:
        if not isinstance(memory, ArtifactRef):
            raise InvalidInputError("memory", "must be an ArtifactRef or None")
        head = await self.head(memory)
        if head.revision != memory.revision:
            raise RevisionConflictError(
                f"Memory {memory.artifact_id!r} is at Revision {head.revision}, "
                f"not {memory.revision}: reread the head and retry"
            )
        rev = await self.backend.load_revision(memory)
        view = manifest_view(rev.content.manifest)  # memoized per Revision
        ids = (None if entry_ids is None
               else [i for i in dict.fromkeys(entry_ids) if i in view.index])
        versions = await self.backend.load_entry_versions(memory, ids) if ids != [] else {}
        return planning.MemoryBase(memory, rev.content, versions)

    async def _commit(
        self, plan: MemoryPlan | NoChange, current: ArtifactRef | None, key: str | None = None
    ) -> ArtifactRef | None:
        if isinstance(plan, NoChange):
            return current
        vectors = await self._embed_plan(plan)
        async with self.backend.begin() as uow:
            if key is None:
                return await uow.commit(plan, vectors)
            return await uow.commit(plan, vectors, key=key)

    async def _embed_plan(self, plan: MemoryPlan) -> dict[str, EmbeddingVector] | None:
        model = self.embedding_model
        if model is None or not plan.upserts:
            return None
        caps = await self.backend.capabilities()
        if not caps.vector or caps.embedding_profile != model.profile:
            return None
        texts = tuple(r.text for r in plan.upserts)
        # Memory RFC, "Vector integrity and offline rebuilds": whatever the model does,
        # the Revision and its full-text projection commit; an entry without a usable
        # vector has none (never stale, never a placeholder) until a rebuild fills it.
        try:
            result = await model.embed(texts)
            raw = tuple(result.vectors)
            if len(raw) != len(texts):
                raise InvalidInputError(
                    "vectors", f"the model returned {len(raw)} vectors for {len(texts)} texts"
                )
        except Exception as exc:  # any model failure means "model unavailable"
            log.warning("embedding model unavailable, committing without vectors: %s",
                        _describe(exc))
            return None
        vectors: dict[str, EmbeddingVector] = {}
        for row, vec in zip(plan.upserts, raw, strict=True):
            try:
                vectors[row.entry_version_id] = prepare_vector(vec, model.profile)
            except InvalidInputError as exc:  # refused for this entry only
                log.warning("entry %s gets no vector: %s", row.entry_id, exc)
        return vectors

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
        if key is None:
            return await self._remember(memory, sources=sources, artifacts=artifacts,
                                        entries=entries, mode=mode, providers=providers)
        if memory is not None:
            raise InvalidInputError("key", "name the Memory or its key, not both")
        key = keys.normalize_key(key)
        await self._keys_ready()
        conflict: RevisionConflictError | None = None
        for attempt in range(self.KEY_WRITE_ATTEMPTS):
            if attempt:  # another writer landed first: back off a little, with jitter
                await asyncio.sleep(min(0.2, 0.002 * attempt) * random.uniform(1, 2))
            artifact_id = await self.backend.memory_key(key)
            base = await self.head(artifact_id) if artifact_id is not None else None
            try:
                return await self._remember(
                    base, sources=sources, artifacts=artifacts, entries=entries, mode=mode,
                    providers=providers, key=key if base is None else None)
            except RevisionConflictError as exc:
                conflict = exc
        raise RevisionConflictError(
            f"the Memory of key {key!r} kept moving ({self.KEY_WRITE_ATTEMPTS} attempts): "
            f"{conflict}") from conflict

    async def _remember(
        self,
        memory: ArtifactRef | None,
        *,
        sources: Sequence[Source],
        artifacts: Sequence[Artifact],
        entries: Sequence[MemoryEntryInput],
        mode: RememberMode,
        providers: Sequence[str] | None,
        key: str | None = None,
    ) -> ArtifactRef | None:
        if mode not in ("append", "extract", "auto"):
            raise InvalidInputError("mode", "must be append, extract or auto")
        entries = tuple(entries)
        sources = tuple(sources)
        artifacts = tuple(artifacts)
        self.check_secrets(sources, entries)
        if mode == "auto":
            if entries:
                mode = "append"
            elif sources or artifacts:
                mode = "extract"
            else:
                raise InvalidInputError(
                    "entries", "nothing to remember: no entries and no evidence"
                )
        if mode == "append" and not entries:
            raise InvalidInputError("entries", "append needs at least one entry")
        if mode == "extract":
            if entries:
                raise InvalidInputError("entries", "extract takes evidence, not entries")
            if not sources and not artifacts:
                raise InvalidInputError("sources", "extract needs at least one Source or Artifact")
        revised = [
            e.entry.entry_id
            for e in entries
            if isinstance(e, MemoryEntryInput) and e.entry is not None
        ]
        if mode == "extract":
            if self.candidate_pipeline is None:
                raise CapabilityNotSupportedError(
                    "remember(mode='extract') needs a candidate pipeline; none is configured"
                )
            base = await self._base(memory, None) if memory is not None else None
            if sources:  # the evidence is kept even when extraction yields nothing
                await self.backend.put_sources(sources)
            current: tuple[MemoryEntryVersion, ...] = ()
            if base is not None:
                manifest = base.manifest
                current = tuple(v for e, v in base.versions.items()
                                if manifest[e].state == "active")
            entries = await self.candidate_pipeline.extract(
                sources, current, tuple(providers) if providers is not None else None
            )
            if not entries:
                return memory
        else:
            base = await self._base(memory, revised) if memory is not None else None
        plan = planning.plan_remember(
            base, entries, sources=sources, artifacts=artifacts, new_id=self.new_id,
            analyzer=await self.backend.analyzer(),
        )
        if mode == "append" and sources and not isinstance(plan, NoChange):
            # stored only once the input has validated (the commit re-checks them)
            await self.backend.put_sources(sources)
        return await self._commit(plan, memory, key)

    async def forget(
        self,
        memory: ArtifactRef,
        entries: Sequence[MemoryEntryVersion | str],
        reason: str | None = None,
    ) -> ArtifactRef:
        """Memory RFC, "forget()": a new Revision marking the entries inactive; already
        inactive entries are a no-op (all inactive returns ``memory``). Entries are
        current MemoryEntryVersion objects (or entry ids, resolved at ``memory``)."""
        base, versions = await self._state_base(memory, entries)
        result = await self._commit(
            planning.plan_forget(base, versions, reason, analyzer=await self.backend.analyzer()),
            memory,
        )
        assert result is not None
        return result

    async def reactivate(
        self,
        memory: ArtifactRef,
        entries: Sequence[MemoryEntryVersion | str],
        reason: str | None = None,
    ) -> ArtifactRef:
        """Memory RFC, "reactivate()": a new Revision marking the same versions active
        again and restoring their projections; active entries are a no-op."""
        base, versions = await self._state_base(memory, entries)
        result = await self._commit(
            planning.plan_reactivate(
                base, versions, reason, analyzer=await self.backend.analyzer()
            ),
            memory,
        )
        assert result is not None
        return result

    async def _state_base(
        self, memory: ArtifactRef, entries: Sequence[MemoryEntryVersion | str]
    ) -> tuple[planning.MemoryBase, list[MemoryEntryVersion]]:
        if not entries:
            raise InvalidInputError("entries", "name at least one entry")
        ids = [e if isinstance(e, str) else e.entry_id for e in entries]
        base = await self._base(memory, [i for i in ids if isinstance(i, str)])
        out: list[MemoryEntryVersion] = []
        for i, e in enumerate(entries):
            if isinstance(e, str):
                v = base.versions.get(e)
                if v is None:
                    raise ArtifactNotFoundError(f"entries[{i}]: no entry {e!r} in this Memory")
                out.append(v)
            else:
                out.append(e)
        return base, out

    async def organize(
        self, memory: ArtifactRef, steps: Sequence[planning.OrganizeStep] = ("default",)
    ) -> ArtifactRef:
        """Memory RFC, "organize()": exact dedupe then reference normalization; returns
        ``memory`` when nothing changes."""
        base = await self._base(memory, None)
        active = [e.entry_id for e in base.content.manifest.entries if e.state == "active"]
        base = planning.MemoryBase(
            base.ref, base.content, {k: v for k, v in base.versions.items() if k in active}
        )
        result = await self._commit(
            planning.plan_organize(
                base, steps=steps, new_id=self.new_id, analyzer=await self.backend.analyzer()
            ),
            memory,
        )
        assert result is not None
        return result
