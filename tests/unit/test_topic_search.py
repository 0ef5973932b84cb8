"""core.topic.search: request checks, per-channel admission and collapse, RRF fusion
with exact ties, and the snippet chunk (TOPIC-MEMORY.md, "Topic search")."""

from __future__ import annotations

from fractions import Fraction

import pytest

from powercontext.core import analyzer
from powercontext.core.errors import IntegrityError, InvalidInputError
from powercontext.core.query import MAX_QUERY_CHARS
from powercontext.core.topic import search as ts
from powercontext.core.topic.models import TopicRef, TopicSearchRequest

A = analyzer.V1_PORTER


def ref(name: str, revision: int = 1) -> TopicRef:
    return TopicRef(f"topic_art_{name}", revision)


def fts(name: str, text: str, ordinal: int | None = None, revision: int = 1) -> ts.ChannelRow:
    return ts.ChannelRow(ref(name, revision), ordinal, A.searchable_text(text))


def vec(name: str, distance: float, ordinal: int | None = None) -> ts.ChannelRow:
    return ts.ChannelRow(ref(name), ordinal, "", distance)


@pytest.mark.parametrize("bad", [0, 21, -1, True, False, "10", 10.0, None])
def test_check_limit_refuses(bad: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        ts.check_limit(bad)
    assert info.value.field == "limit"


def test_check_limit_accepts_1_to_20() -> None:
    assert [ts.check_limit(n) for n in (1, 10, 20)] == [1, 10, 20]


def test_check_request_gives_scope_terms_limit() -> None:
    scope, terms, limit = ts.check_request(
        TopicSearchRequest("repo:/x", 'deploy "AND" OR NEAR(a b) * -x ^y', 5), A)
    assert scope == "repo:/x" and limit == 5
    assert terms == A.query_terms("deploy AND OR NEAR a b x y")  # FTS syntax is plain text


@pytest.mark.parametrize(("request_", "field"), [
    (TopicSearchRequest("", "q"), "scope_id"),
    (TopicSearchRequest("x" * 257, "q"), "scope_id"),
    (TopicSearchRequest("s", ""), "query"),
    (TopicSearchRequest("s", "   "), "query"),
    (TopicSearchRequest("s", "the and of"), "query"),  # only stopwords
    (TopicSearchRequest("s", "!!! ..."), "query"),
    (TopicSearchRequest("s", "a" * (MAX_QUERY_CHARS + 1)), "query"),
    (TopicSearchRequest("s", " ".join(f"w{i}" for i in range(65))), "query"),
    (TopicSearchRequest("s", "\ud800 x"), "query"),
    (TopicSearchRequest("s", 7), "query"),  # type: ignore[arg-type]
    (TopicSearchRequest("s", "q", 0), "limit"),
    (TopicSearchRequest("s", "q", 21), "limit"),
    (TopicSearchRequest("s", "q", True), "limit"),
    (TopicSearchRequest("s", "q", "10"), "limit"),  # type: ignore[arg-type]
    ("not a request", "request"),
])
def test_check_request_refuses_with_the_field(request_: object, field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        ts.check_request(request_, A)
    assert info.value.field == field


def test_check_request_handles_cjk_and_nfd() -> None:
    _, terms, _ = ts.check_request(TopicSearchRequest("s", "部署服务器"), analyzer.V1)
    assert "b_90e8_7f72" in terms
    _, nfd, _ = ts.check_request(TopicSearchRequest("s", "cafe\u0301"), A)
    _, nfc, _ = ts.check_request(TopicSearchRequest("s", "caf\u00e9"), A)
    assert nfd == nfc


def test_collapse_keeps_the_first_admitted_row_per_topic_then_the_budget() -> None:
    terms = A.query_terms("deploy kubernetes")
    rows = [fts("a", "unrelated words", 0), fts("a", "deploy it", 3), fts("a", "deploy", 1),
            fts("b", "kubernetes deploy", 0), fts("c", "deploy", 2), fts("d", "deploy", 0)]
    kept = ts.collapse("detail_fts", rows, terms, 2)
    assert [(r.ref.artifact_id, r.ordinal) for r in kept] == [
        ("topic_art_a", 3), ("topic_art_b", 0)]


def test_collapse_applies_the_fts_floor_on_long_queries() -> None:
    terms = A.query_terms("alpha beta gamma delta epsilon")
    rows = [fts("a", "alpha"), fts("b", "alpha beta")]
    assert [r.ref.artifact_id for r in ts.collapse("topic_fts", rows, terms, 10)] == [
        "topic_art_b"]


def test_collapse_applies_the_vector_floor() -> None:
    rows = [vec("a", 0.2, 0), vec("b", 1.2, 0), vec("c", None, 0)]  # type: ignore[arg-type]
    assert [r.ref.artifact_id for r in ts.collapse("detail_vector", rows, (), 10)] == [
        "topic_art_a"]


def test_channel_collector_pages_until_full() -> None:
    terms = A.query_terms("deploy")
    c = ts.ChannelCollector("topic_fts", terms, 2)
    assert not c.add([fts("a", "deploy"), fts("a", "deploy"), fts("x", "nothing")])
    assert c.add([fts("b", "deploy"), fts("c", "deploy")])
    assert [r.ref.artifact_id for r in c.rows] == ["topic_art_a", "topic_art_b"]


def test_budgets() -> None:
    assert ts.channel_budget(1) == 32 and ts.channel_budget(20) == 80
    assert ts.vector_k(20) == 3840 <= 4096


def test_fuse_channels_rrf_scores_matched_by_and_best_chunks() -> None:
    fused = ts.fuse_channels({
        "detail_vector": [vec("b", 0.1, 4)],
        "topic_fts": [fts("a", "x"), fts("b", "x")],
        "detail_fts": [fts("b", "x", 2), fts("c", "x", 0)],
    }, 10)
    assert [f.ref.artifact_id for f in fused] == ["topic_art_b", "topic_art_a", "topic_art_c"]
    b = fused[0]
    assert b.matched_by == ("topic_fts", "detail_fts", "detail_vector")
    assert b.score == float(Fraction(1, 62) + Fraction(1, 61) + Fraction(1, 61))
    assert b.best_chunk == {"detail_fts": 2, "detail_vector": 4}
    assert fused[1].best_chunk == {}


def test_fuse_channels_ties_break_by_utf8_id_then_revision() -> None:
    a = [fts("b", "x"), fts("\u00e9", "x"), fts("a", "x")]
    b = [fts("a", "x"), fts("\u00e9", "x"), fts("b", "x")]
    tie = ts.fuse_channels({"topic_fts": a, "detail_fts": b}, 20)
    # a and b tie (ranks 1 + 3); "é" (U+00E9, UTF-8 c3 a9) sorts after ASCII
    assert [f.ref.artifact_id for f in tie] == ["topic_art_a", "topic_art_b",
                                                "topic_art_\u00e9"]
    assert tie[0].score == tie[1].score
    other = ts.fuse_channels({"topic_fts": [ts.ChannelRow(ref("a", 2), None, ""),
                                            ts.ChannelRow(ref("a0", 1), None, "")],
                              "detail_fts": [ts.ChannelRow(ref("a0", 1), 0, ""),
                                             ts.ChannelRow(ref("a", 2), 0, "")]}, 5)
    assert [f.ref for f in other] == [ref("a", 2), ref("a0", 1)]


def test_fuse_channels_exact_fraction_ties() -> None:
    # ranks 6 + 39 and 12 + 28 sum to the same fraction; float sums would differ
    one = [fts(f"f{i:02d}", "x") for i in range(40)]
    two = [fts(f"g{i:02d}", "x") for i in range(40)]
    one.insert(5, fts("y", "x"))   # rank 6
    one.insert(11, fts("x", "x"))  # rank 12
    two.insert(27, fts("x", "x"))  # rank 28
    two.insert(38, fts("y", "x"))  # rank 39
    fused = ts.fuse_channels({"topic_fts": one, "detail_fts": two}, 20)
    assert [f.ref.artifact_id for f in fused[:2]] == ["topic_art_x", "topic_art_y"]
    assert fused[0].score == fused[1].score == float(Fraction(1, 72) + Fraction(1, 88))


def test_fuse_channels_limit_and_unknown_channel_and_mixed_revisions() -> None:
    rows = [fts(f"t{i:02d}", "x") for i in range(30)]
    assert len(ts.fuse_channels({"topic_fts": rows}, 20)) == 20
    with pytest.raises(InvalidInputError):
        ts.fuse_channels({"memory_fts": rows}, 5)  # type: ignore[dict-item]
    with pytest.raises(IntegrityError):
        ts.fuse_channels({"topic_fts": [fts("a", "x", revision=1)],
                          "detail_fts": [fts("a", "x", 0, revision=2)]}, 5)
    with pytest.raises(InvalidInputError):
        ts.fuse_channels({"topic_fts": rows}, 0)


def test_snippet_prefers_detail_fts_then_detail_vector_then_none() -> None:
    terms = A.query_terms("needle")
    texts = {0: "a stable first window of text", 1: "hay " * 200 + "needle " + "hay " * 200}
    both = ts.FusedTopic(ref("a"), 0.1, ("detail_fts", "detail_vector"),
                         {"detail_fts": 1, "detail_vector": 0})
    assert ts.snippet_chunk(both) == ("match", 1)
    snip = ts.topic_snippet(both, texts, terms, A)
    assert snip is not None and "needle" in snip
    vec_only = ts.FusedTopic(ref("a"), 0.1, ("detail_vector",), {"detail_vector": 0})
    assert ts.topic_snippet(vec_only, texts, terms, A) == texts[0]
    title_only = ts.FusedTopic(ref("a"), 0.1, ("topic_fts",), {})
    assert ts.snippet_chunk(title_only) is None
    assert ts.topic_snippet(title_only, texts, terms, A) is None
    with pytest.raises(IntegrityError):
        ts.topic_snippet(both, {}, terms, A)
    # no term placed in the detail_fts chunk: the detail_vector chunk's stable window
    assert ts.topic_snippet(both, texts, A.query_terms("absent"), A) == texts[0]
    fts_only = ts.FusedTopic(ref("a"), 0.1, ("detail_fts",), {"detail_fts": 0})
    assert ts.topic_snippet(fts_only, texts, A.query_terms("absent"), A) is None
