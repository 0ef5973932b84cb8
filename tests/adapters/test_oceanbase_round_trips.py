"""A search on OceanBase in few statements, with the same snapshot (issue 14: ours / raw
p95 <= 1.3x; Memory RFC, "Search and reads": one read transaction over the heads it
searches).

A read transaction is one ``START TRANSACTION READ ONLY`` at the session's REPEATABLE
READ (a write still runs at READ COMMITTED); the heads of every searched Memory are one
statement. Against a real seekdb (``tests/oceanbase_server.py``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from oceanbase_server import fresh_database, seekdb_available

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.oceanbase import OceanBaseMemoryBackend
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
def _statements(b: OceanBaseMemoryBackend) -> Iterator[list[str]]:
    """Every statement ``b`` runs meanwhile, whitespace folded."""
    seen: list[str] = []
    real = b._exec

    def spy(sql, params=None):  # type: ignore[no-untyped-def]
        seen.append(" ".join(sql.split()))
        return real(sql, params)

    b._exec = spy  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        del b._exec


def test_a_search_is_start_one_heads_read_pages_versions_commit(db_url):
    async def body():
        model = DeterministicEmbedding(16)
        b = OceanBaseMemoryBackend(db_url, profile=model.profile)
        svc = MemoryService(b, embedding_model=model)
        heads = []
        for m in range(3):
            heads.append(await svc.remember(None, entries=[
                MemoryEntryInput("fact", f"{t} m{m}") for t in TEXTS]))
        for mode in ("fts", "vector", "hybrid"):
            with _statements(b) as seen:
                res = await svc.search("painting go db", heads, limit=10, mode=mode)
            assert res.hits
            assert seen[0] == "START TRANSACTION READ ONLY" and seen[-1] == "COMMIT", seen
            assert not any(s.startswith("SET TRANSACTION") for s in seen)
            assert sum("FROM artifact_heads" in s for s in seen) == 1, seen  # all 3 at once
        await svc.close()

    asyncio.run(body())


def test_reads_are_repeatable_read_and_writes_read_committed(db_url):
    other = _connect(db_url)
    cur = other.cursor()
    cur.execute("CREATE TABLE rt_probe (id INT PRIMARY KEY, v INT)")
    cur.execute("INSERT INTO rt_probe VALUES (1, 0)")
    b = OceanBaseMemoryBackend(db_url)
    asyncio.run(b.capabilities())  # open

    def twice() -> tuple[int, int]:
        first = int(b._all("SELECT v FROM rt_probe WHERE id = 1")[0][0])
        cur.execute("UPDATE rt_probe SET v = v + 1 WHERE id = 1")  # a concurrent commit
        return first, int(b._all("SELECT v FROM rt_probe WHERE id = 1")[0][0])

    try:
        for write, sees_new in ((False, False), (True, True), (False, False), (True, True)):
            first, second = b._in_tx(write, twice)
            assert (second != first) is sees_new, (write, first, second)
    finally:
        b.close_sync()
        other.close()
