"""The retrieval shape, hybrid search and per-family readiness on SQLite (Topic Memory
RFC, "Storage, Head, and atomic activation", "Configuration"; TOPIC-MEMORY.md,
"Per-family readiness")."""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext.adapters.sqlite import SQLiteMemoryBackend, SQLiteTopicBackend
from powercontext.core import analyzer as analyzers
from powercontext.core.errors import (
    AnalyzerMismatchError,
    ArtifactNotFoundError,
    InvalidInputError,
    RetrievalShapeError,
)
from powercontext.core.models import ArtifactRef, CurrentHead, EmbeddingProfile, MemorySearchRequest
from powercontext.core.topic.models import CHANNELS_HYBRID, TopicSearchRequest
from powercontext.core.topic.projection import profile_fingerprint
from powercontext.sql import sqlite as frag

from .conftest import PROFILE, add, embed, id_factory
from .topic_helpers import (
    SCOPE,
    check_consistent,
    connect,
    create,
    needs_topic_core,
    publish,
    run,
    seed,
    source,
    update,
)

OTHER_PROFILE = EmbeddingProfile("test-hash-16", "test/sha256-embedder", 16)

pytestmark = needs_topic_core


def _publish_one(path: Path, profile: EmbeddingProfile | None, title: str = "WAL mode",
                 detail: str = "Readers keep one snapshot while the writer appends.") -> object:
    async def go():
        b = SQLiteTopicBackend(str(path), profile=profile)
        try:
            src = source(abs(hash((title, detail))))
            await seed(b, src)
            an = await b.analyzer()
            [rev] = await publish(b, create(an, title, "Snapshots and writers", detail, [src],
                                            profile=profile))
            return rev
        finally:
            await b.close()
    return run(go())


def _open(path: Path, profile: EmbeddingProfile | None = None, **kw: object) -> object:
    async def go():
        b = SQLiteTopicBackend(str(path), profile=profile, **kw)  # type: ignore[arg-type]
        try:
            return await b.topic_capabilities()
        finally:
            await b.close()
    return run(go())


def test_a_hybrid_deployment_searches_four_channels_and_stores_every_vector(
        tmp_path: Path) -> None:
    path = tmp_path / "hybrid.db"
    rev = _publish_one(path, PROFILE)
    caps = _open(path, PROFILE)
    assert caps.shape.kind == "hybrid" and caps.channels == CHANNELS_HYBRID
    assert caps.shape.profile_fingerprint == profile_fingerprint(PROFILE)

    async def go():
        b = SQLiteTopicBackend(str(path), profile=PROFILE)
        try:
            with pytest.raises(InvalidInputError, match="query_vector"):
                await b.search(TopicSearchRequest(SCOPE, "snapshot"))
            for bad in ((1.0, 0.0), (float("nan"),) * 8, (2.0,) + (0.0,) * 7):
                with pytest.raises(InvalidInputError, match="query_vector"):
                    await b.search(TopicSearchRequest(SCOPE, "snapshot"), bad)
            text = "Readers keep one snapshot while the writer appends."
            res = await b.search(TopicSearchRequest(SCOPE, "snapshot"), embed(text))
            assert res.channels == CHANNELS_HYBRID
            [hit] = res.hits
            assert hit.ref == rev.ref
            assert set(hit.matched_by) >= {"detail_fts", "detail_vector"}
            # a vector-only hit: no term matches, the chunk's vector is the query
            res = await b.search(TopicSearchRequest(SCOPE, "zzzqqq"), embed(text))
            assert [h.ref for h in res.hits] == [rev.ref]
            assert "detail_vector" in res.hits[0].matched_by
            assert res.hits[0].snippet is not None
        finally:
            await b.close()
    run(go())
    check_consistent(path)


def test_open_refuses_a_vector_configuration_over_fts_heads_and_removing_it_reopens(
        tmp_path: Path) -> None:
    path = tmp_path / "fts.db"
    _publish_one(path, None)
    with pytest.raises(RetrievalShapeError, match="FTS-only"):
        _open(path, PROFILE)
    conn = connect(path)  # the refused open created no vector table
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = ?",
                        (frag.TOPIC_VECTOR_TABLE,)).fetchall() == [(0,)]
    conn.close()
    assert _open(path).shape.kind == "fts"


def test_open_refuses_a_hybrid_deployment_without_its_profile_or_with_another(
        tmp_path: Path) -> None:
    path = tmp_path / "hybrid.db"
    _publish_one(path, PROFILE)
    with pytest.raises(RetrievalShapeError, match="no embedding profile"):
        _open(path)
    with pytest.raises(RetrievalShapeError, match="fingerprint"):
        _open(path, OTHER_PROFILE)
    assert _open(path, PROFILE).shape.kind == "hybrid"


def test_open_refuses_hybrid_heads_that_lack_a_vector(tmp_path: Path) -> None:
    path = tmp_path / "hybrid.db"
    _publish_one(path, PROFILE)
    conn = connect(path)
    conn.execute(f'DELETE FROM "{frag.CHUNK_VECTOR_TABLE}" WHERE rowid = '
                 "(SELECT min(chunk_rowid) FROM pc_topic_memory_active_chunks)")
    conn.close()
    with pytest.raises(RetrievalShapeError, match="lack vectors"):
        _open(path, PROFILE)


def test_open_refuses_hybrid_rows_with_another_fingerprint(tmp_path: Path) -> None:
    path = tmp_path / "hybrid.db"
    _publish_one(path, PROFILE)
    conn = connect(path)
    conn.execute("UPDATE pc_topic_memory_active_topics SET embedding_fingerprint = ?",
                 ("0" * 64,))
    conn.close()
    with pytest.raises(RetrievalShapeError, match="lack vectors"):
        _open(path, PROFILE)


