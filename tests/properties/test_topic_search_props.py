"""Properties of Topic search ranking (TOPIC-MEMORY.md, "Topic search"): at most one
hit per Topic, matched_by names only the channels given (in CHANNELS_HYBRID order),
scores are the exact RRF sums, ties break the same way every time, and the collapse
keeps one admitted row per Topic within the budget."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import analyzer
from powercontext.core.search_admission import fts_admits, vector_admits
from powercontext.core.topic import search as ts
from powercontext.core.topic.models import CHANNELS_HYBRID, TopicRef

A = analyzer.V1
IDS = st.sampled_from([f"topic_art_{c}" for c in ["a", "b", "c", "d", "e", "\u00e9", "z",
                                                  "a0", "A", "\U0001f600", "\uffff"]])
WORDS = ["alpha", "beta", "gamma", "delta", "x"]


def rows_for(channel: str) -> st.SearchStrategy[list[ts.ChannelRow]]:
    detail = channel.startswith("detail")
    vector = channel.endswith("vector")
    row = st.builds(
        ts.ChannelRow,
        st.builds(TopicRef, IDS, st.just(1)),
        st.integers(0, 47) if detail else st.none(),
        st.just("") if vector else st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join),
        st.floats(0, 2) if vector else st.none(),
    )
    return st.lists(row, max_size=30)


channel_maps = st.fixed_dictionaries(
    {}, optional={c: rows_for(c) for c in CHANNELS_HYBRID})


@given(channel_maps, st.integers(1, 20))
def test_fused_topics_are_unique_ordered_and_name_only_given_channels(channels, limit):
    fused = ts.fuse_channels(channels, limit)
    ids = [f.ref.artifact_id for f in fused]
    assert len(ids) == len(set(ids)) <= limit
    everyone = {r.ref.artifact_id for rows in channels.values() for r in rows}
    assert len(fused) == min(limit, len(everyone))
    for f in fused:
        assert set(f.matched_by) <= set(channels)
        assert list(f.matched_by) == [c for c in CHANNELS_HYBRID if c in f.matched_by]
        assert set(f.best_chunk) <= set(f.matched_by) & {"detail_fts", "detail_vector"}
        # the exact RRF sum: each channel at the Topic's first rank
        expected = Fraction(0)
        for c in f.matched_by:
            order = list(dict.fromkeys(r.ref.artifact_id for r in channels[c]))
            expected += Fraction(1, 60 + order.index(f.ref.artifact_id) + 1)
        assert f.score == float(expected)
    keys = [(-f.score, f.ref.artifact_id.encode(), f.ref.revision) for f in fused]
    assert keys == sorted(keys)


@given(st.lists(IDS, min_size=1, max_size=4, unique=True), st.randoms())
def test_ties_break_the_same_way_for_any_input_order(ids, rnd):
    # every Topic at rank 1 of its own channel: all scores equal
    def fuse(order):
        return ts.fuse_channels({"topic_fts": [ts.ChannelRow(TopicRef(i, 1), None, "")
                                               for i in order[:1]],
                                 "detail_fts": [ts.ChannelRow(TopicRef(i, 1), 0, "")
                                                for i in order[1:2]],
                                 "topic_vector": [ts.ChannelRow(TopicRef(i, 1), None, "",
                                                                0.1) for i in order[2:3]],
                                 "detail_vector": [ts.ChannelRow(TopicRef(i, 1), 5, "", 0.1)
                                                   for i in order[3:4]]},
                                20)
    first = [f.ref for f in fuse(ids)]
    shuffled = list(ids)
    rnd.shuffle(shuffled)
    shuffled_refs = [f.ref for f in fuse(shuffled)]
    assert len({f.score for f in fuse(ids)}) == 1
    assert sorted(first, key=lambda r: r.artifact_id.encode()) == first
    assert sorted(shuffled_refs, key=lambda r: r.artifact_id.encode()) == shuffled_refs


@given(st.sampled_from(CHANNELS_HYBRID), st.data(), st.integers(1, 12),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
def test_collapse_keeps_one_admitted_row_per_topic_within_the_budget(channel, data, budget,
                                                                     query):
    rows = data.draw(rows_for(channel))
    terms = tuple(dict.fromkeys(query))
    kept = ts.collapse(channel, rows, terms, budget)
    ids = [r.ref.artifact_id for r in kept]
    assert len(ids) == len(set(ids)) <= budget

    def admitted(r):
        if channel.endswith("fts"):
            return fts_admits(terms, r.fts_text.split())
        return vector_admits(r.distance)
    expected = []
    seen = set()
    for r in rows:
        if admitted(r) and r.ref.artifact_id not in seen and len(expected) < budget:
            seen.add(r.ref.artifact_id)
            expected.append(r)
    assert kept == expected
    # paging gives the same rows
    collector = ts.ChannelCollector(channel, terms, budget)
    for i in range(0, len(rows), 3):
        if collector.add(rows[i:i + 3]):
            break
    assert collector.rows == kept
