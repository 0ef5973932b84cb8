"""Fault injection into every statement of a commit (STYLE.md, "SQLite's own testing";
Memory RFC, "Concurrency and transactions": a commit is all-or-nothing).

For each commit scenario we count the statements the commit runs, then for every N make
statement N fail (before it runs, and after it ran) on a fresh copy of the database and
check: the old head stays, every table holds exactly its old rows, the FTS5
integrity-check is clean, vector rows equal the active heads with vectors; and the same
plan then commits cleanly.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
import sqlite_vec
from support.statement_faults import Injected, StatementFaults

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core import canonical, planning
from powercontext.core.models import ArtifactRef
from powercontext.core.plan import MemoryPlan
from powercontext.sql import sqlite as frag

from .conftest import PROFILE, add, base_of, commit, id_factory, plan_add, run, vectors_for


class FaultyBackend(StatementFaults, SQLiteMemoryBackend):
    """Counts the statements of ``_commit_plan_sync`` and fails statement ``fail_at``."""

    key: str | None = None  # the business key a new Memory's commit stores

    def _commit_plan_sync(self, plan, vectors, key=None):  # type: ignore[no-untyped-def]
        self.armed, self.count = True, 0
        try:
            return super()._commit_plan_sync(plan, vectors, key or self.key)
        finally:
            self.armed = False


TABLES = ("powercontext_meta", "artifact_revisions", "artifact_heads", "sources",
          "memory_entry_versions", "memory_entry_heads", "memory_entry_vector_metadata",
          "memory_keys")


def snapshot(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table (FTS and vec0 by rowid and scope)."""
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    try:
        out = {t: conn.execute(f'SELECT rowid, * FROM "{t}" ORDER BY rowid').fetchall()
               for t in TABLES}
        out["fts"] = conn.execute(
            f'SELECT rowid FROM "{frag.FTS_TABLE}" ORDER BY rowid'
        ).fetchall()
        out["vec"] = conn.execute(
            f'SELECT rowid, scope FROM "{frag.VECTOR_TABLE}" ORDER BY rowid').fetchall()
        return out
    finally:
        conn.close()


def _read_revision(path: Path, artifact_id: str, revision: int):
    """The Revision as a fresh reader sees it (stored deltas decoded, hashes checked)."""
    import asyncio

    from powercontext.core.models import ArtifactRef

    async def read():
        reader = SQLiteMemoryBackend(str(path))
        try:
            return await reader.load_revision(ArtifactRef(artifact_id, revision))
        finally:
            await reader.close()

    return asyncio.run(read())


def check_consistent(path: Path) -> None:
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    try:
        conn.execute(frag.statement("fts_integrity_check"))
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        heads = {r[0] for r in conn.execute("SELECT projection_id FROM memory_entry_heads")}
        fts = {r[0] for r in conn.execute(f'SELECT rowid FROM "{frag.FTS_TABLE}"')}
        meta = {r[0] for r in conn.execute(
            "SELECT projection_id FROM memory_entry_vector_metadata")}
        vec = {r[0] for r in conn.execute(f'SELECT rowid FROM "{frag.VECTOR_TABLE}"')}
        assert fts == heads
        assert vec == meta and vec <= heads
        # every head row is an active entry of its Memory's head manifest
        for aid, rev in conn.execute("SELECT artifact_id, revision FROM artifact_heads"):
            parsed = _read_revision(path, aid, rev).content  # decoded and hash-checked
            active = {(e.entry_id, e.entry_version_id) for e in parsed.manifest.entries
                      if e.state == "active"}
            rows = set(conn.execute("SELECT entry_id, entry_version_id FROM memory_entry_heads "
                                    "WHERE memory_artifact_id = ?", (aid,)).fetchall())
            assert rows == active
    finally:
        conn.close()


PlanMaker = Callable[[SQLiteMemoryBackend, ArtifactRef, Callable[[str], str]], Any]


async def _plan_append(b: SQLiteMemoryBackend, ref: ArtifactRef, nid: Callable[[str], str]):
    plan = await plan_add(b, ref, ["fourth entry about wal", "fifth entry about vec0"], nid)
    return plan, vectors_for(plan)


