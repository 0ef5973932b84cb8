"""Candidate generation adapters (Memory RFC, "Candidate generation and model-free
fallback"): the provider pipeline, the built-in providers, Git change Sources, the
repository's contract Sources and the optional model extractor (OpenAI or Anthropic).
The providers register themselves by name through :mod:`.plugin`; importing this
package imports none of the modules above: each name is imported when it is first named
(PEP 562)."""

from __future__ import annotations

from typing import Any

from powercontext.adapters import lazy_export

__all__ = ["CandidateProvider", "ExtractionRequest", "ProviderPipeline", "pipeline_from_registry"]

#: Where each public name lives (its module in this package).
_HOMES = dict.fromkeys(__all__, "pipeline")


def __getattr__(name: str) -> Any:
    return lazy_export(__name__, _HOMES, name)
