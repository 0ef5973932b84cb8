"""The Topic backends under test and their raw yardstick (issue 12): the engine's own
queries over the library's Topic projection tables, with the library's channel
semantics written out plainly (Topic Memory RFC, "Detail chunks and deployment-enabled
retrieval channels"; TOPIC-MEMORY.md, "Topic search").

A raw channel reads rows in the engine's order (FTS5 ``bm25, rowid`` / vec0 ``distance,
rowid`` on SQLite; ``MATCH ... AGAINST`` score / ``l2_distance`` on seekdb), keeps a row
when the Memory admission floor accepts it (:mod:`powercontext.core.search_admission`),
keeps the first kept row of each Topic (collapse), and stops at ``budget`` Topics (FTS:
pages of ``budget`` rows, then twice as many; vector: one KNN of ``k = budget`` for the
title + summary vectors, ``budget * MAX_CHUNKS`` for the chunk vectors, stopping at the
first refused distance). :func:`raw_search` fuses the channels with RRF (k = 60; ties by
score, UTF-8 artifact_id, revision). Nothing here calls the library's search code.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

from bench.perf.common import ROOT
from powercontext.core import search_admission as admission

#: The channels in ``matched_by`` order (core.topic.models.CHANNELS_HYBRID).
CHANNELS_FTS = ("topic_fts", "detail_fts")
CHANNELS_HYBRID = ("topic_fts", "topic_vector", "detail_fts", "detail_vector")
RRF_K = 60
VEC0_MAX_K = 4096

#: (artifact_id, revision, chunk ordinal or None): one row of a raw channel.
RawRow = tuple[str, int, int | None]


@dataclass(frozen=True)
class RawHit:
    artifact_id: str
    revision: int
    score: float
    matched_by: tuple[str, ...]


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)


def collapse_rows(
    rows: Any, terms: Sequence[str] | None, budget: int, seen: set[tuple[str, int]],
    out: list[RawRow],
) -> bool:
    """Append to ``out`` the first admitted row of each new Topic of ``rows`` (``(key,
    fts_text, distance)`` triples, in order) until ``budget`` Topics; True when the
    channel is complete (budget reached, or a vector row refused)."""
    for key, fts_text, distance in rows:
        topic = (key[0], key[1])
        if topic in seen:
            continue
        if terms is not None:
            if not admission.fts_admits(tuple(terms), _text(fts_text).split()):
                continue
        elif distance is None or not admission.vector_admits(float(distance)):
            return True
        seen.add(topic)
        out.append(key)
        if len(out) == budget:
            return True
    return False


def rrf(channels: dict[str, list[RawRow]], limit: int) -> list[RawHit]:
    """RRF (k = 60, exact sums) over collapsed channels, ties by score, UTF-8
    artifact_id, revision; ``matched_by`` in :data:`CHANNELS_HYBRID` order."""
    scores: dict[tuple[str, int], Fraction] = {}
    matched: dict[tuple[str, int], list[str]] = {}
    for name in CHANNELS_HYBRID:
        for rank, key in enumerate(channels.get(name, ()), start=1):
            t = (key[0], key[1])
            scores[t] = scores.get(t, Fraction(0)) + Fraction(1, RRF_K + rank)
            matched.setdefault(t, []).append(name)
    order = sorted(scores, key=lambda t: (-scores[t], t[0].encode(), t[1]))
    return [RawHit(t[0], t[1], float(scores[t]), tuple(matched[t])) for t in order[:limit]]


class TopicEngine:
    """One engine: opens a Topic backend on a fresh database and answers raw queries."""

    name = "?"

    def new_backend(self, label: str, profile: Any) -> Any:
        raise NotImplementedError

    def open_raw(self, backend: Any) -> None:
        raise NotImplementedError

    def close_raw(self) -> None:
        raise NotImplementedError

    def raw_fts(self, channel: str, scope_id: str, terms: Sequence[str], budget: int
                ) -> list[RawRow]:
        raise NotImplementedError

    def raw_vector(self, channel: str, scope_id: str, blob: Any, k: int, budget: int
                   ) -> list[RawRow]:
        raise NotImplementedError

    def vector_param(self, vector: Sequence[float]) -> Any:
        raise NotImplementedError

    def size(self, backend: Any) -> tuple[int, dict[str, int]]:
        return 0, {}

    def drop(self, backend: Any) -> None:
        pass

    def close(self) -> None:
        pass


def raw_search(
    engine: TopicEngine, scope_id: str, terms: Sequence[str], blob: Any, kind: str,
    limit: int, max_chunks: int,
) -> list[RawHit]:
    """The raw side of one Topic search: every channel of ``kind`` (``fts``: topic_fts,
    detail_fts; ``hybrid``: the four), each collapsed to ``max(limit * 4, 32)`` Topics,
    fused. ``blob`` is the engine's query vector parameter (hybrid)."""
    budget = max(limit * 4, 32)
    chans: dict[str, list[RawRow]] = {}
    for ch in CHANNELS_FTS:
        chans[ch] = engine.raw_fts(ch, scope_id, terms, budget) if terms else []
    if kind == "hybrid":
        chans["topic_vector"] = engine.raw_vector("topic_vector", scope_id, blob, budget, budget)
        chans["detail_vector"] = engine.raw_vector(
            "detail_vector", scope_id, blob, min(budget * max_chunks, VEC0_MAX_K), budget)
    return rrf(chans, limit)


