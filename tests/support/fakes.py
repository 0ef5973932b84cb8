"""Test doubles. The in-memory backend ships in the contract kit
(:mod:`powercontext.testing.memory_backend`); it is re-exported here for the
tests that import it from ``support.fakes``. What stays here is test-only: scripted
candidate pipelines and counting models, no backend."""

from __future__ import annotations

from typing import Any

from powercontext.core.models import EmbeddingProfile
from powercontext.testing.memory_backend import InMemoryBackend

__all__ = ["CountingEmbeddingModel", "FakeCandidatePipeline", "InMemoryBackend"]


class FakeCandidatePipeline:
    """A CandidatePipeline that returns scripted candidates and records its calls."""

    def __init__(self, *results: tuple[Any, ...], providers: tuple[str, ...] = ("fake",)) -> None:
        self.results = list(results)
        self.providers = providers
        self.calls: list[tuple[Any, Any, Any]] = []

    async def extract(self, sources: Any, current_entries: Any,
                      providers: tuple[str, ...] | None = None) -> tuple[Any, ...]:
        from powercontext.core.errors import CapabilityNotSupportedError

        unknown = set(providers or ()) - set(self.providers)
        if unknown:
            raise CapabilityNotSupportedError(f"provider {sorted(unknown)[0]!r} is not configured")
        self.calls.append((sources, current_entries, providers))
        return self.results.pop(0) if self.results else ()


class CountingEmbeddingModel:
    """An EmbeddingModel wrapper that counts the texts it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def profile(self) -> EmbeddingProfile:
        return self.inner.profile  # type: ignore[no-any-return]

    async def embed(self, texts: tuple[str, ...]) -> Any:
        self.texts.extend(texts)
        return await self.inner.embed(texts)
