"""Smoke test of ``python -m bench serve-latency`` (bench/serve_latency.py): its
synthetic documents share no word (so the deterministic provider makes one Topic per
document), and the whole benchmark runs end to end on a tiny size against a live
``serve`` (skipped while serve is not installed). No timing asserts."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import __main__ as bench_main  # noqa: E402
from bench import serve_latency  # noqa: E402


@pytest.mark.parametrize("count", [5, 300, 400])
def test_documents_share_no_word(count: int) -> None:
    docs = serve_latency.make_documents(count)
    assert len(docs) == count
    assert docs == serve_latency.make_documents(count)  # reproducible
    owner: dict[str, int] = {}
    for i, doc in enumerate(docs):
        for word in set(re.findall(r"[a-z]+", doc["content"].lower())):
            assert owner.setdefault(word, i) == i, word
        assert doc["content"].lower().startswith("# " + doc["name"])


def test_registered() -> None:
    assert bench_main.BENCHMARKS["serve-latency"] == "bench.serve_latency"


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.skipif(importlib.util.find_spec("powercontext.entrypoints.cli.serve") is None
                    or importlib.util.find_spec("uvicorn") is None,
                    reason="powercontext serve (the server extra) is not installed")
def test_smoke(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert serve_latency.main(["--sources", "3", "--runs", "2", "--hook-runs", "1",
                               "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in ("flush (idle)", "flush (accepted)", "search", "get", "prepare",
                 "Stop hook", "prompt hook"):
        assert name in out
    assert len(list(tmp_path.glob("serve-latency-*.json"))) == 1
    assert len(list(tmp_path.glob("serve-latency-*.md"))) == 1