def test_open_refuses_heads_without_a_shape_row(tmp_path: Path) -> None:
    path = tmp_path / "fts.db"
    _publish_one(path, None)
    conn = connect(path)
    conn.execute("DELETE FROM pc_topic_memory_retrieval_shape")
    conn.close()
    with pytest.raises(RetrievalShapeError, match="no retrieval shape"):
        _open(path)


def test_open_refuses_a_shape_of_another_analyzer_and_a_mismatched_choice(
        tmp_path: Path) -> None:
    path = tmp_path / "fts.db"
    _publish_one(path, None)
    stored = _open(path).shape.analyzer_version
    other = next(v for v in analyzers.ANALYZERS if v != stored)
    with pytest.raises(AnalyzerMismatchError):
        _open(path, analyzer=other)
    conn = connect(path)
    conn.execute("UPDATE pc_topic_memory_retrieval_shape SET analyzer_version = 'v0-x'")
    conn.close()
    with pytest.raises(RetrievalShapeError, match="analyzer"):
        _open(path)


def test_without_heads_the_first_publication_replaces_the_shape(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    assert _open(path, PROFILE).shape is None
    conn = connect(path)
    conn.execute("INSERT INTO pc_topic_memory_retrieval_shape VALUES "
                 "('deployment', 'hybrid', 'topic-chunks-v1', 'x', NULL, NULL)")
    conn.close()
    assert _open(path).shape.kind == "hybrid"  # no Heads: not refused
    _publish_one(path, None)
    assert _open(path).shape.kind == "fts"


def test_memory_opens_a_database_the_topic_backend_created_and_ignores_its_rows(
        tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    rev = _publish_one(path, None)

    async def go():
        m = SQLiteMemoryBackend(str(path))
        try:
            inv = await m.inventory()
            assert inv["heads"] == ()  # the Topic's head is not a Memory
            with pytest.raises(ArtifactNotFoundError):
                await m.load_revision(ArtifactRef(rev.ref.artifact_id, 1))
            with pytest.raises(ArtifactNotFoundError):
                await m.search(MemorySearchRequest(
                    "wal", (CurrentHead(rev.ref.artifact_id),), 5, mode="fts"))
            src = source("memory-side")
            await m.put_sources([src])
            ref = await add(m, None, ["a memory entry about wal"], id_factory("m"),
                            sources=[src])
            report = await m.rebuild()
            assert report is not None
            return ref
        finally:
            await m.close()
    mref = run(go())
    # and the Topic backend still opens, seeing only its own Topic
    caps = _open(path)
    assert caps.shape.kind == "fts"

    async def topics():
        b = SQLiteTopicBackend(str(path))
        try:
            assert await b.heads(SCOPE) == (rev.ref,)
            assert (await b.search(TopicSearchRequest(SCOPE, "entry"))).hits == ()
        finally:
            await b.close()
    run(topics())
    assert mref.revision == 1
    check_consistent(path)


def test_the_topic_backend_opens_a_memory_database_and_memory_still_opens(
        tmp_path: Path) -> None:
    path = tmp_path / "shared.db"

    async def memory_first():
        m = SQLiteMemoryBackend(str(path), profile=PROFILE)
        try:
            src = source("m1")
            await m.put_sources([src])
            return await add(m, None, ["first memory entry"], id_factory("m1"), sources=[src])
        finally:
            await m.close()
    ref = run(memory_first())
    rev = _publish_one(path, PROFILE)

    async def memory_again():
        m = SQLiteMemoryBackend(str(path), profile=PROFILE)
        try:
            heads = (await m.inventory())["heads"]
            got = await m.load_revision(ref)
            assert got.ref == ref
            await m.rehash()  # walks every Memory head: none of them a Topic
            return heads
        finally:
            await m.close()
    assert run(memory_again()) == (ref,)
    assert rev.ref.revision == 1
    assert _open(path, PROFILE).shape.kind == "hybrid"


def test_update_in_hybrid_replaces_vectors_too(tmp_path: Path) -> None:
    path = tmp_path / "hybrid.db"
    rev = _publish_one(path, PROFILE)

    async def go():
        b = SQLiteTopicBackend(str(path), profile=PROFILE)
        try:
            src = source("upd")
            await seed(b, src)
            an = await b.analyzer()
            await publish(b, update(an, rev.ref, "WAL mode", "s", "A different body now.",
                                    [src], profile=PROFILE))
        finally:
            await b.close()
    run(go())
    check_consistent(path)
    assert _open(path, PROFILE).shape.kind == "hybrid"


def test_memory_head_and_key_import_ignore_a_topic_artifact(tmp_path: Path) -> None:
    """Audit of the Memory paths over artifact_heads: ``head`` and ``import_memory_keys``
    read a head by id without its family, so a Topic's id answered as a Memory."""
    path = tmp_path / "shared.db"
    rev = _publish_one(path, None)

    async def go():
        m = SQLiteMemoryBackend(str(path))
        try:
            assert await m.head(rev.ref.artifact_id) is None
            assert await m.import_memory_keys({"repo:/w/topic": rev.ref.artifact_id}) == {}
            assert await m.memory_keys() == {}
        finally:
            await m.close()
    run(go())


def test_the_integrity_report_counts_active_and_vector_rows(tmp_path: Path) -> None:
    path = tmp_path / "hybrid.db"
    _publish_one(path, PROFILE)
    b = SQLiteTopicBackend(str(path), profile=PROFILE)
    run(b.open())
    report = b._executor.submit(b._in_tx, False, b.projection.integrity).result()  # type: ignore[union-attr]
    b.close_sync()
    assert report["topics"] == report["topic_vectors"] == 1
    assert report["chunks"] == report["chunk_vectors"] >= 1
