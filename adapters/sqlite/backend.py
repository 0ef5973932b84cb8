"""SQLiteMemoryBackend: :class:`DatabaseMemoryBackend` on APSW + sqlite-vec (Memory RFC,
"SQLite adapter"; ARCHITECTURE.md, "Decisions").

The backend is three layers, one concept each: the family-neutral connection,
transactions, metadata and Sources (:mod:`powercontext.adapters.sqlite.connection`), the
Memory schema and startup probes (:mod:`powercontext.adapters.sqlite.schema`), and here
the Memory primitives: Revisions, entry versions, head projections, search candidates,
the offline-rebuild primitives and business keys.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from powercontext.adapters import memory_rows
from powercontext.adapters.database import MEMORY_FAMILY, VectorRow
from powercontext.adapters.manifest_log import ManifestLog
from powercontext.adapters.source_citations import SourceCitationsMixin
from powercontext.adapters.sqlite.connection import (
    BUSY_TIMEOUT_MS,
    MIN_SQLITE_VERSION,
    SQLITE_FEATURES,
    check_sqlite_version,
    parse_sqlite_url,
    sqlite_version,
)
from powercontext.adapters.sqlite.schema import SCHEMA_VERSION, SQLiteMemorySchema, pack, unpack
from powercontext.adapters.sqlite.vector_index import AUTO_RECALL, Lists, VectorIndex
from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.vector_gaps import VectorGaps
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import BackendError
from powercontext.core.models import EmbeddingProfile, EmbeddingVector
from powercontext.core.plan import ProjectionRow
from powercontext.core.ranking import SearchCandidate
from powercontext.sql import sqlite as frag

__all__ = ["BUSY_TIMEOUT_MS", "MIN_SQLITE_VERSION", "SCHEMA_VERSION", "SQLITE_FEATURES",
           "SQLiteMemoryBackend", "check_sqlite_version", "parse_sqlite_url",
           "sqlite_version"]


class SQLiteMemoryBackend(SourceCitationsMixin, SQLiteMemorySchema):
    """The Memory family on one SQLite file (Memory RFC, "SQLite adapter").

    ``path_or_url``: a file path, ``sqlite:///abs/path`` or ``sqlite:///:memory:``.
    ``profile``: the deployment's fixed embedding profile; with it the vector tables
    (``memory_entry_vector_metadata`` and the vec0 ``memory_entry_search_vector``) are
    created and vector/hybrid search reported when the vec0 probe passes. Opening
    raises :class:`BackendError` for SQLite older than 3.43.0 (contentless-delete
    FTS5; see SQLITE_FEATURES) or an unknown schema
    version, :class:`ProfileMismatchError` for another profile than the stored one.
    ``busy_timeout_ms``: how long a writer waits for the write lock before
    :class:`BackendError` ("database is locked").
    ``vector_index``: the vector channel's retrieval (Memory RFC, "Search and reads":
    ANN). ``"auto"`` (default): a Memory that has IVF lists
    (:mod:`powercontext.adapters.sqlite.vector_index`: from 4,096 vectors) whose
    calibrated recall@10 is at least 0.97 is searched through its nearest lists, any
    other exactly; ``"ivf"``: through its lists whenever it has them; ``"exact"``:
    vec0's float KNN; ``"ann"``: per Memory, the ``k * 8`` nearest sign-bit vectors by
    Hamming distance (vec0 ``bit[dim]``), rescored by exact L2 on the float vectors (a
    Memory of up to 512 vectors is searched exactly; recall below 0.95 at 100k
    vectors: docs/search.md, "Vector and hybrid search"). A database made before the
    sign-bit table or the IVF index existed searches exactly until ``memory rebuild``
    makes them. ValueError for another value.
    """

    supports_revision_encodings = True
    vector_k_cap = frag.MAX_KNN_K

    def __init__(self, path_or_url: str, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None,
                 busy_timeout_ms: int = BUSY_TIMEOUT_MS,
                 vector_index: Literal["auto", "ivf", "ann", "exact"] = "auto") -> None:
        if vector_index not in ("auto", "ivf", "ann", "exact"):
            raise ValueError(f"vector_index must be 'auto', 'ivf', 'ann' or 'exact', not "
                             f"{vector_index!r}")
        super().__init__(profile=profile, analyzer=analyzer)
        self._vector_index = vector_index
        self._init_connection(path_or_url, busy_timeout_ms)
        self._vec_tables = False
        self._vec_usable = False  # sqlite-vec loaded and its probe passed
        self._manifest_log = ManifestLog(self)
        self._vector_gaps = VectorGaps(self)

    # the shared templates, one method each (powercontext.adapters.manifest_log.LogEngine)

    def _template_rows(self, name: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._execute(self._t(name), params)

    def _template_rows_in(self, name: str, values: Sequence[Any],
                          before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._select_in(name, values, before)

    def _template_many(self, name: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run the statement ``name`` once per row of parameters (one prepared
        statement)."""
        assert self._conn is not None, "the connection is not open"
        if rows:
            self._conn.executemany(self._t(name), [tuple(r) for r in rows])

    # ------------------------------------------------------------------ revisions

    # ------------------------------------------------------------------ entry versions

    # ------------------------------------------------------------------ projections

    def _delete_projections_sync(self, artifact_id: str, entry_ids: Sequence[str]) -> None:
        pids = [r[0] for r in self._select_in("head_projection_ids", entry_ids, [artifact_id])]
        if not pids:
            return
        fts_delete = frag.statement("fts_delete")
        for pid in pids:
            self._execute(fts_delete, [pid])
        if self._vec_tables:
            # No cascade reaches a virtual table: vec0 rows go explicitly.
            vec_delete = frag.statement("vector_delete")
            bits_delete = frag.statement("bits_delete") if self._bits else None
            for pid in pids:
                self._execute(vec_delete, [pid])
                if bits_delete is not None:
                    self._execute(bits_delete, [pid])
            self._select_in("vector_metadata_delete", pids)
            if (index := self._ivf_index()) is not None:
                index.delete(pids)
        self._select_in("head_rows_delete", pids)

    def _insert_projections_sync(
        self,
        artifact_id: str,
        head_revision: int,
        rows: Sequence[ProjectionRow],
        vectors: Sequence[VectorRow | None],
    ) -> None:
        assert self._conn is not None
        scope = frag.scope_token(artifact_id)
        head_insert = self._t("head_row_insert")
        fts_insert = frag.statement("fts_insert")
        fts_delete = frag.statement("fts_delete")
        indexed: list[tuple[int, bytes]] = []
        for row, vec in zip(rows, vectors, strict=True):
            self._execute(head_insert, [artifact_id, head_revision, row.entry_id,
                                        row.entry_version_id, row.entry_content_hash,
                                        row.searchable_text])
            pid = self._conn.last_insert_rowid()
            # A stray FTS row under this rowid (projections are rebuildable, so one may be
            # left by damage) must not block authoritative writes: replace it.
            self._execute(fts_delete, [pid])
            self._execute(fts_insert, [pid, frag.fts_document(scope, row.searchable_text)])
            if vec is None:
                continue
            if not self._vec_tables or self._profile is None:
                raise BackendError("a vector was given but the database has no vec0 table")
            if len(vec.vector) != self._profile.dimension:
                raise BackendError(f"vector has {len(vec.vector)} dimensions, "
                                   f"the profile {self._profile.dimension}")
            self._execute(self._t("vector_metadata_insert"), [
                pid, row.entry_version_id, row.entry_content_hash, vec.embedding_content_hash])
            blob = pack(vec.vector)
            self._execute(frag.statement("vector_delete"), [pid])  # no INSERT OR REPLACE
            self._execute(frag.statement("vector_insert"), [pid, scope, blob])
            if self._bits:  # its sign bits, in the same transaction
                self._execute(frag.statement("bits_delete"), [pid])
                self._execute(frag.statement("bits_insert"), [pid, scope, blob])
            indexed.append((pid, blob))
        if indexed and (index := self._ivf_index()) is not None:
            index.add(scope, indexed)  # into the nearest lists, in this transaction
        if rows:
            self._merge_fts_sync()

    def _merge_fts_sync(self) -> None:
        """Keep the FTS index in few segments after a write: tiered merging of at most
        ``FTS_MERGE_PAGES`` pages, or, for a small index that reached
        ``FTS_SMALL_SEGMENTS``, all of it into one ('merge' with a negative page count).
        Neither changes what a MATCH returns (sql/sqlite.py explains the figures)."""
        pages = frag.FTS_MERGE_PAGES
        if (self._execute(frag.statement("fts_segments"))[0][0] >= frag.FTS_SMALL_SEGMENTS
                and self._execute(frag.statement("fts_small"), [frag.FTS_SMALL_INDEX_PAGES] * 2
                                  )[0][0]):
            pages = -frag.FTS_SMALL_INDEX_PAGES
        self._execute(frag.statement("fts_merge"), [pages])

    # ------------------------------------------------------------------ search

    def _fts_candidates_sync(
        self,
        artifact_ids: Sequence[str],
        terms: Sequence[str],
        limit: int,
        *,
        offset: int = 0,
    ) -> list[SearchCandidate]:
        """One page of the FTS5 matches of any scoped term, ordered by ``bm25`` then
        rowid (the projection id): a total order, so pages at growing offsets are exact.
        Every query term is in the MATCH (issue 9: none is left out for being common).
        The page is cut from :meth:`_fts_stream_sync` (one MATCH per Memory, merged)."""
        if not artifact_ids or not terms or limit <= 0:
            return []
        return list(itertools.islice(
            self._fts_stream_sync(artifact_ids, terms, limit + offset), offset, offset + limit))

    def _fts_stream_sync(
        self, artifact_ids: Sequence[str], terms: Sequence[str], first: int
    ) -> Iterator[SearchCandidate]:
        """Every head row of these Memories matching any of ``terms``, lazily, by
        ``(bm25, projection id)``: one MATCH per Memory over that Memory's scoped terms
        (pages of ``first`` rows, then doubling), merged k-way by ``(score, rowid)``.

        The same rows, order and scores as one MATCH over the OR of every Memory's
        scoped terms: a row's bm25 sums over the query's phrases, the phrases of
        another Memory's scope have no instance in it (they add exactly 0.0), and the
        IDF and length statistics are the table's, whatever the query. The single OR
        made every row pay for every Memory's phrases (10 Memories x 1k LoCoMo turns,
        60 questions, CPU per search: p50 6.8 ms one MATCH, 3.4 ms merged)."""
        if not artifact_ids or not terms or first <= 0:
            return iter(())
        distinct = list(dict.fromkeys(terms))
        wanted = list(dict.fromkeys(artifact_ids))
        streams = [self._fts_memory_stream(a, distinct, first) for a in wanted]
        if len(streams) == 1:
            return (c for _score, _pid, c in streams[0])
        return (c for _score, _pid, c in heapq.merge(*streams))

    def _fts_memory_stream(
        self, artifact_id: str, terms: list[str], first: int
    ) -> Iterator[tuple[float, int, SearchCandidate]]:
        """``(bm25, projection id, candidate)`` of one Memory's matches in that order,
        from pages of ``first`` rows, each next one twice as large."""
        query = frag.fts_match_tokens(frag.scoped_terms(frag.scope_token(artifact_id), terms))
        statement = frag.statement("fts_search")
        offset, size = 0, first
        while True:
            page = list(self._execute(statement, [query, size, offset]))
            for pid, a, e, v, h, text, score in page:
                if a == artifact_id:  # a scope token names one Memory
                    yield float(score), int(pid), SearchCandidate(a, e, v, h, text)
            if len(page) < size:
                return
            offset += size
            size *= 2

    def _vector_candidates_sync(
        self, artifact_ids: Sequence[str], vector: EmbeddingVector, limit: int
    ) -> list[SearchCandidate]:
        """The ``limit`` nearest head rows of these Memories by (L2 distance, projection
        id). On the ANN path (``_ann``): per Memory, the ``limit * ANN_OVERFETCH``
        nearest by Hamming distance of the sign bits (at most 4096), rescored by exact L2
        (exact whenever a Memory holds no more vectors than that); else vec0's exact
        float KNN."""
        if not self._vec_tables:
            return super()._vector_candidates_sync(artifact_ids, vector, limit)
        if limit <= 0:
            return []
        k = min(limit, frag.MAX_KNN_K)
        blob = pack(vector)
        found: list[tuple[float, int, SearchCandidate]] = []
        if self._ann:
            sql = frag.statement("vector_ann_search")
            params = [blob, min(k * frag.ANN_OVERFETCH, frag.MAX_KNN_K), None, k]
        else:
            sql, params = frag.statement("vector_search"), [blob, k, None]
        index = self._ivf_index() if self._vector_index in ("auto", "ivf") else None
        # One KNN per Memory (k applies per partition value anyway), merged by distance.
        for a in dict.fromkeys(artifact_ids):
            params[2] = scope = frag.scope_token(a)
            lists = index.lists(scope, centroids=False) if index is not None else None
            if index is not None and lists is not None and self._ivf_trusted(lists, k):
                rows = index.search(scope, blob, k, lists)
            else:
                rows = self._execute(sql, params)
            for pid, aid, e, v, h, text, dist in rows:
                if aid == a:
                    found.append(
                        (float(dist), pid, SearchCandidate(aid, e, v, h, text, float(dist))))
        found.sort(key=lambda t: (t[0], t[1]))
        return [c for _, _, c in found[:limit]]

    def _vector_first_k_sync(self, first: int) -> int:
        approximate = self._ann or (self._ivf and self._vector_index in ("auto", "ivf"))
        return frag.ANN_FIRST_K if approximate else first + 1

    # ------------------------------------------------------------------ the IVF index

    def _ivf_index(self) -> VectorIndex | None:
        """The IVF index (adapters/sqlite/vector_index.py) when its tables exist."""
        profile = self._profile or (self._db_caps and self._db_caps.embedding_profile)
        if not self._ivf or not profile:
            return None
        return VectorIndex(self._execute, profile.dimension)

    def _ivf_trusted(self, lists: Lists, k: int) -> bool:
        """Search this Memory through its lists: it has them, they leave some out at this
        ``k``, and ``vector_index`` is ``"ivf"``, or ``"auto"`` with a calibrated recall
        of at least AUTO_RECALL."""
        return (lists.lists > 0 and lists.probes(k) < lists.lists
                and (self._vector_index == "ivf" or lists.recall >= AUTO_RECALL))

    def _vector_projection_sync(self, artifact_id: str) -> list[tuple[str, str | None]]:
        if not self._vec_tables:
            return super()._vector_projection_sync(artifact_id)
        return [memory_rows.vector_hashes(r) for r in
                self._execute(frag.statement("vector_projection"), [artifact_id])]

    def _vector_projection_of_sync(self, artifact_id: str, entry_ids: Sequence[str]
                                   ) -> list[tuple[str, str | None]]:
        if not self._vec_tables:
            return super()._vector_projection_of_sync(artifact_id, entry_ids)
        sql = frag.statement("vector_projection_entry")
        return [memory_rows.vector_hashes(r) for e in dict.fromkeys(entry_ids)
                for r in self._execute(sql, [artifact_id, e])]

    def _head_vectors_sync(self, artifact_id: str) -> dict[str, VectorRow]:
        if not self._vec_tables:
            return {}
        out = {}
        for v, emb, blob in self._execute(frag.statement("head_vectors"), [artifact_id]):
            values = unpack(blob)
            if values is not None:
                out[v] = VectorRow(emb, values)
        return out

    # ------------------------------------------------------------------ offline rebuild

    def _all_heads_sync(self) -> list[tuple[str, int]]:
        return [shared_rows.head(r) for r in self._execute(self._t("all_heads"), [MEMORY_FAMILY])]

    def _clear_projection_sync(self, artifact_id: str) -> None:
        scope = frag.scope_token(artifact_id)
        pids = [r[0] for r in self._execute(self._t("memory_projection_ids"), [artifact_id])]
        fts_delete = frag.statement("fts_delete")
        for pid in pids:
            self._execute(fts_delete, [pid])
        if self._vec_tables:
            self._execute(frag.statement("vector_delete_scope"), [scope])
            if self._bits:
                self._execute(frag.statement("bits_delete_scope"), [scope])
            self._select_in("vector_metadata_delete", pids)
            if (index := self._ivf_index()) is not None:
                index.clear(scope)
        self._select_in("head_rows_delete", pids)

    def _mark_rebuilt_sync(self) -> None:
        super()._mark_rebuilt_sync()
        # rows left without a head row by damage: invisible to search, but they take space
        self._execute(frag.statement("fts_delete_orphans"))
        # the ANN first pass is made again from the float vectors: one row for each and
        # no other (this also upgrades a database made before it existed)
        self._refill_bits_sync()
        # and the IVF lists of every Memory, trained on its vectors (created if missing)
        profile = self._profile or (self._db_caps and self._db_caps.embedding_profile)
        if self._vec_tables and profile:
            index = VectorIndex(self._execute, profile.dimension)
            index.create()
            self._ivf = True
            index.train_all()

    # ------------------------------------------------------------------ business keys

