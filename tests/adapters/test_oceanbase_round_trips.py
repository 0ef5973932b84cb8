"""A search on OceanBase in few round trips, with the same snapshot (issue 14: ours / raw
p95 <= 1.3x; Memory RFC, "Search and reads": one read transaction over the heads it
searches).

A read transaction is ``START TRANSACTION READ ONLY`` at the session's REPEATABLE READ
(a write still runs at READ COMMITTED), sent with the transaction's first statement in
one round trip; its COMMIT is sent without waiting and answered before the next
statement; the heads of every searched Memory are one statement, the rebuild generation
one. Counted at the driver (every query the connection sends). Against a real seekdb
(``tests/oceanbase_server.py``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from oceanbase_server import fresh_database, seekdb_available

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.oceanbase import OceanBaseMemoryBackend
from powercontext.core.errors import BackendError
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]


@pytest.fixture
def db_url(seekdb_url: str) -> Iterator[str]:
    with fresh_database(seekdb_url, "pc_rt") as url:
        yield url


def _connect(url: str):  # type: ignore[no-untyped-def]
    import MySQLdb

    p = urlsplit(url)
    return MySQLdb.connect(host=p.hostname, port=p.port, user=p.username or "root",
                           passwd=p.password or "", db=p.path.lstrip("/") or None,
                           charset="utf8mb4", autocommit=True)


TEXTS = [f"note {i} about painting and {w}" for i, w in
         enumerate(["go", "db", "ci", "uv", "rust", "sql", "fts", "vectors"] * 3)]


@contextlib.contextmanager
def _round_trips(b: OceanBaseMemoryBackend) -> Iterator[list[str]]:
    """Every query ``b`` sends meanwhile, whitespace folded: one per round trip, and a
    read's COMMIT, whose answer is read later, as ``COMMIT (answer read later)``."""
    seen: list[str] = []
    engine = b.ob_engine  # the engine owns the connection
    real_cursor, real_send = engine._cursor, engine._send_read_commit

    def cursor():  # type: ignore[no-untyped-def]
        cur = real_cursor()
        real_execute = cur.execute

        def execute(sql, params=None):  # type: ignore[no-untyped-def]
            text = sql.decode() if isinstance(sql, (bytes, bytearray)) else sql
            seen.append(" ".join(text.split()))
            return real_execute(sql, params)

        cur.execute = execute
        return cur

    def send() -> None:
        seen.append("COMMIT (answer read later)")
        real_send()

    engine._cursor, engine._send_read_commit = cursor, send  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        del engine._cursor, engine._send_read_commit


READ = "START TRANSACTION READ ONLY; "
WRITE = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION; "


def _service(db_url: str) -> tuple[OceanBaseMemoryBackend, MemoryService]:
    model = DeterministicEmbedding(16)
    b = OceanBaseMemoryBackend(db_url, profile=model.profile)
    return b, MemoryService(b, embedding_model=model)


def test_a_search_is_heads_pages_versions_and_an_unanswered_commit(db_url):
    async def body():
        b, svc = _service(db_url)
        heads = []
        for m in range(3):
            heads.append(await svc.remember(None, entries=[
                MemoryEntryInput("fact", f"{t} m{m}") for t in TEXTS]))
        for mode in ("fts", "vector", "hybrid"):
            # (the first vector search reads each vector projection once: cached since)
            await svc.search("painting go db", heads, limit=10, mode=mode)
            with _round_trips(b) as seen:
                res = await svc.search("painting go db", heads, limit=10, mode=mode)
            assert res.hits
            # the transaction opens with its first statement: the heads, all 3 at once
            assert seen[0].startswith(READ + "SELECT artifact_id, revision FROM "
                                      "artifact_heads WHERE artifact_id IN"), seen
            assert seen[-1] == "COMMIT (answer read later)", seen
            assert sum("artifact_heads" in s for s in seen) == 1, seen
            assert not any("SET TRANSACTION" in s for s in seen), seen
            # the rebuild generation once, not once per Memory (vector readiness)
            assert sum("powercontext_meta" in s for s in seen) == (mode != "fts"), seen
            channels = 2 if mode == "hybrid" else 1
            # besides the channels' pages: the heads, the generation, a versions read
            # per channel and COMMIT
            rest = [s for s in seen if not s.startswith("SELECT memory_artifact_id, ")]
            assert len(rest) <= 1 + (mode != "fts") + channels + 1, seen
        await svc.close()

    asyncio.run(body())


