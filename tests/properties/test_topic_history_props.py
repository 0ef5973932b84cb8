"""Properties of historical Topic selection (Topic Memory RFC, "Probe and historical Topic
selection"): over Probe results fused the way the backend fuses them, the selection is
the fused-rank prefix the threshold / maximum / minimum rules give, each Topic at its
best score over the Probes, the same whatever the Probe order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from powercontext.core.topic import history as h
from powercontext.core.topic.models import CHANNELS_FTS, CHANNELS_HYBRID, TopicHit, TopicRef
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.search import ChannelRow, fuse_channels

POOL = [TopicRef(f"topic_art_{c}", 1) for c in ["a", "b", "B", "z", "é", "\ue000",
                                                 "\U00010000", "aa", "a0"]] + \
    [TopicRef(f"topic_art_n{i:02d}", 1) for i in range(30)]


@st.composite
def probe_results(draw: st.DrawFn) -> tuple[list[list[TopicHit]], int]:
    """Per Probe: each enabled channel ranks some Topics of the pool; the hits are
    :func:`fuse_channels` of them (at most 20), as the backend returns them."""
    channels = draw(st.sampled_from([CHANNELS_FTS, CHANNELS_HYBRID]))
    # titles in an order of their own, with ties: equal scores break by content first
    order = draw(st.lists(st.integers(0, 9), min_size=len(POOL), max_size=len(POOL)))
    title = {ref: f"t{k}" for ref, k in zip(POOL, order, strict=True)}
    per_probe = []
    for _ in range(draw(st.integers(0, 4))):
        rows = {ch: [ChannelRow(ref, None, "") for ref in draw(
                    st.lists(st.sampled_from(POOL), unique=True, max_size=25))]
                for ch in channels}
        fused = fuse_channels(rows, 20)
        per_probe.append([TopicHit(f.ref, title[f.ref], "s", None, f.score, f.matched_by)
                          for f in fused])
    return per_probe, len(channels)


@st.composite
def history_settings(draw: st.DrawFn) -> ProcessingSettings:
    most = draw(st.integers(1, 20))
    return ProcessingSettings(history_max_candidates=most,
                              history_min_candidates=draw(st.integers(0, most)),
                              history_rrf_threshold=draw(st.sampled_from(
                                  [0, 25.0, 50, 70, 70.5, 90, 100])))


@given(probe_results(), history_settings(), st.randoms(use_true_random=False))
def test_selection_is_the_rule_prefix_of_the_best_scores(results, settings, rnd):
    per_probe, channels = results
    selected = h.select_history(per_probe, channels, settings)
    best: dict[str, float] = {}
    titles: dict[str, str] = {}
    for hits in per_probe:
        for x in hits:
            score = h.normalized_score(x.score, channels)
            assert 0 <= score <= 100
            best[x.ref.artifact_id] = max(best.get(x.ref.artifact_id, -1.0), score)
            titles[x.ref.artifact_id] = x.title
    # ties by content (title, summary), never first by the random id
    ranked = sorted(best, key=lambda a: (-best[a], titles[a].encode(), a.encode("utf-8")))
    qualified = [a for a in ranked if best[a] >= settings.history_rrf_threshold]
    want = qualified[:settings.history_max_candidates]
    if len(want) < settings.history_min_candidates:
        want = ranked[:min(settings.history_min_candidates, len(ranked))]
    assert [c.ref.artifact_id for c in selected] == want
    assert all(c.score == best[c.ref.artifact_id] for c in selected)
    assert len(selected) <= settings.history_max_candidates
    assert len({c.ref.artifact_id for c in selected}) == len(selected)
    for c in selected:  # the probes named found it, and its hit is one of theirs
        assert all(any(x.ref == c.ref for x in per_probe[i]) for i in c.probes)
        assert any(c.hit in per_probe[i] for i in c.probes)
    shuffled = list(per_probe)
    rnd.shuffle(shuffled)
    again = h.select_history(shuffled, channels, settings)
    assert [(c.ref, c.score) for c in again] == [(c.ref, c.score) for c in selected]
