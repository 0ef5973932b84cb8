"""SQLiteTopicBackend: the Topic Memory family on APSW + sqlite-vec (Topic Memory RFC,
"Storage, Head, and atomic activation"; ARCHITECTURE.md, "Decisions").

:class:`~powercontext.adapters.sqlite.connection.SQLiteStorage` (connection, WAL,
transactions, metadata, Sources) + the engine-neutral
:class:`~powercontext.adapters.topic_database.DatabaseTopicBackend`; here only the
schema, the probes and the SQLite primitives. Projections:

* ``pc_topic_memory_topic_fts`` / ``pc_topic_memory_chunk_fts`` -- contentless-delete
  FTS5 tables with ``rowid`` = the active row's ``topic_rowid`` / ``chunk_rowid``; every
  Analyzer token carries the Scope's token (:func:`~powercontext.sql.sqlite.topic_scope_token`);
* ``pc_topic_memory_topic_vector`` / ``pc_topic_memory_chunk_vector`` -- vec0 tables
  (same rowids, partition key = the Scope token, L2), created only when the shape is
  or will be hybrid (an embedding profile and a passing vec0 probe).

Virtual tables are outside every foreign key: their rows are deleted explicitly with
the active rows they index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import apsw

from powercontext.adapters.sqlite.connection import BUSY_TIMEOUT_MS, SQLiteStorage
from powercontext.adapters.sqlite.schema import SCHEMA_VERSION, pack
from powercontext.adapters.sqlite.topic_supervision import SQLiteTopicSupervision
from powercontext.adapters.storage import RevisionRow
from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.processing_rows import decision_params, decision_row
from powercontext.adapters.topic_budget_spi import (
    budget_params,
    budget_row,
    budget_update_params,
    pending_row,
)
from powercontext.adapters.topic_database import SHAPE_KEY, DatabaseTopicBackend, utc_text
from powercontext.adapters.topic_insight import TopicInsightMixin
from powercontext.adapters.topic_spi import TopicCard
from powercontext.core import canonical
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import BackendError, IntegrityError
from powercontext.core.models import EmbeddingProfile, EmbeddingVector, SourceRef
from powercontext.core.topic.models import (
    TOPIC_FAMILY,
    RetrievalShape,
    TopicCapabilities,
    TopicChannel,
    TopicRef,
    TopicWrite,
)
from powercontext.core.topic.operator import OperatorDecision
from powercontext.core.topic.processing import BudgetRow, PendingRow
from powercontext.core.topic.search import ChannelRow
from powercontext.sql import sqlite as frag
from powercontext.sql import templates

__all__ = ["SQLiteTopicBackend"]

_KINDS = ("topic", "chunk")
_TOPIC_TABLES = (*templates.PROCESSING_TABLES,
                 "pc_artifact_lineage_sources", "pc_artifact_lineage_artifacts",
                 "pc_topic_memory_retrieval_shape", "pc_topic_memory_revision_publications",
                 "pc_topic_memory_active_topics", "pc_topic_memory_active_chunks",
                 frag.TOPIC_FTS_TABLE, frag.CHUNK_FTS_TABLE)


class SQLiteTopicBackend(TopicInsightMixin, SQLiteTopicSupervision,
                         SQLiteStorage[TopicCapabilities], DatabaseTopicBackend):
    """The Topic Memory family on one SQLite file (shared with the Memory family).

    ``path_or_url``: a file path, ``sqlite:///abs/path`` or ``sqlite:///:memory:``.
    ``profile``: the deployment's embedding profile (None: FTS-only); with it and a
    passing vec0 probe the vec0 tables exist and the first publication fixes a hybrid
    shape. ``analyzer``: the version a new database records (see DatabaseTopicBackend).
    Opening raises BackendError for an old SQLite or an unknown schema version,
    AnalyzerMismatchError, or RetrievalShapeError (see ``_check_open_sync``)."""

    conflict_tables: ClassVar[tuple[str, ...]] = (
        *SQLiteStorage.conflict_tables, "pc_topic_memory_revision_publications.")
    vector_k_cap = frag.MAX_KNN_K

    def __init__(self, path_or_url: str, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None,
                 busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        super().__init__(profile=profile, analyzer=analyzer)
        self._init_connection(path_or_url, busy_timeout_ms)
        self._vec_tables = False  # the Topic vec0 tables exist and sqlite-vec is loaded

    # ------------------------------------------------------------------ schema

    def _setup_sync(self, conn: apsw.Connection) -> TopicCapabilities:
        reasons: list[str] = []
        vec_loaded = self._load_vec_sync(reasons)
        fts_ok = self._probe_fts_sync(reasons)
        profile = self._profile
        vectors = vec_loaded and profile is not None
        if profile is not None and profile.distance != "l2":
            vectors = False
            reasons.append(f"vec0 is built for L2; the profile asks for {profile.distance!r}")
        # a read transaction first: a complete schema needs no write lock
        for create in (False, True):
            self._begin_sync(create)
            try:
                done = self._schema_sync(create, vectors)
                self._commit_sync()
            except BaseException:
                self._rollback_sync()
                raise
            if done:
                break
        self._vec_tables = vec_loaded and all(
            self._exists_sync(t) for t in (frag.TOPIC_VECTOR_TABLE, frag.CHUNK_VECTOR_TABLE))
        return self._infrastructure_caps(fts_ok, vectors and self._vec_tables, reasons)

    def _schema_sync(self, create: bool, vectors: bool) -> bool:
        """Check (with ``create``: create) the shared and Topic tables; False when
        something is missing and ``create`` is False."""
        if create:
            for name in [*templates.SCHEMA, *templates.PROCESSING_SCHEMA]:
                self._execute(self._t(name))
            for name in templates.TOPIC_SCHEMA:
                self._execute(self._t(name))
            for kind in _KINDS:
                self._execute(frag.statement(f"topic_create_{kind}_fts"))
            if self._meta_get_sync("schema_version") is None:
                self._meta_set_sync("schema_version", SCHEMA_VERSION)
            if self._meta_get_sync("analyzer_version") is None:
                self._meta_set_sync("analyzer_version", self._new_database_analyzer().version)
        elif not (self._exists_sync("powercontext_meta")
                  and all(self._exists_sync(t) for t in _TOPIC_TABLES)
                  and self._scope_uris_ready_sync()):
            return False
        if create:
            self._migrate_scope_uris_sync()  # a journal of an earlier release: its uris
        schema = self._meta_get_sync("schema_version")
        if schema is None:
            return create  # an unfinished creation: create (again)
        if schema != SCHEMA_VERSION:
            raise BackendError(
                f"database schema version {schema} is not supported (expected {SCHEMA_VERSION})")
        if vectors:
            assert self._profile is not None
            stored = self._shape_sync()
            if stored is not None and stored.kind == "fts" and self._topic_head_count_sync():
                return True  # an FTS-only deployment: the shape check refuses this open
            dim = self._profile.dimension
            for kind, table in zip(_KINDS, (frag.TOPIC_VECTOR_TABLE, frag.CHUNK_VECTOR_TABLE),
                                   strict=True):
                found = self._execute(frag.statement("table_sql"), [table])
                if found and f"float[{dim}]" in str(found[0][0]):
                    continue
                if not create:
                    return False
                if found and not self._topic_head_count_sync():
                    # a vector table of an earlier profile and no Topic yet: replace it
                    self._execute(frag.statement(f"topic_drop_{kind}_vector"))
                    found = []
                if not found:
                    self._execute(frag.topic_vector_ddl(kind, dim))
        return True

    def _rolled_back_sync(self) -> None:
        self._vec_tables = self._vec_tables and self._exists_sync(frag.TOPIC_VECTOR_TABLE)

    # ------------------------------------------------------------------ shape

    def _one(self, name: str, params: Sequence[Any] = ()) -> Any:
        rows = self._execute(self._t(name), params)
        return rows[0][0] if rows else None

    def _shape_sync(self) -> RetrievalShape | None:
        rows = self._execute(self._t("topic_shape_get"), [SHAPE_KEY])
        if not rows:
            return None
        kind, policy, analyzer, profile, fingerprint = rows[0]
        return RetrievalShape(kind, policy, analyzer,
                              None if profile is None else shared_rows.embedding_profile(profile),
                              fingerprint)

    def _set_shape_sync(self, shape: RetrievalShape) -> None:
        profile = (None if shape.embedding_profile is None
                   else canonical.canonical_dumps(shape.embedding_profile).decode())
        self._execute(self._t("topic_shape_delete"), [SHAPE_KEY])
        self._execute(self._t("topic_shape_insert"), [
            SHAPE_KEY, shape.kind, shape.chunk_policy, shape.analyzer_version, profile,
            shape.profile_fingerprint])

    def _topic_head_count_sync(self) -> int:
        return int(self._one("topic_head_count", [TOPIC_FAMILY]))

    def _missing_vectors_sync(self, fingerprint: str) -> int:
        if not self._vec_tables:
            return int(self._one("topic_stale_fingerprints", [fingerprint, fingerprint]))
        return int(self._execute(frag.statement("topic_missing_vectors"),
                                 [fingerprint, fingerprint])[0][0])

    # ------------------------------------------------------------------ publication

    def _head_for_update_sync(self, artifact_id: str) -> tuple[int, str] | None:
        rows = self._execute(self._t("topic_head_get"), [artifact_id])
        return None if not rows else (int(rows[0][0]), str(rows[0][1]))

    def _topic_scope_sync(self, artifact_id: str) -> str | None:
        return self._one("topic_scope_get", [artifact_id])

    def _source_hashes_sync(self, source_ids: Sequence[str]) -> dict[str, str]:
        return {str(a): str(h) for a, h in self._select_in("topic_source_hashes", source_ids)}

    def _insert_revision_sync(self, row: RevisionRow) -> None:
        self._execute(self._t("revision_insert"), shared_rows.revision_params(row))

    def _insert_head_sync(self, artifact_id: str, revision: int) -> None:
        self._execute(self._t("head_insert"), [artifact_id, revision])

    def _cas_head_sync(self, artifact_id: str, base_revision: int, revision: int) -> bool:
        self._execute(self._t("head_cas"), [revision, artifact_id, base_revision])
        return self._changed_one()

    def _insert_lineage_sync(self, ref: TopicRef, sources: Sequence[SourceRef],
                             based_on: TopicRef | None) -> None:
        insert = self._t("topic_lineage_source_insert")
        for s in sources:
            self._execute(insert, [ref.artifact_id, ref.revision, s.source_id, s.content_hash])
        if based_on is not None:
            self._execute(self._t("topic_lineage_artifact_insert"), [
                ref.artifact_id, ref.revision, based_on.family, based_on.artifact_id,
                based_on.revision])

    def _database_utc_now_sync(self) -> str:
        return utc_text(self._execute(frag.statement("topic_now"))[0][0])

    def _insert_publication_sync(self, ref: TopicRef, scope_id: str, published_at: str) -> None:
        self._execute(self._t("topic_publication_insert"),
                      [ref.artifact_id, ref.revision, scope_id, published_at])

    def _delete_active_sync(self, artifact_id: str) -> None:
        for (cid,) in self._execute(self._t("topic_chunk_rowids"), [artifact_id]):
            self._execute(frag.statement("topic_chunk_fts_delete"), [cid])
            if self._vec_tables:
                self._execute(frag.statement("topic_chunk_vector_delete"), [cid])
        self._execute(self._t("topic_chunks_delete"), [artifact_id])
        for (rid,) in self._execute(self._t("topic_active_rowid"), [artifact_id]):
            self._execute(frag.statement("topic_topic_fts_delete"), [rid])
            if self._vec_tables:
                self._execute(frag.statement("topic_topic_vector_delete"), [rid])
        self._execute(self._t("topic_active_delete"), [artifact_id])

    def _insert_active_sync(self, write: TopicWrite, fingerprint: str | None) -> None:
        assert self._conn is not None
        if fingerprint is not None and not self._vec_tables:
            raise BackendError("a hybrid publication but the database has no vec0 tables")
        ref, p = write.ref, write.projection
        scope = frag.topic_scope_token(write.scope_id)
        self._execute(self._t("topic_active_insert"), [
            ref.artifact_id, ref.revision, write.scope_id, write.content.title,
            write.content.summary, p.topic_text, len(write.sources), fingerprint])
        self._index_sync("topic", self._conn.last_insert_rowid(), scope, p.topic_text,
                         p.topic_vector if fingerprint is not None else None)
        insert = self._t("topic_chunk_insert")
        for c in p.chunks:
            self._execute(insert, [
                ref.artifact_id, ref.revision, c.chunk.ordinal, write.scope_id, c.chunk.start,
                c.chunk.end, c.chunk.text, c.fts_text, fingerprint])
            self._index_sync("chunk", self._conn.last_insert_rowid(), scope, c.fts_text,
                             c.vector if fingerprint is not None else None)

    def _index_sync(self, kind: str, rowid: int, scope: str, fts_text: str,
                    vector: EmbeddingVector | None) -> None:
        # a stray FTS row under a fresh rowid (damage) must not block the write
        self._execute(frag.statement(f"topic_{kind}_fts_delete"), [rowid])
        self._execute(frag.statement(f"topic_{kind}_fts_insert"),
                      [rowid, frag.fts_document(scope, fts_text)])
        if vector is not None:
            self._execute(frag.statement(f"topic_{kind}_vector_delete"), [rowid])
            self._execute(frag.statement(f"topic_{kind}_vector_insert"),
                          [rowid, scope, pack(vector)])

    # ------------------------------------------------------------------ allowance, guards
    # (BEGIN IMMEDIATE excludes every other writer: ``lock`` needs nothing more here)

    def _budget_row_sync(self, scope_id: str, binding_name: str, source_after: int, *,
                         lock: bool) -> BudgetRow | None:
        rows = self._execute(self._t("budget_get"), [scope_id, binding_name, source_after])
        return budget_row(rows[0]) if rows else None

    def _budget_insert_sync(self, row: BudgetRow) -> None:
        self._execute(self._t("budget_insert"), budget_params(row))

    def _budget_update_sync(self, row: BudgetRow) -> None:
        self._execute(self._t("budget_update"), budget_update_params(row))

    def _budget_delete_sync(self, scope_id: str, binding_name: str, source_after: int,
                            attempt_id: str) -> bool:
        self._execute(self._t("budget_delete"),
                      [scope_id, binding_name, source_after, attempt_id])
        return self._changed_one()

    def _cursor_sync(self, binding_name: str, scope_id: str, *, lock: bool) -> int | None:
        found = self._one("guard_cursor_get", [binding_name, scope_id])
        return None if found is None else int(found)

    def _cursor_insert_sync(self, binding_name: str, scope_id: str, position: int) -> None:
        self._execute(self._t("guard_cursor_insert"), [binding_name, scope_id, position])

    def _cursor_cas_sync(self, binding_name: str, scope_id: str, expected: int,
                         position: int) -> bool:
        self._execute(self._t("guard_cursor_cas"), [position, binding_name, scope_id, expected])
        return self._changed_one()

    def _pending_row_sync(self, binding_name: str, scope_id: str, *,
                          lock: bool) -> PendingRow | None:
        rows = self._execute(self._t("guard_pending_get"), [binding_name, scope_id])
        return pending_row(binding_name, scope_id, rows[0]) if rows else None

    def _pending_handled_sync(self, binding_name: str, scope_id: str, handled: int) -> None:
        self._execute(self._t("guard_pending_handled"), [handled, binding_name, scope_id])

    def _pending_delete_sync(self, binding_name: str, scope_id: str) -> None:
        self._execute(self._t("guard_pending_delete"), [binding_name, scope_id])

    # ------------------------------------------------------------------ operator decisions

    def _decision_insert_sync(self, decision: OperatorDecision) -> None:
        self._execute(self._t("operator_decision_insert"), decision_params(decision))

    def _decisions_sync(self, scope_id: str, limit: int) -> list[OperatorDecision]:
        return [decision_row(r) for r in
                self._execute(self._t("operator_decisions_get"), [scope_id, limit])]

    # ------------------------------------------------------------------ reads

    def _fts_rows_sync(self, channel: TopicChannel, scope_id: str, terms: Sequence[str],
                       limit: int, offset: int) -> list[ChannelRow]:
        if not terms or limit <= 0:
            return []
        kind = "topic" if channel == "topic_fts" else "chunk"
        match = frag.fts_match_tokens(
            frag.scoped_terms(frag.topic_scope_token(scope_id), list(dict.fromkeys(terms))))
        rows = self._execute(frag.statement(f"topic_{kind}_fts_search"),
                             [match, limit, offset, scope_id])
        return [_channel_row(kind, r) for r in rows]

    def _vector_rows_sync(self, channel: TopicChannel, scope_id: str,
                          vector: EmbeddingVector, k: int) -> list[ChannelRow]:
        if not self._vec_tables or k <= 0:
            return []
        kind = "topic" if channel == "topic_vector" else "chunk"
        rows = self._execute(frag.statement(f"topic_{kind}_vector_search"), [
            pack(vector), min(k, frag.MAX_KNN_K), frag.topic_scope_token(scope_id), scope_id])
        return [_channel_row(kind, r[:-1], float(r[-1])) for r in rows]

    def _cards_sync(self, scope_id: str, artifact_ids: Sequence[str]) -> dict[str, TopicCard]:
        return {str(a): (TopicRef(str(a), int(r)), str(t), str(s))
                for a, r, t, s in self._select_in("topic_cards", artifact_ids, [scope_id])}

    def _chunk_text_sync(self, ref: TopicRef, ordinal: int) -> str | None:
        return self._one("topic_chunk_text", [ref.artifact_id, ref.revision, ordinal])

    def _topic_revision_sync(self, artifact_id: str, revision: int) -> RevisionRow | None:
        rows = self._execute(self._t("topic_revision_get"),
                             [artifact_id, revision, TOPIC_FAMILY])
        return shared_rows.revision_row(rows[0]) if rows else None

    def _publication_sync(self, artifact_id: str, revision: int) -> tuple[str, str] | None:
        rows = self._execute(self._t("topic_publication_get"), [artifact_id, revision])
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def _lineage_sync(self, artifact_id: str,
                      revision: int) -> tuple[list[SourceRef], list[TopicRef]]:
        sources = [SourceRef(str(s), str(h)) for s, h in
                   self._execute(self._t("topic_lineage_sources_get"), [artifact_id, revision])]
        based = [TopicRef(str(a), int(r), str(f)) for f, a, r in
                 self._execute(self._t("topic_lineage_artifacts_get"), [artifact_id, revision])]
        return sources, based

    def _topic_heads_sync(self, scope_id: str) -> list[TopicRef]:
        return [TopicRef(str(a), int(r))
                for a, r in self._execute(self._t("topic_heads_by_scope"), [scope_id])]


    # ------------------------------------------------------------------ analyzer migration

    def _active_refs_sync(self) -> list[tuple[TopicRef, str]]:
        return [(TopicRef(str(a), int(r)), str(s))
                for a, r, s in self._execute(self._t("topic_active_refs"))]

    def _set_fts_texts_sync(self, ref: TopicRef, topic_text: str,
                            chunk_texts: Sequence[tuple[int, str]]) -> None:
        rows = self._execute(self._t("topic_active_fts_row"), [ref.artifact_id, ref.revision])
        if not rows:
            raise IntegrityError(f"Topic {ref.artifact_id!r}@{ref.revision} is not active")
        chunks = self._execute(self._t("topic_chunk_fts_rows"), [ref.artifact_id, ref.revision])
        if [int(o) for _, o in chunks] != [o for o, _ in chunk_texts]:
            raise IntegrityError(f"Topic {ref.artifact_id!r}@{ref.revision}: its chunk rows "
                                 "are not the chunks of its Revision")
        scope = frag.topic_scope_token(str(rows[0][1]))
        rowid = int(rows[0][0])
        self._execute(self._t("topic_active_fts_update"), [topic_text, rowid])
        self._index_sync("topic", rowid, scope, topic_text, None)
        for (cid, _), (_, text) in zip(chunks, chunk_texts, strict=True):
            self._execute(self._t("topic_chunk_fts_update"), [text, int(cid)])
            self._index_sync("chunk", int(cid), scope, text, None)

    # ------------------------------------------------------------------ integrity

    def _integrity_sync(self) -> dict[str, Any]:
        """Inside a read transaction: the FTS5 integrity-check of both Topic FTS tables
        (raises apsw's error on damage) and the row counts ``topics`` / ``chunks`` of the
        active tables and, with the vec0 tables, ``topic_vectors`` / ``chunk_vectors``
        (the contract kit's fault checks read these)."""
        for kind in _KINDS:
            self._execute(frag.statement(f"topic_{kind}_fts_integrity_check"))
        out: dict[str, Any] = {
            "topics": int(self._one("topic_active_count")),
            "chunks": int(self._one("topic_chunk_count")),
        }
        if self._vec_tables:
            for kind in _KINDS:
                out[f"{kind}_vectors"] = int(
                    self._execute(frag.statement(f"topic_{kind}_vector_count"))[0][0])
        return out


def _channel_row(kind: str, row: Sequence[Any], distance: float | None = None) -> ChannelRow:
    if kind == "topic":
        aid, rev, text = row
        return ChannelRow(TopicRef(str(aid), int(rev)), None, str(text), distance)
    aid, rev, ordinal, text = row
    return ChannelRow(TopicRef(str(aid), int(rev)), int(ordinal), str(text), distance)
