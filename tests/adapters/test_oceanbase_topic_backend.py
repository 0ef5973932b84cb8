"""OceanBaseTopicBackend on a real seekdb (issue 12): publication, search, exact get,
Scope isolation, the retrieval shape at open, hybrid search with the deterministic
embedder, and both families on one database."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import attrs
import pytest
from oceanbase_server import fresh_database, seekdb_available
from support.topic_ob import STAMP, make_write, publish, run, search, sql

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.oceanbase import OceanBaseMemoryBackend, OceanBaseTopicBackend
from powercontext.core.errors import (
    ArtifactNotFoundError,
    InvalidInputError,
    PowerContextError,
    RetrievalShapeError,
    RevisionConflictError,
)
from powercontext.core.models import MemoryEntryInput
from powercontext.core.topic import content as tcontent
from powercontext.core.topic.models import (
    PublicationGuards,
    TopicPublication,
    TopicRef,
    TopicSearchRequest,
    TopicWrite,
)

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]


@pytest.fixture
def db_url(seekdb_url: str) -> Iterator[str]:
    with fresh_database(seekdb_url, "pc_topic") as url:
        yield url


@pytest.fixture
def backend(db_url):
    b = OceanBaseTopicBackend(db_url)
    yield b
    run(b.close())


# ---------------------------------------------------------------- publish, search, get


def test_create_update_search_and_exact_get(backend):
    async def go():
        w1 = await make_write(backend, "repo:/a", "Release process",
                              "How we cut releases", "## Steps\n\nTag the commit. Run the "
                              "pipeline.\n\n## Rollback\n\nRevert the deploy with kubectl.")
        (r1,) = await publish(backend, w1)
        assert r1.ref == w1.ref and r1.scope_id == "repo:/a" and r1.based_on is None
        assert STAMP.fullmatch(r1.published_at) and r1.content == w1.content
        assert r1.content_hash == tcontent.content_hash(w1.content)
        res = await search(backend, "repo:/a", "kubectl rollback")
        assert [h.ref for h in res.hits] == [w1.ref]
        assert res.hits[0].matched_by == ("detail_fts",)
        assert "kubectl" in res.hits[0].snippet
        assert res.channels == ("topic_fts", "detail_fts")
        assert [h.ref for h in (await search(backend, "repo:/a", "releases")).hits] == [w1.ref]

        w2 = await make_write(backend, "repo:/a", "Release process",
                              "How we cut and roll back releases",
                              "Tag, run the pipeline, and use helm rollback.", base=w1.ref)
        (r2,) = await publish(backend, w2)
        assert r2.ref == TopicRef(w1.ref.artifact_id, 2) and r2.based_on == w1.ref
        assert r2.published_at >= r1.published_at
        assert [h.ref for h in (await search(backend, "repo:/a", "helm")).hits] == [r2.ref]
        assert (await search(backend, "repo:/a", "kubectl")).hits == ()  # old rows gone
        assert await backend.heads("repo:/a") == (r2.ref,)
        old = await backend.get("repo:/a", w1.ref)
        assert old == r1  # the historical Revision, with its own published_at
        assert await backend.get("repo:/a", r2.ref) == r2
    run(go())


def test_scopes_never_see_each_other(backend):
    async def go():
        w = await make_write(backend, "repo:/a", "Secret plan", "Only scope a",
                             "The launch code word is zanzibar.")
        (r,) = await publish(backend, w)
        assert (await search(backend, "repo:/b", "zanzibar")).hits == ()
        with pytest.raises(ArtifactNotFoundError):
            await backend.get("repo:/b", r.ref)
        assert await backend.heads("repo:/b") == ()
        cross = await make_write(backend, "repo:/b", "Secret plan", "moved",
                                 "zanzibar in b", base=r.ref)
        with pytest.raises(PowerContextError):
            await publish(backend, cross)
        assert await backend.heads("repo:/a") == (r.ref,)
        assert (await search(backend, "repo:/b", "zanzibar")).hits == ()
    run(go())


def test_conflicts_and_bad_refs_write_nothing(backend):
    async def go():
        (r,) = await publish(backend, await make_write(backend, "s", "Topic", "S", "Body one."))
        a = await make_write(backend, "s", "Topic", "S", "Body two.", base=r.ref)
        b = await make_write(backend, "s", "Topic", "S", "Body three.", base=r.ref)
        await publish(backend, a)
        with pytest.raises(RevisionConflictError):
            await publish(backend, b)
        again = await make_write(backend, "s", "Again", "S", "Body.")
        dup = TopicWrite("create", "s", r.ref, None, again.content, again.sources,
                         again.projection)
        with pytest.raises(RevisionConflictError):
            await publish(backend, dup)
        assert await backend.heads("s") == (a.ref,)
        for bad in (TopicRef(r.ref.artifact_id, 0), TopicRef(r.ref.artifact_id, -1),
                    TopicRef(r.ref.artifact_id, 1, family="memory"),
                    TopicRef(r.ref.artifact_id, True)):
            with pytest.raises(InvalidInputError):
                await backend.get("s", bad)
        with pytest.raises(ArtifactNotFoundError):
            await backend.get("s", TopicRef(r.ref.artifact_id, 9))
        with pytest.raises(InvalidInputError):
            await backend.get("", r.ref)
        with pytest.raises(InvalidInputError):
            await backend.get("x" * 257, r.ref)
        guarded = TopicPublication((await make_write(backend, "s", "G", "S", "Body g."),),
                                   PublicationGuards(supervisor=object()))
        with pytest.raises(InvalidInputError, match=r"guards\.supervisor"):
            await backend.publish(guarded)
        with pytest.raises(InvalidInputError, match=r"guards\.cursor"):
            await backend.publish(attrs.evolve(guarded, guards=PublicationGuards(
                cursor=object())))
        assert await backend.heads("s") == (a.ref,)
    run(go())


@pytest.mark.parametrize("limit", [0, 21, True, "10"])
def test_bad_limits_are_refused(backend, limit):
    with pytest.raises(InvalidInputError):
        run(backend.search(TopicSearchRequest("s", "query", limit)))


def test_bad_queries_are_refused_or_find_nothing(backend):
    async def go():
        await publish(backend, await make_write(backend, "s", "Topic", "S", "Body text."))
        with pytest.raises(InvalidInputError):
            await search(backend, "s", "x" * 8193)
        with pytest.raises(InvalidInputError):
            await search(backend, "s", " ".join(f"w{i}" for i in range(65)))
        for q in ("the of a", '"unbalanced', "body AND NOT text*", "", "\ud800"):
            try:
                res = await search(backend, "s", q)
            except InvalidInputError:
                continue
            assert all(h.ref.family == "topic-memory" for h in res.hits)
    run(go())


# ---------------------------------------------------------------- retrieval shape


def test_shape_is_fixed_at_the_first_publication(db_url):
    model = DeterministicEmbedding(dimension=8)
    other = DeterministicEmbedding(dimension=16)

    async def go():
        fts = OceanBaseTopicBackend(db_url)
        try:
            caps = await fts.topic_capabilities()
            assert caps.shape is None and caps.pending_kind == "fts"
            await publish(fts, await make_write(fts, "s", "T", "S", "Body."))
        finally:
            await fts.close()
        reopened = OceanBaseTopicBackend(db_url)
        assert (await reopened.topic_capabilities()).shape.kind == "fts"
        await reopened.close()
        # a vector configuration over FTS-only Heads is refused; removing it reopens
        hyb = OceanBaseTopicBackend(db_url, profile=model.profile)
        with pytest.raises(RetrievalShapeError):
            await hyb.topic_capabilities()
        await hyb.close()
        again = OceanBaseTopicBackend(db_url)
        assert (await again.topic_capabilities()).channels == ("topic_fts", "detail_fts")
        await again.close()
    run(go())

    with fresh_database(db_url.rsplit("/", 1)[0] + "/", "pc_topic_h") as url:
        async def hybrid():
            b = OceanBaseTopicBackend(url, profile=model.profile)
            try:
                assert (await b.topic_capabilities()).pending_kind == "hybrid"
                await publish(b, await make_write(b, "s", "T", "S", "Body.", model=model))
            finally:
                await b.close()
            b = OceanBaseTopicBackend(url, profile=model.profile)
            caps = await b.topic_capabilities()
            assert caps.shape.kind == "hybrid" and len(caps.channels) == 4
            await b.close()
            for bad in (OceanBaseTopicBackend(url),
                        OceanBaseTopicBackend(url, profile=other.profile)):
                with pytest.raises(RetrievalShapeError):
                    await bad.topic_capabilities()
                await bad.close()
            # a Head whose vector went missing: the hybrid database is refused
            sql(url, "UPDATE pc_topic_memory_active_chunks SET embedding = NULL")
            b = OceanBaseTopicBackend(url, profile=model.profile)
            with pytest.raises(RetrievalShapeError):
                await b.topic_capabilities()
            await b.close()
        run(hybrid())


def test_without_heads_the_shape_may_change(db_url):
    model = DeterministicEmbedding(dimension=8)

    async def go():
        b = OceanBaseTopicBackend(db_url)
        assert (await b.topic_capabilities()).pending_kind == "fts"
        await b.close()
        h = OceanBaseTopicBackend(db_url, profile=model.profile)
        try:
            assert (await h.topic_capabilities()).pending_kind == "hybrid"
            await publish(h, await make_write(h, "s", "Vectors", "S", "Body.", model=model))
            res = await search(h, "s", "vectors", model=model)
            assert "topic_vector" in res.hits[0].matched_by
        finally:
            await h.close()
    run(go())


def test_hybrid_search_uses_four_channels(db_url):
    model = DeterministicEmbedding(dimension=32)

    async def go():
        b = OceanBaseTopicBackend(db_url, profile=model.profile)
        try:
            w = await make_write(b, "s", "Database migrations",
                                 "How schema changes ship",
                                 "Run alembic upgrade head before deploying.\n\n"
                                 "Never edit a migration after it merged.", model=model)
            other = await make_write(b, "s", "Coffee", "The office machine",
                                     "Descale it every month.", model=model)
            await publish(b, w, other)
            res = await search(b, "s", "alembic migrations", model=model)
            assert res.channels == ("topic_fts", "topic_vector", "detail_fts", "detail_vector")
            assert res.hits[0].ref == w.ref
            assert set(res.hits[0].matched_by) >= {"topic_fts", "detail_fts"}
            with pytest.raises(PowerContextError):
                await b.search(TopicSearchRequest("s", "alembic"))  # no query vector
            unembedded = await make_write(b, "s", "No vectors", "S", "Body.")
            with pytest.raises(PowerContextError):
                await publish(b, unembedded)
            assert {r.artifact_id for r in await b.heads("s")} == {
                w.ref.artifact_id, other.ref.artifact_id}
        finally:
            await b.close()
    run(go())


# ---------------------------------------------------------------- both families


@pytest.mark.parametrize("topic_first", [True, False])
def test_memory_and_topic_backends_share_one_database(db_url, topic_first):
    from powercontext.service import MemoryService

    async def topic_side():
        b = OceanBaseTopicBackend(db_url)
        try:
            if not (await b.heads("s")):
                await publish(b, await make_write(b, "s", "Topic", "S", "Shared body."))
            assert len(await b.heads("s")) == 1
        finally:
            await b.close()

    async def memory_side():
        svc = MemoryService(OceanBaseMemoryBackend(db_url))
        try:
            ref = await svc.remember(None, entries=(MemoryEntryInput("fact", "go fact"),))
            res = await svc.search("go", (ref,), mode="fts")
            assert [h.text for h in res.hits] == ["go fact"]
        finally:
            await svc.close()

    first, second = (topic_side, memory_side) if topic_first else (memory_side, topic_side)
    run(first())
    run(second())
    run(first())


# ---------------------------------------------------------------- limits, forgeries, races


def test_the_largest_content_fits_every_column_and_is_found(backend):
    def cjk(n: int, start: int) -> str:  # 4-byte UTF-8, no spaces or punctuation
        return "".join(chr(0x20000 + (start + i) % 5000) for i in range(n))

    async def go():
        w = await make_write(backend, "s", cjk(tcontent.MAX_TITLE_CHARS, 0),
                             cjk(tcontent.MAX_SUMMARY_CHARS, 300),
                             cjk(tcontent.MAX_DETAIL_CHARS, 2000))
        longest = max(len(c.fts_text) for c in w.projection.chunks)
        assert longest > 30_000 and len(w.projection.topic_text) > 30_000
        (r,) = await publish(backend, w)
        got = await backend.get("s", r.ref)
        assert got.content == w.content
        res = await search(backend, "s", w.content.detail[20000:20002])
        assert [h.ref for h in res.hits] == [r.ref] and "detail_fts" in res.hits[0].matched_by
        res = await search(backend, "s", w.content.title[10:12])
        assert [h.ref for h in res.hits] == [r.ref] and "topic_fts" in res.hits[0].matched_by
    run(go())


def test_a_forged_projection_is_refused_and_writes_nothing(backend):
    import attrs

    from powercontext.core.errors import IntegrityError

    async def go():
        w = await make_write(backend, "s", "Forged", "S",
                             "First part. " * 150 + "\n\n" + "Second part. " * 150)
        chunks = w.projection.chunks
        assert len(chunks) > 1
        forged = (
            attrs.evolve(w.projection, chunks=chunks[:-1]),
            attrs.evolve(w.projection, chunks=tuple(reversed(chunks))),
            attrs.evolve(w.projection, topic_text="forged words"),
            attrs.evolve(w.projection, chunks=(attrs.evolve(chunks[0], fts_text="x"),
                                               *chunks[1:])),
        )
        for p in forged:
            with pytest.raises((IntegrityError, InvalidInputError)):
                await publish(backend, attrs.evolve(w, projection=p))
        assert await backend.heads("s") == ()
        assert (await search(backend, "s", "forged")).hits == ()
        (r,) = await publish(backend, w)
        assert await backend.heads("s") == (r.ref,)
    run(go())


def test_concurrent_updates_from_one_base_exactly_one_wins(db_url):
    async def go():
        backends = [OceanBaseTopicBackend(db_url) for _ in range(4)]
        try:
            (base,) = await publish(backends[0], await make_write(
                backends[0], "s", "Contended", "S", "Version zero."))
            writes = [await make_write(b, "s", "Contended", "S", f"Version {i + 1}.",
                                       base=base.ref) for i, b in enumerate(backends)]

            async def attempt(b, w):
                try:
                    await publish(b, w)
                    return "won"
                except RevisionConflictError:
                    return "conflict"

            outcomes = await asyncio.gather(*(attempt(b, w)
                                              for b, w in zip(backends, writes, strict=True)))
            assert sorted(outcomes) == ["conflict"] * 3 + ["won"]
            winner = writes[outcomes.index("won")]
            assert await backends[1].heads("s") == (winner.ref,)
            got = await backends[2].get("s", winner.ref)
            assert got.content == winner.content and got.based_on == base.ref
        finally:
            for b in backends:
                await b.close()
    run(go())
