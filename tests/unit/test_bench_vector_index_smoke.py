"""Smoke test of the IVF benchmark (bench/perf/vector_index.py) on a tiny size (40
entries, the deterministic embedder, three questions, one pass) through the real library,
so the benchmark cannot rot. No time or recall is asserted: a Memory this small has one
list and no calibration (searched exactly), so it only shows the run completes and
reports every figure; the same for the growth figure (``--grow``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench_samples import write_tiny_locomo  # noqa: E402

from bench.perf import vector_index  # noqa: E402


def test_the_vector_index_benchmark_runs_and_reports(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    write_tiny_locomo(data)
    out = tmp_path / "report.json"
    assert vector_index.main([
        "--entries", "40", "--queries", "3", "--runs", "1", "--model", "deterministic",
        "--data", str(data), "--cache", str(tmp_path / "cache"),
        "--workdir", str(tmp_path / "work"), "--out", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["entries"] == 40 and report["queries"] == 3
    assert report["lists"] == 1 and report["nprobe"] == 0
    assert report["recall_at_10_mean"] == 1.0
    assert set(report["wall_ms"]) == {f"{m}/{ix}" for m in ("hybrid", "vector", "fts")
                                      for ix in ("exact", "auto")}


def test_the_growth_figure_runs_and_reports(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    write_tiny_locomo(data)
    out = tmp_path / "grow.json"
    assert vector_index.main([
        "--grow", "30", "--model", "deterministic", "--data", str(data),
        "--cache", str(tmp_path / "cache"), "--workdir", str(tmp_path / "work"),
        "--out", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["entries"] == 30 and len(report["slowest_cpu"]) == 5
    assert set(report["cpu_ms"]) == {"p50", "p99", "max"}
