"""Moving an existing database to the analyzer ``v2`` on both engines (docs/analyzers.md,
"Choosing a version, and migrating"; Memory RFC, "Normalization, hashing, and the search
analyzer": a rule change needs "a migration that completely rebuilds searchable_text and
the full-text index"): a database keeps the analyzer it was created with, the Memory
rebuild migrates the Memory projections, Topic Memory then refuses to open naming the
command until its own full-text fields are rebuilt, a crash half way is finished by
running it again, and the Topic vectors are left as they were."""

from __future__ import annotations

from typing import Any

import pytest
from support.engines import service, store, texts_found
from support.topic_ob import make_write, publish, run, search

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.core import analyzer
from powercontext.core.errors import RetrievalShapeError
from powercontext.core.topic.chunks import chunk_detail
from powercontext.core.topic.models import TopicMemoryContent
from powercontext.core.topic.projection import topic_text

SCOPE = "repo:/work/migrate"
CAFE = ("Café ordering", "Where the team orders coffee (ＡＰＩ notes).",
        "The café on the corner takes orders.\n\n## Menu\n\nRelease v1.2.3 of the menu "
        "is in Zürich.")
DEPLOY = ("Deploys", "How we deploy the service.", "Run make deploy, then watch the logs.")
ENTRIES = ["café au lait", "release v1.2.3 added the export button",
           "the upgrade from 1.2 to 2.3 took 1 day"]
MODEL = DeterministicEmbedding(dimension=32)


def _write_memory(backend: Any) -> Any:
    async def body() -> Any:
        svc = service(backend)
        try:
            return await store(svc, ENTRIES)
        finally:
            await svc.close()

    return run(body())


def _search_memory(backend: Any, ref: Any, queries: list[str]) -> dict[str, list[str]]:
    async def body() -> dict[str, list[str]]:
        svc = service(backend)
        try:
            return {q: await texts_found(svc, ref, q) for q in queries}
        finally:
            await svc.close()

    return run(body())


def _topic_titles(backend: Any, query: str, model: Any = None) -> list[str]:
    return [h.title for h in run(search(backend, SCOPE, query, model=model)).hits]


def _publish(backend: Any, *topics: tuple[str, str, str], model: Any = None) -> None:
    async def body() -> None:
        writes = [await make_write(backend, SCOPE, *t, model=model) for t in topics]
        await publish(backend, *writes)

    run(body())


def _fts_rows(backend: Any) -> tuple[dict[str, str], list[str]]:
    """(title -> the active topic row's fts_text, every chunk row's fts_text)."""
    def read() -> tuple[dict[str, str], list[str]]:
        engine = getattr(backend, "sqlite_engine", None) or getattr(backend, "ob_engine", None)
        query = engine.rows
        topics = {str(t): str(f) for t, f in query(
            "SELECT title, fts_text FROM pc_topic_memory_active_topics")}
        chunks = [str(f) for (f,) in query(
            "SELECT fts_text FROM pc_topic_memory_active_chunks ORDER BY artifact_id, ordinal")]
        return topics, chunks

    return run(backend._run(backend._in_tx, False, read))


def _expected_rows(a: analyzer.Analyzer, *topics: tuple[str, str, str]
                   ) -> tuple[dict[str, str], list[str]]:
    contents = [TopicMemoryContent(*t) for t in topics]
    return ({c.title: a.searchable_text(topic_text(c)) for c in contents},
            sorted(a.searchable_text(ch.text) for c in contents for ch in chunk_detail(c.detail)))


def _close(backend: Any) -> None:
    run(backend.close())


