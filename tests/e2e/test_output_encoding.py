"""Output that any terminal can take: with a stdout whose encoding is not UTF-8 (cp1252,
cp932: what Python uses on Windows), the hooks and every ``--json`` command still write
UTF-8 (before, the prompt hook raised UnicodeEncodeError on any text outside the code
page, exited 0 and injected nothing), and human output shows what the terminal cannot
encode as escapes instead of failing. Real processes, with the encoding set the way a
user's locale sets it (``PYTHONIOENCODING``, ``LC_ALL``, ``PYTHONUTF8=0``)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.cli import cli_argv

from powercontext.core.models import MemoryEntryInput
from powercontext.runtime import open_service

pytestmark = [pytest.mark.subprocess, pytest.mark.server]  # the hook daemon

#: Text no single one of the code pages below can encode whole.
TEXT = "Deploy notes: café → naïve Zürich 日本語のテスト Ωmega 🙂 done"
ENTRY = [sys.executable, "-m", "powercontext.entrypoints.cli.entry"]
ENCODINGS = ["cp1252", "cp932", "ascii"]


@pytest.fixture
def short_dir():
    """A short directory (the hook daemon's Unix socket path is at most ~100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="pcenc-", dir="/tmp")).resolve()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def repo(short_dir: Path) -> Path:
    root = short_dir / "project"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def db(short_dir: Path, repo: Path) -> Path:
    path = short_dir / "memory.db"

    async def body():
        svc = open_service(path)
        try:
            await svc.remember(None, key=f"repo:{repo}",
                               entries=(MemoryEntryInput("fact", TEXT),))
        finally:
            await svc.close()

    asyncio.run(body())
    return path


def _env(short_dir: Path, encoding: str) -> dict[str, str]:
    env = dict(os.environ, POWERCONTEXT_HOME=str(short_dir / "home"),
               PYTHONIOENCODING=encoding, LC_ALL="C", LANG="C", PYTHONUTF8="0")
    for name in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "POWERCONTEXT_ANALYZER",
                 "POWERCONTEXT_HOOK_DAEMON"):
        env.pop(name, None)
    return env


def _prompt(repo: Path) -> bytes:
    return json.dumps({"session_id": "s", "cwd": str(repo), "hook_event_name":
                       "UserPromptSubmit", "prompt": "Where are the deploy notes?"}).encode()


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("argv", [cli_argv(), ENTRY], ids=["main", "console-entry"])
def test_the_prompt_hook_injects_utf8_whatever_the_locale(short_dir, repo, db, encoding,
                                                         argv) -> None:
    proc = subprocess.run([*argv, "--db", str(db), "hook", "claude-code"],
                          input=_prompt(repo), capture_output=True,
                          env=_env(short_dir, encoding), timeout=60)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    ctx = json.loads(proc.stdout.decode("utf-8"))["hookSpecificOutput"]["additionalContext"]
    assert TEXT in ctx


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_json_commands_write_utf8_whatever_the_locale(short_dir, repo, db, encoding) -> None:
    env = _env(short_dir, encoding)
    for args in (("memory", "search", "deploy notes", "-m", f"key:repo:{repo}"),
                 ("memory", "list"), ("info",)):
        proc = subprocess.run([*cli_argv(), "--db", str(db), "--json", *args],
                              capture_output=True, env=env, timeout=60)
        assert proc.returncode == 0, (args, proc.stderr)
        json.loads(proc.stdout.decode("utf-8"))
    search = subprocess.run([*cli_argv(), "--db", str(db), "--json", "memory", "search",
                             "deploy notes", "-m", f"key:repo:{repo}"],
                            capture_output=True, env=env, timeout=60)
    assert [h["text"] for h in json.loads(search.stdout.decode("utf-8"))["hits"]] == [TEXT]
    # an error as JSON too (not found)
    missing = subprocess.run([*cli_argv(), "--db", str(db), "--json", "memory", "search",
                              "x", "-m", "key:elsewhere"],
                             capture_output=True, env=env, timeout=60)
    assert missing.returncode == 4, missing.stderr
    assert json.loads(missing.stdout.decode("utf-8"))["error"] == "ArtifactNotFoundError"


@pytest.mark.parametrize("encoding", ["cp1252", "cp932"])  # (click writes UTF-8 to ASCII)
def test_human_output_escapes_what_the_terminal_cannot_encode(short_dir, repo, db,
                                                             encoding) -> None:
    proc = subprocess.run([*cli_argv(), "--db", str(db), "memory", "search", "deploy notes",
                           "-m", f"key:repo:{repo}"], capture_output=True,
                          env=_env(short_dir, encoding), timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode(encoding)  # the terminal's own encoding, strictly
    assert "Deploy notes:" in out and "\\U0001f642" in out  # the emoji, escaped


def test_the_hook_daemon_answer_is_utf8_whatever_the_locale(short_dir, repo, db) -> None:
    env = _env(short_dir, "cp1252")
    daemon = subprocess.Popen([*ENTRY, "--db", str(db), "hook", "daemon", "-v"], env=env,
                              stderr=subprocess.PIPE, text=True)
    try:
        first = daemon.stderr.readline()
        assert "answering prompts" in first, first
        proc = subprocess.run([*ENTRY, "--db", str(db), "hook", "claude-code"],
                              input=_prompt(repo), capture_output=True, env=env, timeout=60)
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
        ctx = json.loads(proc.stdout.decode("utf-8"))["hookSpecificOutput"]["additionalContext"]
        assert TEXT in ctx
    finally:
        daemon.terminate()
        _, err = daemon.communicate(timeout=30)
    assert "powercontext hook daemon: ok" in err, err
