"""Smoke test of the performance benchmark (bench/perf/, issue 6): the quick profile on
a tiny size (50 entries, 3 LoCoMo-format questions, one pass) through the real library
(SQLite + sqlite-vec, deterministic embedder), so the benchmark cannot rot. It checks
that the run completes and writes its JSON and markdown with the expected figures; no
time is asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench_samples import assert_raw_channels_match, write_tiny_locomo  # noqa: E402

from bench import perf  # noqa: E402


def test_percentile_interpolates() -> None:
    assert perf.percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert perf.percentile([1.0, 2.0], 95) == pytest.approx(1.95)
    assert perf.percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError):
        perf.percentile([], 50)


def test_entries_are_distinct_and_repeat_with_a_suffix(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    write_tiny_locomo(data, unanswerable=True)
    turns, questions = perf.load_corpus(data)
    assert len(turns) == 7
    assert turns[1] == "Ben: Great, I adopted a puppy named Biscuit."
    # "What?" has no Analyzer v1 token left (stopword), so it is not a query
    assert questions == [
        "What is the name of Ben's puppy?",
        "What does Ana paint?",
        "Where does Biscuit swim?",
    ]
    entries = perf.make_entries(turns, 20)
    assert len(entries) == 20 and len(set(entries)) == 20
    assert entries[7] == "Ana: Hi Ben! How are you? xr1"
    assert entries[6] == "Ben: Thanks! xr1000"  # a duplicate within the first pass
    later = perf.fresh_entries(turns, 10, "b1")
    assert later[8] == "Ben: Great, I adopted a puppy named Biscuit. b1w8"
    assert len(set(later)) == 10 and not set(later) & set(entries)
    assert not set(later) & set(perf.fresh_entries(turns, 10, "b2"))


def test_quick_profile_runs_on_a_tiny_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "locomo.json"
    write_tiny_locomo(data, unanswerable=True)
    out = tmp_path / "results"
    status = perf.main(
        [
            "--profile",
            "quick",
            "--backend",
            "sqlite",
            "--sizes",
            "50",
            "--topic-sizes",
            "12",
            "--layouts",
            "1,10",
            "--queries",
            "3",
            "--runs",
            "1",
            "--write-runs",
            "3",
            "--no-local-model",
            "--data",
            str(data),
            "--out",
            str(out),
            "--workdir",
            str(tmp_path / "db"),
        ]
    )
    assert status == 0
    (json_path,) = out.glob("perf-quick-*.json")
    result = json.loads(json_path.read_text(encoding="utf-8"))
    assert result["meta"]["queries"] == 3 and result["meta"]["budget"] == 40
    assert [(d["entries"], d["memories"]) for d in result["datasets"]] == [(50, 1), (50, 10)]
    assert all(d["db_bytes"] > 0 and d["bytes_per_entry"] > 0 for d in result["datasets"])
    assert {(r["memories"], r["mode"]) for r in result["search"]} == {
        (m, mode) for m in (1, 10) for mode in ("fts", "vector", "hybrid")
    }
    for r in result["search"]:
        assert r["engine"] == "sqlite" and r["entries"] == 50 and r["queries"] == 3
        assert r["ours_p50_ms"] > 0 and r["raw_p50_ms"] > 0 and r["ratio_p95"] > 0
        assert r["spi_p50_ms"] > 0  # the backend's candidate queries were timed
        assert r["ours_p50_ms"] <= r["ours_p95_ms"]
        # the raw yardstick returned the same hits as ours (issue 9)
        assert r["check"] == {"queries": 3, "mismatches": 0, "examples": []}
    # the puppy question finds Biscuit's turn on every channel
    assert all(r["mean_hits"] > 0 for r in result["search"])
    # the first calls of a new process and after writes are figures of their own (the
    # first remember of a new process too)
    assert [(f["entries"], f["mode"]) for f in result["first_calls"]] == [
        (50, "fts"), (50, "hybrid"), (50, "remember")]
    for f in result["first_calls"]:
        for k in ("new_process", "warm", "after_own_write", "after_other_write"):
            assert f[k][0] >= 0 and f[k][1] > 0
    ops = [r["op"] for r in result["writes"]]
    assert ops[:7] == [
        "remember_1",
        "remember_1_8kb",
        "remember_100",
        "forget_1",
        "reactivate_1",
        "changes_head",
        "changes_10",
    ]
    assert {r["n"] for r in result["writes"] if r["op"] != "remember_100"} == {3}
    assert result["memory"][0]["remember_1_peak_mb"] > 0
    # the 8 KB entries are near the text limit; the write floor was measured (issue 14)
    (floor,) = result["write_floor"]
    assert floor["entries"] == 50 and floor["manifest_bytes"] > 0 and floor["sha256_ms"] > 0
    assert result["embedding"]["status"] == "skipped"
    assert {t["status"] for t in result["targets"]} == {"not run"}  # no 10k/100k here
    assert "fts_search" in result["profiles"]["sqlite"]
    md = next(out.glob("perf-quick-*.md")).read_text(encoding="utf-8")
    assert "| sqlite | 50 | 10 | hybrid |" in md
    assert "| sqlite | 50 | 1 | fts |" in capsys.readouterr().out
    # the Topic search cells (issue 12): 12 Topics, both retrieval shapes, same hits
    assert [(d["topics"], d["kind"]) for d in result["topic_datasets"]] == [
        (12, "fts"), (12, "hybrid")]
    assert all(d["chunks"] >= 12 and d["db_bytes"] > 0 for d in result["topic_datasets"])
    for r in result["topic_search"]:
        assert r["engine"] == "sqlite" and r["queries"] == 3 and r["channels"] in (2, 4)
        assert r["ours_p50_ms"] > 0 and r["raw_p50_ms"] > 0 and r["ratio_p95"] > 0
        assert r["check"] == {"queries": 3, "mismatches": 0, "examples": []}
    assert any(r["mean_hits"] > 0 for r in result["topic_search"])
    assert "| sqlite | 12 | hybrid | deterministic |" in md
    assert len(list(out.glob("perf-quick-*.png"))) == 4
    assert not list((tmp_path / "db").iterdir())  # databases and anchors are removed


def _plain_or(engine: perf.SQLiteEngine, ids: list[str], terms: tuple[str, ...]) -> list[int]:
    """The former yardstick: the plain OR query's top ``budget`` rows by bm25 (no
    admission), kept here to show that the check tells it apart from the library."""
    tokens = " OR ".join(f'"{perf._scope(m)}_{t}"' for m in ids for t in terms)
    return [
        r
        for (r,) in engine.anchor.execute(
            f"SELECT rowid FROM {perf.ANCHOR_FTS} WHERE {perf.ANCHOR_FTS} MATCH ? "
            f"ORDER BY bm25({perf.ANCHOR_FTS}), rowid LIMIT ?",
            (f"searchable_text : ({tokens})", max(perf.LIMIT * 4, 32)),
        )
    ]


@pytest.mark.parametrize("memories", [1, 10])
def test_raw_channels_return_the_library_hits(tmp_path: Path, memories: int) -> None:
    """Issue 9: the raw yardstick returns the same admitted candidates in the same order
    as MemoryService.search (fts, vector, hybrid), on one Memory and on ten (document
    frequencies per Memory); the check flags a raw query without admission."""
    import asyncio

    from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

    data = tmp_path / "locomo.json"
    write_tiny_locomo(data, unanswerable=True)
    turns, questions = perf.load_corpus(data)
    # repeated turns make common terms common: admission then refuses rows the plain
    # OR query ranks among its first 40
    turns = [*turns, "Ana: the the the the", "Ben: is is of of the"]
    model = DeterministicEmbedding(perf.DIM)
    (tmp_path / "db").mkdir()
    engine = perf.SQLiteEngine(tmp_path / "db", model)

    async def go() -> None:
        ds = await perf.load_dataset(engine, turns, 120, memories)
        ids = sorted(h.artifact_id for h in ds.heads)
        try:
            sample = await assert_raw_channels_match(engine, ds, model, questions)
            engine.open_raw(ds.svc)
            plain = await perf.same_hits(
                engine, ds.svc, ds, sample, "fts",
                lambda t, b: {"fts": _plain_or(engine, ids, tuple(t))})
            assert plain["mismatches"] > 0
        finally:
            engine.close_raw()
            await ds.svc.close()

    asyncio.run(go())


def test_raw_ann_channel_returns_the_library_hits(tmp_path: Path) -> None:
    """Issue 14: with the ANN vector channel (forced on for the deterministic embedder)
    the raw yardstick runs the same ANN query, so ours and raw agree on a Memory larger
    than the first pass (700 > 512 candidates); recall against exact KNN is reported
    apart (a share in [0, 1]); with exact search there is none."""
    import asyncio

    from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
    from powercontext.core import query as query_bounds

    data = tmp_path / "locomo.json"
    write_tiny_locomo(data, unanswerable=True)
    turns, questions = perf.load_corpus(data)
    model = DeterministicEmbedding(perf.DIM)
    (tmp_path / "db").mkdir()
    engine = perf.SQLiteEngine(tmp_path / "db", model, "ann")

    async def go() -> None:
        ds = await perf.load_dataset(engine, turns, 700, 1)
        ids = sorted(h.artifact_id for h in ds.heads)
        engine.open_raw(ds.svc)
        try:
            assert engine.ann
            analyzer = ds.svc.backend._db_analyzer  # type: ignore[attr-defined]
            sample = []
            for q in [*questions, "the name of the lake", "what is the puppy"]:
                (vec,) = model.embed_sync((q,)).vectors
                sample.append((q, query_bounds.search_terms(q, analyzer),
                               engine.vector_param(vec), vec))
            for mode in ("vector", "hybrid"):
                check = await perf.same_hits(
                    engine, ds.svc, ds, sample, mode,
                    lambda t, b, mode=mode: perf.raw_channels(engine, ids, t, b, mode))
                assert check == {"queries": len(sample), "mismatches": 0, "examples": []}
            for _q, _t, blob, _v in sample:
                recall = engine.ann_recall(ids, blob, 32)
                assert recall is not None and 0.0 <= recall <= 1.0
            engine.ann = False
            assert engine.ann_recall(ids, sample[0][2], 32) is None
        finally:
            engine.close_raw()
            await ds.svc.close()

    asyncio.run(go())


def test_ann_recall_is_one_when_the_first_pass_sees_every_vector() -> None:
    """bench.perf.ann_recall: with as many candidates as vectors the rescored answer is
    the exact one (recall 1.0); with fewer it is a share in [0, 1]."""
    import math
    import random

    from bench.perf import ann_recall

    rnd = random.Random(4)

    def unit() -> list[float]:
        v = [rnd.gauss(0.0, 1.0) for _ in range(16)]
        n = math.sqrt(sum(x * x for x in v))
        return [x / n for x in v]

    vectors = [unit() for _ in range(300)]
    got = ann_recall.recall(vectors, [unit() for _ in range(5)], (40, 300))
    assert got[300] == (1.0, 1.0)
    assert 0.0 <= got[40][1] <= got[40][0] <= 1.0


def test_a_reused_workdir_builds_a_new_raw_anchor(tmp_path: Path) -> None:
    """An anchor left in ``--workdir`` by an earlier run names that run's Memories (its
    scope tokens): reused, the raw fts query matched nothing and timed ~1 ms at 1k x 10
    where the real one takes ~6. A new service's database starts without it."""
    import asyncio

    from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

    data = tmp_path / "locomo.json"
    write_tiny_locomo(data)
    turns, _questions = perf.load_corpus(data)
    (tmp_path / "db").mkdir()
    engine = perf.SQLiteEngine(tmp_path / "db", DeterministicEmbedding(perf.DIM))

    async def rows_matching_the_heads() -> int:
        ds = await perf.load_dataset(engine, turns, 20, 2)
        try:
            engine.open_raw(ds.svc)
            scopes = [perf._scope(h.artifact_id) for h in ds.heads]
            terms = {t for (text,) in engine.raw.execute(
                "SELECT searchable_text FROM memory_entry_heads") for t in text.split()}
            match = " OR ".join(f'"{s}_{t}"' for s in scopes for t in sorted(terms)[:20])
            (n,) = engine.anchor.execute(
                f"SELECT count(*) FROM {perf.ANCHOR_FTS} WHERE {perf.ANCHOR_FTS} MATCH ?",
                (f"searchable_text : ({match})",)).fetchone()
            return int(n)
        finally:
            engine.close_raw()
            await ds.svc.close()

    assert asyncio.run(rows_matching_the_heads()) > 0
    assert list((tmp_path / "db").glob("*.anchor"))  # left behind, as --workdir keeps it
    assert asyncio.run(rows_matching_the_heads()) > 0  # the second run's own anchor
