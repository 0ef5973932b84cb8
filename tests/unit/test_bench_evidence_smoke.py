"""Smoke test of the Evidence benchmark (bench/evidence.py, issue 17): a tiny Memory on
real SQLite, every measured page requested through the whole app, so the benchmark
cannot rot. It checks statuses, the citation counts and that the figures are written;
no time is asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import evidence  # noqa: E402
from bench.__main__ import BENCHMARKS  # noqa: E402


def test_the_benchmark_is_registered() -> None:
    assert BENCHMARKS["evidence"] == "bench.evidence"


def test_a_tiny_run_requests_every_page(tmp_path: Path) -> None:
    out = tmp_path / "evidence.json"
    args = ["--entries", "40", "--batch", "20", "--runs", "1", "--db",
            str(tmp_path / "e.db"), "--json", str(out)]
    assert evidence.main(args) == 0
    pages = {p["page"]: p for p in json.loads(out.read_text())["pages"]}
    assert [p["status"] for p in pages.values()] == [200, 200, 404]
    assert pages["a batch's Source"]["cited_by"] >= 20
    assert pages["the review Source"]["cited_by"] == 10  # 5 entries x 2 review rounds
    assert evidence.main(["--runs", "0"]) == 2
