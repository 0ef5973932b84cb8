"""``powercontext setup gemini|cursor|opencode`` and ``doctor`` against temporary HOME
and project directories: each host's files (Gemini CLI's settings.json, Cursor's
hooks.json and mcp.json, OpenCode's opencode.json and plugin) are written once in the
host's documented shape, backed up, idempotent, with everything else kept and no path
of this machine in a project's files; ``doctor`` reports each host; and the hook a
setup wrote, run as the host runs it with the host's payload, answers."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import cli_argv

from powercontext.runtime import open_topic_service

pytestmark = pytest.mark.subprocess  # runs the CLI (and the hosts' shells) as processes

BIN = Path(sys.executable).parent  # this installation's `powercontext` is here
RULE = "Lint with `ruff check .` before every commit."


def _path_without_us() -> str:
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not (Path(d) / "powercontext").exists())


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    home.mkdir()
    project = project.resolve()
    # the default database (<POWERCONTEXT_HOME>/memory.db): a --db or $POWERCONTEXT_DB
    # would move a project's configuration to the user scope
    e = dict(os.environ, HOME=str(home), POWERCONTEXT_HOME=str(tmp_path / "pc"),
             POWERCONTEXT_HOOK_DAEMON="0")
    for name in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "CODEX_HOME",
                 "XDG_CONFIG_HOME"):
        e.pop(name, None)

    def run(*args: str, expect: int = 0, on_path: bool = True,
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        path = _path_without_us()
        env_ = dict(e, PATH=f"{BIN}{os.pathsep}{path}" if on_path else path,
                    **(extra_env or {}))
        proc = subprocess.run([*cli_argv(), *args], capture_output=True, text=True,
                              env=env_, cwd=project / "src", timeout=120)
        assert proc.returncode == expect, (args, proc.stdout, proc.stderr)
        return proc

    def shell(command: str, stdin: str) -> subprocess.CompletedProcess:
        """``command`` run as a host runs a hook: through the shell, from the project."""
        env_ = dict(e, PATH=f"{BIN}{os.pathsep}{_path_without_us()}")
        proc = subprocess.run(["bash", "-c", command], input=stdin, capture_output=True,
                              text=True, env=env_, cwd=project, timeout=120)
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
        return proc

    return run, shell, home, project, e


def _remember_rule(run, project):
    run("memory", "remember", "--key", f"repo:{project}", "--kind", "constraint", "--text",
        RULE)


def journal(db: Path, scope: str):
    async def body():
        async with open_topic_service(db, embedding="none") as svc:
            return await svc.backend.scope_journal(scope, 0, 100)

    return asyncio.run(body())


# --------------------------------------------------------------------------- Gemini CLI

GEMINI = {
    "general": {"vimMode": True},
    "hooksConfig": {"notifications": True},
    "hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
        {"name": "audit", "type": "command", "command": "./audit.sh", "timeout": 5000}]}],
        "disabled": ["old-hook"]},
    "mcpServers": {"github": {"command": "gh-mcp", "args": ["--stdio"]}},
}


def test_setup_gemini_writes_both_hooks_and_the_server_and_keeps_the_rest(env):
    run, shell, home, project, e = env
    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(GEMINI))
    out = json.loads(run("--json", "setup", "gemini").stdout)
    assert (out["scope"], out["command"]) == ("project", "powercontext")
    assert [f["changed"] for f in out["files"]] == [True]
    assert json.loads(Path(out["files"][0]["backup"]).read_text()) == GEMINI
    data = json.loads(settings.read_text())
    assert data["general"] == GEMINI["general"] and data["hooksConfig"] == {
        "notifications": True}
    assert data["hooks"]["BeforeTool"] == GEMINI["hooks"]["BeforeTool"]
    assert data["hooks"]["disabled"] == ["old-hook"]
    (before,) = [h for g in data["hooks"]["BeforeAgent"] for h in g["hooks"]]
    (after,) = [h for g in data["hooks"]["AfterAgent"] for h in g["hooks"]]
    assert before == {"name": "powercontext-recall", "type": "command",
                      "command": "powercontext hook gemini", "timeout": 10000}
    assert after["command"] == "powercontext hook gemini" and after["timeout"] == 60000
    assert data["mcpServers"]["github"] == GEMINI["mcpServers"]["github"]
    assert data["mcpServers"]["powercontext"] == {"command": "powercontext", "args": ["mcp"]}
    written = settings.read_text()
    assert str(home.parent) not in written
    again = json.loads(run("--json", "setup", "gemini").stdout)
    assert [f["changed"] for f in again["files"]] == [False] and settings.read_text() == written
    assert "only in a folder you trust" in run("setup", "gemini").stdout

    # the hook as Gemini CLI runs it, with its BeforeAgent and AfterAgent payloads
    _remember_rule(run, project)
    base = {"session_id": "s-gem", "transcript_path": str(home / "chat.json"),
            "cwd": str(project), "timestamp": "2026-11-02T10:00:00Z"}
    answer = json.loads(shell(before["command"], json.dumps(
        {**base, "hook_event_name": "BeforeAgent", "prompt": "make sure lint passes"})).stdout)
    assert RULE in answer["hookSpecificOutput"]["additionalContext"]
    shell(after["command"], json.dumps({**base, "hook_event_name": "AfterAgent",
                                        "prompt": "make sure lint passes",
                                        "prompt_response": "ruff check: clean.",
                                        "stop_hook_active": False}))
    (row,) = journal(Path(e["POWERCONTEXT_HOME"]) / "memory.db", f"repo:{project}")
    assert row.source.uri.startswith("gemini://session/s-gem/turn/")


def test_gemini_hooks_turned_off_are_named_by_setup_and_doctor(env):
    run, _shell, home, _project, _e = env
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps(
        {"hooksConfig": {"enabled": False}}))
    (warning, *_rest) = json.loads(run("--json", "setup", "gemini", "--scope", "user",
                                       "--no-mcp").stdout)["warnings"]
    assert "hooks are turned off" in warning and "hooksConfig.enabled" in warning
    doctor = json.loads(run("--json", "doctor").stdout)
    assert doctor["agents"]["gemini"]["user"]["hooks"] is True
    assert any("hooks are turned off" in m["what"] for m in doctor["missing"])


# --------------------------------------------------------------------------- Cursor

CURSOR_HOOKS = {"version": 1, "hooks": {
    "beforeShellExecution": [{"command": "./hooks/guard.sh"}],
    "stop": [{"command": "./hooks/notify.sh", "loop_limit": 3}]}}


def test_setup_cursor_writes_hooks_and_mcp_and_the_turn_is_recorded(env):
    run, shell, _home, project, e = env
    hooks_file = project / ".cursor" / "hooks.json"
    hooks_file.parent.mkdir()
    hooks_file.write_text(json.dumps(CURSOR_HOOKS))
    (project / ".cursor" / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"docs": {"url": "https://example.com/mcp"}}}))
    out = json.loads(run("--json", "setup", "cursor").stdout)
    assert [f["changed"] for f in out["files"]] == [True, True]
    data = json.loads(hooks_file.read_text())
    assert data["version"] == 1
    assert data["hooks"]["beforeShellExecution"] == [{"command": "./hooks/guard.sh"}]
    assert data["hooks"]["stop"] == [{"command": "./hooks/notify.sh", "loop_limit": 3},
                                     {"command": "powercontext hook cursor"}]
    for event in ("beforeSubmitPrompt", "afterAgentResponse"):
        assert data["hooks"][event] == [{"command": "powercontext hook cursor"}]
    mcp = json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert mcp["docs"] == {"url": "https://example.com/mcp"}
    assert mcp["powercontext"] == {"command": "powercontext", "args": ["mcp"]}
    assert "no hook that adds context to a prompt" in run("setup", "cursor").stdout
    assert all(not f["changed"] for f in json.loads(run("--json", "setup",
                                                        "cursor").stdout)["files"])

    base = {"conversation_id": "c-9", "generation_id": "g-1", "model": "auto",
            "cursor_version": "2.0.77", "workspace_roots": [str(project)],
            "user_email": None}
    command = data["hooks"]["stop"][1]["command"]
    shell(command, json.dumps({**base, "hook_event_name": "beforeSubmitPrompt",
                               "prompt": "make sure lint passes", "attachments": []}))
    shell(command, json.dumps({**base, "hook_event_name": "afterAgentResponse",
                               "text": "ruff check: clean."}))
    shell(command, json.dumps({**base, "hook_event_name": "stop", "status": "completed",
                               "loop_count": 0}))
    (row,) = journal(Path(e["POWERCONTEXT_HOME"]) / "memory.db", f"repo:{project}")
    assert row.source.uri == "cursor://session/c-9/turn/g-1"


def test_setup_cursor_refuses_another_hooks_version(env):
    run, _shell, _home, project, _e = env
    hooks_file = project / ".cursor" / "hooks.json"
    hooks_file.parent.mkdir()
    hooks_file.write_text('{"version": 2, "hooks": {}}')
    err = json.loads(run("--json", "setup", "cursor", expect=2).stdout)
    assert "version" in err["message"] and hooks_file.read_text() == '{"version": 2, "hooks": {}}'
    assert not (project / ".cursor" / "mcp.json").exists()


# --------------------------------------------------------------------------- OpenCode


def test_setup_opencode_writes_the_plugin_and_the_server(env):
    run, _shell, home, project, _e = env
    config = project / "opencode.json"
    config.write_text(json.dumps({"$schema": "https://opencode.ai/config.json",
                                  "theme": "tokyonight",
                                  "mcp": {"jira": {"type": "remote",
                                                   "url": "https://jira.example.com/mcp"}}}))
    out = json.loads(run("--json", "setup", "opencode").stdout)
    plugin = project / ".opencode" / "plugins" / "powercontext.js"
    assert [Path(f["path"]) for f in out["files"]] == [plugin, config]
    text = plugin.read_text()
    assert text.startswith("// powercontext plugin for OpenCode")
    assert 'const COMMAND = ["powercontext", "hook", "opencode"]' in text
    assert str(home.parent) not in text
    data = json.loads(config.read_text())
    assert data["theme"] == "tokyonight" and "jira" in data["mcp"]
    assert data["mcp"]["powercontext"] == {"type": "local", "command": ["powercontext", "mcp"],
                                           "enabled": True}
    assert all(not f["changed"] for f in json.loads(run("--json", "setup",
                                                        "opencode").stdout)["files"])
    doctor = json.loads(run("--json", "doctor").stdout)
    assert doctor["agents"]["opencode"]["project"] | {"hooks": True, "mcp": True} == \
        doctor["agents"]["opencode"]["project"]


def test_setup_opencode_keeps_a_foreign_plugin_and_a_commented_config(env):
    run, _shell, home, project, _e = env
    plugin = project / ".opencode" / "plugins" / "powercontext.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("export const Mine = async () => ({})\n")
    err = json.loads(run("--json", "setup", "opencode", expect=2).stdout)
    assert "--force" in err["message"]
    assert plugin.read_text() == "export const Mine = async () => ({})\n"
    run("setup", "opencode", "--force", "--no-mcp")
    assert plugin.read_text().startswith("// powercontext plugin for OpenCode")
    assert (plugin.parent / "powercontext.js.bak").exists()
    # a JSONC file with comments is never rewritten: setup says what to add
    jsonc = project / "opencode.jsonc"
    commented = '{\n  // my theme\n  "theme": "x",\n}\n'
    jsonc.write_text(commented)
    err = json.loads(run("--json", "setup", "opencode", expect=2).stdout)
    assert str(jsonc) in err["message"] and '"powercontext"' in err["message"]
    assert jsonc.read_text() == commented
    # the user scope under $XDG_CONFIG_HOME
    xdg = home / "xdg"
    run("setup", "opencode", "--scope", "user", extra_env={"XDG_CONFIG_HOME": str(xdg)})
    assert (xdg / "opencode" / "plugins" / "powercontext.js").exists()
    assert "powercontext" in json.loads((xdg / "opencode" / "opencode.json").read_text())["mcp"]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the plugin")
def test_the_plugin_setup_wrote_records_a_turn_through_the_bare_command(env, tmp_path):
    run, _shell, _home, project, e = env
    _remember_rule(run, project)
    run("setup", "opencode", "--no-mcp")
    plugin = project / ".opencode" / "plugins" / "powercontext.js"
    (tmp_path / "host.mjs").write_text(f"""
