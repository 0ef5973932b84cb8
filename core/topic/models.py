"""Frozen values of the Topic Memory family (Topic Memory RFC, "Family, binding, and
processing scope", "Storage, Head, and atomic activation", "HTTP API").

A Topic is one long-lived topic: an Artifact of family ``topic-memory`` whose
immutable Revisions hold exactly ``title``, ``summary`` and ``detail``. Its reference
is :class:`TopicRef` (family + artifact_id + revision); complete addressing also needs
the ``scope_id`` the caller gives. The Memory family's
:class:`~powercontext.core.models.ArtifactRef` is a different type and is never used
for Topics (it feeds Memory hashes and must not change).
"""

from __future__ import annotations

from typing import Literal

import attrs

from powercontext.core.models import EmbeddingProfile, EmbeddingVector, SourceRef

__all__ = [
    "CHANNELS_FTS",
    "CHANNELS_HYBRID",
    "TOPIC_FAMILY",
    "ChunkProjection",
    "DetailChunk",
    "PublicationGuards",
    "RetrievalShape",
    "ShapeKind",
    "TopicCapabilities",
    "TopicChannel",
    "TopicHit",
    "TopicMemoryContent",
    "TopicOperation",
    "TopicProjection",
    "TopicPublication",
    "TopicRebuildReport",
    "TopicRef",
    "TopicRevision",
    "TopicSearchRequest",
    "TopicSearchResult",
    "TopicWrite",
]

TOPIC_FAMILY = "topic-memory"
#: The retrieval channels, in the order ``matched_by`` lists them (TOPIC-MEMORY.md).
TopicChannel = Literal["topic_fts", "topic_vector", "detail_fts", "detail_vector"]
CHANNELS_FTS: tuple[TopicChannel, ...] = ("topic_fts", "detail_fts")
CHANNELS_HYBRID: tuple[TopicChannel, ...] = (
    "topic_fts", "topic_vector", "detail_fts", "detail_vector")
ShapeKind = Literal["fts", "hybrid"]
TopicOperation = Literal["create", "update"]


@attrs.frozen(order=True)
class TopicRef:
    """An exact Topic Revision: ``family`` (always ``topic-memory``), ``artifact_id``
    (``topic_art_...``) and ``revision`` (>= 1). JSON: ``{"family", "artifact_id",
    "revision"}``. :func:`powercontext.core.topic.content.check_ref` refuses another
    family, a revision < 1 or a bool."""

    artifact_id: str
    revision: int
    family: str = TOPIC_FAMILY


@attrs.frozen
class TopicMemoryContent:
    """The public content of a Topic Revision: exactly title, summary and detail (NFC
    text, within :mod:`.content`'s limits)."""

    title: str
    summary: str
    detail: str


@attrs.frozen
class TopicRevision:
    """One published Topic Revision as ``get`` returns it: its Scope, exact ref,
    content, content hash (lowercase hex SHA-256 of the canonical content bytes), the
    direct Source lineage (sorted, unique, at least one), the exact older ref an UPDATE
    was based on (None for revision 1), and the database-UTC ``published_at`` of this
    Revision (``YYYY-MM-DDTHH:MM:SS.ffffffZ``)."""

    scope_id: str
    ref: TopicRef
    content: TopicMemoryContent
    content_hash: str
    sources: tuple[SourceRef, ...]
    based_on: TopicRef | None
    published_at: str


@attrs.frozen
class DetailChunk:
    """One retrieval chunk of a Detail: 0-based ``ordinal``, ``[start, end)`` offsets in
    code points of the Detail, and ``text == detail[start:end]``. Internal: never part
    of the public model, never an update unit."""

    ordinal: int
    start: int
    end: int
    text: str


@attrs.frozen
class ChunkProjection:
    """A chunk as the active-chunk projection stores it: the chunk and its Analyzer v1
    searchable text (space-separated tokens), plus its vector in a hybrid deployment."""

    chunk: DetailChunk
    fts_text: str
    vector: EmbeddingVector | None = None


@attrs.frozen
class TopicProjection:
    """Everything the active projections of one Revision hold, prepared outside the
    transaction: the Analyzer v1 text of title + summary (``topic_text``), the title +
    summary vector (hybrid only), the chunks of the Detail under ``chunk_policy``, and
    the embedding profile fingerprint the vectors were made with (None for FTS-only).
    The write boundary recomputes the texts and chunks and refuses any difference."""

    chunk_policy: str
    topic_text: str
    chunks: tuple[ChunkProjection, ...]
    topic_vector: EmbeddingVector | None = None
    embedding_fingerprint: str | None = None


