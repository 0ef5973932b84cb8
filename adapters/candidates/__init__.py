"""Candidate generation adapters (Memory RFC, "Candidate generation and model-free
fallback"): the provider pipeline, the built-in providers, Git change Sources, the
repository's contract Sources and the optional model extractor (OpenAI or Anthropic).
The providers register themselves by name through :mod:`.plugin`; importing this
package imports none of the modules above (the names below are imported on first use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from powercontext.adapters.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from powercontext.adapters.candidates.pipeline import (
        CandidateProvider,
        ExtractionRequest,
        ProviderPipeline,
        pipeline_from_registry,
    )

__all__ = ["CandidateProvider", "ExtractionRequest", "ProviderPipeline", "pipeline_from_registry"]

__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(__all__, "pipeline"))
