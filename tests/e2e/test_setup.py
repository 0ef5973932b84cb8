"""``powercontext setup claude-code|codex`` and ``doctor`` against temporary HOME and
project directories: the files agents read are written once, backed up, idempotent,
and everything else in them survives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from support.cli import cli_argv

pytestmark = pytest.mark.subprocess

BIN = Path(sys.executable).parent  # this installation's `powercontext` is here


def _path_without_us() -> str:
    """PATH without any directory holding a `powercontext`."""
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not (Path(d) / "powercontext").exists())


@pytest.fixture
def env(tmp_path):
    """run(*args): the CLI as a process with HOME and the project under ``tmp_path`` and
    this installation's `powercontext` on PATH (``on_path=False``: not on PATH)."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    home.mkdir()
    e = dict(os.environ, HOME=str(home), POWERCONTEXT_HOME=str(tmp_path / "pc"))
    for name in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "CODEX_HOME"):
        e.pop(name, None)

    def run(*args: str, expect: int = 0, cwd: Path | None = None, on_path: bool = True,
            extra_env: dict[str, str] | None = None):
        path = _path_without_us()
        env_ = dict(e, PATH=f"{BIN}{os.pathsep}{path}" if on_path else path,
                    **(extra_env or {}))
        proc = subprocess.run([*cli_argv(), *args], capture_output=True, text=True,
                              env=env_, cwd=cwd or project / "src", timeout=60)
        assert proc.returncode == expect, (args, proc.stdout, proc.stderr)
        return proc

    return run, home, project


SETTINGS = {
    "permissions": {"allow": ["Bash(make test)"]},
    "model": "opus",
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}],
    },
}
MCP = {"mcpServers": {"github": {"command": "gh-mcp", "args": []}}}


def _ours(groups, command_part="hook claude-code"):
    return [h for g in groups for h in g["hooks"] if command_part in h["command"]]


def test_setup_claude_code_project_scope_is_idempotent_with_a_backup(env, tmp_path):
    run, _home, project = env
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = json.dumps(SETTINGS)
    settings.write_text(original)
    (project / ".mcp.json").write_text(json.dumps(MCP))

    out = json.loads(run("--json", "setup", "claude-code").stdout)
    assert (out["scope"], out["command"]) == ("project", "powercontext")
    assert [f["changed"] for f in out["files"]] == [True, True]
    assert Path(out["files"][0]["backup"]).read_text() == original

    data = json.loads(settings.read_text())
    assert data["permissions"] == SETTINGS["permissions"] and data["model"] == "opus"
    assert data["hooks"]["PreToolUse"] == SETTINGS["hooks"]["PreToolUse"]
    assert data["hooks"]["Stop"][0] == SETTINGS["hooks"]["Stop"][0]  # theirs stays first
    (stop,) = _ours(data["hooks"]["Stop"])
    (prompt,) = _ours(data["hooks"]["UserPromptSubmit"])
    assert stop["command"] == prompt["command"] == "powercontext hook claude-code"
    assert (prompt["timeout"], stop["timeout"]) == (10, 60)
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert servers["github"] == MCP["mcpServers"]["github"]
    assert servers["powercontext"] == {"type": "stdio", "command": "powercontext",
                                       "args": ["mcp"]}

    written = settings.read_text(), (project / ".mcp.json").read_text()
    assert str(tmp_path) not in written[0] + written[1]  # nothing of this machine
    again = json.loads(run("--json", "setup", "claude-code").stdout)
    assert [f["changed"] for f in again["files"]] == [False, False]
    assert (settings.read_text(), (project / ".mcp.json").read_text()) == written
    assert Path(out["files"][0]["backup"]).read_text() == original  # backup untouched
    human = run("setup", "claude-code").stdout
    assert "already set up" in human and "bare `powercontext` (on PATH)" in human


def test_setup_claude_code_names_the_hook_daemon_for_a_sqlite_file(env, tmp_path):
    """The hook daemon answers Claude Code's prompt hook of a SQLite file: setup says how
    to start it, for the same database; a URL database (no daemon) gets no such line,
    and Codex (no prompt hook) neither."""
    run, _home, _project = env
    db = tmp_path / "data" / "my memory.db"
    out = run("--db", str(db), "setup", "claude-code", "--scope", "user").stdout
    assert f"`powercontext --db '{db}' hook daemon` runs" in out
    assert "hook daemon" in run("setup", "claude-code").stdout  # the default database
    url = f"sqlite:///{tmp_path / 'other.db'}"
    assert "hook daemon" not in run("--db", url, "setup", "claude-code",
                                    "--scope", "user").stdout
    assert "hook daemon" not in run("setup", "codex").stdout
    long = tmp_path / ("d" * 120) / "memory.db"  # its socket path would be over 100 bytes
    assert "hook daemon" not in run("--db", str(long), "setup", "claude-code",
                                    "--scope", "user").stdout


