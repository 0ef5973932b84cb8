"""One Window, end to end (Topic Memory RFC, "Reference-level explanation", "Storage,
Head, and atomic activation", "Retry and observability"): admit the attempt, select
the Window, run its stages, publish it with the Cursor CAS through the Topic service's
processing port, or roll it back whole and record why.

1. ``begin_attempt`` (the durable allowance; its own short transaction, committed
   before any Source is read): a terminal frontier or a fourth attempt stops here.
2. The Scope journal after the Cursor (at most the Window limit, never past the wave
   target) and :func:`~powercontext.core.topic.window.select_window`; a Source over a
   complexity ceiling persists ``source_complexity_limit`` (terminal). A Source over
   the Window token budget alone is its own (oversized) Window.
3. A Window of only lineage-only Sources publishes its guards with no model call.
4. Probes (:mod:`powercontext.topic_probing`), history
   (:mod:`powercontext.topic_retrieval`), the layered evolution
   (:mod:`powercontext.topic_evolution`) and, when the Window has a CREATE, second
   retrieval and reconciliation.
5. Hybrid projections reserved one request per embedded text; one publication with
   the Cursor CAS and advance, the Pending update and the budget-row delete (NOOP:
   zero writes, the Cursor still advances). Nothing intermediate (Probes, temporaries,
   reductions, plans) is ever stored. The published Window names the Sources no new
   Revision holds whole (:func:`powercontext.topic_report.left_out`).

Any failure rolls the Window back whole (nothing was published), stores a bounded code
on the attempt's budget row (best effort) and raises TopicProcessingError; the Cursor
is unchanged, so a retry starts from it. Reservations are never refunded.
"""

from __future__ import annotations

import logging

from powercontext.core.errors import (
    RevisionConflictError,
    TopicProcessingError,
    describe_error,
)
from powercontext.core.topic import projection as topic_projection
from powercontext.core.topic import stages
from powercontext.core.topic.models import PublicationGuards, TopicRef
from powercontext.core.topic.processing import (
    BINDING,
    BudgetRelease,
    CursorAdvance,
    PendingUpdate,
    ProcessingSettings,
)
from powercontext.core.topic.supervision import CODE_TERM_LOST, SupervisorTerm
from powercontext.core.topic.window import WindowRejection, estimate_tokens, select_window
from powercontext.ports.topic_publisher import TopicPublisher
from powercontext.topic_attempt import (
    CODE_JOURNAL,
    CODE_PUBLISH,
    CODE_SUPERSEDED,
    STAGE_CODES,
    Attempt,
    StageCalls,
    attempt_fields,
    conflict_code,
    log_fields,
)
from powercontext.topic_evolution import LayeredEvolution
from powercontext.topic_probing import ProbeStage
from powercontext.topic_report import LeftOut, WindowOutcome, left_out
from powercontext.topic_retrieval import HistoryRetrieval

__all__ = ["WindowRunner", "log_failure"]

_log = logging.getLogger("powercontext.topic")


def log_failure(scope: str, after: int, through: int, err: TopicProcessingError,
                attempts: int | None, cause: BaseException | None = None) -> None:
    """One warning record for a failed Window (its Scope, range, stage and code as
    fields, shown once by the formatter)."""
    _log.warning("topic window failed%s", " (terminal)" if err.terminal else "",
                 extra=log_fields(scope, after, through, err.stage, err.code,
                                  attempts, cause or err))


