"""Offline rebuild on SQLite (Memory RFC, "Vector integrity and offline rebuilds"): the
projection is rebuilt from the authoritative tables, rows left behind are cleared by
Memory scope, and a migration drops and recreates the vec0 table for a new profile."""

from __future__ import annotations

import struct
from pathlib import Path

import apsw
import sqlite_vec

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.models import MemorySearchRequest
from powercontext.sql import sqlite as frag

from .conftest import add, id_factory, run
from .test_sqlite_faults import check_consistent, snapshot


def _raw(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    return conn


def test_rebuild_clears_leftovers_and_fills_missing_vectors(db_path: Path) -> None:
    model = DeterministicEmbedding(dimension=16)
    b = SQLiteMemoryBackend(str(db_path), profile=model.profile)
    nid = id_factory()
    ra = run(add(b, None, ["rebuild keeps alpha", "rebuild keeps beta"], nid,
                 with_vectors=False))
    rb = run(add(b, None, ["another memory gamma"], nid, with_vectors=False))
    b.close_sync()
    # Damage the projection the way a bug would: a stray FTS row and a stray vector in
    # Memory A's scope, and one head row missing.
    conn = _raw(db_path)
    scope = frag.scope_token(ra.artifact_id)
    conn.execute(frag.statement("fts_insert"), (9999, frag.fts_document(scope, "stray")))
    conn.execute(frag.statement("vector_insert"), (9999, scope, struct.pack("<16f", *[0.25] * 16)))
    (pid,) = conn.execute("SELECT max(projection_id) FROM memory_entry_heads "
                          "WHERE memory_artifact_id = ?", (ra.artifact_id,)).fetchone()
    conn.execute(frag.statement("fts_delete"), (pid,))
    conn.execute("DELETE FROM memory_entry_heads WHERE projection_id = ?", (pid,))
    conn.close()
    b = SQLiteMemoryBackend(str(db_path), profile=model.profile)
    report = run(b.rebuild(model))
    assert (report.memories, report.entries, report.vectors, report.incomplete) == (2, 3, 3, [])
    b.close_sync()
    check_consistent(db_path)
    snap = snapshot(db_path)
    assert len(snap["memory_entry_heads"]) == len(snap["fts"]) == len(snap["vec"]) == 3
    assert all(r[0] != 9999 for r in snap["fts"] + snap["vec"])
    b = SQLiteMemoryBackend(str(db_path), profile=model.profile)
    q = run(model.embed(("rebuild keeps alpha",))).vectors[0]
    res = run(b.search(MemorySearchRequest("alpha", (ra, rb), 5, "hybrid", q)))
    assert res.mode == "hybrid" and res.hits[0].text == "rebuild keeps alpha"
    b.close_sync()


def test_migration_recreates_vec0_for_the_new_dimension(db_path: Path) -> None:
    old = DeterministicEmbedding(dimension=8)
    new = DeterministicEmbedding(dimension=32)
    b = SQLiteMemoryBackend(str(db_path), profile=old.profile)
    ref = run(add(b, None, ["migrate this entry"], id_factory(), with_vectors=False))
    report = run(b.rebuild(new, new_profile=new.profile))
    assert (report.entries, report.vectors, report.incomplete) == (1, 1, [])
    b.close_sync()
    conn = _raw(db_path)
    ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?",
                       (frag.VECTOR_TABLE,)).fetchone()[0]
    (blob,) = conn.execute(f'SELECT embedding FROM "{frag.VECTOR_TABLE}"').fetchone()
    conn.close()
    assert "float[32]" in ddl and len(blob) == 32 * 4
    check_consistent(db_path)
    b = SQLiteMemoryBackend(str(db_path), profile=new.profile)
    q = run(new.embed(("migrate this entry",))).vectors[0]
    res = run(b.search(MemorySearchRequest("zzz", (ref,), 5, "vector", q)))
    assert [h.text for h in res.hits] == ["migrate this entry"]
    b.close_sync()
