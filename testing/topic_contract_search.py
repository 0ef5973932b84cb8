"""Topic contract group: search (Topic Memory RFC, "Detail chunks and
deployment-enabled retrieval channels"; TOPIC-MEMORY.md, "Topic search"): each channel
collapsed by Topic, the per-channel limit after the collapse, RRF, one slot per Topic,
``matched_by`` within the enabled channels, snippets, Scope isolation, query bounds."""

from __future__ import annotations

import asyncio
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from powercontext.core.errors import InvalidInputError
from powercontext.core.query import MAX_QUERY_CHARS, MAX_QUERY_TERMS
from powercontext.core.topic.models import CHANNELS_FTS, CHANNELS_HYBRID
from powercontext.core.topic.snippets import SNIPPET_CHARS
from powercontext.testing.base import run
from powercontext.testing.strategies import NASTY_QUERIES
from powercontext.testing.topic_base import TopicContractBase, TopicKit
from powercontext.testing.topic_strategies import (
    BAD_LIMITS,
    BAD_SCOPE_IDS,
    TOPIC_VOCABULARY,
    topic_contents,
)

__all__ = ["TopicSearchContract"]

_FILLER = ("The orchard team wrote this paragraph about irrigation schedules, soil "
           "samples, pruning calendars and the weather station readings of the week.")


def _long_detail(word: str, blocks: int) -> str:
    return "\n\n".join(f"{_FILLER} Block {i} mentions {word}." for i in range(blocks))


def _check_hits(result, channels) -> None:
    refs = [h.ref.artifact_id for h in result.hits]
    assert len(refs) == len(set(refs)), "one slot per Topic"
    assert result.channels == channels
    for h in result.hits:
        assert h.matched_by, h
        assert set(h.matched_by) <= set(channels), h.matched_by
        assert list(h.matched_by) == [c for c in CHANNELS_HYBRID if c in h.matched_by]
        assert h.snippet is None or 0 < len(h.snippet) <= SNIPPET_CHARS
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)


