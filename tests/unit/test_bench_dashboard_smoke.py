"""Smoke test of the dashboard benchmark (bench/dashboard.py, issue 17): a tiny Memory
(60 entries in Revisions of 20, with a version chain and forgotten entries) on real
SQLite with the deterministic embedder, every page requested once through the whole
app, so the benchmark cannot rot. It checks that each page answers 200 and that the
figures are written; no time is asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import dashboard  # noqa: E402
from bench.__main__ import BENCHMARKS  # noqa: E402


def test_the_benchmark_is_registered() -> None:
    assert BENCHMARKS["dashboard"] == "bench.dashboard"


def test_a_tiny_run_requests_every_page(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dashboard.json"
    db = tmp_path / "dash.db"
    args = ["--entries", "60", "--batch", "20", "--runs", "1", "--db", str(db),
            "--json", str(out)]
    assert dashboard.main(args) == 0
    report = json.loads(out.read_text())
    pages = {p["page"]: p for p in report["pages"]}
    assert len(pages) == 10 and {p["status"] for p in pages.values()} == {200}
    assert {"memory page, kind filter", "memory page, entry selected"} <= set(pages)
    assert "memory search (hybrid)" in pages
    for p in pages.values():
        assert p["p50_ms"] > 0 and p["p95_ms"] >= p["p50_ms"] and p["bytes"] > 0
    memory = report["memory"]
    assert (memory["entries"], memory["active"], memory["revision"]) == (60, 40, 6)
    printed = capsys.readouterr().out
    assert "target 300 ms" in printed and "entry page" in printed
    # a second run reuses the database it built
    assert dashboard.main(args[:-2]) == 0


def test_bad_arguments_exit_2() -> None:
    assert dashboard.main(["--entries", "5"]) == 2
