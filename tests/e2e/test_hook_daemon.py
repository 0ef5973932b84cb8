"""The prompt hook's daemon end to end (docs/hooks.md, "Faster prompts: the hook
daemon"): a real ``powercontext hook daemon`` process on a real SQLite file, real
``powercontext`` console-entry processes (``powercontext.entrypoints.cli.entry``) as Claude
Code starts them, and hostile requests on its socket."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.hook_db import journal, seed

from powercontext.entrypoints.cli import hook_daemon as wire

pytestmark = pytest.mark.subprocess

ENTRY = [sys.executable, "-m", "powercontext.entrypoints.cli.entry"]
_FENCE_ID = re.compile(r"[0-9a-f]{16}")


@pytest.fixture
def short_dir():
    """A short directory (a Unix socket path is at most ~100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="pchd-", dir="/tmp")).resolve()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def env(short_dir):
    e = dict(os.environ, POWERCONTEXT_HOME=str(short_dir / "home"))
    for name in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "POWERCONTEXT_ANALYZER",
                 wire.ENV_DISABLE):
        e.pop(name, None)
    return e


@pytest.fixture
def repo(short_dir) -> Path:
    root = short_dir / "project"
    (root / ".git").mkdir(parents=True)
    (root / "Makefile").write_text("test:\n\tpytest -q\n")
    return root


def prompt(repo: Path, text: str = "How do I run the test suite before review?") -> str:
    return json.dumps({"session_id": "s1", "cwd": str(repo),
                       "hook_event_name": "UserPromptSubmit", "prompt": text})


