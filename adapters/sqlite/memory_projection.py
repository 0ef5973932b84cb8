"""SQLiteMemoryProjection: the Memory family's search projection on SQLite (Memory RFC,
"SQLite adapter", "Latest-head, full-text, and vector projection"): the head rows of
``memory_entry_heads`` with their contentless-delete FTS5 rows and, with an embedding
profile, their vec0 vectors (and the sign-bit vec0 of the ANN first pass). It
implements :class:`powercontext.ports.engine.MemorySearchProjection`.

Every method runs inside the caller's transaction on the backend's worker thread, and
every statement goes through the storage's ``_execute`` (the one place SQL reaches
APSW, where tests inject faults). The schema that creates these tables, and decides
which of them exist, is :mod:`powercontext.adapters.sqlite.schema`.

The vector channel's nearest-neighbour query is :meth:`SQLiteMemoryProjection.vector_candidates`.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from powercontext.adapters import memory_rows
from powercontext.adapters.memory_rows import VectorRow
from powercontext.adapters.sqlite.engine import SQLiteEngine
from powercontext.adapters.sqlite.schema import pack, unpack
from powercontext.adapters.sqlite.vector_index import AUTO_RECALL, Lists, VectorIndex
from powercontext.core.errors import BackendError, CapabilityNotSupportedError
from powercontext.core.models import EmbeddingProfile, EmbeddingVector
from powercontext.core.plan import ProjectionRow
from powercontext.core.ranking import SearchCandidate
from powercontext.sql import sqlite as frag
from powercontext.sql import sqlite_vector_index as ivf_sql
from powercontext.sql import templates

__all__ = ["SQLiteMemoryProjection"]

_DIALECT = "sqlite"


def _no_vectors() -> CapabilityNotSupportedError:
    return CapabilityNotSupportedError("this backend has no vector search")


class SQLiteMemoryProjection:
    """FTS5 and vec0 rows beside the Memory head rows of one SQLite storage.

    ``engine``: the backend's SQLite engine (its ``rows``, ``query_in``,
    ``table_exists`` and connection). ``vector_index``: ``"ann"`` (the sign-bit first
    pass, rescored exactly), ``"exact"`` or ``"auto"`` (exact: see
    :class:`~powercontext.adapters.sqlite.backend.SQLiteMemoryBackend`).

    State known once the schema is open (:mod:`powercontext.adapters.sqlite.schema`
    sets it): ``vec_tables`` (the vec0 table exists), ``bits`` (the first pass exists),
    ``vec_usable`` (sqlite-vec loaded and its probe passed) and ``profile`` (the
    embedding profile the vector tables are built for)."""

    #: vec0 answers at most this many nearest neighbours per query.
    vector_k_cap: int | None = frag.MAX_KNN_K

    def __init__(self, engine: SQLiteEngine,
                 vector_index: Literal["auto", "ivf", "ann", "exact"] = "auto") -> None:
        self._engine = engine
        self.vector_index = vector_index
        self.vec_tables = False
        self.bits = False
        self.ivf = False  # the IVF index's tables exist (adapters/sqlite/vector_index.py)
        self.vec_usable = False
        self.profile: EmbeddingProfile | None = None

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._engine.rows(sql, params)

    def _select_in(self, name: str, values: Sequence[Any],
                   before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._engine.query_in(name, values, before)

    @property
    def ann(self) -> bool:
        """Searches take the ANN path: the first pass exists and the deployment asked for
        it (``vector_index="ann"``; ``"auto"`` is exact: the sign-bit pass's recall does
        not hold at 100k vectors)."""
        return self.bits and self.vector_index == "ann"

    def refresh(self) -> None:
        """Re-read which vector tables exist (after a ROLLBACK: a rolled-back migration
        may have dropped or created them)."""
        exists = self._engine.table_exists
        self.vec_tables = exists(frag.VECTOR_TABLE)
        self.bits = self.vec_tables and exists(frag.BITS_TABLE)
        self.ivf = self.vec_tables and all(exists(t) for t in (
            ivf_sql.IVF_TABLE, ivf_sql.CENTROIDS_TABLE, ivf_sql.LISTS_TABLE,
            ivf_sql.SIZES_TABLE))

    # ------------------------------------------------------------------ the IVF index

    def ivf_index(self) -> VectorIndex | None:
        """The IVF index (adapters/sqlite/vector_index.py) when its tables exist."""
        if not self.ivf or not self.profile:
            return None
        return VectorIndex(self._execute, self.profile.dimension)

    def ivf_trusted(self, lists: Lists, k: int) -> bool:
        """Search this Memory through its lists: it has them, calibrated, they leave some
        out at this ``k``, and ``vector_index`` is ``"ivf"``, or ``"auto"`` with a recall
        of at least AUTO_RECALL."""
        return (lists.lists > 0 and 0 < lists.probes(k) < lists.lists
                and (self.vector_index == "ivf" or lists.recall >= AUTO_RECALL))

    # ------------------------------------------------------------------ row replacement

    def delete_projections(self, artifact_id: str, entry_ids: Sequence[str]) -> None:
        """Delete the head rows of these entries with their FTS and vector rows."""
        pids = [r[0] for r in self._select_in("head_projection_ids", entry_ids, [artifact_id])]
        if not pids:
            return
        fts_delete = frag.statement("fts_delete")
        for pid in pids:
            self._execute(fts_delete, [pid])
        if self.vec_tables:
            # No cascade reaches a virtual table: vec0 rows go explicitly.
            vec_delete = frag.statement("vector_delete")
            bits_delete = frag.statement("bits_delete") if self.bits else None
            for pid in pids:
                self._execute(vec_delete, [pid])
                if bits_delete is not None:
                    self._execute(bits_delete, [pid])
            self._select_in("vector_metadata_delete", pids)
            if (index := self.ivf_index()) is not None:
                index.delete(pids)
        self._select_in("head_rows_delete", pids)

    def insert_projections(self, artifact_id: str, head_revision: int,
                           rows: Sequence[ProjectionRow],
                           vectors: Sequence[VectorRow | None]) -> None:
        """Insert head rows (the entries have none) with their FTS rows and, where
        ``vectors[i]`` is not None, their vector (and its sign bits)."""
        conn = self._engine.connection
        assert conn is not None
        scope = frag.scope_token(artifact_id)
        head_insert = templates.render("head_row_insert", _DIALECT)
        fts_insert = frag.statement("fts_insert")
        fts_delete = frag.statement("fts_delete")
        indexed: list[tuple[int, bytes]] = []
        for row, vec in zip(rows, vectors, strict=True):
            self._execute(head_insert, [artifact_id, head_revision, row.entry_id,
                                        row.entry_version_id, row.entry_content_hash,
                                        row.searchable_text])
            pid = conn.last_insert_rowid()
            # A stray FTS row under this rowid (projections are rebuildable, so one may be
            # left by damage) must not block authoritative writes: replace it.
            self._execute(fts_delete, [pid])
            self._execute(fts_insert, [pid, frag.fts_document(scope, row.searchable_text)])
            if vec is None:
                continue
            if not self.vec_tables or self.profile is None:
                raise BackendError("a vector was given but the database has no vec0 table")
            if len(vec.vector) != self.profile.dimension:
                raise BackendError(f"vector has {len(vec.vector)} dimensions, "
                                   f"the profile {self.profile.dimension}")
            self._execute(templates.render("vector_metadata_insert", _DIALECT), [
                pid, row.entry_version_id, row.entry_content_hash, vec.embedding_content_hash])
            blob = pack(vec.vector)
            self._execute(frag.statement("vector_delete"), [pid])  # no INSERT OR REPLACE
            self._execute(frag.statement("vector_insert"), [pid, scope, blob])
            if self.bits:  # its sign bits, in the same transaction
                self._execute(frag.statement("bits_delete"), [pid])
                self._execute(frag.statement("bits_insert"), [pid, scope, blob])
            indexed.append((pid, blob))
        if indexed and (index := self.ivf_index()) is not None:
            index.add(scope, indexed)  # into the nearest lists, in this transaction
        if rows:
            self._merge_fts()

    def _merge_fts(self) -> None:
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

    def clear_projection(self, artifact_id: str) -> None:
        """Delete every head, FTS and vector row of one Memory (a rebuild)."""
        scope = frag.scope_token(artifact_id)
        pids = [r[0] for r in self._execute(
            templates.render("memory_projection_ids", _DIALECT), [artifact_id])]
        fts_delete = frag.statement("fts_delete")
        for pid in pids:
            self._execute(fts_delete, [pid])
        if self.vec_tables:
            self._execute(frag.statement("vector_delete_scope"), [scope])
            if self.bits:
                self._execute(frag.statement("bits_delete_scope"), [scope])
            self._select_in("vector_metadata_delete", pids)
            if (index := self.ivf_index()) is not None:
                index.clear(scope)
        self._select_in("head_rows_delete", pids)

    def after_rebuild(self) -> None:
        """The end of an offline rebuild: FTS rows left without a head row by damage go
        (invisible to search, but they take space), and the ANN first pass is made again
        from the float vectors (one row for each and no other; this also upgrades a
        database made before it existed)."""
        self._execute(frag.statement("fts_delete_orphans"))
        self.refill_bits()
        # and the IVF lists of every Memory, trained on its vectors (made again)
        if self.vec_tables and self.profile:
            VectorIndex(self._execute, self.profile.dimension).rebuild()
            self.ivf = True

    def refill_bits(self) -> None:
        """Make the ANN first pass again from the float vectors: every float row gets
        its sign-bit row and no other row is left. Inside the caller's write
        transaction."""
        if not self.vec_tables or not self.profile:
            return
        bits = frag.vector_bits_ddl(self.profile.dimension)
        if bits is None:
            return
        self._execute(frag.statement("drop_bits"))
        self._execute(bits)
        self._execute(frag.statement("bits_fill"))
        self.bits = True

    # ------------------------------------------------------------------ DDL

    def reset_vectors(self, profile: EmbeddingProfile | None) -> None:
        """Drop the vector projection of every Memory and recreate it for ``profile``
        (None: none), inside the caller's write transaction (SQLite's DDL is
        transactional). CapabilityNotSupportedError when sqlite-vec is not usable or the
        profile is not L2."""
        if profile is not None:
            if not self.vec_usable:
                raise CapabilityNotSupportedError(
                    "sqlite-vec is not usable here: no vector projection can be created")
            if profile.distance != "l2":
                raise CapabilityNotSupportedError(
                    f"vec0 is built for L2; the profile asks for {profile.distance!r}")
        if self.vec_tables:
            self._execute(frag.statement("drop_vector"))
        if self.bits or self._engine.table_exists(frag.BITS_TABLE):
            self._execute(frag.statement("drop_bits"))
        self._execute(templates.render("drop_memory_entry_vector_metadata", _DIALECT))
        VectorIndex(self._execute, 1).drop()
        self.vec_tables = self.bits = self.ivf = False
        self.profile = profile
        if profile is not None:
            for name in templates.VECTOR_SCHEMA:
                self._execute(templates.render(name, _DIALECT))
            self._execute(frag.vector_ddl(profile.dimension))
            self.vec_tables = True
            VectorIndex(self._execute, profile.dimension).create()
            self.ivf = True
            bits = frag.vector_bits_ddl(profile.dimension)
            if bits is not None:
                self._execute(bits)
                self.bits = True

    # ------------------------------------------------------------------ full-text

    def fts_candidates(self, artifact_ids: Sequence[str], terms: Sequence[str], limit: int,
                       *, offset: int = 0) -> list[SearchCandidate]:
        """One page of the FTS5 matches of any scoped term, ordered by ``bm25`` then
        rowid (the projection id): a total order, so pages at growing offsets are exact.
        Every query term is in the MATCH (none is left out for being common). The page
        is cut from :meth:`fts_stream` (one MATCH per Memory, merged)."""
        if not artifact_ids or not terms or limit <= 0:
            return []
        return list(itertools.islice(
            self.fts_stream(artifact_ids, terms, limit + offset), offset, offset + limit))

    def fts_stream(self, artifact_ids: Sequence[str], terms: Sequence[str], first: int
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

    def _fts_memory_stream(self, artifact_id: str, terms: list[str], first: int
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

    # ------------------------------------------------------------------ vectors

    def vector_candidates(self, artifact_ids: Sequence[str], vector: EmbeddingVector,
                          limit: int) -> list[SearchCandidate]:
        """The ``limit`` nearest head rows of these Memories by (L2 distance, projection
        id). On the ANN path (:attr:`ann`): per Memory, the ``limit * ANN_OVERFETCH``
        nearest by Hamming distance of the sign bits (at most 4096), rescored by exact L2
        (exact whenever a Memory holds no more vectors than that); else vec0's exact
        float KNN. CapabilityNotSupportedError without a vec0 table."""
        if not self.vec_tables:
            raise _no_vectors()
        if limit <= 0:
            return []
        k = min(limit, frag.MAX_KNN_K)
        blob = pack(vector)
        found: list[tuple[float, int, SearchCandidate]] = []
        if self.ann:
            sql = frag.statement("vector_ann_search")
            params = [blob, min(k * frag.ANN_OVERFETCH, frag.MAX_KNN_K), None, k]
        else:
            sql, params = frag.statement("vector_search"), [blob, k, None]
        index = self.ivf_index() if self.vector_index in ("auto", "ivf") else None
        # One KNN per Memory (k applies per partition value anyway), merged by distance.
        for a in dict.fromkeys(artifact_ids):
            params[2] = scope = frag.scope_token(a)
            lists = index.lists(scope) if index is not None else None
            if index is not None and lists is not None and self.ivf_trusted(lists, k):
                rows = index.search(scope, blob, k, lists)  # its nearest lists only
            else:
                rows = self._execute(sql, params)
            for pid, aid, e, v, h, text, dist in rows:
                if aid == a:
                    found.append(
                        (float(dist), pid, SearchCandidate(aid, e, v, h, text, float(dist))))
        found.sort(key=lambda t: (t[0], t[1]))
        return [c for _, _, c in found[:limit]]

    def vector_first_k(self, first: int) -> int:
        """The ``k`` of the vector stream's first query when the channel wants ``first``
        rows: a constant on the ANN path (its answer must not depend on the limit),
        else ``first + 1``."""
        approximate = self.ann or (self.ivf and self.vector_index in ("auto", "ivf"))
        return frag.ANN_FIRST_K if approximate else first + 1

    def vector_projection(self, artifact_id: str) -> list[tuple[str, str | None]]:
        """``(entry_content_hash, embedding_content_hash or None)`` of every head row of
        the Memory. CapabilityNotSupportedError without a vec0 table."""
        if not self.vec_tables:
            raise _no_vectors()
        return [memory_rows.vector_hashes(r) for r in
                self._execute(frag.statement("vector_projection"), [artifact_id])]

    def vector_projection_of(self, artifact_id: str, entry_ids: Sequence[str]
                             ) -> list[tuple[str, str | None]]:
        """:meth:`vector_projection` of the head rows of these entries only."""
        if not self.vec_tables:
            raise _no_vectors()
        sql = frag.statement("vector_projection_entry")
        return [memory_rows.vector_hashes(r) for e in dict.fromkeys(entry_ids)
                for r in self._execute(sql, [artifact_id, e])]

    def head_vectors(self, artifact_id: str) -> dict[str, VectorRow]:
        """The stored vectors of one Memory's head rows, by entry_version_id (a rebuild
        keeps these when it cannot make new ones); none without a vec0 table."""
        if not self.vec_tables:
            return {}
        out = {}
        for v, emb, blob in self._execute(frag.statement("head_vectors"), [artifact_id]):
            values = unpack(blob)
            if values is not None:
                out[v] = VectorRow(emb, values)
        return out
