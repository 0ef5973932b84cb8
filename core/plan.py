"""The result of planning a write: a pure value the unit of work commits as is.

A planner (``powercontext.core.planning``) returns a :class:`MemoryPlan` or
:data:`NO_CHANGE`; it never returns an empty Revision.
"""

from __future__ import annotations

import functools
from typing import Any

import attrs

from powercontext.core import manifest
from powercontext.core.canonical import artifact_content_hash
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
    ``revision`` is ``base.revision + 1`` (1 for a new Memory). ``content_hash`` is the
    Artifact content hash of the RFC 8785 bytes of ``content``: :attr:`content_bytes`,
    which a caller may give (keyword ``content_bytes``; the unit of work then requires
    them to be exactly those bytes) or leave to be derived from ``content`` (a planner
    leaves them: a large manifest's bytes are never joined on the write path).
    ``new_versions`` are the entry versions this Revision creates; ``upserts`` are the
    projection rows to (re)write and ``deletes`` the entry ids whose projection goes.
    ``evidence_artifacts`` are the operation's Artifact evidence as the caller gave it
    (ref, family, content hash), re-checked against the store inside the transaction.
    """

    artifact_id: str
    base: ArtifactRef | None
    revision: int
    content: MemoryContent
    content_hash: str
    lineage: RevisionLineage
    new_versions: tuple[MemoryEntryVersion, ...]
    upserts: tuple[ProjectionRow, ...]
    deletes: tuple[str, ...]
    evidence_artifacts: tuple[Artifact, ...] = ()
    #: the bytes the caller claims (None: derived from ``content``)
    given_bytes: bytes | None = attrs.field(default=None, kw_only=True, alias="content_bytes")

    @property
    def ref(self) -> ArtifactRef:
        return ArtifactRef(self.artifact_id, self.revision)

    @functools.cached_property
    def content_bytes(self) -> bytes:
        """The canonical bytes: as given, else those of ``content`` (joined from the
        manifest's chunks, once per plan value)."""
        if self.given_bytes is not None:
            return self.given_bytes
        return manifest.content_bytes(self.content)

    @functools.cached_property
    def content_hash_matches(self) -> bool:
        """Whether ``content_hash`` is the Artifact content hash of :attr:`content_bytes`
        (SHA-256, Memory RFC, "Normalization, hashing, and the search analyzer").
        Computed once per plan value (over the manifest's chunks when the bytes are
        derived); a plan built by :meth:`hashed` knows it already, so the unit of work
        does not hash the same megabytes again. A copy or an ``attrs.evolve`` computes
        it afresh."""
        if self.given_bytes is not None:
            return artifact_content_hash(self.given_bytes) == self.content_hash
        return manifest.content_digest(self.content) == self.content_hash

    @classmethod
    def hashed(cls, *, content_bytes: bytes | None = None, **fields: Any) -> MemoryPlan:
        """A plan whose ``content_hash`` is computed here (from ``content_bytes`` when
        given, else over the chunks of ``fields["content"]``; the other fields as for
        the constructor), with :attr:`content_hash_matches` recorded."""
        if content_bytes is not None:
            digest = artifact_content_hash(content_bytes)
        else:
            digest = manifest.content_digest(fields["content"])
        plan = cls(content_bytes=content_bytes, content_hash=digest, **fields)
        object.__setattr__(plan, "content_hash_matches", True)  # the cached_property's slot
        return plan


@attrs.frozen
class NoChange:
    """The operation changes nothing; no Revision is built."""


NO_CHANGE = NoChange()