def test_setup_dry_run_prints_the_diff_and_writes_nothing(env):
    run, home, project = env
    out = run("setup", "claude-code", "--dry-run").stdout
    assert not (home / ".claude").exists() and not (home / ".claude.json").exists()
    assert "+++ " in out and "hook claude-code" in out and '"powercontext"' in out
    assert not (project / ".claude").exists() and not (project / ".mcp.json").exists()
    out = run("setup", "codex", "--dry-run").stdout
    assert 'notify = [' in out and "[mcp_servers.powercontext]" in out
    assert not (home / ".codex").exists()


def test_setup_claude_code_user_scope_keeps_the_rest_of_claude_json(env):
    run, home, _ = env
    (home / ".claude.json").write_text(json.dumps({"numStartups": 7, "projects": {"/x": {}}}))
    run("setup", "claude-code", "--scope", "user", "--command", "powercontext")
    state = json.loads((home / ".claude.json").read_text())
    assert state["numStartups"] == 7 and state["projects"] == {"/x": {}}
    assert state["mcpServers"]["powercontext"] == {"type": "stdio", "command": "powercontext",
                                                   "args": ["mcp"]}
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert _ours(hooks["Stop"])[0]["command"] == "powercontext hook claude-code"
    assert (home / ".claude.json.bak").exists()
    run("setup", "claude-code", "--scope", "user", "--command", "powercontext",
        "--allow-writes")
    state = json.loads((home / ".claude.json").read_text())
    assert state["mcpServers"]["powercontext"]["args"] == ["mcp", "--allow-writes"]
    assert not (home / ".claude" / "settings.json.bak").exists()  # there was no file


CODEX = '''# my Codex settings
model = "o3"  # the default model

[profiles.fast]
model = "o4-mini"

[mcp_servers.docs]
command = "docs-mcp"
'''


def test_setup_codex_edits_config_toml_keeping_comments(env, tmp_path):
    run, home, _ = env
    codex_home = tmp_path / "codex-home"  # --config names the file explicitly
    codex_home.mkdir()
    config = codex_home / "config.toml"
    config.write_text(CODEX)
    run("--db", str(tmp_path / "m.db"), "setup", "codex", "--config", str(config),
          "--command", "powercontext")
    text = config.read_text()
    assert text.startswith("# my Codex settings\nmodel = \"o3\"  # the default model\n")
    data = tomllib.loads(text)
    assert data["notify"] == ["powercontext", "--db", str(tmp_path / "m.db"), "hook", "codex"]
    assert data["profiles"] == {"fast": {"model": "o4-mini"}}
    assert data["mcp_servers"]["docs"] == {"command": "docs-mcp"}
    assert data["mcp_servers"]["powercontext"] == {
        "command": "powercontext", "args": ["--db", str(tmp_path / "m.db"), "mcp"]}
    assert (codex_home / "config.toml.bak").read_text() == CODEX
    run("--db", str(tmp_path / "m.db"), "setup", "codex", "--config", str(config),
        "--command", "powercontext")
    assert config.read_text() == text

    # the default is ~/.codex/config.toml
    run("setup", "codex", "--command", "powercontext")
    assert tomllib.loads((home / ".codex" / "config.toml").read_text())["notify"] == [
        "powercontext", "hook", "codex"]
    run("setup", "codex", "--command", "powercontext", "--allow-writes")
    default = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert default["mcp_servers"]["powercontext"]["args"] == ["mcp", "--allow-writes"]


def test_setup_codex_does_not_replace_another_notify_program_without_force(env):
    run, home, _ = env
    (home / ".codex").mkdir()
    config = home / ".codex" / "config.toml"
    config.write_text('notify = ["my-notifier", "--loud"]\n')
    err = run("setup", "codex", expect=2).stderr
    assert "notify" in err and "--force" in err and "my-notifier" in err
    assert config.read_text() == 'notify = ["my-notifier", "--loud"]\n'
    run("setup", "codex", "--force", "--command", "powercontext")
    assert tomllib.loads(config.read_text())["notify"] == ["powercontext", "hook", "codex"]
    assert "my-notifier" in (home / ".codex" / "config.toml.bak").read_text()


