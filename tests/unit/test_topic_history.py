"""core.topic.history: historical Topic selection for a Window (Topic Memory RFC, "Probe
and historical Topic selection"; TOPIC-MEMORY.md, "RRF normalised to 0..100")."""

from __future__ import annotations

from fractions import Fraction

import attrs
import pytest

from powercontext.core.errors import InvalidInputError, TopicProcessingError
from powercontext.core.topic import history as h
from powercontext.core.topic.models import TopicHit, TopicRef
from powercontext.core.topic.processing import ProcessingSettings

DEFAULT = ProcessingSettings()  # 20 / 70 / 5


def rrf(*ranks: int) -> float:
    """The fused score of a Topic at these ranks (one per channel it matched)."""
    return float(sum(Fraction(1, 60 + r) for r in ranks))


def hit(artifact: str, score: float, revision: int = 1) -> TopicHit:
    return TopicHit(TopicRef(f"topic_art_{artifact}", revision), f"title {artifact}",
                    "summary", None, score, ("topic_fts",))


def ids(selected: tuple[h.HistoryCandidate, ...]) -> list[str]:
    return [c.ref.artifact_id.removeprefix("topic_art_") for c in selected]


def test_normalized_score_is_over_the_best_possible_of_the_enabled_channels():
    assert h.normalized_score(rrf(1, 1), 2) == 100.0
    assert h.normalized_score(rrf(1), 2) == 50.0
    assert h.normalized_score(rrf(1, 1, 1, 1), 4) == 100.0
    assert h.normalized_score(rrf(1, 1), 4) == 50.0
    assert h.normalized_score(0.0, 2) == 0.0
    assert h.normalized_score(rrf(27, 27), 2) == pytest.approx(6100 / 87)  # 70.1
    assert h.normalized_score(rrf(28, 28), 2) < 70
    assert h.best_possible_score(2) == 2 / 61


@pytest.mark.parametrize("score", [-0.001, float("nan"), float("inf"), "1", True,
                                   rrf(1, 1) * 1.001])
def test_normalized_score_refuses_a_score_that_is_not_one(score):
    with pytest.raises(InvalidInputError) as err:
        h.normalized_score(score, 2)
    assert err.value.field == "score"


@pytest.mark.parametrize("channels", [0, 5, True, 2.0, "2"])
def test_channels_must_be_a_count_of_enabled_channels(channels):
    with pytest.raises(InvalidInputError) as err:
        h.select_history([[hit("a", 0.01)]], channels, DEFAULT)
    assert err.value.field == "channels"


def test_topics_meeting_the_threshold_are_selected_up_to_the_maximum():
    hits = [hit(f"{i:02d}", rrf(1, 1 + i % 10)) for i in range(25)]  # all >= 70
    selected = h.select_history([hits], 2, DEFAULT)
    assert len(selected) == 20
    assert all(c.score >= 70 for c in selected)
    order = sorted(range(25), key=lambda i: (-rrf(1, 1 + i % 10), f"{i:02d}"))
    assert ids(selected) == [f"{i:02d}" for i in order[:20]]


def test_fewer_than_the_minimum_qualifying_are_filled_in_fused_rank_order():
    hits = [hit("q1", rrf(1, 1)), hit("q2", rrf(2, 2))]  # 100, 98.4
    hits += [hit(f"low{i}", rrf(10 + i)) for i in range(8)]  # 43.6 down
    selected = h.select_history([hits[::-1]], 2, DEFAULT)
    assert ids(selected) == ["q1", "q2", "low0", "low1", "low2"]
    assert [c.score >= 70 for c in selected] == [True, True, False, False, False]


def test_fewer_than_the_minimum_existing_are_all_used():
    selected = h.select_history([[hit("b", rrf(40)), hit("a", rrf(50))]], 2, DEFAULT)
    assert ids(selected) == ["b", "a"]
    assert h.select_history([], 2, DEFAULT) == ()
    assert h.select_history([[], []], 4, DEFAULT) == ()


def test_more_than_the_minimum_qualifying_takes_no_filler():
    hits = [hit(f"q{i}", rrf(1, 1 + i)) for i in range(7)] + [hit("low", rrf(3))]
    selected = h.select_history([hits], 2, DEFAULT)
    assert ids(selected) == [f"q{i}" for i in range(7)]