def test_a_read_that_runs_no_statement_sends_nothing(db_url):
    b = OceanBaseMemoryBackend(db_url)
    asyncio.run(b.capabilities())  # open
    try:
        with _round_trips(b) as seen:
            assert b._in_tx(False, lambda: 42) == 42
            assert b._in_tx(True, lambda: 43) == 43
        assert seen == []
    finally:
        b.close_sync()


def test_a_write_opens_with_its_first_statement_and_waits_for_its_commit(db_url):
    async def body():
        b, svc = _service(db_url)
        head = await svc.remember(None, entries=[MemoryEntryInput("fact", "a first fact")])
        with _round_trips(b) as seen:
            await svc.remember(head, entries=[MemoryEntryInput("fact", "a second fact")])
        writes = [i for i, s in enumerate(seen) if s.startswith(WRITE)]
        assert len(writes) == 1, seen
        assert seen[-1] == "COMMIT", seen  # sent through a cursor: its answer awaited
        assert all(s.startswith(READ) or s == "COMMIT (answer read later)"
                   for s in seen[:writes[0]] if "TRANSACTION" in s or "COMMIT" in s), seen
        await svc.close()

    asyncio.run(body())


def test_a_connection_killed_after_a_read_is_replaced_by_the_next_one(db_url):
    async def body():
        b, svc = _service(db_url)
        head = await svc.remember(None, entries=[MemoryEntryInput("fact", t) for t in TEXTS])
        first = await svc.search("painting go", [head], limit=5, mode="hybrid")
        killer = _connect(db_url)
        try:
            killer.cursor().execute(f"KILL {int(b.ob_engine.connection.thread_id())}")
        finally:
            killer.close()
        assert await svc.search("painting go", [head], limit=5, mode="hybrid") == first
        head = await svc.remember(head, entries=[MemoryEntryInput("fact", "after the kill")])
        assert head.revision == 2
        await svc.close()

    asyncio.run(body())


@contextlib.contextmanager
def _probe(db_url: str, table: str) -> Iterator[tuple[OceanBaseMemoryBackend, Any]]:
    """An open backend and a cursor of another connection, which has created ``table``
    with the row ``(1, 0)`` (to commit beside the backend's transactions)."""
    other = _connect(db_url)
    cur = other.cursor()
    cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT)")
    cur.execute(f"INSERT INTO {table} VALUES (1, 0)")
    b = OceanBaseMemoryBackend(db_url)
    asyncio.run(b.capabilities())  # open
    try:
        yield b, cur
    finally:
        b.close_sync()
        other.close()


def test_a_failed_first_statement_leaves_no_transaction_open(db_url):
    with _probe(db_url, "rt_fail") as (b, cur):
        with pytest.raises(BackendError):
            b._in_tx(False, lambda: b.ob_engine.rows("SELECT v FROM rt_no_such_table"))
        first = b._in_tx(False, lambda: int(b.ob_engine.rows("SELECT v FROM rt_fail")[0][0]))
        cur.execute("UPDATE rt_fail SET v = 5 WHERE id = 1")
        # a new snapshot: the failed read's transaction did not stay open around this one
        assert b._in_tx(False, lambda: int(b.ob_engine.rows("SELECT v FROM rt_fail")[0][0])) == 5
        assert first == 0


def test_reads_are_repeatable_read_and_writes_read_committed(db_url):
    with _probe(db_url, "rt_probe") as (b, cur):

        def twice() -> tuple[int, int]:
            first = int(b.ob_engine.rows("SELECT v FROM rt_probe WHERE id = 1")[0][0])
            cur.execute("UPDATE rt_probe SET v = v + 1 WHERE id = 1")  # a concurrent commit
            return first, int(b.ob_engine.rows("SELECT v FROM rt_probe WHERE id = 1")[0][0])

        for write, sees_new in ((False, False), (True, True), (False, False), (True, True)):
            first, second = b._in_tx(write, twice)
            assert (second != first) is sees_new, (write, first, second)


def test_a_transaction_begun_and_never_ended_dies_with_the_connection(db_url):
    """(Found by review.) A begin with no COMMIT or ROLLBACK, then a close: the next open's
    first statement must not open that transaction."""
    b = OceanBaseMemoryBackend(db_url)
    asyncio.run(b.capabilities())
    b._begin_sync(True)
    asyncio.run(b.close())
    with _round_trips(b) as seen:
        asyncio.run(b.capabilities())  # opens again
    assert seen and not any("TRANSACTION" in s for s in seen[:1]), seen[:2]
    asyncio.run(b.close())
