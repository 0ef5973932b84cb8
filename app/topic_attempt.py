"""One processing attempt of one Window (Topic Memory RFC, "Cumulative work and evidence
ceilings", "Retry and observability"): its in-memory state, its failure codes, the
fields of its log records, and its stage calls, each reserved before it is made.

Every stage call is reserved first (:meth:`StageCalls.call`): the attempt's budget row
gets the model's ``max_requests`` and their token capacity in a short fenced
transaction committed before the call, never refunded. Allowance exhaustion anywhere,
mid-reduction included, is the terminal frontier ``window_provider_budget_exceeded``
(raised by the backend's ``reserve``).

Structured log records (logger ``powercontext.topic``) carry ``binding``,
``scope_id``, ``window_after``, ``window_through``, ``stage``, ``error_code``,
``attempt_count`` and ``exception_type`` as record attributes, and under a Supervisor
``supervisor_generation`` and ``worker_id`` (:data:`WORKER`); never Source text,
prompts, model output or secrets.
"""

from __future__ import annotations

import contextvars
import logging

import attrs

from powercontext.core.errors import (
    RevisionConflictError,
    SupervisorTermError,
    TopicProcessingError,
    describe_error,
    is_own_component,
)
from powercontext.core.topic import accumulate
from powercontext.core.topic.generation import StageRequest, StageResponse
from powercontext.core.topic.processing import BINDING, AttemptGrant
from powercontext.core.topic.supervision import CODE_TERM_LOST
from powercontext.core.topic.window import Window
from powercontext.ports.topic import TopicGenerationModel, TopicMemoryBackend

__all__ = [
    "CODE_CURSOR",
    "CODE_EMBEDDING",
    "CODE_FRAGMENT",
    "CODE_HEAD",
    "CODE_JOURNAL",
    "CODE_PROVIDER",
    "CODE_PUBLISH",
    "CODE_RETRIEVAL",
    "CODE_SUPERSEDED",
    "CODE_UNAVAILABLE",
    "CONTROL_CODES",
    "STAGE_CODES",
    "WORKER",
    "Attempt",
    "StageCalls",
    "attempt_fields",
    "conflict_code",
    "log_fields",
]

_log = logging.getLogger("powercontext.topic")

#: Failure codes of processing (bounded, ``[a-z_]``); the core's are in
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
#: The Supervisor context of the Window being processed (generation, Worker id), for
#: the log records; (None, None) outside a Supervisor. A context variable, so
#: concurrent Windows in one process keep their own.
WORKER: contextvars.ContextVar[tuple[int | None, str | None]] = contextvars.ContextVar(
    "powercontext_topic_worker", default=(None, None))
#: The code of an unexpected error, by the stage it happened in.
STAGE_CODES = {"window": CODE_JOURNAL, "probe": CODE_PROVIDER, "history": CODE_RETRIEVAL,
               "evolve": CODE_PROVIDER, "plan": CODE_PROVIDER, "temporary": CODE_PROVIDER,
               "reduce": CODE_PROVIDER, "reconcile": CODE_PROVIDER,
               "embed": CODE_EMBEDDING, "publish": CODE_PUBLISH}


@attrs.define
class Attempt:
    """The in-memory state of one attempt (never stored): its grant, the stage it is
    in (the failure code and the logs name it), its Window once selected, and the
    provider requests reserved so far."""

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
        """The end of the Window the logs and reservations name."""
        if self.window is not None:
            return self.window.through
        return self.rejected if self.rejected is not None else self.grant.source_after


def conflict_code(exc: RevisionConflictError) -> str:
    """The control code of a conflict at publication: a lost Supervisor term, a moved
    Cursor, a superseded attempt, else a moved head."""
    if isinstance(exc, SupervisorTermError):
        return CODE_TERM_LOST
    # the guards' messages start with these words (adapters/topic_publication.py)
    text = str(exc)
    if text.startswith("cursor moved"):
        return CODE_CURSOR
    if text.startswith("attempt superseded"):
        return CODE_SUPERSEDED
    return CODE_HEAD


def log_fields(scope: str, after: int, through: int, stage: str, code: str | None,
               attempts: int | None, exc: BaseException | None = None) -> dict[str, object]:
    """The structured fields of one log record (``extra=``), the Supervisor's
    generation and Worker id from :data:`WORKER`."""
    generation, worker = WORKER.get()
    return {"binding": BINDING, "scope_id": scope, "window_after": after,
            "window_through": through, "stage": stage, "error_code": code,
            "attempt_count": attempts,
            "exception_type": type(exc).__name__ if exc is not None else None,
            "supervisor_generation": generation, "worker_id": worker}


def attempt_fields(attempt: Attempt, stage: str, code: str | None = None,
                   exc: BaseException | None = None) -> dict[str, object]:
    """:func:`log_fields` of the attempt's Window (or its grant, before the Window)."""
    window = attempt.window
    if window is not None:
        return log_fields(window.scope_id, window.after, window.through, stage, code,
                          attempt.grant.attempt_count, exc)
    return log_fields(attempt.grant.scope_id, attempt.grant.source_after, attempt.through,
                      stage, code, attempt.grant.attempt_count, exc)


class StageCalls:
    """The stage calls of a processor: each one reserved on the attempt's budget row
    first, then made on the configured TopicGenerationModel and checked.

    ``model`` None: processing is unavailable (TopicProcessingError
    ``processing_unavailable`` at the first call)."""

    def __init__(self, backend: TopicMemoryBackend, model: TopicGenerationModel | None
                 ) -> None:
        self.backend = backend
        self.model = model

    def generation_model(self) -> TopicGenerationModel:
        """The configured model; TopicProcessingError ``processing_unavailable``
        (stage ``probe``) when there is none."""
        if self.model is None:
            raise TopicProcessingError(
                CODE_UNAVAILABLE, "no Topic generation provider is configured "
                "(inference.generation_provider)", stage="probe")
        return self.model

    async def call(self, attempt: Attempt, request: StageRequest) -> StageResponse:
        """One stage call, its reservation committed first (never refunded). Raises
        TopicProcessingError: the backend's (allowance exhausted, attempt superseded,
        term lost), the model's (its stage filled in; a plugin's message described
        without its text), ``provider_error`` for any other model failure, a response
        that is not a StageResponse, or more requests made than reserved."""
        model = self.generation_model()
        requests = model.max_requests
        try:
            await self.backend.reserve(attempt.grant, requests,
                                       requests * model.context_window_tokens,
                                       through=attempt.through)
        except TopicProcessingError as exc:
            # the allowance ran out (or the attempt was superseded) before this call
            if exc.stage in (None, "", "attempt"):
                exc.stage = request.stage
            raise
        attempt.reserved += requests
        if attempt.window is not None:
            # one line per stage call (shown by `topic process -v`): the stage, the
            # request's size and the total reserved; never any text
            _log.info("topic stage call (%s): ~%d tokens, %d request(s) reserved so far",
                      request.schema_name, request.estimated_tokens,
                      attempt.reserved, extra=attempt_fields(attempt, request.stage))
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

    def stage_call(self, attempt: Attempt) -> accumulate.StageCall:
        """:meth:`call` as the accumulator's ``StageCall`` (request -> output text),
        setting the attempt's stage to the request's."""
        async def call(request: StageRequest) -> str:
            attempt.stage = request.stage
            return (await self.call(attempt, request)).output_text
        return call