def test_a_topic_keeps_its_best_score_over_the_probes():
    probe1 = [hit("a", rrf(30)), hit("b", rrf(1, 1))]
    probe2 = [hit("c", rrf(2)), hit("a", rrf(1, 2))]
    selected = h.select_history([probe1, probe2], 2, DEFAULT)
    by_id = {c.ref.artifact_id: c for c in selected}
    assert by_id["topic_art_a"].score == h.normalized_score(rrf(1, 2), 2)
    assert by_id["topic_art_a"].probes == (0, 1)
    assert by_id["topic_art_a"].hit is probe2[1]
    assert ids(selected) == ["b", "a", "c"]
    assert ids(h.select_history([probe2, probe1], 2, DEFAULT)) == ids(selected)


def test_equal_scores_and_content_tie_by_utf8_artifact_id():
    # code point (= UTF-8) order puts U+E000 before U+10000; UTF-16 order would not
    hits = [hit("\U00010000", rrf(5)), hit("\ue000", rrf(5)), hit("B", rrf(5)),
            hit("a", rrf(5))]
    hits = [attrs.evolve(x, title="same") for x in hits]
    assert ids(h.select_history([hits], 2, DEFAULT)) == ["B", "a", "\ue000", "\U00010000"]


def test_equal_scores_tie_by_content_before_the_random_id():
    """Topic ids are random: a tie broken by the id made two runs over the same Sources
    choose different history (and end with different Topics). Content decides first."""
    hits = [attrs.evolve(hit("a", rrf(5)), title="Zebra"),
            attrs.evolve(hit("b", rrf(5)), title="Apple"),
            attrs.evolve(hit("c", rrf(5)), title="Apple", summary="a summary")]
    assert ids(h.select_history([hits], 2, DEFAULT)) == ["c", "b", "a"]


def test_each_probe_hits_the_selected_topic_it_found_first_and_well_enough():
    selected = h.select_history(
        [[hit("a", rrf(1, 1)), hit("b", rrf(2, 3))], [hit("b", rrf(1, 2))],
         [hit("c", rrf(9))], [hit("a", rrf(1, 1)), attrs.evolve(hit("d", rrf(1, 1)),
                                                              title="A first")]],
        2, DEFAULT)
    found = h.probe_hits([[hit("a", rrf(1, 1)), hit("b", rrf(2, 3))],
                          [hit("b", rrf(1, 2))],
                          [hit("c", rrf(9))],                 # 50 at best: under 70
                          [hit("a", rrf(1, 1)), attrs.evolve(hit("d", rrf(1, 1)),
                                                             title="A first")],
                          [hit("zz", rrf(1, 1))]],            # not selected
                         2, selected, DEFAULT)
    assert [None if r is None else r.artifact_id.removeprefix("topic_art_")
            for r in found] == ["a", "b", None, "d", None]


def test_two_revisions_of_one_topic_over_the_probes_is_a_head_conflict():
    with pytest.raises(TopicProcessingError) as err:
        h.select_history([[hit("a", rrf(1), 1)], [hit("a", rrf(1), 2)]], 2, DEFAULT)
    assert (err.value.code, err.value.stage, err.value.terminal) == (
        "head_conflict", "history", False)


def test_settings_change_the_threshold_maximum_and_minimum():
    hits = [hit(f"{i:02d}", rrf(1 + 3 * i)) for i in range(12)]  # 50 and below
    none_needed = ProcessingSettings(history_min_candidates=0)
    assert h.select_history([hits], 2, none_needed) == ()
    everything = ProcessingSettings(history_rrf_threshold=0, history_max_candidates=9)
    assert len(h.select_history([hits], 2, everything)) == 9
    half = ProcessingSettings(history_rrf_threshold=50.0)
    assert ids(h.select_history([hits], 2, half)) == ["00", "01", "02", "03", "04"]
    assert h.select_history([hits], 2, half)[0].score == 50.0
    at_threshold = ProcessingSettings(history_rrf_threshold=50.0, history_min_candidates=0)
    assert ids(h.select_history([hits], 2, at_threshold)) == ["00"]  # >= threshold
    top = ProcessingSettings(history_rrf_threshold=100, history_min_candidates=0)
    assert ids(h.select_history([[hit("x", rrf(1, 1)), hit("y", rrf(1, 2))]], 2, top)) == ["x"]


def test_probe_queries_coalesce_duplicates_and_skip_queries_without_terms():
    queries = ["Window policy", "", "   ", "?!", "the", "Window policy", "cursor CAS"]
    assert h.probe_queries(queries) == ("Window policy", "cursor CAS")
    with pytest.raises(InvalidInputError) as err:
        h.probe_queries(["ok", 3])
    assert err.value.field == "query"
