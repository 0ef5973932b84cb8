"""Smoke test of the LoCoMo benchmark (bench/locomo.py): a tiny conversation in LoCoMo's
format scored end to end through the real library (SQLite + sqlite-vec) with the
deterministic embedding model, so the benchmark cannot rot. No timing asserts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import __main__ as bench_main  # noqa: E402
from bench import locomo  # noqa: E402
from powercontext.core import search_admission as admission  # noqa: E402

SAMPLE = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! How are you?"},
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "Great, I adopted a puppy named Biscuit.",
                },
                {
                    "speaker": "Ana",
                    "dia_id": "D1:3",
                    "text": "I started painting sunsets last week.",
                },
            ],
            "session_2_date_time": "2:00 pm on 9 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "Biscuit loves swimming in the lake."},
                {
                    "speaker": "Ana",
                    "dia_id": "D2:2",
                    "text": "Look what I finished!",
                    "blip_caption": "a photo of a painting of a lake at dusk",
                },
                {"speaker": "Ben", "dia_id": "D2:3", "text": "Thanks!"},
                {"speaker": "Ben", "dia_id": "D2:4", "text": "Thanks!"},
            ],
        },
        "qa": [
            {
                "question": "What is the name of Ben's puppy?",
                "answer": "Biscuit",
                "evidence": ["D1:2"],
                "category": 4,
            },
            {
                "question": "Which paintings did Ana make?",
                "answer": "sunsets, a lake",
                "evidence": ["D:1:3", "D2:2"],
                "category": 1,
            },
            {
                "question": "Where does Biscuit swim?",
                "answer": "the lake",
                "evidence": ["D2:1; D9:9"],
                "category": 4,
            },
            {
                "question": "What did Ben say in June 2023?",
                "answer": "Thanks",
                "evidence": ["D2:3"],
                "category": 2,
            },
            {
                "question": "What did Ben say?",
                "answer": "no evidence",
                "evidence": [],
                "category": 5,
            },
        ],
    }
]


def test_entry_text_has_date_speaker_text_and_caption() -> None:
    turn = locomo.Turn("D2:2", "Ana", "Look!", "a photo of a lake", "9 June, 2023")
    assert locomo.entry_text(turn) == "Ana: Look! [shared a photo of a lake]"
    assert locomo.entry_text(turn, session_date=True) == (
        "[9 June, 2023] Ana: Look! [shared a photo of a lake]"
    )


def test_parse_evidence_repairs_and_drops() -> None:
    known = {"D1:3", "D2:2", "D8:6", "D9:17"}
    assert locomo.parse_evidence(["D:1:3", "D2:2"], known) == {"D1:3", "D2:2"}
    assert locomo.parse_evidence(["D8:6; D9:17", "D", "D10:19"], known) == {"D8:6", "D9:17"}


def test_locomo_benchmark_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(SAMPLE), "utf-8")
    out = tmp_path / "out"
    status = bench_main.main(
        ["locomo", "--data", str(data), "--out", str(out), "--model", "deterministic", "--no-plot"]
    )
    assert status == 0
    (path,) = out.glob("locomo-*.json")
    report = json.loads(path.read_text("utf-8"))
    counts = report["counts"]
    # the two identical "Ben: Thanks!" turns of session 2 collapse into one entry
    assert counts == {
        "conversations": 1,
        "turns": 7,
        "entries": 6,
        "questions": 4,
        "questions_skipped_no_evidence": 1,
    }
    assert report["settings"]["fts_min_coverage"] == admission.FTS_MIN_COVERAGE
    assert report["settings"]["vector_min_cosine"] == admission.VECTOR_MIN_COSINE
    assert report["settings"]["entry_text"].startswith("[<session date>] <speaker>: <text>")
    results = report["results"]
    # every analyzer version is measured by default: systems are <mode>:<analyzer>
    assert set(results) == {f"{m}:{v}" for m in ("fts", "vector", "hybrid")
                            for v in ("v1", "v1-porter", "v2")} | {"plain-fts5"}
    assert report["settings"]["default_analyzer"] == "v2"
    assert report["settings"]["analyzers"]["v1"] == {"stemming": False, "stopwords": 35}
    for system in results.values():
        assert system["overall"]["n"] == 4
        r5, r10, r25 = (system["overall"][f"r@{k}"] for k in locomo.KS)
        assert 0.0 <= r5 <= r10 <= r25 <= 100.0
    # stemming (paintings/painting) and the image caption ("a painting of a lake") let
    # full text find both evidence turns of the multi-hop question; v1 does not stem
    assert results["fts:v1-porter"]["by_category"]["1 multi-hop"]["r@5"] == 100.0
    assert results["fts:v2"]["by_category"]["1 multi-hop"]["r@5"] == 100.0
    assert results["fts:v1"]["by_category"]["1 multi-hop"]["r@5"] == 0.0
    assert results["plain-fts5"]["overall"]["r@5"] == 100.0
    # the hashing model misses the caption turn: half of the multi-hop evidence
    for v in ("v1", "v1-porter", "v2"):
        assert results[f"vector:{v}"]["by_category"]["1 multi-hop"]["r@25"] == 50.0
    assert results["hybrid:v1-porter"]["overall"]["r@5"] == 100.0
    printed = capsys.readouterr().out
    assert "| powercontext hybrid:v1-porter (deterministic) |" in printed
    # the docs' table rows come out ready to paste, the default named
    assert "| powercontext fts, analyzer v2 (default) | 100.0 | 100.0 | 100.0 |" in printed
    assert "| powercontext fts, analyzer v1-porter | 100.0 | 100.0 | 100.0 |" in printed
    assert "| powercontext fts, analyzer v1 | 50.0 |" in printed
    assert "DRAGON (LoCoMo paper) | 56.7 | 66.2 | 76.7 |" in printed


def test_unknown_benchmark_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main.main(["nope"]) == 2
    assert "unknown benchmark" in capsys.readouterr().err


def test_plain_entry_text_options(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(SAMPLE), "utf-8")
    out = tmp_path / "out"
    argv = [
        "locomo",
        "--data",
        str(data),
        "--out",
        str(out),
        "--model",
        "deterministic",
        "--modes",
        "fts",
        "--analyzer",
        "v1-porter",
        "--no-session-date",
        "--no-captions",
        "--no-plot",
    ]
    assert bench_main.main(argv) == 0
    (path,) = out.glob("locomo-*-deterministic-nodate-nocaptions-v1-porter.json")
    report = json.loads(path.read_text("utf-8"))
    assert report["settings"]["entry_text"] == "<speaker>: <text>"
    assert set(report["results"]) == {"fts:v1-porter", "plain-fts5"}
    # without the caption, full text finds only the sunset turn of the multi-hop question
    assert report["results"]["fts:v1-porter"]["by_category"]["1 multi-hop"]["r@25"] == 50.0


def test_unknown_analyzer_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        bench_main.main(["locomo", "--analyzer", "analyzer-v1", "--out", str(tmp_path)])


@pytest.mark.slow
@pytest.mark.subprocess
def test_hooks_bench_runs_the_real_hook_and_writes_percentiles(tmp_path, capsys):
    from bench import hooks

    assert hooks.percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
    assert hooks.percentile([float(i) for i in range(1, 21)], 95) == 19.0
    assert hooks.main(["--runs", "2", "--no-local", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "hooks.json").read_text())
    assert result["no model"]["runs"] == 2 and result["no model"]["injected"] == 2
    assert "p95=" in capsys.readouterr().out
