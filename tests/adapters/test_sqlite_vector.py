"""The vec0 projection (Memory RFC, "SQLite adapter"; ARCHITECTURE.md, "Decisions"):
KNN filtered by Memory inside the scan, merged across Memories, explicit deletes, and
the chunk_size choice."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import apsw
import attrs
import pytest
import sqlite_vec

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.errors import ProfileMismatchError
from powercontext.core.models import MemorySearchRequest
from powercontext.sql import sqlite as frag

from .conftest import PROFILE, commit, forget, id_factory, plan_add, run, unit, vectors_for

NEAR = unit(1, 0, 0, 0, 0, 0, 0, 0)
QUERY = NEAR


def _vec_for(mapping: dict[str, tuple[float, ...]]):  # type: ignore[no-untyped-def]
    return lambda text: mapping[text]


def _memory(b: SQLiteMemoryBackend, texts: dict[str, tuple[float, ...]], seed: str):  # type: ignore[no-untyped-def]
    plan = run(plan_add(b, None, list(texts), id_factory(seed)))
    return run(commit(b, plan, vectors_for(plan, fn=_vec_for(texts))))


def test_knn_is_filtered_by_memory_inside_the_scan(vec_backend: SQLiteMemoryBackend) -> None:
    b = vec_backend
    # Memory B holds 40 vectors identical to the query; Memory A only farther ones.
    b_texts = {f"closer entry number {i}": NEAR for i in range(40)}
    a_texts = {"far entry one": unit(1, 1, 0, 0, 0, 0, 0, 0),
               "far entry two": unit(1, 0, 1, 1, 0, 0, 0, 0),
               "far entry three": unit(0, 0, 0, 1, 0, 0, 0, 0)}
    rb = _memory(b, b_texts, "b")
    ra = _memory(b, a_texts, "a")
    got = run(b._run(b._in_tx, False, b.projection.vector_candidates, [ra.artifact_id], QUERY, 2))
    assert [c.searchable_text for c in got] == ["far entri one", "far entri two"]
    assert all(c.artifact_id == ra.artifact_id for c in got)
    assert got[0].distance == pytest.approx(0.765367, abs=1e-5)  # |(1,0)-(1,1)/sqrt2|
    # both Memories: merged by distance, B's exact matches first, limit respected
    both = run(b._run(b._in_tx, False, b.projection.vector_candidates,
                      [ra.artifact_id, rb.artifact_id], QUERY, 42))
    assert [c.artifact_id for c in both[:40]] == [rb.artifact_id] * 40
    assert [c.searchable_text for c in both[40:]] == ["far entri one", "far entri two"]
    assert [c.distance for c in both] == sorted(c.distance for c in both)
    # the whole search path: vector mode on A returns only A's entries
    res = run(b.search(MemorySearchRequest("anything", (ra,), 3, "vector", QUERY)))
    assert {h.memory_ref for h in res.hits} == {ra}
    assert [h.text for h in res.hits] == ["far entry one", "far entry two"]  # 3rd: cos 0


def test_vector_rows_are_deleted_explicitly_on_forget(vec_backend: SQLiteMemoryBackend) -> None:
    b = vec_backend
    ra = _memory(b, {"keep me": NEAR, "drop me": unit(0, 1, 0, 0, 0, 0, 0, 0)}, "f")
    versions = run(b.load_entry_versions(ra))
    drop = next(e for e, v in versions.items() if v.text == "drop me")
    ra2 = run(forget(b, ra, [drop]))
    sql = b.sqlite_engine.rows
    rows = run(b._run(lambda: sql(f'SELECT rowid FROM "{frag.VECTOR_TABLE}"')))
    heads = run(b._run(lambda: sql("SELECT projection_id FROM memory_entry_heads")))
    assert rows == heads and len(rows) == 1
    res = run(b.search(MemorySearchRequest("x", (ra2,), 5, "vector",
                                           unit(0, 1, 0, 0, 0, 0, 0, 0))))
    assert [h.text for h in res.hits] == []  # "keep me" is orthogonal: not admitted
    proj = run(b._run(b._in_tx, False, b.projection.vector_projection, ra2.artifact_id))
    assert len(proj) == 1 and proj[0][1] is not None


def test_vector_with_stale_metadata_is_not_a_candidate(vec_backend: SQLiteMemoryBackend) -> None:
    b = vec_backend
    ra = _memory(b, {"entry with a vector": NEAR}, "m")

    def corrupt() -> None:
        b.sqlite_engine.rows("UPDATE memory_entry_vector_metadata SET entry_content_hash = ?",
                             ["0" * 64])

    run(b._run(b._in_tx, True, corrupt))
    got = run(b._run(b._in_tx, False, b.projection.vector_candidates, [ra.artifact_id], QUERY, 5))
    assert got == []
    proj = run(b._run(b._in_tx, False, b.projection.vector_projection, ra.artifact_id))
    assert [p[1] for p in proj] == [None]


def test_k_is_capped_at_vec0_maximum(vec_backend: SQLiteMemoryBackend) -> None:
    b = vec_backend
    ra = _memory(b, {"only entry": NEAR}, "k")
    got = run(b._run(b._in_tx, False, b.projection.vector_candidates, [ra.artifact_id], QUERY,
                     frag.MAX_KNN_K + 100))
    assert len(got) == 1


def test_vectors_round_trip_as_float32_little_endian(vec_backend: SQLiteMemoryBackend) -> None:
    b = vec_backend
    v = unit(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
    _memory(b, {"exact floats": v}, "e")
    (blob,) = run(b._run(lambda: b.sqlite_engine.rows(
        f'SELECT embedding FROM "{frag.VECTOR_TABLE}"')[0]))
    assert struct.unpack("<8f", blob) == v


def test_a_vector_of_the_wrong_dimension_is_refused_before_writing(
        vec_backend: SQLiteMemoryBackend) -> None:
    b = vec_backend
    plan = run(plan_add(b, None, ["wrong dims"], id_factory("w")))
    with pytest.raises(ValueError, match="dimensions"):
        run(commit(b, plan, {r.entry_version_id: unit(1, 0, 0) for r in plan.upserts}))
    assert run(b.head(plan.artifact_id)) is None


def _file_size(path: Path, memories: int, per: int, dim: int, chunk: int | None) -> int:
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    ddl = (frag.vector_ddl(dim, chunk) if chunk else
           frag.vector_ddl(dim).replace(f", chunk_size={frag.VECTOR_CHUNK_SIZE}", ""))
    conn.execute(ddl)
    conn.execute("BEGIN")
    pid = 0
    for m in range(memories):
        for i in range(per):
            pid += 1
            v = [0.0] * dim
            v[(m + i) % dim] = 1.0
            conn.execute(frag.statement("vector_insert"),
                         (pid, frag.scope_token(f"mem{m}"), struct.pack(f"<{dim}f", *v)))
    conn.execute("COMMIT")
    conn.close()
    return os.path.getsize(path)


def test_chunk_size_keeps_many_small_memories_small(tmp_path: Path) -> None:
    # 30 Memories x 10 vectors x 384 dims: the default chunk_size (1024) allocates a
    # whole 1.5 MB chunk per Memory. Measured at 1000 Memories: 26 MB at chunk_size=8,
    # 25.4 MB at 16, 99.6 MB at 64, 1584 MB at the default.
    small = _file_size(tmp_path / "small.db", 30, 10, 384, frag.VECTOR_CHUNK_SIZE)
    default = _file_size(tmp_path / "default.db", 30, 10, 384, None)
    assert small < 1_500_000 and default > 40_000_000


def test_vector_search_after_reopen_without_profile_uses_stored_profile(db_path: Path) -> None:
    b = SQLiteMemoryBackend(str(db_path), profile=PROFILE)
    ra = _memory(b, {"stored profile entry": NEAR}, "r")
    b.close_sync()
    b2 = SQLiteMemoryBackend(str(db_path))
    caps = run(b2.capabilities())
    assert caps.vector and caps.embedding_profile == PROFILE
    res = run(b2.search(MemorySearchRequest("zzz", (ra,), 5, "vector", QUERY)))
    assert [h.text for h in res.hits] == ["stored profile entry"]
    b2.close_sync()


def test_other_dimension_profile_cannot_write_into_the_table(db_path: Path) -> None:
    b = SQLiteMemoryBackend(str(db_path), profile=PROFILE)
    run(b.open())
    b.close_sync()
    with pytest.raises(ProfileMismatchError, match="dimension"):
        b2 = SQLiteMemoryBackend(str(db_path), profile=attrs.evolve(PROFILE, dimension=4))
        try:
            run(b2.open())
        finally:
            b2.close_sync()
