"""The CandidatePipeline that runs plugin-registered candidate providers (Memory RFC,
"Candidate generation and model-free fallback"; ports.CandidatePipeline).

Each provider proposes untrusted candidates from the operation's persisted Sources and
the current active entries; the pipeline screens them mechanically
(:func:`powercontext.core.extraction.screen_memory_candidates`) and hands the survivors to
``MemoryService.remember``, where they pass the same planner validation as explicit
entries. The pipeline never writes to the database and never decides the head.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, final

import attrs

from powercontext.core.errors import (
    ArtifactNotFoundError,
    CapabilityNotSupportedError,
    PowerContextError,
)
from powercontext.core.extraction import ExtractionResult, screen_memory_candidates
from powercontext.core.extraction.results import ExtractionRequest
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source
from powercontext.ports.extraction import CandidateProvider

if TYPE_CHECKING:
    from powercontext.plugins.registry import Registry
    from powercontext.ports import SourceStore

__all__ = ["CandidateProvider", "ExtractionRequest", "ProviderPipeline", "pipeline_from_registry"]


@final
class ProviderPipeline:
    """Runs providers in order and screens their candidates.

    ``providers`` maps names to provider objects (order = run order); ``unavailable``
    maps the names of registered-but-unconfigured providers to why; ``default`` is the
    names run when the caller names none (all available ones by default);
    ``source_store`` reads the Sources the current entries cite, so providers can tell
    when a link to an old entry is certain; ``max_current`` bounds the entries shown to
    providers. After each call :attr:`last_result` holds the full
    :class:`~powercontext.core.extraction.ExtractionResult` (refusals and notes).
    """

    def __init__(
        self,
        providers: Mapping[str, CandidateProvider],
        *,
        unavailable: Mapping[str, str] | None = None,
        default: Sequence[str] | None = None,
        source_store: SourceStore | None = None,
        max_current: int = 256,
    ) -> None:
        self.providers = dict(providers)
        self.unavailable = dict(unavailable or {})
        self.default = tuple(default) if default is not None else tuple(self.providers)
        self.source_store = source_store
        self.max_current = max_current
        self.last_result = ExtractionResult()

    async def extract(
        self,
        sources: tuple[Source, ...],
        current_entries: tuple[MemoryEntryVersion, ...],
        providers: tuple[str, ...] | None = None,
    ) -> tuple[MemoryEntryInput, ...]:
        """ports.CandidatePipeline: the screened candidates (possibly none).
        CapabilityNotSupportedError when ``providers`` names a provider that is not
        registered or not configured."""
        result = await self.run(sources, current_entries, providers)
        return result.candidates

    async def run(
        self,
        sources: Sequence[Source],
        current_entries: Sequence[MemoryEntryVersion],
        providers: Sequence[str] | None = None,
    ) -> ExtractionResult:
        """Like :meth:`extract` but returns the whole result (also kept in
        :attr:`last_result`). A provider that raises a PowerContextError adds a note and
        proposes nothing; the others still run."""
        names = tuple(providers) if providers is not None else self.default
        for name in names:
            if name not in self.providers:
                why = self.unavailable.get(name, "no such provider is registered")
                raise CapabilityNotSupportedError(f"candidate provider {name!r}: {why}")
        current = tuple(current_entries)[: self.max_current]
        request = ExtractionRequest(tuple(sources), current, await self._evidence(sources, current))
        proposed: list[tuple[str, MemoryEntryInput]] = []
        result = ExtractionResult()
        for name in names:
            try:
                out = await self.providers[name].propose(request)
            except PowerContextError as exc:
                result += ExtractionResult(notes=(f"provider {name} failed: {exc}",))
                continue
            proposed.extend((name, c) for c in out.candidates)
            result += ExtractionResult((), tuple(attrs.evolve(r, provider=r.provider or name)
                                                 for r in out.refused),
                                       tuple(f"{name}: {n}" for n in out.notes), out.dropped)
        screened = screen_memory_candidates(proposed, request.sources, current)
        self.last_result = ExtractionResult(screened.candidates,
                                            result.refused + screened.refused, result.notes,
                                            result.dropped)
        return self.last_result

    async def _evidence(self, sources: Sequence[Source],
                        current: Sequence[MemoryEntryVersion]) -> dict[str, Source]:
        known = {s.source_id: s for s in sources}
        wanted = sorted({r.source_id for e in current for r in e.sources} - set(known))
        if self.source_store is None or not wanted:
            return known
        try:
            found = await self.source_store.get_sources(wanted)
        except ArtifactNotFoundError:
            found = ()
            for sid in wanted:
                try:
                    found += tuple(await self.source_store.get_sources([sid]))
                except ArtifactNotFoundError:
                    continue
        known.update((s.source_id, s) for s in found)
        return known


def pipeline_from_registry(
    registry: Registry,
    *,
    source_store: SourceStore | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    default: Sequence[str] | None = None,
) -> ProviderPipeline:
    """Build every candidate provider the registry knows (``options[name]`` are its
    factory keywords). A factory that raises CapabilityNotSupportedError or ImportError
    (e.g. the model extractor without a configured model or SDK) makes that provider
    unavailable: the default run skips it, an explicit request raises
    CapabilityNotSupportedError."""
    options = options or {}
    built: dict[str, CandidateProvider] = {}
    unavailable: dict[str, str] = {}
    factories: dict[str, Any] = dict(registry.candidate_providers())
    for name, factory in sorted(factories.items()):
        try:
            built[name] = factory(**dict(options.get(name, {})))
        except (CapabilityNotSupportedError, ImportError) as exc:
            unavailable[name] = f"not configured: {exc}"
    chosen = tuple(n for n in default if n in built) if default is not None else None
    return ProviderPipeline(built, unavailable=unavailable, default=chosen,
                            source_store=source_store)
