"""SQLiteMemoryBackend on real APSW + sqlite-vec files: open and probes, schema, each
primitive, reopen, profile fixing, error mapping (Memory RFC, "SQLite adapter")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import apsw
import attrs
import pytest

from powercontext.adapters.database import RevisionRow, VectorRow
from powercontext.adapters.sqlite import SQLiteMemoryBackend, parse_sqlite_url
from powercontext.adapters.sqlite import engine as backend_mod
from powercontext.adapters.sqlite.schema import SQLiteMemorySchema
from powercontext.core import analyzer, canonical
from powercontext.core.errors import (
    ArtifactNotFoundError,
    BackendError,
    CapabilityNotSupportedError,
    ProfileMismatchError,
    RevisionConflictError,
)
from powercontext.core.models import ArtifactRef, EmbeddingProfile, MemorySearchRequest
from powercontext.core.plan import ProjectionRow
from powercontext.sql import sqlite as frag

from .conftest import PROFILE, add, embed, forget, id_factory, plan_add, run


def _tables(path: Path) -> list[tuple[str, str, str]]:
    conn = apsw.Connection(str(path))
    try:
        return conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    finally:
        conn.close()


def _sync(backend: SQLiteMemoryBackend, fn, *args, write: bool = False):  # type: ignore[no-untyped-def]
    """Run primitives on the worker thread inside one transaction (committed)."""
    return run(backend._run(backend._in_tx, write, fn, *args))


# --------------------------------------------------------------------- urls


@pytest.mark.parametrize("given, expected", [
    ("/tmp/x.db", "/tmp/x.db"),
    ("rel/x.db", "rel/x.db"),
    ("sqlite:///abs/path.db", "/abs/path.db"),
    ("sqlite:////abs/path.db", "/abs/path.db"),
    ("sqlite:///:memory:", ":memory:"),
    (":memory:", ":memory:"),
])
def test_url_forms_give_the_file_apsw_opens(given: str, expected: str) -> None:
    assert parse_sqlite_url(given) == expected


@pytest.mark.parametrize("bad", ["", "mysql://h/db", "sqlite://relative.db", "sqlite:///"])
def test_bad_urls_raise_value_error(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_sqlite_url(bad)


# --------------------------------------------------------------------- open, probes, schema


def test_open_with_profile_reports_fts_vector_hybrid_and_wal(vec_backend: SQLiteMemoryBackend,
                                                             db_path: Path) -> None:
    caps = run(vec_backend.capabilities())
    assert (caps.fts, caps.vector, caps.hybrid) == (True, True, True)
    assert caps.embedding_profile == PROFILE and caps.reasons == ()
    names = {n for _, n, _ in _tables(db_path)}
    assert {"artifact_revisions", "artifact_heads", "sources", "memory_entry_versions",
            "memory_entry_heads", "powercontext_meta", frag.FTS_TABLE, frag.VECTOR_TABLE,
            "memory_entry_vector_metadata"} <= names
    conn = apsw.Connection(str(db_path))
    assert conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
    conn.close()
    assert _sync(vec_backend, vec_backend._meta_get_sync, "schema_version") == "1"
    assert _sync(vec_backend, vec_backend._meta_get_sync, "analyzer_version") == \
        analyzer.DEFAULT_VERSION
    assert _sync(vec_backend, vec_backend._meta_get_sync, "embedding_profile") == \
        canonical.canonical_dumps(PROFILE).decode()


def test_probes_leave_no_table_behind(vec_backend: SQLiteMemoryBackend) -> None:
    temp = run(vec_backend._run(lambda: vec_backend.sqlite_engine.rows(
        "SELECT name FROM sqlite_temp_master WHERE name LIKE 'pc_probe%'")))
    assert temp == []


def test_connection_pragmas_are_durable_with_foreign_keys(vec_backend: SQLiteMemoryBackend
                                                          ) -> None:
    def pragmas() -> tuple:
        return tuple(vec_backend.sqlite_engine.rows(f"PRAGMA {p}")[0][0]
                     for p in ("foreign_keys", "synchronous", "busy_timeout"))

    assert run(vec_backend._run(pragmas)) == (1, 2, 5000)  # synchronous FULL == 2


def test_open_without_profile_has_no_vector_tables(fts_backend: SQLiteMemoryBackend,
                                                   db_path: Path) -> None:
    caps = run(fts_backend.capabilities())
    assert (caps.fts, caps.vector, caps.hybrid, caps.embedding_profile) == (
        True, False, False, None)
    assert any("no embedding profile" in r for r in caps.reasons)
    names = {n for _, n, _ in _tables(db_path)}
    assert frag.VECTOR_TABLE not in names and "memory_entry_vector_metadata" not in names
    with pytest.raises(CapabilityNotSupportedError):
        _sync(fts_backend, fts_backend.projection.vector_projection, "x")


def test_schema_creation_is_idempotent(db_path: Path) -> None:
    for _ in range(3):
        b = SQLiteMemoryBackend(str(db_path), profile=PROFILE)
        run(b.open())
        b.close_sync()
        if _ == 0:
            first = _tables(db_path)
    assert _tables(db_path) == first
    b = SQLiteMemoryBackend(str(db_path), profile=PROFILE)
    assert _sync(b, b._meta_get_sync, "schema_version") == "1"
    b.close_sync()


def test_old_sqlite_is_refused(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend_mod.apsw, "sqlite_lib_version", lambda: "3.37.2")
    b = SQLiteMemoryBackend(str(db_path))
    with pytest.raises(BackendError, match=r"3\.43\.0 or newer for FTS5 contentless-delete"):
        run(b.open())
    b.close_sync()
    assert not db_path.exists()  # refused before anything was created


@pytest.mark.parametrize("version", ["3.42.0", "3.40.1", "3.38.0"])
def test_sqlite_without_contentless_delete_fts5_gets_the_typed_error(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    # 3.38 <= version < 3.43 has vec0's APIs but not contentless-delete FTS5
    monkeypatch.setattr(backend_mod, "sqlite_version", lambda: version)
    b = SQLiteMemoryBackend(str(db_path))
    with pytest.raises(BackendError) as info:
        run(b.open())
    b.close_sync()
    message = str(info.value)
    assert f"SQLite {version} is too old" in message
    assert "3.43.0" in message and "contentless-delete" in message
    assert not db_path.exists()


def test_sqlite_version_gate_is_the_newest_feature_it_uses() -> None:
    assert backend_mod.MIN_SQLITE_VERSION == (3, 43, 0)
    backend_mod.check_sqlite_version("3.43.0")
    backend_mod.check_sqlite_version(backend_mod.sqlite_version())


def test_unknown_schema_version_is_refused(fts_backend: SQLiteMemoryBackend,
                                           db_path: Path) -> None:
    _sync(fts_backend, fts_backend._meta_set_sync, "schema_version", "99", write=True)
    fts_backend.close_sync()
    b = SQLiteMemoryBackend(str(db_path))
    with pytest.raises(BackendError, match="schema version 99"):
        run(b.open())
    b.close_sync()


def test_probes_fail_honestly_when_vec0_is_broken(db_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # A vec0 probe that finds the wrong rows must not claim vector capability.
    monkeypatch.setattr(SQLiteMemorySchema, "_probe_vec",
                        lambda self, reasons: reasons.append("vec0 probe failed: test") or False)
    b = SQLiteMemoryBackend(str(db_path), profile=PROFILE)
    caps = run(b.capabilities())
    assert (caps.fts, caps.vector, caps.hybrid) == (True, False, False)
    assert "vec0 probe failed: test" in caps.reasons
    b.close_sync()


def test_memory_url_works_on_one_connection() -> None:
    b = SQLiteMemoryBackend("sqlite:///:memory:", profile=PROFILE)
    ref = run(add(b, None, ["in memory works"], id_factory()))
    assert run(b.head(ref.artifact_id)) == ref
    b.close_sync()


# --------------------------------------------------------------------- reopen and profile


def test_reopen_persists_everything(db_path: Path) -> None:
    nid = id_factory()
    b = SQLiteMemoryBackend(str(db_path), profile=PROFILE)
    src = canonical.make_source("src_reopen", "user_note", "uv is our package manager")
    run(b.put_sources([src]))
    ref = run(add(b, None, ["we use uv for packaging"], nid, sources=[src]))
    ref = run(add(b, ref, ["tests run under pytest"], nid))
    before = run(b.load_revision(ref))
    b.close_sync()
    b2 = SQLiteMemoryBackend(f"sqlite://{db_path}", profile=PROFILE)
    assert run(b2.head(ref.artifact_id)) == ref
    assert run(b2.load_revision(ref)) == before
    assert run(b2.get_sources(["src_reopen"])) == (src,)
    res = run(b2.search(MemorySearchRequest("packaging", (ref,), 5, "hybrid",
                                            embed("we use uv for packaging"))))
    assert res.hits[0].text == "we use uv for packaging"
    assert res.mode == "hybrid"
    b2.close_sync()


def test_reopen_with_another_profile_raises_profile_mismatch(db_path: Path) -> None:
    b = SQLiteMemoryBackend(str(db_path), profile=PROFILE)
    run(b.open())
    b.close_sync()
    other = attrs.evolve(PROFILE, dimension=16, profile_id="other")
    b2 = SQLiteMemoryBackend(str(db_path), profile=other)
    with pytest.raises(ProfileMismatchError, match="other"):
        run(b2.open())
    b2.close_sync()
    # the stored profile and vector table are untouched
    b3 = SQLiteMemoryBackend(str(db_path))
    caps = run(b3.capabilities())
    assert caps.embedding_profile == PROFILE and caps.vector is True
    b3.close_sync()


def test_profile_is_stored_when_a_plain_database_first_gets_one(db_path: Path) -> None:
    nid = id_factory()
    b = SQLiteMemoryBackend(str(db_path))
    ref = run(add(b, None, ["plain first"], nid))
    b.close_sync()
    b2 = SQLiteMemoryBackend(str(db_path), profile=PROFILE)
    caps = run(b2.capabilities())
    assert caps.vector is True
    # the old entry has no vector: auto falls back to fts, explicit vector is refused
    req = MemorySearchRequest("plain", (ref,), 5, "auto", embed("plain first"))
    assert run(b2.search(req)).mode == "fts"
    with pytest.raises(CapabilityNotSupportedError, match="incomplete"):
        run(b2.search(attrs.evolve(req, mode="vector")))
    b2.close_sync()


def test_profile_is_not_a_supported_l2_metric(db_path: Path) -> None:
    cosine = EmbeddingProfile("cos", "m", 8, distance="cosine")
    b = SQLiteMemoryBackend(str(db_path), profile=cosine)
    caps = run(b.capabilities())
    assert caps.vector is False and any("L2" in r for r in caps.reasons)
    b.close_sync()


# --------------------------------------------------------------------- primitives


def test_revision_head_and_cas_primitives(vec_backend: SQLiteMemoryBackend) -> None:
    content = b'{"x":1}'
    row = RevisionRow("art_p", 1, "memory", content, "c" * 64, b'{"artifacts":[],"sources":[]}')
    b = vec_backend

    def write() -> tuple:
        b._insert_revision_sync(row)
        b._insert_revision_sync(attrs.evolve(row, revision=2, content=b'{"x":2}'))
        b._insert_head_sync("art_p", 1)
        ok1 = b._cas_head_sync("art_p", 1, 2)
        ok2 = b._cas_head_sync("art_p", 1, 2)  # base is stale now
        return ok1, ok2

    assert _sync(b, write, write=True) == (True, False)
    assert _sync(b, b._memory_tables.rows.head, "art_p") == 2
    assert _sync(b, b._memory_tables.rows.head, "nope") is None
    rows = _sync(b, b._memory_tables.rows.revision_rows, "art_p", 0, 2)
    assert [(r.revision, r.content) for r in rows] == [(1, b'{"x":1}'), (2, b'{"x":2}')]
    assert rows[0] == row  # byte-identical content and lineage
    assert _sync(b, b._memory_tables.rows.revision_rows, "art_p", 1, 2)[0].revision == 2
    with pytest.raises(RevisionConflictError):
        _sync(b, b._insert_revision_sync, row, write=True)
    with pytest.raises(RevisionConflictError):
        _sync(b, b._insert_head_sync, "art_p", 1, write=True)


def test_zlib_content_encoding_reads_back(vec_backend: SQLiteMemoryBackend) -> None:
    import zlib

    b = vec_backend
    body = b'{"big":"' + b"a" * 1000 + b'"}'

    def write() -> None:
        b.sqlite_engine.execute("revision_insert", ["art_z", 1, "memory", "zlib",
                                                    zlib.compress(body), "d" * 64, "{}"])

    _sync(b, write, write=True)
    (row,) = _sync(b, b._memory_tables.rows.revision_rows, "art_z", 0, 1)
    # the adapter returns the stored encoding; the SPI's revision codec decodes it
    assert (row.encoding, zlib.decompress(row.content)) == ("zlib", body)


def test_entry_versions_round_trip_with_jcs_refs(vec_backend: SQLiteMemoryBackend) -> None:
    nid = id_factory()
    b = vec_backend
    src = canonical.make_source("src_ev", "file", "content", uri="file:///a")
    run(b.put_sources([src]))
    ref = run(add(b, None, ["entry with evidence", "plain entry"], nid, sources=[src]))
    versions = run(b.load_entry_versions(ref))
    ids = [v.entry_version_id for v in versions.values()]
    got = _sync(b, b._memory_tables.rows.entry_versions, [*ids, "missing_id", ids[0]])
    assert {v.entry_version_id: v for v in got} == {v.entry_version_id: v
                                                     for v in versions.values()}
    assert all(v.sources == (src.ref,) for v in got)
    raw = _sync(b, lambda: b.sqlite_engine.rows(
        'SELECT source_refs, artifact_refs FROM memory_entry_versions LIMIT 1'))
    assert raw[0] == (canonical.source_refs_bytes((src.ref,)).decode(), "[]")
    many = _sync(b, b._memory_tables.rows.entry_versions, [f"x{i}" for i in range(600)] + ids)
    assert len(many) == 2  # chunked IN lists find them among 600 misses


def test_projection_primitives_write_and_delete_heads_fts_and_vectors(
        vec_backend: SQLiteMemoryBackend) -> None:
    nid = id_factory()
    b = vec_backend
    ref = run(add(b, None, ["alpha beta", "gamma delta"], nid))
    assert _counts(b) == (2, 2, 2, 2)
    versions = run(b.load_entry_versions(ref))
    first = min(versions)
    _sync(b, b.projection.delete_projections, ref.artifact_id, [first], write=True)
    assert _counts(b) == (1, 1, 1, 1)
    v = versions[first]
    pr = ProjectionRow(v.entry_id, v.entry_version_id, v.entry_content_hash,
                       analyzer.searchable_text(v.text), v.text)
    vr = VectorRow(canonical.embedding_content_hash(PROFILE, v.entry_content_hash),
                   embed(v.text))
    _sync(b, b.projection.insert_projections, ref.artifact_id, 1, [pr], [vr], write=True)
    assert _counts(b) == (2, 2, 2, 2)
    proj = dict(_sync(b, b.projection.vector_projection, ref.artifact_id))
    assert proj[v.entry_content_hash] == vr.embedding_content_hash
    _sync(b, b.projection.insert_projections, "art_none", 1, [], [], write=True)
    _sync(b, b.projection.delete_projections, ref.artifact_id, ["not_there"], write=True)
    assert _counts(b) == (2, 2, 2, 2)


def _counts(b: SQLiteMemoryBackend) -> tuple[int, int, int, int]:
    def q() -> tuple[int, int, int, int]:
        one = lambda sql: b.sqlite_engine.rows(sql)[0][0]  # noqa: E731
        return (one("SELECT count(*) FROM memory_entry_heads"),
                one(f"SELECT count(*) FROM {frag.FTS_TABLE}"),
                one("SELECT count(*) FROM memory_entry_vector_metadata"),
                one(f"SELECT count(*) FROM {frag.VECTOR_TABLE}"))
    return run(b._run(q))


def test_fts_candidates_filter_by_memory_inside_the_index(fts_backend: SQLiteMemoryBackend
                                                          ) -> None:
    nid = id_factory()
    b = fts_backend
    r1 = run(add(b, None, ["sqlite wal mode", "redis cache"], nid))
    r2 = run(add(b, None, ["sqlite wal checkpoint", "sqlite vacuum"], nid))
    c1 = _sync(b, b.projection.fts_candidates, [r1.artifact_id], ["sqlite", "wal"], 10)
    assert [c.searchable_text for c in c1] == ["sqlite wal mode"]
    both = _sync(b, b.projection.fts_candidates, [r1.artifact_id, r2.artifact_id], ["sqlite"], 10)
    assert sorted(c.artifact_id for c in both) == sorted([r1.artifact_id] + [r2.artifact_id] * 2)
    first = _sync(b, b.projection.fts_candidates, [r2.artifact_id], ["sqlite"], 1)
    assert first[0].artifact_id == r2.artifact_id
    # best first: two matched terms outrank one
    ranked = _sync(b, b.projection.fts_candidates, [r2.artifact_id], ["wal", "checkpoint"], 10)
    assert ranked[0].searchable_text == "sqlite wal checkpoint"
    assert _sync(b, b.projection.fts_candidates, [r1.artifact_id], ["x_c3a9"], 10) == []


def test_fts_limit_is_not_consumed_by_other_memories(fts_backend: SQLiteMemoryBackend) -> None:
    # Memory B has 30 rows that outrank A's only row; a filter applied after LIMIT
    # would return nothing for A.
    nid = id_factory()
    b = fts_backend
    ra = run(add(b, None, ["sqlite is one of many long words in this entry here"], nid))
    run(add(b, None, [f"sqlite {i}" for i in range(30)], nid))
    got = _sync(b, b.projection.fts_candidates, [ra.artifact_id], ["sqlite"], 3)
    assert [c.artifact_id for c in got] == [ra.artifact_id]


def test_underscore_tokens_stay_whole_in_fts(fts_backend: SQLiteMemoryBackend) -> None:
    nid = id_factory()
    b = fts_backend
    ref = run(add(b, None, ["中文 café", "plain words"], nid))
    terms = analyzer.query_terms("中文")
    assert "b_4e2d_6587" in terms
    hits = _sync(b, b.projection.fts_candidates, [ref.artifact_id], ["b_4e2d_6587"], 5)
    assert len(hits) == 1
    # "b" alone is not a token of the entry: no partial match inside b_4e2d_6587
    assert _sync(b, b.projection.fts_candidates, [ref.artifact_id], ["b"], 5) == []
    res = run(b.search(MemorySearchRequest("café", (ref,), 5, "fts")))
    assert [h.text for h in res.hits] == ["中文 café"]


def test_sources_primitives_keep_one_copy_and_journal_order(fts_backend: SQLiteMemoryBackend
                                                            ) -> None:
    b = fts_backend
    s1 = canonical.make_source("s1", "user_note", "one", metadata={"b": "2", "a": "1"})
    s2 = canonical.make_source("s2", "file", "two", uri="file:///two")
    assert run(b.put_sources([s1, s2, s1])) == (1, 2, 1)
    assert run(b.put_sources([s2])) == (2,)
    assert run(b.get_sources(["s2", "s1"])) == (s2, s1)
    assert run(b.journal(0, 10)) == ((1, s1), (2, s2))
    assert run(b.journal(1, 10)) == ((2, s2),)
    with pytest.raises(ArtifactNotFoundError):
        run(b.get_sources(["nope"]))
    with pytest.raises(ValueError):
        run(b.put_sources([attrs.evolve(s1, content="changed",
                                        content_hash=canonical.source_content_hash(
                                            s1.kind, "changed", s1.uri, s1.metadata))]))


def test_meta_set_and_delete(fts_backend: SQLiteMemoryBackend) -> None:
    b = fts_backend
    _sync(b, b._meta_set_sync, "writes_paused", "rebuild", write=True)
    assert _sync(b, b._meta_get_sync, "writes_paused") == "rebuild"
    _sync(b, b._meta_set_sync, "writes_paused", "again", write=True)
    assert _sync(b, b._meta_get_sync, "writes_paused") == "again"
    _sync(b, b._meta_set_sync, "writes_paused", None, write=True)
    assert _sync(b, b._meta_get_sync, "writes_paused") is None


def test_stale_base_commit_is_a_revision_conflict(vec_backend: SQLiteMemoryBackend) -> None:
    nid = id_factory()
    b = vec_backend
    ref = run(add(b, None, ["first"], nid))
    stale = run(plan_add(b, ref, ["second"], nid))
    run(add(b, ref, ["third"], nid))
    with pytest.raises(RevisionConflictError):
        run(_commit(b, stale))
    assert run(b.head(ref.artifact_id)) == ArtifactRef(ref.artifact_id, 2)


async def _commit(b: SQLiteMemoryBackend, plan):  # type: ignore[no-untyped-def]
    async with b.begin() as uow:
        return await uow.commit(plan)


def test_forget_removes_projection_and_search_hits(vec_backend: SQLiteMemoryBackend) -> None:
    nid = id_factory()
    b = vec_backend
    ref = run(add(b, None, ["postgres is not used", "sqlite is used"], nid))
    versions = run(b.load_entry_versions(ref))
    pg = next(e for e, v in versions.items() if v.text.startswith("postgres"))
    ref2 = run(forget(b, ref, [pg]))
    assert _counts(b) == (1, 1, 1, 1)
    res = run(b.search(MemorySearchRequest("postgres", (ref2,), 5, "fts")))
    assert res.hits == ()


def test_busy_writer_gets_database_is_locked(db_path: Path) -> None:
    b = SQLiteMemoryBackend(str(db_path), busy_timeout_ms=100)
    run(b.open())
    other = apsw.Connection(str(db_path))
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(BackendError, match="database is locked"):
            run(add(b, None, ["blocked"], id_factory()))
    finally:
        other.execute("ROLLBACK")
        other.close()
    ref = run(add(b, None, ["unblocked"], id_factory("u")))
    assert ref.revision == 1
    b.close_sync()


def test_database_error_mapping(fts_backend: SQLiteMemoryBackend) -> None:
    b = fts_backend
    conflict = apsw.ConstraintError(
        "UNIQUE constraint failed: artifact_revisions.artifact_id, artifact_revisions.revision")
    assert isinstance(b._database_error(conflict), RevisionConflictError)
    # every other SQLite error is typed too (never a raw apsw exception), not a conflict
    for other in (apsw.ConstraintError("FOREIGN KEY constraint failed"),
                  apsw.ConstraintError("UNIQUE constraint failed: sources.source_id"),
                  apsw.SQLError("no such table: x")):
        mapped = b._database_error(other)
        assert isinstance(mapped, BackendError) and not isinstance(mapped, RevisionConflictError)
    locked = b._database_error(apsw.BusyError("database is locked"))
    assert isinstance(locked, BackendError) and "locked" in str(locked)
    assert b._database_error(RuntimeError("x")) is None


def test_close_is_idempotent_and_reopens(fts_backend: SQLiteMemoryBackend) -> None:
    b = fts_backend
    run(b.open())
    b.close_sync()
    b.close_sync()
    assert asyncio.run(b.head("nothing")) is None


def test_reopening_needs_no_write_lock(db_path: Path) -> None:
    nid = id_factory()
    b = SQLiteMemoryBackend(str(db_path), profile=PROFILE)
    ref = run(add(b, None, ["readable while locked"], nid))
    b.close_sync()
    other = apsw.Connection(str(db_path))
    other.execute("BEGIN IMMEDIATE")  # a long writer holds the write lock
    try:
        b2 = SQLiteMemoryBackend(str(db_path), profile=PROFILE, busy_timeout_ms=50)
        assert run(b2.head(ref.artifact_id)) == ref
        assert run(b2.capabilities()).vector is True
        with pytest.raises(BackendError, match="database is locked"):
            run(add(b2, ref, ["but writes wait"], nid))
        b2.close_sync()
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_fts_index_stays_in_few_segments_over_many_small_commits(
        fts_backend: SQLiteMemoryBackend) -> None:
    # Every commit adds an FTS5 segment; the merge after each projection write keeps
    # their number low (a MATCH looks each term up in every segment). FTS5's automerge
    # alone left one segment per commit here (40 commits -> 16 or more).
    nid = id_factory()
    b = fts_backend
    ref = None
    for i in range(40):
        ref = run(add(b, ref, [f"sqlite wal note {i}"], nid))
    segments = _sync(b, lambda: b.sqlite_engine.rows(
        f"SELECT count(DISTINCT segid) FROM {frag.FTS_TABLE}_idx")[0][0])
    assert segments <= 6
    assert ref is not None
    hits = _sync(b, b.projection.fts_candidates, [ref.artifact_id], ["note"], 50)
    assert len(hits) == 40
    _sync(b, lambda: b.sqlite_engine.rows(frag.statement("fts_integrity_check")), write=True)
