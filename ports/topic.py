"""The Topic Memory port (Topic Memory RFC 1417, "Storage, Head, and atomic
activation", "HTTP API"): what the application drives on a Topic backend.
typing.Protocols only. Errors are :mod:`powercontext.core.errors`'; "ValueError" means
InvalidInputError naming the field."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingVector
from powercontext.core.topic.models import (
    TopicCapabilities,
    TopicPublication,
    TopicRef,
    TopicRevision,
    TopicSearchRequest,
    TopicSearchResult,
)
from powercontext.ports import SourceStore

__all__ = ["TopicMemoryBackend"]


@runtime_checkable
class TopicMemoryBackend(SourceStore, Protocol):
    """The ``topic-memory`` family on one database: publication, search, exact get.

    Opening checks only Topic Memory's own state (its retrieval shape), never the
    Memory family's, and the Memory backend never checks this family's shape
    (readiness is per family). A shape error is a RetrievalShapeError raised by every
    call until the configuration is fixed."""

    async def topic_capabilities(self) -> TopicCapabilities:
        """The stored retrieval shape (None before the first publication), the
        channels searched, and reasons (opens the database)."""
        ...

    async def analyzer(self) -> Analyzer:
        """The Analyzer the database's Topic projections are built with."""
        ...

    async def publish(self, publication: TopicPublication) -> tuple[TopicRevision, ...]:
        """Publish every write of the batch in one short transaction, in the spec's
        order (guards, Head CAS for every UPDATE, Revisions and lineage, database-UTC
        ``published_at``, projections written and switched), or nothing. The first
        publication of a deployment fixes the retrieval shape. Returns the published
        Revisions in batch order. RevisionConflictError when an UPDATE's base is no
        longer the head (or a CREATE's id exists); IntegrityError for a forged or
        incomplete projection; ValueError for bad content, refs or lineage (a Source
        that is not stored, a base in another Scope); CapabilityNotSupportedError for a
        guard the backend does not implement. Nothing is written on any error."""
        ...

    async def search(self, request: TopicSearchRequest,
                     query_vector: EmbeddingVector | None = None) -> TopicSearchResult:
        """Active Topics of one Scope for ``request``: each channel collapsed by Topic,
        RRF across the 2 or 4 enabled channels, at most one hit per Topic, read in one
        snapshot. ``query_vector`` (the embedded query) is required in a hybrid
        deployment and refused in an FTS-only one. ValueError for a bad Scope, query
        or limit."""
        ...

    async def get(self, scope_id: str, ref: TopicRef) -> TopicRevision:
        """That exact Revision (never the latest head by id), with its own
        ``published_at``. ArtifactNotFoundError for an unknown ref or one of another
        Scope (never leaked); ValueError for another family, revision < 1."""
        ...

    async def heads(self, scope_id: str) -> tuple[TopicRef, ...]:
        """The current head of every Topic of the Scope, by artifact_id."""
        ...

    async def close(self) -> None:
        """Close the connection (idempotent)."""
        ...
