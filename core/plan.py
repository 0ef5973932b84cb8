"""The result of planning a write: a pure value the unit of work commits as is.

A planner (``powercontext.core.planning``) returns a :class:`MemoryPlan` or
:data:`NO_CHANGE`; it never returns an empty Revision.
"""

from __future__ import annotations

import attrs

from powercontext.core.models import (
    Artifact,
    ArtifactRef,
    MemoryContent,
    MemoryEntryVersion,
    RevisionLineage,
)

__all__ = ["NO_CHANGE", "MemoryPlan", "NoChange", "ProjectionRow"]


@attrs.frozen
class ProjectionRow:
    """One active-head projection row to write: the entry, its exact version and hash,
    the Analyzer v1 text for FTS, and the entry text (for embedding)."""

    entry_id: str
    entry_version_id: str
    entry_content_hash: str
    searchable_text: str
    text: str


@attrs.frozen
class MemoryPlan:
    """A planned Revision.

    ``base`` is the exact current head (None when the plan creates the Memory);
    ``revision`` is ``base.revision + 1`` (1 for a new Memory). ``content_bytes`` are the
    RFC 8785 bytes of ``content`` and ``content_hash`` their Artifact content hash.
    ``new_versions`` are the entry versions this Revision creates; ``upserts`` are the
    projection rows to (re)write and ``deletes`` the entry ids whose projection goes.
    ``evidence_artifacts`` are the operation's Artifact evidence as the caller gave it
    (ref, family, content hash), re-checked against the store inside the transaction.
    """

    artifact_id: str
    base: ArtifactRef | None
    revision: int
    content: MemoryContent
    content_bytes: bytes
    content_hash: str
    lineage: RevisionLineage
    new_versions: tuple[MemoryEntryVersion, ...]
    upserts: tuple[ProjectionRow, ...]
    deletes: tuple[str, ...]
    evidence_artifacts: tuple[Artifact, ...] = ()

    @property
    def ref(self) -> ArtifactRef:
        return ArtifactRef(self.artifact_id, self.revision)


@attrs.frozen
class NoChange:
    """The operation changes nothing; no Revision is built."""


NO_CHANGE = NoChange()
