"""SQLiteTopicProjection: the Topic Memory search projection on SQLite (Topic Memory
RFC, "Storage, Head, and atomic activation", "Detail chunks and deployment-enabled
retrieval channels"), the :class:`~powercontext.ports.engine.TopicSearchProjection` of
:class:`~powercontext.adapters.sqlite.topic_backend.SQLiteTopicBackend`.

* ``pc_topic_memory_topic_fts`` / ``pc_topic_memory_chunk_fts`` -- contentless-delete
  FTS5 tables with ``rowid`` = the active row's ``topic_rowid`` / ``chunk_rowid``; every
  Analyzer token carries the Scope's token (:func:`~powercontext.sql.sqlite.topic_scope_token`);
* ``pc_topic_memory_topic_vector`` / ``pc_topic_memory_chunk_vector`` -- vec0 tables
  (same rowids, partition key = the Scope token, L2), present only when the shape is or
  will be hybrid (:attr:`SQLiteTopicProjection.vec_tables`).

Virtual tables are outside every foreign key: their rows are deleted explicitly with
the active rows they index. Every statement runs through the engine's one funnel to
APSW (:meth:`~powercontext.adapters.sqlite.engine.SQLiteEngine.rows`), inside the
caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from powercontext.adapters.sqlite.schema import pack
from powercontext.adapters.topic_rows import TopicCard
from powercontext.core.errors import BackendError, IntegrityError
from powercontext.core.models import EmbeddingVector
from powercontext.core.topic.models import TopicChannel, TopicRef, TopicWrite
from powercontext.core.topic.search import ChannelRow, ChannelRows
from powercontext.sql import sqlite as frag
from powercontext.sql import templates

if TYPE_CHECKING:
    from powercontext.adapters.sqlite.engine import SQLiteEngine

__all__ = ["KINDS", "SQLiteTopicProjection"]

KINDS = ("topic", "chunk")


class SQLiteTopicProjection:
    """The active Topic and chunk rows with their FTS5 and vec0 rows, over ``engine``."""

    #: The largest ``k`` a vec0 KNN answers.
    vector_k_cap: int | None = frag.MAX_KNN_K

    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine
        #: the Topic vec0 tables exist and sqlite-vec is loaded (set at open)
        self.vec_tables = False

    def _sql(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._engine.rows(sql, params)

    def _template(self, name: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._engine.rows(templates.render(name, "sqlite"), params)

    def _one(self, name: str, params: Sequence[Any] = ()) -> Any:
        rows = self._template(name, params)
        return rows[0][0] if rows else None

    def _last_rowid(self) -> int:
        conn = self._engine.connection
        assert conn is not None
        return int(conn.last_insert_rowid())

    # ------------------------------------------------------------------ DDL check

    def missing_vectors(self, fingerprint: str) -> int:
        """Active rows lacking a vector of ``fingerprint`` (every row with another
        fingerprint, when there are no vec0 tables)."""
        if not self.vec_tables:
            return int(self._one("topic_stale_fingerprints", [fingerprint, fingerprint]))
        return int(self._sql(frag.statement("topic_missing_vectors"),
                             [fingerprint, fingerprint])[0][0])

    # ------------------------------------------------------------------ row replacement

    def delete_active(self, artifact_id: str) -> None:
        """Delete the Topic's active rows with their FTS5 and vec0 rows."""
        for (cid,) in self._template("topic_chunk_rowids", [artifact_id]):
            self._sql(frag.statement("topic_chunk_fts_delete"), [cid])
            if self.vec_tables:
                self._sql(frag.statement("topic_chunk_vector_delete"), [cid])
        self._template("topic_chunks_delete", [artifact_id])
        for (rid,) in self._template("topic_active_rowid", [artifact_id]):
            self._sql(frag.statement("topic_topic_fts_delete"), [rid])
            if self.vec_tables:
                self._sql(frag.statement("topic_topic_vector_delete"), [rid])
        self._template("topic_active_delete", [artifact_id])

    def insert_active(self, write: TopicWrite, fingerprint: str | None) -> None:
        """Insert the active rows of ``write.ref`` with their FTS5 rows and, when
        ``fingerprint`` is not None, their vec0 rows."""
        if fingerprint is not None and not self.vec_tables:
            raise BackendError("a hybrid publication but the database has no vec0 tables")
        ref, p = write.ref, write.projection
        scope = frag.topic_scope_token(write.scope_id)
        self._template("topic_active_insert", [
            ref.artifact_id, ref.revision, write.scope_id, write.content.title,
            write.content.summary, p.topic_text, len(write.sources), fingerprint])
        self._index("topic", self._last_rowid(), scope, p.topic_text,
                    p.topic_vector if fingerprint is not None else None)
        insert = templates.render("topic_chunk_insert", "sqlite")
        for c in p.chunks:
            self._sql(insert, [
                ref.artifact_id, ref.revision, c.chunk.ordinal, write.scope_id, c.chunk.start,
                c.chunk.end, c.chunk.text, c.fts_text, fingerprint])
            self._index("chunk", self._last_rowid(), scope, c.fts_text,
                        c.vector if fingerprint is not None else None)

    def _index(self, kind: str, rowid: int, scope: str, fts_text: str,
               vector: EmbeddingVector | None) -> None:
        # a stray FTS row under a fresh rowid (damage) must not block the write
        self._sql(frag.statement(f"topic_{kind}_fts_delete"), [rowid])
        self._sql(frag.statement(f"topic_{kind}_fts_insert"),
                  [rowid, frag.fts_document(scope, fts_text)])
        if vector is not None:
            self._sql(frag.statement(f"topic_{kind}_vector_delete"), [rowid])
            self._sql(frag.statement(f"topic_{kind}_vector_insert"),
                      [rowid, scope, pack(vector)])

    def set_fts_texts(self, ref: TopicRef, topic_text: str,
                      chunk_texts: Sequence[tuple[int, str]]) -> None:
        """Replace the full-text fields of exactly ``ref``'s active rows with their FTS5
        rows (vectors stay); IntegrityError when ``ref`` is not active or its chunk rows
        are not exactly those ordinals."""
        rows = self._template("topic_active_fts_row", [ref.artifact_id, ref.revision])
        if not rows:
            raise IntegrityError(f"Topic {ref.artifact_id!r}@{ref.revision} is not active")
        chunks = self._template("topic_chunk_fts_rows", [ref.artifact_id, ref.revision])
        if [int(o) for _, o in chunks] != [o for o, _ in chunk_texts]:
            raise IntegrityError(f"Topic {ref.artifact_id!r}@{ref.revision}: its chunk rows "
                                 "are not the chunks of its Revision")
        scope = frag.topic_scope_token(str(rows[0][1]))
        rowid = int(rows[0][0])
        self._template("topic_active_fts_update", [topic_text, rowid])
        self._index("topic", rowid, scope, topic_text, None)
        for (cid, _), (_, text) in zip(chunks, chunk_texts, strict=True):
            self._template("topic_chunk_fts_update", [text, int(cid)])
            self._index("chunk", int(cid), scope, text, None)

    # ------------------------------------------------------------------ channels

    def fts_rows(self, channel: TopicChannel, scope_id: str, terms: Sequence[str],
                 limit: int, offset: int) -> ChannelRows:
        """One page of ``topic_fts`` or ``detail_fts`` in one Scope (bm25, then rowid),
        each row made a ChannelRow when read."""
        if not terms or limit <= 0:
            return ChannelRows((), _topic_row)
        kind = "topic" if channel == "topic_fts" else "chunk"
        match = frag.fts_match_tokens(
            frag.scoped_terms(frag.topic_scope_token(scope_id), list(dict.fromkeys(terms))))
        rows = self._sql(frag.statement(f"topic_{kind}_fts_search"),
                         [match, limit, offset, scope_id])
        return ChannelRows(rows, _topic_row if kind == "topic" else _chunk_row)

    def vector_rows(self, channel: TopicChannel, scope_id: str,
                    vector: EmbeddingVector, k: int) -> ChannelRows:
        """The ``k`` nearest rows of ``topic_vector`` or ``detail_vector`` in one Scope
        (the vec0 partition key), by L2, each made a ChannelRow when read."""
        if not self.vec_tables or k <= 0:
            return ChannelRows((), _topic_row)
        kind = "topic" if channel == "topic_vector" else "chunk"
        rows = self._sql(frag.statement(f"topic_{kind}_vector_search"), [
            pack(vector), min(k, frag.MAX_KNN_K), frag.topic_scope_token(scope_id), scope_id])
        return ChannelRows(rows, _near_topic_row if kind == "topic" else _near_chunk_row)

    # ------------------------------------------------------------------ reads of active rows

    def cards(self, scope_id: str, artifact_ids: Sequence[str]) -> dict[str, TopicCard]:
        """``artifact_id -> (active ref, title, summary)`` of these Topics of the Scope."""
        return {str(a): (TopicRef(str(a), int(r)), str(t), str(s)) for a, r, t, s in
                self._engine.query_in("topic_cards", artifact_ids, [scope_id])}

    def chunk_text(self, ref: TopicRef, ordinal: int) -> str | None:
        """The snippet text of one active chunk of exactly ``ref``, or None."""
        found = self._one("topic_chunk_text", [ref.artifact_id, ref.revision, ordinal])
        return None if found is None else str(found)

    def active_refs(self) -> list[tuple[TopicRef, str]]:
        """``(ref, scope_id)`` of every active Topic of every Scope, by artifact_id."""
        return [(TopicRef(str(a), int(r)), str(s))
                for a, r, s in self._template("topic_active_refs")]

    # ------------------------------------------------------------------ integrity

    def integrity(self) -> dict[str, Any]:
        """Inside a read transaction: the FTS5 integrity-check of both Topic FTS tables
        (raises apsw's error on damage) and the row counts ``topics`` / ``chunks`` of the
        active tables and, with the vec0 tables, ``topic_vectors`` / ``chunk_vectors``
        (the contract kit's fault checks read these)."""
        for kind in KINDS:
            self._sql(frag.statement(f"topic_{kind}_fts_integrity_check"))
        out: dict[str, Any] = {
            "topics": int(self._one("topic_active_count")),
            "chunks": int(self._one("topic_chunk_count")),
        }
        if self.vec_tables:
            for kind in KINDS:
                out[f"{kind}_vectors"] = int(
                    self._sql(frag.statement(f"topic_{kind}_vector_count"))[0][0])
        return out


def _topic_row(row: Sequence[Any]) -> ChannelRow:
    aid, rev, text = row
    return ChannelRow(TopicRef(str(aid), int(rev)), None, str(text))


def _chunk_row(row: Sequence[Any]) -> ChannelRow:
    aid, rev, ordinal, text = row
    return ChannelRow(TopicRef(str(aid), int(rev)), int(ordinal), str(text))


def _near_topic_row(row: Sequence[Any]) -> ChannelRow:
    aid, rev, text, distance = row
    return ChannelRow(TopicRef(str(aid), int(rev)), None, str(text), float(distance))


def _near_chunk_row(row: Sequence[Any]) -> ChannelRow:
    aid, rev, ordinal, text, distance = row
    return ChannelRow(TopicRef(str(aid), int(rev)), int(ordinal), str(text), float(distance))
