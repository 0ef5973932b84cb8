"""Handoff citations of MemoryService: ``cite()`` and ``validate_citation()`` (Memory
RFC, "Handoff citation")."""

from __future__ import annotations

from powercontext._service_core import ServiceCore
from powercontext.core import canonical
from powercontext.core.errors import InvalidCitationError, InvalidInputError
from powercontext.core.models import (
    ArtifactRef,
    HandoffCitation,
    MemoryEntryVersion,
    MemoryHit,
)

__all__ = ["CitationOps"]


class CitationOps(ServiceCore):
    """Making and re-checking Handoff citations."""

    @staticmethod
    def cite(
        hit: MemoryHit | MemoryEntryVersion, memory: ArtifactRef | None = None
    ) -> HandoffCitation:
        """The Handoff citation of a hit (or of an entry version read at ``memory``):
        ArtifactRef + entry_id + entry_version_id (Memory RFC, "Handoff citation")."""
        if isinstance(hit, MemoryHit):
            return HandoffCitation(hit.memory_ref, hit.entry_id, hit.entry_version_id)
        if memory is None:
            raise InvalidInputError("memory", "citing an entry version needs its Revision")
        return HandoffCitation(memory, hit.entry_id, hit.entry_version_id)

    async def validate_citation(self, citation: HandoffCitation) -> MemoryEntryVersion:
        """Re-read the cited Revision and check id, version, hash and canonical bytes.
        Returns the exact version; InvalidCitationError when anything differs."""
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
        (version,) = await self.backend.expand([citation.as_hit()])
        return version
