"""docs/hooks.md, "Gemini CLI, Cursor and OpenCode": the section's ``sh`` block runs line
by line (bash, a fresh project and home, this installation's ``powercontext`` on PATH)
and each ``json`` block is exactly what setup wrote: Gemini CLI's settings.json,
Cursor's hooks.json and OpenCode's opencode.json."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess  # runs the CLI (and the hosts' shells) as processes

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _section() -> str:
    text = (ROOT / "docs" / "hooks.md").read_text("utf-8")
    start = text.index("## Gemini CLI, Cursor and OpenCode")
    end = text.index("\n## ", start + 3)
    return text[start:end]


def test_the_hosts_section_examples_run_and_show_what_setup_writes(tmp_path):
    section = _section()
    (block,) = re.findall(r"```sh\n(.*?)```", section, re.S)
    jsons = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", section, re.S)]
    assert len(jsons) == 3
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    path = os.pathsep.join([str(BIN), *(d for d in os.environ.get("PATH", "").split(
        os.pathsep) if d and not (Path(d) / "powercontext").exists())])
    env = dict(os.environ, HOME=str(home), POWERCONTEXT_HOME=str(tmp_path / "pc"), PATH=path)
    for name in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "XDG_CONFIG_HOME"):
        env.pop(name, None)
    lines = [line for line in block.split("\n") if line.strip()]
    assert len(lines) == 5
    for line in lines:
        proc = subprocess.run(["bash", "-c", line], env=env, cwd=project,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (line, proc.stdout, proc.stderr)
    gemini, cursor, opencode = jsons
    assert json.loads((project / ".gemini" / "settings.json").read_text()) == gemini
    assert json.loads((project / ".cursor" / "hooks.json").read_text()) == cursor
    assert json.loads((project / "opencode.json").read_text()) == opencode
    assert not (home / ".gemini").exists()  # --dry-run wrote nothing
    assert (project / ".opencode" / "plugins" / "powercontext.js").exists()
