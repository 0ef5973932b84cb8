"""The ports of memory-candidate extraction (Memory RFC, "Candidate generation and
model-free fallback"): a candidate provider the CandidatePipeline runs, and the text
generation model the optional model-assisted extractor asks. typing.Protocols only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from powercontext.core.extraction.results import ExtractionRequest, ExtractionResult

__all__ = ["CandidateProvider", "GenerationModel"]


@runtime_checkable
class CandidateProvider(Protocol):
    """One candidate provider, registered by name through the
    ``powercontext_register_candidate_providers`` hook (Memory RFC, "Candidate generation
    and model-free fallback")."""

    async def propose(self, request: ExtractionRequest) -> ExtractionResult:
        """Untrusted memory candidates, refusals and notes for ``request`` (the operation's
        Sources, the current active entries and the Sources they cite); the pipeline
        screens every candidate before the planner sees it (Memory RFC, "Candidate
        generation and model-free fallback"). May raise a PowerContextError (a
        BackendError) when its backing service fails; the pipeline reports the provider
        as failed and runs the others."""
        ...


@runtime_checkable
class GenerationModel(Protocol):
    """A text generation model asked for structured JSON (Memory RFC, "Candidate
    generation and model-free fallback": the optional model-assisted extractor). The
    answer is untrusted and parsed by
    :func:`powercontext.core.extraction.parse_model_answer`."""

    async def generate(self, system: str, prompt: str) -> str:
        """The raw answer text to the ``system`` and user ``prompt`` (Memory RFC,
        "Candidate generation and model-free fallback"). Raises a PowerContextError (a
        BackendError) when the model is unreachable or refuses."""
        ...
