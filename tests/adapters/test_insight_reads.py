"""The dashboard's read-only views (issue 17; adapters/source_citations.py) on both engines:
reverse evidence (entry versions and Topic Revisions citing a Source), Scopes with
counts, a Topic's Revision history, publications per day, and the Supervisor's lease
and waves. Each test runs on SQLite and on a real seekdb."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from support.topic_ob import STAMP, make_write, publish, run

from powercontext.adapters.source_citations import like_needle
from powercontext.core import canonical
from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
from powercontext.core.models import MemoryEntryInput, SourceRef
from powercontext.core.topic.insight import DayCount, ScopeSummary, SourceScope
from powercontext.core.topic.processing import BINDING
from powercontext.ports import EntryKinds, SourceCitations
from powercontext.ports.topic import TopicInsight

ENGINES = ["sqlite", pytest.param("oceanbase", marks=pytest.mark.oceanbase)]


@pytest.fixture(params=ENGINES)
def backends(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[tuple[Any, Any]]:
    """(Memory backend, Topic backend) on one fresh database of the engine."""
    if request.param == "sqlite":
        from powercontext.adapters.sqlite import SQLiteMemoryBackend, SQLiteTopicBackend

        path = str(tmp_path / "db.sqlite")
        pair = (SQLiteMemoryBackend(path), SQLiteTopicBackend(path))
        yield pair
        for b in pair:
            run(b.close())
        return
    from oceanbase_server import fresh_database

    from powercontext.adapters.oceanbase import OceanBaseMemoryBackend, OceanBaseTopicBackend

    with fresh_database(request.getfixturevalue("seekdb_url"), "pc_insight") as url:
        pair = (OceanBaseMemoryBackend(url), OceanBaseTopicBackend(url))
        yield pair
        for b in pair:
            run(b.close())


def _source(sid: str, text: str) -> Any:
    return canonical.make_source(sid, "note", text)


def test_backends_declare_the_capabilities(backends):
    memory, topic = backends
    assert isinstance(memory, SourceCitations)
    assert isinstance(topic, TopicInsight)


def test_citing_entry_versions_finds_every_version_and_only_exact_ids(backends):
    memory, _ = backends

    async def go():
        from powercontext import MemoryService

        a, ab, a_b = (_source("src_a", "alpha"), _source("src_ab", "alpha b"),
                      _source("src_a_", "underscore twin"))
        svc = MemoryService(memory)
        ref = await svc.remember(None, sources=[a, ab, a_b], entries=[
            MemoryEntryInput("fact", "cites a", sources=(a,)),
            MemoryEntryInput("fact", "cites ab", sources=(ab,)),
            MemoryEntryInput("fact", "cites a_ (a LIKE twin of a)", sources=(a_b,)),
        ], mode="append")
        (old,) = [v for v in (await svc.entries(ref)).values() if v.text == "cites a"]
        ref2 = await svc.remember(ref, sources=[a], entries=[
            MemoryEntryInput("fact", "cites a, revised", entry=old, sources=(a,))],
            mode="append")
        return ref2

    ref = run(go())
    got = run(memory.citing_entry_versions("src_a"))
    assert sorted((v.version, v.text) for v in got) == [(1, "cites a"),
                                                        (2, "cites a, revised")]
    assert [v.entry_version_id for v in got] == sorted(v.entry_version_id for v in got)
    assert len(run(memory.citing_entry_versions("src_a", limit=1))) == 1
    assert all(v.memory_artifact_id == ref.artifact_id for v in got)
    assert run(memory.citing_entry_versions("src_nothing")) == ()
    assert run(memory.source_scope("src_a")) is None
    with pytest.raises(InvalidInputError):
        run(memory.citing_entry_versions("bad id"))
    with pytest.raises(InvalidInputError):
        run(memory.citing_entry_versions("src_a", limit=0))


def test_entry_kinds_names_the_kind_of_every_version_of_one_memory(backends):
    memory, _ = backends
    assert isinstance(memory, EntryKinds)

    async def go():
        from powercontext import MemoryService

        svc = MemoryService(memory)
        ref = await svc.remember(None, mode="append", entries=[
            MemoryEntryInput("constraint", "Never edit build/."),
            MemoryEntryInput("working_note", "Step 1 done.")])
        (note,) = [v for v in (await svc.entries(ref)).values() if v.kind == "working_note"]
        ref2 = await svc.remember(ref, mode="append", entries=[
            MemoryEntryInput("working_note", "Step 2 done.", entry=note)])
        other = await svc.remember(None, mode="append", entries=[
            MemoryEntryInput("fact", "another Memory")])
        return ref2, other, await svc.entries(ref2)

    ref, other, heads = run(go())
    kinds = run(memory.entry_kinds(ref.artifact_id))
    assert len(kinds) == 3  # both versions of the note, and the rule
    assert {kinds[v.entry_version_id] for v in heads.values()} == {"constraint",
                                                                    "working_note"}
    assert set(run(memory.entry_kinds(other.artifact_id)).values()) == {"fact"}
    assert run(memory.entry_kinds("mem_art_unknown")) == {}
    with pytest.raises(InvalidInputError):
        run(memory.entry_kinds("bad id"))


def test_like_needle_widens_never_narrows():
    assert like_needle("src_a%") == '%"source_id":"src_a_"%'
    assert like_needle('a"b') == '%"source_id":"a_"b"%'


def test_source_scope_and_scopes_with_counts(backends):
    memory, topic = backends

    async def go():
        await topic.put_scoped_sources("repo:/x", [_source("src_x1", "x one"),
                                                   _source("src_x2", "x two")])
        await topic.put_scoped_sources("repo:/a b", [_source("src_y1", "y one")])
        w = await make_write(topic, "repo:/x", "Title", "Summary", "Detail text here.",
                             srcs=(SourceRef("src_x1", _source("src_x1", "x one").content_hash),))
        await publish(topic, w)
        return w

    run(go())
    assert run(memory.source_scope("src_x2")) == SourceScope("repo:/x", 2, False)
    days = run(topic.sources_per_day("repo:/x"))
    assert sum(d.count for d in days) == 2 and all(STAMP.fullmatch(d.day + "T00:00:00.000000Z")
                                                   for d in days)
    assert sum(d.count for d in run(topic.sources_per_day("repo:/a b"))) == 1
    assert run(topic.sources_per_day("repo:/none")) == ()
    run(topic.put_scoped_sources("repo:/x", [_source("src_x1", "x one")]))  # already there
    assert sum(d.count for d in run(topic.sources_per_day("repo:/x"))) == 2
    assert run(topic.scopes()) == (ScopeSummary("repo:/a b", 1, 0, 0),
                                   ScopeSummary("repo:/x", 2, 1, 1))


def test_topic_history_citations_and_publications_per_day(backends):
    _, topic = backends

    async def go():
        w1 = await make_write(topic, "repo:/t", "Release", "How we release", "Tag it.")
        (r1,) = await publish(topic, w1)
        w2 = await make_write(topic, "repo:/t", "Release", "How we release now",
                              "Tag it, then push.", base=r1.ref)
        (r2,) = await publish(topic, w2)
        return r1, r2

    r1, r2 = run(go())
    history = run(topic.topic_history("repo:/t", r1.ref.artifact_id))
    assert [h.ref.revision for h in history] == [2, 1]
    assert history[0].based_on == r1.ref and history[1].based_on is None
    assert history[0].sources == r2.sources
    assert [h.ref.revision for h in run(topic.topic_history("repo:/t", r1.ref.artifact_id,
                                                            limit=1))] == [2]
    with pytest.raises(ArtifactNotFoundError):
        run(topic.topic_history("repo:/other", r1.ref.artifact_id))
    cited = run(topic.citing_topic_revisions(r2.sources[0].source_id))
    assert [(c.scope_id, c.ref) for c in cited] == [("repo:/t", r2.ref)]
    assert STAMP.fullmatch(cited[0].published_at)
    days = run(topic.publications_per_day("repo:/t"))
    assert days == (DayCount(r1.published_at[:10], 2),) or \
        sum(d.count for d in days) == 2  # two publications, maybe across midnight
    assert run(topic.publications_per_day("repo:/none")) == ()


def test_supervision_view_shows_lease_generation_and_waves(backends):
    _, topic = backends
    empty = run(topic.supervision_view())
    assert (empty.holder_id, empty.generation, empty.last_auto_wave_completed_at,
            empty.waves) == (None, None, None, ())
    holder = str(uuid.uuid4())
    lease = 30.0 if getattr(topic, "lease_expires", False) else None

    async def go():
        term = await topic.acquire_lease(holder, lease)
        await topic.put_scoped_sources("repo:/w", [_source("src_w1", "w one")])
        wave = str(uuid.uuid4())
        frozen = await topic.freeze_wave(term, wave)
        return term, wave, frozen

    term, wave, frozen = run(go())
    view = run(topic.supervision_view())
    assert (view.holder_id, view.generation) == (holder, term.generation)
    assert (view.lease_expires_at is not None) == (lease is not None)
    assert [(w.wave_id, w.targets, w.completed) for w in view.waves] == [(wave, frozen, 0)]
    assert frozen == 1 and BINDING


def test_an_earlier_database_gets_the_recording_table_and_counts_new_sources_only(
        tmp_path: Any) -> None:
    import apsw

    from powercontext.adapters.sqlite import SQLiteMemoryBackend, SQLiteTopicBackend

    path = str(tmp_path / "old.db")
    topic = SQLiteTopicBackend(path)
    run(topic.put_scoped_sources("repo:/o", [_source("src_o1", "old one")]))
    run(topic.close())
    conn = apsw.Connection(path)
    conn.execute('DROP TABLE "pc_source_scope_recorded"')  # as a release before it made it
    conn.close()
    for cls in (SQLiteMemoryBackend, SQLiteTopicBackend):
        backend = cls(path)
        run(backend.put_scoped_sources("repo:/o", [_source(f"src_o_{cls.__name__}", "new")]))
        run(backend.close())
    topic = SQLiteTopicBackend(path)
    try:
        assert sum(d.count for d in run(topic.sources_per_day("repo:/o"))) == 2
        assert run(topic.source_head("repo:/o")) == 3
    finally:
        run(topic.close())


@pytest.mark.oceanbase
def test_an_earlier_oceanbase_database_gets_the_recording_table(seekdb_url: str) -> None:
    from oceanbase_server import fresh_database
    from support.topic_ob import sql

    from powercontext.adapters.oceanbase import OceanBaseMemoryBackend, OceanBaseTopicBackend

    with fresh_database(seekdb_url, "pc_insight_old") as url:
        topic = OceanBaseTopicBackend(url)
        run(topic.put_scoped_sources("repo:/o", [_source("src_o1", "old one")]))
        run(topic.close())
        sql(url, "DROP TABLE pc_source_scope_recorded")
        for cls in (OceanBaseMemoryBackend, OceanBaseTopicBackend):
            backend = cls(url)
            run(backend.put_scoped_sources("repo:/o", [_source(f"src_o_{cls.__name__}",
                                                               "new")]))
            run(backend.close())
        topic = OceanBaseTopicBackend(url)
        try:
            assert sum(d.count for d in run(topic.sources_per_day("repo:/o"))) == 2
        finally:
            run(topic.close())


def test_processing_cursor_is_read_from_the_memory_side(backends):
    """A Memory backend reads a binding's Cursor from the shared processing tables (the
    prompt hook opens the Topic side only past 0): 0 for an unknown Scope and before any
    Window, then where a Window's publication moved it; another binding's is its own."""
    from powercontext.core.topic.models import PublicationGuards, TopicPublication
    from powercontext.core.topic.processing import CursorAdvance

    memory, topic = backends

    async def go():
        scope = "repo:/cursor"
        assert await memory.processing_cursor(BINDING, scope) == 0
        await topic.put_scoped_sources(scope, [_source("src_c1", "one"),
                                               _source("src_c2", "two")])
        before = await memory.processing_cursor(BINDING, scope)
        write = await make_write(topic, scope, "Cursor", "A Window moved it.", "Detail.")
        await topic.publish(TopicPublication(
            (write,), PublicationGuards(cursor=CursorAdvance(BINDING, scope, 0, 2))))
        after = await memory.processing_cursor(BINDING, scope)
        other = await memory.processing_cursor("another-binding", scope)
        with pytest.raises(InvalidInputError):
            await memory.processing_cursor(BINDING, " padded")
        return before, after, other

    assert run(go()) == (0, 2, 0)
