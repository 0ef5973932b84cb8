"""Candidate generation adapters (Memory RFC, "Candidate generation and model-free
fallback"): the provider pipeline, the built-in providers, Git change Sources, the
repository's contract Sources and the optional model extractor (OpenAI or Anthropic)."""

from __future__ import annotations

from powercontext.adapters.candidates.pipeline import (
    CandidateProvider,
    ExtractionRequest,
    ProviderPipeline,
    pipeline_from_registry,
)

__all__ = ["CandidateProvider", "ExtractionRequest", "ProviderPipeline", "pipeline_from_registry"]
