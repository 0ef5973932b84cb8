"""OceanBaseMemoryBackend against a real seekdb server (issue 3).

One seekdb per test session of this module (``tests/oceanbase_server.py``), a fresh
database per test that needs an empty one. With ``POWERCONTEXT_TEST_OCEANBASE_URL`` set
the same tests run against that server.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import multiprocessing
import os
import struct
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from oceanbase_server import fresh_database, race_writer, seekdb_available
from support.statement_faults import hook_statements

from powercontext.adapters.oceanbase import OceanBaseMemoryBackend
from powercontext.adapters.oceanbase import driver as obbackend
from powercontext.core import analyzer, canonical, planning
from powercontext.core.errors import (
    BackendError,
    CommitOutcomeUnknownError,
    InvalidInputError,
    RevisionConflictError,
)
from powercontext.core.models import (
    ArtifactRef,
    EmbeddingProfile,
    MemoryEntryInput,
    MemorySearchRequest,
)
from powercontext.core.plan import MemoryPlan
from powercontext.sql import oceanbase as obsql

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]

PROFILE = EmbeddingProfile("test-hash-8", "hash-embedder", 8)
TABLES = ("artifact_revisions", "artifact_heads", "memory_entry_versions",
          "memory_entry_heads", "sources")


# ---------------------------------------------------------------- fixtures and helpers


@pytest.fixture(scope="module")
def server_url(seekdb_url: str) -> Iterator[str]:
    yield seekdb_url


@pytest.fixture
def db_url(server_url: str) -> Iterator[str]:
    with fresh_database(server_url, "pc_ob") as url:
        yield url


def run(coro):
    return asyncio.run(coro)


def _connect(url: str):
    import MySQLdb

    p = urlsplit(url)
    return MySQLdb.connect(host=p.hostname, port=p.port, user=p.username or "root",
                           passwd=p.password or "", db=p.path.lstrip("/") or None,
                           charset="utf8mb4", autocommit=True)


def _counts(url: str) -> dict[str, int]:
    conn = _connect(url)
    try:
        cur = conn.cursor()
        out = {}
        for t in TABLES:
            cur.execute(f"SELECT COUNT(*) FROM {t}")
            out[t] = int(cur.fetchone()[0])
        return out
    finally:
        conn.close()


def new_id(prefix: str) -> str:
    return canonical.make_id(prefix, int(time.time() * 1000), os.urandom(10))


def embed(text: str, dim: int = 8) -> tuple[float, ...]:
    """A deterministic unit vector of the text (tests only)."""
    digest = hashlib.sha256(text.encode()).digest()
    raw = [struct.unpack_from(">h", digest, 2 * i)[0] / 32768.0 for i in range(dim)]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return tuple(x / norm for x in raw)


def near(axis: int, jitter: str, dim: int = 8) -> tuple[float, ...]:
    """A unit vector close to the ``axis`` unit vector."""
    noise = embed(jitter, dim)
    raw = [0.05 * n for n in noise]
    raw[axis] += 1.0
    norm = math.sqrt(sum(x * x for x in raw))
    return tuple(x / norm for x in raw)


async def _base(b: OceanBaseMemoryBackend, artifact_id: str | None) -> planning.MemoryBase | None:
    if artifact_id is None:
        return None
    head = await b.head(artifact_id)
    assert head is not None
    rev = await b.load_revision(head)
    versions = await b.load_entry_versions(head)
    return planning.MemoryBase(head, rev.content, versions)


async def remember(b: OceanBaseMemoryBackend, artifact_id: str | None, texts: list[str],
                   vectors: dict[str, tuple[float, ...]] | None = None) -> ArtifactRef:
    """Plan and commit an append of ``texts``; ``vectors`` maps text -> vector."""
    plan = planning.plan_remember(
        await _base(b, artifact_id), [MemoryEntryInput("fact", t) for t in texts],
        new_id=new_id)
    assert isinstance(plan, MemoryPlan)
    vecs = None
    if vectors is not None:
        vecs = {v.entry_version_id: vectors[v.text] for v in plan.new_versions}
    async with b.begin() as uow:
        return await uow.commit(plan, vecs)


def backend(url: str, profile: EmbeddingProfile | None = None) -> OceanBaseMemoryBackend:
    return OceanBaseMemoryBackend(url, profile=profile)


@contextlib.contextmanager
def opened(url: str, profile: EmbeddingProfile | None = None) -> Iterator[OceanBaseMemoryBackend]:
    b = backend(url, profile)
    try:
        yield b
    finally:
        b.close_sync()


# ---------------------------------------------------------------- schema and probes


def test_schema_is_idempotent_and_probes_report_the_server(db_url):
    with opened(db_url, PROFILE) as b:
        caps = run(b.capabilities())
        facts = b.probe_facts
    assert (caps.fts, caps.vector, caps.hybrid) == (True, True, True)
    assert caps.reasons == ()
    assert facts["ob_version"] >= obsql.MIN_VERSION
    assert facts["mode"] == "MYSQL"
    # seekdb's SPACE parser drops exactly the InnoDB stopword list, none of which
    # Analyzer v1 emits (otherwise a reason would be reported above).
    assert set(facts["space_parser_drops"]) == obsql.INNODB_STOPWORDS
    assert not [w for w in obsql.INNODB_STOPWORDS if analyzer.analyze(w)]
    assert "VECTOR(8)" in facts["heads_ddl"]
    assert "min_token_size=1" in facts["heads_ddl"]
    conn = _connect(db_url)
    try:
        cur = conn.cursor()
        cur.execute("SHOW TABLES")
        before = sorted(r[0] for r in cur.fetchall())
        with opened(db_url, PROFILE) as again:  # second open: no error, nothing new
            assert run(again.capabilities()).vector
        cur.execute("SHOW TABLES")
        assert sorted(r[0] for r in cur.fetchall()) == before
        assert not [t for t in before if t.startswith("powercontext_probe_")]
        cur.execute("SELECT `key`, `value` FROM powercontext_meta ORDER BY `key`")
        meta = dict(cur.fetchall())
    finally:
        conn.close()
    assert meta["schema_version"] == "1" and meta["analyzer_version"] == analyzer.DEFAULT_VERSION
    assert "analyzer" not in meta  # the ambiguous legacy key is no longer written
    assert json.loads(meta["embedding_profile"])["dimension"] == 8


def test_dimension_mismatch_turns_vectors_off_with_a_reason(db_url):
    with opened(db_url, None) as b:  # created without an embedding column
        caps = run(b.capabilities())
    assert (caps.fts, caps.vector) == (True, False)
    with opened(db_url, PROFILE) as b:
        caps = run(b.capabilities())
    assert caps.fts and not caps.vector
    assert any("no embedding column" in r for r in caps.reasons)


def test_url_parsing_rejects_other_schemes():
    u = obbackend.parse_url("oceanbase://alice:p%40ss@db.example:2883/mem")
    assert (u.user, u.password, u.host, u.port, u.database) == (
        "alice", "p@ss", "db.example", 2883, "mem")
    assert "p@ss" not in repr(u)
    for bad in ("sqlite:///x.db", "oceanbase://host:1/", "oceanbase:///db"):
        with pytest.raises(InvalidInputError):
            obbackend.parse_url(bad)


# ---------------------------------------------------------------- primitives


def test_write_read_revise_forget_reactivate_round_trip(db_url):
    with opened(db_url) as b:
        r1 = run(remember(b, None, ["Use uv to manage dependencies.", "Run make test."]))
        assert r1.revision == 1
        aid = r1.artifact_id
        assert run(b.head(aid)) == r1
        rev1 = run(b.load_revision(r1))
        assert [e.state for e in rev1.content.manifest.entries] == ["active", "active"]
        versions = run(b.load_entry_versions(r1))
        first = next(v for v in versions.values() if v.text == "Run make test.")
        # revise one entry: the predecessor FK and the version chain
        base = run(_base(b, aid))
        plan = planning.plan_remember(
            base, [MemoryEntryInput("fact", "Run make check.", entry=first)], new_id=new_id)
        assert isinstance(plan, MemoryPlan)

        async def commit(p):
            async with b.begin() as uow:
                return await uow.commit(p)

        r2 = run(commit(plan))
        v2 = run(b.load_entry_versions(r2, [first.entry_id]))[first.entry_id]
        assert (v2.version, v2.previous_version_id, v2.text) == (2, first.entry_version_id,
                                                                 "Run make check.")
        # forget deletes the head row; reactivate restores it
        base = run(_base(b, aid))
        r3 = run(commit(planning.plan_forget(base, [v2])))
        assert _counts(db_url)["memory_entry_heads"] == 1
        base = run(_base(b, aid))
        r4 = run(commit(planning.plan_reactivate(base, [v2])))
        assert r4.revision == 4 and _counts(db_url)["memory_entry_heads"] == 2
        changes = run(b.changes(r4, 0))
        assert [c.memory_ref.revision for c in changes] == [1, 2, 3, 4]
        assert [c.changes[0].op for c in changes[1:]] == ["revise", "deactivate", "reactivate"]
        assert r3.revision == 3


def test_sources_are_idempotent_and_journal_in_order(db_url):
    a = canonical.make_source("src_a", "file", "alpha ünïcode 中文", uri="file:///a",
                              metadata={"k": "v"})
    c = canonical.make_source("src_c", "user_note", "gamma")
    with opened(db_url) as b:
        assert run(b.put_sources([a, c])) == (1, 2)
        assert run(b.put_sources([c, a, c])) == (2, 1, 2)  # identical: kept once
        assert run(b.get_sources(["src_a"])) == (a,)
        assert run(b.journal(0, 10)) == ((1, a), (2, c))
        assert run(b.journal(1, 10)) == ((2, c),)
        with pytest.raises(InvalidInputError):
            run(b.put_sources([canonical.make_source("src_a", "file", "other")]))


def test_cas_counts_matched_rows_not_changed_rows(db_url):
    with opened(db_url) as b:
        ref = run(remember(b, None, ["one fact"]))
        aid = ref.artifact_id
        # Setting the head to the revision it already has changes no row but matches
        # one: mysqlclient's default would report 0 "affected" rows here.
        assert run(b._run(b._in_tx, True, b._cas_head_sync, aid, 1, 1)) is True
        assert run(b._run(b._in_tx, True, b._cas_head_sync, aid, 7, 1)) is False
        assert run(b._run(b._in_tx, True, b._cas_head_sync, "mem_art_missing", 1, 1)) is False
        assert run(b.head(aid)) == ref


def test_duplicate_revision_and_stale_base_are_conflicts(db_url):
    from powercontext.adapters.database import RevisionRow

    with opened(db_url) as b:
        ref = run(remember(b, None, ["one fact"]))
        rows = run(b._run(b._in_tx, False, b._memory_tables.rows.revision_rows,
                          ref.artifact_id, 0, 1))
        row = rows[0]
        with pytest.raises(RevisionConflictError):
            run(b._run(b._in_tx, True, b._insert_revision_sync,
                       RevisionRow(row.artifact_id, 1, row.family, row.content,
                                   row.content_hash, row.lineage)))
        base = run(_base(b, ref.artifact_id))
        plan_a = planning.plan_remember(base, [MemoryEntryInput("fact", "A")], new_id=new_id)
        plan_b = planning.plan_remember(base, [MemoryEntryInput("fact", "B")], new_id=new_id)

        async def commit(p):
            async with b.begin() as uow:
                return await uow.commit(p)

        assert run(commit(plan_a)).revision == 2
        before = _counts(db_url)
        with pytest.raises(RevisionConflictError):
            run(commit(plan_b))
        assert _counts(db_url) == before


def test_read_transaction_is_one_snapshot(db_url):
    with opened(db_url) as b:
        run(b.capabilities())
        other = _connect(db_url)
        try:
            def read_twice():
                first = b._meta_get_sync("analyzer_version")
                other.cursor().execute("UPDATE powercontext_meta SET `value` = 'changed' "
                                       "WHERE `key` = 'analyzer_version'")
                return first, b._meta_get_sync("analyzer_version")

            first, second = run(b._run(b._in_tx, False, read_twice))
            assert first == second == analyzer.DEFAULT_VERSION
            assert b._meta_get_sync("analyzer_version") == "changed"  # autocommit read: new value
        finally:
            other.close()


# ---------------------------------------------------------------- search


def _search(b, refs, query, mode="fts", vector=None, limit=10):
    return run(b.search(MemorySearchRequest(query, tuple(refs), limit, mode, vector)))


def test_fts_finds_short_latin_and_cjk_tokens_within_one_memory(db_url):
    long_word = "Достопримечательностьиисследованиепроекта"  # an 82-character token
    texts = ["go and ci run on db uv", "中文 搜索 很好", "日本語のテキスト", "한국어 텍스트",
             "mixed 中文 and go", "the of a", "résumé naïve café", f"{long_word} 𠀀𠀁 com www"]
    with opened(db_url) as b:
        mine = run(remember(b, None, texts))
        other = run(remember(b, None, texts))  # the same texts in another Memory

        def hits(q):
            return sorted(h.text for h in _search(b, [mine], q).hits)

        assert hits("go") == ["go and ci run on db uv", "mixed 中文 and go"]
        assert hits("db") == ["go and ci run on db uv"]
        assert hits("uv") == ["go and ci run on db uv"]
        assert hits("中文") == ["mixed 中文 and go", "中文 搜索 很好"]
        assert hits("テキスト") == ["日本語のテキスト"]
        assert hits("한국어") == ["한국어 텍스트"]
        assert hits("café") == ["résumé naïve café"]
        assert hits("the of a") == []
        assert max(len(t) for t in analyzer.analyze(long_word)) == 82
        assert hits(long_word) == [texts[-1]]
        assert hits("𠀁") == [texts[-1]]  # a supplementary-plane Han unigram
        assert hits("com www") == []  # InnoDB stopwords: Analyzer v1 drops them too
        for q in ('"unbalanced', "a AND b OR NOT c", "NEAR(a b)", "x" * 8192, "*", "50%"):
            _search(b, [mine], q)  # never a syntax error
        result = _search(b, [mine], "go")
        assert {h.memory_ref for h in result.hits} == {mine}
        both = _search(b, [mine, other], "go")
        assert {h.memory_ref for h in both.hits} == {mine, other}


def test_vector_search_is_filtered_per_memory_inside_the_index(db_url):
    crowd_texts = [f"crowd entry {i}" for i in range(60)]
    few_texts = [f"few entry {i}" for i in range(3)]
    vectors = {t: near(0, t) for t in crowd_texts}
    vectors.update({t: near(7, t) for t in few_texts})
    with opened(db_url, PROFILE) as b:
        crowd = run(remember(b, None, crowd_texts, vectors))
        few = run(remember(b, None, few_texts, vectors))
        query = near(0, "query")
        # The query sits in the crowd; the filtered search must still return every
        # entry of the small Memory (no over-fetch-then-filter loss).
        cands = run(b._run(b._in_tx, False, b.projection.vector_candidates,
                           [few.artifact_id], query, 32))
        assert sorted(c.entry_id for c in cands) == sorted(
            run(b.load_entry_versions(few)).keys())
        assert all(c.artifact_id == few.artifact_id for c in cands)
        cands = run(b._run(b._in_tx, False, b.projection.vector_candidates,
                           [crowd.artifact_id], query, 5))
        dists = [c.distance for c in cands]
        assert len(cands) == 5 and dists == sorted(dists)
        result = _search(b, [crowd], "crowd entry", mode="auto", vector=query, limit=5)
        assert result.mode == "hybrid" and len(result.hits) == 5
        assert all(h.memory_ref == crowd for h in result.hits)
        assert all("vector" in h.matched_by for h in result.hits)
        vec_only = _search(b, [few], "", mode="vector", vector=near(7, "q"), limit=10)
        assert sorted(h.text for h in vec_only.hits) == few_texts
    if not os.environ.get("POWERCONTEXT_TEST_OCEANBASE_URL"):
        # seekdb applies the Memory filter before the ANN scan, through the Memory key.
        lit = obsql.vector_literal(query)
        conn = _connect(db_url)
        try:
            cur = conn.cursor()
            cur.execute("EXPLAIN " + obsql.vector_search(1), (lit, few.artifact_id, lit, 32))
            plan = "\n".join(r[0] for r in cur.fetchall())
        finally:
            conn.close()
        assert "VECTOR INDEX" in plan and "PRE-FILTER" in plan, plan


def test_a_short_ann_answer_is_rerun_exactly(db_url, monkeypatch):
    """Simulate a post-filtering ANN plan that loses rows: the adapter notices the
    Memory holds more vectors than the approximate scan returned and rescans exactly."""
    texts = [f"entry {i}" for i in range(6)]
    vectors = {t: near(i % 8, t) for i, t in enumerate(texts)}
    real = obsql.vector_search
    seen = []

    def lossy(n, approximate=True):
        seen.append(approximate)
        sql = real(n, approximate)
        # the "index" loses all rows but one
        return f"SELECT * FROM ({sql}) AS lossy LIMIT 1" if approximate else sql

    with opened(db_url, PROFILE) as b:
        ref = run(remember(b, None, texts, vectors))
        monkeypatch.setattr(obsql, "vector_search", lossy)
        cands = run(b._run(b._in_tx, False, b.projection.vector_candidates,
                           [ref.artifact_id], near(0, "q"), 32))
    assert seen == [True, False]
    assert len(cands) == 6
    assert [c.distance for c in cands] == sorted(c.distance for c in cands)


def test_missing_vectors_make_auto_fall_back_to_fts(db_url):
    with opened(db_url, PROFILE) as b:
        ref = run(remember(b, None, ["no vector for this entry"]))  # no vectors given
        result = _search(b, [ref], "vector entry", mode="auto", vector=near(1, "x"))
        assert result.mode == "fts" and len(result.hits) == 1
        with pytest.raises(Exception, match="incomplete"):
            _search(b, [ref], "vector", mode="vector", vector=near(1, "x"))


# ---------------------------------------------------------------- faults and concurrency


class _KillAt(OceanBaseMemoryBackend):
    """Kills its own connection from a second session just before statement ``fail_at``
    of the next commit (a real server-side fault, not a simulated exception)."""

    fail_at: int | None = None
    seen: int = 0
    counting = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        hook_statements(self, self._hook)

    def _hook(self, sql, params, send):
        self._maybe_kill()
        return send()

    def _maybe_kill(self):
        if not self.counting:
            return
        self.seen += 1
        if self.seen == self.fail_at:
            self.ob_engine._cursor()  # connected
            killer = _connect(self._killer_url)
            try:
                killer.cursor().execute(f"KILL {int(self.ob_engine.connection.thread_id())}")
            finally:
                killer.close()



def _commit_counting(b: _KillAt, plan, vectors) -> None:
    async def go():
        b.counting = True
        b.seen = 0
        try:
            async with b.begin() as uow:
                await uow.commit(plan, vectors)
        finally:
            b.counting = False
    run(go())


def test_a_fault_at_each_statement_of_a_commit_leaves_nothing(db_url):
    texts = ["first fact about go", "second fact about db"]
    vectors = {t: near(i, t) for i, t in enumerate(texts)}
    with opened(db_url, PROFILE) as setup:
        ref = run(remember(setup, None, texts, vectors))
        base = run(_base(setup, ref.artifact_id))
    old = next(iter(base.versions.values()))
    plan = planning.plan_remember(
        base, [MemoryEntryInput("fact", "revised fact", entry=old),
               MemoryEntryInput("fact", "a brand new fact")], new_id=new_id)
    assert isinstance(plan, MemoryPlan)
    vecs = {v.entry_version_id: near(3, v.text) for v in plan.new_versions}
    b = _KillAt(db_url, profile=PROFILE)
    b._killer_url = db_url
    run(b.capabilities())
    before = _counts(db_url)
    outcomes = []
    # Statement 1 (sent with SET TRANSACTION and START: _exec_opening) on a dead
    # connection reconnects and goes on, so the faults start at statement 2; the loop
    # ends when fail_at passes the last statement.
    n = 2
    while True:
        b.fail_at = n
        try:
            _commit_counting(b, plan, vecs)
        except CommitOutcomeUnknownError:
            outcomes.append((n, "unknown"))
        except BackendError:
            outcomes.append((n, "lost"))
        else:
            break  # fail_at is past the last statement: the commit went through
        assert _counts(db_url) == before, f"statement {n} left rows behind"
        assert run(b.head(ref.artifact_id)) == ref
        n += 1
    total = b.seen
    b.close_sync()
    assert n == total + 1 >= 10, outcomes
    # the last statement is COMMIT: losing the connection there is "outcome unknown"
    assert outcomes[-1] == (total, "unknown")
    assert all(kind == "lost" for _, kind in outcomes[:-1])
    after = _counts(db_url)
    assert after["artifact_revisions"] == before["artifact_revisions"] + 1
    assert after["memory_entry_versions"] == before["memory_entry_versions"] + 2


def test_lock_waits_are_retried_and_never_conflicts(db_url, monkeypatch):
    monkeypatch.setattr(obbackend, "LOCK_TIMEOUT_US", 300_000)
    with opened(db_url) as b:
        ref = run(remember(b, None, ["locked fact"]))
        retried = []
        real = b._database_error

        def spy(exc):
            mapped = real(exc)
            retried.append(type(mapped).__name__)
            return mapped

        b._database_error = spy  # type: ignore[method-assign]
        holder = _connect(db_url)
        cur = holder.cursor()
        cur.execute("BEGIN")
        cur.execute("SELECT revision FROM artifact_heads WHERE artifact_id = %s FOR UPDATE",
                    (ref.artifact_id,))
        release = threading.Timer(0.8, lambda: holder.rollback())
        release.start()
        try:
            r2 = run(remember(b, ref.artifact_id, ["second fact"]))
        finally:
            release.join()
        assert r2.revision == 2
        assert "OceanBaseRetryableError" in retried and "RevisionConflictError" not in retried
        # a lock held past every retry: a BackendError, still not a conflict
        cur.execute("BEGIN")
        cur.execute("SELECT revision FROM artifact_heads WHERE artifact_id = %s FOR UPDATE",
                    (ref.artifact_id,))
        try:
            with pytest.raises(BackendError) as info:
                run(remember(b, ref.artifact_id, ["third fact"]))
            assert not isinstance(info.value, RevisionConflictError)
            assert "attempts" in str(info.value)
        finally:
            holder.rollback()
            holder.close()
        assert run(b.head(ref.artifact_id)) == r2


def test_processes_writing_from_the_same_base_exactly_one_wins(db_url):
    with opened(db_url) as b:
        ref = run(remember(b, None, ["seed fact"]))
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(3)
    results = ctx.Queue()
    texts = ["writer one", "writer two", "writer three"]
    procs = [ctx.Process(target=race_writer, args=(db_url, ref.artifact_id, t, barrier, results))
             for t in texts]
    for p in procs:
        p.start()
    outcomes = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(30)
    assert sorted(outcomes.values()) == ["conflict", "conflict", "won"], outcomes
    with opened(db_url) as b:
        head = run(b.head(ref.artifact_id))
        assert head.revision == 4
        texts_now = sorted(v.text for v in run(b.load_entry_versions(head)).values())
        assert texts_now == sorted(["seed fact", *texts])
        assert [c.memory_ref.revision for c in run(b.changes(head, 0))] == [1, 2, 3, 4]


def test_an_idle_connection_killed_by_the_server_reconnects(db_url):
    with opened(db_url) as b:
        ref = run(remember(b, None, ["survives a killed connection"]))
        killer = _connect(db_url)
        try:
            killer.cursor().execute(f"KILL {int(b.ob_engine.connection.thread_id())}")
        finally:
            killer.close()
        assert run(b.head(ref.artifact_id)) == ref  # BEGIN reconnected once
        assert run(remember(b, ref.artifact_id, ["and writes again"])).revision == 2


def test_concurrent_source_writers_get_unique_ascending_positions(db_url):
    with opened(db_url) as b:
        run(b.capabilities())  # schema
    errors: list[BaseException] = []

    def writer(tag: str) -> None:
        try:
            with opened(db_url) as w:
                for i in range(8):
                    src = canonical.make_source(f"src_{tag}_{i}", "file", f"{tag} {i}")
                    run(w.put_sources([src]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    with opened(db_url) as b:
        journal = run(b.journal(0, 100))
    assert [pos for pos, _ in journal] == list(range(1, 25))
    for tag in "abc":  # each writer's Sources appear in its own order
        mine = [s.source_id for _, s in journal if s.source_id.startswith(f"src_{tag}_")]
        assert mine == [f"src_{tag}_{i}" for i in range(8)]


# ------------------------------------------- an unknown COMMIT names what it planned


class _LoseCommitReply(OceanBaseMemoryBackend):
    """The connection dies around the next COMMIT: ``after`` lets the server run COMMIT
    and then loses the reply; ``before`` kills the session so COMMIT never runs."""

    when = "after"
    armed = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        hook_statements(self, self._hook, many=False)

    def _kill_own_session(self) -> None:
        killer = _connect(self._killer_url)
        try:
            killer.cursor().execute(f"KILL {int(self.ob_engine.connection.thread_id())}")
        finally:
            killer.close()

    def _hook(self, sql, params, send):
        if not (self.armed and sql == "COMMIT"):
            return send()
        import MySQLdb

        self.armed = False
        if self.when == "before":
            self._kill_own_session()
            return send()
        send()
        self._kill_own_session()
        raise MySQLdb.OperationalError(2013, "Lost connection to server during query "
                                             "(injected after the server ran COMMIT)")


def _unknown_commit(db_url: str, when: str):
    from powercontext.service import MemoryService

    b = _LoseCommitReply(db_url)
    b._killer_url = db_url
    b.when = when
    svc = MemoryService(b)
    run(b.capabilities())
    b.armed = True
    with pytest.raises(CommitOutcomeUnknownError) as info:
        run(svc.remember(None, entries=(MemoryEntryInput("fact", "uncertain commit"),)))
    return b, svc, info.value


def test_a_commit_lost_after_the_server_ran_it_names_the_new_memory(db_url):
    b, svc, err = _unknown_commit(db_url, "after")
    try:
        planned = err.planned
        assert isinstance(planned, ArtifactRef) and planned.revision == 1
        assert planned.artifact_id in str(err)
        assert run(svc.commit_landed(err)) is True  # reread on a fresh connection
        assert run(b.head(planned.artifact_id)) == planned
        assert run(b.load_revision(planned)).content_hash == err.content_hash
    finally:
        b.close_sync()


def test_a_commit_whose_session_died_first_names_a_memory_that_does_not_exist(db_url):
    b, svc, err = _unknown_commit(db_url, "before")
    try:
        assert isinstance(err.planned, ArtifactRef) and err.planned.revision == 1
        assert run(svc.commit_landed(err)) is False
        assert run(b.head(err.planned.artifact_id)) is None
        assert _counts(db_url)["artifact_revisions"] == 0
    finally:
        b.close_sync()


# ------------------------------------------- databases with the pre-spec hashes


def test_an_old_hash_format_database_is_refused_then_rehashed(db_url):
    from powercontext.adapters.database import HASH_FORMAT_KEY
    from powercontext.core.errors import UpgradeRequiredError

    with opened(db_url) as b:
        ref = None
        for i in range(3):
            ref = run(remember(b, None if ref is None else ref.artifact_id, [f"old fact {i}"]))
        bodies = {r: canonical.canonical_dumps(
            run(b.load_revision(ArtifactRef(ref.artifact_id, r))).content) for r in (1, 2, 3)}
    conn = _connect(db_url)
    try:
        cur = conn.cursor()
        for r, body in bodies.items():
            old = hashlib.sha256(b"powercontext:artifact-content:v1\x00" + body).hexdigest()
            cur.execute("UPDATE artifact_revisions SET content_hash = %s "
                        "WHERE artifact_id = %s AND revision = %s", (old, ref.artifact_id, r))
        cur.execute("DELETE FROM powercontext_meta WHERE `key` = %s", (HASH_FORMAT_KEY,))
    finally:
        conn.close()
    with opened(db_url) as b, pytest.raises(UpgradeRequiredError, match="rebuild --rehash"):
        run(b.load_revision(ref))
    with opened(db_url) as b:
        report = run(b.rehash())
        assert (report.rewritten, report.corrupt) == (3, [])
        for r, body in bodies.items():
            rev = run(b.load_revision(ArtifactRef(ref.artifact_id, r)))
            assert rev.content_hash == hashlib.sha256(body).hexdigest()
        assert run(b.rebuild()).corrupt == []
    with opened(db_url) as b:
        assert run(b.rehash()).already
