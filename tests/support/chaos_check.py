"""The quiescence invariants of the chaos tests (issue 16, "Faults to test": "After
quiescence: one publication per (Scope, Window), Cursors never decreased, Pending empty,
no orphan projection rows, FTS5 integrity-check clean"), read straight from the
database's rows (SQLite through APSW, OceanBase through a plain MySQL connection), never
through the code under test.

* :func:`check_quiescent` -- at rest: no Pending row; every Scope's Cursor at its Source
  head; no work-budget row (optional); every active Topic row is its Topic's Head and
  every Head has one; no chunk of another Revision than its Topic row's; the Sources
  cited by one publication (the Revisions of one Scope published at one database time)
  lie in a journal interval no other publication of the Scope touches (a Window
  published twice would cite the same positions twice); SQLite: ``PRAGMA
  integrity_check``, foreign keys, both FTS5 ``integrity-check`` commands, and the FTS5
  and vec0 rowids exactly the active rows.
* :class:`CursorRecorder` -- samples every Cursor in a thread while a test runs;
  :meth:`CursorRecorder.check` asserts none ever went down.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from powercontext.core.topic.processing import BINDING

__all__ = ["CursorRecorder", "Db", "budget_rows", "check_quiescent", "cursors", "lease",
           "pending_rows", "publication_count", "publication_overlaps"]


class Db:
    """A raw connection to the database of ``url`` (a SQLite path / ``sqlite:`` URL or
    an ``oceanbase://`` URL) with :meth:`rows` (``?`` placeholders on both)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.oceanbase = url.startswith("oceanbase://")
        if self.oceanbase:
            import MySQLdb

            p = urlsplit(url)
            self.conn = MySQLdb.connect(host=p.hostname, port=p.port,
                                        user=p.username or "root", passwd=p.password or "",
                                        db=p.path.lstrip("/"), charset="utf8mb4",
                                        autocommit=True)
        else:
            import apsw
            import sqlite_vec

            from powercontext.database_path import sqlite_path

            path = sqlite_path(url)
            assert path is not None, url
            self.conn = apsw.Connection(str(path))
            self.conn.enable_load_extension(True)
            self.conn.load_extension(sqlite_vec.loadable_path())
            self.conn.setbusytimeout(30_000)

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        params = tuple(params)
        if self.oceanbase:
            cur = self.conn.cursor()
            cur.execute(sql.replace("?", "%s"), params or None)
            # scope keys are VARBINARY on OceanBase: compare them as text
            return [tuple(v.decode("utf-8") if isinstance(v, bytes) else v for v in r)
                    for r in cur.fetchall()]
        return [tuple(r) for r in self.conn.execute(sql, params).fetchall()]

    def has_table(self, name: str) -> bool:
        if self.oceanbase:
            return bool(self.rows("SELECT 1 FROM information_schema.tables WHERE "
                                  "table_schema = DATABASE() AND table_name = ?", (name,)))
        return bool(self.rows("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)))

    def close(self) -> None:
        self.conn.close()


@contextlib.contextmanager
def opened(url: str) -> Iterator[Db]:
    db = Db(url)
    try:
        yield db
    finally:
        db.close()


def pending_rows(url: str) -> list[tuple[Any, ...]]:
    """Every Pending row: (binding, scope, source_through, flush_generation, handled)."""
    with opened(url) as db:
        return db.rows("SELECT binding_name, scope_id, source_through, flush_generation, "
                       "handled_flush_generation FROM pc_artifact_processing_pending "
                       "ORDER BY scope_id")


def cursors(url: str) -> dict[str, int]:
    with opened(url) as db:
        return {s: int(p) for s, p in db.rows(
            "SELECT scope_id, source_position FROM pc_source_cursors WHERE binding_name = ?",
            (BINDING,))}


def heads(db: Db) -> dict[str, int]:
    return {s: int(h) for s, h in db.rows(
        "SELECT scope_id, MAX(position) FROM pc_source_scope_journal GROUP BY scope_id")}


def check_quiescent(url: str, *, budgets_empty: bool = True,
                    scopes: Iterable[str] | None = None,
                    unfinished: Iterable[str] = ()) -> dict[str, Any]:
    """Assert every quiescence invariant (see the module docstring) on the database at
    ``url``; returns what it counted (``publications`` per Scope, ``topics``,
    ``chunks``) for the caller's own assertions. ``unfinished``: Scopes a test stopped
    on purpose before they were covered (their Pending, Cursor and budget rows are not
    checked; every other invariant is)."""
    left = set(unfinished)
    with opened(url) as db:
        problems: list[str] = []
        pending = db.rows("SELECT binding_name, scope_id, source_through, flush_generation, "
                          "handled_flush_generation FROM pc_artifact_processing_pending")
        pending = [r for r in pending if r[1] not in left]
        if pending:
            problems.append(f"Pending not empty: {pending[:5]} ({len(pending)} rows)")
        head = heads(db)
        cur = {s: int(p) for s, p in db.rows(
            "SELECT scope_id, source_position FROM pc_source_cursors WHERE binding_name = ?",
            (BINDING,))}
        wanted = (set(head) if scopes is None else set(scopes)) - left
        behind = {s: (cur.get(s, 0), head.get(s, 0)) for s in wanted
                  if cur.get(s, 0) != head.get(s, 0)}
        if behind:
            problems.append(f"Cursor not at the Source head (cursor, head): "
                            f"{dict(list(behind.items())[:5])} ({len(behind)} Scopes)")
        if budgets_empty:
            budgets = db.rows("SELECT scope_id, source_after, attempt_count, failure_code "
                              "FROM pc_topic_memory_work_budgets")
            budgets = [r for r in budgets if r[0] not in left]
            if budgets:
                problems.append(f"work-budget rows left: {budgets[:5]}")
        active = set(db.rows("SELECT artifact_id, revision FROM pc_topic_memory_active_topics"))
        topic_heads = set(db.rows(
            "SELECT h.artifact_id, h.revision FROM artifact_heads AS h JOIN "
            "artifact_revisions AS r ON r.artifact_id = h.artifact_id AND "
            "r.revision = h.revision WHERE r.family = 'topic-memory'"))
        if active != topic_heads:
            problems.append(f"active Topic rows != Heads: only active "
                            f"{sorted(active - topic_heads)[:5]}, only Heads "
                            f"{sorted(topic_heads - active)[:5]}")
        stale = db.rows("SELECT c.artifact_id, c.revision, t.revision FROM "
                        "pc_topic_memory_active_chunks AS c LEFT JOIN "
                        "pc_topic_memory_active_topics AS t ON t.artifact_id = c.artifact_id "
                        "WHERE t.revision IS NULL OR c.revision <> t.revision")
        if stale:
            problems.append(f"orphan or stale chunk rows: {stale[:5]}")
        publications = _publications(db, problems)
        if not db.oceanbase:
            _sqlite_projections(db, problems)
        topics = len(active)
        chunks = db.rows("SELECT COUNT(*) FROM pc_topic_memory_active_chunks")[0][0]
    assert not problems, "quiescence invariants broken:\n  " + "\n  ".join(problems)
    return {"publications": publications, "topics": topics, "chunks": int(chunks)}


def _publications(db: Db, problems: list[str]) -> dict[str, int]:
    """One publication per (Scope, Window), from the rows (see
    :func:`publication_overlaps`)."""
    rows = db.rows(
        "SELECT p.scope_id, p.published_at, j.position FROM "
        "pc_topic_memory_revision_publications AS p JOIN pc_artifact_lineage_sources AS l "
        "ON l.artifact_id = p.artifact_id AND l.revision = p.revision JOIN "
        "pc_source_scope_journal AS j ON j.source_id = l.source_id AND "
        "j.scope_id = p.scope_id")
    counted, found = publication_overlaps((s, str(at), int(pos)) for s, at, pos in rows)
    problems.extend(found)
    return counted


def publication_overlaps(rows: Iterable[tuple[str, str, int]]
                         ) -> tuple[dict[str, int], list[str]]:
    """``rows``: (Scope, published_at, journal position of a cited Source) of every
    lineage row. Groups them by (Scope, published_at) -- one publication -- and returns
    (publications per Scope, problems): a problem for every two publications of one
    Scope whose cited-position intervals overlap (a Window is a contiguous journal
    interval, so two publications of different Windows never overlap)."""
    groups: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for scope, at, pos in rows:
        groups[scope][at].append(pos)
    counted: dict[str, int] = {}
    problems: list[str] = []
    for scope, by_time in groups.items():
        spans = sorted((min(v), max(v), at) for at, v in by_time.items())
        counted[scope] = len(spans)
        high, high_at = None, None
        for lo, hi, at in spans:
            if high is not None and lo <= high:
                problems.append(f"Scope {scope!r}: publications at {high_at} and {at} "
                                f"cover the same journal positions (from {lo}): a Window "
                                "published twice")
            if high is None or hi > high:
                high, high_at = hi, at
    return counted, problems


def _sqlite_projections(db: Db, problems: list[str]) -> None:
    from powercontext.sql import sqlite as frag

    if db.rows("PRAGMA integrity_check") != [("ok",)]:
        problems.append("PRAGMA integrity_check is not ok")
    fk = db.rows("PRAGMA foreign_key_check")
    if fk:
        problems.append(f"foreign_key_check: {fk[:5]}")
    for kind in ("topic", "chunk"):
        try:
            db.conn.execute(frag.statement(f"topic_{kind}_fts_integrity_check"))
        except Exception as exc:  # apsw.CorruptError and friends
            problems.append(f"FTS5 integrity-check of the {kind} table: {exc!r}")
    topics = {r[0] for r in db.rows("SELECT topic_rowid FROM pc_topic_memory_active_topics")}
    chunks = {r[0] for r in db.rows("SELECT chunk_rowid FROM pc_topic_memory_active_chunks")}
    for table, want in ((frag.TOPIC_FTS_TABLE, topics), (frag.CHUNK_FTS_TABLE, chunks),
                        (frag.TOPIC_VECTOR_TABLE, topics), (frag.CHUNK_VECTOR_TABLE, chunks)):
        if not db.has_table(table):
            continue
        got = {r[0] for r in db.rows(f'SELECT rowid FROM "{table}"')}
        if "vector" in table:
            rowid = "topic_rowid" if table == frag.TOPIC_VECTOR_TABLE else "chunk_rowid"
            source = ("pc_topic_memory_active_topics" if table == frag.TOPIC_VECTOR_TABLE
                      else "pc_topic_memory_active_chunks")
            want = {r[0] for r in db.rows(f"SELECT {rowid} FROM {source} "
                                          "WHERE embedding_fingerprint IS NOT NULL")}
        if got != want:
            problems.append(f"{table}: rows without an active row {sorted(got - want)[:5]}, "
                            f"active rows without a row {sorted(want - got)[:5]}")


class CursorRecorder:
    """Samples every Cursor of ``url`` every ``interval`` seconds in a daemon thread
    (its own connection) from :meth:`start` to :meth:`stop`; :meth:`check` asserts that
    no Scope's Cursor ever decreased between two samples."""

    def __init__(self, url: str, interval: float = 0.1) -> None:
        self.url = url
        self.interval = interval
        self.samples: dict[str, list[int]] = defaultdict(list)
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="cursor-recorder")

    def start(self) -> CursorRecorder:
        self._thread.start()
        return self

    def _run(self) -> None:
        db: Db | None = None
        while not self._stop.is_set():
            try:
                if db is None:
                    db = Db(self.url)
                self._sample(db)
            except Exception as exc:  # a table not there yet, a busy database: retry
                self.errors.append(type(exc).__name__)
                if db is not None:
                    with contextlib.suppress(Exception):
                        db.close()
                    db = None
            self._stop.wait(self.interval)
        if db is not None:
            db.close()

    def _sample(self, db: Db) -> None:
        for scope, pos in db.rows("SELECT scope_id, source_position FROM "
                                  "pc_source_cursors WHERE binding_name = ?", (BINDING,)):
            seen = self.samples[scope]
            if not seen or seen[-1] != int(pos):
                seen.append(int(pos))

    def stop(self) -> None:
        """Stop sampling, after one last sample."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(10)
        with opened(self.url) as db:
            self._sample(db)

    def check(self) -> None:
        self.stop()
        down = {s: v for s, v in self.samples.items()
                if any(b < a for a, b in itertools.pairwise(v))}
        assert not down, f"Cursors decreased: {down}"


def sqlite_file(url: str) -> Path:
    from powercontext.database_path import sqlite_path

    path = sqlite_path(url)
    assert path is not None
    return path


def budget_rows(url: str) -> list[tuple[Any, ...]]:
    """(scope, source_after, attempt_count, reserved_requests, reserved_tokens,
    failure_code) of every work-budget row."""
    with opened(url) as db:
        return db.rows("SELECT scope_id, source_after, attempt_count, reserved_requests, "
                       "reserved_tokens, failure_code FROM pc_topic_memory_work_budgets "
                       "ORDER BY scope_id, source_after")


def lease(url: str) -> tuple[str, int] | None:
    """(holder_id, supervisor_generation) of the ``global`` lease row, None if absent."""
    with opened(url) as db:
        if not db.has_table("pc_artifact_processing_leases"):
            return None
        rows = db.rows("SELECT holder_id, supervisor_generation FROM "
                       "pc_artifact_processing_leases WHERE supervisor_group = 'global'")
    return (str(rows[0][0]), int(rows[0][1])) if rows else None


def publication_count(url: str) -> int:
    with opened(url) as db:
        return int(db.rows("SELECT COUNT(*) FROM pc_topic_memory_revision_publications")[0][0])
