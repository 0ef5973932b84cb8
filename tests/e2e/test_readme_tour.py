"""The README's five-minute tour runs as written: its shell blocks, in order, as one bash
script (``set -euo pipefail``) from the root of this checkout on a fresh data directory,
with the installed ``powercontext`` in place of ``. .venv/bin/activate``. The dashboard
block (``powercontext serve``, which runs until Ctrl-C) is left out; the browser tests
cover the pages."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ACTIVATE = ". .venv/bin/activate"

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                       reason="the tour runs in a Git checkout (git rev-parse)"),
]


def tour_script() -> str:
    readme = (ROOT / "README.md").read_text("utf-8")
    tour = readme.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("```", 1)[0] for b in tour.split("```sh\n")[1:]]
    assert blocks and ACTIVATE in blocks[0], "the tour starts by activating .venv"
    kept = [b for b in blocks if "powercontext serve" not in b]
    assert len(kept) == len(blocks) - 1, "one block, the dashboard's, runs a server"
    return "\n".join(kept).replace(ACTIVATE, "")


@pytest.mark.slow
def test_the_readme_tour_runs_as_written(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("POWERCONTEXT_", "OPENAI_", "ANTHROPIC_"))}
    bin_dir = str(Path(sys.executable).parent)
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", TMPDIR=str(tmp_path),
               HOME=str(tmp_path / "home"), CODEX_HOME=str(tmp_path / "codex"))
    claude_before = (ROOT / ".claude").exists(), (ROOT / ".mcp.json").exists()
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", tour_script()], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    out = proc.stdout
    # the citation made before the revision still validates: it names its Revision
    assert out.count("valid: ") == 1 and "Run make test for routine changes" in out
    # the prompt hook's answer carries the revised entry, fenced and marked untrusted
    hook = next(json.loads(line) for line in out.splitlines() if line.startswith('{"hook'))
    context = hook["hookSpecificOutput"]["additionalContext"]
    assert "UNTRUSTED" in context and "Run make test-fast while editing" in context
    # a Memory made by mistake is retired and its key freed
    assert "key removed: scratch" in out
    # the receipts say why each item was injected: rank, channel, the words it matched
    receipts = [line for line in out.splitlines() if re.match(r"\d+ (prompt|intent:\w+) \[", line)]
    assert receipts and any("make test-fast" in line for line in receipts)
    # two Stops of one session leave one working_note, revised once
    notes = [line for line in out.splitlines() if " working_note " in line]
    assert len(notes) == 1 and " v2 active " in notes[0], notes
    # Topics were made, found and read by the exact ref
    assert "covered: repo:" in out and "ref: topic_art_" in out and "Storage format" in out
    # --dry-run wrote nothing into the checkout
    assert ((ROOT / ".claude").exists(), (ROOT / ".mcp.json").exists()) == claude_before
