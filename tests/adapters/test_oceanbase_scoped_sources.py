"""Scoped Source writes on seekdb (Topic Memory RFC, "Source, Window, Cursor, and
Pending", "Pending dirty set"): a fault at every statement of one scoped write leaves
the Sources, the Scope journal and Pending exactly as before (then the write goes
through); two connections adding to one Scope at once, with flushes between, get
distinct contiguous positions and one Pending row covering the head; a Memory
backend's scoped write is the Topic backend's Pending on the same database."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from oceanbase_server import fresh_database, seekdb_available
from support.statement_faults import hook_statements
from support.topic_ob import sql

from powercontext.adapters.oceanbase import OceanBaseMemoryBackend, OceanBaseTopicBackend
from powercontext.core import canonical
from powercontext.core.errors import BackendError
from powercontext.core.topic.processing import BINDING, PendingRow

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]
TABLES = {"sources": "journal_position", "pc_source_scope_journal": "scope_id, position",
          "pc_artifact_processing_pending": "binding_name, scope_id"}


def run(coro):
    return asyncio.run(coro)


def _src(name: str):
    return canonical.make_source(name, "user_note", f"evidence {name}")


@pytest.fixture
def db_url(seekdb_url: str) -> Iterator[str]:
    with fresh_database(seekdb_url, "pc_scoped_sources") as url:
        yield url


def _fail_at(base: type) -> type:
    class FailAt(base):  # type: ignore[misc, valid-type]
        """Raises a server error instead of running statement number ``fail_at``."""

        counting = False
        seen = 0
        fail_at = 0

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            hook_statements(self, self._hook, many=False)

        def _hook(self, sql, params, send):
            if self.counting:
                self.seen += 1
                if self.seen == self.fail_at:
                    import MySQLdb

                    raise MySQLdb.OperationalError(1105, f"injected fault at {self.seen}")
            return send()

    return FailAt


def _state(url: str) -> dict[str, object]:
    return {t: sql(url, f"SELECT * FROM {t} ORDER BY {order}") for t, order in TABLES.items()}


@pytest.mark.parametrize("family", ["topic", "memory"])
def test_a_fault_at_each_statement_of_a_scoped_write_leaves_everything_as_before(
        db_url, family):
    cls = _fail_at(OceanBaseTopicBackend if family == "topic" else OceanBaseMemoryBackend)
    b = cls(db_url)
    run(b.put_scoped_sources("repo:/old", [_src("o1")]))
    run(b.put_sources([_src("plain")]))
    before = _state(db_url)
    batch = [_src("o1"), _src("plain"), _src("n1"), _src("n2")]
    n = 1
    while True:
        b.counting, b.seen, b.fail_at = True, 0, n
        try:
            got = run(b.put_scoped_sources("repo:/old", batch))
        except BackendError as exc:
            assert "injected fault" in str(exc)
        else:
            break  # fail_at is past the last statement: it went through
        finally:
            b.counting = False
        assert _state(db_url) == before, f"a fault at statement {n} left rows behind"
        n += 1
    assert n - 1 == b.seen >= 8  # every statement, COMMIT included, was tried
    assert got == (1, 2, 3, 4)
    assert sql(db_url, "SELECT source_through, flush_generation FROM "
                       "pc_artifact_processing_pending WHERE scope_id = %s",
               ("repo:/old",)) == [(4, 0)]
    run(b.close())


def test_two_connections_adding_to_one_scope_get_distinct_contiguous_positions(db_url):
    a, b = OceanBaseTopicBackend(db_url), OceanBaseMemoryBackend(db_url)
    rounds = 10

    async def writer(backend, name: str) -> dict[str, int]:
        got: dict[str, int] = {}
        for i in range(rounds):
            batch = [_src(f"{name}-{i}-{j}") for j in range(2)]
            p1, p2 = await backend.put_scoped_sources("project:shared", batch)
            assert p2 == p1 + 1
            got.update({batch[0].source_id: p1, batch[1].source_id: p2})
        return got

    async def flusher() -> list[str]:
        return [await a.flush("project:shared") for _ in range(rounds)]

    async def go():
        await a.open()
        await b.open()
        got_a, got_b, flushes = await asyncio.gather(writer(a, "a"), writer(b, "b"),
                                                     flusher())
        journal = await a.scope_journal("project:shared", 0, 1000)
        (status,) = await a.processing_status("project:shared")
        await a.close()
        await b.close()
        return got_a, got_b, flushes, journal, status

    got_a, got_b, flushes, journal, status = run(go())
    positions = {**got_a, **got_b}
    assert sorted(positions.values()) == list(range(1, 4 * rounds + 1))
    assert [(e.source.source_id, e.position) for e in journal] == sorted(
        positions.items(), key=lambda kv: kv[1])
    accepted = flushes.count("accepted")
    assert set(flushes) <= {"accepted", "idle"}
    assert status.source_head == 4 * rounds
    assert status.pending == PendingRow(BINDING, "project:shared", 4 * rounds, accepted, 0)


def test_a_memory_backends_scoped_write_is_the_topic_backends_pending(db_url):
    m, t = OceanBaseMemoryBackend(db_url), OceanBaseTopicBackend(db_url)

    async def go():
        assert await m.put_scoped_sources("repo:/w", [_src("m1"), _src("m2")]) == (1, 2)
        assert await t.put_scoped_sources("repo:/w", [_src("t1")]) == (3,)
        statuses = await t.processing_status()
        assert await t.flush("repo:/w") == "accepted"
        (after,) = await t.processing_status("repo:/w")
        await m.close()
        await t.close()
        return statuses, after

    statuses, after = run(go())
    assert [(s.scope_id, s.source_head, s.cursor, s.pending) for s in statuses] == [
        ("repo:/w", 3, 0, PendingRow(BINDING, "repo:/w", 3, 0, 0))]
    assert after.pending == PendingRow(BINDING, "repo:/w", 3, 1, 0)
