"""Helpers of the SQLite Topic Memory tests: Sources, CREATE / UPDATE writes with
projections built by the real core (``powercontext.core.topic.projection``) and
deterministic embeddings, and a direct APSW view of the database file."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw
import pytest
import sqlite_vec

from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.core import canonical
from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingProfile, Source, SourceRef
from powercontext.core.topic import content as topic_content
from powercontext.core.topic import projection as topic_projection
from powercontext.core.topic.models import (
    TopicPublication,
    TopicRef,
    TopicRevision,
    TopicWrite,
)
from powercontext.sql import sqlite as frag

from .conftest import PROFILE, embed


def _core_ready() -> bool:
    """Whether the core.topic functions the backend calls are written (not stubs)."""
    from powercontext.core import analyzer as analyzers
    from powercontext.core.topic import publication
    from powercontext.core.topic import search as topic_search

    for call in (lambda: topic_search.check_limit(1),
                 lambda: topic_search.fuse_channels({}, 1),
                 lambda: topic_search.collapse("topic_fts", [], ("a",), 1),
                 lambda: publication.verify_publication(TopicPublication(()), analyzers.get(),
                                                        "fts", None)):
        try:
            call()
        except NotImplementedError:
            return False
        except Exception:
            continue
    return True


#: Until topic-core lands search and publication (issue 12), the end-to-end Topic tests
#: cannot run; they run as soon as the stubs are replaced.
needs_topic_core = pytest.mark.skipif(not _core_ready(),
                                      reason="core.topic search/publication are stubs")

SCOPE = "repo:/w/topics"
OTHER = "repo:/w/elsewhere"

_ids = itertools.count(1)


def new_topic_id() -> str:
    n = next(_ids)
    return topic_content.make_topic_id(1_700_000_000_000 + n, n.to_bytes(10, "big"))


def source(n: int | str, text: str | None = None) -> Source:
    return canonical.make_source(f"src_{n}", "user_note", text or f"evidence number {n}")


def refs(*sources: Source) -> tuple[SourceRef, ...]:
    return canonical.sort_source_refs(tuple(SourceRef(s.source_id, s.content_hash)
                                            for s in sources))


def projection_for(content: Any, analyzer: Analyzer, profile: EmbeddingProfile | None):
    if profile is None:
        return topic_projection.build_projection(content, analyzer)
    vectors = [embed(t, profile.dimension) for t in topic_projection.embedding_texts(content)]
    return topic_projection.build_projection(content, analyzer, vectors, profile)


def create(analyzer: Analyzer, title: str, summary: str, detail: str,
           sources: Sequence[Source], *, scope: str = SCOPE,
           profile: EmbeddingProfile | None = None, artifact_id: str | None = None
           ) -> TopicWrite:
    content = topic_content.make_content(title, summary, detail)
    return TopicWrite("create", scope, TopicRef(artifact_id or new_topic_id(), 1), None,
                      content, refs(*sources), projection_for(content, analyzer, profile))


def update(analyzer: Analyzer, base: TopicRef, title: str, summary: str, detail: str,
           sources: Sequence[Source], *, scope: str = SCOPE,
           profile: EmbeddingProfile | None = None) -> TopicWrite:
    content = topic_content.make_content(title, summary, detail)
    return TopicWrite("update", scope, TopicRef(base.artifact_id, base.revision + 1), base,
                      content, refs(*sources), projection_for(content, analyzer, profile))


async def publish(backend: SQLiteTopicBackend, *writes: TopicWrite) -> tuple[TopicRevision, ...]:
    return await backend.publish(TopicPublication(tuple(writes)))


async def seed(backend: SQLiteTopicBackend, *sources: Source) -> None:
    await backend.put_sources(list(sources))


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def connect(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


TOPIC_TABLES = ("artifact_revisions", "artifact_heads", "sources", "powercontext_meta",
                "pc_artifact_lineage_sources", "pc_artifact_lineage_artifacts",
                "pc_topic_memory_retrieval_shape", "pc_topic_memory_revision_publications",
                "pc_topic_memory_active_topics", "pc_topic_memory_active_chunks")


def snapshot(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every Topic table and the rowids of its FTS5 and vec0 rows."""
    conn = connect(path)
    try:
        out = {t: conn.execute(f'SELECT rowid, * FROM "{t}" ORDER BY rowid').fetchall()
               for t in TOPIC_TABLES}
        for table in (frag.TOPIC_FTS_TABLE, frag.CHUNK_FTS_TABLE, frag.TOPIC_VECTOR_TABLE,
                      frag.CHUNK_VECTOR_TABLE):
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchall():
                out[table] = conn.execute(
                    f'SELECT rowid FROM "{table}" ORDER BY rowid').fetchall()
        return out
    finally:
        conn.close()


def check_consistent(path: Path) -> None:
    """FTS5 integrity-check clean, FTS and vec0 rows exactly the active rows, every active
    row the head of its Topic, SQLite's integrity and foreign keys clean."""
    conn = connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        for kind in ("topic", "chunk"):
            conn.execute(frag.statement(f"topic_{kind}_fts_integrity_check"))
        topics = {r[0] for r in conn.execute(
            "SELECT topic_rowid FROM pc_topic_memory_active_topics")}
        chunks = {r[0] for r in conn.execute(
            "SELECT chunk_rowid FROM pc_topic_memory_active_chunks")}
        assert {r[0] for r in conn.execute(
            f'SELECT rowid FROM "{frag.TOPIC_FTS_TABLE}"')} == topics
        assert {r[0] for r in conn.execute(
            f'SELECT rowid FROM "{frag.CHUNK_FTS_TABLE}"')} == chunks
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                        (frag.TOPIC_VECTOR_TABLE,)).fetchall():
            hybrid = {r[0] for r in conn.execute(
                "SELECT topic_rowid FROM pc_topic_memory_active_topics "
                "WHERE embedding_fingerprint IS NOT NULL")}
            assert {r[0] for r in conn.execute(
                f'SELECT rowid FROM "{frag.TOPIC_VECTOR_TABLE}"')} == hybrid
            hybrid_chunks = {r[0] for r in conn.execute(
                "SELECT chunk_rowid FROM pc_topic_memory_active_chunks "
                "WHERE embedding_fingerprint IS NOT NULL")}
            assert {r[0] for r in conn.execute(
                f'SELECT rowid FROM "{frag.CHUNK_VECTOR_TABLE}"')} == hybrid_chunks
        active = set(conn.execute(
            "SELECT artifact_id, revision FROM pc_topic_memory_active_topics").fetchall())
        heads = set(conn.execute(
            "SELECT h.artifact_id, h.revision FROM artifact_heads AS h JOIN artifact_revisions "
            "AS r USING (artifact_id, revision) WHERE r.family = 'topic-memory'").fetchall())
        assert active == heads
        stale = conn.execute("SELECT count(*) FROM pc_topic_memory_active_chunks AS c JOIN "
                             "pc_topic_memory_active_topics AS t USING (artifact_id) "
                             "WHERE c.revision <> t.revision").fetchall()
        assert stale == [(0,)]
    finally:
        conn.close()


__all__ = [
    "OTHER",
    "PROFILE",
    "SCOPE",
    "check_consistent",
    "connect",
    "create",
    "needs_topic_core",
    "new_topic_id",
    "publish",
    "refs",
    "run",
    "seed",
    "snapshot",
    "source",
    "update",
]
