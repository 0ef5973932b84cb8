"""The Topic Memory port (Topic Memory RFC 1417, "Storage, Head, and atomic
activation", "HTTP API"): what the application drives on a Topic backend.
typing.Protocols only. Errors are :mod:`powercontext.core.errors`'; "ValueError" means
InvalidInputError naming the field."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingVector
from powercontext.core.topic.generation import StageRequest, StageResponse
from powercontext.core.topic.models import (
    TopicCapabilities,
    TopicPublication,
    TopicRef,
    TopicRevision,
    TopicSearchRequest,
    TopicSearchResult,
)
from powercontext.core.topic.processing import (
    AttemptGrant,
    FlushStatus,
    ScopeStatus,
)
from powercontext.ports import SourceStore

__all__ = ["TopicGenerationModel", "TopicMemoryBackend"]


@runtime_checkable
class TopicMemoryBackend(SourceStore, Protocol):
    """The ``topic-memory`` family on one database: publication, search, exact get.

    Opening checks only Topic Memory's own state (its retrieval shape), never the
    Memory family's, and the Memory backend never checks this family's shape
    (readiness is per family). A shape error is a RetrievalShapeError raised by every
    call until the configuration is fixed."""

    async def topic_capabilities(self) -> TopicCapabilities:
        """The stored retrieval shape (None before the first publication), the
        channels searched, and reasons (opens the database)."""
        ...

    async def analyzer(self) -> Analyzer:
        """The Analyzer the database's Topic projections are built with."""
        ...

    async def publish(self, publication: TopicPublication) -> tuple[TopicRevision, ...]:
        """Publish every write of the batch in one short transaction, in the spec's
        order (guards, Head CAS for every UPDATE, Revisions and lineage, database-UTC
        ``published_at``, projections written and switched), or nothing. The first
        publication of a deployment fixes the retrieval shape. Returns the published
        Revisions in batch order. RevisionConflictError when an UPDATE's base is no
        longer the head (or a CREATE's id exists); IntegrityError for a forged or
        incomplete projection; ValueError for bad content, refs or lineage (a Source
        that is not stored, a base in another Scope); CapabilityNotSupportedError for a
        guard the backend does not implement. Nothing is written on any error."""
        ...

    async def search(self, request: TopicSearchRequest,
                     query_vector: EmbeddingVector | None = None) -> TopicSearchResult:
        """Active Topics of one Scope for ``request``: each channel collapsed by Topic,
        RRF across the 2 or 4 enabled channels, at most one hit per Topic, read in one
        snapshot. ``query_vector`` (the embedded query) is required in a hybrid
        deployment and refused in an FTS-only one. ValueError for a bad Scope, query
        or limit."""
        ...

    async def get(self, scope_id: str, ref: TopicRef) -> TopicRevision:
        """That exact Revision (never the latest head by id), with its own
        ``published_at``. ArtifactNotFoundError for an unknown ref or one of another
        Scope (never leaked); ValueError for another family, revision < 1."""
        ...

    async def heads(self, scope_id: str) -> tuple[TopicRef, ...]:
        """The current head of every Topic of the Scope, by artifact_id."""
        ...

    # ------------------------------------------------------------ processing substrate
    # Topic Memory RFC, "Pending dirty set", "Cumulative work and evidence ceilings",
    # "Retry and observability". The binding is always
    # powercontext.core.topic.processing.BINDING. Each call is its own short
    # transaction; publication's guards (Cursor CAS and advance, Pending update,
    # budget-row delete) run inside ``publish``.

    async def flush(self, scope_id: str) -> FlushStatus:
        """The explicit flush, one short transaction: ``idle`` (nothing written) when
        the Scope has no Source or its Cursor covers the Source head; else
        ``source_through = max(existing, head)``, ``flush_generation + 1`` (the row
        created if absent) and ``accepted``; a Scope at a terminal frontier is also
        ``accepted``. InvalidInputError for a bad Scope id."""
        ...

    async def processing_status(self, scope_id: str | None = None) -> tuple[ScopeStatus, ...]:
        """Read only: the status of one Scope (always one item, zeros when unknown), or
        of every Scope with a journal row, Pending, Cursor or budget row (sorted by
        scope_id, UTF-8 binary)."""
        ...

    async def begin_attempt(self, scope_id: str, source_after: int) -> AttemptGrant:
        """Admit one processing attempt of the Window after Cursor ``source_after``, in
        its own short transaction committed before any Source is materialised: the
        budget row (created if absent) gets ``attempt_count + 1`` and a new
        ``attempt_id`` (taking publication authority from any older attempt).
        TopicProcessingError (terminal) with the stored code when the row is a terminal
        frontier; with ``window_attempt_limit`` (committed) when ``attempt_count`` is
        already ATTEMPT_LIMIT; TopicProcessingError ``cursor_conflict`` (not terminal)
        when the Cursor is no longer ``source_after``."""
        ...

    async def reserve(self, grant: AttemptGrant, requests: int, tokens: int, *,
                      through: int) -> None:
        """Reserve ``requests`` provider requests and ``tokens`` token capacity for the
        next provider call, in a short fenced transaction committed before the call
        (never refunded): the row's ``attempt_id`` must still be ``grant``'s
        (TopicProcessingError ``attempt_superseded``, not terminal, nothing added);
        ``furthest_through = max(existing, through)``. When the totals would pass
        REQUEST_LIMIT or TOKEN_LIMIT nothing is reserved, ``failure_code =
        window_provider_budget_exceeded`` is committed and TopicProcessingError
        (terminal) raised."""
        ...

    async def record_failure(self, grant: AttemptGrant, code: str) -> None:
        """Store a bounded failure code (``[a-z_]{1,64}``) on the attempt's budget row in
        a short fenced transaction, unless the row is already terminal or another
        attempt holds it (then nothing). A code in TERMINAL_CODES (e.g.
        ``source_complexity_limit``) makes the row a terminal frontier."""
        ...

    async def close(self) -> None:
        """Close the connection (idempotent)."""
        ...


@runtime_checkable
class TopicGenerationModel(Protocol):
    """A provider of structured Topic stage calls (Topic Memory RFC, "Cumulative work
    and evidence ceilings"; TOPIC-MEMORY.md, "Providers"): ``openai`` and
    ``anthropic`` over their SDKs (transport retries off, timeouts on), and
    ``deterministic`` (extractive, no model, byte-for-byte reproducible).

    One :meth:`generate` makes at most ``max_requests`` provider requests (structured
    retries included); the caller has reserved that many requests and
    ``max_requests`` whole context windows before calling."""

    @property
    def name(self) -> str:
        """The provider name (``openai``, ``anthropic``, ``deterministic``)."""
        ...

    @property
    def model(self) -> str:
        """The model the requests name (``deterministic`` for the extractive one)."""
        ...

    @property
    def context_window_tokens(self) -> int:
        """``inference.generation_model_context_window_tokens``."""
        ...

    @property
    def max_requests(self) -> int:
        """Requests one :meth:`generate` may make (>= 1)."""
        ...

    async def generate(self, request: StageRequest) -> StageResponse:
        """The complete structured answer to ``request``. Errors: BackendError for a
        transport failure, timeout, HTTP error (429, 500, ...) or an answer without
        structured output; TopicProcessingError ``model_response_incomplete`` for a
        suspended or incomplete response (Anthropic ``pause_turn`` or ``max_tokens``,
        Responses ``incomplete`` / ``queued`` / ``in_progress``), refused at the raw
        boundary before any output is used."""
        ...
