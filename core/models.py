"""Frozen value objects of the Memory family (Memory RFC, "Data model").

Every model is an ``attrs`` frozen class; the canonical JSON of each is produced by
:mod:`powercontext.core.canonical` through one private cattrs converter.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal

import attrs

__all__ = [
    "ENTRY_KINDS",
    "MANIFEST_FORMAT",
    "MEMORY_SCHEMA",
    "Artifact",
    "ArtifactRef",
    "Channel",
    "CurrentHead",
    "EmbeddingProfile",
    "EmbeddingResult",
    "EmbeddingVector",
    "HandoffCitation",
    "InferenceUsage",
    "MemoryCapabilities",
    "MemoryChange",
    "MemoryContent",
    "MemoryEntryInput",
    "MemoryEntryVersion",
    "MemoryHit",
    "MemoryManifest",
    "MemoryManifestEntry",
    "MemoryRevision",
    "MemoryRevisionChanges",
    "MemorySearchRequest",
    "MemorySearchResult",
    "RevisionLineage",
    "SearchMode",
    "Source",
    "SourceRef",
]

MEMORY_SCHEMA = "powercontext.memory.v1"
MANIFEST_FORMAT = "flat-v1"
#: The known MVP kinds. The wire value is any non-empty string; unknown kinds are kept.
ENTRY_KINDS = ("fact", "preference", "decision", "constraint", "working_note")

EntryState = Literal["active", "inactive"]
ChangeOp = Literal["add", "revise", "deactivate", "reactivate"]
SearchMode = Literal["fts", "vector", "hybrid", "auto"]
Channel = Literal["fts", "vector"]
EmbeddingVector = tuple[float, ...]


@attrs.frozen(order=True)
class ArtifactRef:
    """An exact Artifact Revision: ``(artifact_id, revision)``; revision >= 1."""

    artifact_id: str
    revision: int


@attrs.frozen(order=True)
class CurrentHead:
    """"The current head of Memory ``artifact_id``", as a search names it (Memory RFC,
    "Search and reads"). The backend reads the head inside the search's own read
    transaction, so a write committed between naming and searching is never mistaken
    for a non-head Revision; hits carry the exact ArtifactRef that was read."""

    artifact_id: str


@attrs.frozen(order=True)
class SourceRef:
    """The stable reference to a persisted Source: its id and content hash (64 hex)."""

    source_id: str
    content_hash: str


@attrs.frozen
class Source:
    """An immutable piece of evidence: a file snapshot, user note, agent turn, task
    outcome, Git change or structured decision.

    ``kind`` is a free string (``file``, ``user_note``, ``agent_turn``, ``task_outcome``,
    ``git_change``, ``decision``, ...); ``content`` is its text; ``uri`` where it came
    from; ``metadata`` sorted ``(key, value)`` string pairs (for a Git change: base and
    head commit, paths). ``content_hash`` commits to all of these
    (see :func:`powercontext.core.canonical.source_content_hash`).
    """

    source_id: str
    kind: str
    content: str
    content_hash: str
    uri: str | None = None
    metadata: tuple[tuple[str, str], ...] = ()

    @property
    def ref(self) -> SourceRef:
        return SourceRef(self.source_id, self.content_hash)


@attrs.frozen
class Artifact:
    """An upstream Artifact Revision used as evidence: its exact ref, family and content hash."""

    ref: ArtifactRef
    family: str
    content_hash: str


@attrs.frozen
class MemoryManifestEntry:
    """One manifest item: entry id, current version id, its content hash, and state."""

    entry_id: str
    entry_version_id: str
    entry_content_hash: str
    state: EntryState


@attrs.frozen
class MemoryManifest:
    """The authoritative directory of a Revision; entries sorted by UTF-8 entry_id, unique
    (a tuple, or the chunked sequence :mod:`powercontext.core.manifest_chunks` keeps, which
    compares and hashes equal to the tuple of its items)."""

    entries: Sequence[MemoryManifestEntry]
    format: str = MANIFEST_FORMAT

    @functools.cached_property
    def memo(self) -> dict[str, Any]:
        """Values derived from this manifest object, kept by the module that derives
        them (:func:`powercontext.core.manifest.view` keeps a weak reference to the
        manifest's view here). Not part of the value: no effect on equality, hashing,
        repr or canonical JSON; a copy or an ``attrs.evolve`` starts empty."""
        return {}


@attrs.frozen
class MemoryChange:
    """One change of a Revision (Memory RFC, "MemoryContent").

    add = (None, new), revise = (old, new), deactivate = (current, None),
    reactivate = (None, current). ``reason`` is at most 512 code points.
    """

    op: ChangeOp
    entry_id: str
    from_entry_version_id: str | None
    to_entry_version_id: str | None
    reason: str | None = None


@attrs.frozen
class MemoryContent:
    """The content of a Memory Artifact Revision: the manifest and the compact changes."""

    manifest: MemoryManifest
    changes: tuple[MemoryChange, ...]
    schema: str = MEMORY_SCHEMA


@attrs.frozen
class RevisionLineage:
    """Generic Revision lineage: the operation evidence only, each tuple sorted and unique."""

    sources: tuple[SourceRef, ...] = ()
    artifacts: tuple[ArtifactRef, ...] = ()


@attrs.frozen
class MemoryRevision:
    """A stored Revision: its ref, content, content hash and lineage."""

    ref: ArtifactRef
    content: MemoryContent
    content_hash: str
    lineage: RevisionLineage


@attrs.frozen
class MemoryEntryVersion:
    """An immutable content version of one entry (Memory RFC, "MemoryEntryVersion").

    ``sources`` and ``artifacts`` hold the references of the evidence that directly
    supports the content, each sorted and unique.
    """

    memory_artifact_id: str
    entry_id: str
    entry_version_id: str
    version: int
    previous_version_id: str | None
    kind: str
    text: str
    sources: tuple[SourceRef, ...]
    artifacts: tuple[ArtifactRef, ...]
    entry_content_hash: str
    created_in_revision: int


@attrs.frozen
class MemoryEntryInput:
    """A candidate entry (Memory RFC, "MemoryEntryInput").

    ``entry=None`` adds a new entry; the exact current active version revises it.
    ``sources``/``artifacts`` must lie within the operation evidence (and, for a
    revision, the predecessor's evidence).
    """

    kind: str
    text: str
    entry: MemoryEntryVersion | None = None
    sources: tuple[Source, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    reason: str | None = None


@attrs.frozen
class EmbeddingProfile:
    """The deployment's one fixed embedding profile (Memory RFC, "Backend capabilities")."""

    profile_id: str
    model: str
    dimension: int
    distance: str = "l2"
    normalization: str = "unit"


@attrs.frozen
class InferenceUsage:
    """Model usage of one call: input tokens (0 when unknown) and the number of texts."""

    input_tokens: int = 0
    texts: int = 0


@attrs.frozen
class EmbeddingResult:
    """Vectors in input order plus usage."""

    vectors: tuple[EmbeddingVector, ...]
    usage: InferenceUsage = InferenceUsage()


@attrs.frozen
class MemoryCapabilities:
    """What the backend (with its model) can serve; ``reasons`` says why something is off."""

    fts: bool
    vector: bool
    hybrid: bool
    embedding_profile: EmbeddingProfile | None
    reasons: tuple[str, ...] = ()


@attrs.frozen
class MemoryHit:
    """One search hit (Memory RFC, "MemoryHit"); the anchor is memory_ref + entry_id +
    entry_version_id. ``score`` is the RRF score, runtime metadata only."""

    memory_ref: ArtifactRef
    entry_id: str
    entry_version_id: str
    text: str
    score: float
    matched_by: tuple[Channel, ...]
    kind: str = ""


@attrs.frozen
class MemorySearchRequest:
    """What the service asks of a backend search: the query text, the Memories (an exact
    ArtifactRef, which must be the current head, or a :class:`CurrentHead` resolved in
    the search's read transaction), the hit limit, the mode and (for vector) the query
    vector."""

    query: str
    memories: tuple[ArtifactRef | CurrentHead, ...]
    limit: int
    mode: SearchMode = "fts"
    query_vector: EmbeddingVector | None = None


@attrs.frozen
class MemorySearchResult:
    """Search result: hits in rank order and the mode that actually ran (Memory RFC,
    "Backend capabilities": auto reports the mode used). ``fallback_reason`` is set
    exactly when ``mode="auto"`` ran as ``fts``: why hybrid could not run (no model, the
    model failed, an incomplete vector projection, a blank query); None otherwise."""

    hits: tuple[MemoryHit, ...]
    mode: SearchMode
    fallback_reason: str | None = None


@attrs.frozen
class MemoryRevisionChanges:
    """The changes of one Revision (Memory RFC, "changes()")."""

    memory_ref: ArtifactRef
    changes: tuple[MemoryChange, ...]


@attrs.frozen
class HandoffCitation:
    """An exact citation of one entry version (Memory RFC, "Handoff citation"):
    ArtifactRef + entry_id + entry_version_id."""

    memory_ref: ArtifactRef
    entry_id: str
    entry_version_id: str

    def as_hit(self) -> MemoryHit:
        """The anchor as a MemoryHit (text empty, score 0) for ``expand``."""
        return MemoryHit(self.memory_ref, self.entry_id, self.entry_version_id, "", 0.0, ())


@attrs.define
class RebuildReport:
    """What a rebuild did: Memories and active entries projected, vectors written (fresh
    ones plus ``kept``: stored vectors carried over because no fresh one could be made),
    the Memories whose vector projection is still incomplete, the Memories whose stored
    authoritative data failed validation (left untouched, with the reason), and
    ``missing``: each active entry left without a vector, as (artifact_id, entry_id,
    reason: no model, the model failed, or its vector was refused), and
    ``analyzer``: the analyzer version the FTS projection is now built by."""

    memories: int = 0
    entries: int = 0
    vectors: int = 0
    incomplete: list[str] = attrs.field(factory=list)
    corrupt: list[tuple[str, str]] = attrs.field(factory=list)
    kept: int = 0
    missing: list[tuple[str, str, str]] = attrs.field(factory=list)
    analyzer: str = ""


@attrs.define
class RehashReport:
    """What ``rehash()`` did: Revisions whose stored hash verified under the legacy
    formula and was rewritten to the spec's, Revisions already in the spec's formula, and
    the Revisions that verify under neither (``(artifact_id, revision, reason)``, left as
    they were, so reading them still raises IntegrityError). ``already`` is True when
    the database was in the spec's format before the call (nothing was read)."""

    rewritten: int = 0
    current: int = 0
    corrupt: list[tuple[str, int, str]] = attrs.field(factory=list)
    already: bool = False