import {{ PowercontextPlugin }} from {json.dumps(str(plugin))}
const messages = [
  {{ info: {{ id: "msg_1", sessionID: "ses_1", role: "user" }},
    parts: [{{ id: "p1", type: "text", text: "make sure lint passes" }}] }},
  {{ info: {{ id: "msg_2", sessionID: "ses_1", role: "assistant" }},
    parts: [{{ id: "p2", type: "text", text: "ruff check: clean." }}] }},
]
const client = {{ session: {{ messages: async () => ({{ data: messages }}) }} }}
const hooks = await PowercontextPlugin({{ client, directory: {json.dumps(str(project))},
                                          worktree: {json.dumps(str(project))} }})
const output = {{ message: messages[0].info, parts: [messages[0].parts[0]] }}
await hooks["chat.message"]({{ sessionID: "ses_1", messageID: "msg_1" }}, output)
console.log(JSON.stringify(output.parts.map((p) => p.text)))
await hooks.event({{ event: {{ type: "session.idle", properties: {{ sessionID: "ses_1" }} }} }})
""")
    proc = subprocess.run(["node", str(tmp_path / "host.mjs")], capture_output=True,
                          text=True, timeout=120,
                          env=dict(e, PATH=f"{BIN}{os.pathsep}{_path_without_us()}"))
    assert proc.returncode == 0, proc.stderr
    texts = json.loads(proc.stdout)
    assert texts[0] == "make sure lint passes" and RULE in texts[1]
    (row,) = journal(Path(e["POWERCONTEXT_HOME"]) / "memory.db", f"repo:{project}")
    assert row.source.uri == "opencode://session/ses_1/turn/msg_1"


# --------------------------------------------------------------------------- all hosts


@pytest.mark.parametrize("host", ["gemini", "cursor", "opencode"])
def test_project_files_get_no_path_of_this_machine(env, host):
    """Without the bare `powercontext` on PATH, each host's configuration goes to the
    user scope with this installation's absolute path, and setup says so."""
    run, _shell, home, project, _e = env
    out = json.loads(run("--json", "setup", host, on_path=False).stdout)
    assert out["scope"] == "user" and "not on PATH" in out["placement"]
    assert not any((project / p).exists() for p in (".gemini", ".cursor", ".opencode",
                                                    "opencode.json"))
    for f in out["files"]:
        assert Path(f["path"]).is_relative_to(home)
        assert str(BIN / "powercontext") in Path(f["path"]).read_text()


