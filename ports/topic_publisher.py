"""The Topic service's processing port (Topic Memory RFC, "Reference-level
explanation", "Storage, Head, and atomic activation"): what Topic processing drives on
the Topic service, beyond the backend's own port. typing.Protocols only. Errors are
:mod:`powercontext.core.errors`'; "ValueError" means InvalidInputError naming the
field.

The spec gives users no create or update of a Topic: a Topic Revision is published by
processing a Scope's Sources. So the publication path is not among the service's user
operations (``search``, ``get``, ``flush``, ...); it is this port, which the Topic
processor (:mod:`powercontext.topic_processing`) depends on and
:class:`powercontext.topic_service.TopicMemoryService` implements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: importing ports stays cheap (the prompt hook)
    from powercontext.core.models import EmbeddingVector, Source, SourceRef
    from powercontext.core.topic.models import (
        PublicationGuards,
        TopicCapabilities,
        TopicMemoryContent,
        TopicRef,
        TopicRevision,
    )
    from powercontext.ports.topic import TopicMemoryBackend

__all__ = ["TopicPublisher"]


@runtime_checkable
class TopicPublisher(Protocol):
    """The Topic service as processing sees it: its backend, the query vector of a
    history search, and the one publication path (new ids, redaction, chunking,
    analysis and embedding outside any transaction, then one backend publication)."""

    @property
    def backend(self) -> TopicMemoryBackend:
        """The Topic backend of the database (the processing substrate: attempts,
        reservations, the Scope journal, history search and exact gets)."""
        ...

    async def query_vector(self, query: str, caps: TopicCapabilities) -> EmbeddingVector:
        """The embedded ``query`` for a search of a hybrid deployment whose
        capabilities are ``caps`` (its channels include ``topic_vector``): one vector of
        the deployment's embedding profile, unit-normalized, computed outside any
        transaction (Topic Memory RFC, "Detail chunks and deployment-enabled retrieval
        channels"). RetrievalShapeError when no embedding model is configured or its
        profile differs from the stored shape's; CapabilityNotSupportedError naming the
        cause when the model fails."""
        ...

    async def publish(
        self,
        scope_id: str,
        *,
        creates: Sequence[tuple[TopicMemoryContent | Mapping[str, Any],
                                Sequence[SourceRef | Source]]] = (),
        updates: Sequence[tuple[TopicRef, TopicMemoryContent | Mapping[str, Any],
                                Sequence[SourceRef | Source]]] = (),
        guards: PublicationGuards | None = None,
    ) -> tuple[TopicRevision, ...]:
        """Publish the CREATE and UPDATE results of one Window (or batch) in one
        backend publication, all or nothing (Topic Memory RFC, "Storage, Head, and
        atomic activation").

        ``creates``: ``(content, sources)`` pairs; ``updates``: ``(base, content,
        sources)`` with ``base`` the exact head TopicRef replaced (a Revision
        ``base.revision + 1`` of the same Topic is published). ``content`` is a
        TopicMemoryContent or a mapping with ``title``, ``summary``, ``detail``;
        ``sources`` are SourceRefs of stored Sources, or Sources (stored first, in
        their own transaction); at least one per write. ``guards`` (Cursor CAS and
        advance, Pending update, budget-row delete, the Supervisor term) run inside the
        same transaction; with guards, zero writes is a valid publication (a NOOP Window
        still advances the Cursor). A secret in a title, summary or detail is redacted
        visibly first (``[REDACTED:<rule>]``). Returns the published Revisions in batch
        order, creates first. Errors: ValueError for a bad Scope id, content, ref or
        source list, or no write and no guards; RetrievalShapeError or
        CapabilityNotSupportedError when a hybrid deployment cannot embed;
        RevisionConflictError when a guard or an UPDATE's base no longer holds
        (SupervisorTermError for a lost term); the rest of
        :meth:`TopicMemoryBackend.publish`. Nothing is written on any error."""
        ...