class Daemon:
    def __init__(self, env: dict[str, str], db: Path) -> None:
        self.db = db
        self.sock = Path(f"{db}-hook.sock")
        self.proc = subprocess.Popen([*ENTRY, "--db", str(db), "hook", "daemon", "-v"],
                                     env=env, stderr=subprocess.PIPE, text=True)
        first = self.proc.stderr.readline()  # printed once the socket listens
        assert "answering prompts" in first, first + self.proc.stderr.read()

    def stop(self) -> str:
        """SIGTERM, then everything it printed on stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=30)
        return err


@pytest.fixture
def daemon(env, short_dir, repo):
    db = short_dir / "memory.db"
    seed(db, repo)
    d = Daemon(env, db)
    yield d
    d.stop()


def run_entry(env, db: Path, *args: str, stdin: str | bytes) -> subprocess.CompletedProcess:
    proc = subprocess.run([*ENTRY, "--db", str(db), "hook", "claude-code", *args],
                          input=stdin.encode() if isinstance(stdin, str) else stdin,
                          capture_output=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc


def unfenced(out: bytes) -> str:
    """The hook's output with the fence's random id masked."""
    return _FENCE_ID.sub("<id>", out.decode("utf-8"))


@pytest.mark.slow
def test_the_daemon_answers_a_prompt_exactly_as_the_hook_in_process(env, daemon, repo):
    for text, args in [("How do I run the test suite before review?", ()),
                       ("test before review", ("--limit", "1", "--mode", "fts")),
                       ("generated build files", ("--no-topics", "-n", "3")),
                       ("nothing here matches zebra", ())]:
        by_daemon = run_entry(env, daemon.db, *args, stdin=prompt(repo, text)).stdout
        alone = run_entry({**env, wire.ENV_DISABLE: "0"}, daemon.db, *args,
                          stdin=prompt(repo, text)).stdout
        assert unfenced(by_daemon) == unfenced(alone), text
    assert b"additionalContext" in run_entry(env, daemon.db, stdin=prompt(repo)).stdout
    err = daemon.stop()
    assert err.count("powercontext hook daemon: ok") == 5, err
    assert not daemon.sock.exists()  # removed on SIGTERM


def test_a_prompt_answered_by_the_daemon_imports_neither_click_nor_the_library(
        env, daemon, repo, short_dir):
    probe = short_dir / "modules.json"
    code = ("import atexit, json, sys\n"
            f"atexit.register(lambda: open({str(probe)!r}, 'w').write(json.dumps("
            "[m for m in ('click', 'asyncio', 'attrs', 'powercontext.core.models', "
            "'powercontext.runtime') if m in sys.modules])))\n"
            "from powercontext.entrypoints.cli.entry import main\nmain()\n")
    proc = subprocess.run([sys.executable, "-c", code, "--db", str(daemon.db), "hook",
                           "claude-code"], input=prompt(repo), capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0 and "additionalContext" in proc.stdout, proc.stderr
    assert json.loads(probe.read_text()) == []


@pytest.mark.slow
def test_a_stop_event_is_handled_in_process_while_the_daemon_runs(env, daemon, repo):
    stop = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "Stop",
            "last_assistant_message": "Ran make test: 12 passed."}
    before = len(journal(daemon.db))
    run_entry(env, daemon.db, "--no-extract", stdin=json.dumps(stop))
    assert len(journal(daemon.db)) > before  # the outcome Source was stored, once
    assert "fallback (_Fallback: not a UserPromptSubmit event)" in daemon.stop()


@pytest.mark.slow
@pytest.mark.parametrize("change", [
    {"POWERCONTEXT_ANALYZER": "v1"},        # another analyzer (here: a mismatch error)
    {"POWERCONTEXT_HOOK_CREATE": "1"},      # any other POWERCONTEXT_ variable
    {"HOME": "/nonexistent-home"},          # where ~ and the data directory point
])
def test_a_client_with_another_environment_is_answered_in_process(env, daemon, repo, change):
    client = {**env, **change}
    out = run_entry(client, daemon.db, stdin=prompt(repo))
    alone = run_entry({**client, wire.ENV_DISABLE: "0"}, daemon.db, stdin=prompt(repo))
    assert (unfenced(out.stdout), out.stderr) == (unfenced(alone.stdout), alone.stderr)
    err = daemon.stop()
    assert "fallback" in err and "powercontext hook daemon: ok" not in err, err


@pytest.mark.slow
def test_a_dead_daemons_socket_falls_back_and_a_new_daemon_replaces_it(env, daemon, repo):
    daemon.proc.kill()
    daemon.proc.wait(timeout=30)
    assert daemon.sock.exists()  # SIGKILL leaves it behind
    assert b"additionalContext" in run_entry(env, daemon.db, stdin=prompt(repo)).stdout
    again = Daemon(env, daemon.db)
    try:
        assert b"additionalContext" in run_entry(env, daemon.db, stdin=prompt(repo)).stdout
    finally:
        assert "powercontext hook daemon: ok" in again.stop()


def test_a_second_daemon_on_one_database_is_refused(env, daemon):
    proc = subprocess.run([*ENTRY, "--db", str(daemon.db), "hook", "daemon"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "already answers" in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.slow
def test_a_database_url_or_a_too_long_path_is_refused_with_one_line(env, short_dir):
    deep = short_dir / ("d" * 60) / ("e" * 40) / "memory.db"
    for db in ("sqlite:///tmp/x.db", str(deep)):
        proc = subprocess.run([*ENTRY, "--db", db, "hook", "daemon"], env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and "SQLite database file" in proc.stderr, proc.stderr


def _raw(sock: Path, data: bytes) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(str(sock))
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return json.loads(b"".join(chunks))


def _header(daemon, environ, **over) -> dict:
    h = {"protocol": wire.PROTOCOL, "build": wire.build_id(), "env": wire.env_digest(environ),
         "db": str(daemon.db), "embedding": None, "analyzer": None, "limit": 5,
         "mode": "auto", "topics": True}
    return {**h, **over}


def _request(daemon, environ, body: bytes, **over) -> bytes:
    header = _header(daemon, environ, **{"length": len(body), **over})
    return json.dumps(header).encode() + b"\n" + body


def test_hostile_requests_get_a_fallback_and_the_daemon_keeps_answering(env, daemon, repo):
    body = b'{"hook_event_name": "UserPromptSubmit", "prompt": "x", "cwd": "relative"}'
    for data in [b"", b"\x00\xff garbage", b"{" * 70000, b"[1, 2]\n",
                 json.dumps({"length": -1}).encode() + b"\n",
                 json.dumps({"length": 10**12}).encode() + b"\n",
                 _request(daemon, env, body, limit=0),  # refused options
                 _request(daemon, env, body),  # a relative cwd
                 _request(daemon, env, b"short", length=50)]:  # cut short
        assert _raw(daemon.sock, data)["status"] == "fallback", data[:60]
    assert b"additionalContext" in run_entry(env, daemon.db, stdin=prompt(repo)).stdout
    assert "powercontext hook daemon: ok" in daemon.stop()


def test_a_client_of_another_installation_stops_the_daemon(env, daemon, repo):
    data = json.dumps(_header(daemon, env, build="0:1:2", length=2)).encode() + b"\n{}"
    assert _raw(daemon.sock, data) == {"status": "fallback", "why": "another installation"}
    daemon.proc.wait(timeout=30)
    assert not daemon.sock.exists()
    assert b"additionalContext" in run_entry(env, daemon.db, stdin=prompt(repo)).stdout
    assert "the installation changed: stopping" in daemon.stop()


@pytest.mark.slow
def test_invalid_utf8_and_lone_surrogates_are_answered_as_in_process(env, daemon, repo):
    raw = (b'{"session_id": "s", "cwd": "' + str(repo).encode() + b'", "hook_event_name": '
           b'"UserPromptSubmit", "prompt": "run the test suite \\ud800 \xff before review"}')
    by_daemon = run_entry(env, daemon.db, stdin=raw).stdout
    alone = run_entry({**env, wire.ENV_DISABLE: "0"}, daemon.db, stdin=raw).stdout
    assert b"additionalContext" in by_daemon and unfenced(by_daemon) == unfenced(alone)
    assert "powercontext hook daemon: ok" in daemon.stop()