# ---------------------------------------------------------------------- SQLite


class SQLiteTopicEngine(TopicEngine):
    """SQLiteTopicBackend (APSW + FTS5 + sqlite-vec) on a file per dataset; raw = the
    library's own FTS5 and vec0 tables, read-only, joined to the active rows."""

    name = "sqlite"
    #: channel -> (FTS5 or vec0 table, active table, its rowid column, its chunk
    #: ordinal column or None); sql/sqlite.py's Topic fragments
    TABLES: ClassVar[dict[str, tuple[str, str, str, str | None]]] = {
        "topic_fts": ("pc_topic_memory_topic_fts", "pc_topic_memory_active_topics",
                      "topic_rowid", None),
        "detail_fts": ("pc_topic_memory_chunk_fts", "pc_topic_memory_active_chunks",
                       "chunk_rowid", "ordinal"),
        "topic_vector": ("pc_topic_memory_topic_vector", "pc_topic_memory_active_topics",
                         "topic_rowid", None),
        "detail_vector": ("pc_topic_memory_chunk_vector", "pc_topic_memory_active_chunks",
                          "chunk_rowid", "ordinal"),
    }
    #: the FTS5 column (scoped tokens) and the active rows' Analyzer text column
    FTS_COLUMN = "searchable_text"
    TEXT_COLUMN = "fts_text"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.raw: Any = None

    def new_backend(self, label: str, profile: Any) -> Any:
        from powercontext.adapters.sqlite import SQLiteTopicBackend

        path = self.workdir / f"topic-{label}.db"
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{path}{suffix}")
        return SQLiteTopicBackend(str(path), profile=profile)

    def open_raw(self, backend: Any) -> None:
        import apsw
        import sqlite_vec

        conn = apsw.Connection(backend.filename, flags=apsw.SQLITE_OPEN_READONLY)
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        self.raw = conn

    def close_raw(self) -> None:
        if self.raw is not None:
            self.raw.close()
            self.raw = None

    @staticmethod
    def scope_token(scope_id: str) -> str:
        from powercontext.sql import sqlite as frag

        return frag.topic_scope_token(scope_id)  # type: ignore[attr-defined]

    @staticmethod
    def _cols(ordinal: str | None) -> str:
        return f"a.artifact_id, a.revision, {'a.' + ordinal if ordinal else 'NULL'}"

    def raw_fts(self, channel: str, scope_id: str, terms: Sequence[str], budget: int
                ) -> list[RawRow]:
        """Pages of ``MATCH '<col> : ("<scope>_t1" OR ...)' ORDER BY bm25, rowid`` joined
        to the active rows (for their text), admitted and collapsed."""
        fts, active, rowid, ordinal = self.TABLES[channel]
        scope = self.scope_token(scope_id)
        distinct = list(dict.fromkeys(terms))
        match = f"{self.FTS_COLUMN} : (" + " OR ".join(f'"{scope}_{t}"' for t in distinct) + ")"
        sql = (
            f"WITH m AS MATERIALIZED (SELECT rowid AS rid, bm25({fts}) AS score FROM {fts} "
            f"WHERE {fts} MATCH ? ORDER BY score, rowid LIMIT ? OFFSET ?) "
            f"SELECT {self._cols(ordinal)}, a.{self.TEXT_COLUMN} FROM m "
            f"JOIN {active} AS a ON a.{rowid} = m.rid ORDER BY m.score, m.rid"
        )
        out: list[RawRow] = []
        seen: set[tuple[str, int]] = set()
        offset, size = 0, budget
        while True:
            rows = self.raw.execute(sql, (match, size, offset)).fetchall()
            done = collapse_rows(
                (((str(a), int(r), o), text, None) for a, r, o, text in rows),
                distinct, budget, seen, out)
            if done or len(rows) < size:
                return out
            offset += size
            size *= 2

    def raw_vector(self, channel: str, scope_id: str, blob: Any, k: int, budget: int
                   ) -> list[RawRow]:
        """One vec0 KNN of ``k`` in the Scope's partition, joined to the active rows,
        ordered by (distance, rowid), admitted and collapsed."""
        vec, active, rowid, ordinal = self.TABLES[channel]
        scope = self.scope_token(scope_id)
        sql = (
            f"WITH knn AS MATERIALIZED (SELECT rowid AS rid, distance FROM {vec} "
            f"WHERE embedding MATCH ? AND k = ? AND scope = ?) "
            f"SELECT {self._cols(ordinal)}, knn.distance FROM knn "
            f"JOIN {active} AS a ON a.{rowid} = knn.rid ORDER BY knn.distance, knn.rid"
        )
        out: list[RawRow] = []
        collapse_rows(
            (((str(a), int(r), o), "", d)
             for a, r, o, d in self.raw.execute(sql, (blob, min(k, VEC0_MAX_K), scope))),
            None, budget, set(), out)
        return out

    def vector_param(self, vector: Sequence[float]) -> Any:
        return struct.pack(f"<{len(vector)}f", *vector)

    def size(self, backend: Any) -> tuple[int, dict[str, int]]:
        import apsw

        path = backend.filename
        rw = apsw.Connection(path)
        try:
            rw.setbusytimeout(5000)
            rw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except apsw.Error:
            pass
        finally:
            rw.close()
        tables: dict[str, int] = {}
        for suffix in ("", "-wal"):
            if os.path.exists(f"{path}{suffix}"):
                tables[f"(file{suffix})"] = os.path.getsize(f"{path}{suffix}")
        total = sum(tables.values())
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            for name, size in conn.execute(
                "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
            ):
                tables[str(name)] = int(size)
        except apsw.Error:
            pass
        finally:
            conn.close()
        return total, tables

    def drop(self, backend: Any) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{backend.filename}{suffix}")


