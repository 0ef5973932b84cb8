"""The Topic-level LoCoMo benchmark (bench/topic_locomo.py; issue 15 item 6): a tiny
smoke run on a 2-session synthetic conversation through the real library (SQLite, the
deterministic provider built through the registry) writes a report with every key, and
every recall and coverage value is within 0..1; a provider without its key exits 2."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import topic_locomo  # noqa: E402

SAMPLE = [{
    "sample_id": "tiny",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:00 pm on 1 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started painting sunsets."},
        ],
        "session_2_date_time": "2:00 pm on 9 May, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "My sunset painting won a prize.",
             "blip_caption": "a photo of a painting"},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Biscuit swam in the lake today."},
        ],
    },
    "session_summary": {
        "session_1_summary": "Ana adopted a puppy, Biscuit; Ben paints sunsets.",
        "session_2_summary": "Ben's sunset painting won a prize; Biscuit swam in a lake.",
    },
    "qa": [
        {"question": "What is the name of Ana's puppy?", "answer": "Biscuit",
         "evidence": ["D1:1"], "category": 4},
        {"question": "What prize did Ben's painting win?", "answer": "a prize",
         "evidence": ["D1:2", "D2:1"], "category": 1},
        {"question": "When did Biscuit swim in the lake?", "answer": "9 May 2023",
         "evidence": ["D2:2"], "category": 2},
        {"question": "No evidence here", "answer": "-", "evidence": [], "category": 3},
    ],
}]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(SAMPLE), "utf-8")
    return path


def _unit_values(node: object, path: str = "") -> list[tuple[str, float]]:
    """Every recall / coverage value of a summary tree."""
    out: list[tuple[str, float]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, int | float) and (k.startswith("r@") or k.endswith("coverage")):
                out.append((f"{path}.{k}", float(v)))
            else:
                out += _unit_values(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _unit_values(v, f"{path}[{i}]")
    return out


def test_a_tiny_run_reports_every_metric_within_bounds(data: Path, tmp_path: Path) -> None:
    report = asyncio.run(topic_locomo.run(data, "deterministic", windows=(1, 10),
                                          workdir=tmp_path))
    assert {"benchmark", "model", "settings", "counts", "runs", "baselines",
            "runtime_s"} <= set(report)
    assert report["counts"]["sessions"] == 2 and report["counts"]["questions"] == 3
    assert [(r["granularity"], r["window"]) for r in report["runs"]] == [
        ("session", 1), ("session", 10), ("turn", 1), ("turn", 10)]
    for r in report["runs"]:
        s = r["stats"]
        assert s["stopped"] == [] and s["topics"] >= 1 and s["sources"] in (2, 4)
        assert s["per_source"]["reserved_requests"] >= s["per_source"]["used_requests"] > 0
        assert {"revisions_per_topic", "update_create_ratio", "calls"} <= set(s)
        assert r["lineage_coverage"]["overall"]["coverage"] == 1.0
        overall = r["retrieval"]["overall"]
        for key in [f"r@{k}" for k in topic_locomo.KS] + [
                f"r@{b // 1024}k_bytes" for b in topic_locomo.BYTE_BUDGETS]:
            assert key in overall
        assert overall["n"] == 3
        assert {"1 multi-hop", "2 temporal", "4 single-hop"} == set(r["retrieval"]["by_category"])
    assert set(report["baselines"]) == {"session-summaries", "memory-turns",
                                        "session-summaries:turn-slice",
                                        "memory-turns:turn-slice"}
    assert report["baselines"]["session-summaries"]["topics"] == 2
    values = _unit_values(report)
    assert values and all(0.0 <= v <= 1.0 for _, v in values), values
    text = topic_locomo.table(report)
    assert "Processing (judge-free)" in text.splitlines()[2]
    topic_locomo.plot(report, tmp_path / "tiny.png")
    assert (tmp_path / "tiny.png").stat().st_size > 0


def test_a_provider_without_its_key_exits_2_before_any_work(
        data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for var in ("OPENAI_API_KEY", "POWERCONTEXT_INFERENCE_GENERATION_API_KEY",
                "POWERCONTEXT_INFERENCE_GENERATION_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    out = tmp_path / "out"
    assert topic_locomo.main(["--data", str(data), "--model", "openai",
                              "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "generation_api_key" in err and "OPENAI_API_KEY" in err
    assert not out.exists()


def test_byte_budgets_take_a_prefix_that_fits() -> None:
    assert topic_locomo.prefix_within([1000, 1000, 100], 2048) == 2
    assert topic_locomo.prefix_within([3000, 10], 2048) == 0
    assert topic_locomo.prefix_within([], 2048) == 0
