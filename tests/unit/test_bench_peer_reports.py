"""The reports ``make bench`` writes (issue 14 item 4): the LoCoMo benchmark's Markdown
file and PNG (recall against k; ``plot`` said it wrote nothing even when it had, so the
run printed "no plot"), and the peer benchmark's PNG (latency against size, bytes per
entry, recall against k) from a report without running either library."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import locomo_main  # noqa: E402
from bench.peer import report  # noqa: E402
from bench.plotting import pyplot  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
needs_matplotlib = pytest.mark.skipif(pyplot() is None, reason="matplotlib is not installed")

SAMPLE = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ben", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit."},
                {"speaker": "Ana", "dia_id": "D1:2", "text": "I started painting sunsets."},
            ],
        },
        "qa": [
            {"question": "What is the name of Ben's puppy?", "evidence": ["D1:1"], "category": 4},
        ],
    }
]


@needs_matplotlib
def test_locomo_writes_json_markdown_and_the_recall_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(SAMPLE), "utf-8")
    out = tmp_path / "out"
    args = ["--data", str(data), "--out", str(out), "--model", "deterministic",
            "--modes", "fts", "--analyzer", "v2"]
    assert locomo_main.main(args) == 0
    (md,) = out.glob("locomo-*.md")
    text = md.read_text("utf-8")
    assert text.startswith(f"Command: `python -m bench locomo {' '.join(args)}`")
    assert "| powercontext fts, analyzer v2 (default) | 100.0 |" in text
    (png,) = out.glob("locomo-*.png")
    assert png.read_bytes()[:8] == PNG
    printed = capsys.readouterr().out
    assert f"wrote {png}" in printed and "no plot" not in printed


def _row(entries: int, ms: float) -> dict[str, object]:
    cell = {"p50_ms": ms, "p95_ms": 2 * ms, "n": 3, "wanted": 3}
    return {"entries": entries, "load_s": 1.0, "load_entries_per_s": 100.0,
            "search_fts": {**cell, "mean_hits_warm": 5.0}, "remember_1": cell,
            "remember_100": cell, "db_bytes": 1000 * entries, "bytes_per_entry": 1000.0}


@needs_matplotlib
def test_the_peer_plot_is_written_from_a_report(tmp_path: Path) -> None:
    rep = {
        "date": "2026-12-02T00:00:00Z", "peer": {"version": "1.4.1"},
        "perf": {"ours": [_row(1000, 5.0), _row(10000, 9.0)],
                 "peer": [_row(1000, 20.0), _row(10000, 40.0)]},
        "locomo": {side: {"overall": {"r@5": 50.0, "r@10": 60.0, "r@25": 70.0, "n": 3}}
                   for side in ("ours", "peer")},
    }
    path = tmp_path / "peer.png"
    assert report.plot(rep, path) is True
    assert path.read_bytes()[:8] == PNG
    # a side that did not run leaves its curves out; the plot is still written
    assert report.plot({**rep, "perf": {"ours": rep["perf"]["ours"], "peer": []},
                        "locomo": {}}, tmp_path / "ours-only.png") is True


@needs_matplotlib
def test_replot_redraws_the_png_of_a_json_report(tmp_path: Path) -> None:
    from bench import peer

    rep = {"date": "d", "peer": {"version": "1.4.1"},
           "perf": {"ours": [_row(1000, 5.0)], "peer": [_row(1000, 20.0)]}, "locomo": {}}
    path = tmp_path / "peer-x.json"
    path.write_text(json.dumps(rep), "utf-8")
    assert peer.main(["--replot", str(path)]) == 0
    assert (tmp_path / "peer-x.png").read_bytes()[:8] == PNG
