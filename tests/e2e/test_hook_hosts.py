"""``powercontext hook gemini``, ``hook cursor`` and ``hook opencode`` through the real
CLI (a process per event, the payload on stdin) with payloads in each host's documented
shape: Gemini CLI's BeforeAgent/AfterAgent (geminicli.com/docs/hooks/reference),
Cursor's beforeSubmitPrompt/afterAgentResponse/stop (cursor.com/docs/agent/hooks), and
OpenCode's chat.message input/output and session messages as the plugin setup writes
forwards them (opencode.ai/docs/plugins) - the plugin itself run by node against the
real CLI. Each prompt hook injects the repository Memory's matching entry, fenced;
each turn becomes one conversation Source of the repository's Scope (once, secrets
redacted); a broken payload still answers one JSON object and exits 0."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli import cli_argv

from powercontext.entrypoints.cli.hosts.opencode import last_turn, plugin_source
from powercontext.runtime import open_topic_service

pytestmark = pytest.mark.subprocess  # runs the CLI (and the hosts' shells) as processes

#: A fake GitHub token (split so that no scanner flags this file).
GITHUB_TOKEN = "ghp_" + "Zq7Rt2Lm9Xw4Pk8Vn3Bc6Hd1Js5Fg0Ya2Ue7"
RULE = "Lint with `ruff check .` before every commit."


@pytest.fixture
def world(tmp_path):
    repo = tmp_path / "project"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    repo = repo.resolve()
    db = tmp_path / "memory.db"
    env = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "pc"), POWERCONTEXT_DB=str(db),
               HOME=str(tmp_path / "home"), POWERCONTEXT_HOOK_DAEMON="0")
    env.pop("POWERCONTEXT_EMBEDDING", None)

    def hook(host: str, payload: object, *args: str) -> subprocess.CompletedProcess:
        stdin = payload if isinstance(payload, str) else json.dumps(payload)
        proc = subprocess.run([*cli_argv(), *args, "hook", host, "--no-extract"],
                              input=stdin, capture_output=True, text=True, env=env,
                              cwd=repo / "src", timeout=120)
        assert proc.returncode == 0, (host, proc.stdout, proc.stderr)
        return proc

    subprocess.run([*cli_argv(), "memory", "remember", "--key", f"repo:{repo}", "--kind",
                    "constraint", "--text", RULE], env=env, check=True, capture_output=True)
    return hook, repo, db, env, tmp_path


def journal(db: Path, scope: str):
    async def body():
        async with open_topic_service(db, embedding="none") as svc:
            return await svc.backend.scope_journal(scope, 0, 100)

    return asyncio.run(body())


def _context(proc: subprocess.CompletedProcess, event: str) -> str:
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == event
    return out["hookSpecificOutput"]["additionalContext"]


# --------------------------------------------------------------------------- Gemini CLI


def gemini(event: str, repo: Path, **more: object) -> dict[str, object]:
    return {"session_id": "8c2f0b1e-gemini", "transcript_path": "/tmp/t/chat.json",
            "cwd": str(repo / "src"), "hook_event_name": event,
            "timestamp": "2026-11-02T10:00:00.000Z", **more}


def test_gemini_before_agent_injects_and_after_agent_records_the_turn(world):
    hook, repo, db, _env, _tmp = world
    context = _context(hook("gemini", gemini("BeforeAgent", repo, prompt="make sure lint "
                                             "passes before I commit")), "BeforeAgent")
    assert RULE in context and "UNTRUSTED" in context and "<powercontext-memory" in context
    nothing = hook("gemini", gemini("BeforeAgent", repo, prompt="What is a monad?"))
    assert json.loads(nothing.stdout) == {}

    after = gemini("AfterAgent", repo, prompt=f"push with {GITHUB_TOKEN}",
                   prompt_response="Pushed the branch; CI is green.", stop_hook_active=False)
    assert json.loads(hook("gemini", after).stdout) == {}
    report = json.loads(hook("gemini", {**after, "stop_hook_active": True}, "--json").stdout)
    (row,) = journal(db, f"repo:{repo}")  # the same turn delivered twice: one Source
    src = row.source
    assert report["turn_source_id"] is None or report["turn_source_id"] == src.source_id
    assert src.kind == "conversation" and src.uri.startswith(
        "gemini://session/8c2f0b1e-gemini/turn/sha256-")
    assert "Pushed the branch" in src.content and GITHUB_TOKEN not in src.content
    assert "[REDACTED:github-token]" in src.content
    assert dict(src.metadata)["agent"] == "gemini"


def test_gemini_gets_json_even_from_a_broken_payload(world):
    hook, *_rest = world
    proc = hook("gemini", "{not json")
    assert json.loads(proc.stdout) == {} and "not JSON" in proc.stderr
    assert json.loads(hook("gemini", {"hook_event_name": "SessionStart"}).stdout) == {}


# --------------------------------------------------------------------------- Cursor


def cursor(event: str, repo: Path, **more: object) -> dict[str, object]:
    return {"conversation_id": "conv-5d1e", "generation_id": "gen-2a77", "model": "gpt-5",
            "hook_event_name": event, "cursor_version": "2.0.77",
            "workspace_roots": [str(repo)], "user_email": "dev@example.com",
            "transcript_path": None, **more}


def test_cursor_records_the_turn_from_its_three_events(world):
    hook, repo, db, _env, tmp_path = world
    first = hook("cursor", cursor("beforeSubmitPrompt", repo, attachments=[],
                                  prompt=f"Why does CI fail? token {GITHUB_TOKEN}"))
    assert json.loads(first.stdout) == {"continue": True}
    kept = list((tmp_path / "pc" / "hooks" / "cursor").glob("*.json"))
    assert len(kept) == 1 and GITHUB_TOKEN not in kept[0].read_text()
    assert kept[0].stat().st_mode & 0o077 == 0
    for text in ("Looking at the CI log.", "The lint job fails on E501; fixed in cli.py."):
        assert json.loads(hook("cursor", cursor("afterAgentResponse", repo,
                                                text=text)).stdout) == {}
    assert journal(db, f"repo:{repo}") == ()  # nothing until the turn stops
    assert json.loads(hook("cursor", cursor("stop", repo, status="completed",
                                            loop_count=0)).stdout) == {}
    (row,) = journal(db, f"repo:{repo}")
    src = row.source
    assert src.uri == "cursor://session/conv-5d1e/turn/gen-2a77"
    assert src.content.endswith("Assistant:\nThe lint job fails on E501; fixed in cli.py.")
    assert "[REDACTED:github-token]" in src.content and GITHUB_TOKEN not in src.content
    assert not list((tmp_path / "pc" / "hooks" / "cursor").glob("*.json"))
    # a second stop of the same conversation has nothing left to store
    hook("cursor", cursor("stop", repo, status="completed", loop_count=1))
    assert len(journal(db, f"repo:{repo}")) == 1


def test_cursor_removes_turns_whose_stop_never_came(world):
    hook, repo, _db, _env, tmp_path = world
    folder = tmp_path / "pc" / "hooks" / "cursor"
    folder.mkdir(parents=True)
    old, recent = folder / ("a" * 32 + ".json"), folder / ("b" * 32 + ".json")
    for path in (old, recent):
        path.write_text('{"prompt": "kept", "reply": ""}')
    week = 7 * 24 * 3600
    os.utime(old, (time.time() - week - 60,) * 2)
    os.utime(recent, (time.time() - week + 3600,) * 2)
    hook("cursor", cursor("beforeSubmitPrompt", repo, attachments=[], prompt="Hello"))
    assert not old.exists() and recent.exists()
    assert len(list(folder.glob("*.json"))) == 2  # recent and this conversation's


def test_cursor_never_blocks_a_prompt(world):
    hook, *_rest = world
    assert json.loads(hook("cursor", "[]").stdout) == {"continue": True}
    proc = hook("cursor", {"hook_event_name": "stop", "conversation_id": "x"})
    assert json.loads(proc.stdout) == {}


# --------------------------------------------------------------------------- OpenCode


def _message(mid: str, role: str, *parts: dict[str, object]) -> dict[str, object]:
    return {"info": {"id": mid, "sessionID": "ses_4f1", "role": role,
                     "time": {"created": 1767000000000}},
            "parts": [{"id": f"prt_{mid}_{i}", "sessionID": "ses_4f1", "messageID": mid,
                       **p} for i, p in enumerate(parts)]}


SESSION = [
    _message("msg_a1", "user", {"type": "text", "text": "Rename helper to util"}),
    _message("msg_a2", "assistant", {"type": "text", "text": "Renamed."}),
    _message("msg_b1", "user", {"type": "text", "text": "make sure lint passes"},
             {"type": "text", "text": "powercontext memory ...", "synthetic": True},
             {"type": "file", "mime": "text/plain", "url": "file:///x"}),
    _message("msg_b2", "assistant", {"type": "step-start"},
             {"type": "tool", "tool": "bash", "state": {"status": "completed"}},
             {"type": "text", "text": "Ran `ruff check .`: clean."}),
]


def test_the_last_turn_of_a_session_is_its_last_user_message_and_the_reply_after():
    assert last_turn(SESSION) == ("make sure lint passes", "Ran `ruff check .`: clean.",
                                  "msg_b1")
    assert last_turn([]) == ("", "", "") and last_turn("junk") == ("", "", "")


def test_opencode_chat_message_injects_and_session_idle_records(world):
    hook, repo, db, _env, _tmp = world
    user = SESSION[2]
    proc = hook("opencode", {"event": "chat.message", "directory": str(repo / "src"),
                             "worktree": str(repo),
                             "input": {"sessionID": "ses_4f1", "agent": "build",
                                       "model": {"providerID": "anthropic",
                                                 "modelID": "claude-sonnet-4"},
                                       "messageID": "msg_b1"},
                             "output": {"message": user["info"],
                                        "parts": user["parts"][:1]}})
    assert RULE in _context(proc, "chat.message")
    idle = {"event": "session.idle", "directory": str(repo), "worktree": str(repo),
            "properties": {"sessionID": "ses_4f1"}, "messages": SESSION[2:]}
    assert json.loads(hook("opencode", idle).stdout) == {}
    hook("opencode", idle)
    (row,) = journal(db, f"repo:{repo}")
    assert row.source.uri == "opencode://session/ses_4f1/turn/msg_b1"
    assert row.source.content == ("User:\nmake sure lint passes\n\n"
                                  "Assistant:\nRan `ruff check .`: clean.")


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the plugin")
def test_the_opencode_plugin_setup_writes_bridges_to_the_cli(world, tmp_path):
    """The plugin file runs in node as OpenCode would load it: its chat.message hook adds
    the Memory's context as a synthetic part, its session.idle handler reads the
    session's messages through the client and the turn is recorded."""
    _hook, repo, db, env, _tmp = world
    plugin = tmp_path / "plugin" / "powercontext.mjs"
    plugin.parent.mkdir()
    plugin.write_text(plugin_source([sys.executable, "-m", "powercontext.entrypoints.cli.main",
                                     "hook", "opencode"]))
    script = tmp_path / "plugin" / "host.mjs"
    script.write_text("""
import { PowercontextPlugin } from "./powercontext.mjs"
const messages = JSON.parse(process.argv[2])
const client = { session: { messages: async ({ path }) =>
  ({ data: path.id === "ses_4f1" ? messages : [] }) } }
const hooks = await PowercontextPlugin({ client, directory: process.argv[3],
                                         worktree: process.argv[3], $: null })
const user = messages[messages.length - 2]
const output = { message: user.info, parts: [user.parts[0]] }
await hooks["chat.message"]({ sessionID: "ses_4f1", agent: "build", messageID: user.info.id },
                            output)
console.log(JSON.stringify(output.parts))
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "ses_4f1" } } })
await hooks.event({ event: { type: "message.updated", properties: {} } })
""")
    proc = subprocess.run(["node", str(script), json.dumps(SESSION), str(repo)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    parts = json.loads(proc.stdout)
    assert parts[0]["text"] == "make sure lint passes" and len(parts) == 2
    assert parts[1]["synthetic"] is True and RULE in parts[1]["text"]
    assert parts[1]["messageID"] == "msg_b1" and parts[1]["sessionID"] == "ses_4f1"
    (row,) = journal(db, f"repo:{repo}")  # node exits once the turn is stored
    assert row.source.uri == "opencode://session/ses_4f1/turn/msg_b1"
