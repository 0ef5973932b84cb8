"""TopicMemoryService: the public async facade of the Topic Memory family (Topic Memory
RFC, "HTTP API", "MCP"; TOPIC-MEMORY.md, "Topic search", "get").

Two reads for users and agents: :meth:`TopicMemoryService.search` (compact hits with an
exact :class:`~powercontext.core.topic.models.TopicRef`) and
:meth:`TopicMemoryService.get` (that exact Revision, complete). The spec gives users no
create, update, delete or retire operation: Topics are published by processing of the
Scope's Sources. The processing surface (Topic Memory RFC, "Source, Window, Cursor, and
Pending", "Automatic processing and explicit flush", "Pending dirty set"):
:meth:`~TopicMemoryService.add_sources` (Sources into a Scope's journal, raising
Pending), :meth:`~TopicMemoryService.flush`, :meth:`~TopicMemoryService.status` (read
only) and :meth:`~TopicMemoryService.process` (Windows until the Scope is covered, in
process, through :class:`powercontext.topic_processing.TopicProcessor`).
The publication path, :meth:`~TopicMemoryService.publish` (with
:meth:`~TopicMemoryService.query_vector`), is the service's processing port
(:class:`powercontext.ports.topic_publisher.TopicPublisher`), which the Topic processor
depends on; it is not a user operation (the spec gives users none).

The service checks requests before any I/O, embeds (hybrid deployments only) outside
every transaction, and leaves every write-boundary check to the backend.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

from powercontext.core import canonical
from powercontext.core import query as query_bounds
from powercontext.core.errors import (
    CapabilityNotSupportedError,
    InvalidInputError,
    RetrievalShapeError,
    describe_error,
)
from powercontext.core.models import EmbeddingVector, Source, SourceRef
from powercontext.core.topic import content as topic_content
from powercontext.core.topic import projection as topic_projection
from powercontext.core.topic import search as topic_search
from powercontext.core.topic.models import (
    TOPIC_FAMILY,
    PublicationGuards,
    TopicCapabilities,
    TopicMemoryContent,
    TopicPublication,
    TopicRef,
    TopicRevision,
    TopicSearchRequest,
    TopicSearchResult,
    TopicWrite,
)
from powercontext.core.topic.operator import BlockedFrontier, OperatorDecision
from powercontext.core.topic.processing import FlushStatus, ProcessingSettings, ScopeStatus
from powercontext.core.vectors import prepare_vector
from powercontext.ports import EmbeddingModel
from powercontext.ports.topic import TopicGenerationModel, TopicMemoryBackend

if TYPE_CHECKING:
    from powercontext.topic_processing import ProcessReport

__all__ = ["TopicMemoryService", "parse_topic_ref"]

_REF_KEYS = frozenset({"family", "artifact_id", "revision"})


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def parse_topic_ref(value: object, field: str = "artifact") -> TopicRef:
    """A Topic reference from a :class:`TopicRef`, its JSON object ``{"family",
    "artifact_id", "revision"}`` (exactly those keys), or the text form
    ``topic_art_...@N``. The family must be ``topic-memory`` (``memory`` names the
    Memory family, never a Topic) and the revision an int >= 1 (not a bool, not a
    string). InvalidInputError naming ``field`` (or ``field.revision`` ...) otherwise.
    TOPIC-MEMORY.md, "A separate reference type"."""
    if isinstance(value, TopicRef):
        ref = value
    elif isinstance(value, Mapping):
        keys = set(value)
        if keys != _REF_KEYS:
            missing = sorted(_REF_KEYS - keys)
            extra = sorted(str(k) for k in keys - _REF_KEYS)
            problem = (f"misses {', '.join(missing)}" if missing
                       else f"has unknown keys {', '.join(extra)}")
            raise InvalidInputError(
                field, f"{problem}: give {{\"family\": \"{TOPIC_FAMILY}\", "
                       "\"artifact_id\": ..., \"revision\": N}")
        family, artifact_id, revision = (value["family"], value["artifact_id"],
                                         value["revision"])
        if family != TOPIC_FAMILY:
            raise InvalidInputError(f"{field}.family", _family_message(family))
        if isinstance(revision, bool) or not isinstance(revision, int):
            raise InvalidInputError(f"{field}.revision",
                                    f"must be an integer >= 1, got {revision!r}")
        if not isinstance(artifact_id, str):
            raise InvalidInputError(f"{field}.artifact_id", "must be a string")
        ref = TopicRef(artifact_id, revision, family)
    elif isinstance(value, str):
        artifact_id, sep, rev = value.rpartition("@")
        if not sep or not artifact_id:
            raise InvalidInputError(
                f"{field}.revision", f"is missing in {value!r}: give ID@REVISION, the exact "
                "ref a search returned (a Topic is never read by id alone)")
        if not rev.isascii() or not rev.isdigit() or (len(rev) > 1 and rev[0] == "0"):
            # the text form is exact: "@01" is not the ref a search printed
            raise InvalidInputError(f"{field}.revision",
                                    f"must be an integer >= 1 written without leading "
                                    f"zeros, got {rev!r}")
        ref = TopicRef(artifact_id, int(rev))
    else:
        raise InvalidInputError(field, f"must be a Topic reference, got {type(value).__name__}")
    if ref.family != TOPIC_FAMILY:
        raise InvalidInputError(f"{field}.family", _family_message(ref.family))
    if isinstance(ref.revision, bool) or not isinstance(ref.revision, int) or ref.revision < 1:
        raise InvalidInputError(f"{field}.revision",
                                f"must be an integer >= 1, got {ref.revision!r}")
    return topic_content.check_ref(ref, field)


def _family_message(family: object) -> str:
    if family == "memory":
        return ("is 'memory': that names a Memory Artifact; use `powercontext memory "
                f"show` for it. A Topic reference has family {TOPIC_FAMILY!r}")
    return f"must be {TOPIC_FAMILY!r}, got {family!r}"


class TopicMemoryService:
    """The Topic Memory family service over one :class:`~powercontext.ports.topic.
    TopicMemoryBackend`.

    ``embedding_model`` (optional) is the deployment's EmbeddingModel: used only when
    the backend's retrieval shape is hybrid (its channels include the vector ones).
    ``clock`` (milliseconds) and ``entropy`` (n -> n random bytes) feed new Topic ids
    (the app layer owns time and randomness; core gets them as arguments).
    An async context manager: leaving it closes the backend.
    """

    def __init__(
        self,
        backend: TopicMemoryBackend,
        embedding_model: EmbeddingModel | None = None,
        *,
        clock: Callable[[], int] = _now_ms,
        entropy: Callable[[int], bytes] = os.urandom,
    ) -> None:
        self.backend = backend
        self.embedding_model = embedding_model
        self._clock = clock
        self._entropy = entropy

    async def close(self) -> None:
        """Close the backend (idempotent)."""
        await self.backend.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def capabilities(self) -> TopicCapabilities:
        """The backend's retrieval shape and channels (opens the database; a
        RetrievalShapeError when its shape refuses this configuration)."""
        return await self.backend.topic_capabilities()

    # ------------------------------------------------------------------ reads

    async def search(self, scope_id: str, query: str, limit: int = 10) -> TopicSearchResult:
        """Topic Memory RFC, "HTTP API" (``POST /v1/topic-memory/search``).

        The active Topics of one Scope for ``query``: at most ``limit`` hits (1..20), at
        most one per Topic, best first, each with the exact TopicRef to expand, title,
        summary, an optional Detail snippet, the fused RRF score and ``matched_by``.
        ``scope_id``: 1..256 characters after NFC; ``query``: at most 8,192 characters
        and 64 distinct Analyzer terms, no lone surrogates; all checked before any I/O
        (InvalidInputError naming ``scope_id``, ``query`` or ``limit``). A query with no
        terms under the database's Analyzer (blank, punctuation or stopwords only) is an
        InvalidInputError naming ``query`` too (:func:`powercontext.core.topic.search.
        check_request`), raised after the shape check and never embedded. In a hybrid
        deployment the query is embedded with the deployment's model (outside any
        transaction); without a model that is a RetrievalShapeError, a model failure a
        CapabilityNotSupportedError naming the cause. Topics of another Scope are never
        returned. Returns a TopicSearchResult (``hits``, ``channels``)."""
        request = self._check_request(scope_id, query, limit)
        caps = await self.backend.topic_capabilities()
        # the terms under the database's own analyzer: none is bad input, never embedded
        topic_search.check_request(request, await self.backend.analyzer())
        vector: EmbeddingVector | None = None
        if "topic_vector" in caps.channels:
            vector = await self.query_vector(request.query, caps)
        return await self.backend.search(request, vector)

    async def get(self, scope_id: str, ref: TopicRef | Mapping[str, Any] | str
                  ) -> TopicRevision:
        """Topic Memory RFC, "HTTP API" (``POST /v1/topic-memory/get``).

        That exact Revision of a Topic (never the latest head by id): title, summary,
        complete detail, the direct SourceRefs, the exact ref an UPDATE was based on, and
        its own database-UTC ``published_at``. ``ref`` is a TopicRef, its JSON object
        ``{"family": "topic-memory", "artifact_id", "revision"}`` or ``ID@REV``.
        InvalidInputError for a bad Scope or ref (family ``memory``, revision 0,
        negative, missing, a bool); ArtifactNotFoundError for an unknown ref or one of
        another Scope (never leaked).
        """
        scope = topic_content.check_scope_id(scope_id)
        exact = parse_topic_ref(ref)
        return await self.backend.get(scope, exact)

    # ------------------------------------------------------------------ processing

    async def add_sources(self, scope_id: str, sources: Sequence[Source]) -> tuple[int, ...]:
        """Store Sources in one Scope (Topic Memory RFC, "Source, Window, Cursor, and
        Pending"; TOPIC-MEMORY.md, "Scopes are new"): each Source, its Scope-journal row
        and the Pending raise in one transaction (the backend's ``put_scoped_sources``).
        ``sources`` are values of :func:`powercontext.core.canonical.make_source`.
        Returns each Source's 1-based position in the Scope's journal, in input order; a
        Source already in this Scope keeps its position (idempotent). InvalidInputError
        naming ``scope_id`` (bad id, or a Source already journaled in another Scope) or
        the Source field; SecretDetectedError (an InvalidInputError) for a secret. Nothing
        is stored on any error."""
        scope = topic_content.check_scope_id(scope_id)
        return await self.backend.put_scoped_sources(scope, tuple(sources))

    async def flush(self, scope_id: str) -> FlushStatus:
        """Topic Memory RFC, "Automatic processing and explicit flush": ask for the
        Scope's Sources to be processed, in one short transaction. ``"idle"`` (nothing
        written) when the Scope has no Source or its Cursor already covers the Source
        head; else ``"accepted"``: the Pending row gets ``source_through = max(existing,
        head)`` and ``flush_generation + 1`` (a second flush before processing coalesces
        into the same row). A Scope stuck at a terminal frontier is ``"accepted"`` too;
        :meth:`status` shows why. InvalidInputError naming ``scope_id`` for a bad id."""
        return await self.backend.flush(topic_content.check_scope_id(scope_id))

    async def status(self, scope_id: str | None = None) -> tuple[ScopeStatus, ...]:
        """Read only (TOPIC-MEMORY.md, "Flush"): the processing status of one Scope
        (always one ScopeStatus, zeros when the Scope is unknown) or, with None, of every
        Scope with a journal row, Pending, Cursor or budget row, sorted by ``scope_id``
        (UTF-8 binary). Each shows the Source head, the Cursor, the Pending row and the
        budget row (attempts, reserved requests and tokens, failure code), None when
        absent. InvalidInputError naming ``scope_id`` for a bad id."""
        scope = None if scope_id is None else topic_content.check_scope_id(scope_id)
        return await self.backend.processing_status(scope)

    async def blocked(self, scope_id: str | None = None) -> tuple[BlockedFrontier, ...]:
        """Read only (Topic Memory RFC, "Retry and observability"): why each Scope (one,
        or with None every known Scope) stopped at a terminal frontier is stopped: the
        Source processing stops at, the failure code, a short reason (no Source text)
        and the commands that unblock it. Scopes not stopped are left out."""
        scope = None if scope_id is None else topic_content.check_scope_id(scope_id)
        return await self.backend.blocked_frontiers(scope)

    async def unblock(self, scope_id: str, action: str, *, frontier: int,
                      position: int | None = None, decided_by: str,
                      reason: str) -> OperatorDecision:
        """An operator decision at the terminal frontier ``frontier`` (the Cursor the
        Scope is stopped at; :mod:`powercontext.core.topic.operator`): ``skip`` the
        Source at ``position`` or ``grant`` one fresh allowance, recorded with who and
        why as an audit row in the same transaction as its effect; the Scope is flushed
        so processing resumes. The only path that changes a terminal frontier. Errors:
        InvalidInputError (not stopped there, a refused action, bad who or why),
        RevisionConflictError (the Scope moved), SecretDetectedError."""
        return await self.backend.unblock(
            topic_content.check_scope_id(scope_id), action, frontier=frontier,
            position=position, decided_by=decided_by, reason=reason)

    async def operator_decisions(self, scope_id: str, limit: int = 20
                                 ) -> tuple[OperatorDecision, ...]:
        """Read only: the Scope's operator decisions (audit rows), newest first."""
        return await self.backend.operator_decisions(
            topic_content.check_scope_id(scope_id), limit)

    async def process(self, scope_id: str, *, model: TopicGenerationModel | None,
                      settings: ProcessingSettings | None = None) -> ProcessReport:
        """Topic Memory RFC, "Reference-level explanation": process the Scope's Windows
        after its Cursor, in process, until the Cursor covers the wave target (the
        Pending ``source_through`` frozen at the start, or the Source head) or a Window
        fails (a terminal frontier such as ``window_attempt_limit``, or the failed
        attempt's code). ``model``: the configured TopicGenerationModel
        (:func:`powercontext.runtime.open_topic_processor` builds it from the
        configuration; None: only Windows of lineage-only Sources can complete);
        ``settings``: the Window and history settings (default ProcessingSettings()).
        The deployment's embedding model (hybrid) is this service's. Returns the
        :class:`~powercontext.topic_processing.ProcessReport` (published Windows, the
        status afterwards, ``stopped``: None when covered, else the code); a processing
        failure is reported there, never raised. InvalidInputError naming ``scope_id`` or
        the setting; TopicProcessingUnavailableError when ``model`` fails the provider
        policy (the same check as the configuration's), before any I/O."""
        from powercontext.core.topic.processing import check_settings
        from powercontext.topic_processing import TopicProcessor

        scope = topic_content.check_scope_id(scope_id)
        chosen = check_settings(settings or ProcessingSettings())
        if model is not None:  # the Worker start-up check: the configuration's policy
            from powercontext.topic_provider import check_worker_model

            check_worker_model(model)
        processor = TopicProcessor(self, model, chosen, embedding_model=self.embedding_model)
        return await processor.process(scope)

    # ------------------------------------------------------------------ internal

    @staticmethod
    def _check_request(scope_id: object, query: object, limit: object) -> TopicSearchRequest:
        scope = topic_content.check_scope_id(scope_id)
        text = canonical.check_str("query", query)
        query_bounds.search_terms(text)
        return TopicSearchRequest(scope, text, topic_search.check_limit(limit))

    def _hybrid_model(self, caps: TopicCapabilities) -> EmbeddingModel:
        model = self.embedding_model
        profile = caps.shape.embedding_profile if caps.shape else caps.embedding_profile
        if model is None:
            raise RetrievalShapeError(
                "this Topic Memory deployment is hybrid (vector channels) but no embedding "
                "model is configured: pass --embedding NAME (the model it was built with)")
        if profile is not None and model.profile != profile:
            raise RetrievalShapeError(
                f"the embedding model's profile {model.profile.profile_id!r} differs from "
                f"the Topic retrieval shape's {profile.profile_id!r}")
        return model

    # ------------------------------------------------------------------ processing port

    async def query_vector(self, query: str, caps: TopicCapabilities) -> EmbeddingVector:
        """The processing port's query vector
        (:meth:`powercontext.ports.topic_publisher.TopicPublisher.query_vector`): ``query``
        embedded with the deployment's model, checked against its profile.
        RetrievalShapeError (no model, or another profile); CapabilityNotSupportedError
        naming the cause when the model fails."""
        model = self._hybrid_model(caps)
        try:
            (raw,) = (await model.embed((query,))).vectors
            return prepare_vector(raw, model.profile)
        except Exception as exc:  # any model failure: the hybrid search cannot run
            raise CapabilityNotSupportedError(
                "topic search in this hybrid deployment needs the query vector: the "
                f"embedding model failed: {describe_error(exc, model)}") from exc

    async def _embed(self, contents: Sequence[TopicMemoryContent],
                     caps: TopicCapabilities) -> list[tuple[EmbeddingVector, ...] | None]:
        kind = caps.shape.kind if caps.shape is not None else caps.pending_kind
        if kind != "hybrid":
            return [None] * len(contents)
        model = self._hybrid_model(caps)
        texts = [topic_projection.embedding_texts(c) for c in contents]
        flat = tuple(t for group in texts for t in group)
        try:
            raw = tuple((await model.embed(flat)).vectors) if flat else ()
            if len(raw) != len(flat):
                raise InvalidInputError(
                    "vectors", f"the model returned {len(raw)} vectors for {len(flat)} texts")
            vectors = [prepare_vector(v, model.profile) for v in raw]
        except Exception as exc:
            raise CapabilityNotSupportedError(
                "publishing in this hybrid deployment needs every vector: the embedding "
                f"model failed: {describe_error(exc, model)}") from exc
        out: list[tuple[EmbeddingVector, ...] | None] = []
        at = 0
        for group in texts:
            out.append(tuple(vectors[at:at + len(group)]))
            at += len(group)
        return out

    async def publish(
        self,
        scope_id: str,
        *,
        creates: Sequence[tuple[Any, Sequence[SourceRef | Source]]] = (),
        updates: Sequence[tuple[TopicRef, Any, Sequence[SourceRef | Source]]] = (),
        guards: PublicationGuards | None = None,
    ) -> tuple[TopicRevision, ...]:
        """The processing port's publication
        (:meth:`powercontext.ports.topic_publisher.TopicPublisher.publish`): publish
        CREATE and UPDATE results of one batch in one backend publication (Topic Memory
        RFC, "Storage, Head, and atomic activation"). Not a user operation (the spec
        gives users none): the Topic processor calls it, and tests and benchmarks seed
        Topics through it.

        ``creates``: ``(content, sources)`` pairs; ``updates``: ``(base, content,
        sources)`` with ``base`` the exact head TopicRef replaced. ``content`` is a
        TopicMemoryContent or a mapping with ``title``, ``summary``, ``detail``;
        ``sources`` SourceRefs of stored Sources, or Sources (stored first, in their own
        transaction). New ids come from :func:`~powercontext.core.topic.content.
        make_topic_id` with this service's clock and entropy. A secret in a title,
        summary or detail (a model can reassemble one from Sources each clean) is
        redacted first, visibly (``[REDACTED:credential-phrase]``), by the default
        scanner; the backend refuses any left. Chunking, analysis and
        (hybrid) embedding happen here, outside any transaction, with the backend's
        Analyzer; the backend re-checks everything at the write boundary. Returns the
        published Revisions in batch order (creates first). Errors: those of
        :meth:`TopicMemoryBackend.publish`; nothing is written on any error.
        """
        scope = topic_content.check_scope_id(scope_id)
        planned: list[tuple[str, TopicRef, TopicRef | None, TopicMemoryContent,
                            tuple[SourceRef, ...]]] = []
        to_store: list[Source] = []
        for i, (content, sources) in enumerate(creates):
            refs = self._source_refs(f"creates[{i}].sources", sources, to_store)
            new_id = topic_content.make_topic_id(self._clock(), self._entropy(10))
            planned.append(("create", TopicRef(new_id, 1), None,
                            _redacted(self._content(f"creates[{i}]", content)), refs))
        for i, (base, content, sources) in enumerate(updates):
            refs = self._source_refs(f"updates[{i}].sources", sources, to_store)
            b = parse_topic_ref(base, f"updates[{i}].base")
            planned.append(("update", TopicRef(b.artifact_id, b.revision + 1), b,
                            _redacted(self._content(f"updates[{i}]", content)), refs))
        if not planned and (guards is None or guards.empty):
            # with guards (a NOOP Window, or one of only lineage-only Sources) zero
            # writes still advance the Cursor; without, there is nothing to publish
            raise InvalidInputError("creates", "a publication needs at least one write")
        if to_store:
            await self.backend.put_sources(to_store)
        analyzer = await self.backend.analyzer()
        caps = await self.backend.topic_capabilities()
        vectors = await self._embed([p[3] for p in planned], caps)
        profile = self.embedding_model.profile if self.embedding_model else None
        writes = []
        for (op, ref, base_ref, content, refs), vecs in zip(planned, vectors, strict=True):
            projection = topic_projection.build_projection(
                content, analyzer, vecs, profile if vecs is not None else None)
            writes.append(TopicWrite(op, scope, ref, base_ref, content, refs, projection))  # type: ignore[arg-type]
        publication = TopicPublication(tuple(writes), guards or PublicationGuards())
        return await self.backend.publish(publication)

    @staticmethod
    def _content(field: str, value: Any) -> TopicMemoryContent:
        if isinstance(value, TopicMemoryContent):
            value = {"title": value.title, "summary": value.summary, "detail": value.detail}
        if not isinstance(value, Mapping):
            raise InvalidInputError(f"{field}.content",
                                    "must be a TopicMemoryContent or {title, summary, detail}")
        try:
            return topic_content.make_content(
                value.get("title"), value.get("summary"), value.get("detail"))
        except InvalidInputError as exc:
            raise InvalidInputError(f"{field}.{exc.field}", str(exc).partition(": ")[2]) from exc

    @staticmethod
    def _source_refs(field: str, sources: Sequence[SourceRef | Source],
                     to_store: list[Source]) -> tuple[SourceRef, ...]:
        refs: list[SourceRef] = []
        for j, s in enumerate(sources):
            if isinstance(s, Source):
                to_store.append(s)
                refs.append(SourceRef(s.source_id, s.content_hash))
            elif isinstance(s, SourceRef):
                refs.append(s)
            else:
                raise InvalidInputError(f"{field}[{j}]", "must be a SourceRef or a Source")
        if not refs:
            raise InvalidInputError(field, "a Topic Revision cites at least one Source")
        return tuple(sorted(set(refs), key=lambda r: (r.source_id, r.content_hash)))


def _redacted(content: TopicMemoryContent) -> TopicMemoryContent:
    """``content`` with every secret in its title, summary and detail redacted
    (``[REDACTED:<rule>]``; the core rules and detect-secrets), normalized again."""
    from powercontext.adapters.secret_scanner import redact_all  # writes only

    fields = (content.title, content.summary, content.detail)
    clean = tuple(redact_all(text) for text in fields)
    if clean == fields:
        return content
    return topic_content.make_content(*clean)
