"""``powercontext memory export`` and ``memory apply`` through the real CLI (a process
per command) on a SQLite file: the export is stable, an unedited file changes nothing,
an edit becomes one Revision whose changes carry the reason ``user_edit`` and cite the
edited file as a Source, a file from an older Revision is refused with a conflict (and
nothing is merged), ``--dry-run`` prints the plan, and a secret typed into the file is
refused naming the file and line."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from support.cli import cli_argv

pytestmark = pytest.mark.subprocess  # runs the CLI (and the hosts' shells) as processes

#: A fake GitHub token (split so that no scanner flags this file).
GITHUB_TOKEN = "ghp_" + "Zq7Rt2Lm9Xw4Pk8Vn3Bc6Hd1Js5Fg0Ya2Ue7"


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Run `make test` before review.\n")
    env = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"),
               POWERCONTEXT_DB=str(tmp_path / "memory.db"))
    env.pop("POWERCONTEXT_EMBEDDING", None)

    def run(*args: str, expect: int = 0, input: str | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run([*cli_argv(), *args], capture_output=True, text=True, env=env,
                              cwd=root, timeout=120, input=input)
        assert proc.returncode == expect, (args, proc.stdout, proc.stderr)
        return proc

    key = f"repo:{root.resolve()}"
    run("memory", "remember", "--key", key, "--kind", "preference", "--text",
        "Run `make test` before review.", "--source", "AGENTS.md")
    run("memory", "remember", "--key", key, "--kind", "constraint", "--text",
        "site/ is generated output; never edit it by hand.")
    run("memory", "remember", "--key", key, "--kind", "fact", "--text",
        "uv manages the dependencies.")
    return run, root


def _head(run):
    return json.loads(run("--json", "memory", "list").stdout)


def test_the_export_is_stable_and_an_unedited_file_changes_nothing(repo):
    run, root = repo
    stdout = run("memory", "export").stdout
    run("memory", "export", "-o", "MEMORY.md")
    assert (root / "MEMORY.md").read_text() == stdout
    assert run("memory", "export").stdout == stdout  # byte-identical
    assert stdout.index("## constraint") < stdout.index("## preference") < stdout.index(
        "## fact")
    assert "(file AGENTS.md)" in stdout and "@3 sha256:" in stdout
    out = json.loads(run("--json", "memory", "apply", "MEMORY.md").stdout)
    assert out["changed"] is False and out["plan"]["unchanged"] == 3
    assert out["base"] == out["memory_ref"] and out["source_id"] is None
    assert run("memory", "export").stdout == stdout


def test_an_edit_becomes_one_revision_citing_the_edited_file(repo):
    run, root = repo
    run("memory", "export", "-o", "MEMORY.md")
    path = root / "MEMORY.md"
    text = path.read_text()
    text = text.replace("uv manages the dependencies.",
                        "uv manages the dependencies; hatchling builds the wheel.")
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("- site/"))
    del lines[at:at + 2]  # the bullet and its entry line
    text = "\n".join(lines).replace("## fact\n", "## fact\n\n- Lint with `ruff check .`\n")
    path.write_text(text)

    plan = json.loads(run("--json", "memory", "apply", "--dry-run", "MEMORY.md").stdout)
    assert plan["dry_run"] is True and plan["changed"] is False
    assert [r["text"] for r in plan["plan"]["revise"]] == [
        "uv manages the dependencies; hatchling builds the wheel."]
    assert plan["plan"]["add"] == [{"kind": "fact", "text": "Lint with `ruff check .`"}]
    assert len(plan["plan"]["forget"]) == 1 and plan["plan"]["unchanged"] == 1
    human = run("memory", "apply", "--dry-run", "MEMORY.md").stdout
    assert "revise" in human and "add     [fact] Lint" in human and "forget" in human
    assert "(1 entry unchanged)" in human
    assert "Nothing was changed (--dry-run)." in human
    assert "@3 sha256:" in run("memory", "export").stdout  # still Revision 3

    out = json.loads(run("--json", "memory", "apply", "MEMORY.md").stdout)
    assert out["changed"] is True and out["memory_ref"]["revision"] == 4
    assert sorted(c["op"] for c in out["changes"]) == ["add", "deactivate", "revise"]
    assert {c["reason"] for c in out["changes"]} == {"user_edit"}
    source = json.loads(run("--json", "source", "show", out["source_id"]).stdout)
    assert source["kind"] == "user_edit" and source["content"] == text
    assert source["metadata"] == {"file": "MEMORY.md", "memory": out["base"]["artifact_id"],
                                  "revision": "3"}

    again = run("memory", "export").stdout
    assert "hatchling builds the wheel" in again and "site/ is generated" not in again
    assert "- Lint with `ruff check .`" in again
    assert f"evidence {out['source_id']} (user_edit MEMORY.md)" in again
    assert "Run `make test` before review." in again


def test_a_file_from_an_older_revision_is_refused_and_nothing_is_merged(repo):
    run, root = repo
    run("memory", "export", "-o", "MEMORY.md")
    path = root / "MEMORY.md"
    path.write_text(path.read_text().replace("uv manages", "uv (not pip) manages"))
    # someone else writes first
    run("memory", "remember", "--key", f"repo:{root.resolve()}", "--text",
        "CI runs on GitHub Actions.")
    before = run("memory", "export").stdout
    err = json.loads(run("--json", "memory", "apply", "MEMORY.md", expect=3).stdout)
    assert err["error"] == "RevisionConflictError"
    assert "exported from" in err["message"] and "Revision 4" in err["message"]
    assert "--since 3" in err["message"]
    assert run("memory", "export").stdout == before  # nothing applied
    run("memory", "apply", "--dry-run", "MEMORY.md", expect=3)


def test_a_secret_typed_into_the_file_is_refused_naming_the_line(repo):
    run, root = repo
    run("memory", "export", "-o", "MEMORY.md")
    path = root / "MEMORY.md"
    text = path.read_text().replace("## fact\n", f"## fact\n\n- The token is {GITHUB_TOKEN}\n")
    path.write_text(text)
    line = text.split("\n").index(f"- The token is {GITHUB_TOKEN}") + 1
    err = run("memory", "apply", "MEMORY.md", expect=2).stderr
    assert "MEMORY.md" in err and "GitHub" in err
    assert f"line {line}" in err and GITHUB_TOKEN not in err
    assert "@3 sha256:" in run("memory", "export").stdout


def test_a_file_that_is_not_an_export_is_refused(repo):
    run, root = repo
    (root / "notes.md").write_text("# Notes\n\n- just a list\n")
    err = run("memory", "apply", "notes.md", expect=2).stderr
    assert "not a powercontext memory export" in err
