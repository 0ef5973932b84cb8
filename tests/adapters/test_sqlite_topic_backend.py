"""SQLiteTopicBackend on real APSW + sqlite-vec files: publication, exact get, search,
Scopes, bad input (Topic Memory RFC, "Storage, Head, and atomic activation", "Detail
chunks and deployment-enabled retrieval channels", "HTTP API"; TOPIC-MEMORY.md)."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.core.errors import (
    ArtifactNotFoundError,
    IntegrityError,
    InvalidInputError,
    RevisionConflictError,
)
from powercontext.core.models import ArtifactRef
from powercontext.core.topic.models import (
    CHANNELS_FTS,
    PublicationGuards,
    TopicPublication,
    TopicRef,
    TopicSearchRequest,
)

from .topic_helpers import (
    OTHER,
    SCOPE,
    check_consistent,
    connect,
    create,
    needs_topic_core,
    publish,
    run,
    seed,
    snapshot,
    source,
    update,
)

UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
DETAIL = ("# Write-ahead log\n\nThe WAL keeps readers on one snapshot while a writer "
          "appends pages.\n\n## Checkpoints\n\nA checkpoint copies pages back into the "
          "database file.")

pytestmark = needs_topic_core


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "topics.db"


async def _first(b: SQLiteTopicBackend, scope: str = SCOPE, title: str = "SQLite WAL mode"):
    src = source(f"first-{abs(hash((scope, title)))}")
    await seed(b, src)
    analyzer = await b.analyzer()
    [rev] = await publish(b, create(analyzer, title, "How WAL mode keeps readers apart",
                                    DETAIL, [src], scope=scope))
    return rev, src


def test_create_then_get_returns_the_exact_revision_with_database_utc_time(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            rev, src = await _first(b)
            got = await b.get(SCOPE, rev.ref)
            assert got == rev
            assert got.ref.revision == 1 and got.based_on is None
            assert got.content.detail == DETAIL and got.sources[0].source_id == src.source_id
            assert UTC.match(got.published_at), got.published_at
            assert (await b.heads(SCOPE)) == (rev.ref,)
            caps = await b.topic_capabilities()
            assert caps.shape is not None and caps.shape.kind == "fts"
            assert caps.channels == CHANNELS_FTS
        finally:
            await b.close()
    run(go())
    check_consistent(path)


def test_a_historical_revision_keeps_its_own_published_at_and_lineage(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            rev1, src = await _first(b)
            src2 = source("second")
            await seed(b, src2)
            an = await b.analyzer()
            [rev2] = await publish(b, update(an, rev1.ref, "SQLite WAL mode",
                                             "Checkpoints and readers", DETAIL + "\n\nMore.",
                                             [src, src2]))
            assert rev2.ref == TopicRef(rev1.ref.artifact_id, 2)
            old, new = await b.get(SCOPE, rev1.ref), await b.get(SCOPE, rev2.ref)
            assert old == rev1 and new == rev2 and new.based_on == rev1.ref
            assert new.published_at >= old.published_at
            assert (await b.heads(SCOPE)) == (rev2.ref,)
        finally:
            await b.close()
    run(go())
    check_consistent(path)


def test_get_of_an_unknown_or_foreign_ref_is_not_found(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            rev, _ = await _first(b)
            with pytest.raises(ArtifactNotFoundError):
                await b.get(OTHER, rev.ref)  # another Scope: never leaked
            with pytest.raises(ArtifactNotFoundError):
                await b.get(SCOPE, TopicRef(rev.ref.artifact_id, 2))
            with pytest.raises(ArtifactNotFoundError):
                await b.get(SCOPE, TopicRef("topic_art_unknown", 1))
            assert (await b.heads(OTHER)) == ()
        finally:
            await b.close()
    run(go())


@pytest.mark.parametrize("ref", [
    TopicRef("topic_art_x", 1, family="memory"), TopicRef("topic_art_x", 0),
    TopicRef("topic_art_x", -1), TopicRef("topic_art_x", True),  # type: ignore[arg-type]
    ArtifactRef("topic_art_x", 1), None])
def test_get_refuses_a_bad_ref(path: Path, ref: object) -> None:
    b = SQLiteTopicBackend(str(path))
    with pytest.raises(InvalidInputError):
        run(b.get(SCOPE, ref))  # type: ignore[arg-type]
    b.close_sync()


@pytest.mark.parametrize("scope", ["", "x" * 257, "a\nb", 7])
def test_bad_scope_ids_are_refused_by_every_read(path: Path, scope: object) -> None:
    b = SQLiteTopicBackend(str(path))
    with pytest.raises(InvalidInputError, match="scope_id"):
        run(b.get(scope, TopicRef("topic_art_x", 1)))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="scope_id"):
        run(b.heads(scope))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="scope_id"):
        run(b.search(TopicSearchRequest(scope, "wal")))  # type: ignore[arg-type]
    b.close_sync()


def test_a_stale_update_is_a_revision_conflict_and_writes_nothing(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            rev1, src = await _first(b)
            an = await b.analyzer()
            await publish(b, update(an, rev1.ref, "T", "second", "d2", [src]))
            before = snapshot(path)
            with pytest.raises(RevisionConflictError):
                await publish(b, update(an, rev1.ref, "T", "late", "d3", [src]))
            # a CREATE under an id that exists is a conflict too
            with pytest.raises(RevisionConflictError):
                await publish(b, create(an, "T", "s", "d", [src],
                                        artifact_id=rev1.ref.artifact_id))
            assert snapshot(path) == before
        finally:
            await b.close()
    run(go())
    check_consistent(path)


def test_an_update_in_another_scope_or_of_no_topic_is_refused(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            rev1, src = await _first(b)
            an = await b.analyzer()
            before = snapshot(path)
            with pytest.raises(InvalidInputError, match="base"):
                await publish(b, update(an, rev1.ref, "T", "s", "d", [src], scope=OTHER))
            with pytest.raises(InvalidInputError, match="base"):
                await publish(b, update(an, TopicRef("topic_art_nothing", 1), "T", "s", "d",
                                        [src]))
            assert snapshot(path) == before
        finally:
            await b.close()
    run(go())


def test_a_lineage_source_must_be_stored_with_its_hash(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            _rev1, src = await _first(b)
            an = await b.analyzer()
            before = snapshot(path)
            with pytest.raises(InvalidInputError, match="sources"):
                await publish(b, create(an, "T", "s", "d", [source("never-stored")]))
            forged = attrs.evolve(source("never-stored"), source_id=src.source_id)
            with pytest.raises(InvalidInputError, match="sources"):
                await publish(b, create(an, "T", "s", "d", [forged]))
            # a batch is all or nothing: a good write beside a bad one is not written
            with pytest.raises(InvalidInputError, match="sources"):
                await publish(b, create(an, "T", "s", "d", [src]),
                              create(an, "U", "s", "d", [source("never-stored")]))
            assert snapshot(path) == before
        finally:
            await b.close()
    run(go())


def test_a_forged_projection_is_refused_before_anything_is_written(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            _rev1, src = await _first(b)
            an = await b.analyzer()
            before = snapshot(path)
            good = create(an, "T", "s", DETAIL, [src])
            p = good.projection
            forged = [
                attrs.evolve(p, chunks=p.chunks[:-1]),
                attrs.evolve(p, topic_text=p.topic_text + " extra"),
                attrs.evolve(p, chunks=(attrs.evolve(p.chunks[0], fts_text="forged"),
                                        *p.chunks[1:])),
                attrs.evolve(p, topic_vector=(1.0,) + (0.0,) * 7),
            ]
            for proj in forged:
                with pytest.raises(IntegrityError):
                    await publish(b, attrs.evolve(good, projection=proj))
            assert snapshot(path) == before
        finally:
            await b.close()
    run(go())


def test_a_supervisor_guard_or_a_malformed_guard_is_refused(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            src = source("g")
            await seed(b, src)
            an = await b.analyzer()
            w = create(an, "T", "s", "d", [src])
            with pytest.raises(InvalidInputError, match=r"guards\.supervisor"):
                await b.publish(TopicPublication((w,), PublicationGuards(supervisor=object())))
            with pytest.raises(InvalidInputError, match=r"guards\.cursor"):
                await b.publish(TopicPublication((w,), PublicationGuards(cursor=object())))
            with pytest.raises(InvalidInputError, match="publication"):
                await b.publish((w,))  # type: ignore[arg-type]
            assert await b.heads(SCOPE) == ()
        finally:
            await b.close()
    run(go())


def test_search_finds_title_and_detail_with_matched_by_and_a_snippet(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            rev, _ = await _first(b)
            await _first(b, title="Unrelated gardening notes")
            res = await b.search(TopicSearchRequest(SCOPE, "checkpoint pages"))
            assert res.channels == CHANNELS_FTS
            assert [h.ref for h in res.hits][:1] == [rev.ref]
            hit = res.hits[0]
            assert hit.title == "SQLite WAL mode" and "detail_fts" in hit.matched_by
            assert hit.snippet is not None and "heckpoint" in hit.snippet
            title_only = await b.search(TopicSearchRequest(SCOPE, "sqlite"))
            assert [h.ref for h in title_only.hits] == [rev.ref]
            assert title_only.hits[0].matched_by == ("topic_fts",)
            # another Scope sees nothing of this one
            assert (await b.search(TopicSearchRequest(OTHER, "checkpoint"))).hits == ()
            # FTS syntax is plain text; CJK is searchable; no terms is bad input
            await b.search(TopicSearchRequest(SCOPE, 'NEAR(wal "x" OR *'))
            await b.search(TopicSearchRequest(SCOPE, "日本語のテキスト"))
            for empty in ("the of a", "", "  ", "?!"):
                with pytest.raises(InvalidInputError, match="query"):
                    await b.search(TopicSearchRequest(SCOPE, empty))
        finally:
            await b.close()
    run(go())


@pytest.mark.parametrize("limit", [0, 21, True, "10", 2.0])
def test_search_refuses_a_bad_limit(path: Path, limit: object) -> None:
    b = SQLiteTopicBackend(str(path))
    with pytest.raises(InvalidInputError, match="limit"):
        run(b.search(TopicSearchRequest(SCOPE, "wal", limit)))  # type: ignore[arg-type]
    b.close_sync()


@pytest.mark.parametrize("query", ["x" * 8193, " ".join(f"w{i}" for i in range(65)),
                                   "bad \ud800 surrogate", 5])
def test_search_refuses_a_query_over_the_bounds(path: Path, query: object) -> None:
    b = SQLiteTopicBackend(str(path))
    with pytest.raises(InvalidInputError, match="query"):
        run(b.search(TopicSearchRequest(SCOPE, query)))  # type: ignore[arg-type]
    b.close_sync()


def test_an_fts_only_search_refuses_a_query_vector(path: Path) -> None:
    b = SQLiteTopicBackend(str(path))
    with pytest.raises(InvalidInputError, match="query_vector"):
        run(b.search(TopicSearchRequest(SCOPE, "wal"), (1.0,) + (0.0,) * 7))
    b.close_sync()


def test_an_update_replaces_the_active_rows_and_their_fts_rows(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            rev1, src = await _first(b)
            an = await b.analyzer()
            [rev2] = await publish(b, update(an, rev1.ref, "Rollback journals",
                                             "Before WAL", "Journals copy old pages aside.",
                                             [src]))
            res = await b.search(TopicSearchRequest(SCOPE, "checkpoint"))
            assert res.hits == ()  # the old Revision's chunks are gone
            res = await b.search(TopicSearchRequest(SCOPE, "journals"))
            assert [h.ref for h in res.hits] == [rev2.ref]
        finally:
            await b.close()
    run(go())
    check_consistent(path)
    conn = connect(path)
    assert conn.execute("SELECT count(*) FROM pc_topic_memory_active_topics").fetchall() == [(1,)]
    conn.close()


def test_one_batch_publishes_creates_and_updates_with_one_published_at(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            rev1, src = await _first(b)
            an = await b.analyzer()
            out = await publish(b, update(an, rev1.ref, "T1", "s", "d", [src]),
                                create(an, "T2", "s", "d", [src]),
                                create(an, "T3", "s", "d", [src]))
            assert len({r.published_at for r in out}) == 1
            assert [r.ref.revision for r in out] == [2, 1, 1]
            assert len(await b.heads(SCOPE)) == 3
        finally:
            await b.close()
    run(go())
    check_consistent(path)


@pytest.mark.parametrize("damage", [
    "DELETE FROM pc_artifact_lineage_sources",
    "UPDATE pc_artifact_lineage_sources SET source_content_hash = '" + "0" * 64 + "'",
    "UPDATE artifact_revisions SET content = CAST('{\"detail\":\"x\",\"summary\":\"y\","
    "\"title\":\"z\"}' AS BLOB) WHERE family = 'topic-memory'",
    "UPDATE artifact_revisions SET lineage = '{}' WHERE family = 'topic-memory'",
    "UPDATE artifact_revisions SET content_encoding = 'zlib' WHERE family = 'topic-memory'",
])
def test_get_refuses_a_damaged_revision_or_lineage(path: Path, damage: str) -> None:
    rev, _ = run(_first_closed(path))
    conn = connect(path)
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute(damage)
    conn.close()
    b = SQLiteTopicBackend(str(path))
    with pytest.raises(IntegrityError):
        run(b.get(SCOPE, rev.ref))
    b.close_sync()


async def _first_closed(path: Path):
    b = SQLiteTopicBackend(str(path))
    try:
        return await _first(b)
    finally:
        await b.close()


def test_a_query_in_nfd_finds_a_title_in_nfc(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            src = source("nfd")
            await seed(b, src)
            an = await b.analyzer()
            [rev] = await publish(b, create(an, "Caf\u00e9 notes", "Espresso", "Crema.", [src]))
            res = await b.search(TopicSearchRequest(SCOPE, "Cafe\u0301"))
            assert [h.ref for h in res.hits] == [rev.ref]
        finally:
            await b.close()
    run(go())


def test_cjk_text_is_found_by_a_cjk_query_and_thai_searches_without_error(path: Path) -> None:
    async def go():
        b = SQLiteTopicBackend(str(path))
        try:
            src = source("cjk")
            await seed(b, src)
            an = await b.analyzer()
            [rev] = await publish(b, create(an, "データベースの設計", "索引と検索",
                                            "全文検索の索引は分かち書きなしで作る。", [src]))
            res = await b.search(TopicSearchRequest(SCOPE, "全文検索"))
            assert [h.ref for h in res.hits] == [rev.ref]
            assert "detail_fts" in res.hits[0].matched_by
            await b.search(TopicSearchRequest(SCOPE, "ภาษาไทยไม่มีช่องว่าง"))
        finally:
            await b.close()
    run(go())
