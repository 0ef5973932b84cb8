"""Property: the Topic benchmark's raw yardstick (bench/perf/topic_engines.py, issue 12)
returns exactly the hits of the Topic backend's ``search`` -- the same Topics, in the
same order, with the same ``matched_by`` -- at limits 10 and 20, for any small Topic
corpus over a small vocabulary (so bm25 and distance ties, repeated chunks and
admission refusals are common), any query, both retrieval shapes, and another Scope's
Topics beside them (never returned), on the real SQLite engine (FTS5 + sqlite-vec)."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.perf import topic, topic_data, topic_engines  # noqa: E402
from bench.perf.common import DIM  # noqa: E402
from powercontext.adapters.embedding.deterministic import (  # noqa: E402
    DeterministicEmbedding,
)

WORDS = ["lake", "puppy", "paint", "sunset", "the", "is", "of", "name", "ben", "ana"]
text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
#: turns long enough that a Topic of several turns has several Detail chunks (the chunk
#: policy packs about 1,024 code points), so the collapse by Topic matters
turn = st.lists(st.sampled_from(WORDS), min_size=20, max_size=90).map(" ".join)
LONG_TURNS = [" ".join(WORDS[(i * j) % len(WORDS)] for j in range(80)) for i in range(24)]
OTHER_SCOPE = "bench:other"


def _sessions(turns: list[str]) -> list[topic_data.Session]:
    half = max(1, len(turns) // 2)
    out = []
    for k, part in enumerate((turns[:half], turns[half:]), start=1):
        if part:
            out.append(topic_data.Session(
                "s", k, f"day {k}", ("Ana", "Ben"),
                tuple(topic_data.Turn(f"t:{k}:{i}", ("Ana", "Ben")[i % 2], t)
                      for i, t in enumerate(part)),
                ()))
    return out


async def check_raw_equals_backend(
    engine: topic_engines.TopicEngine, turns: list[str], queries: list[str], n: int,
    kind: str, label: str,
) -> dict[str, object]:
    """Publish ``n`` Topics of ``turns`` (and the same Topics in another Scope), then
    compare ours and raw over ``queries``; returns the hit check."""
    model = DeterministicEmbedding(DIM) if kind == "hybrid" else None
    sessions = _sessions(turns)
    ds = topic.TopicDataset(engine.name, n, kind, "deterministic" if model else "-")
    ds.model = model
    ds.backend = engine.new_backend(label, model.profile if model else None)
    try:
        topics = topic_data.make_topics(sessions, n)
        sources = topic_data.turn_sources(sessions)
        embed = model.embed if model else None
        profile = model.profile if model else None
        await topic_data.publish_topics(ds.backend, topics, sources, embed=embed,
                                        profile=profile, batch=7)
        await topic_data.publish_topics(ds.backend, topics[::-1], sources,
                                        scope_id=OTHER_SCOPE, embed=embed, profile=profile,
                                        batch=7, first=n)
        topic.attach_service(ds)
        analyzer = await ds.backend.analyzer()
        from powercontext.core import query as query_bounds

        sample = []
        for q in queries:
            if not query_bounds.search_terms(q, analyzer):
                # no terms under the database's analyzer (e.g. "is"): bad input to both
                # sides (core.topic.search.check_request), nothing to compare
                continue
            blob = None
            if model is not None:
                (vec,) = model.embed_sync((q,)).vectors
                blob = engine.vector_param(vec)
            sample.append((q, query_bounds.search_terms(q, analyzer), blob))
        from powercontext.core.topic.chunks import MAX_CHUNKS

        engine.open_raw(ds.backend)
        try:
            return await topic.topic_same_hits(engine, ds, sample, MAX_CHUNKS)
        finally:
            engine.close_raw()
    finally:
        await ds.backend.close()
        engine.drop(ds.backend)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(turn, min_size=2, max_size=40),
    queries=st.lists(text, min_size=1, max_size=4),
    n=st.integers(1, 30),
    kind=st.sampled_from(["fts", "hybrid"]),
)
@example(turns=["Caroline went to the lake.", "Ben paints sunsets."], queries=["is", "lake"],
         n=2, kind="fts")  # "is" has no terms: the seekdb run of CI drew such a query
def test_raw_topic_channels_equal_the_backend_on_sqlite(
    turns: list[str], queries: list[str], n: int, kind: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        engine = topic_engines.SQLiteTopicEngine(Path(tmp))
        check = asyncio.run(check_raw_equals_backend(engine, turns, queries, n, kind, kind))
        assert check["mismatches"] == 0, check


def _uncollapsed(rows, terms, budget, seen, out):  # type: ignore[no-untyped-def]
    """collapse_rows without the collapse: every admitted row counts (a wrong raw)."""
    for key, fts_text, distance in rows:
        if terms is not None:
            if not topic_engines.admission.fts_admits(tuple(terms), str(fts_text).split()):
                continue
        elif distance is None or not topic_engines.admission.vector_admits(float(distance)):
            return True
        out.append(key)
        if len(out) == budget:
            return True
    return False


@pytest.mark.parametrize("kind", ["fts", "hybrid"])
def test_the_check_tells_apart_a_raw_side_without_the_collapse(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Topics of several chunks each: the raw side equals the backend, and the same raw
    side without the collapse by Topic is caught (so the property above can fail)."""
    queries = ["lake puppy", "the name of ana", "sunset paint ben"]
    with tempfile.TemporaryDirectory() as tmp:
        engine = topic_engines.SQLiteTopicEngine(Path(tmp))
        good = asyncio.run(check_raw_equals_backend(engine, LONG_TURNS, queries, 6, kind, "a"))
        assert good == {"queries": 3, "mismatches": 0, "examples": []}
        monkeypatch.setattr(topic_engines, "collapse_rows", _uncollapsed)
        bad = asyncio.run(check_raw_equals_backend(engine, LONG_TURNS, queries, 6, kind, "b"))
        assert bad["mismatches"] > 0


@pytest.mark.slow
@pytest.mark.oceanbase
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(turn, min_size=2, max_size=24),
    queries=st.lists(text, min_size=1, max_size=3),
    n=st.integers(1, 12),
    kind=st.sampled_from(["fts", "hybrid"]),
)
@example(turns=["Caroline went to the lake.", "Ben paints sunsets."], queries=["is"], n=1,
         kind="fts")
def test_raw_topic_channels_equal_the_backend_on_seekdb(
    seekdb_url: str, turns: list[str], queries: list[str], n: int, kind: str
) -> None:
    """The same property on seekdb: MATCH AGAINST pages and l2_distance APPROXIMATE
    (the exact rescan of a short answer) on the active tables, Scope-filtered."""
    engine = topic_engines.SeekdbTopicEngine(seekdb_url)
    try:
        check = asyncio.run(check_raw_equals_backend(engine, turns, queries, n, kind, kind))
    finally:
        engine.close()
    assert check["mismatches"] == 0, check
