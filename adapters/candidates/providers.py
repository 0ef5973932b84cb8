"""The built-in candidate providers (Memory RFC, "Candidate generation and model-free
fallback"), registered by name through the ``powercontext_register_candidate_providers``
hook:

=============== =====================================================================
``contract``    pyproject.toml / Makefile / tox.ini / package.json topic entries
``rules``       explicit rules of AGENTS.md, CLAUDE.md, CONTRIBUTING.md and user notes
``git``         rule revisions certain from a Git change patch
``structured``  decisions, constraints, ... given by the caller as ``memory.*`` Sources
``task_outcome`` the session's mechanical working_note, revised turn by turn
``model``       the optional model extractor (a GenerationModel; OpenAI or Anthropic)
=============== =====================================================================

Each factory takes keyword options and returns an object with
``async propose(ExtractionRequest) -> ExtractionResult``.
"""

from __future__ import annotations

import os
from typing import Any, final

from powercontext.adapters.candidates.pipeline import ExtractionRequest
from powercontext.core import extraction as C
from powercontext.core.errors import CapabilityNotSupportedError
from powercontext.ports.extraction import GenerationModel

__all__ = [
    "ContractProvider",
    "GitChangeProvider",
    "ModelProvider",
    "RuleProvider",
    "StructuredProvider",
    "TaskOutcomeProvider",
]

ENV_MODEL = "POWERCONTEXT_EXTRACTOR_MODEL"
ENV_BASE_URL = "POWERCONTEXT_EXTRACTOR_BASE_URL"
ENV_API_KEY = "POWERCONTEXT_EXTRACTOR_API_KEY"
ENV_PROVIDER = "POWERCONTEXT_EXTRACTOR_PROVIDER"


@final
class ContractProvider:
    """Topic entries from contract files (``core.extraction.contract_candidates``)."""

    async def propose(self, request: ExtractionRequest) -> C.ExtractionResult:
        return C.contract_candidates(request.sources, request.current, request.evidence)


@final
class RuleProvider:
    """Explicit rules (:func:`~powercontext.core.extraction.rule_candidates`)."""

    async def propose(self, request: ExtractionRequest) -> C.ExtractionResult:
        return C.rule_candidates(request.sources, request.current)


@final
class GitChangeProvider:
    """Certain rule revisions from Git patches (``core.extraction.git_change_candidates``)."""

    async def propose(self, request: ExtractionRequest) -> C.ExtractionResult:
        return C.git_change_candidates(request.sources, request.current, request.evidence)


@final
class StructuredProvider:
    """Caller-given structured entries (``core.extraction.structured_candidates``)."""

    async def propose(self, request: ExtractionRequest) -> C.ExtractionResult:
        return C.structured_candidates(request.sources, request.current)


@final
class TaskOutcomeProvider:
    """The working_note fallback (:func:`~powercontext.core.extraction.task_outcome_candidates`)."""

    async def propose(self, request: ExtractionRequest) -> C.ExtractionResult:
        return C.task_outcome_candidates(request.sources, request.current, request.evidence)


@final
class ModelProvider:
    """The optional model extractor.

    ``model`` is any :class:`~powercontext.ports.extraction.GenerationModel`; without
    one, an :class:`~powercontext.adapters.candidates.openai_model.OpenAIGenerationModel`
    (``provider`` "openai", the default) or an
    :class:`~powercontext.adapters.candidates.anthropic_model.AnthropicGenerationModel`
    (``provider`` "anthropic") is built from ``model_name``/``base_url``/``api_key``/
    ``timeout`` or the environment (``POWERCONTEXT_EXTRACTOR_MODEL``,
    ``POWERCONTEXT_EXTRACTOR_BASE_URL``, ``POWERCONTEXT_EXTRACTOR_API_KEY``,
    ``POWERCONTEXT_EXTRACTOR_PROVIDER``). Raises CapabilityNotSupportedError when no
    model is configured or the provider is neither "openai" nor "anthropic".
    ``max_prompt_chars`` bounds the prompt. The answer is parsed by
    :func:`~powercontext.core.extraction.parse_model_answer`: a malformed answer gives
    no candidates and a note; the Sources stay stored either way.
    """

    def __init__(self, model: GenerationModel | None = None, *, model_name: str | None = None,
                 base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 30.0, max_prompt_chars: int = 24000,
                 provider: str | None = None) -> None:
        if model is None:
            name = model_name or os.environ.get(ENV_MODEL)
            if not name:
                raise CapabilityNotSupportedError(
                    f"no extraction model is configured (set {ENV_MODEL} and {ENV_BASE_URL})")
            kind = (provider or os.environ.get(ENV_PROVIDER) or "openai").strip().lower()
            factory: type[Any]
            if kind == "openai":
                from powercontext.adapters.candidates.openai_model import OpenAIGenerationModel

                factory = OpenAIGenerationModel
            elif kind == "anthropic":
                from powercontext.adapters.candidates.anthropic_model import (
                    AnthropicGenerationModel,
                )

                factory = AnthropicGenerationModel
            else:
                raise CapabilityNotSupportedError(
                    f"unknown extraction model provider {kind!r} in {ENV_PROVIDER} "
                    "(expected 'openai' or 'anthropic')")
            model = factory(
                name, base_url=base_url or os.environ.get(ENV_BASE_URL),
                api_key=api_key or os.environ.get(ENV_API_KEY), timeout=timeout)
        self.model = model
        self.max_prompt_chars = max_prompt_chars

    async def propose(self, request: ExtractionRequest) -> C.ExtractionResult:
        if not request.sources:
            return C.ExtractionResult()
        system, prompt = C.model_prompt(request.sources, request.current, self.max_prompt_chars)
        answer = await self.model.generate(system, prompt)
        return C.parse_model_answer(answer, request.sources, request.current)
