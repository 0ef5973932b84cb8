"""The Topic Memory publication unit of work over a database backend (Topic Memory RFC,
"Storage, Head, and atomic activation"): :class:`TopicPublicationMixin`.

One publication is one short write transaction in the spec's order::

    guards.supervisor (slot) -> guards.cursor CAS (slot)
    -> Head compare of every write (UPDATE: the base is the head, same Scope;
       CREATE: the id is free)
    -> every Revision, its Head move and both lineage tables (each Source stored)
    -> one database-UTC ``published_at`` -> a publications row per Revision
    -> each Topic's active projections replaced (old rows with their full-text and
       vector rows deleted, the new ones inserted)
    -> cursor advance / pending / budget (slots) -> COMMIT

Everything the batch can be checked for without the database is checked before the
transaction, at the write boundary, with the backend's own analyzer and shape
(:func:`powercontext.core.topic.publication.verify_publication`, which recomputes every
projection). Part 2 fills the guard slots; until then a non-empty guard is refused
before anything is written.
"""

from __future__ import annotations

from powercontext.adapters.storage import RevisionRow
from powercontext.adapters.topic_deployment import TopicDeploymentMixin
from powercontext.core.errors import (
    CapabilityNotSupportedError,
    InvalidInputError,
    RetrievalShapeError,
    RevisionConflictError,
)
from powercontext.core.topic import content as topic_content
from powercontext.core.topic.models import (
    TOPIC_FAMILY,
    PublicationGuards,
    RetrievalShape,
    TopicPublication,
    TopicRevision,
    TopicWrite,
)
from powercontext.core.topic.publication import verify_publication

__all__ = ["TopicPublicationMixin"]


class TopicPublicationMixin(TopicDeploymentMixin):
    """``publish`` of a Topic backend."""

    async def publish(self, publication: TopicPublication) -> tuple[TopicRevision, ...]:
        """Publish every write of ``publication`` in one transaction, or nothing (Topic
        Memory RFC, "Storage, Head, and atomic activation"; see the module docstring for
        the order). The first publication of a deployment (no Topic Head yet) fixes the
        retrieval shape: hybrid when the backend has an embedding profile and working
        vectors, else fts.

        Returns the published Revisions in batch order, each with the one database-UTC
        ``published_at`` of the batch. Errors (nothing written on any):
        InvalidInputError naming the field for a bad batch, a lineage Source that is not
        stored (or stored with another hash), an UPDATE whose base is not a Topic or is
        in another Scope; RevisionConflictError when an UPDATE's base is no longer the
        head or a CREATE's id exists; IntegrityError for a forged or incomplete
        projection; RetrievalShapeError when another process fixed another shape;
        CapabilityNotSupportedError for a non-empty guard (part 2)."""
        if not isinstance(publication, TopicPublication):
            raise InvalidInputError("publication", "must be a TopicPublication")
        if not isinstance(publication.guards, PublicationGuards) or not publication.guards.empty:
            raise CapabilityNotSupportedError(
                "publication guards (Supervisor term, Cursor, Pending, budget) arrive with "
                "Topic Memory part 2; this backend publishes only unguarded batches")
        return await self._run(self._publish_checked, publication)

    def _publish_checked(self, publication: TopicPublication) -> tuple[TopicRevision, ...]:
        shape = self._wanted_shape()
        verify_publication(publication, self._db_topic_analyzer, shape.kind,
                           shape.embedding_profile)
        return self._in_tx(True, self._publish_sync, publication, shape)

    # ------------------------------------------------------------------ the transaction

    def _publish_sync(self, publication: TopicPublication,
                      shape: RetrievalShape) -> tuple[TopicRevision, ...]:
        self._fix_shape_sync(shape)
        self._check_guards_sync(publication.guards)
        writes = publication.writes
        for w in writes:
            self._compare_head_sync(w)
        self._check_sources_sync(writes)
        for w in writes:
            self._write_revision_sync(w)
        published_at = self._database_utc_now_sync()
        for w in writes:
            self._insert_publication_sync(w.ref, w.scope_id, published_at)
        for w in writes:
            self._delete_active_sync(w.ref.artifact_id)
            self._insert_active_sync(w, shape.profile_fingerprint)
        self._advance_guards_sync(publication.guards)
        return tuple(
            TopicRevision(w.scope_id, w.ref, w.content, topic_content.content_hash(w.content),
                          w.sources, w.base, published_at)
            for w in writes)

    def _fix_shape_sync(self, shape: RetrievalShape) -> None:
        """Store ``shape`` when none is stored or no Head exists yet; refuse a stored
        shape that differs while Heads exist (another process fixed it)."""
        stored = self._shape_sync()
        if stored == shape:
            return
        if stored is not None and self._topic_head_count_sync():
            raise RetrievalShapeError(
                f"the retrieval shape is fixed as {stored.kind!r} "
                f"(profile fingerprint {stored.profile_fingerprint}); this backend would "
                f"publish {shape.kind!r} (fingerprint {shape.profile_fingerprint}): reopen it")
        self._set_shape_sync(shape)

    def _check_guards_sync(self, guards: PublicationGuards) -> None:
        """Slot: the Supervisor term check and the Cursor CAS (Topic Memory part 2)."""
        if not guards.empty:  # publish() refuses these before the transaction
            raise CapabilityNotSupportedError("publication guards arrive with part 2")

    def _advance_guards_sync(self, guards: PublicationGuards) -> None:
        """Slot: the Cursor advance, the Pending update and the budget-row delete (part 2)."""

    def _compare_head_sync(self, w: TopicWrite) -> None:
        aid = w.ref.artifact_id
        head = self._head_for_update_sync(aid)
        if w.op == "create":
            if head is not None:
                raise RevisionConflictError(f"an Artifact {aid!r} exists already")
            return
        assert w.base is not None  # verify_publication
        if head is None or head[1] != TOPIC_FAMILY:
            raise InvalidInputError("base", f"no Topic {aid!r} is stored")
        if self._topic_scope_sync(aid) != w.scope_id:
            raise InvalidInputError(
                "base", f"Topic {aid!r} belongs to another Scope than {w.scope_id!r}")
        if head[0] != w.base.revision:
            raise RevisionConflictError(
                f"Topic {aid!r} is at Revision {head[0]}, not the base {w.base.revision}")

    def _check_sources_sync(self, writes: tuple[TopicWrite, ...]) -> None:
        wanted = list(dict.fromkeys(s.source_id for w in writes for s in w.sources))
        stored = self._source_hashes_sync(wanted) if wanted else {}
        for w in writes:
            for s in w.sources:
                found = stored.get(s.source_id)
                if found is None:
                    raise InvalidInputError("sources", f"Source {s.source_id!r} is not stored")
                if found != s.content_hash:
                    raise InvalidInputError(
                        "sources", f"Source {s.source_id!r} is stored with another content hash")

    def _write_revision_sync(self, w: TopicWrite) -> None:
        aid, rev = w.ref.artifact_id, w.ref.revision
        self._insert_revision_sync(RevisionRow(
            aid, rev, TOPIC_FAMILY, topic_content.content_bytes(w.content),
            topic_content.content_hash(w.content),
            topic_content.lineage_bytes(w.sources, w.base)))
        if w.base is None:
            self._insert_head_sync(aid, rev)
        elif not self._cas_head_sync(aid, w.base.revision, rev):
            raise RevisionConflictError(f"Topic {aid!r} moved past Revision {w.base.revision}")
        self._insert_lineage_sync(w.ref, w.sources, w.base)
