"""TopicRows: the Topic Memory family's shared-table rows, each one shared template run
once over the engine port (Topic Memory RFC, "Storage, Head, and atomic activation",
"Publication"): the retrieval shape, Topic Heads and Revisions, lineage and
publications, the database's clock.

What each engine does its own way is not here: the active rows with their full-text
and vector indexes are the engine's
:class:`~powercontext.ports.engine.TopicSearchProjection`; the Artifact rows every
family shares (``artifact_revisions``, ``artifact_heads``) are the storage's.

Every method runs inside a transaction its caller opened on the engine's thread, never
commits and decides no rule; a driver error passes through (the storage maps it).
"""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.rows import RevisionRow, opt_text, text
from powercontext.core import canonical
from powercontext.core.models import SourceRef
from powercontext.core.topic.models import TOPIC_FAMILY, RetrievalShape, TopicRef
from powercontext.ports.engine import SQLEngine

__all__ = ["SHAPE_KEY", "TopicCard", "TopicRows"]

#: The one row of ``pc_topic_memory_retrieval_shape``.
SHAPE_KEY = "deployment"

#: (exact ref, title, summary) of one active Topic row, as search hits show it.
TopicCard = tuple[TopicRef, str, str]


class TopicRows:
    """The Topic family's shared rows over ``engine`` (a
    :class:`~powercontext.ports.engine.SQLEngine`)."""

    def __init__(self, engine: SQLEngine) -> None:
        self._engine = engine

    # ------------------------------------------------------------------ retrieval shape

    def shape(self) -> RetrievalShape | None:
        """The stored retrieval shape (the row under :data:`SHAPE_KEY`), or None."""
        rows = self._engine.query("topic_shape_get", (SHAPE_KEY,))
        if not rows:
            return None
        kind, policy, analyzer_version, profile, fingerprint = rows[0]
        raw = opt_text(profile)
        return RetrievalShape(
            text(kind), text(policy), text(analyzer_version),  # type: ignore[arg-type]
            shared_rows.embedding_profile(raw) if raw is not None else None,
            opt_text(fingerprint))

    def set_shape(self, shape: RetrievalShape) -> None:
        """Replace the stored retrieval shape (delete + insert the one row; the profile
        as its canonical JSON). Only called while no Topic Head exists."""
        profile = shape.embedding_profile
        self._engine.execute("topic_shape_delete", (SHAPE_KEY,))
        self._engine.execute("topic_shape_insert", (
            SHAPE_KEY, shape.kind, shape.chunk_policy, shape.analyzer_version,
            canonical.profile_bytes(profile).decode("utf-8") if profile is not None else None,
            shape.profile_fingerprint))

    # ------------------------------------------------------------------ heads, Revisions

    def head_count(self) -> int:
        """How many Heads have a Revision of family ``topic-memory``."""
        return int(self._engine.query("topic_head_count", (TOPIC_FAMILY,))[0][0])

    def head_for_update(self, artifact_id: str) -> tuple[int, str] | None:
        """(head revision, family of that Revision) of any Artifact with this id, or
        None; the row stays locked until COMMIT where the engine locks rows (the
        publication's Head compare)."""
        rows = self._engine.query("topic_head_get", (artifact_id,), for_update=True)
        return (int(rows[0][0]), text(rows[0][1])) if rows else None

    def scope_of(self, artifact_id: str) -> str | None:
        """The Scope of a Topic: the ``scope_id`` of its earliest publication row."""
        rows = self._engine.query("topic_scope_get", (artifact_id,))
        return text(rows[0][0]) if rows else None

    def revision(self, artifact_id: str, revision: int) -> RevisionRow | None:
        """The ``artifact_revisions`` row of exactly this Revision if its family is
        ``topic-memory``, else None."""
        rows = self._engine.query("topic_revision_get", (artifact_id, revision, TOPIC_FAMILY))
        return shared_rows.revision_row(rows[0]) if rows else None

    def heads(self, scope_id: str) -> list[TopicRef]:
        """The head of every Topic of the Scope, ordered by artifact_id (binary)."""
        return [TopicRef(text(aid), int(rev)) for aid, rev in
                self._engine.query("topic_heads_by_scope", (scope_id,))]

    # ------------------------------------------------------------------ lineage, publication

    def source_hashes(self, source_ids: Sequence[str]) -> dict[str, str]:
        """``source_id -> content_hash`` of the stored Sources among these ids."""
        return {text(sid): text(h) for sid, h in
                self._engine.query_in("topic_source_hashes", source_ids)}

    def insert_lineage(self, ref: TopicRef, sources: Sequence[SourceRef],
                       based_on: TopicRef | None) -> None:
        """One ``pc_artifact_lineage_sources`` row per Source and, for an UPDATE, one
        ``pc_artifact_lineage_artifacts`` row naming ``based_on``."""
        self._engine.execute_many("topic_lineage_source_insert", [
            (ref.artifact_id, ref.revision, s.source_id, s.content_hash) for s in sources])
        if based_on is not None:
            self._engine.execute("topic_lineage_artifact_insert", (
                ref.artifact_id, ref.revision, based_on.family, based_on.artifact_id,
                based_on.revision))

    def now(self) -> str:
        """The database's own UTC clock, read once (never the worker's clock)."""
        return self._engine.database_now()

    def insert_publication(self, ref: TopicRef, scope_id: str, published_at: str) -> None:
        """The ``pc_topic_memory_revision_publications`` row of a new Revision."""
        self._engine.execute("topic_publication_insert",
                             (ref.artifact_id, ref.revision, scope_id, published_at))

    def publication(self, artifact_id: str, revision: int) -> tuple[str, str] | None:
        """(scope_id, published_at) of one Revision, or None."""
        rows = self._engine.query("topic_publication_get", (artifact_id, revision))
        return (text(rows[0][0]), text(rows[0][1])) if rows else None

    def lineage(self, artifact_id: str,
                revision: int) -> tuple[list[SourceRef], list[TopicRef]]:
        """The lineage rows of one Revision: its Sources (sorted by source_id) and the
        Revisions it was based on (as TopicRefs with their stored family)."""
        sources = [SourceRef(text(s), text(h)) for s, h in
                   self._engine.query("topic_lineage_sources_get", (artifact_id, revision))]
        based = [TopicRef(text(aid), int(rev), text(fam)) for fam, aid, rev in
                 self._engine.query("topic_lineage_artifacts_get", (artifact_id, revision))]
        return sources, based
