"""Scoped Source writes on SQLite under faults and concurrency (Topic Memory RFC,
"Source, Window, Cursor, and Pending": the Source, its Scope-journal row and the
Pending raise are one transaction; TOPIC-MEMORY.md, "Scopes are new").

Fault injection at every statement of one scoped write (BEGIN IMMEDIATE to COMMIT,
before and after each statement): the database holds exactly the old rows, or exactly
the new ones when COMMIT ran -- never a Source or journal row without its Pending
raise, never a raise without them -- and the same write then succeeds. Two OS processes
adding to one Scope at once get distinct, contiguous positions (``spawn``)."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
from support.statement_faults import Injected, StatementFaults

from powercontext.adapters.sqlite import SQLiteMemoryBackend, SQLiteTopicBackend
from powercontext.core import canonical
from powercontext.core.topic.processing import BINDING

_TABLES = ("sources", "pc_source_scope_journal", "pc_artifact_processing_pending")


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def _src(name: str) -> Any:
    return canonical.make_source(name, "user_note", f"evidence {name}")


def _faulty(base: type) -> type:
    class Faulty(StatementFaults, base):  # type: ignore[misc, valid-type]
        """Counts the statements of one scoped Source write and fails ``fail_at``."""

        def _in_tx(self, write: bool, fn: Callable[..., Any], *args: Any) -> Any:
            if getattr(fn, "__name__", "") != "_put_scoped_checked":
                return super()._in_tx(write, fn, *args)
            self.armed, self.count = True, 0
            try:
                return super()._in_tx(write, fn, *args)
            finally:
                self.armed = False

    Faulty.__name__ = f"Faulty{base.__name__}"
    return Faulty


FAMILIES = {"topic": _faulty(SQLiteTopicBackend), "memory": _faulty(SQLiteMemoryBackend)}


def snapshot(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = apsw.Connection(str(path))
    try:
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall()) for t in _TABLES}
    finally:
        conn.close()


def check_raised(path: Path) -> None:
    """Every journaled Source is stored, and every Scope's Pending row covers its head."""
    conn = apsw.Connection(str(path))
    try:
        stored = {r[0] for r in conn.execute("SELECT source_id FROM sources")}
        heads = dict(conn.execute("SELECT scope_id, MAX(position) FROM pc_source_scope_journal "
                                  "GROUP BY scope_id").fetchall())
        journaled = [r[0] for r in conn.execute("SELECT source_id FROM pc_source_scope_journal")]
        pending = dict(conn.execute(
            "SELECT scope_id, source_through FROM pc_artifact_processing_pending "
            "WHERE binding_name = ?", (BINDING,)).fetchall())
        counts = dict(conn.execute("SELECT scope_id, COUNT(*) FROM pc_source_scope_journal "
                                   "GROUP BY scope_id").fetchall())
    finally:
        conn.close()
    assert set(journaled) <= stored
    assert set(heads) == set(pending), (heads, pending)
    for scope, head in heads.items():
        assert pending[scope] == head == counts[scope], (scope, head, pending, counts)


# (seed, write): the seed runs cleanly, the write is the one faulted
SCENARIOS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "new-scope": (
        lambda b: b.put_sources([_src("plain")]),
        lambda b: b.put_scoped_sources("repo:/new", [_src("plain"), _src("n1"), _src("n2")]),
    ),
    "existing-scope": (
        lambda b: _seed_existing(b),
        lambda b: b.put_scoped_sources("repo:/old", [_src("o1"), _src("n1"), _src("n2")]),
    ),
}


async def _seed_existing(b: Any) -> None:
    await b.put_scoped_sources("repo:/old", [_src("o1")])
    if hasattr(b, "flush"):
        await b.flush("repo:/old")
    await b.put_scoped_sources("repo:/other", [_src("x1")])


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_failing_statement_anywhere_in_a_scoped_write_keeps_source_and_pending_together(
        tmp_path: Path, family: str, scenario: str) -> None:
    cls = FAMILIES[family]
    seed_fn, write_fn = SCENARIOS[scenario]
    seed = tmp_path / "seed.db"
    b = cls(str(seed))
    run(seed_fn(b))
    b.close_sync()
    probe = tmp_path / "count.db"
    shutil.copy(seed, probe)
    b = cls(str(probe))
    run(write_fn(b))
    total = b.count
    assert b.last_sql == "COMMIT"
    b.close_sync()
    check_raised(probe)
    assert total >= 6, total
    before, written = snapshot(seed), snapshot(probe)
    assert before != written
    for after in (False, True):
        for n in range(1, total + 1):
            path = tmp_path / f"f{n}{after}.db"
            shutil.copy(seed, path)
            b = cls(str(path))
            b.fail_at, b.after = n, after
            with pytest.raises(Injected):
                run(write_fn(b))
            b.close_sync()
            check_raised(path)
            if after and n == total:  # COMMIT ran, then the fault
                assert snapshot(path) == written
                path.unlink()
                continue
            assert snapshot(path) == before, (n, after)
            b = cls(str(path))  # nothing left behind blocks the same write
            run(write_fn(b))
            b.close_sync()
            assert snapshot(path) == written, (n, after)
            path.unlink()


# Run in a spawned interpreter through ``exec`` (no importable test module needed).
WORKER = r'''
import asyncio, json
from powercontext.adapters.sqlite import SQLiteMemoryBackend, SQLiteTopicBackend
from powercontext.core import canonical

async def main():
    cls = SQLiteTopicBackend if family == "topic" else SQLiteMemoryBackend
    b = cls(path)
    await b.open()
    got = []
    barrier.wait(timeout=60)
    for i in range(count):
        batch = [canonical.make_source(f"{name}-{i}-{j}", "user_note", f"{name} {i} {j}")
                 for j in range(2)]
        got.append([[s.source_id, p] for s, p in
                    zip(batch, await b.put_scoped_sources(scope, batch))])
    await b.close()
    with open(out, "w") as f:
        json.dump(got, f)

asyncio.run(main())
'''


@pytest.mark.subprocess
@pytest.mark.parametrize("family", ["topic", "memory"])
def test_two_processes_adding_to_one_scope_get_distinct_contiguous_positions(
        tmp_path: Path, family: str) -> None:
    path = tmp_path / "shared.db"
    b = SQLiteTopicBackend(str(path))
    run(b.open())
    b.close_sync()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs, outs = [], []
    count = 12
    for name in ("a", "b"):
        out = tmp_path / f"{name}.json"
        outs.append(out)
        env = {"path": str(path), "name": name, "out": str(out), "barrier": barrier,
               "scope": "project:shared", "count": count, "family": family}
        p = ctx.Process(target=exec, args=(WORKER, env))
        p.start()
        procs.append(p)
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    positions: dict[str, int] = {}
    for out in outs:
        batches = json.loads(out.read_text())
        assert len(batches) == count
        for batch in batches:
            (id1, p1), (id2, p2) = batch
            assert p2 == p1 + 1  # one write's Sources are contiguous, in input order
            positions[id1], positions[id2] = p1, p2
    assert sorted(positions.values()) == list(range(1, 4 * count + 1))
    b = SQLiteTopicBackend(str(path))
    journal = run(b.scope_journal("project:shared", 0, 1000))
    (status,) = run(b.processing_status("project:shared"))
    b.close_sync()
    assert [(e.source.source_id, e.position) for e in journal] == sorted(
        positions.items(), key=lambda kv: kv[1])
    assert status.source_head == 4 * count
    assert status.pending is not None and status.pending.source_through == 4 * count
