"""The Topic Memory port (Topic Memory RFC 1417, "Storage, Head, and atomic
activation", "HTTP API"): what the application drives on a Topic backend.
typing.Protocols only. Errors are :mod:`powercontext.core.errors`'; "ValueError" means
InvalidInputError naming the field."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from powercontext.ports import SourceStore

if TYPE_CHECKING:  # annotations only: importing ports stays cheap (the prompt hook)
    from powercontext.core.analyzer import Analyzer
    from powercontext.core.models import EmbeddingVector
    from powercontext.core.topic.generation import StageRequest, StageResponse
    from powercontext.core.topic.insight import (
        CitingRevision,
        DayCount,
        ScopeSummary,
        SupervisionView,
    )
    from powercontext.core.topic.models import (
        TopicCapabilities,
        TopicPublication,
        TopicRebuildReport,
        TopicRef,
        TopicRevision,
        TopicSearchRequest,
        TopicSearchResult,
    )
    from powercontext.core.topic.operator import BlockedFrontier, OperatorDecision
    from powercontext.core.topic.processing import (
        AttemptGrant,
        FlushStatus,
        PendingRow,
        ScopeStatus,
    )
    from powercontext.core.topic.supervision import SchedulingState, SupervisorTerm, WaveTarget

__all__ = ["TopicGenerationModel", "TopicInsight", "TopicMemoryBackend", "TopicRebuild"]


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

    async def begin_attempt(self, scope_id: str, source_after: int, *,
                            supervisor: SupervisorTerm | None = None) -> AttemptGrant:
        """Admit one processing attempt of the Window after Cursor ``source_after``, in
        its own short transaction committed before any Source is materialised: the
        budget row (created if absent) gets ``attempt_count + 1`` and a new
        ``attempt_id`` (taking publication authority from any older attempt).
        TopicProcessingError (terminal) with the stored code when the row is a terminal
        frontier; with ``window_attempt_limit`` (committed) when ``attempt_count`` is
        already ATTEMPT_LIMIT; TopicProcessingError ``cursor_conflict`` (not terminal)
        when the Cursor is no longer ``source_after``. With ``supervisor`` the
        transaction is fenced by that term first (TopicProcessingError
        ``supervisor_term_lost``, not terminal, nothing written) and the grant carries
        it, so ``reserve``, ``record_failure`` and ``publish`` check it again."""
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

    async def record_failure(self, grant: AttemptGrant, code: str, *,
                             through: int | None = None) -> None:
        """Store a bounded failure code (``[a-z_]{1,64}``) on the attempt's budget row in
        a short fenced transaction, unless the row is already terminal or another
        attempt holds it (then nothing). A code in TERMINAL_CODES (e.g.
        ``source_complexity_limit``) makes the row a terminal frontier. ``through``
        (> the grant's ``source_after``) raises ``furthest_through`` to it: the
        position of the Source a complexity rejection stops at."""
        ...

    # ------------------------------------------------------------ Supervisor substrate
    # Topic Memory RFC, "Leases and terms", "Supervisor failover and recovery",
    # "Automatic scheduling". Every call is its own short transaction. "Fenced by
    # ``term``": the lease row of ``term.group`` is read (OceanBase: locked FOR UPDATE)
    # first and must hold ``term.holder_id`` and ``term.generation`` and, on OceanBase,
    # ``lease_expires_at > UTC_TIMESTAMP(6)``; otherwise SupervisorTermError and
    # nothing is written. Times are the database's clock, never the caller's.

    async def acquire_lease(self, holder_id: str, lease_seconds: float | None
                            ) -> SupervisorTerm | None:
        """Try to become the Leader of the ``global`` group as ``holder_id`` (UUIDv4
        text). SQLite (``lease_seconds`` must be None): overwrite the holder,
        ``supervisor_generation + 1`` (1 for a new row), ``lease_expires_at = NULL``;
        always returns the new term. OceanBase (``lease_seconds`` > 0): one atomic
        statement takes the row when it is absent (generation 1) or its lease expired
        by database time (generation + 1), setting ``lease_expires_at = now +
        lease_seconds``; None when another holder's lease is still valid. A holder
        whose own lease is still valid gets its term back renewed (same generation).
        InvalidInputError for a bad holder id or lease length."""
        ...

    async def renew_lease(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        """Keep ``term`` (renewal never changes the generation): OceanBase sets
        ``lease_expires_at = now + lease_seconds`` only when the row still holds the
        term and has not expired; SQLite only confirms holder and generation. False
        when the term is lost (the Leader must stop dispatching at once)."""
        ...

    async def release_lease(self, term: SupervisorTerm) -> None:
        """Best effort at shutdown: OceanBase expires the lease now when the row still
        holds ``term`` (a candidate can take over without waiting); SQLite changes
        nothing. Never raises for a lost term."""
        ...

    async def pending_page(self, after_scope: str | None, limit: int, *,
                           flushed_only: bool = False,
                           outside_wave: str | None = None) -> tuple[PendingRow, ...]:
        """Read only, bounded: Pending rows of the binding with ``scope_id`` after
        ``after_scope`` (UTF-8 binary order; None: from the start), at most ``limit``
        (1..1000). ``flushed_only``: only rows with ``flush_generation >
        handled_flush_generation`` (an unhandled explicit flush). ``outside_wave``:
        only Scopes that are not a target of that wave (catch-up candidates)."""
        ...

    async def scheduling_state(self) -> SchedulingState:
        """Read only: the binding's ``last_auto_wave_completed_at`` (None when no row)
        and the database's current UTC time."""
        ...

    async def clear_wave_targets(self, term: SupervisorTerm) -> int:
        """Fenced by ``term``: delete every frozen target of the binding (a new term
        freezes again from Pending). Returns the rows deleted."""
        ...

    async def freeze_wave(self, term: SupervisorTerm, wave_id: str) -> int:
        """Fenced by ``term``: one set-based ``INSERT ... SELECT`` freezing every
        current Pending row of the binding as a target of wave ``wave_id`` (its
        ``source_through``, ``completed`` false). Returns the targets frozen (0: no
        wave). InvalidInputError for a bad wave id (UUID text)."""
        ...

    async def wave_targets(self, wave_id: str, after_scope: str | None, limit: int
                           ) -> tuple[WaveTarget, ...]:
        """Read only, bounded: the not-completed targets of ``wave_id`` with
        ``scope_id`` after ``after_scope`` (UTF-8 binary order), at most ``limit``
        (1..1000)."""
        ...

    async def complete_target(self, term: SupervisorTerm, wave_id: str, scope_id: str) -> bool:
        """Fenced by ``term``: mark the target completed when the Scope's Cursor covers
        its frozen ``source_through``; False (nothing written) when it does not."""
        ...

    async def complete_wave(self, term: SupervisorTerm, wave_id: str) -> bool:
        """The automatic-wave completion, one short transaction fenced by ``term``:
        reconfirm that every target of ``wave_id`` is covered by its Cursor (False and
        nothing written when one is not); then set the binding's
        ``last_auto_wave_completed_at`` to the database's time (row created if
        absent), delete every Pending row of the wave's Scopes with ``cursor >=
        source_through`` and ``handled_flush_generation = flush_generation`` (a row
        raised by a newer Source stays), and delete the wave's targets. True when
        committed."""
        ...

    async def handle_flush(self, scope_id: str, target: int, claimed_flush_generation: int,
                           *, supervisor: SupervisorTerm | None = None) -> bool:
        """An explicit flush whose wave target is covered with no Window left to
        publish, handled in one short transaction (fenced by ``supervisor`` when given):
        when the Cursor is at least ``target``, ``handled_flush_generation =
        max(current, claimed)`` and the Pending row is deleted when ``cursor >=
        source_through`` and the handled generation equals ``flush_generation``.
        False (nothing written) when the Cursor is below ``target``. InvalidInputError
        for bad arguments or a claim beyond the row's flush generation;
        SupervisorTermError for a lost term."""
        ...

    async def unblock(self, scope_id: str, action: str, *, frontier: int,
                      position: int | None = None, decided_by: str,
                      reason: str) -> OperatorDecision:
        """An operator decision at a terminal frontier, one short transaction (Topic
        Memory RFC, "Retry and observability": deliberate operator remediation; the
        rules are :func:`powercontext.core.topic.operator.plan_decision`): ``skip``
        the Source at ``position`` (the Cursor moves to it, no Topic for it) or
        ``grant`` a fresh allowance for ``frontier`` (refused for
        ``source_complexity_limit``); the frontier's budget row is deleted, the Scope
        flushed when Sources remain, and the audit row (who, why, when, the allowance
        consumed) inserted. The only way a terminal frontier changes."""
        ...

    async def operator_decisions(self, scope_id: str, limit: int = 20
                                 ) -> tuple[OperatorDecision, ...]:
        """Read only: the Scope's audit rows of operator decisions, newest first, at
        most ``limit`` (1..200)."""
        ...

    async def blocked_frontiers(self, scope_id: str | None = None
                                ) -> tuple[BlockedFrontier, ...]:
        """Read only: for each Scope stopped at a terminal frontier (one Scope, or
        every known one), the Source it stops at, why, and the commands that unblock
        it."""
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


@runtime_checkable
class TopicInsight(Protocol):
    """Read-only views of a Topic backend for the dashboard (issue 17: Evidence, Topics
    per Scope, Processing), an optional capability callers ask with ``isinstance``.
    Every call is one read transaction (one snapshot) and writes nothing."""

    async def citing_topic_revisions(self, source_id: str, limit: int = 200
                                     ) -> tuple[CitingRevision, ...]:
        """Every published Topic Revision whose lineage names ``source_id`` (Topic
        Memory RFC, "Storage, Head, and atomic activation": the lineage tables), by
        (artifact_id, revision), at most ``limit`` (1..1000). InvalidInputError for a
        bad id or limit."""
        ...

    async def scopes(self) -> tuple[ScopeSummary, ...]:
        """Every Scope with a Source, a publication, Pending, a Cursor or a budget row,
        with its Source head and its counts of active Topics and published Revisions,
        sorted by scope_id (UTF-8 binary)."""
        ...

    async def topic_history(self, scope_id: str, artifact_id: str, limit: int = 50
                            ) -> tuple[TopicRevision, ...]:
        """The newest ``limit`` (1..1000) Revisions of one Topic of the Scope, newest
        first, each as :meth:`TopicMemoryBackend.get` returns it (content, cited
        SourceRefs, ``based_on``, ``published_at``; hashes checked).
        ArtifactNotFoundError for a Topic not in the Scope; InvalidInputError for a bad
        Scope id, artifact id or limit; IntegrityError for damage."""
        ...

    async def publications_per_day(self, scope_id: str) -> tuple[DayCount, ...]:
        """Topic Revisions published in the Scope per UTC day (days without one left
        out), ascending. InvalidInputError for a bad Scope id."""
        ...

    async def sources_per_day(self, scope_id: str) -> tuple[DayCount, ...]:
        """Sources journaled in the Scope per UTC day of recording (the database's
        clock in the Source write's transaction), ascending, days without one left
        out; a row journaled before the recording existed is not counted.
        InvalidInputError for a bad Scope id."""
        ...

    async def supervision_view(self) -> SupervisionView:
        """The stored lease of group ``global`` (holder, generation, expiry), the
        binding's last completed automatic wave and the frozen wave targets (Topic
        Memory RFC, "Leader, term, and fencing", "Automatic scheduling")."""
        ...


@runtime_checkable
class TopicRebuild(Protocol):
    """The analyzer migration of a Topic backend's full-text projections, an optional
    capability ``memory rebuild`` asks with ``isinstance`` (Memory RFC, "Normalization,
    hashing, and the search analyzer": a rule change needs "a migration that completely
    rebuilds searchable_text and the full-text index")."""

    def allow_analyzer_migration(self) -> None:
        """Let the next open accept Topic projections built by another analyzer version
        than the database records (RetrievalShapeError otherwise). Call it before the
        first use of the backend; it opens nothing and never raises."""
        ...

    async def rebuild_fts(self, progress: Any = None) -> TopicRebuildReport:
        """Rebuild every active Topic's full-text fields (title + summary, each Detail
        chunk) from its stored Revision under the database's recorded analyzer, one
        transaction per Topic, then record that analyzer in the retrieval shape; vectors
        are not touched. Returns a TopicRebuildReport (``topics``, ``chunks``,
        ``corrupt``: the Topics whose Revision failed its checks, left as they were,
        ``analyzer``). AnalyzerMismatchError while the Memory family's migration to the
        recorded analyzer is unfinished."""
        ...
