"""Hostile sizes stay bounded at the hook's boundary: a Stop payload with a 50 MB reply
(before: 64.6 s and 896 MB, past Claude Code's 60 s Stop timeout) is cut while stdin is
read, so the process holds a few tens of MB whatever the size, and what is stored keeps
the reply's head and tail with their secrets redacted; a 100,000-deep JSON (before: a
RecursionError and its traceback in hooks.log) is refused in one line. Real processes;
memory is the child's own peak RSS (``os.wait4``). Times are figures of
``python -m bench hook-sizes``, not assertions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.cli import cli_argv
from support.hook_db import journal, seed

pytestmark = [pytest.mark.subprocess, pytest.mark.server]  # the hook daemon

ENTRY = [sys.executable, "-m", "powercontext.entrypoints.cli.entry"]
GITHUB_TOKEN = "ghp_" + "Zq7Rt2Lm9Xw4Pk8Vn3Bc6Hd1Js5Fg0Ya2Ue7"
#: The peak RSS a Stop hook may reach whatever the payload's size (a small one: ~50 MB).
MAX_RSS_MB = 150


@pytest.fixture
def short_dir():
    path = Path(tempfile.mkdtemp(prefix="pcbnd-", dir="/tmp")).resolve()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def env(short_dir: Path) -> dict[str, str]:
    e = dict(os.environ, POWERCONTEXT_HOME=str(short_dir / "home"))
    for k in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "POWERCONTEXT_ANALYZER",
              "POWERCONTEXT_HOOK_DAEMON"):
        e.pop(k, None)
    return e


@pytest.fixture
def repo(short_dir: Path) -> Path:
    root = short_dir / "project"
    (root / ".git").mkdir(parents=True)
    (root / "Makefile").write_text("test:\n\tpytest -q\n")
    return root


#: Runs argv[2:] with stdin, stdout and stderr passed through and writes the child's
#: peak RSS (KiB) to argv[1]. A small launcher: a child forked from the test process
#: itself would report that process's resident memory as its own peak.
_LAUNCHER = ("import os, subprocess, sys\n"
             "p = subprocess.Popen(sys.argv[2:])\n"
             "_, status, usage = os.wait4(p.pid, 0)\n"
             "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
             "sys.exit(os.waitstatus_to_exitcode(status))\n")


def run_measured(argv: list[str], stdin: Path, env: dict[str, str]
                 ) -> tuple[int, str, str, float]:
    """(exit code, stdout, stderr, peak RSS in MB) of one process reading ``stdin``."""
    rss = stdin.with_suffix(".rss")
    with open(stdin, "rb") as fh:
        proc = subprocess.run([sys.executable, "-c", _LAUNCHER, str(rss), *argv], stdin=fh,
                              capture_output=True, env=env, timeout=300)
    return (proc.returncode, proc.stdout.decode(), proc.stderr.decode(),
            int(rss.read_text()) / 1024)


def _stop_payload(path: Path, repo: Path, reply: str) -> Path:
    path.write_text(json.dumps({"session_id": "s1", "cwd": str(repo), "hook_event_name": "Stop",
                                "stop_hook_active": False, "last_assistant_message": reply}))
    return path


def _big_reply(mb: int) -> str:
    line = "The build passed after the flaky test in tests/unit was fixed.\n"
    body = line * (mb * 1024 * 1024 // len(line))
    middle = len(body) // 2
    return ("HEAD-OF-REPLY " + body[:middle] + f"middle secret password={GITHUB_TOKEN[4:]}\n"
            + body[middle:] + f"Pushed with the token {GITHUB_TOKEN}. TAIL-OF-REPLY")


@pytest.mark.parametrize("through_daemon", [False, True], ids=["in-process", "daemon-running"])
def test_a_stop_with_a_50_mb_reply_is_cut_at_the_boundary(short_dir, env, repo,
                                                          through_daemon) -> None:
    db = short_dir / "memory.db"
    seed(db, repo)
    payload = _stop_payload(short_dir / "stop.json", repo, _big_reply(50))
    daemon = None
    if through_daemon:  # the client reads at most 1 MiB before it hands the rest over
        daemon = subprocess.Popen([*ENTRY, "--db", str(db), "hook", "daemon"], env=env,
                                  stderr=subprocess.PIPE, text=True)
        assert "answering prompts" in daemon.stderr.readline()  # type: ignore[union-attr]
    try:
        code, out, err, rss = run_measured(
            [*ENTRY, "--db", str(db), "--json", "hook", "claude-code", "--no-extract"],
            payload, env)
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.communicate(timeout=30)
    assert code == 0 and err == "", err
    assert rss < MAX_RSS_MB, f"peak RSS {rss:.0f} MB"
    report = json.loads(out)
    outcome = next(s for s in journal(db) if s.source_id == report["source_id"])
    text = outcome.content
    assert text.startswith("HEAD-OF-REPLY ") and text.endswith(". TAIL-OF-REPLY")
    assert "characters cut" in text and len(text) < 20_000
    assert "Pushed with the token [REDACTED:github-token]." in text
    stored = json.dumps([(s.content, s.metadata) for s in journal(db)])
    assert GITHUB_TOKEN not in stored and GITHUB_TOKEN[4:] not in stored


def test_a_stop_with_a_small_reply_stores_it_whole(short_dir, env, repo) -> None:
    db = short_dir / "memory.db"
    reply = "Fixed the flaky test; all 12 tests pass. " * 100
    payload = _stop_payload(short_dir / "stop.json", repo, reply)
    code, out, err, _rss = run_measured(
        [*cli_argv(), "--db", str(db), "--json", "hook", "claude-code", "--no-extract"],
        payload, env)
    assert code == 0 and err == "", err
    outcome = next(s for s in journal(db) if s.source_id == json.loads(out)["source_id"])
    assert outcome.content == reply.strip()


@pytest.mark.parametrize("doc", ["[" * 100_000 + "]" * 100_000,
                                 '{"hook_event_name": "Stop", "x": ' + "[" * 100_000
                                 + "]" * 100_000 + "}",
                                 '{"a": ' + '{"a": ' * 70 + "1" + "}" * 71],
                         ids=["array", "object", "70-deep"])
def test_deep_json_on_stdin_is_refused_in_one_line(short_dir, env, doc) -> None:
    db = short_dir / "memory.db"
    stdin = short_dir / "deep.json"
    stdin.write_text(doc)
    code, out, err, _ = run_measured([*cli_argv(), "--db", str(db), "hook", "claude-code"],
                                     stdin, env)
    assert code == 0 and out == ""
    (line,) = err.splitlines()
    assert "hook input is nested more than 64 levels deep" in line
    log = (short_dir / "home" / "logs" / "hooks.log").read_text()
    assert "RecursionError" not in log and "Traceback" not in log
    assert "refused its input" in log


def test_a_deep_codex_notification_is_refused_in_one_line(short_dir, env) -> None:
    deep = '{"type": "agent-turn-complete", "x": ' + "[" * 50_000 + "]" * 50_000 + "}"
    proc = subprocess.run([*cli_argv(), "--db", str(short_dir / "m.db"), "hook", "codex",
                           deep], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert "notification is nested more than 64 levels deep" in line


def test_a_huge_transcript_reply_and_prompt_are_clipped(tmp_path) -> None:
    from powercontext.entrypoints.cli.hook_payload import (
        CLIP_HEAD_CHARS,
        CLIP_TAIL_CHARS,
        extract_transcript_turn,
    )

    prompt = "start of the prompt " + "word " * 100_000 + " end of the prompt"
    reply = "start of the reply " + "word " * 200_000 + " end of the reply"
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps({"type": "user", "message": {"role": "user", "content": prompt}}) + "\n"
        + json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": reply}]}}) + "\n")
    answer, request = extract_transcript_turn(path)
    for got, whole in ((answer, reply), (request, prompt)):
        assert len(got) <= CLIP_HEAD_CHARS + CLIP_TAIL_CHARS + 80
        assert got[:20] == whole[:20] and got[-20:] == whole[-20:]
        assert "characters cut at the hook boundary" in got