async def _plan_revise(b: SQLiteMemoryBackend, ref: ArtifactRef, nid: Callable[[str], str]):
    base = await base_of(b, ref)
    assert base is not None
    first = min(base.versions)
    from powercontext.core.models import MemoryEntryInput

    plan = planning.plan_remember(
        base, [MemoryEntryInput("fact", "first entry revised", entry=base.versions[first]),
               MemoryEntryInput("fact", "a sixth entry")], new_id=nid)
    assert isinstance(plan, MemoryPlan)
    return plan, vectors_for(plan)


async def _plan_forget(b: SQLiteMemoryBackend, ref: ArtifactRef, nid: Callable[[str], str]):
    base = await base_of(b, ref)
    assert base is not None
    ids = sorted(base.versions)[:2]
    plan = planning.plan_forget(base, [base.versions[e] for e in ids], reason="obsolete")
    assert isinstance(plan, MemoryPlan)
    return plan, None


async def _plan_new(b: SQLiteMemoryBackend, ref: ArtifactRef, nid: Callable[[str], str]):
    plan = await plan_add(b, None, ["a brand new memory", "with two entries"], nid)
    return plan, vectors_for(plan)


async def _plan_new_keyed(b: SQLiteMemoryBackend, ref: ArtifactRef,
                         nid: Callable[[str], str]):
    b.key = "repo:/w/faults"  # the key row is written in the same transaction
    return await _plan_new(b, ref, nid)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ArtifactRef]:
    path = tmp_path_factory.mktemp("faults") / "seed.db"
    b = SQLiteMemoryBackend(str(path), profile=PROFILE)
    nid = id_factory("seed")
    src = canonical.make_source("src_seed", "user_note", "seed evidence")
    run(b.put_sources([src]))
    ref = run(add(b, None, ["first entry", "second entry", "third entry"], nid, sources=[src]))
    b.close_sync()  # the last connection checkpoints and removes the WAL
    return path, ref


@pytest.mark.parametrize("maker", [_plan_append, _plan_revise, _plan_forget, _plan_new,
                                   _plan_new_keyed],
                         ids=["append", "revise", "forget", "new-memory", "new-memory-key"])
def test_a_failing_statement_anywhere_in_a_commit_leaves_the_old_state(
        seeded: tuple[Path, ArtifactRef], tmp_path: Path, maker: Callable[..., Any]) -> None:
    seed, ref = seeded
    # Count the statements of an undisturbed commit.
    probe_path = tmp_path / "count.db"
    shutil.copy(seed, probe_path)
    b = FaultyBackend(str(probe_path), profile=PROFILE)
    plan, vecs = run(maker(b, ref, id_factory("plan")))
    run(commit(b, plan, vecs))
    total = b.count
    assert b.last_sql == "COMMIT"
    b.close_sync()
    check_consistent(probe_path)
    assert total >= 8, total
    before = snapshot(seed)
    for after in (False, True):
        for n in range(1, total + 1):
            path = tmp_path / f"f{n}{after}.db"
            shutil.copy(seed, path)
            b = FaultyBackend(str(path), profile=PROFILE)
            b.fail_at, b.after = n, after
            plan, vecs = run(maker(b, ref, id_factory("plan")))
            committed_anyway = after and n == total  # COMMIT ran, then the fault
            if committed_anyway:
                with pytest.raises(Injected):
                    run(commit(b, plan, vecs))
            else:
                with pytest.raises(Injected):
                    run(commit(b, plan, vecs))
                assert run(b.head(ref.artifact_id)) == ref
            b.close_sync()
            check_consistent(path)
            if committed_anyway:
                assert snapshot(path) == snapshot(probe_path)
                path.unlink()
                continue
            assert snapshot(path) == before, (n, after)
            # nothing left behind blocks the same plan
            key, b = b.key, FaultyBackend(str(path), profile=PROFILE)
            b.key = key
            assert run(commit(b, plan, vecs)) == plan.ref
            b.close_sync()
            check_consistent(path)
            assert snapshot(path) == snapshot(probe_path)
            path.unlink()