def test_setup_refuses_a_file_it_cannot_parse_and_changes_nothing(env):
    run, home, project = env
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    out = json.loads(run("--json", "setup", "claude-code", expect=2).stdout)
    assert out["error"] == "InvalidInputError" and "not valid JSON" in out["message"]
    assert settings.read_text() == "{ not json" and not (project / ".mcp.json").exists()
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text("model = \n")
    assert "not valid TOML" in run("setup", "codex", expect=2).stderr


def test_doctor_names_what_is_missing_and_how_to_fix_it(env):
    run, _home, _project = env
    before = json.loads(run("--json", "doctor").stdout)
    assert set(before["extras"]) == {"mcp", "local", "openai", "oceanbase", "anthropic"}
    fixes = {m["fix"] for m in before["missing"]}
    assert {"powercontext setup claude-code", "powercontext setup codex --scope user"} <= fixes
    assert before["agents"]["claude-code"]["project"]["hooks"] is False
    assert before["database"]["exists"] is False

    run("setup", "claude-code")
    run("setup", "codex")
    after = json.loads(run("--json", "doctor").stdout)
    assert after["agents"]["claude-code"]["project"] == dict(
        after["agents"]["claude-code"]["project"], hooks=True, mcp=True)
    assert after["agents"]["codex"]["user"]["hooks"] is True
    assert after["agents"]["codex"]["user"]["mcp"] is True
    assert not any("setup" in m["fix"] for m in after["missing"])
    human = run("doctor").stdout
    assert "claude-code (project): hooks yes, mcp yes" in human


def test_project_files_get_no_path_of_this_machine(env, tmp_path):
    """.claude/settings.json and .mcp.json are committed by a team: without the bare
    `powercontext` on PATH, or with a --db, setup writes the user scope instead (this
    installation's absolute path is fine there) and says so."""
    run, home, project = env
    out = run("setup", "claude-code", on_path=False)
    assert not (project / ".claude").exists() and not (project / ".mcp.json").exists()
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    mine = str(BIN / "powercontext")
    assert _ours(hooks["Stop"])[0]["command"] == f"{mine} hook claude-code"
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["powercontext"][
        "command"] == mine
    assert "wrote the user scope, not the project's files a team commits" in out.stdout
    assert "`powercontext` is not on PATH" in out.stdout and f"put {BIN} on PATH" in out.stdout

    db = tmp_path / "data" / "memory.db"
    data = json.loads(run("--json", "--db", str(db), "setup", "claude-code").stdout)
    assert data["scope"] == "user" and f"--db {db} is a database on this machine" in data[
        "placement"]
    assert not (project / ".claude").exists()
    stop = _ours(json.loads((home / ".claude" / "settings.json").read_text())["hooks"]["Stop"])
    assert stop[0]["command"].endswith(f"--db {db} hook claude-code")
    # Codex's project file follows the same rule
    codex = json.loads(run("--json", "setup", "codex", "--scope", "project",
                           on_path=False).stdout)
    assert codex["scope"] == "user" and not (project / ".codex").exists()
    assert (home / ".codex" / "config.toml").exists()
    # on PATH and no --db: the project's files, with the bare command
    assert json.loads(run("--json", "setup", "claude-code").stdout)["scope"] == "project"
    assert _ours(json.loads((project / ".claude" / "settings.json").read_text())["hooks"][
        "Stop"])[0]["command"] == "powercontext hook claude-code"


def test_setup_says_when_the_mcp_extra_is_missing(env, tmp_path):
    """A stand-in `mcp` package without the server modules: the MCP server would fail
    to start, so setup says which extra to install (and still writes the config)."""
    run, _home, project = env
    fake = tmp_path / "no-mcp"
    (fake / "mcp").mkdir(parents=True)
    (fake / "mcp" / "__init__.py").write_text("")
    out = run("--json", "setup", "claude-code", extra_env={"PYTHONPATH": str(fake)})
    (warning,) = json.loads(out.stdout)["warnings"]
    assert "needs the `mcp` extra, which is not installed" in warning and "[mcp]" in warning
    assert (project / ".mcp.json").exists()
    assert json.loads(run("--json", "setup", "claude-code").stdout)["warnings"] == []
    assert json.loads(run("--json", "setup", "claude-code", "--no-mcp",
                          extra_env={"PYTHONPATH": str(fake)}).stdout)["warnings"] == []