def test_rebuild_moves_memory_and_topic_projections_of_an_existing_database_to_v2(engine):
    _, open_backend = engine
    # a database of the earlier default, with Memories and Topics
    ref = _write_memory(open_backend("db", analyzer="v1-porter"))
    topics = open_backend("db", topic=True)
    assert run(topics.analyzer()) is analyzer.V1_PORTER  # the database's, not the default
    _publish(topics, CAFE, DEPLOY)
    assert _topic_titles(topics, "cafe") == []
    _close(topics)
    # opened without a choice, it keeps its analyzer: nothing moves until the rebuild
    plain = open_backend("db")
    assert run(plain.analyzer()) is analyzer.V1_PORTER
    assert _search_memory(plain, ref, ["cafe"]) == {"cafe": []}
    report = run(plain.rebuild(analyzer="v2"))
    assert (report.analyzer, report.entries) == ("v2", len(ENTRIES))
    _close(plain)

    # the Memory family is migrated; Topic Memory refuses to open until its turn
    refused = open_backend("db", topic=True)
    with pytest.raises(RetrievalShapeError, match=r"`powercontext memory rebuild --analyzer v2`"):
        run(refused.topic_capabilities())
    _close(refused)
    migrating = open_backend("db", topic=True)
    migrating.allow_analyzer_migration()
    done = run(migrating.rebuild_fts())
    chunks = sum(len(chunk_detail(t[2])) for t in (CAFE, DEPLOY))
    assert (done.topics, done.chunks, done.corrupt, done.analyzer) == (2, chunks, [], "v2")
    _close(migrating)

    after = open_backend("db", topic=True)
    assert run(after.analyzer()) is analyzer.V2
    assert run(after.topic_capabilities()).shape.analyzer_version == "v2"
    for query in ("cafe", "CAFÉ", "api", "zurich", "1.2.3"):
        assert _topic_titles(after, query) == ["Café ordering"], query
    topic_rows, chunk_rows = _fts_rows(after)
    assert (topic_rows, sorted(chunk_rows)) == _expected_rows(analyzer.V2, CAFE, DEPLOY)
    _close(after)
    memory = open_backend("db")
    hits = _search_memory(memory, ref, ["cafe", "1.2.3"])
    assert hits["cafe"] == ["café au lait"] and hits["1.2.3"][0] == ENTRIES[1]
    _close(memory)
    # again: nothing left to migrate
    again = open_backend("db", topic=True)
    again.allow_analyzer_migration()
    assert run(again.rebuild_fts()).topics == 0
    _close(again)


def test_a_hybrid_topic_deployment_keeps_its_vectors_through_the_migration(engine):
    _, open_backend = engine
    topics = open_backend("hy", topic=True, analyzer="v1-porter", profile=MODEL.profile)
    _publish(topics, CAFE, DEPLOY, model=MODEL)
    assert run(topics.topic_capabilities()).shape.kind == "hybrid"
    _close(topics)
    run(open_backend("hy").rebuild(analyzer="v2"))
    migrating = open_backend("hy", topic=True, profile=MODEL.profile)
    migrating.allow_analyzer_migration()
    assert run(migrating.rebuild_fts()).topics == 2
    _close(migrating)
    # the hybrid shape's checks pass again: every active row still has its vector
    after = open_backend("hy", topic=True, profile=MODEL.profile)
    caps = run(after.topic_capabilities())
    assert (caps.shape.kind, caps.shape.analyzer_version) == ("hybrid", "v2")
    found = run(search(after, SCOPE, "cafe", model=MODEL)).hits
    assert found[0].title == "Café ordering" and "topic_fts" in found[0].matched_by
    _close(after)


def test_a_topic_migration_that_crashes_half_way_is_finished_by_running_it_again(engine):
    _, open_backend = engine
    topics = open_backend("crash", topic=True, analyzer="v1-porter")
    _publish(topics, CAFE, DEPLOY)
    _close(topics)
    run(open_backend("crash").rebuild(analyzer="v2"))
    crashing = open_backend("crash", topic=True)
    crashing.allow_analyzer_migration()
    calls = 0
    real = crashing.projection.set_fts_texts

    def once_then_crash(*args: Any) -> None:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise RuntimeError("crash in the middle of the migration")
        real(*args)

    crashing.projection.set_fts_texts = once_then_crash  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        run(crashing.rebuild_fts())
    _close(crashing)
    # half migrated: the shape still names the old analyzer, so Topic Memory refuses
    with pytest.raises(RetrievalShapeError, match="memory rebuild --analyzer v2"):
        run(open_backend("crash", topic=True).topic_capabilities())
    finish = open_backend("crash", topic=True)
    finish.allow_analyzer_migration()
    assert run(finish.rebuild_fts()).topics == 2
    _close(finish)
    after = open_backend("crash", topic=True)
    assert _fts_rows(after)[0] == _expected_rows(analyzer.V2, CAFE, DEPLOY)[0]
    assert _topic_titles(after, "cafe") == ["Café ordering"]
    _close(after)
