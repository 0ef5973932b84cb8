"""``powercontext import claude-code`` and ``import codex`` through the real CLI (a
process per command, HOME and CODEX_HOME in a temporary directory) on session files
written in each agent's shape (tests/support/transcripts.py): every finished turn of
the repository's sessions becomes one ``conversation`` Source in its Scope, once (a
second import adds nothing; a turn the Stop hook recorded is not added again; an
interrupted import, run again, adds what was missing), bounded and with secrets
redacted; a malformed or over-long line is reported with its file and line and
skipped; sessions of other directories are left out; then ``topic process`` grows
Topics from the imported history."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from support.cli import cli_argv
from support.transcripts import claude_dir, claude_session, codex_session

from powercontext.entrypoints.cli.hook_turn import MAX_TURN_PROMPT_CHARS
from powercontext.runtime import open_topic_service

pytestmark = pytest.mark.subprocess  # runs the CLI (and the hosts' shells) as processes

#: A fake GitHub token (split so that no scanner flags this file).
GITHUB_TOKEN = "ghp_" + "Zq7Rt2Lm9Xw4Pk8Vn3Bc6Hd1Js5Fg0Ya2Ue7"
S1 = "1a2b3c4d-0000-4000-8000-000000000001"
S2 = "1a2b3c4d-0000-4000-8000-000000000002"
TURNS = [
    ("Add a --json flag to `gh label list`", "Added `--json` to `gh label list`; tests pass."),
    ("Why is CI red on main?", "The lint job fails: ruff E501 in cli/list.py. Fixed it."),
    ("Bump the minimum Python to 3.11", "Set requires-python to >=3.11 and updated tox.ini."),
]


@pytest.fixture
def world(tmp_path):
    home = tmp_path / "home"
    project = (tmp_path / "project")
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    project = project.resolve()
    env = dict(os.environ, HOME=str(home), POWERCONTEXT_HOME=str(tmp_path / "pc"),
               POWERCONTEXT_DB=str(tmp_path / "memory.db"), CODEX_HOME=str(home / ".codex"))
    for name in ("POWERCONTEXT_EMBEDDING", "CLAUDE_CONFIG_DIR"):
        env.pop(name, None)

    def run(*args: str, expect: int = 0, cwd: Path | None = None,
            stdin: str | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run([*cli_argv(), *args], capture_output=True, text=True, env=env,
                              cwd=cwd or project, timeout=300, input=stdin)
        assert proc.returncode == expect, (args, proc.stdout, proc.stderr)
        return proc

    return run, home, project, tmp_path, env


def journal(tmp_path: Path, scope: str):
    async def body():
        async with open_topic_service(tmp_path / "memory.db", embedding="none") as svc:
            out, after = [], 0
            while True:
                rows = await svc.backend.scope_journal(scope, after, 1000)
                if not rows:
                    return out
                out += rows
                after = rows[-1].position

    return asyncio.run(body())


def test_claude_code_turns_are_imported_once(world):
    run, home, project, tmp_path, _env = world
    claude_session(home, project, S1, TURNS[:2], unfinished="And now the docs?",
                   extra=["{not json", "[1, 2]", ""])
    claude_session(home, project / "src", S2, TURNS[2:], tools=False)  # a sub-directory
    # a session of another repository whose directory name starts like ours
    other = project.parent / "project-other"
    (other / ".git").mkdir(parents=True)
    claude_session(home, other, "1a2b3c4d-0000-4000-8000-0000000000ff", TURNS[:1])

    proc = run("--json", "import", "claude-code")
    out = json.loads(proc.stdout)
    assert (out["added"], out["present"], out["turns"]) == (3, 0, 3)
    assert out["scope_id"] == f"repo:{project}" and out["skipped_lines"] == 2
    assert out["outside"] == 1  # the other repository's session
    session_file = claude_dir(home, project) / f"{S1}.jsonl"
    assert f"{session_file}:" in proc.stderr and "skipped: not JSON" in proc.stderr
    assert "skipped: not a JSON object" in proc.stderr
    assert [(s["file"], s["line"]) for s in out["skipped"]] == [
        (str(session_file), n) for n in (out["skipped"][0]["line"], out["skipped"][1]["line"])]

    rows = journal(tmp_path, f"repo:{project}")
    assert sorted(r.source.content for r in rows) == sorted(
        f"User:\n{p}\n\nAssistant:\n{a}" for p, a in TURNS)
    first = next(r.source for r in rows if "--json flag" in r.source.content)
    assert first.kind == "conversation"
    assert first.uri.startswith(f"claude-code://session/{S1}/turn/")
    meta = dict(first.metadata)
    assert (meta["agent"], meta["session_id"], meta["imported_from"]) == (
        "claude-code", S1, "transcript")
    assert "And now the docs?" not in "".join(r.source.content for r in rows)  # unfinished

    again = json.loads(run("--json", "import", "claude-code").stdout)
    assert (again["added"], again["files_unchanged"]) == (0, 3)
    # a file that grew is read again: its old turns are already there, the new one is added
    claude_session(home, project, S1, [*TURNS[:2], ("Write the docs", "Wrote docs/list.md.")])
    grown = json.loads(run("--json", "import", "claude-code").stdout)
    assert (grown["added"], grown["present"]) == (1, 2)
    assert len(journal(tmp_path, f"repo:{project}")) == 4
    human = run("import", "claude-code").stdout
    assert "Imported 0 new turns" in human and "unchanged since the last import" in human


def test_a_turn_the_stop_hook_recorded_is_not_imported_again(world):
    run, home, project, tmp_path, _env = world
    path = claude_session(home, project, S1, TURNS)
    stop = {"session_id": S1, "transcript_path": str(path), "cwd": str(project),
            "hook_event_name": "Stop", "stop_hook_active": False}
    run("hook", "claude-code", "--no-extract", stdin=json.dumps(stop))
    assert len(journal(tmp_path, f"repo:{project}")) == 1
    out = json.loads(run("--json", "import", "claude-code").stdout)
    assert (out["added"], out["present"]) == (2, 1)
    assert len(journal(tmp_path, f"repo:{project}")) == 3


def test_secrets_are_redacted_and_huge_text_is_bounded(world):
    run, home, project, tmp_path, _env = world
    long_prompt = "Refactor the parser. " * 2000  # 42,000 characters
    claude_session(home, project, S1, [
        (f"Use the token {GITHUB_TOKEN} to push", "Pushed with the token."),
        (long_prompt, "Refactored."),
    ])
    run("import", "claude-code")
    rows = journal(tmp_path, f"repo:{project}")
    text = "".join(r.source.content + (r.source.uri or "") for r in rows)
    assert GITHUB_TOKEN not in text and "[REDACTED:github-token]" in text
    big = next(r.source for r in rows if "Refactored." in r.source.content)
    assert "characters cut ...]" in big.content
    assert len(big.content) < MAX_TURN_PROMPT_CHARS + 200
    assert GITHUB_TOKEN.encode() not in (tmp_path / "memory.db").read_bytes()


def test_an_over_long_line_is_reported_and_skipped_not_held(world):
    run, home, project, _tmp_path, _env = world
    huge = json.dumps({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "x" * 300_000}]}})
    path = claude_session(home, project, S1, TURNS[:1], extra=[huge])
    claude_session(home, project / "src", S2, TURNS[1:2])
    proc = run("--json", "import", "claude-code", "--max-line-bytes", "65536")
    out = json.loads(proc.stdout)
    assert out["added"] == 2 and out["skipped_lines"] == 1
    (skip,) = out["skipped"]
    assert skip["file"] == str(path) and "over the 65536-byte bound" in skip["problem"]
    assert f"{path}:{skip['line']}: skipped: a line of" in proc.stderr


def test_an_interrupted_import_resumes_where_it_stopped(world):
    run, home, project, tmp_path, env = world
    many = [(f"Task {i}: rename helper_{i} to util_{i}", f"Renamed helper_{i}; tests pass.")
            for i in range(40)]  # each session: 6 tasks of its own and one shared
    for f in range(6):
        claude_session(home, project, f"1a2b3c4d-0000-4000-8000-0000000001{f:02d}",
                       many[f * 6:f * 6 + 6] + many[36 + f % 4:37 + f % 4], tools=False)
    # a run stopped on purpose: --max-turns
    first = json.loads(run("--json", "import", "claude-code", "--max-turns", "8").stdout)
    assert (first["added"], first["stopped"]) == (8, True)
    # a run interrupted from outside: Ctrl-C once some turns are in
    proc = subprocess.Popen([*cli_argv(), "import", "claude-code"], cwd=project, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "new turns" in line:
            proc.send_signal(signal.SIGINT)
            break
    proc.communicate(timeout=120)
    assert proc.returncode in (0, 130)  # 0: it finished before the signal came
    partial = len(journal(tmp_path, f"repo:{project}"))
    assert 8 < partial <= 42 and (proc.returncode == 0 or partial < 42)
    last = json.loads(run("--json", "import", "claude-code").stdout)
    rows = journal(tmp_path, f"repo:{project}")
    # 6 sessions of 7 turns: every turn, once
    assert len(rows) == len({r.source.source_id for r in rows}) == 42
    assert last["present"] + last["added"] + 8 <= 42 + 8
    assert json.loads(run("--json", "import", "claude-code").stdout)["added"] == 0


def test_codex_sessions_of_the_repository_are_imported_once(world):
    run, home, project, tmp_path, _env = world
    codex = home / ".codex"
    codex_session(codex, project, S1, TURNS[:2], unfinished="Then release it",
                  extra=["\x00garbage"])
    codex_session(codex, project / "src", S2, TURNS[2:], day=2, turn_ids=False)
    codex_session(codex, tmp_path / "elsewhere", "1a2b3c4d-0000-4000-8000-0000000000ee",
                  TURNS[:1], day=3)
    # an early release's file: the bare items after a first line with the session id
    early = codex / "sessions" / "2025" / "06" / "01" / "rollout-2025-06-01-early.jsonl"
    early.parent.mkdir(parents=True)
    early.write_text("\n".join(json.dumps(x) for x in [
        {"id": "early-1", "timestamp": "2025-06-01T10:00:00Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Explain the release script"}]},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "It tags, builds and uploads."}]},
    ]) + "\n")
    out = json.loads(run("--json", "import", "codex").stdout)
    # the early file names no directory: it is not known to be this repository's
    assert (out["added"], out["outside"], out["skipped_lines"]) == (3, 2, 1)
    rows = journal(tmp_path, f"repo:{project}")
    uris = sorted(r.source.uri for r in rows)
    assert f"codex://thread/{S1}/turn/{S1[:8]}-turn-0" in uris
    assert any(u.startswith(f"codex://thread/{S2}/turn/sha256-") for u in uris)
    assert "Then release it" not in "".join(r.source.content for r in rows)
    assert json.loads(run("--json", "import", "codex").stdout)["added"] == 0
    # named explicitly, the early file is imported into this repository's Scope
    named = json.loads(run("--json", "import", "codex", "--from", str(early)).stdout)
    assert named["added"] == 1


def test_a_codex_turn_its_notify_hook_recorded_is_not_imported_again(world):
    run, home, project, _tmp_path, _env = world
    codex_session(home / ".codex", project, S1, TURNS[:2])
    prompt, reply = TURNS[1]
    notify = {"type": "agent-turn-complete", "thread-id": S1, "turn-id": f"{S1[:8]}-turn-1",
              "cwd": str(project), "input-messages": [prompt],
              "last-assistant-message": reply}
    run("hook", "codex", "--no-extract", json.dumps(notify))
    out = json.loads(run("--json", "import", "codex").stdout)
    assert (out["added"], out["present"]) == (1, 1)


def test_topics_grow_from_the_imported_history(world):
    run, home, project, tmp_path, _env = world
    claude_session(home, project, S1, TURNS)
    run("import", "claude-code")
    config = tmp_path / "topics.toml"
    config.write_text('[inference]\ngeneration_provider = "deterministic"\n')
    scope = f"repo:{project}"
    done = json.loads(run("--json", "topic", "process", "--scope", scope, "--once",
                          "--config", str(config)).stdout)
    assert done["covered"] is True
    found = json.loads(run("--json", "topic", "search", "ruff lint CI", "--scope",
                           scope).stdout)
    assert found["hits"], found