@pytest.mark.parametrize(("host", "path"), [("gemini", ".gemini/settings.json"),
                                            ("cursor", ".cursor/hooks.json"),
                                            ("opencode", "opencode.json")])
def test_a_file_that_does_not_parse_is_refused_and_left_alone(env, host, path):
    run, _shell, _home, project, _e = env
    target = project / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("{ not json")
    err = json.loads(run("--json", "setup", host, expect=2).stdout)
    assert err["error"] == "InvalidInputError" and "not valid JSON" in err["message"]
    assert target.read_text() == "{ not json"
    assert not list(project.rglob("*.bak"))


def test_doctor_reports_every_host_and_the_gaps_of_those_in_use(env):
    run, _shell, home, _project, _e = env
    before = json.loads(run("--json", "doctor").stdout)
    assert set(before["agents"]) == {"claude-code", "codex", "gemini", "cursor", "opencode"}
    fixes = {m["fix"] for m in before["missing"]}
    assert "powercontext setup gemini" not in fixes  # not used here: no noise
    (home / ".gemini").mkdir()
    (home / ".cursor").mkdir()
    fixes = {m["fix"] for m in json.loads(run("--json", "doctor").stdout)["missing"]}
    assert {"powercontext setup gemini", "powercontext setup cursor"} <= fixes
    run("setup", "gemini")
    run("setup", "cursor")
    after = json.loads(run("--json", "doctor").stdout)
    assert not any(m["fix"] in ("powercontext setup gemini", "powercontext setup cursor")
                   for m in after["missing"])
    human = run("doctor").stdout
    assert "gemini (project): hooks yes, mcp yes" in human
    assert "cursor (project): hooks yes, mcp yes" in human
