"""``python -m bench year`` (bench/year): the synthetic year has the issue's sizes at
scale 1.0 and is the same for the same seed, and the whole benchmark runs end to end on
SQLite at a tiny scale (build, every figure, the report), then reuses the built data on
a second run. No timing asserts."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import __main__ as bench_main  # noqa: E402
from bench.year import corpus  # noqa: E402


def test_registered() -> None:
    assert bench_main.BENCHMARKS["year"] == "bench.year"


def test_full_scale_is_the_issues_year() -> None:
    sizes = corpus.repo_entries(1.0)
    assert len(sizes) == 20
    assert (min(sizes), max(sizes)) == (2_000, 5_000)
    assert corpus.scope_sources(1.0) * corpus.REPOS == 500_000


def test_the_same_seed_grows_the_same_year_and_distinct_texts() -> None:
    material = corpus.load_material()
    a = corpus.entries(material, 3, 400, seed=7)
    assert a == corpus.entries(material, 3, 400, seed=7)
    assert a != corpus.entries(material, 3, 400, seed=8)
    assert len(set(a)) == 400
    turns = list(corpus.turns(material, 2, 300, seed=7))
    assert turns == list(corpus.turns(material, 2, 300, seed=7))
    assert len({(t.prompt, t.reply) for t in turns}) == 300
    assert len({t.turn for t in turns}) == 300


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.server
def test_tiny_year_end_to_end_then_reused(tmp_path: Path, request: pytest.FixtureRequest,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from bench.year import main

    # the hook daemon's socket path (beside the database) must stay under 100 bytes
    data = Path(tempfile.mkdtemp(prefix="by-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(data, ignore_errors=True))
    argv = ["--scale", "0.0004", "--data", str(data), "--queries", "3",
            "--runs", "1", "--hook-runs", "1", "--out", str(tmp_path / "out"), "--no-plot"]
    assert main(argv) == 0
    out = capsys.readouterr()
    for figure in ("Memory search hybrid", "Topic search", "context/prepare",
                   "prompt hook, in-process", "prompt hook, hook daemon",
                   "flush to first searchable Topic"):
        assert figure in out.out
    (manifest,) = data.glob("*/manifest-sqlite.json")
    built = json.loads(manifest.read_text())
    assert built["sources_per_scope"] == 10 and built["topics"] > 0
    result = json.loads(next((tmp_path / "out").glob("year-sqlite-*.json")).read_text())
    assert result["flush"]["found"] > 0
    assert all(r["check"]["mismatches"] == 0 for r in result["memory_search"])
    assert result["topic_search"]["check"]["mismatches"] == 0
    assert main(argv) == 0  # the second run reuses the build
    assert "reusing the year built" in capsys.readouterr().err
    assert json.loads(manifest.read_text())["built_at"] == built["built_at"]