@attrs.frozen
class TopicWrite:
    """One CREATE or UPDATE of a publication batch. ``ref`` is the new Revision (a
    CREATE: revision 1 of a new id; an UPDATE: ``base.revision + 1`` of ``base``'s id);
    ``base`` is the exact head an UPDATE replaces (None for a CREATE); ``sources`` the
    direct lineage (persisted Sources, at least one)."""

    op: TopicOperation
    scope_id: str
    ref: TopicRef
    base: TopicRef | None
    content: TopicMemoryContent
    sources: tuple[SourceRef, ...]
    projection: TopicProjection


@attrs.frozen
class PublicationGuards:
    """The processing checks that share the publication transaction (Topic Memory RFC,
    "Storage, Head, and atomic activation"): the Supervisor term, the Cursor CAS and
    advance, the Pending update and the budget-row delete. Part 2 fills these slots;
    a backend that gets a guard it does not implement raises
    CapabilityNotSupportedError before writing anything."""

    supervisor: object | None = None
    cursor: object | None = None
    pending: object | None = None
    budget: object | None = None

    @property
    def empty(self) -> bool:
        return all(g is None for g in (self.supervisor, self.cursor, self.pending,
                                       self.budget))


@attrs.frozen
class TopicPublication:
    """The CREATE and UPDATE results of one batch, published in one short transaction
    (all or nothing). No two writes name the same Topic."""

    writes: tuple[TopicWrite, ...]
    guards: PublicationGuards = PublicationGuards()


@attrs.frozen
class RetrievalShape:
    """The deployment-wide retrieval shape, fixed at the first publication: ``fts`` (2
    channels) or ``hybrid`` (4 channels, with the embedding profile and its
    fingerprint), the chunk policy version and the analyzer version the projections
    were built with. Only an analyzer migration (``memory rebuild --analyzer``) changes
    it, and only its ``analyzer_version``, together with every full-text field."""

    kind: ShapeKind
    chunk_policy: str
    analyzer_version: str
    embedding_profile: EmbeddingProfile | None = None
    profile_fingerprint: str | None = None

    @property
    def channels(self) -> tuple[TopicChannel, ...]:
        return CHANNELS_HYBRID if self.kind == "hybrid" else CHANNELS_FTS


@attrs.frozen
class TopicCapabilities:
    """What a Topic backend serves: the stored shape (None before the first
    publication), the shape the next first publication would fix (``pending_kind``),
    the enabled channels, and why anything is off."""

    shape: RetrievalShape | None
    pending_kind: ShapeKind
    channels: tuple[TopicChannel, ...]
    embedding_profile: EmbeddingProfile | None = None
    reasons: tuple[str, ...] = ()


@attrs.frozen
class TopicSearchRequest:
    """``search(scope_id, query, limit)``: limit 1..20 (default 10), query as for
    Memory search (at most 8,192 characters and 64 distinct Analyzer terms)."""

    scope_id: str
    query: str
    limit: int = 10


@attrs.frozen
class TopicHit:
    """One search hit: the exact ref (expand exactly this one), title, summary, an
    optional snippet of the Detail, the fused RRF score and the channels that matched
    (in :data:`CHANNELS_HYBRID` order)."""

    ref: TopicRef
    title: str
    summary: str
    snippet: str | None
    score: float
    matched_by: tuple[TopicChannel, ...]


@attrs.frozen
class TopicSearchResult:
    """The hits (at most one per Topic, best first) and the channels searched."""

    hits: tuple[TopicHit, ...]
    channels: tuple[TopicChannel, ...]


@attrs.define
class TopicRebuildReport:
    """What an analyzer migration of the Topic projections did: active Topics and chunks
    whose full-text fields were rebuilt, the Topics whose stored Revision failed its
    checks (``(artifact_id, revision, reason)``, left as they were) and the analyzer
    version the projections are now built by."""

    topics: int = 0
    chunks: int = 0
    corrupt: list[tuple[str, int, str]] = attrs.field(factory=list)
    analyzer: str = ""
