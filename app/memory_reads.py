"""The reads of the Memory service: the head, capabilities, exact Revisions and entry versions,
``changes()``, ``expand()`` and the reread after an unknown COMMIT outcome (Memory RFC,
"Search and reads", "changes()", "expand()", "Concurrency and transactions")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from powercontext.core.errors import (
    ArtifactNotFoundError,
    CapabilityNotSupportedError,
    CommitOutcomeUnknownError,
    InvalidInputError,
)
from powercontext.core.models import (
    ArtifactRef,
    HandoffCitation,
    MemoryCapabilities,
    MemoryEntryVersion,
    MemoryHit,
    MemoryRevision,
    MemoryRevisionChanges,
)
from powercontext.memory_embedding import MemoryEmbedding
from powercontext.ports import MemoryBackend, MemoryInventory

__all__ = ["MemoryReads"]


class MemoryReads:
    """Read operations over ``backend`` (one read transaction each in the backend);
    ``embedding`` decides whether vector search is on."""

    def __init__(self, backend: MemoryBackend, embedding: MemoryEmbedding) -> None:
        self._backend = backend
        self._embedding = embedding

    async def head(self, memory: ArtifactRef | str) -> ArtifactRef:
        """The current head of a Memory. ArtifactNotFoundError when there is none."""
        artifact_id = memory if isinstance(memory, str) else memory.artifact_id
        head = await self._backend.head(artifact_id)
        if head is None:
            raise ArtifactNotFoundError(f"no Memory Artifact {artifact_id!r}")
        return head

    async def capabilities(self) -> MemoryCapabilities:
        """Backend capabilities, with vector and hybrid off when no matching model is set."""
        caps = await self._backend.capabilities()
        reasons = list(caps.reasons)
        vector = caps.vector
        model = self._embedding.model
        if vector and model is None:
            vector = False
            reasons.append("no embedding model is configured")
        elif vector and model is not None and model.profile != caps.embedding_profile:
            vector = False
            reasons.append("the embedding model's profile differs from the database's")
        return MemoryCapabilities(
            caps.fts, vector, vector and caps.fts, caps.embedding_profile, tuple(reasons)
        )

    async def commit_landed(self, error: CommitOutcomeUnknownError) -> bool:
        """See :meth:`powercontext.service.MemoryService.commit_landed`."""
        planned = error.planned
        if not isinstance(planned, ArtifactRef) or error.content_hash is None:
            raise InvalidInputError("error", "names no planned Revision")
        head = await self._backend.head(planned.artifact_id)
        if head is None or head.revision < planned.revision:
            return False
        rev = await self._backend.load_revision(planned)
        return rev.content_hash == error.content_hash

    async def inventory(self) -> dict[str, Any]:
        """See :meth:`powercontext.service.MemoryService.inventory`."""
        if not isinstance(self._backend, MemoryInventory):
            raise CapabilityNotSupportedError(
                f"{type(self._backend).__name__} cannot list its Memories")
        return await self._backend.inventory()

    async def revision(self, memory: ArtifactRef) -> MemoryRevision:
        """The validated Revision ``memory`` names (any Revision, not only the head)."""
        return await self._backend.load_revision(memory)

    async def entries(
        self, memory: ArtifactRef, entry_ids: Sequence[str] | None = None
    ) -> dict[str, MemoryEntryVersion]:
        """Entry versions the manifest of ``memory`` points to, by entry_id."""
        return await self._backend.load_entry_versions(memory, entry_ids)

    async def changes(
        self, memory: ArtifactRef, since_revision: int | None = None
    ) -> tuple[MemoryRevisionChanges, ...]:
        """Memory RFC, "changes()". ``since_revision`` is exclusive; 0 reads the whole
        history; None only the target Revision. ArtifactNotFoundError / ValueError."""
        return await self._backend.changes(memory, since_revision)

    async def expand(
        self, hits: Sequence[MemoryHit | HandoffCitation], layer: str = "full"
    ) -> tuple[MemoryEntryVersion, ...]:
        """Memory RFC, "expand()": the exact entry versions the anchors name.
        InvalidCitationError on any mismatch of id, version, hash or canonical bytes."""
        if layer != "full":
            raise InvalidInputError("layer", "only 'full' is defined")
        anchors = [h if isinstance(h, MemoryHit) else h.as_hit() for h in hits]
        return await self._backend.expand(anchors)
