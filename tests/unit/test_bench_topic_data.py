"""The Topic corpus and the raw fusion of the performance benchmark (bench/perf/
topic_data.py, topic_engines.py; issue 12): Topics built from LoCoMo are distinct,
within the content limits, cite only stored turns and come out the same every run; the
raw side's collapse and RRF keep the library's rules (one slot per Topic, admission per
row, ties by score, UTF-8 artifact_id, revision)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.perf import topic_data, topic_engines  # noqa: E402
from bench.perf.common import DEFAULT_DATA  # noqa: E402
from powercontext.core.topic import content as limits  # noqa: E402

SAMPLE = [
    {
        "sample_id": "tiny 1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:00 pm on 1 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! How are you?"},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "I adopted a puppy, Biscuit.",
                 "blip_caption": "a photo of a puppy"},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "I started painting sunsets."},
                {"speaker": "Ben", "dia_id": "D1:4", "text": "Thanks!"},
                {"speaker": "Ana", "dia_id": "D1:5", "text": "  "},
            ],
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "Biscuit loves the lake."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "My lake painting won a prize."},
            ],
        },
        "observation": {
            "session_1_observation": {
                "Ben": [["Ben adopted a puppy named Biscuit.", "D1:2"]],
                "Ana": [["Ana paints sunsets.", ["D1:3"]]],
            }
        },
        "qa": [],
    }
]


def _sessions(tmp_path: Path) -> list[topic_data.Session]:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(SAMPLE), encoding="utf-8")
    return topic_data.load_sessions(path)


def test_sessions_keep_turns_captions_and_observations(tmp_path: Path) -> None:
    s1, s2 = _sessions(tmp_path)
    assert (s1.index, s1.date, s1.speakers) == (1, "1:00 pm on 1 May, 2023", ("Ana", "Ben"))
    assert s2.date == "session 2"  # no date in the file
    assert [t.source_id for t in s1.turns] == [f"locomo:tiny_1:D1:{i}" for i in (1, 2, 3, 4)]
    assert s1.turns[1].text == "I adopted a puppy, Biscuit. [shares a photo of a puppy]"
    assert dict(s1.observations)["locomo:tiny_1:D1:3"] == ("Ana paints sunsets.",)


def test_topics_are_distinct_reproducible_and_cite_their_turns(tmp_path: Path) -> None:
    sessions = _sessions(tmp_path)
    topics = topic_data.make_topics(sessions, 40)
    assert len(topics) == 40
    assert len({(t.title, t.summary, t.detail) for t in topics}) == 40
    assert topics == topic_data.make_topics(sessions, 40)  # the same every run
    assert topic_data.make_topics(sessions, 10) == topics[:10]  # a prefix
    stored = {s.source_id for s in topic_data.turn_sources(sessions)}
    for t in topics:
        assert t.sources and set(t.sources) <= stored and list(t.sources) == sorted(t.sources)
        # the detail holds every cited turn
        texts = {x.source_id: x.text for s in sessions for x in s.turns}
        assert all(texts[sid] in t.detail for sid in t.sources)
    first = topics[0]
    assert first.title == ("Ana and Ben, 1:00 pm on 1 May, 2023: Ben adopted a puppy named "
                           "Biscuit.")
    assert first.detail.startswith("## Session 1 (1:00 pm on 1 May, 2023)\n\n**Ana:** Hi")
    assert "### Facts\n\n- Ben adopted a puppy named Biscuit.\n- Ana paints sunsets." in (
        first.detail)
    assert "(take" not in first.title and topics[-1].title.endswith(")")


def test_locomo_topics_fit_the_content_limits() -> None:
    sessions = topic_data.load_sessions(DEFAULT_DATA)
    topics = topic_data.make_topics(sessions, 10_000)
    assert len({(t.title, t.summary, t.detail) for t in topics}) == 10_000
    assert max(len(t.title) for t in topics) <= limits.MAX_TITLE_CHARS
    assert max(len(t.summary) for t in topics) <= limits.MAX_SUMMARY_CHARS
    assert max(len(t.detail) for t in topics) <= limits.MAX_DETAIL_CHARS
    assert min(len(t.sources) for t in topics) >= 2  # no one-turn Topic
    assert len({topic_data.topic_id(i) for i in range(1000)}) == 1000


def test_topic_ids_are_reproducible_and_sort_by_index() -> None:
    ids = [topic_data.topic_id(i) for i in range(50)]
    assert ids == [topic_data.topic_id(i) for i in range(50)]
    assert ids == sorted(ids) and all(i.startswith("topic_art") for i in ids)


_keys = st.tuples(st.sampled_from(["a", "b", "c", "é", "z"]), st.integers(1, 3))


@given(rows=st.lists(st.tuples(_keys, st.lists(st.sampled_from("xyz"), max_size=3)),
                     max_size=30),
       budget=st.integers(1, 6))
def test_raw_collapse_keeps_the_first_admitted_row_of_each_topic(
    rows: list[tuple[tuple[str, int], list[str]]], budget: int
) -> None:
    out: list[topic_engines.RawRow] = []
    done = topic_engines.collapse_rows(
        (((a, r, i), " ".join(toks), None) for i, ((a, r), toks) in enumerate(rows)),
        ["x"], budget, set(), out)
    admitted = [(a, r, i) for i, ((a, r), toks) in enumerate(rows) if "x" in toks]
    want: list[topic_engines.RawRow] = []
    for key in admitted:
        if (key[0], key[1]) not in {(w[0], w[1]) for w in want}:
            want.append(key)
    assert out == want[:budget]
    assert done == (len(want) >= budget)


def test_raw_vector_collapse_stops_at_the_first_refused_distance() -> None:
    out: list[topic_engines.RawRow] = []
    rows = [(("a", 1, 0), "", 0.1), (("a", 1, 1), "", 0.2), (("b", 1, 0), "", 2.0),
            (("c", 1, 0), "", 0.3)]
    assert topic_engines.collapse_rows(rows, None, 5, set(), out) is True
    assert out == [("a", 1, 0)]


@given(chans=st.dictionaries(
    st.sampled_from(topic_engines.CHANNELS_HYBRID),
    st.lists(_keys, unique=True, max_size=8)))
def test_raw_rrf_one_slot_per_topic_and_a_total_tie_order(
    chans: dict[str, list[tuple[str, int]]]
) -> None:
    channels = {c: [(a, r, None) for a, r in ks] for c, ks in chans.items()}
    hits = topic_engines.rrf(channels, 20)
    keys = [(h.artifact_id, h.revision) for h in hits]
    assert len(keys) == len(set(keys)) == len({k for ks in chans.values() for k in ks})
    order = [(-h.score, h.artifact_id.encode(), h.revision) for h in hits]
    assert order == sorted(order)
    for h in hits:
        assert h.matched_by == tuple(
            c for c in topic_engines.CHANNELS_HYBRID if (h.artifact_id, h.revision)
            in chans.get(c, []))
    # reversed channel insertion order changes nothing
    assert topic_engines.rrf(dict(reversed(list(channels.items()))), 20) == hits
