"""Smoke test of ``python -m bench agent-eval`` (bench/agent_eval): the copied labels
validate with the copied scorer, and one repository is scored end to end through this
checkout's real ``powercontext`` command, so the benchmark cannot rot. No timing or
quality asserts (figures, not a verdict)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import __main__ as bench_main  # noqa: E402
from bench import agent_eval  # noqa: E402


@pytest.mark.subprocess
def test_the_benchmark_is_registered_and_its_labels_validate():
    assert bench_main.BENCHMARKS["agent-eval"] == "bench.agent_eval"
    proc = subprocess.run([sys.executable, str(agent_eval.SCORER), "--data",
                           str(agent_eval.DATA), "--validate"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_data_that_is_not_agent_eval_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        agent_eval.main(["--data", str(tmp_path)])
    assert exc.value.code == 2
    assert "holds no agent-eval data" in capsys.readouterr().err


@pytest.mark.subprocess
def test_one_repository_is_scored_through_this_checkouts_cli(tmp_path, capfd):
    cli = Path(sys.executable).with_name("powercontext")
    if not cli.exists():
        pytest.skip(f"{cli} is absent (the checkout's venv has no console script)")
    assert agent_eval.main(["--no-stream", "--repos", "axios", "--out", str(tmp_path)]) == 0
    (written,) = tmp_path.glob("agent-eval-*.json")
    result = json.loads(written.read_text())
    assert [r["repo"] for r in result["repos"]] == ["axios"]
    assert result["summary"]["must_recall"] is not None
    assert "agent-eval: must-recall" in capfd.readouterr().out
