"""``python -m powercontext.entrypoints.quickstart`` (README, "Two commands") runs to the end on
this repository's own files: the Memory scenario, then Topic Memory (Sources into a Scope,
flush, processing with the deterministic provider, an update, search, exact get, an
older Revision, another Scope, an idle flush)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

REPO = Path(__file__).resolve().parents[2]


def test_the_quickstart_runs_both_families_to_the_end(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "powercontext.entrypoints.quickstart", "--repo", str(REPO),
         "--db", str(tmp_path / "q.db")],
        capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "ok: the citation validates" in out
    assert "ok: the updated Topic is found, at its new Revision" in out
    assert "ok: another Scope does not see the Topic" in out
    assert "ok: the new note UPDATEs the same Topic to Revision 2" in out
    assert "ok: the next flush is idle: everything processed" in out
    # the offline provider's Topics read well: the Makefile by its name and first
    # comment sentence (before: its first comment line cut mid-sentence)
    assert "ok: each Topic has a one-line title and a summary of at most 300" in out
    assert re.search(r"topic_art_\w+@1  Makefile: [^\n]*[a-z]\n", out), out
    assert "quickstart finished" in out
