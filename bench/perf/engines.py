"""The engines under test: the library on SQLite or seekdb, with the same-semantics raw
queries each engine answers for the yardstick."""

from __future__ import annotations

import contextlib
import heapq
import os
import struct
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.perf.common import (
    ANCHOR_FTS,
    ANCHOR_TOKENIZE,
    ROOT,
    SCOPE_CHARS,
    _scope,
    _scoped_text,
    log,
)
from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.core import search_admission as admission
from powercontext.service import MemoryService


class Engine:
    """One backend kind: opens a service on a fresh database and answers raw queries."""

    name = "?"

    def new_service(self, label: str) -> MemoryService:
        raise NotImplementedError

    def open_raw(self, svc: MemoryService) -> None:
        raise NotImplementedError

    def reopen(self, svc: MemoryService) -> MemoryService:
        """A new service on ``svc``'s database, with nothing cached: what a new process
        opens (the first-call figures)."""
        raise NotImplementedError

    def close_raw(self) -> None:
        raise NotImplementedError

    def raw_fts(self, memories: Sequence[str], terms: Sequence[str], budget: int) -> list[Any]:
        """The raw fts channel: the ids of the first ``budget`` admitted matches, in the
        engine's order (the library's channel semantics, written as plain queries)."""
        raise NotImplementedError

    def raw_vector(self, memories: Sequence[str], blob: Any, k: int) -> list[Any]:
        """The raw vector channel: the ids of the first ``k`` admitted neighbours."""
        raise NotImplementedError

    def ann_recall(self, memories: Sequence[str], blob: Any, k: int) -> float | None:
        """recall@k of the library's ANN vector channel against exact KNN; None when
        the library searches exactly (or the engine cannot tell)."""
        return None

    def key(self, raw_id: Any) -> tuple[str, str, str]:
        """(Memory artifact id, entry id, entry version id) of a raw id (untimed)."""
        raise NotImplementedError

    def vector_param(self, vector: Sequence[float]) -> Any:
        raise NotImplementedError

    def size(self, svc: MemoryService) -> tuple[int, dict[str, int]]:
        return 0, {}

    def drop(self, svc: MemoryService) -> None:
        pass

    def close(self) -> None:
        pass


