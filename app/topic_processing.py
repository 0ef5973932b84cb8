"""Topic processing on request: one Window at a time, end to end (Topic Memory RFC,
"Reference-level explanation": discover Pending -> read the Cursor -> select a bounded
Window -> evidence ids -> the Processor outside any transaction -> publish with the
Cursor CAS -> retry from the same Cursor after failure; "Probe and historical Topic
selection", "Global direct evolution", "Evolution operations and model output",
"Retry and observability").

The layered flow, per Window (part 2's normal path with part 3's layers):

1. ``begin_attempt`` (the durable allowance; its own short transaction, committed
   before any Source is read): a terminal frontier or a fourth attempt stops here.
2. The Scope journal after the Cursor (at most the Window limit, never past the wave
   target) and :func:`~powercontext.core.topic.window.select_window`; a Source over a
   complexity ceiling persists ``source_complexity_limit`` (terminal). A Source over
   the Window token budget alone is its own (oversized) Window.
3. A Window of only lineage-only Sources publishes its guards with no model call.
4. Probe calls over the eligible Sources (grouped so each request fits). A Source that
   does not fit one Probe request is probed fragment by fragment, and its fragments'
   Probes stream through a ``probe`` accumulator (:mod:`~powercontext.core.topic.
   accumulate`: exact duplicates coalesced, at most 20 live items and the reduce
   budget, a checked private ``reduce`` call before overflow). Every fragment
   finishes before the Window goes on; a failed fragment fails the Window.
5. History selection: each Probe query searched through the enabled channels (hybrid:
   the query embedded, one reserved request), scores normalised, 20 / 70 / 5.
6. The Global Topic Evolver when the Window is not oversized, the Window and its
   history fit one request, and its checked result is not ambiguous
   (:func:`~powercontext.core.topic.stages.ambiguous`). Otherwise the global result
   (if any) is discarded whole and the Work Planner runs
   (:mod:`~powercontext.core.topic.planner`): zero Probes is a NOOP Window with no
   call; a plan request that does not fit is ``planner_input_over_budget``. Work
   Items run in plan order: the Item Evolver when the Item's whole Sources and its
   complete target fit one request, else temporary Topics
   (:mod:`~powercontext.core.topic.temporary`: Source Batches, one ``temporary`` call
   each, pushed through a ``temporary`` accumulator, compacted until the final request
   fits, the final ``evolve`` call); one temporary that still does not fit with the
   target is ``work_item_over_budget``; no temporary at all is a NOOP.
7. Second retrieval (:mod:`~powercontext.core.topic.reconcile`; skipped when the
   Window has no CREATE): every CREATE's complete content searched as bounded queries
   like Probe queries, its candidates selected, related groups formed and one
   ``reconcile`` call per group that fits; folded CREATEs become one CREATE or one
   UPDATE of one historical Topic, never a merge of two.
8. Hybrid projections reserved one request per embedded text; one publication with
   the Cursor CAS and advance, the Pending update and the budget-row delete (NOOP:
   zero writes, the Cursor still advances). Nothing intermediate (Probes, temporaries,
   reductions, plans) is ever stored. The published Window names the Sources no new
   Revision holds whole (:mod:`powercontext.topic_report`: uncited or condensed).

Every stage call is reserved first (:meth:`TopicProcessor._call`); allowance
exhaustion anywhere, mid-reduction included, is the terminal frontier
``window_provider_budget_exceeded``.

Any failure rolls the Window back whole (nothing was published), stores a bounded code
on the attempt's budget row (best effort) and raises TopicProcessingError; the Cursor
is unchanged, so a retry starts from it. Reservations are never refunded.

Structured log records (logger ``powercontext.topic``) carry ``binding``,
``scope_id``, ``window_after``, ``window_through``, ``stage``, ``error_code``,
``attempt_count`` and ``exception_type`` as record attributes, and under a
Supervisor (:meth:`TopicProcessor.process_assignment`) ``supervisor_generation`` and
``worker_id``; never Source text, prompts, model output or secrets.

Under the Supervisor a Window runs from a
:class:`~powercontext.core.topic.supervision.WorkAssignment`: its term fences the
attempt admission, every reservation, the failure code and the publication (a lost
term is ``supervisor_term_lost``, a control signal), and its mode picks the Pending
update: ``explicit`` handles the claimed flush generation with the Window that reaches
the target, ``auto`` and ``catchup`` advance the Cursor and leave Pending in place
(the automatic wave's completion cleans up; Topic Memory RFC, "Automatic scheduling").
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Sequence

import attrs

from powercontext.core.errors import (
    InvalidInputError,
    RevisionConflictError,
    SupervisorTermError,
    TopicProcessingError,
    describe_error,
    is_own_component,
)
from powercontext.core.topic import accumulate, planner, reconcile, result_room, stages, temporary
from powercontext.core.topic import content as topic_content
from powercontext.core.topic import history as topic_history
from powercontext.core.topic import projection as topic_projection
from powercontext.core.topic.generation import StageRequest, StageResponse
from powercontext.core.topic.models import (
    PublicationGuards,
    TopicCapabilities,
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
from powercontext.core.topic.report import LeftOut, ProcessReport, WindowOutcome
from powercontext.core.topic.supervision import CODE_TERM_LOST, SupervisorTerm, WorkAssignment
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
from powercontext.topic_report import left_out
from powercontext.topic_service import TopicMemoryService

__all__ = [
    "CODE_EMBEDDING",
    "CODE_FRAGMENT",
    "CODE_PROVIDER",
    "CODE_PUBLISH",
    "CODE_RETRIEVAL",
    "CODE_UNAVAILABLE",
    "CONTROL_CODES",
    "ProcessReport",
    "TopicProcessor",
    "WindowOutcome",
]

_log = logging.getLogger("powercontext.topic")

#: Failure codes of this module (bounded, ``[a-z_]``); the core's are in
#: :mod:`powercontext.core.topic.processing` and :mod:`powercontext.core.topic.stages`.
#: One fragment of an oversized Source cannot fit a Probe request (a context window
#: too small for even one character with the fixed prompt).
CODE_FRAGMENT = "probe_fragment_over_budget"
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
CONTROL_CODES = frozenset({CODE_CURSOR, CODE_SUPERSEDED, CODE_HEAD, CODE_TERM_LOST})
_CONTROL_CODES = CONTROL_CODES
#: The Supervisor context of the Window being processed (generation, Worker id), for
#: the log records; (None, None) outside a Supervisor. A context variable, so
#: concurrent Windows in one process keep their own.
_WORKER: contextvars.ContextVar[tuple[int | None, str | None]] = contextvars.ContextVar(
    "powercontext_topic_worker", default=(None, None))
#: The code of an unexpected error, by the stage it happened in.
_STAGE_CODES = {"window": CODE_JOURNAL, "probe": CODE_PROVIDER, "history": CODE_RETRIEVAL,
                "evolve": CODE_PROVIDER, "plan": CODE_PROVIDER, "temporary": CODE_PROVIDER,
                "reduce": CODE_PROVIDER, "reconcile": CODE_PROVIDER,
                "embed": CODE_EMBEDDING, "publish": CODE_PUBLISH}


@attrs.define
class _Attempt:
    """The in-memory state of one attempt (never stored)."""

    grant: AttemptGrant
    stage: str = "window"
    window: Window | None = None
    reserved: int = 0
    #: The position of a Source the Window selection rejected (over a complexity
    #: ceiling): the end of the Window the logs name.
    rejected: int | None = None
    #: Evidence ids of Sources that went through temporary Topics (condensed).
    condensed: set[str] = attrs.field(factory=set)

    @property
    def through(self) -> int:
        if self.window is not None:
            return self.window.through
        return self.rejected if self.rejected is not None else self.grant.source_after


@attrs.frozen
class _ProbeRequest:
    """One Probe request, the evidence ids it shows, and its fragment index (1-based)
    when it holds one fragment of an oversized Source."""

    request: StageRequest
    ids: tuple[str, ...]
    fragment: int | None = None


def _conflict_code(exc: RevisionConflictError) -> str:
    if isinstance(exc, SupervisorTermError):
        return CODE_TERM_LOST
    # the guards' messages start with these words (adapters/topic_publication.py)
    text = str(exc)
    if text.startswith("cursor moved"):
        return CODE_CURSOR
    if text.startswith("attempt superseded"):
        return CODE_SUPERSEDED
    return CODE_HEAD


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
            await self._handle_covered(scope, status, target, claimed)
            return None
        return await self._window(scope, status.cursor, target, claimed)

    async def process(self, scope_id: str, *,
                      on_window: Callable[[WindowOutcome], None] | None = None
                      ) -> ProcessReport:
        """Run Windows until the Cursor covers the wave target (the Pending
        ``source_through`` frozen at the start, or the Source head), handling the
        claimed flush generation with the last Window; stop at the first failure
        (reported in ``stopped``, never raised for a processing failure). A Cursor or
        attempt conflict whose Window another worker published is a control signal:
        processing goes on from the moved Cursor. ``on_window`` is called with each
        published Window as soon as it is published (progress).
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
            if on_window is not None:
                on_window(outcome)
        if stopped is None:
            await self._handle_covered(scope, await self._status(scope), target, claimed)
        return ProcessReport(scope, tuple(windows), await self._status(scope), stopped,
                             reason)

    async def process_assignment(self, assignment: WorkAssignment) -> WindowOutcome | None:
        """Run exactly one Window of a Supervisor's
        :class:`~powercontext.core.topic.supervision.WorkAssignment` (Topic Memory RFC,
        "In-memory queue and Workers"): the Window after Cursor
        ``assignment.source_after``, never past ``assignment.target``, every fenced
        call carrying ``assignment.term`` (``begin_attempt(..., supervisor=term)``,
        ``PublicationGuards(supervisor=term)``). Mode ``explicit`` handles
        ``claimed_flush_generation`` with the Window that reaches the target (the
        Pending row is then deleted under the spec's condition); ``auto`` and
        ``catchup`` advance only the Cursor and leave Pending in place.

        Returns the published Window, or None (nothing done) when the Cursor is no
        longer ``source_after`` (another Worker moved it) or already covers the
        target. Raises TopicProcessingError like :meth:`process_window`; a lost term
        is code ``supervisor_term_lost`` (not terminal, nothing written).
        InvalidInputError naming ``scope_id`` for a bad id."""
        scope = topic_content.check_scope_id(assignment.scope_id)
        token = _WORKER.set((assignment.term.generation, assignment.worker_id))
        try:
            status = await self._status(scope)
            if status.cursor != assignment.source_after or status.cursor >= assignment.target:
                return None
            explicit = assignment.mode == "explicit"
            claimed = assignment.claimed_flush_generation if explicit else None
            return await self._window(scope, status.cursor, assignment.target, claimed,
                                      term=assignment.term, pending=explicit)
        finally:
            _WORKER.reset(token)

    # ------------------------------------------------------------------ the Window

    async def _status(self, scope: str) -> ScopeStatus:
        (status,) = await self.service.backend.processing_status(scope)
        return status

    async def _handle_covered(self, scope: str, status: ScopeStatus, target: int,
                              claimed: int | None) -> None:
        """A flush whose target the Cursor covers is handled even when no Window is
        left to publish (a flush during a wave with no new Source; Topic Memory RFC,
        "Pending dirty set"): the handled generation rises and Pending goes under the
        spec's condition."""
        pending = status.pending
        if (claimed and pending is not None and status.cursor >= target
                and pending.handled_flush_generation < claimed):
            await self.service.backend.handle_flush(scope, target, claimed)

    @staticmethod
    def _wave(status: ScopeStatus) -> tuple[int, int | None]:
        if status.pending is None:
            return status.source_head, None
        return status.pending.source_through, status.pending.flush_generation

    async def _window(self, scope: str, after: int, target: int,
                      claimed: int | None, *, term: SupervisorTerm | None = None,
                      pending: bool = True) -> WindowOutcome:
        backend = self.service.backend
        try:
            if term is None:  # topic process: no Supervisor, no term
                grant = await backend.begin_attempt(scope, after)
            else:
                grant = await backend.begin_attempt(scope, after, supervisor=term)
        except TopicProcessingError as exc:
            if not exc.stage:
                exc.stage = "attempt"
            self._log_failure(scope, after, after, exc, None)
            raise
        attempt = _Attempt(grant)
        try:
            return await self._run(attempt, scope, after, target, claimed, term=term,
                                   pending=pending)
        except TopicProcessingError as exc:
            await self._fail(attempt, exc)
            raise
        except RevisionConflictError as exc:
            err = TopicProcessingError(_conflict_code(exc), str(exc), stage=attempt.stage)
            await self._fail(attempt, err, exc)
            raise err from exc
        except Exception as exc:
            code = _STAGE_CODES.get(attempt.stage, CODE_PUBLISH)
            err = TopicProcessingError(code, describe_error(exc), stage=attempt.stage)
            await self._fail(attempt, err, exc)
            raise err from exc

    async def _run(self, attempt: _Attempt, scope: str, after: int, target: int,
                   claimed: int | None, *, term: SupervisorTerm | None = None,
                   pending: bool = True) -> WindowOutcome:
        backend, settings = self.service.backend, self.settings
        limit = max(1, min(settings.window_limit, target - after))
        entries = await backend.scope_journal(scope, after, limit)
        selected = select_window(entries, after, settings)
        if selected is None:
            raise TopicProcessingError(
                CODE_JOURNAL, f"no journal row after position {after}", stage="window")
        if isinstance(selected, WindowRejection):
            attempt.rejected = selected.position
            # the budget row's furthest end names the rejected Source (topic status)
            await backend.record_failure(attempt.grant, selected.code,
                                         through=selected.position)
            raise TopicProcessingError(
                selected.code, f"the Source at position {selected.position} is over a "
                f"complexity ceiling ({selected.reason})", stage="window", terminal=True)
        window = attempt.window = selected
        guards = PublicationGuards(
            supervisor=term,
            cursor=CursorAdvance(BINDING, scope, after, window.through),
            # auto / catch-up: the Cursor advances, Pending stays for the wave's cleanup
            pending=(PendingUpdate(claimed if window.through >= target else None)
                     if pending else None),
            budget=BudgetRelease(attempt.grant.attempt_id, attempt.grant.source_after))
        if not window.sources:  # only lineage-only Sources: no model call
            attempt.stage = "publish"
            await self.service._publish(scope, guards=guards)
            return self._outcome(attempt, (), (), 0)
        attempt.stage = "probe"
        probes = await self._probes(attempt, window)
        attempt.stage = "history"
        candidates, history, found = await self._history(attempt, scope, probes)
        handles = stages.history_handles(history)
        evolution = await self._global(attempt, window, history, handles)
        if evolution is None:
            evolution = await self._planned(attempt, window, probes, candidates, handles,
                                            found)
        if evolution.creates:
            evolution = await self._reconcile(attempt, scope, evolution)
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
                             tuple(r.ref for r in published[n:]), evolution.noops,
                             left_out(window, evolution, attempt.condensed))

    # ------------------------------------------------------------------ layered flow

    async def _global(self, attempt: _Attempt, window: Window,
                      history: Sequence[TopicRevision],
                      handles: dict[str, TopicRevision]) -> stages.Evolution | None:
        """The Global Topic Evolver's checked result, or None when the Work Planner
        must run instead: the Window is oversized, the Window and its history do not
        fit one request, or the result is ambiguous (:func:`stages.ambiguous`; it is
        then discarded whole, never mixed with the planned result)."""
        if window.oversized:
            return None
        attempt.stage = "evolve"
        request = stages.evolve_request(window, history, self.settings)
        if request is None:
            return None
        response = await self._call(attempt, request)
        evolution = stages.parse_evolution(response.output_text, window, handles)
        why = stages.ambiguous(evolution, handles)
        if why is None:
            return evolution
        _log.info("topic global evolution ambiguous (%s): the Work Planner runs", why,
                  extra=self._fields(window.scope_id, window.after, window.through,
                                     "evolve", None, attempt.grant.attempt_count))
        return None

    async def _planned(self, attempt: _Attempt, window: Window,
                       probes: Sequence[stages.Probe],
                       candidates: Sequence[topic_history.HistoryCandidate],
                       handles: dict[str, TopicRevision],
                       found: Sequence[TopicRef | None]) -> stages.Evolution:
        """The Work Planner path: the plan (Probes that found the same historical Topic
        in one Work Item), then every Work Item in plan order (Item Evolver, else
        temporary Topics). Zero Probes: no call, a NOOP Window."""
        if not probes:
            return stages.Evolution((), (), 0)
        attempt.stage = "plan"
        request = planner.plan_request(window, probes, candidates, self.settings, found)
        if request is None:
            raise TopicProcessingError(
                planner.CODE_PLANNER_OVER_BUDGET, f"{len(probes)} Probes and "
                f"{len(candidates)} history Topics do not fit one Work Planner request of "
                f"{self.settings.context_window_tokens} tokens", stage="plan")
        response = await self._call(attempt, request)
        items = planner.parse_plan(response.output_text, window, probes, handles,
                                   planner.found_handles(candidates, found, len(probes)))
        creates: list[stages.TopicCreate] = []
        updates: list[stages.TopicUpdate] = []
        noops = 0
        for item in items:
            done = await self._item(attempt, window, item)
            creates.extend(done.creates)
            updates.extend(done.updates)
            noops += done.noops
        return stages.Evolution(tuple(creates), tuple(updates), noops)

    def _stage_call(self, attempt: _Attempt) -> accumulate.StageCall:
        async def call(request: StageRequest) -> str:
            attempt.stage = request.stage
            return (await self._call(attempt, request)).output_text
        return call

    async def _item(self, attempt: _Attempt, window: Window,
                    item: planner.WorkItem) -> stages.Evolution:
        """One Work Item's operation: the Item Evolver when its whole Sources and its
        complete target fit one request, else the temporary-Topic path."""
        settings = self.settings
        attempt.stage = "evolve"
        request = planner.item_request(window, item, settings)
        if request is not None:
            response = await self._call(attempt, request)
            return planner.parse_item(response.output_text, window, item)
        budget = accumulate.reduce_budget("temporary", settings, item.focus)
        attempt.stage = "temporary"
        # no temporary Topic fits its result budget: fail closed before any call
        result_room.check_result_room("temporary", budget, "temporary")
        max_chars = accumulate.max_result_chars(budget)
        attempt.condensed.update(item.evidence_ids)
        batches = temporary.source_batches(window, item, settings, max_chars)
        acc = accumulate.Accumulator("temporary", budget)
        call = self._stage_call(attempt)
        for batch in batches:
            attempt.stage = "temporary"
            request = temporary.temporary_request(batch, item, settings, max_chars)
            if request is None:  # never for a Batch of source_batches: fail closed
                raise TopicProcessingError(
                    temporary.CODE_ITEM_OVER_BUDGET, f"Source Batch {batch.position} does "
                    "not fit a temporary request", stage="temporary")
            text = await call(request)
            made = temporary.parse_temporary(text, window, batch,
                                             budget // accumulate.RESULT_FRACTION)
            if made is not None:
                await accumulate.push(acc, made, batch.position, call, window, settings,
                                      item.focus)
        if not acc.live:  # every Batch added nothing
            return stages.Evolution((), (), 1)

        def fits(live: Sequence[accumulate.Live]) -> bool:
            # one temporary left: reducing it further cannot make room for the target
            return len(live) <= 1 or temporary.final_request(live, item, settings) is not None

        await accumulate.compact(acc, call, window, settings, fits=fits, focus=item.focus)
        attempt.stage = "evolve"
        final = temporary.final_request(acc.live, item, settings)
        if final is None:
            raise TopicProcessingError(
                temporary.CODE_ITEM_OVER_BUDGET, "the reduced temporary Topic and the "
                "Work Item's historical Topic do not fit one request of "
                f"{settings.context_window_tokens} tokens", stage="evolve")
        text = await call(final)
        return temporary.parse_final(text, window, acc.live, item)

    async def _reconcile(self, attempt: _Attempt, scope: str,
                         evolution: stages.Evolution) -> stages.Evolution:
        """Second retrieval for every CREATE (its complete content as bounded queries,
        searched like Probe queries), the related groups, one ``reconcile`` call per
        group that fits, and the folded operations."""
        backend, settings = self.service.backend, self.settings
        attempt.stage = "history"
        if not await backend.heads(scope):
            return evolution
        caps = await backend.topic_capabilities()
        analyzer = await backend.analyzer()
        second: list[tuple[topic_history.HistoryCandidate, ...]] = []
        heads: dict[str, TopicRevision] = {}
        for create in evolution.creates:
            queries = reconcile.second_queries(create.content, analyzer)
            per_query, channels = await self._search_all(attempt, scope, queries, caps)
            found = (topic_history.select_history(per_query, channels, settings)
                     if per_query else ())
            second.append(found)
            for candidate in found:
                if candidate.ref.artifact_id not in heads:
                    heads[candidate.ref.artifact_id] = await backend.get(scope, candidate.ref)
        groups = reconcile.related_groups(evolution, second, heads, settings)
        decisions = []
        for group in groups:
            attempt.stage = "reconcile"
            request = reconcile.reconcile_request(group, evolution, settings)
            if request is None:
                continue  # reconciliation is a safeguard: the group stays as it is
            response = await self._call(attempt, request)
            decisions.append(reconcile.parse_reconcile(response.output_text, group,
                                                       evolution))
        return reconcile.apply_reconciliations(evolution, decisions)

    def _outcome(self, attempt: _Attempt, created: tuple[TopicRef, ...],
                 updated: tuple[TopicRef, ...], noops: int,
                 left: tuple[LeftOut, ...] = ()) -> WindowOutcome:
        window = attempt.window
        assert window is not None
        _log.info("topic window published: %d created, %d updated, %d noop, %d requests "
                  "reserved, %d Source(s) left out", len(created), len(updated), noops,
                  attempt.reserved, len(left),
                  extra=self._fields(window.scope_id, window.after, window.through,
                                     "publish", None, attempt.grant.attempt_count))
        return WindowOutcome(window.scope_id, window.after, window.through, created,
                             updated, noops, attempt.reserved, left)

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
        try:
            await self.service.backend.reserve(attempt.grant, requests,
                                               requests * model.context_window_tokens,
                                               through=attempt.through)
        except TopicProcessingError as exc:
            # the allowance ran out (or the attempt was superseded) before this call
            if exc.stage in (None, "", "attempt"):
                exc.stage = request.stage
            raise
        attempt.reserved += requests
        window = attempt.window
        if window is not None:
            # one line per stage call (shown by `topic process -v`): the stage, the
            # request's size and the total reserved; never any text
            _log.info("topic stage call (%s): ~%d tokens, %d request(s) reserved so far",
                      request.schema_name, request.estimated_tokens,
                      attempt.reserved,
                      extra=self._fields(window.scope_id, window.after, window.through,
                                         request.stage, None, attempt.grant.attempt_count))
        try:
            response = await model.generate(request)
        except TopicProcessingError as exc:
            if not is_own_component(model):  # a plugin's text may quote its request
                raise TopicProcessingError(exc.code, describe_error(exc, model),
                                           stage=exc.stage or request.stage,
                                           terminal=exc.terminal) from exc
            exc.stage = exc.stage or request.stage
            raise
        except Exception as exc:
            raise TopicProcessingError(CODE_PROVIDER, describe_error(exc, model),
                                       stage=request.stage) from exc
        if not isinstance(response, StageResponse):
            raise TopicProcessingError(CODE_PROVIDER, "the provider returned no StageResponse",
                                       stage=request.stage)
        if response.requests > requests:
            raise TopicProcessingError(
                CODE_PROVIDER, f"the provider made {response.requests} requests; "
                f"{requests} were reserved", stage=request.stage)
        return response

    def _probe_requests(self, window: Window) -> list[_ProbeRequest]:
        """The Probe requests of a Window, each with the evidence ids it shows: all
        Sources in one request when they fit, else greedy consecutive groups; a Source
        that does not fit alone is probed fragment by fragment."""
        settings = self.settings
        if window.oversized:
            return self._fragment_requests(window.sources[0])
        whole = stages.probe_request(window.sources, settings)
        if whole is not None:
            return [_ProbeRequest(whole, tuple(s.evidence_id for s in window.sources))]
        out: list[_ProbeRequest] = []
        group: list[WindowSource] = []

        def close() -> None:
            if group:
                req = stages.probe_request(group, settings)
                assert req is not None
                out.append(_ProbeRequest(req, tuple(s.evidence_id for s in group)))
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

    def _fragment_requests(self, source: WindowSource) -> list[_ProbeRequest]:
        """One Probe request per fragment of ``source`` (each within the Window token
        budget and the Probe request's room), fragment index 1-based."""
        settings = self.settings
        budget = min(stages.probe_fragment_budget(settings), window_token_budget(settings))
        try:
            pieces = fragments(source.evidence_id, source.text, budget)
        except InvalidInputError as exc:
            raise TopicProcessingError(
                CODE_FRAGMENT, f"a Probe request cannot hold a fragment: {exc}",
                stage="probe") from None
        out: list[_ProbeRequest] = []
        for k, piece in enumerate(pieces, start=1):
            req = stages.probe_request([piece], settings)
            if req is None:
                raise TopicProcessingError(CODE_FRAGMENT,
                                           "a fragment does not fit a Probe request",
                                           stage="probe")
            out.append(_ProbeRequest(req, (source.evidence_id,), k))
        return out

    async def _probes(self, attempt: _Attempt, window: Window) -> tuple[stages.Probe, ...]:
        """The Window's Probes in request order. The Probes of one Source's fragments
        stream through a ``probe`` accumulator (position = fragment index; exact
        duplicates coalesced, reduced before overflow); every fragment finishes before
        the Window goes on, and any failure aborts it."""
        probes: list[stages.Probe] = []
        acc: accumulate.Accumulator | None = None
        owner: str | None = None
        call = self._stage_call(attempt)

        def drain() -> None:
            nonlocal acc, owner
            if acc is not None:
                probes.extend(live.item for live in acc.live)  # type: ignore[misc]
            acc, owner = None, None

        requests = self._probe_requests(window)
        if any(pr.fragment is not None for pr in requests):
            # fragment Probes are reduced: fail closed before any call when no reduced
            # Probe fits the reduce result budget
            result_room.check_result_room(
                "probe", accumulate.reduce_budget("probe", self.settings), "probe")
        for pr in requests:
            attempt.stage = "probe"
            response = await self._call(attempt, pr.request)
            found = stages.parse_probes(response.output_text, window, pr.ids)
            if pr.fragment is None:
                drain()
                probes.extend(found)
                continue
            if acc is None or owner != pr.ids[0] or pr.fragment == 1:
                drain()
                owner = pr.ids[0]
                acc = accumulate.Accumulator(
                    "probe", accumulate.reduce_budget("probe", self.settings))
            for probe in found:
                await accumulate.push(acc, probe, pr.fragment, call, window, self.settings)
        drain()
        attempt.stage = "probe"
        return tuple(probes)

    async def _search_all(self, attempt: _Attempt, scope: str, queries: Sequence[str],
                          caps: TopicCapabilities) -> tuple[list[tuple[TopicHit, ...]], int]:
        """Each query searched through the enabled channels (hybrid: the query embedded,
        one reserved request each): the hit lists and the channel count."""
        per_query: list[tuple[TopicHit, ...]] = []
        channels = len(caps.channels)
        for query in queries:
            request = TopicSearchRequest(scope, query, self.settings.history_max_candidates)
            vector = None
            if "topic_vector" in caps.channels:
                await self.service.backend.reserve(attempt.grant, 1, estimate_tokens(query),
                                                   through=attempt.through)
                attempt.reserved += 1
                vector = await self.service._query_vector(query, caps)
            result = await self.service.backend.search(request, vector)
            channels = len(result.channels)
            per_query.append(result.hits)
        return per_query, channels

    async def _history(self, attempt: _Attempt, scope: str,
                       probes: Sequence[stages.Probe]
                       ) -> tuple[tuple[topic_history.HistoryCandidate, ...],
                                  list[TopicRevision], tuple[TopicRef | None, ...]]:
        """The selected history candidates for the Probes, their complete heads (in
        candidate order) and, per Probe, the candidate its search found first
        (:func:`~powercontext.core.topic.history.probe_hits`; None: none, or the Probe
        was not searched)."""
        backend, settings = self.service.backend, self.settings
        none: tuple[TopicRef | None, ...] = (None,) * len(probes)
        if not probes or not await backend.heads(scope):
            return (), [], none
        caps = await backend.topic_capabilities()
        analyzer = await backend.analyzer()
        queries: list[str | None] = []
        for probe in probes:
            try:
                queries.append(next(iter(topic_history.probe_queries([probe.query],
                                                                     analyzer)), None))
            except InvalidInputError:
                queries.append(None)  # over the search bounds (64 terms): not searched
        searched = topic_history.probe_queries([q for q in queries if q], analyzer)
        per_probe, channels = await self._search_all(attempt, scope, searched, caps)
        if not per_probe:
            return (), [], none
        candidates = topic_history.select_history(per_probe, channels, settings)
        first = dict(zip(searched, topic_history.probe_hits(per_probe, channels, candidates,
                                                            settings), strict=True))
        found = tuple(first.get(q) if q else None for q in queries)
        return candidates, [await backend.get(scope, c.ref) for c in candidates], found

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
        if not err.terminal and err.code not in (CODE_SUPERSEDED, CODE_TERM_LOST):
            try:
                await self.service.backend.record_failure(attempt.grant, err.code)
            except Exception as exc:  # best effort: the Window failed anyway
                _log.warning("topic failure code not stored",
                             extra=self._fields(attempt.grant.scope_id,
                                                attempt.grant.source_after, attempt.through,
                                                err.stage, err.code,
                                                attempt.grant.attempt_count, exc))
        self._log_failure(attempt.grant.scope_id, attempt.grant.source_after,
                          attempt.through, err, attempt.grant.attempt_count, cause)

    def _log_failure(self, scope: str, after: int, through: int, err: TopicProcessingError,
                     attempts: int | None, cause: BaseException | None = None) -> None:
        # the Scope, Window, stage and code are fields (shown once by the formatter)
        _log.warning("topic window failed%s", " (terminal)" if err.terminal else "",
                     extra=self._fields(scope, after, through, err.stage, err.code,
                                        attempts, cause or err))

    @staticmethod
    def _fields(scope: str, after: int, through: int, stage: str, code: str | None,
                attempts: int | None, exc: BaseException | None = None) -> dict[str, object]:
        generation, worker = _WORKER.get()
        return {"binding": BINDING, "scope_id": scope, "window_after": after,
                "window_through": through, "stage": stage, "error_code": code,
                "attempt_count": attempts,
                "exception_type": type(exc).__name__ if exc is not None else None,
                "supervisor_generation": generation, "worker_id": worker}
