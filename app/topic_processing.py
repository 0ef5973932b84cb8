"""Topic processing on request: one Window at a time, end to end (Topic Memory RFC,
"Reference-level explanation": discover Pending -> read the Cursor -> select a bounded
Window -> evidence ids -> the Processor outside any transaction -> publish with the
Cursor CAS -> retry from the same Cursor after failure; "Probe and historical Topic
selection", "Global direct evolution", "Evolution operations and model output",
"Retry and observability").

The normal path of part 2, per Window:

1. ``begin_attempt`` (the durable allowance; its own short transaction, committed
   before any Source is read): a terminal frontier or a fourth attempt stops here.
2. The Scope journal after the Cursor (at most the Window limit, never past the wave
   target) and :func:`~powercontext.core.topic.window.select_window`; a Source over a
   complexity ceiling persists ``source_complexity_limit`` (terminal).
3. A Window of only lineage-only Sources publishes its guards with no model call.
4. Probe calls over the eligible Sources (grouped so each request fits; an oversized
   single Source is probed fragment by fragment), each reserved first.
5. History selection: each Probe query searched through the enabled channels (hybrid:
   the query embedded, one reserved request), scores normalised, 20 / 70 / 5.
6. The Global Topic Evolver when the whole Window and the selected history fit the
   context window; otherwise (and for an oversized Window) the Window fails closed
   with ``window_requires_work_planner`` (the Work Planner is part 3).
7. The output parsed and bound (:mod:`powercontext.core.topic.stages`); hybrid
   projections reserved one request per embedded text; one publication with the
   Cursor CAS and advance, the Pending update and the budget-row delete (NOOP: zero
   writes, the Cursor still advances).

Any failure rolls the Window back whole (nothing was published), stores a bounded code
on the attempt's budget row (best effort) and raises TopicProcessingError; the Cursor
is unchanged, so a retry starts from it. Reservations are never refunded.

Structured log records (logger ``powercontext.topic``) carry ``binding``,
``scope_id``, ``window_after``, ``window_through``, ``stage``, ``error_code``,
``attempt_count`` and ``exception_type`` as record attributes; never Source text,
prompts, model output or secrets.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import attrs

from powercontext.core.errors import (
    InvalidInputError,
    PowerContextError,
    RevisionConflictError,
    TopicProcessingError,
)
from powercontext.core.topic import content as topic_content
from powercontext.core.topic import history as topic_history
from powercontext.core.topic import projection as topic_projection
from powercontext.core.topic import stages
from powercontext.core.topic.generation import StageRequest, StageResponse
from powercontext.core.topic.models import (
    PublicationGuards,
    TopicHit,
    TopicRef,
    TopicRevision,
    TopicSearchRequest,
)
from powercontext.core.topic.processing import (
    BINDING,
    AttemptGrant,
    BudgetRelease,
    CursorAdvance,
    PendingUpdate,
    ProcessingSettings,
    ScopeStatus,
    check_settings,
)
from powercontext.core.topic.window import (
    Window,
    WindowRejection,
    WindowSource,
    estimate_tokens,
    fragments,
    select_window,
    window_token_budget,
)
from powercontext.ports import EmbeddingModel
from powercontext.ports.topic import TopicGenerationModel
from powercontext.topic_service import TopicMemoryService

__all__ = [
    "CODE_EMBEDDING",
    "CODE_PROVIDER",
    "CODE_PUBLISH",
    "CODE_RETRIEVAL",
    "CODE_UNAVAILABLE",
    "CODE_WORK_PLANNER",
    "ProcessReport",
    "TopicProcessor",
    "WindowOutcome",
]

_log = logging.getLogger("powercontext.topic")

#: Failure codes of this module (bounded, ``[a-z_]``); the core's are in
#: :mod:`powercontext.core.topic.processing` and :mod:`powercontext.core.topic.stages`.
CODE_WORK_PLANNER = "window_requires_work_planner"
CODE_UNAVAILABLE = "processing_unavailable"
CODE_PROVIDER = "provider_error"
CODE_RETRIEVAL = "retrieval_error"
CODE_EMBEDDING = "embedding_error"
CODE_PUBLISH = "publish_error"
CODE_JOURNAL = "journal_error"
CODE_CURSOR = "cursor_conflict"
CODE_SUPERSEDED = "attempt_superseded"
CODE_HEAD = "head_conflict"
#: Control signals (Topic Memory RFC, "Retry and observability"): not ordinary failures.
_CONTROL_CODES = frozenset({CODE_CURSOR, CODE_SUPERSEDED, CODE_HEAD})
#: The code of an unexpected error, by the stage it happened in.
_STAGE_CODES = {"window": CODE_JOURNAL, "probe": CODE_PROVIDER, "history": CODE_RETRIEVAL,
                "evolve": CODE_PROVIDER, "embed": CODE_EMBEDDING, "publish": CODE_PUBLISH}


@attrs.frozen
class WindowOutcome:
    """One published Window ``(after, through]``: the Topics it created and updated
    (exact refs), how many outputs were NOOPs, and the provider requests it reserved."""

    scope_id: str
    after: int
    through: int
    created: tuple[TopicRef, ...] = ()
    updated: tuple[TopicRef, ...] = ()
    noops: int = 0
    reserved_requests: int = 0


@attrs.frozen
class ProcessReport:
    """What :meth:`TopicProcessor.process` did for one Scope: the published Windows in
    order, the Scope's status afterwards, and ``stopped``: None when the Cursor covers
    the wave target, else the failure code it stopped at (a terminal frontier such as
    ``window_attempt_limit``, or the code of the failed attempt), and ``reason``, the
    failure's message (never Source text, prompts or model output), None when covered."""

    scope_id: str
    windows: tuple[WindowOutcome, ...]
    status: ScopeStatus
    stopped: str | None = None
    reason: str | None = None


