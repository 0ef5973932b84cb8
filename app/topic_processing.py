"""Topic processing on request: one Window at a time, end to end (Topic Memory RFC,
"Reference-level explanation": discover Pending -> read the Cursor -> select a bounded
Window -> evidence ids -> the Processor outside any transaction -> publish with the
Cursor CAS -> retry from the same Cursor after failure; "Probe and historical Topic
selection", "Global direct evolution", "Evolution operations and model output").

The normal path of part 2: the durable allowance admits the attempt (committed before
any Source is read), the Window is selected, Probes come from the eligible Sources,
history is selected through the enabled channels, the Global Topic Evolver writes the
final content when everything fits and each output binds to one target, and the
CREATEs and UPDATEs publish atomically with the Cursor advance, the Pending update and
the budget-row delete. Anything ambiguous, invalid or over a limit fails the Window
closed (TopicProcessingError); the Cursor is unchanged and a retry starts from it.

SKELETON: the public shapes are fixed; the bodies are filled by the pipeline engineer.
"""

from __future__ import annotations

import attrs

from powercontext.core.topic.models import TopicRef
from powercontext.core.topic.processing import ProcessingSettings, ScopeStatus
from powercontext.ports import EmbeddingModel
from powercontext.ports.topic import TopicGenerationModel
from powercontext.topic_service import TopicMemoryService

__all__ = ["ProcessReport", "TopicProcessor", "WindowOutcome"]


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
    ``window_attempt_limit``, or the code of the failed attempt)."""

    scope_id: str
    windows: tuple[WindowOutcome, ...]
    status: ScopeStatus
    stopped: str | None = None


class TopicProcessor:
    """Processes one Scope's Sources into Topics, in process (``topic process``).

    ``service``: the Topic service of the database; ``model``: the configured
    TopicGenerationModel (None: processing unavailable, and only a Window of
    lineage-only Sources can complete); ``settings``: the Window and history settings;
    ``embedding_model``: the deployment's model in a hybrid deployment (its texts are
    reserved one request each)."""

    def __init__(self, service: TopicMemoryService, model: TopicGenerationModel | None,
                 settings: ProcessingSettings | None = None, *,
                 embedding_model: EmbeddingModel | None = None) -> None:
        self.service = service
        self.model = model
        self.settings = settings or ProcessingSettings()
        self.embedding_model = embedding_model

    async def process_window(self, scope_id: str) -> WindowOutcome | None:
        """Process the next Window of the Scope and publish it, or raise
        TopicProcessingError (the Window rolled back whole, the Cursor unchanged).
        None when the Cursor already covers the Source head."""
        raise NotImplementedError

    async def process(self, scope_id: str) -> ProcessReport:
        """Run Windows until the Cursor covers the wave target (the Pending
        ``source_through`` frozen at the start, or the Source head), handling the
        claimed flush generation with the last Window; stop at the first failure
        (reported in ``stopped``, never raised for a processing failure)."""
        raise NotImplementedError
