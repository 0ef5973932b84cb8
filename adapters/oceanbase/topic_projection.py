"""The OceanBase search projection of Topic Memory (Topic Memory RFC,
"Storage, Head, and atomic activation", "Detail chunks and deployment-enabled
retrieval channels"): the two active tables with their FULLTEXT and HNSW indexes (their
DDL), the replacement of a Topic's active rows, the four channels within one Scope and
the reads of active rows. :class:`OceanBaseTopicProjection` is the
:class:`~powercontext.ports.engine.TopicSearchProjection` of
:class:`~powercontext.adapters.oceanbase.topic_backend.OceanBaseTopicBackend`, over the
statements of its engine
(:class:`~powercontext.adapters.oceanbase.engine.OceanBaseEngine`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from powercontext.adapters.oceanbase.match_terms import match_terms
from powercontext.adapters.storage.rows import text as _text
from powercontext.adapters.topic_rows import TopicCard
from powercontext.core.errors import (
    CapabilityNotSupportedError,
    IntegrityError,
    InvalidInputError,
)
from powercontext.core.models import EmbeddingVector
from powercontext.core.topic.models import TopicChannel, TopicRef, TopicWrite
from powercontext.core.topic.search import ChannelRow, ChannelRows
from powercontext.sql import oceanbase as obsql
from powercontext.sql import oceanbase_topic as tsql
from powercontext.sql import templates

if TYPE_CHECKING:
    from powercontext.adapters.oceanbase.engine import OceanBaseEngine

__all__ = ["OceanBaseTopicProjection"]

_VECTOR_COL_RE = re.compile(r"`embedding`\s+VECTOR\((\d+)\)", re.IGNORECASE)


def _fts_query(terms: Sequence[str]) -> str:
    """The MATCH text of Analyzer v1 ``terms`` (each checked: raw text never reaches
    MATCH)."""
    return " ".join(match_terms(terms))


class OceanBaseTopicProjection:
    """Active Topic and chunk rows on OceanBase: schema, replacement, channels, reads,
    over the statements of ``engine`` (``run``, ``run_ddl``, ``rows``, ``run_many``)."""

    #: The largest k a vector channel can ask (seekdb's ``APPROXIMATE LIMIT`` bound).
    vector_k_cap: int | None = tsql.MAX_APPROXIMATE_K

    def __init__(self, engine: OceanBaseEngine) -> None:
        self._engine = engine
        #: VECTOR(dim) of the active tables, or None (read at open)
        self.vector_column: int | None = None

    def _exec(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        return self._engine.run(sql, params)

    def _all(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        return self._engine.rows(sql, params)

    # ------------------------------------------------------------------ schema

    def _vector_column_of(self, table: str) -> int | None:
        ddl = _text(self._all(f"SHOW CREATE TABLE {table}")[0][1])
        m = _VECTOR_COL_RE.search(ddl)
        return int(m.group(1)) if m else None

    def create_tables(self, existing: set[str], dimension: int | None) -> None:
        """Create the two active tables when missing (``VECTOR(dimension)`` + HNSW when
        ``dimension``), then read back which vector column they have."""
        for table, ddl in ((tsql.ACTIVE_TOPICS_TABLE, tsql.active_topics_ddl),
                           (tsql.ACTIVE_CHUNKS_TABLE, tsql.active_chunks_ddl)):
            if table not in existing:
                self._engine.run_ddl(ddl(dimension))
        self._read_vector_column()

    def _read_vector_column(self) -> None:
        dims = {self._vector_column_of(t) for t in tsql.TOPIC_TABLES}
        # both tables are created together; a mismatch (a crash between the two DDLs of
        # a reshape) counts as "no vector column" so the shape checks refuse hybrid
        self.vector_column = dims.pop() if len(dims) == 1 else None

    def reshape_tables(self, dimension: int | None) -> None:
        """Drop and recreate the (empty: no Topic Heads) active tables for another
        vector dimension or none. DDL: each statement commits implicitly."""
        for table in reversed(tsql.TOPIC_TABLES):
            self._exec(f"DROP TABLE IF EXISTS {table}")
        self.create_tables(set(), dimension)

    def missing_vectors(self, fingerprint: str) -> int:
        """Active Topic and chunk rows lacking a vector of ``fingerprint`` (every row,
        when the tables have no vector column)."""
        if self.vector_column is None:
            return int(self._all(tsql.active_row_count())[0][0])
        return int(self._all(tsql.missing_vectors(), (fingerprint, fingerprint))[0][0])

    # ------------------------------------------------------------------ writes

    def delete_active(self, artifact_id: str) -> None:
        """Delete the Topic's active rows; their FULLTEXT and HNSW entries go with them
        (they are indexes of the same table)."""
        self._exec(tsql.chunks_delete(1), (artifact_id,))
        self._exec(tsql.topics_delete(1), (artifact_id,))

    def _vector_param(self, vector: EmbeddingVector | None, field: str) -> str:
        if vector is None:
            raise InvalidInputError(field, "a hybrid deployment needs every vector")
        if len(vector) != self.vector_column:
            raise InvalidInputError(field, f"has {len(vector)} dimensions; the column has "
                                    f"{self.vector_column}")
        return obsql.vector_literal(vector)

    def insert_active(self, write: TopicWrite, fingerprint: str | None) -> None:
        """Insert the active Topic row and every chunk row of ``write``'s Revision
        (with their vectors and ``fingerprint`` when it is not None: hybrid)."""
        hybrid = fingerprint is not None
        if hybrid and self.vector_column is None:
            raise CapabilityNotSupportedError("the active tables have no vector column")
        p = write.projection
        ref = write.ref
        topic: list[Any] = [ref.artifact_id, ref.revision, write.scope_id, write.content.title,
                            write.content.summary, p.topic_text, len(write.sources),
                            fingerprint]
        with_vector = self.vector_column is not None
        if with_vector:
            topic.append(self._vector_param(p.topic_vector, "topic_vector") if hybrid else None)
        self._exec(tsql.topic_insert(with_vector), topic)
        rows = []
        for c in p.chunks:
            row: list[Any] = [ref.artifact_id, ref.revision, c.chunk.ordinal, write.scope_id,
                              c.chunk.start, c.chunk.end, c.chunk.text, c.fts_text,
                              fingerprint]
            if with_vector:
                row.append(self._vector_param(c.vector, "chunks.vector") if hybrid else None)
            rows.append(row)
        self._engine.run_many(tsql.chunk_insert(with_vector), rows)

    # ------------------------------------------------------------------ channels

    def fts_rows(self, channel: TopicChannel, scope_id: str, terms: Sequence[str],
                       limit: int, offset: int) -> Sequence[ChannelRow]:
        """One page of ``topic_fts`` or ``detail_fts`` in one Scope, in the engine's
        total order (relevance, then artifact_id, then ordinal), each row made a
        ChannelRow when read."""
        query = _fts_query(terms)
        if not query or limit < 1:
            return []
        if channel == "topic_fts":
            rows = self._all(tsql.topic_fts_search(), (query, scope_id, query, limit, offset))
            return ChannelRows(rows, _topic_row)
        if channel == "detail_fts":
            rows = self._all(tsql.chunk_fts_search(), (query, scope_id, query, limit, offset))
            return ChannelRows(rows, _chunk_row)
        raise ValueError(f"not a full-text channel: {channel!r}")

    def vector_rows(self, channel: TopicChannel, scope_id: str,
                          vector: EmbeddingVector, k: int) -> Sequence[ChannelRow]:
        """The ``k`` nearest rows of ``topic_vector`` or ``detail_vector`` in one Scope,
        by L2 distance (ties by artifact_id, then ordinal). The HNSW scan filters by
        Scope inside the index (``PRE-FILTER``); should it answer short while the Scope
        holds more vectors, the scan is rerun exactly (never over-fetch-then-filter).
        ``k`` above :attr:`vector_k_cap` is refused."""
        if self.vector_column is None:
            raise CapabilityNotSupportedError("this database has no Topic vector column")
        if self.vector_k_cap is not None and k > self.vector_k_cap:
            raise InvalidInputError("k", f"at most {self.vector_k_cap} neighbours per scan")
        if k < 1:
            return []
        if channel == "topic_vector":
            table, search, detail = "topics", tsql.topic_vector_search, False
        elif channel == "detail_vector":
            table, search, detail = "chunks", tsql.chunk_vector_search, True
        else:
            raise ValueError(f"not a vector channel: {channel!r}")
        lit = self._vector_param(vector, "query_vector")
        got = self._all(search(True), (lit, scope_id, lit, k))
        if len(got) < k:
            have = int(self._all(tsql.scope_vector_count(table), (scope_id,))[0][0])
            if have > len(got):
                got = self._all(search(False), (lit, scope_id, lit, k))
        # sorted as raw rows (distance, UTF-8 artifact_id, ordinal), each made a
        # ChannelRow only when the collapse reads it
        near = [r for r in got if r[-1] is not None]
        near.sort(key=lambda r: (float(r[-1]), _text(r[0]).encode(),
                                 int(r[2]) if detail else 0))
        return ChannelRows(near, _near_chunk_row if detail else _near_topic_row)

    # ------------------------------------------------------------------ analyzer migration

    def active_refs(self) -> list[tuple[TopicRef, str]]:
        """``(ref, scope_id)`` of every active Topic, by artifact_id."""
        return [(TopicRef(_text(a), int(r)), _text(s))
                for a, r, s in self._all(tsql.active_refs())]

    def set_fts_texts(self, ref: TopicRef, topic_text: str,
                            chunk_texts: Sequence[tuple[int, str]]) -> None:
        """Replace the full-text fields of ``ref``'s active rows (the FULLTEXT indexes
        follow the rows); IntegrityError when ``ref`` is not active or its chunk rows
        differ from ``chunk_texts``' ordinals."""
        where = f"Topic {ref.artifact_id!r}@{ref.revision}"
        ordinals = [int(o) for (o,) in self._all(tsql.chunk_ordinals(),
                                                 (ref.artifact_id, ref.revision))]
        if ordinals != [o for o, _ in chunk_texts]:
            raise IntegrityError(f"{where}: its chunk rows are not the chunks of its Revision")
        active = self._all(tsql.active_revision(), (ref.artifact_id,))
        if not active or int(active[0][0]) != ref.revision:
            raise IntegrityError(f"{where} is not active")
        self._exec(tsql.topic_fts_update(), (topic_text, ref.artifact_id, ref.revision))
        for ordinal, text in chunk_texts:
            self._exec(tsql.chunk_fts_update(), (text, ref.artifact_id, ref.revision, ordinal))

    # ------------------------------------------------------------------ reads

    def cards(self, scope_id: str, artifact_ids: Sequence[str]) -> dict[str, TopicCard]:
        """``artifact_id -> (active ref, title, summary)`` of these Topics' active rows
        in this Scope (others are left out)."""
        ids = list(dict.fromkeys(artifact_ids))
        out: dict[str, TopicCard] = {}
        size = templates.IN_BUCKETS[-1]
        for start in range(0, len(ids), size):
            chunk = ids[start:start + size]
            n = templates.bucket(len(chunk))
            for aid, rev, title, summary in self._all(
                    tsql.topic_rows(n), (scope_id, *chunk, *([None] * (n - len(chunk))))):
                out[_text(aid)] = (TopicRef(_text(aid), int(rev)), _text(title), _text(summary))
        return out

    def chunk_text(self, ref: TopicRef, ordinal: int) -> str | None:
        """The text of one active chunk of exactly ``ref``, or None."""
        rows = self._all(tsql.chunk_texts(), (ref.artifact_id, ref.revision, ordinal))
        return _text(rows[0][0]) if rows else None


def _topic_row(r: Sequence[Any]) -> ChannelRow:
    return ChannelRow(TopicRef(_text(r[0]), int(r[1])), None, _text(r[2]))


def _chunk_row(r: Sequence[Any]) -> ChannelRow:
    return ChannelRow(TopicRef(_text(r[0]), int(r[1])), int(r[2]), _text(r[3]))


def _near_topic_row(r: Sequence[Any]) -> ChannelRow:
    return ChannelRow(TopicRef(_text(r[0]), int(r[1])), None, _text(r[2]), float(r[-1]))


def _near_chunk_row(r: Sequence[Any]) -> ChannelRow:
    return ChannelRow(TopicRef(_text(r[0]), int(r[1])), int(r[2]), _text(r[3]),
                      float(r[-1]))