class SQLiteEngine(Engine):
    name = "sqlite"

    def __init__(self, workdir: Path, model: DeterministicEmbedding,
                 vector_index: str = "auto") -> None:
        self.workdir = workdir
        self.model = model
        #: the backend's ``vector_index`` (``auto``, ``ann``, ``exact``)
        self.vector_index = vector_index
        #: the library searches the vector channel by ANN (set by :meth:`open_raw`)
        self.ann = False
        self.raw: Any = None
        self.anchor: Any = None

    def new_service(self, label: str) -> MemoryService:
        from powercontext.adapters.sqlite import SQLiteMemoryBackend

        path = self.workdir / f"{label}.db"
        # the raw anchor too: one left by an earlier run (``--workdir``) names that
        # run's Memories, and the raw query would match nothing
        for suffix in ("", "-wal", "-shm", ".anchor"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{path}{suffix}")
        return MemoryService(
            SQLiteMemoryBackend(str(path), profile=self.model.profile,
                                vector_index=self.vector_index),  # type: ignore[arg-type]
            embedding_model=self.model,
        )

    def reopen(self, svc: MemoryService) -> MemoryService:
        from powercontext.adapters.sqlite import SQLiteMemoryBackend

        path = svc.backend.filename  # type: ignore[attr-defined]
        return MemoryService(
            SQLiteMemoryBackend(path, profile=self.model.profile,
                                vector_index=self.vector_index),  # type: ignore[arg-type]
            embedding_model=self.model,
        )

    def open_raw(self, svc: MemoryService) -> None:
        """A read-only connection to the library's file (for vec0) and the plain FTS5
        anchor: the active head rows' analyzed text copied into a plain one-column
        ``fts5(searchable_text)`` table of a side file (built once, untimed), each token
        written ``<scope>_<token>`` so that document frequencies are per Memory, as the
        library ranks (bm25 over the same statistics: same rows, same order). The anchor
        keeps its content (no join to read the text) and is not the library's table."""
        import apsw
        import sqlite_vec

        path = svc.backend.filename  # type: ignore[attr-defined]
        self.ann = bool(getattr(svc.backend, "_ann", False))
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        self.raw = conn
        anchor = f"{path}.anchor"
        if not os.path.exists(anchor):
            t0 = time.perf_counter()
            a = apsw.Connection(anchor + ".tmp")
            a.execute("PRAGMA journal_mode=OFF")
            a.execute("PRAGMA synchronous=OFF")
            a.execute(
                f"CREATE VIRTUAL TABLE {ANCHOR_FTS} USING fts5(searchable_text, "
                f'tokenize="{ANCHOR_TOKENIZE}")'
            )
            # streamed row by row: a list of the 100k head rows was ~40 MB of the
            # benchmark's own peak RSS, counted in the library's figure (issue 14)
            rows = conn.execute(
                "SELECT projection_id, memory_artifact_id, searchable_text FROM memory_entry_heads")
            count = 0
            with a:
                for pid, m, text in rows:
                    a.execute(f"INSERT INTO {ANCHOR_FTS} (rowid, searchable_text) VALUES (?, ?)",
                              (pid, _scoped_text(_scope(str(m)), str(text))))
                    count += 1
            a.close()
            os.replace(anchor + ".tmp", anchor)
            log(
                f"  plain FTS5 anchor of {count} rows built in "
                f"{time.perf_counter() - t0:.1f} s (untimed)"
            )
        self.anchor = apsw.Connection(anchor, flags=apsw.SQLITE_OPEN_READONLY)

    def close_raw(self) -> None:
        for conn in (self.raw, self.anchor):
            if conn is not None:
                conn.close()
        self.raw = self.anchor = None

    def raw_fts(self, memories: Sequence[str], terms: Sequence[str], budget: int) -> list[Any]:
        """The first ``budget`` admitted matches in ``bm25, rowid`` order, each row kept
        when :func:`admission.fts_admits` accepts its tokens: per Memory, pages of the
        plain OR query of its scoped terms (``LIMIT budget``, then twice as many each
        time, like the adapter), merged by ``(bm25, rowid)``. One MATCH over the OR of
        every Memory's terms returns the same rows in the same order (another scope's
        phrases add 0 to a row's bm25) but measured slower from 2 Memories on (10 x 100
        LoCoMo turns, CPU per search p50 3.5 ms against 2.6 ms), so the yardstick is the
        faster form."""
        distinct = list(dict.fromkeys(terms))
        cut = SCOPE_CHARS + 1
        streams = [self._raw_fts_memory(_scope(m), distinct, budget) for m in memories]
        merged = streams[0] if len(streams) == 1 else heapq.merge(*streams)
        out: list[Any] = []
        for _score, rowid, text in merged:
            if admission.fts_admits(tuple(distinct), (w[cut:] for w in text.split())):
                out.append(rowid)
                if len(out) == budget:
                    break
        return out

    def _raw_fts_memory(
        self, scope: str, terms: list[str], first: int
    ) -> Iterator[tuple[float, int, str]]:
        tokens = " OR ".join(f'"{scope}_{t}"' for t in terms)
        match = f"searchable_text : ({tokens})"
        offset, size = 0, first
        while True:
            rows = self.anchor.execute(
                f"SELECT bm25({ANCHOR_FTS}) AS score, rowid, searchable_text FROM {ANCHOR_FTS} "
                f"WHERE {ANCHOR_FTS} MATCH ? ORDER BY score, rowid LIMIT ? OFFSET ?",
                (match, size, offset),
            ).fetchall()
            yield from rows
            if len(rows) < size:
                return
            offset += size
            size *= 2

    def key(self, raw_id: Any) -> tuple[str, str, str]:
        # read when asked (the hit check only): a dict of every head row was ~30 MB of
        # the benchmark's own memory at 100k, counted in the library's peak RSS
        row = self.raw.execute(
            "SELECT memory_artifact_id, entry_id, entry_version_id FROM memory_entry_heads "
            "WHERE projection_id = ?", (int(raw_id),)).fetchone()
        if row is None:
            raise KeyError(raw_id)
        return (str(row[0]), str(row[1]), str(row[2]))

    def vector_param(self, vector: Sequence[float]) -> Any:
        return struct.pack(f"<{len(vector)}f", *vector)

    def raw_vector(self, memories: Sequence[str], blob: Any, k: int) -> list[Any]:
        """One KNN per Memory partition, merged by (distance, rowid), kept while
        :func:`admission.vector_admits` accepts the distance (at most ``k``). Like the
        adapter, a partition's answer is taken as far as its order is certain: vec0
        returns any of the rows tied at the ``k``-th distance, so ``k`` grows while the
        last row returned ties with the ``k``-th (else the tie-break by rowid would
        differ from the library's at the boundary)."""
        if self.ann:
            return self._raw_ann(memories, blob, k)
        found: list[tuple[float, int]] = []
        for m in memories:
            want = k + 1
            while True:
                rows = sorted((d, r) for r, d in self.raw.execute(
                    "SELECT rowid, distance FROM memory_entry_search_vector "
                    "WHERE embedding MATCH ? AND k = ? AND scope = ?",
                    (blob, want, _scope(m)),
                ).fetchall())
                if len(rows) < want or rows[k - 1][0] < rows[-1][0] or want >= 4096:
                    break
                want = min(want * 2, 4096)
            found.extend(rows)
        found.sort()
        out: list[Any] = []
        for d, r in found[:k]:
            if not admission.vector_admits(d):
                break
            out.append(r)
        return out

    def _ann_rows(self, m: str, blob: Any, k: int) -> list[tuple[float, int]]:
        """The library's ANN query of one Memory, written out: the ``k * ANN_OVERFETCH``
        nearest sign-bit vectors by Hamming distance (``vec_quantize_binary``), each
        rescored by ``vec_distance_l2`` on its float vector, the ``k`` nearest by
        (distance, rowid)."""
        from powercontext.sql import sqlite as frag

        return [(d, r) for r, d in self.raw.execute(
            "WITH c AS MATERIALIZED (SELECT rowid AS pid FROM memory_entry_search_vector_bits "
            "WHERE bits MATCH vec_quantize_binary(?1) AND k = ?2 AND scope = ?3) "
            "SELECT c.pid, vec_distance_l2(v.embedding, ?1) AS d FROM c "
            "JOIN memory_entry_search_vector AS v ON v.rowid = c.pid ORDER BY d, c.pid "
            "LIMIT ?4",
            (blob, min(k * frag.ANN_OVERFETCH, 4096), _scope(m), k),
        ).fetchall()]

    def _raw_ann(self, memories: Sequence[str], blob: Any, budget: int) -> list[Any]:
        """The ANN channel as the library streams it: queries of ``k`` = ``ANN_FIRST_K``
        then doubling (to 4096), each the per-Memory ANN answers merged by (distance,
        rowid) and cut to ``k``, yielding the rows strictly nearer than the ``k``-th
        (all of a short answer), each row once; kept while :func:`admission.vector_admits`
        accepts, at most ``budget``."""
        from powercontext.sql import sqlite as frag

        seen: set[int] = set()
        out: list[Any] = []
        k = frag.ANN_FIRST_K
        while True:
            page = sorted(t for m in memories for t in self._ann_rows(m, blob, k))[:k]
            final = len(page) < k or k >= 4096
            for d, r in page if final else [t for t in page if t[0] < page[-1][0]]:
                if r in seen:
                    continue
                seen.add(r)
                if not admission.vector_admits(d):
                    return out
                out.append(r)
                if len(out) == budget:
                    return out
            if final:
                return out
            k = min(k * 2, 4096)

    def ann_recall(self, memories: Sequence[str], blob: Any, k: int) -> float | None:
        """recall@k of the ANN channel against exact KNN, no admission: the share of
        the exact ``k`` nearest (vec0 float KNN, per Memory, merged) that the ANN
        query's ``k`` nearest match (a row tied at the ``k``-th distance counts; the
        library's first query: ``ANN_FIRST_K`` rows of ``ANN_FIRST_K * ANN_OVERFETCH``
        candidates). None when it searches exactly."""
        from powercontext.sql import sqlite as frag

        if not self.ann:
            return None
        exact: list[tuple[float, int]] = []
        ann: list[tuple[float, int]] = []
        for m in memories:
            exact.extend((d, r) for r, d in self.raw.execute(
                "SELECT rowid, distance FROM memory_entry_search_vector "
                "WHERE embedding MATCH ? AND k = ? AND scope = ?", (blob, k, _scope(m))))
            ann.extend(self._ann_rows(m, blob, max(k, frag.ANN_FIRST_K)))
        want = sorted(exact)[:k]
        if not want:
            return None
        # rows tied at the k-th distance are interchangeable: an ANN row counts when it is
        # no farther than the exact k-th (the set overlap, ties aside)
        bound = want[-1][0] + 1e-6
        return sum(1 for d, _ in sorted(ann)[:k] if d <= bound) / len(want)

    def size(self, svc: MemoryService) -> tuple[int, dict[str, int]]:
        import apsw

        path = svc.backend.filename  # type: ignore[attr-defined]
        tables: dict[str, int] = {}
        # What a closed database occupies: checkpoint the WAL into the file first (what
        # closing the last connection does; the content does not change). The WAL left
        # over (0 unless a reader pinned it) still counts.
        rw = apsw.Connection(path)
        try:
            rw.setbusytimeout(5000)
            rw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except apsw.Error:
            pass
        finally:
            rw.close()
        for suffix in ("", "-wal"):
            if os.path.exists(f"{path}{suffix}"):
                tables[f"(file{suffix or ''})"] = os.path.getsize(f"{path}{suffix}")
        total = sum(tables.values())
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            for name, size in conn.execute(
                "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
            ):
                tables[str(name)] = int(size)
            free: Any = conn.execute("PRAGMA freelist_count").fetchall()[0][0]
            page: Any = conn.execute("PRAGMA page_size").fetchall()[0][0]
            tables["(free pages)"] = int(free) * int(page)
        except apsw.Error:
            pass
        finally:
            conn.close()
        return total, tables

    def drop(self, svc: MemoryService) -> None:
        path = svc.backend.filename  # type: ignore[attr-defined]
        for suffix in ("", "-wal", "-shm", ".anchor", ".anchor.tmp"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{path}{suffix}")


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)


class SeekdbEngine(Engine):
    """OceanBaseMemoryBackend on a seekdb started by tests/oceanbase_server.py."""

    name = "seekdb"

    def __init__(self, model: DeterministicEmbedding, url: str | None = None) -> None:
        """A seekdb started here, or the server at ``url`` (``oceanbase://.../``)."""
        if str(ROOT / "tests") not in sys.path:
            sys.path.insert(0, str(ROOT / "tests"))
        import oceanbase_server  # tests/oceanbase_server.py

        self.model = model
        self._server = oceanbase_server
        self._stack = contextlib.ExitStack()
        self.url = url or self._stack.enter_context(oceanbase_server.seekdb_server())
        self.raw: Any = None
        self._urls: dict[int, str] = {}

    def new_service(self, label: str) -> MemoryService:
        from powercontext.adapters.oceanbase import OceanBaseMemoryBackend

        url = self._stack.enter_context(self._server.fresh_database(self.url, "perf_" + label))
        svc = MemoryService(
            OceanBaseMemoryBackend(url, profile=self.model.profile), embedding_model=self.model
        )
        self._urls[id(svc)] = url
        return svc

    def reopen(self, svc: MemoryService) -> MemoryService:
        from powercontext.adapters.oceanbase import OceanBaseMemoryBackend

        return MemoryService(
            OceanBaseMemoryBackend(self._urls[id(svc)], profile=self.model.profile),
            embedding_model=self.model,
        )

    def open_raw(self, svc: MemoryService) -> None:
        import MySQLdb

        from powercontext.adapters.oceanbase.backend import parse_url

        u = parse_url(self._urls[id(svc)])
        self.raw = MySQLdb.connect(
            host=u.host,
            port=u.port,
            user=u.user,
            passwd=u.password,
            db=u.database,
            charset="utf8mb4",
            autocommit=True,
        )

    def close_raw(self) -> None:
        if self.raw is not None:
            self.raw.close()
            self.raw = None

    def raw_fts(self, memories: Sequence[str], terms: Sequence[str], budget: int) -> list[Any]:
        """The first ``budget`` admitted matches: pages of ``MATCH ... AGAINST`` over the
        heads table with the Memory filter, ordered by score, Memory, entry id (``LIMIT
        budget``, then twice as many each time, like the adapter), each row kept when
        :func:`admission.fts_admits` accepts its tokens."""
        distinct = tuple(dict.fromkeys(terms))
        marks = ", ".join(["%s"] * len(memories))
        query = " ".join(distinct)
        cur = self.raw.cursor()
        out: list[Any] = []
        offset, size = 0, budget
        while True:
            cur.execute(
                "SELECT memory_artifact_id, entry_id, entry_version_id, searchable_text, "
                "MATCH (searchable_text) AGAINST (%s) AS score "
                f"FROM memory_entry_heads WHERE memory_artifact_id IN ({marks}) "
                "AND MATCH (searchable_text) AGAINST (%s) "
                "ORDER BY score DESC, memory_artifact_id, entry_id LIMIT %s OFFSET %s",
                (query, *memories, query, size, offset),
            )
            rows = cur.fetchall()
            for m, e, v, text, _score in rows:
                if admission.fts_admits(distinct, _text(text).split()):
                    out.append((_text(m), _text(e), _text(v)))
                    if len(out) == budget:
                        return out
            if len(rows) < size:
                return out
            offset += size
            size *= 2

    def vector_param(self, vector: Sequence[float]) -> Any:
        from powercontext.sql import oceanbase as obsql

        return obsql.vector_literal(tuple(vector))

    def _nearest(self, memories: Sequence[str], blob: Any, k: int, approximate: bool
                 ) -> list[tuple[float, str, str, str]]:
        """``ORDER BY l2_distance [APPROXIMATE] LIMIT k`` with the Memory filter, sorted by
        (distance, Memory, entry id): the adapter's scan and tie-break."""
        marks = ", ".join(["%s"] * len(memories))
        cur = self.raw.cursor()
        cur.execute(
            "SELECT memory_artifact_id, entry_id, entry_version_id, "
            "l2_distance(embedding, %s) AS distance "
            f"FROM memory_entry_heads WHERE memory_artifact_id IN ({marks}) "
            "ORDER BY l2_distance(embedding, %s)"
            + (" APPROXIMATE" if approximate else "") + " LIMIT %s",
            (blob, *memories, blob, k),
        )
        return sorted((float(d), _text(m), _text(e), _text(v))
                      for m, e, v, d in cur.fetchall() if d is not None)

    def _scan(self, memories: Sequence[str], blob: Any, k: int) -> list[Any]:
        """One scan as the adapter runs it: APPROXIMATE, rerun exactly when it answered
        short while the Memories hold more vectors than it returned."""
        from powercontext.sql import oceanbase as obsql

        rows = self._nearest(memories, blob, k, True)
        if len(rows) < k:
            cur = self.raw.cursor()
            cur.execute(obsql.vector_count(len(memories)), tuple(memories))
            if int(cur.fetchall()[0][0]) > len(rows):
                rows = self._nearest(memories, blob, k, False)
        return rows

    def raw_vector(self, memories: Sequence[str], blob: Any, k: int) -> list[Any]:
        """The first ``k`` admitted neighbours, read as the library's stream reads them:
        scans of ``ANN_FIRST_K`` rows, then twice as many each time (at most
        ``MAX_APPROXIMATE_K``), a row taken once its place is certain (the answer was
        short, or its distance is below the last row's), each kept while
        :func:`admission.vector_admits` accepts. An HNSW answer depends on its ``k``, so
        one scan of ``LIMIT k`` would be another query."""
        from powercontext.sql import oceanbase as obsql

        cap, size = obsql.MAX_APPROXIMATE_K, obsql.ANN_FIRST_K
        out: list[Any] = []
        seen: set[tuple[str, str, str]] = set()
        while True:
            rows = self._scan(memories, blob, size)
            done = len(rows) < size or size >= cap
            for d, m, e, v in rows:
                if not done and d >= rows[-1][0]:
                    break
                if (m, e, v) in seen:
                    continue
                seen.add((m, e, v))
                if not admission.vector_admits(d):
                    return out
                out.append((m, e, v))
                if len(out) == k:
                    return out
            if done:
                return out
            size = min(size * 2, cap)

    def ann_recall(self, memories: Sequence[str], blob: Any, k: int) -> float | None:
        """recall@k of the HNSW scan (``APPROXIMATE LIMIT k``) against the exact one,
        no admission; a row tied at the exact ``k``-th distance counts."""
        want = self._nearest(memories, blob, k, False)
        if not want:
            return None
        bound = want[-1][0] + 1e-6
        got = self._nearest(memories, blob, k, True)
        return sum(1 for d, *_ in got if d <= bound) / len(want)

    def key(self, raw_id: Any) -> tuple[str, str, str]:
        return tuple(raw_id)  # type: ignore[return-value]

    def size(self, svc: MemoryService) -> tuple[int, dict[str, int]]:
        import MySQLdb

        from powercontext.adapters.oceanbase.backend import parse_url

        u = parse_url(self._urls[id(svc)])
        tables: dict[str, int] = {}
        with contextlib.suppress(MySQLdb.Error):
            conn = MySQLdb.connect(host=u.host, port=u.port, user=u.user, passwd=u.password)
            try:
                cur = conn.cursor()
                cur.execute(
                    "SELECT table_name, data_length + index_length "
                    "FROM information_schema.tables WHERE table_schema = %s",
                    (u.database,),
                )
                tables = {str(n): int(s or 0) for n, s in cur.fetchall()}
            finally:
                conn.close()
        return sum(tables.values()), tables

    def close(self) -> None:
        self._stack.close()


# ---------------------------------------------------------------------- datasets