@attrs.define
class _Attempt:
    """The in-memory state of one attempt (never stored)."""

    grant: AttemptGrant
    stage: str = "window"
    window: Window | None = None
    reserved: int = 0

    @property
    def through(self) -> int:
        return self.window.through if self.window is not None else self.grant.source_after


def _conflict_code(exc: RevisionConflictError) -> str:
    # the guards' messages start with these words (adapters/topic_publication.py)
    text = str(exc)
    if text.startswith("cursor moved"):
        return CODE_CURSOR
    if text.startswith("attempt superseded"):
        return CODE_SUPERSEDED
    return CODE_HEAD


def _describe(exc: BaseException) -> str:
    # PowerContextError messages are ours (no Source text); others: the type only
    return str(exc) if isinstance(exc, PowerContextError) else type(exc).__name__


class TopicProcessor:
    """Processes one Scope's Sources into Topics, in process (``topic process``).

    ``service``: the Topic service of the database; ``model``: the configured
    TopicGenerationModel (None: processing unavailable, and only a Window of
    lineage-only Sources can complete; any other Window fails with
    ``processing_unavailable`` after its attempt was admitted); ``settings``: the
    Window and history settings (InvalidInputError naming a setting out of range; the
    context window budgeted is the smaller of the settings' and the model's);
    ``embedding_model``: the deployment's model in a
    hybrid deployment (its texts are reserved one request each; default: the
    service's)."""

    def __init__(self, service: TopicMemoryService, model: TopicGenerationModel | None,
                 settings: ProcessingSettings | None = None, *,
                 embedding_model: EmbeddingModel | None = None) -> None:
        self.service = service
        self.model = model
        chosen = check_settings(settings or ProcessingSettings())
        if model is not None and model.context_window_tokens < chosen.context_window_tokens:
            # never budget beyond what the model reads
            chosen = attrs.evolve(chosen, context_window_tokens=model.context_window_tokens)
        self.settings = chosen
        self.embedding_model = embedding_model

    # ------------------------------------------------------------------ public

    async def process_window(self, scope_id: str) -> WindowOutcome | None:
        """Process the next Window of the Scope and publish it, or raise
        TopicProcessingError (the Window rolled back whole, the Cursor unchanged).
        None when the Cursor already covers the Source head. The Window never passes
        the Pending ``source_through`` (or the head); when it reaches it, the Pending
        flush generation read at the start is handled. InvalidInputError naming
        ``scope_id`` for a bad id."""
        scope = topic_content.check_scope_id(scope_id)
        status = await self._status(scope)
        target, claimed = self._wave(status)
        if status.cursor >= target:
            return None
        return await self._window(scope, status.cursor, target, claimed)

    async def process(self, scope_id: str) -> ProcessReport:
        """Run Windows until the Cursor covers the wave target (the Pending
        ``source_through`` frozen at the start, or the Source head), handling the
        claimed flush generation with the last Window; stop at the first failure
        (reported in ``stopped``, never raised for a processing failure). A Cursor or
        attempt conflict whose Window another worker published is a control signal:
        processing goes on from the moved Cursor.
        InvalidInputError naming ``scope_id`` for a bad id."""
        scope = topic_content.check_scope_id(scope_id)
        status = await self._status(scope)
        target, claimed = self._wave(status)
        cursor, windows, stopped, reason = status.cursor, [], None, None
        while cursor < target:
            try:
                outcome = await self._window(scope, cursor, target, claimed)
            except TopicProcessingError as exc:
                if exc.code in _CONTROL_CODES:
                    # a control signal, not a failure: another worker published this
                    # Window (the Cursor moved past where ours started); go on from there
                    now = (await self._status(scope)).cursor
                    if now > cursor:
                        cursor = now
                        continue
                stopped, reason = exc.code, str(exc)
                break
            windows.append(outcome)
            cursor = outcome.through
        return ProcessReport(scope, tuple(windows), await self._status(scope), stopped,
                             reason)

    # ------------------------------------------------------------------ the Window

    async def _status(self, scope: str) -> ScopeStatus:
        (status,) = await self.service.backend.processing_status(scope)
        return status

    @staticmethod
    def _wave(status: ScopeStatus) -> tuple[int, int | None]:
        if status.pending is None:
            return status.source_head, None
        return status.pending.source_through, status.pending.flush_generation

    async def _window(self, scope: str, after: int, target: int,
                      claimed: int | None) -> WindowOutcome:
        backend = self.service.backend
        try:
            grant = await backend.begin_attempt(scope, after)
        except TopicProcessingError as exc:
            if not exc.stage:
                exc.stage = "attempt"
            self._log_failure(scope, after, after, exc, None)
            raise
        attempt = _Attempt(grant)
        try:
            return await self._run(attempt, scope, after, target, claimed)
        except TopicProcessingError as exc:
            await self._fail(attempt, exc)
            raise
        except RevisionConflictError as exc:
            err = TopicProcessingError(_conflict_code(exc), str(exc), stage=attempt.stage)
            await self._fail(attempt, err, exc)
            raise err from exc
        except Exception as exc:
            code = _STAGE_CODES.get(attempt.stage, CODE_PUBLISH)
            err = TopicProcessingError(code, _describe(exc), stage=attempt.stage)
            await self._fail(attempt, err, exc)
            raise err from exc

    async def _run(self, attempt: _Attempt, scope: str, after: int, target: int,
                   claimed: int | None) -> WindowOutcome:
        backend, settings = self.service.backend, self.settings
        limit = max(1, min(settings.window_limit, target - after))
        entries = await backend.scope_journal(scope, after, limit)
        selected = select_window(entries, after, settings)
        if selected is None:
            raise TopicProcessingError(
                CODE_JOURNAL, f"no journal row after position {after}", stage="window")
        if isinstance(selected, WindowRejection):
            await backend.record_failure(attempt.grant, selected.code)
            raise TopicProcessingError(
                selected.code, f"the Source at position {selected.position} is over a "
                f"complexity ceiling ({selected.reason})", stage="window", terminal=True)
        window = attempt.window = selected
        guards = PublicationGuards(
            cursor=CursorAdvance(BINDING, scope, after, window.through),
            pending=PendingUpdate(claimed if window.through >= target else None),
            budget=BudgetRelease(attempt.grant.attempt_id, attempt.grant.source_after))
        if not window.sources:  # only lineage-only Sources: no model call
            attempt.stage = "publish"
            await self.service._publish(scope, guards=guards)
            return self._outcome(attempt, (), (), 0)
        attempt.stage = "probe"
        probes = await self._probes(attempt, window)
        if window.oversized:
            raise TopicProcessingError(
                CODE_WORK_PLANNER, "the Window's one Source is over the Window token budget: "
                "its fragments need the Work Planner (Topic Memory part 3)", stage="evolve")
        attempt.stage = "history"
        history = await self._history(attempt, scope, probes)
        attempt.stage = "evolve"
        request = stages.evolve_request(window, history, settings)
        if request is None:
            raise TopicProcessingError(
                CODE_WORK_PLANNER, f"the Window and {len(history)} history Topics do not fit "
                f"the context window of {settings.context_window_tokens} tokens: that needs "
                "the Work Planner (Topic Memory part 3)", stage="evolve")
        response = await self._call(attempt, request)
        evolution = stages.parse_evolution(response.output_text, window,
                                           stages.history_handles(history))
        attempt.stage = "embed"
        await self._reserve_embedding(attempt, evolution)
        attempt.stage = "publish"
        published = await self.service._publish(
            scope,
            creates=[(c.content, c.sources) for c in evolution.creates],
            updates=[(u.base, u.content, u.sources) for u in evolution.updates],
            guards=guards)
        n = len(evolution.creates)
        return self._outcome(attempt, tuple(r.ref for r in published[:n]),
                             tuple(r.ref for r in published[n:]), evolution.noops)

    def _outcome(self, attempt: _Attempt, created: tuple[TopicRef, ...],
                 updated: tuple[TopicRef, ...], noops: int) -> WindowOutcome:
        window = attempt.window
        assert window is not None
        _log.info("topic window published: scope %r (%d, %d], %d created, %d updated, "
                  "%d noop, %d requests reserved", window.scope_id, window.after,
                  window.through, len(created), len(updated), noops, attempt.reserved,
                  extra=self._fields(window.scope_id, window.after, window.through,
                                     "publish", None, attempt.grant.attempt_count))
        return WindowOutcome(window.scope_id, window.after, window.through, created,
                             updated, noops, attempt.reserved)

    # ------------------------------------------------------------------ stages

    def _generation_model(self) -> TopicGenerationModel:
        if self.model is None:
            raise TopicProcessingError(
                CODE_UNAVAILABLE, "no Topic generation provider is configured "
                "(inference.generation_provider)", stage="probe")
        return self.model

    async def _call(self, attempt: _Attempt, request: StageRequest) -> StageResponse:
        """One stage call, its reservation committed first (never refunded)."""
        model = self._generation_model()
        requests = model.max_requests
        await self.service.backend.reserve(attempt.grant, requests,
                                           requests * model.context_window_tokens,
                                           through=attempt.through)
        attempt.reserved += requests
        try:
            response = await model.generate(request)
        except TopicProcessingError as exc:
            exc.stage = exc.stage or request.stage
            raise
        except Exception as exc:
            raise TopicProcessingError(CODE_PROVIDER, _describe(exc),
                                       stage=request.stage) from exc
        if not isinstance(response, StageResponse):
            raise TopicProcessingError(CODE_PROVIDER, "the provider returned no StageResponse",
                                       stage=request.stage)
        if response.requests > requests:
            raise TopicProcessingError(
                CODE_PROVIDER, f"the provider made {response.requests} requests; "
                f"{requests} were reserved", stage=request.stage)
        return response

    def _probe_requests(self, window: Window) -> list[tuple[StageRequest, tuple[str, ...]]]:
        """The Probe requests of a Window, each with the evidence ids it shows: all
        Sources in one request when they fit, else greedy consecutive groups; a Source
        that does not fit alone is probed fragment by fragment."""
        settings = self.settings
        if window.oversized:
            return self._fragment_requests(window.sources[0])
        whole = stages.probe_request(window.sources, settings)
        if whole is not None:
            return [(whole, tuple(s.evidence_id for s in window.sources))]
        out: list[tuple[StageRequest, tuple[str, ...]]] = []
        group: list[WindowSource] = []

        def close() -> None:
            if group:
                req = stages.probe_request(group, settings)
                assert req is not None
                out.append((req, tuple(s.evidence_id for s in group)))
                group.clear()

        for source in window.sources:
            if stages.probe_request([*group, source], settings) is not None:
                group.append(source)
                continue
            close()
            if stages.probe_request([source], settings) is not None:
                group.append(source)
                continue
            out.extend(self._fragment_requests(source))
        close()
        return out

    def _fragment_requests(self, source: WindowSource
                           ) -> list[tuple[StageRequest, tuple[str, ...]]]:
        """One Probe request per fragment of ``source`` (each within the Window token
        budget and the Probe request's room)."""
        settings = self.settings
        budget = min(stages.probe_fragment_budget(settings), window_token_budget(settings))
        try:
            pieces = fragments(source.evidence_id, source.text, budget)
        except InvalidInputError as exc:
            raise TopicProcessingError(
                CODE_WORK_PLANNER, f"a Probe request cannot hold a fragment: {exc}",
                stage="probe") from None
        out: list[tuple[StageRequest, tuple[str, ...]]] = []
        for piece in pieces:
            req = stages.probe_request([piece], settings)
            if req is None:
                raise TopicProcessingError(CODE_WORK_PLANNER,
                                           "a fragment does not fit a Probe request",
                                           stage="probe")
            out.append((req, (source.evidence_id,)))
        return out

    async def _probes(self, attempt: _Attempt, window: Window) -> tuple[stages.Probe, ...]:
        probes: list[stages.Probe] = []
        for request, ids in self._probe_requests(window):
            response = await self._call(attempt, request)
            probes.extend(stages.parse_probes(response.output_text, window, ids))
        return tuple(probes)

    async def _history(self, attempt: _Attempt, scope: str,
                       probes: Sequence[stages.Probe]) -> list[TopicRevision]:
        """The selected history Topics (complete current heads) for the Probes."""
        backend, settings = self.service.backend, self.settings
        if not probes or not await backend.heads(scope):
            return []
        caps = await backend.topic_capabilities()
        analyzer = await backend.analyzer()
        queries: list[str] = []
        for probe in probes:
            try:
                queries.extend(topic_history.probe_queries([probe.query], analyzer))
            except InvalidInputError:
                continue  # over the search bounds (64 terms): search refuses it; skipped
        per_probe: list[tuple[TopicHit, ...]] = []
        channels = len(caps.channels)
        for query in topic_history.probe_queries(queries, analyzer):
            request = TopicSearchRequest(scope, query, settings.history_max_candidates)
            vector = None
            if "topic_vector" in caps.channels:
                await backend.reserve(attempt.grant, 1, estimate_tokens(query),
                                      through=attempt.through)
                attempt.reserved += 1
                vector = await self.service._query_vector(query, caps)
            result = await backend.search(request, vector)
            channels = len(result.channels)
            per_probe.append(result.hits)
        if not per_probe:
            return []
        refs = [c.ref for c in topic_history.select_history(per_probe, channels, settings)]
        return [await backend.get(scope, ref) for ref in refs]

    async def _reserve_embedding(self, attempt: _Attempt, evolution: stages.Evolution) -> None:
        if evolution.empty:
            return
        caps = await self.service.backend.topic_capabilities()
        kind = caps.shape.kind if caps.shape is not None else caps.pending_kind
        if kind != "hybrid":
            return
        contents = [*(c.content for c in evolution.creates),
                    *(u.content for u in evolution.updates)]
        texts = [t for c in contents for t in topic_projection.embedding_texts(c)]
        await self.service.backend.reserve(attempt.grant, len(texts),
                                           sum(estimate_tokens(t) for t in texts),
                                           through=attempt.through)
        attempt.reserved += len(texts)

    # ------------------------------------------------------------------ failure

    async def _fail(self, attempt: _Attempt, err: TopicProcessingError,
                    cause: BaseException | None = None) -> None:
        """Store the code on the attempt's budget row (best effort) and log."""
        if not err.terminal and err.code not in (CODE_SUPERSEDED,):
            try:
                await self.service.backend.record_failure(attempt.grant, err.code)
            except Exception as exc:  # best effort: the Window failed anyway
                _log.warning("topic failure code not stored: %s", type(exc).__name__,
                             extra=self._fields(attempt.grant.scope_id,
                                                attempt.grant.source_after, attempt.through,
                                                err.stage, err.code,
                                                attempt.grant.attempt_count, exc))
        self._log_failure(attempt.grant.scope_id, attempt.grant.source_after,
                          attempt.through, err, attempt.grant.attempt_count, cause)

    def _log_failure(self, scope: str, after: int, through: int, err: TopicProcessingError,
                     attempts: int | None, cause: BaseException | None = None) -> None:
        _log.warning("topic window failed: scope %r (%d, %d] stage %s error_code %s%s",
                     scope, after, through, err.stage, err.code,
                     " (terminal)" if err.terminal else "",
                     extra=self._fields(scope, after, through, err.stage, err.code,
                                        attempts, cause or err))

    @staticmethod
    def _fields(scope: str, after: int, through: int, stage: str, code: str | None,
                attempts: int | None, exc: BaseException | None = None) -> dict[str, object]:
        return {"binding": BINDING, "scope_id": scope, "window_after": after,
                "window_through": through, "stage": stage, "error_code": code,
                "attempt_count": attempts,
                "exception_type": type(exc).__name__ if exc is not None else None}