class TopicSearchContract(TopicContractBase):
    """search(): collapse, one slot per Topic, channels, snippets, limit prefixes,
    Scopes, bad queries and limits, CJK, NFD and full-text syntax."""

    @staticmethod
    def _channels(shape):
        return CHANNELS_HYBRID if shape == "hybrid" else CHANNELS_FTS

    def test_one_hit_per_topic_with_a_snippet_for_detail_hits(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                many = await kit.create("s", "Orchard log", "weekly notes",
                                        _long_detail("kiwi", 40))
                title = await kit.create("s", "Kiwi varieties", "which kiwi to plant",
                                         "Hardy vines do well in the north.")
                res = await kit.search("s", "kiwi", 20)
                _check_hits(res, self._channels(shape))
                by_ref = {h.ref: h for h in res.hits}
                assert set(by_ref) >= {many.ref, title.ref}
                hit = by_ref[many.ref]
                assert "detail_fts" in hit.matched_by
                assert hit.snippet is not None and "kiwi" in hit.snippet
                assert "topic_fts" in by_ref[title.ref].matched_by
                if shape == "fts":
                    assert by_ref[title.ref].snippet is None
                    assert by_ref[title.ref].matched_by == ("topic_fts",)

        run(body())

    def test_hybrid_searches_the_vector_channels(
            self, topic_backend_factory, topic_embedding_model):
        """The exact title + summary text and the exact Detail are nearest to their own
        vectors, so the vector channels match them; a query no full-text channel admits
        (misspelt words: no shared Analyzer token) that the deterministic model still
        places near the Detail is a vector-only detail hit with a stable snippet."""
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
        from powercontext.core.topic.snippets import stable_snippet

        async def body():
            async with self._kit(topic_backend_factory, "hybrid",
                                 topic_embedding_model) as kit:
                detail = ("Kiwifruit vineyard trellis pruning schedule for the northern "
                          "orchard.")
                rev = await kit.create("s", "Orchard plans", "What we do each season",
                                       detail)
                c = rev.content
                for query, channels in ((f"{c.title}\n\n{c.summary}", {"topic_vector"}),
                                        (c.detail, {"detail_vector", "detail_fts"})):
                    res = await kit.search("s", query)
                    _check_hits(res, CHANNELS_HYBRID)
                    assert [h.ref for h in res.hits] == [rev.ref]
                    assert channels <= set(res.hits[0].matched_by), res.hits[0].matched_by
                if isinstance(topic_embedding_model, DeterministicEmbedding):
                    res = await kit.search("s", "kiwifrruit vinneyard trelllis prunning "
                                           "schedulle")
                    assert [h.ref for h in res.hits] == [rev.ref]
                    (hit,) = res.hits
                    assert "detail_vector" in hit.matched_by
                    assert not {"topic_fts", "detail_fts"} & set(hit.matched_by)
                    assert hit.snippet == stable_snippet(detail)

        run(body())

    def test_a_topic_with_many_matching_chunks_hides_no_other(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                await kit.create("s", "Mango everywhere", "mango mango",
                                 _long_detail("mango", 60))
                others = [await kit.create("s", f"Note {i}", "a short note",
                                           f"One line that names mango, number {i}.")
                          for i in range(24)]
                res = await kit.search("s", "mango", 20)
                _check_hits(res, self._channels(shape))
                assert len(res.hits) == 20
                wide = {h.ref for h in (await kit.search("s", "mango", 20)).hits}
                assert len(wide & {o.ref for o in others}) >= 19

        run(body())

    def test_a_smaller_limit_returns_a_prefix_of_a_larger_one(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                words = TOPIC_VOCABULARY
                for i in range(30):
                    a, b = words[i % len(words)], words[(i * 3 + 1) % len(words)]
                    await kit.create("s", f"{a} topic {i}", f"{b} and {a}",
                                     f"{_FILLER} {a} {b} {words[i % 5]}.")
                for query in ("alpha bravo", "charlie", "delta echo foxtrot golf"):
                    wide = [(h.ref, h.score, h.matched_by)
                            for h in (await kit.search("s", query, 20)).hits]
                    for limit in (1, 3, 7, 12):
                        got = [(h.ref, h.score, h.matched_by)
                               for h in (await kit.search("s", query, limit)).hits]
                        assert got == wide[:limit], (query, limit)

        run(body())

    def test_limit_prefix_property(self, topic_backend_factory, topic_embedding_model):
        @settings(max_examples=8, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture,
                                         HealthCheck.too_slow])
        @given(contents=st.lists(topic_contents(), min_size=1, max_size=12),
               query=st.lists(st.sampled_from(TOPIC_VOCABULARY), min_size=1, max_size=3),
               limit=st.integers(1, 19))
        def prop(contents, query, limit):
            async def body():
                async with self._kit(topic_backend_factory, "fts",
                                     topic_embedding_model) as kit:
                    for title, summary, detail in contents:
                        await kit.create("s", title, summary, detail)
                    q = " ".join(query)
                    wide = (await kit.search("s", q, 20)).hits
                    small = (await kit.search("s", q, limit)).hits
                    assert small == wide[:limit]
                    _check_hits((await kit.search("s", q, 20)), CHANNELS_FTS)
                    want = {t for t, s, d in contents}
                    assert {h.title for h in wide} <= want

            run(body())

        prop()

    def test_ties_break_the_same_way_every_time(
            self, topic_backend_factory, shape, topic_embedding_model):
        """Topics with the same content tie in every engine's scoring: whatever order an
        engine gives such rows, a search answers the same hits in the same order every
        time and at every limit (Topic Memory RFC, RRF; TOPIC-MEMORY.md, "Topic
        search": ties by score, then UTF-8 artifact_id, then revision)."""

        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                revs = [await kit.create("s", "Kiwi twin", "the same kiwi summary",
                                         "The same kiwi detail.") for _ in range(6)]
                first = (await kit.search("s", "kiwi twin", 20)).hits
                assert {h.ref for h in first} == {r.ref for r in revs}
                for i in range(len(first) - 1):
                    a, b = first[i], first[i + 1]
                    assert a.score > b.score or (a.score == b.score and (
                        a.ref.artifact_id.encode(), a.ref.revision) < (
                        b.ref.artifact_id.encode(), b.ref.revision)), (a, b)
                for limit in (20, 3, 20, 1):
                    again = (await kit.search("s", "kiwi twin", limit)).hits
                    assert again == first[:limit]

        run(body())

    def test_search_never_leaves_its_scope(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                a = await kit.create("repo:/a", "Kiwi A", "kiwi in a", "Kiwi detail A.")
                b = await kit.create("repo:/b", "Kiwi B", "kiwi in b", "Kiwi detail B.")
                assert [h.ref for h in (await kit.search("repo:/a", "kiwi")).hits] == [a.ref]
                assert [h.ref for h in (await kit.search("repo:/b", "kiwi")).hits] == [b.ref]
                assert (await kit.search("repo:/c", "kiwi")).hits == ()

        run(body())

    def test_old_revisions_are_never_hits(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                r1 = await kit.create("s", "Kiwi", "kiwi", _long_detail("kiwi", 12))
                r2 = await kit.update("s", r1.ref, "Plum", "plum", _long_detail("plum", 3))
                assert (await kit.search("s", "kiwi")).hits == ()
                assert [h.ref for h in (await kit.search("s", "plum")).hits] == [r2.ref]

        run(body())

    def test_bad_queries_limits_and_scopes_are_bad_input(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                await kit.create("s", "Kiwi", "kiwi", "Kiwi.")
                for limit in BAD_LIMITS:
                    with pytest.raises(InvalidInputError) as info:
                        await kit.search("s", "kiwi", limit)
                    assert info.value.field == "limit", limit
                too_many = " ".join(f"kiwi{i}" for i in range(MAX_QUERY_TERMS + 1))
                for q in ("x" * (MAX_QUERY_CHARS + 1), too_many, None, 42):
                    with pytest.raises(InvalidInputError) as info:
                        await kit.search("s", q)
                    assert info.value.field == "query"
                for scope in BAD_SCOPE_IDS:
                    with pytest.raises(InvalidInputError) as info:
                        await kit.search(scope, "kiwi")
                    assert info.value.field == "scope_id"
                assert len((await kit.search("s", "kiwi", 20)).hits) == 1
                assert len((await kit.search("s", "kiwi", 1)).hits) == 1

        run(body())

    def test_the_query_vector_follows_the_shape(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            from powercontext.core.topic.models import TopicSearchRequest

            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                await kit.create("s", "Kiwi", "kiwi", "Kiwi.")
                request = TopicSearchRequest("s", "kiwi")
                vector = (await topic_embedding_model.embed(("kiwi",))).vectors[0]
                if shape == "fts":
                    with pytest.raises(InvalidInputError) as info:
                        await kit.backend.search(request, vector)
                    assert info.value.field == "query_vector"
                else:
                    with pytest.raises(InvalidInputError) as info:
                        await kit.backend.search(request, None)
                    assert info.value.field == "query_vector"
                    for bad in ((1.0,), (float("nan"),) * len(vector), (0.0,) * len(vector)):
                        with pytest.raises(InvalidInputError) as info:
                            await kit.backend.search(request, bad)
                        assert info.value.field == "query_vector"
                    assert len((await kit.backend.search(request, vector)).hits) == 1

        run(body())

    def test_syntax_cjk_nfd_and_stopwords(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                cjk = await kit.create("s", "使用中文记录偏好", "日本語のテキストです",
                                       "한국어 문장을 검색합니다. ภาษาไทยไม่มีช่องว่าง")
                nfd = await kit.create("s", unicodedata.normalize("NFD", "Café résumé"),
                                       "naïve notes",
                                       'multi-agent TODO: fix 50% of @name in 3.11.7 '
                                       'AND OR NOT NEAR (parens) "quoted" 🙂')
                analyzer = await kit.backend.analyzer()
                for q in NASTY_QUERIES:
                    if analyzer.query_terms(q):
                        _check_hits(await kit.search("s", q), self._channels(shape))
                    else:  # nothing to search for: bad input, as core.topic.search says
                        with pytest.raises(InvalidInputError) as info:
                            await kit.search("s", q)
                        assert info.value.field == "query", repr(q)
                for q, want in (("中文", cjk), ("テキ", cjk), ("문장", cjk),
                                (unicodedata.normalize("NFC", "résumé"), nfd),
                                (unicodedata.normalize("NFD", "CAFÉ"), nfd),
                                ("multi-agent", nfd), ("TODO: fix", nfd)):
                    hits = (await kit.search("s", q)).hits
                    assert want.ref in [h.ref for h in hits], q
                    if shape == "fts":
                        assert [h.ref for h in hits] == [want.ref], q
                blank = [q for q in ("", "   ", "the of and", "🙂🚀", "(*) -- :")
                         if not analyzer.query_terms(q)]
                assert len(blank) >= 3
                for q in (*blank, "\ud800", "kiwi \udfff résumé"):
                    with pytest.raises(InvalidInputError) as info:
                        await kit.search("s", q)
                    assert info.value.field == "query", repr(q)

        run(body())

    def test_readers_never_see_a_partial_or_mixed_revision(
            self, topic_backend_factory, topic_backend_reopen, shape, topic_embedding_model):
        """Searches and gets racing a chain of UPDATEs (on a second connection when the
        backend can reopen its database) see each hit's title, summary and snippet from
        exactly the Revision the hit names."""

        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                def content(n):
                    return (f"Kiwi rev{n}", f"kiwi summary rev{n}",
                            _long_detail(f"kiwi rev{n}", 6))

                head = (await kit.create("s", *content(1))).ref
                done = asyncio.Event()

                async def writer():
                    nonlocal head
                    for n in range(2, 8):
                        head = (await kit.update("s", head, *content(n))).ref
                    done.set()

                async def reader(reader_kit: TopicKit):
                    seen = 0
                    while not done.is_set() or seen == 0:
                        for h in (await reader_kit.search("s", "kiwi rev", 5)).hits:
                            n = h.ref.revision
                            assert (h.title, h.summary) == content(n)[:2]
                            assert h.snippet is None or f"rev{n}" in h.snippet or \
                                "rev" not in h.snippet
                            got = await reader_kit.backend.get("s", h.ref)
                            assert got.content.title == f"Kiwi rev{n}"
                            seen += 1
                        await asyncio.sleep(0)
                    return seen

                other = kit
                if topic_backend_reopen is not None:
                    other = TopicKit(topic_backend_reopen(kit.backend, kit.backend_profile),
                                     kit.model)
                try:
                    _, seen = await asyncio.gather(writer(), reader(other))
                finally:
                    if other is not kit:
                        await other.backend.close()
                assert seen >= 1

        run(body())