class WindowRunner:
    """Runs one Window of a Scope through ``publisher`` (the Topic service's
    processing port) under ``settings``, each model request a reserved call of
    ``calls``."""

    def __init__(self, publisher: TopicPublisher, settings: ProcessingSettings,
                 calls: StageCalls) -> None:
        self.publisher = publisher
        self.settings = settings
        self.calls = calls
        self.probing = ProbeStage(settings, calls)
        self.retrieval = HistoryRetrieval(publisher, settings, calls)
        self.evolution = LayeredEvolution(settings, calls)

    async def run(self, scope: str, after: int, target: int, claimed: int | None, *,
                  term: SupervisorTerm | None = None, pending: bool = True
                  ) -> WindowOutcome:
        """Admit an attempt of the Window after Cursor ``after`` (fenced by ``term``
        under a Supervisor), process it never past ``target`` and publish it; with
        ``pending`` the Window that reaches ``target`` handles the ``claimed`` flush
        generation (else Pending stays for the wave's cleanup). Any failure rolls the
        Window back whole and raises TopicProcessingError: the backend's or a stage's
        code, a conflict's control code (``cursor_conflict``, ``attempt_superseded``,
        ``head_conflict``, ``supervisor_term_lost``), else the code of the stage an
        unexpected error happened in (``provider_error``, ``retrieval_error``, ...)."""
        backend = self.publisher.backend
        try:
            if term is None:  # topic process: no Supervisor, no term
                grant = await backend.begin_attempt(scope, after)
            else:
                grant = await backend.begin_attempt(scope, after, supervisor=term)
        except TopicProcessingError as exc:
            if not exc.stage:
                exc.stage = "attempt"
            log_failure(scope, after, after, exc, None)
            raise
        attempt = Attempt(grant)
        try:
            return await self._run(attempt, scope, after, target, claimed, term=term,
                                   pending=pending)
        except TopicProcessingError as exc:
            await self._fail(attempt, exc)
            raise
        except RevisionConflictError as exc:
            err = TopicProcessingError(conflict_code(exc), str(exc), stage=attempt.stage)
            await self._fail(attempt, err, exc)
            raise err from exc
        except Exception as exc:
            code = STAGE_CODES.get(attempt.stage, CODE_PUBLISH)
            err = TopicProcessingError(code, describe_error(exc), stage=attempt.stage)
            await self._fail(attempt, err, exc)
            raise err from exc

    async def _run(self, attempt: Attempt, scope: str, after: int, target: int,
                   claimed: int | None, *, term: SupervisorTerm | None = None,
                   pending: bool = True) -> WindowOutcome:
        backend, settings = self.publisher.backend, self.settings
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
            await self.publisher.publish(scope, guards=guards)
            return self._outcome(attempt, (), (), 0)
        attempt.stage = "probe"
        probes = await self.probing.probes(attempt, window)
        attempt.stage = "history"
        candidates, history, found = await self.retrieval.history(attempt, scope, probes)
        handles = stages.history_handles(history)
        evolution = await self.evolution.global_evolution(attempt, window, history, handles)
        if evolution is None:
            evolution = await self.evolution.planned(attempt, window, probes, candidates,
                                                     handles, found)
        if evolution.creates:
            evolution = await self.retrieval.reconcile(attempt, scope, evolution)
        attempt.stage = "embed"
        await self._reserve_embedding(attempt, evolution)
        attempt.stage = "publish"
        published = await self.publisher.publish(
            scope,
            creates=[(c.content, c.sources) for c in evolution.creates],
            updates=[(u.base, u.content, u.sources) for u in evolution.updates],
            guards=guards)
        n = len(evolution.creates)
        return self._outcome(attempt, tuple(r.ref for r in published[:n]),
                             tuple(r.ref for r in published[n:]), evolution.noops,
                             left_out(window, evolution, attempt.condensed))

    def _outcome(self, attempt: Attempt, created: tuple[TopicRef, ...],
                 updated: tuple[TopicRef, ...], noops: int,
                 left: tuple[LeftOut, ...] = ()) -> WindowOutcome:
        window = attempt.window
        assert window is not None
        _log.info("topic window published: %d created, %d updated, %d noop, %d requests "
                  "reserved, %d Source(s) left out", len(created), len(updated), noops,
                  attempt.reserved, len(left), extra=attempt_fields(attempt, "publish"))
        return WindowOutcome(window.scope_id, window.after, window.through, created,
                             updated, noops, attempt.reserved, left)

    async def _reserve_embedding(self, attempt: Attempt, evolution: stages.Evolution) -> None:
        """Reserve one request per text a hybrid deployment embeds at publication."""
        if evolution.empty:
            return
        backend = self.publisher.backend
        caps = await backend.topic_capabilities()
        kind = caps.shape.kind if caps.shape is not None else caps.pending_kind
        if kind != "hybrid":
            return
        contents = [*(c.content for c in evolution.creates),
                    *(u.content for u in evolution.updates)]
        texts = [t for c in contents for t in topic_projection.embedding_texts(c)]
        await backend.reserve(attempt.grant, len(texts),
                              sum(estimate_tokens(t) for t in texts),
                              through=attempt.through)
        attempt.reserved += len(texts)

    async def _fail(self, attempt: Attempt, err: TopicProcessingError,
                    cause: BaseException | None = None) -> None:
        """Store the code on the attempt's budget row (best effort) and log."""
        grant = attempt.grant
        if not err.terminal and err.code not in (CODE_SUPERSEDED, CODE_TERM_LOST):
            try:
                await self.publisher.backend.record_failure(grant, err.code)
            except Exception as exc:  # best effort: the Window failed anyway
                _log.warning("topic failure code not stored",
                             extra=log_fields(grant.scope_id, grant.source_after,
                                              attempt.through, err.stage, err.code,
                                              grant.attempt_count, exc))
        log_failure(grant.scope_id, grant.source_after, attempt.through, err,
                    grant.attempt_count, cause)
