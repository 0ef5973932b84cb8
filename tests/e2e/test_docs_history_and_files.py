"""docs/history-and-files.md: every ``sh`` block of the page runs, in order, line by
line through bash, in a Git repository with a Memory and sessions of Claude Code and
Codex in the user's home (tests/support/transcripts.py), with this installation's
``powercontext`` on PATH; each line must exit 0. Then what the page says they do is
checked: the import added the sessions' turns once, Topics grew, the export is stable
and the edit landed as one Revision."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import cli_argv
from support.transcripts import claude_session, codex_session

pytestmark = pytest.mark.subprocess  # runs the CLI (and the hosts' shells) as processes

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "history-and-files.md"


def _blocks() -> list[list[str]]:
    text = PAGE.read_text("utf-8")
    out = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        out.append([line for line in block.split("\n") if line.strip()
                    and not line.lstrip().startswith("#")])
    return out


def test_the_page_has_its_examples():
    blocks = _blocks()
    assert len(blocks) == 2
    assert "powercontext import claude-code      # this repository's Claude Code sessions" in (
        blocks[0])
    assert any(line.startswith("powercontext memory apply MEMORY.md") for line in blocks[1])


def test_every_example_of_the_page_runs(tmp_path):
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    repo = repo.resolve()
    env = dict(os.environ, HOME=str(home), POWERCONTEXT_HOME=str(tmp_path / "pc"),
               POWERCONTEXT_DB=str(tmp_path / "memory.db"), CODEX_HOME=str(home / ".codex"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for name in ("POWERCONTEXT_EMBEDDING", "CLAUDE_CONFIG_DIR"):
        env.pop(name, None)
    claude_session(home, repo, "5e55105e-0000-4000-8000-000000000001", [
        ("Why is CI red?", "The lint job fails: ruff E501 in cli/list.py. Fixed it."),
        ("Add a --json flag to list", "Added `--json` to `list`; tests pass.")])
    codex_session(home / ".codex", repo, "5e55105e-0000-4000-8000-000000000002", [
        ("Bump the minimum Python to 3.11", "Set requires-python to >=3.11.")])
    (repo / "topics.toml").write_text('[inference]\ngeneration_provider = "deterministic"\n')
    for kind, text in (("constraint", "site/ is generated output; never edit it by hand."),
                       ("fact", "uv manages the dependencies.")):
        subprocess.run([*cli_argv(), "memory", "remember", "--key", f"repo:{repo}", "--kind",
                        kind, "--text", text], env=env, cwd=repo, check=True,
                       capture_output=True)

    for block in _blocks():
        for line in block:
            proc = subprocess.run(["bash", "-c", line], env=env, cwd=repo,
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, (line, proc.stdout, proc.stderr)

    def pc(*args: str) -> dict:
        return json.loads(subprocess.run([*cli_argv(), "--json", *args], env=env, cwd=repo,
                                         capture_output=True, text=True, check=True).stdout)

    scope = f"repo:{repo}"
    (status,) = pc("topic", "status", "--scope", scope)["scopes"]
    assert (status["source_head"], status["cursor"]) == (3, 3)  # three turns, processed
    assert pc("topic", "search", "ruff lint", "--scope", scope)["hits"]
    memory = (repo / "MEMORY.md").read_text()
    assert "uv manages the dependencies; hatchling builds the wheel." in memory
    assert "@3 sha256:" in memory and "(user_edit MEMORY.md)" in memory
    changes = pc("memory", "changes", f"key:{scope}")
    assert [c["reason"] for rc in changes for c in rc["changes"]] == ["user_edit"]
