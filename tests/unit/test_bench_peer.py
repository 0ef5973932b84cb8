"""The peer benchmark (bench/peer/, issue 14 items 2 and 4) without the network.

Our side of the protocol is tested without the peer: the ratio table and its Markdown,
the JSON shape of the protocol's rows (a fake store: the timing loop alone), LoCoMo
scoring, and a whole ``bench peer`` run on a tiny LoCoMo-format file with the peer
absent (ours through the real library on SQLite; the report says why the peer did not
run). The smoke test at the end runs the same tiny protocol with the peer's driver in
``.venv-peer`` (``make bench-peer`` creates it) and is skipped, with the reason, when
that interpreter is absent. No time is asserted.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench_samples import write_tiny_locomo  # noqa: E402

from bench import peer  # noqa: E402
from bench.peer import protocol, report  # noqa: E402

PEER_PYTHON = ROOT / ".venv-peer" / "bin" / "python"



class FakeStore:
    """A dict store for the timing loop alone: key = the text, search = texts sharing a
    word with the query, in insertion order."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.closed = False
        self.chosen: list[str] = []
        self.forgotten: list[str] = []

    async def add(self, texts: Sequence[str]) -> list[str]:
        self.texts += texts
        return list(texts)

    async def search(self, query: str, limit: int) -> list[str]:
        words = set(query.lower().split())
        return [t for t in self.texts if words & set(t.lower().split())][:limit]

    async def pick_forget(self, n: int) -> None:
        self.chosen = self.texts[::max(1, len(self.texts) // n)][:n]

    async def forget_next(self) -> None:
        self.forgotten.append(self.chosen.pop(0))

    def size_bytes(self) -> int:
        return 10 * len(self.texts)

    async def close(self) -> None:
        self.closed = True


def _perf_row(entries: int, r1: float | None, fts: float, size: int) -> dict[str, Any]:
    cell = {"p50_ms": r1, "p95_ms": r1, "n": 0 if r1 is None else 3, "wanted": 3}
    return {
        "entries": entries, "load_s": 1.0, "load_entries_per_s": float(entries),
        "search_fts": {"p50_ms": fts, "p95_ms": 2 * fts, "n": 10, "wanted": 10,
                       "mean_hits_warm": 4.0},
        "remember_1": cell, "remember_100": dict(cell), "db_bytes": size,
        "bytes_per_entry": size / entries,
    }


def test_ratio_rows_are_ours_over_peer_and_say_which_is_better() -> None:
    rep = {
        "perf": {"ours": [_perf_row(1000, 10.0, 5.0, 2_000_000)],
                 "peer": [_perf_row(1000, 20.0, 5.05, 1_000_000)]},
        "locomo": {"ours": {"overall": {"r@5": 50.0, "r@10": 60.0, "r@25": 70.0, "n": 3}},
                   "peer": {"overall": {"r@5": 40.0, "r@10": 60.0, "r@25": 80.0, "n": 3}}},
    }
    rows = {(r["figure"], r["entries"]): r for r in report.ratios(rep)}
    r1 = rows[("remember +1 p50", 1000)]
    assert (r1["ours"], r1["peer"], r1["ratio"], r1["better"]) == (10.0, 20.0, 0.5, "ours")
    assert rows[("fts search p50", 1000)]["better"] == "same"  # within 2 %
    size = rows[("database size", 1000)]
    assert (size["ours"], size["peer"], size["ratio"], size["better"]) == (2.0, 1.0, 2.0, "peer")
    assert rows[("LoCoMo dev fts recall@5", None)]["better"] == "ours"  # higher is better
    assert rows[("LoCoMo dev fts recall@10", None)]["better"] == "same"
    assert rows[("LoCoMo dev fts recall@25", None)]["ratio"] == pytest.approx(0.875)
    md = report.markdown({**rep, "notes": ["a note"]})
    assert md.splitlines()[0].startswith("| figure | entries | unit | ours | peer | ours / peer")
    assert "| remember +1 p50 | 1000 | ms | 10.0 | 20.0 | 0.500 | ours | 3 | 3 |" in md
    assert md.endswith("- a note")


def test_a_side_that_did_not_run_gives_empty_cells() -> None:
    rep = {"perf": {"ours": [_perf_row(1000, 10.0, 5.0, 1000)], "peer": []}, "locomo": {}}
    rows = report.ratios(rep)
    assert rows and all(r["peer"] is None and r["ratio"] is None and r["better"] == "-"
                        for r in rows)
    assert "| remember +1 p50 | 1000 | ms | 10.0 | - | - | - | 3 | 0 |" in report.markdown(rep)


@given(
    ours=st.floats(min_value=1e-3, max_value=1e6),
    peer=st.floats(min_value=1e-3, max_value=1e6),
    lower=st.booleans(),
)
def test_ratio_and_verdict_agree(ours: float, peer: float, lower: bool) -> None:
    row = report._row("f", 1, "ms", ours, peer, lower, 1, 1)
    assert row["ratio"] == pytest.approx(ours / peer, rel=1e-2, abs=1e-3)
    if abs(ours - peer) <= report.SAME * max(ours, peer):
        assert row["better"] == "same"
    else:
        assert row["better"] == ("ours" if (ours < peer) == lower else "peer")


def test_protocol_rows_have_the_documented_shape() -> None:
    stores: list[FakeStore] = []

    async def open_store(n: int) -> protocol.Store:
        stores.append(FakeStore())
        return stores[-1]

    texts = [f"entry {i} painting" for i in range(250)]
    fresh = [f"fresh {i}" for i in range(2 + 2 * protocol.WRITE_BATCH)]
    (rows,) = asyncio.run(protocol.run_perf(
        [open_store], sizes=[120, 250], texts=texts, fresh=fresh, queries=["painting", "x"],
        search_runs=2, write_runs=2, batch_runs=2, limit=10, cell_budget_s=60.0, labels=["t"],
    ))
    assert [r["entries"] for r in rows] == [120, 250]
    assert all(s.closed for s in stores) and len(stores) == 2
    for r, store in zip(rows, stores, strict=True):
        assert set(r) == {"entries", "load_s", "load_entries_per_s", "search_fts",
                          "remember_1", "remember_100", "forget_1", "db_bytes",
                          "bytes_per_entry"}
        assert r["forget_1"]["n"] == 2 and len(set(store.forgotten)) == 2
        assert r["search_fts"]["n"] == r["search_fts"]["wanted"] == 4
        assert r["search_fts"]["mean_hits_warm"] == 5.0  # 10 hits, then none
        assert (r["remember_1"]["n"], r["remember_100"]["n"]) == (2, 2)
        assert r["remember_1"]["p50_ms"] <= r["remember_1"]["p95_ms"]
        assert r["db_bytes"] == 10 * r["entries"]  # measured before the timed writes
        assert len(store.texts) == r["entries"] + 2 + 2 * protocol.WRITE_BATCH
    with pytest.raises(ValueError):
        asyncio.run(protocol.run_perf(
            [open_store], sizes=[300], texts=texts, fresh=fresh, queries=["x"],
            search_runs=1, write_runs=1, batch_runs=1, limit=10, cell_budget_s=1.0,
            labels=["t"],
        ))


class TimedFake(FakeStore):
    """A store in "another process": it reports its own time per call (``ms``) and
    records the order of the calls made on it in a shared log."""

    def __init__(self, name: str, ms: float, calls: list[str]) -> None:
        super().__init__()
        self.name, self.ms, self.calls = name, ms, calls

    async def timed_call(self, op: str, *args: Any) -> tuple[Any, float]:
        self.calls.append(f"{self.name}:{op}")
        return await getattr(self, op)(*args), self.ms


def test_sides_are_interleaved_call_by_call_and_cut_together() -> None:
    calls: list[str] = []
    a, b = TimedFake("a", 1.0, calls), TimedFake("b", 400.0, calls)
    times, _ = asyncio.run(protocol.interleaved([a, b], "search", [("x", 1)] * 5, 1.0))
    # the slower side's summed time (400 ms per call) reaches the 1 s budget after 3
    # calls; both sides stop there, and the first side alternates
    assert times == [[1.0] * 3, [400.0] * 3]
    assert calls == ["a:search", "b:search", "b:search", "a:search", "a:search", "b:search"]


def test_two_sides_give_one_row_list_each_with_the_same_counts() -> None:
    calls: list[str] = []

    async def open_a(n: int) -> protocol.Store:
        return TimedFake("a", 2.0, calls)

    async def open_b(n: int) -> protocol.Store:
        return TimedFake("b", 3.0, calls)

    ours, other = asyncio.run(protocol.run_perf(
        [open_a, open_b], sizes=[100], texts=[f"t {i}" for i in range(100)],
        fresh=[f"f {i}" for i in range(3 + protocol.WRITE_BATCH)], queries=["t", "u"],
        search_runs=2, write_runs=3, batch_runs=1, limit=10, cell_budget_s=60.0,
        labels=["a", "b"],
    ))
    assert ours[0]["search_fts"]["p50_ms"] == 2.0 and other[0]["search_fts"]["p50_ms"] == 3.0
    assert ours[0]["load_s"] == 0.002 and other[0]["load_s"] == 0.003  # 1 batch of 100
    for key in ("search_fts", "remember_1", "remember_100"):
        assert ours[0][key]["n"] == other[0][key]["n"]


def test_a_zero_budget_still_times_one_call_of_each_step() -> None:
    async def open_store(n: int) -> protocol.Store:
        return FakeStore()

    ((row,),) = asyncio.run(protocol.run_perf(
        [open_store], sizes=[100], texts=[f"t {i}" for i in range(100)],
        fresh=[f"f {i}" for i in range(5 + 3 * protocol.WRITE_BATCH)], queries=["t", "u", "v"],
        search_runs=3, write_runs=5, batch_runs=3, limit=10, cell_budget_s=0.0, labels=["t"],
    ))
    assert row["search_fts"]["n"] == 1 and row["search_fts"]["wanted"] == 9
    assert row["remember_1"]["n"] == 1 and row["remember_100"]["n"] == 1


def test_ranking_maps_hits_to_text_indexes_and_scores_like_bench_locomo(
    tmp_path: Path,
) -> None:
    data = tmp_path / "locomo.json"
    write_tiny_locomo(data)
    convs, keys = peer.locomo_job(data, quick=False)
    (conv,) = convs
    # the two "Thanks!" turns differ by their session date, so no text collapses here
    assert len(conv["texts"]) == 7 and conv["texts"][1].startswith("[8 May, 2023] Ben: Great")
    assert keys[0][1][1] == frozenset({"D1:2"})

    async def open_store(n: int) -> protocol.Store:
        return FakeStore()

    ranked = asyncio.run(protocol.run_ranking(open_store, convs, 25, "t"))
    assert len(ranked) == 1 and len(ranked[0]) == 3
    summary = peer.score([[[1], [6, 2], []]], keys)
    # D1:2 found, D1:3 found second, D2:1 not found
    assert summary["overall"] == {"r@5": 66.67, "r@10": 66.67, "r@25": 66.67, "n": 3}
    assert set(summary["by_category"]) == {"1 multi-hop", "4 single-hop"}


def _tiny_args(data: Path, tmp_path: Path, peer_python: Path) -> list[str]:
    return ["--sizes", "30", "--queries", "3", "--search-runs", "1", "--write-runs", "2",
            "--batch-runs", "1", "--data", str(data), "--out", str(tmp_path / "out"),
            "--workdir", str(tmp_path), "--peer-python", str(peer_python)]


def test_a_run_without_the_peer_measures_ours_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "locomo.json"
    write_tiny_locomo(data)
    missing = tmp_path / "no-venv" / "python"
    assert peer.main(_tiny_args(data, tmp_path, missing)) == 0
    (json_path,) = (tmp_path / "out").glob("peer-*.json")
    rep = json.loads(json_path.read_text(encoding="utf-8"))
    assert rep["peer"]["status"] == "not run" and str(missing) in rep["peer"]["reason"]
    assert rep["perf"]["peer"] == [] and "peer" not in rep["locomo"]
    (ours,) = rep["perf"]["ours"]
    assert ours["entries"] == 30 and ours["db_bytes"] > 0
    assert ours["search_fts"]["n"] == 3 and ours["remember_100"]["n"] == 1
    assert rep["locomo"]["ours"]["overall"]["n"] == 3
    assert rep["locomo"]["ours"]["overall"]["r@25"] > 0  # the puppy turn is found
    assert {r["figure"] for r in rep["ratios"]} >= {"remember +1 p50", "fts search p95",
                                                    "LoCoMo dev fts recall@10"}
    out = capsys.readouterr().out
    assert "peer not run" in out and "| figure | entries |" in out
    assert (tmp_path / "out" / json_path.name.replace(".json", ".md")).exists()


@pytest.mark.subprocess
@pytest.mark.skipif(not PEER_PYTHON.exists(),
                    reason=f"{PEER_PYTHON} is absent (`make bench-peer` creates it)")
def test_the_peer_runs_the_same_protocol_on_a_tiny_size(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    write_tiny_locomo(data)
    assert peer.main([*_tiny_args(data, tmp_path, PEER_PYTHON), "--no-plot"]) == 0
    (json_path,) = (tmp_path / "out").glob("peer-*.json")
    rep = json.loads(json_path.read_text(encoding="utf-8"))
    assert rep["peer"]["status"] == "ran" and rep["peer"]["version"] == peer.PEER_VERSION
    (row,) = rep["perf"]["peer"]
    assert row["entries"] == 30 and row["db_bytes"] > 0
    assert row["search_fts"]["n"] == 3 and row["remember_1"]["n"] == 2
    assert row["forget_1"]["n"] == 2
    assert rep["locomo"]["peer"]["overall"]["n"] == 3
    assert all(r["ratio"] is not None for r in rep["ratios"] if r["unit"] == "ms")


def test_the_peer_benchmark_is_registered() -> None:
    from bench import __main__ as bench_main

    assert bench_main.BENCHMARKS["peer"] == "bench.peer"
