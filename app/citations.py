"""Handoff citations of the Memory service: making one and re-checking it (Memory RFC,
"Handoff citation")."""

from __future__ import annotations

from powercontext.core import canonical
from powercontext.core.errors import InvalidCitationError, InvalidInputError
from powercontext.core.models import (
    ArtifactRef,
    HandoffCitation,
    MemoryEntryVersion,
    MemoryHit,
)
from powercontext.ports import MemoryBackend

__all__ = ["Citations"]


class Citations:
    """Making and re-checking Handoff citations against ``backend``."""

    def __init__(self, backend: MemoryBackend) -> None:
        self._backend = backend

    @staticmethod
    def cite(
        hit: MemoryHit | MemoryEntryVersion, memory: ArtifactRef | None = None
    ) -> HandoffCitation:
        """The Handoff citation of a hit (see ``MemoryService.cite``)."""
        if isinstance(hit, MemoryHit):
            return HandoffCitation(hit.memory_ref, hit.entry_id, hit.entry_version_id)
        if memory is None:
            raise InvalidInputError("memory", "citing an entry version needs its Revision")
        return HandoffCitation(memory, hit.entry_id, hit.entry_version_id)

    async def validate(self, citation: HandoffCitation) -> MemoryEntryVersion:
        """The exact cited version; InvalidCitationError when anything differs."""
        if not isinstance(citation, HandoffCitation):
            raise InvalidCitationError("not a HandoffCitation")
        ref = citation.memory_ref
        if (not isinstance(ref, ArtifactRef) or isinstance(ref.revision, bool)
                or not isinstance(ref.revision, int) or ref.revision < 1):
            raise InvalidCitationError("memory_ref must be an ArtifactRef with an integer Revision")
        try:
            canonical.check_id(citation.memory_ref.artifact_id, "memory_ref.artifact_id")
            canonical.check_id(citation.entry_id, "entry_id")
            canonical.check_id(citation.entry_version_id, "entry_version_id")
        except InvalidInputError as exc:
            raise InvalidCitationError(str(exc)) from exc
        (version,) = await self._backend.expand([citation.as_hit()])
        return version