# ---------------------------------------------------------------------- seekdb


class SeekdbTopicEngine(TopicEngine):
    """OceanBaseTopicBackend on a seekdb started by tests/oceanbase_server.py; raw =
    ``MATCH ... AGAINST`` and ``l2_distance ... APPROXIMATE`` on the active tables with
    the Scope filter."""

    name = "seekdb"
    TABLES: ClassVar[dict[str, tuple[str, str | None]]] = {
        "topic_fts": ("pc_topic_memory_active_topics", None),
        "detail_fts": ("pc_topic_memory_active_chunks", "ordinal"),
        "topic_vector": ("pc_topic_memory_active_topics", None),
        "detail_vector": ("pc_topic_memory_active_chunks", "ordinal"),
    }
    #: seekdb refuses ``APPROXIMATE LIMIT k`` above this (sql/oceanbase_topic.py)
    MAX_K = 16384
    FTS_COLUMN = "fts_text"
    VECTOR_COLUMN = "embedding"

    def __init__(self, server_url: str | None = None) -> None:
        """On the seekdb at ``server_url``, else on one started here (stopped by
        :meth:`close`)."""
        if str(ROOT / "tests") not in sys.path:
            sys.path.insert(0, str(ROOT / "tests"))
        import oceanbase_server  # tests/oceanbase_server.py

        self._server = oceanbase_server
        self._stack = contextlib.ExitStack()
        self.url = server_url or self._stack.enter_context(oceanbase_server.seekdb_server())
        self.raw: Any = None
        self._urls: dict[int, str] = {}

    def new_backend(self, label: str, profile: Any) -> Any:
        from powercontext.adapters.oceanbase import OceanBaseTopicBackend  # type: ignore

        url = self._stack.enter_context(
            self._server.fresh_database(self.url, "perf_topic_" + label.replace("-", "_")))
        backend = OceanBaseTopicBackend(url, profile=profile)
        self._urls[id(backend)] = url
        return backend

    def open_raw(self, backend: Any) -> None:
        import MySQLdb

        from powercontext.adapters.oceanbase.backend import parse_url

        u = parse_url(self._urls[id(backend)])
        self.raw = MySQLdb.connect(host=u.host, port=u.port, user=u.user, passwd=u.password,
                                   db=u.database, charset="utf8mb4", autocommit=True)

    def close_raw(self) -> None:
        if self.raw is not None:
            self.raw.close()
            self.raw = None

    def _cols(self, ordinal: str | None) -> str:
        return f"artifact_id, revision, {ordinal or 'NULL'}"

    def raw_fts(self, channel: str, scope_id: str, terms: Sequence[str], budget: int
                ) -> list[RawRow]:
        """Pages of ``MATCH (fts_text) AGAINST`` with the Scope filter, by score, then
        artifact_id (and ordinal: a total order, one active Revision per Topic);
        admitted and collapsed."""
        table, ordinal = self.TABLES[channel]
        distinct = list(dict.fromkeys(terms))
        query = " ".join(distinct)
        order = f"score DESC, artifact_id{', ' + ordinal if ordinal else ''}"
        sql = (
            f"SELECT {self._cols(ordinal)}, {self.FTS_COLUMN}, "
            f"MATCH ({self.FTS_COLUMN}) AGAINST (%s) AS score FROM {table} "
            f"WHERE scope_id = %s AND MATCH ({self.FTS_COLUMN}) AGAINST (%s) "
            f"ORDER BY {order} LIMIT %s OFFSET %s"
        )
        cur = self.raw.cursor()
        out: list[RawRow] = []
        seen: set[tuple[str, int]] = set()
        offset, size = 0, budget
        while True:
            cur.execute(sql, (query, scope_id, query, size, offset))
            rows = cur.fetchall()
            done = collapse_rows(
                (((_text(a), int(r), None if o is None else int(o)), text, None)
                 for a, r, o, text, _s in rows),
                distinct, budget, seen, out)
            if done or len(rows) < size:
                return out
            offset += size
            size *= 2

    def raw_vector(self, channel: str, scope_id: str, blob: Any, k: int, budget: int
                   ) -> list[RawRow]:
        """``ORDER BY l2_distance APPROXIMATE LIMIT k`` with the Scope filter (the exact
        scan when that answers short of the Scope's vectors, as the backend does),
        ordered by (distance, UTF-8 artifact_id, ordinal), admitted and collapsed."""
        table, ordinal = self.TABLES[channel]
        col = self.VECTOR_COLUMN
        cur = self.raw.cursor()
        k = min(k, self.MAX_K)
        sql = (f"SELECT l2_distance({col}, %s) AS d, {self._cols(ordinal)} FROM {table} "
               f"WHERE scope_id = %s ORDER BY l2_distance({col}, %s){{}} LIMIT %s")
        cur.execute(sql.format(" APPROXIMATE"), (blob, scope_id, blob, k))
        got = cur.fetchall()
        if len(got) < k:  # a short ANN answer: the exact scan when the Scope has more
            cur.execute(f"SELECT COUNT(*) FROM {table} WHERE scope_id = %s "
                        f"AND {col} IS NOT NULL", (scope_id,))
            if int(cur.fetchone()[0]) > len(got):
                cur.execute(sql.format(""), (blob, scope_id, blob, k))
                got = cur.fetchall()
        rows = sorted(
            (float(d), _text(a).encode(), int(r), -1 if o is None else int(o))
            for d, a, r, o in got if d is not None
        )
        out: list[RawRow] = []
        collapse_rows((((a.decode(), r, None if o < 0 else o), "", d) for d, a, r, o in rows),
                      None, budget, set(), out)
        return out

    def vector_param(self, vector: Sequence[float]) -> Any:
        from powercontext.sql import oceanbase as obsql

        return obsql.vector_literal(tuple(vector))

    def close(self) -> None:
        self._stack.close()
