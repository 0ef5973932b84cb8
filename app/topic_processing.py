"""Topic processing on request: one Window at a time, end to end (Topic Memory RFC,
"Reference-level explanation": discover Pending -> read the Cursor -> select a bounded
Window -> evidence ids -> the Processor outside any transaction -> publish with the
Cursor CAS -> retry from the same Cursor after failure; "Probe and historical Topic
selection", "Global direct evolution", "Evolution operations and model output",
"Retry and observability").

:class:`TopicProcessor` runs a Scope's Windows until the wave target is covered (``topic
process``), or one Window of a Supervisor's assignment. It depends on the Topic
service only through its processing port
(:class:`powercontext.ports.topic_publisher.TopicPublisher`: the backend, the query
vector, the publication). One concept per module below it:

- :mod:`powercontext.topic_window_runner`: one Window end to end (attempt admission,
  Window selection, the stages in order, publication with the Cursor CAS, or roll back
  and record the failure code);
- :mod:`powercontext.topic_attempt`: one attempt's in-memory state, the failure codes,
  the structured log fields, and every stage call reserved before it is made (allowance
  exhaustion anywhere, mid-reduction included, is the terminal frontier
  ``window_provider_budget_exceeded``);
- :mod:`powercontext.topic_probing`: the Probe requests and the fragment Probes'
  accumulator;
- :mod:`powercontext.topic_retrieval`: history selection for the Probes, and the second
  retrieval and reconciliation of the CREATEs;
- :mod:`powercontext.topic_evolution`: the Global Topic Evolver, the Work Planner, the
  Item Evolver and temporary Topics;
- :mod:`powercontext.topic_report`: what a published Window and a run report.

Any failure rolls the Window back whole (nothing was published), stores a bounded code
on the attempt's budget row (best effort) and raises TopicProcessingError; the Cursor
is unchanged, so a retry starts from it. Reservations are never refunded.

Under the Supervisor a Window runs from a
:class:`~powercontext.core.topic.supervision.WorkAssignment`: its term fences the
attempt admission, every reservation, the failure code and the publication (a lost
term is ``supervisor_term_lost``, a control signal), and its mode picks the Pending
update: ``explicit`` handles the claimed flush generation with the Window that reaches
the target, ``auto`` and ``catchup`` advance the Cursor and leave Pending in place
(the automatic wave's completion cleans up; Topic Memory RFC, "Automatic scheduling").
The log records then carry ``supervisor_generation`` and ``worker_id``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import attrs

from powercontext.core.errors import TopicProcessingError
from powercontext.core.topic import content as topic_content
from powercontext.core.topic.processing import ProcessingSettings, ScopeStatus, check_settings
from powercontext.core.topic.supervision import WorkAssignment
from powercontext.ports import EmbeddingModel
from powercontext.ports.topic import TopicGenerationModel
from powercontext.ports.topic_publisher import TopicPublisher
from powercontext.topic_attempt import (
    CODE_EMBEDDING,
    CODE_FRAGMENT,
    CODE_PROVIDER,
    CODE_PUBLISH,
    CODE_RETRIEVAL,
    CODE_UNAVAILABLE,
    CONTROL_CODES,
    WORKER,
    StageCalls,
)
from powercontext.topic_report import ProcessReport, WindowOutcome
from powercontext.topic_window_runner import WindowRunner

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


#: The Topic service a processor publishes through (its owner gets the same type back
#: as ``processor.service``, to search, read or close it).
Service = TypeVar("Service", bound=TopicPublisher)


class TopicProcessor(Generic[Service]):
    """Processes one Scope's Sources into Topics, in process (``topic process``).

    ``service``: the Topic service of the database, through its processing port
    (:class:`~powercontext.ports.topic_publisher.TopicPublisher`; a
    :class:`~powercontext.topic_service.TopicMemoryService`); ``model``: the configured
    TopicGenerationModel (None: processing unavailable, and only a Window of
    lineage-only Sources can complete; any other Window fails with
    ``processing_unavailable`` after its attempt was admitted); ``settings``: the
    Window and history settings (InvalidInputError naming a setting out of range; the
    context window budgeted is the smaller of the settings' and the model's);
    ``embedding_model``: the deployment's model in a
    hybrid deployment (its texts are reserved one request each; default: the
    service's)."""

    def __init__(self, service: Service, model: TopicGenerationModel | None,
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
        self._runner = WindowRunner(service, chosen, StageCalls(service.backend, model))

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
        return await self._runner.run(scope, status.cursor, target, claimed)

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
                outcome = await self._runner.run(scope, cursor, target, claimed)
            except TopicProcessingError as exc:
                if exc.code in CONTROL_CODES:
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
        token = WORKER.set((assignment.term.generation, assignment.worker_id))
        try:
            status = await self._status(scope)
            if status.cursor != assignment.source_after or status.cursor >= assignment.target:
                return None
            explicit = assignment.mode == "explicit"
            claimed = assignment.claimed_flush_generation if explicit else None
            return await self._runner.run(scope, status.cursor, assignment.target, claimed,
                                      term=assignment.term, pending=explicit)
        finally:
            WORKER.reset(token)

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

