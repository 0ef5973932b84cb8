"""The engine primitives of a Topic Memory database backend (Topic Memory RFC,
"Storage, Head, and atomic activation"): what a concrete adapter (SQLite, OceanBase, a
third party's) implements under :class:`~powercontext.adapters.topic_database.DatabaseTopicBackend`.

Every primitive is synchronous, runs on the backend's worker thread and inside a
transaction the engine-neutral code opened (``_in_tx``): a write one (SQLite ``BEGIN
IMMEDIATE``, OceanBase ``BEGIN``) for publication, a read one giving one snapshot
(SQLite: one WAL read transaction; OceanBase: REPEATABLE READ) for search and get. A
primitive never commits, never rolls back and never decides a rule: the rules
(projection checks, ranking, admission, shapes) live in :mod:`powercontext.core.topic`
and the engine-neutral mixins. Driver errors pass through; ``_database_error`` maps
them (a unique-key violation on ``artifact_revisions`` / ``artifact_heads`` is a
RevisionConflictError).

The tables are :data:`powercontext.sql.templates.TOPIC_SCHEMA` plus the engine's
full-text and vector projections of the two active tables (SQLite: FTS5 + vec0 keyed
by the active rows' integer rowids; OceanBase: FULLTEXT + VECTOR/HNSW on the active
tables themselves).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from powercontext.adapters.storage import RevisionRow, SourceStore
from powercontext.core.models import EmbeddingVector, SourceRef
from powercontext.core.topic.models import (
    RetrievalShape,
    TopicCapabilities,
    TopicChannel,
    TopicRef,
    TopicWrite,
)
from powercontext.core.topic.search import ChannelRow

__all__ = ["SHAPE_KEY", "TopicCard", "TopicPrimitives"]

#: The one row of ``pc_topic_memory_retrieval_shape``.
SHAPE_KEY = "deployment"

#: (exact ref, title, summary) of one active Topic row, as search hits show it.
TopicCard = tuple[TopicRef, str, str]


class TopicPrimitives(SourceStore[TopicCapabilities]):
    """The abstract engine primitives of a Topic backend (this page is the SPI).

    Besides these, the storage base's primitives (``_open_sync``, ``_close_sync``,
    transactions, ``_database_error``, metadata, the Source store) are the engine's.
    ``_open_sync`` connects, creates :data:`~powercontext.sql.templates.SCHEMA` (shared,
    idempotent), the Topic tables and projections (vector ones only when the shape is
    or will be hybrid), records a new database's ``schema_version`` and
    ``analyzer_version`` (the neutral code's :meth:`_new_database_analyzer`), runs its
    probes and returns :meth:`_infrastructure_caps`. It must not check the Memory
    family's tables, and the shape checks are the neutral code's
    (``_check_open_sync``)."""

    #: The largest ``k`` :meth:`_vector_rows_sync` answers (vec0: 4096; None: no cap).
    vector_k_cap: int | None = None

    # ------------------------------------------------------------------ shape

    @abc.abstractmethod
    def _shape_sync(self) -> RetrievalShape | None:
        """The stored retrieval shape (the row under :data:`SHAPE_KEY`), or None."""

    @abc.abstractmethod
    def _set_shape_sync(self, shape: RetrievalShape) -> None:
        """Replace the stored retrieval shape (delete + insert the one row); the profile
        is stored as its canonical JSON. Only called while no Topic Head exists."""

    @abc.abstractmethod
    def _topic_head_count_sync(self) -> int:
        """How many Heads have a Revision of family ``topic-memory``."""

    @abc.abstractmethod
    def _missing_vectors_sync(self, fingerprint: str) -> int:
        """One set-based count (never a query per Topic) of the active topic and chunk
        rows that lack their vector, or whose ``embedding_fingerprint`` is not
        ``fingerprint``. 0 in a complete hybrid deployment."""

    # ------------------------------------------------------------------ publication

    @abc.abstractmethod
    def _head_for_update_sync(self, artifact_id: str) -> tuple[int, str] | None:
        """(head revision, family of that Revision) of any Artifact with this id, or None;
        the row stays locked until the transaction ends where the engine locks rows
        (OceanBase ``FOR UPDATE``; SQLite's write transaction already excludes writers).
        This is the publication's Head compare: the pointer moves later, after the new
        Revision row exists (the head's foreign key needs it)."""

    @abc.abstractmethod
    def _topic_scope_sync(self, artifact_id: str) -> str | None:
        """The Scope of a Topic: the ``scope_id`` of its earliest publication row."""

    @abc.abstractmethod
    def _source_hashes_sync(self, source_ids: Sequence[str]) -> dict[str, str]:
        """``source_id -> content_hash`` of the stored Sources among these ids."""

    @abc.abstractmethod
    def _insert_revision_sync(self, row: RevisionRow) -> None:
        """Insert one ``artifact_revisions`` row (``identity`` encoding); a duplicate key
        raises the driver's error."""

    @abc.abstractmethod
    def _insert_head_sync(self, artifact_id: str, revision: int) -> None:
        """Insert the head row of a new Topic; a duplicate raises the driver's error."""

    @abc.abstractmethod
    def _cas_head_sync(self, artifact_id: str, base_revision: int, revision: int) -> bool:
        """``UPDATE artifact_heads SET revision = :revision WHERE artifact_id = :id AND
        revision = :base``; True when exactly one row matched."""

    @abc.abstractmethod
    def _insert_lineage_sync(self, ref: TopicRef, sources: Sequence[SourceRef],
                             based_on: TopicRef | None) -> None:
        """One ``pc_artifact_lineage_sources`` row per Source (with its content hash) and,
        for an UPDATE, one ``pc_artifact_lineage_artifacts`` row naming ``based_on``."""

    @abc.abstractmethod
    def _database_utc_now_sync(self) -> str:
        """The database's own UTC clock, read once, as
        :func:`~powercontext.adapters.storage.rows.utc_text` renders it (SQLite
        ``strftime('%Y-%m-%dT%H:%M:%fZ','now')``; OceanBase ``UTC_TIMESTAMP(6)``). Never
        the worker's clock."""

    @abc.abstractmethod
    def _insert_publication_sync(self, ref: TopicRef, scope_id: str, published_at: str) -> None:
        """Insert the ``pc_topic_memory_revision_publications`` row of a new Revision."""

    @abc.abstractmethod
    def _delete_active_sync(self, artifact_id: str) -> None:
        """Delete the Topic's active topic row and chunk rows together with their
        full-text and vector rows (no cascade reaches a virtual table: delete those
        explicitly). Nothing to delete is not an error."""

    @abc.abstractmethod
    def _insert_active_sync(self, write: TopicWrite, fingerprint: str | None) -> None:
        """Insert the active topic row of ``write.ref`` (title, summary, the
        projection's ``topic_text`` as its full-text field, ``len(write.sources)``,
        ``fingerprint``) and one chunk row per ``write.projection.chunks`` (ordinal,
        offsets, the chunk text as snippet text, its ``fts_text``, ``fingerprint``),
        each with its full-text row and, when ``fingerprint`` is not None, its vector
        (the projection's, already checked). Full-text rows hold the Analyzer tokens,
        filtered by Scope inside the index; vector rows are searchable by Scope."""

    # ------------------------------------------------------------------ reads

    @abc.abstractmethod
    def _fts_rows_sync(self, channel: TopicChannel, scope_id: str, terms: Sequence[str],
                       limit: int, offset: int) -> list[ChannelRow]:
        """One page of the active rows of the Scope (``topic_fts``: topic rows, ordinal
        None; ``detail_fts``: chunk rows) matching any of ``terms`` (Analyzer tokens, to
        be quoted, never raw syntax; every term counts), positions ``offset .. offset +
        limit - 1`` of one total order, best first (the engine's relevance over the OR
        of the terms, then a stable tie-break such as the rowid), each with the row's
        Analyzer text as ``fts_text``. Fewer than ``limit`` rows only at the end."""

    @abc.abstractmethod
    def _vector_rows_sync(self, channel: TopicChannel, scope_id: str,
                          vector: EmbeddingVector, k: int) -> list[ChannelRow]:
        """The ``k`` nearest active rows of the Scope (``topic_vector``: topic rows;
        ``detail_vector``: chunk rows) by L2 ``distance`` (set on each row), filtered by
        Scope inside the scan (vec0 partition key; an OceanBase ``WHERE scope_id``),
        ascending, a stable tie-break among equal distances."""

    @abc.abstractmethod
    def _cards_sync(self, scope_id: str, artifact_ids: Sequence[str]) -> dict[str, TopicCard]:
        """``artifact_id -> (active ref, title, summary)`` of these active Topics of the
        Scope (ids of another Scope are left out)."""

    @abc.abstractmethod
    def _chunk_text_sync(self, ref: TopicRef, ordinal: int) -> str | None:
        """The snippet text of one active chunk of exactly ``ref``, or None."""

    @abc.abstractmethod
    def _topic_revision_sync(self, artifact_id: str, revision: int) -> RevisionRow | None:
        """The ``artifact_revisions`` row of exactly this Revision if its family is
        ``topic-memory``, else None."""

    @abc.abstractmethod
    def _publication_sync(self, artifact_id: str, revision: int) -> tuple[str, str] | None:
        """(scope_id, published_at) of one Revision, or None."""

    @abc.abstractmethod
    def _lineage_sync(self, artifact_id: str,
                      revision: int) -> tuple[list[SourceRef], list[TopicRef]]:
        """The lineage rows of one Revision: its Sources (sorted by source_id) and the
        Revisions it was based on (as TopicRefs with their stored family)."""

    @abc.abstractmethod
    def _topic_heads_sync(self, scope_id: str) -> list[TopicRef]:
        """The head of every Topic of the Scope, ordered by artifact_id (binary)."""

    # ------------------------------------------------------------------ analyzer migration

    @abc.abstractmethod
    def _active_refs_sync(self) -> list[tuple[TopicRef, str]]:
        """``(ref, scope_id)`` of every active Topic row of every Scope, by artifact_id."""

    @abc.abstractmethod
    def _set_fts_texts_sync(self, ref: TopicRef, topic_text: str,
                            chunk_texts: Sequence[tuple[int, str]]) -> None:
        """Replace the full-text field of exactly ``ref``'s active topic row and of its
        chunk rows (``(ordinal, fts_text)`` for every chunk), with their full-text index
        entries; the vectors stay. IntegrityError when ``ref`` is not the active Revision
        or its chunk rows are not exactly those ordinals."""
