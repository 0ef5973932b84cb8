"""The hook daemon's client reads the command line without click
(:func:`powercontext.entrypoints.cli.hook_daemon.parse_argv`): whatever it accepts, click
accepts with the same values, so a prompt the daemon answers is the one the command
line asked for (issue 14)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.entrypoints.cli import hook as hook_mod
from powercontext.entrypoints.cli import hook_daemon as wire
from powercontext.entrypoints.cli.main import cli

_GLOBAL_TOKENS = ["--db", "/tmp/m.db", "--db=/tmp/x.db", "--embedding", "local",
                  "--analyzer=v1", "--json", "-v", "x"]
_HOOK_TOKENS = ["--limit", "-n", "5", "1", "50", "0", "51", "07", "٣", "--limit=3", "-n3",
                "--mode", "fts", "hybrid", "bogus", "--mode=vector", "--topics", "--no-topics",
                "--extract", "--no-extract", "--create-memory", "--create-memory=1", "--help",
                "extra"]


def _click_values(argv: list[str]) -> dict:
    """What click makes of ``argv`` (a UsageError when it refuses it)."""
    top = cli.make_context("powercontext", list(argv))
    rest = [*getattr(top, "_protected_args", []), *top.args]  # click 8.2: the subcommand
    assert rest[:2] == ["hook", "claude-code"]
    sub = hook_mod.claude_code.make_context("claude-code", rest[2:], parent=top)
    return {"db": top.params["db"], "embedding": top.params["embedding"],
            "analyzer": top.params["analyzer"], "limit": sub.params["limit"],
            "mode": sub.params["mode"], "topics": sub.params["topics"]}


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for name in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "POWERCONTEXT_ANALYZER",
                 "POWERCONTEXT_HOOK_CREATE"):
        monkeypatch.delenv(name, raising=False)


def _option(names: list[str], values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    """One option with its value, as ``NAME VALUE`` or ``NAME=VALUE``."""
    return st.tuples(st.sampled_from(names), values, st.booleans()).map(
        lambda t: [f"{t[0]}={t[1]}"] if t[2] else [t[0], t[1]])


_WORDS = st.sampled_from(["/tmp/m.db", "local", "v1", "x y", "-"])
_GLOBAL = st.one_of(_option(["--db", "--embedding", "--analyzer"], _WORDS),
                    st.sampled_from(_GLOBAL_TOKENS).map(lambda t: [t]))
_HOOK = st.one_of(
    _option(["--limit", "-n"], st.integers(-2, 60).map(str)),
    _option(["--mode"], st.sampled_from(["auto", "fts", "vector", "hybrid", "bogus"])),
    st.sampled_from(["--topics", "--no-topics", "--extract", "--no-extract",
                     "--create-memory"]).map(lambda t: [t]),
    st.sampled_from(_HOOK_TOKENS).map(lambda t: [t]))


@given(st.lists(_GLOBAL, max_size=3), st.lists(_HOOK, max_size=4))
def test_what_the_client_accepts_click_accepts_with_the_same_values(before, after):
    argv = [*(t for o in before for t in o), "hook", "claude-code", *(t for o in after for t in o)]
    opts = wire.parse_argv(argv)
    if opts is not None:
        assert _click_values(argv) == opts


@pytest.mark.parametrize("argv, expected", [
    (["hook", "claude-code"], {"db": None, "limit": 5, "mode": "auto", "topics": True}),
    (["--db", "/a.db", "hook", "claude-code", "-n", "2", "--mode=fts", "--no-topics"],
     {"db": "/a.db", "limit": 2, "mode": "fts", "topics": False}),
    (["--db=/a.db", "hook", "claude-code", "--no-extract", "--create-memory"],
     {"db": "/a.db", "limit": 5, "mode": "auto", "topics": True}),
])
def test_the_command_lines_agents_run_are_forwarded(argv, expected):
    opts = wire.parse_argv(argv)
    assert opts is not None and {k: opts[k] for k in expected} == expected


@pytest.mark.parametrize("argv", [
    [], ["hook", "codex"], ["hook", "claude-code", "--help"], ["--json", "hook", "claude-code"],
    ["hook", "daemon"], ["--db"], ["hook", "claude-code", "--limit"],
    ["hook", "claude-code", "--mode", "bogus"], ["hook", "claude-code", "-n", "0"],
    ["memory", "search", "x"],
])
def test_other_command_lines_run_in_process(argv):
    assert wire.parse_argv(argv) is None


@pytest.mark.parametrize("db", ["sqlite:///tmp/m.db", "oceanbase://u:p@h:1/d", ":memory:",
                                "/" + "d" * 120 + "/memory.db"])
def test_only_a_sqlite_file_with_a_short_enough_path_has_a_socket(db):
    assert wire.socket_path(db) is None


def test_the_socket_sits_beside_the_real_path_of_the_database(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    expected = f"{(tmp_path / 'real').resolve()}/m.db-hook.sock"
    assert wire.socket_path(str(tmp_path / "link" / "m.db")) == expected


def test_the_environment_digest_covers_what_the_hook_reads_and_nothing_else():
    base = {"POWERCONTEXT_HOME": "/h", "HOME": "/root", "PATH": "/bin"}
    digest = wire.env_digest(base)
    assert wire.env_digest({**base, "PATH": "/usr/bin", "TERM": "x"}) == digest
    assert wire.env_digest({**base, wire.ENV_DISABLE: "1"}) == digest
    for change in ({"POWERCONTEXT_HOME": "/g"}, {"OPENAI_API_KEY": "k"}, {"HOME": "/"},
                   {"XDG_DATA_HOME": "/d"}):
        assert wire.env_digest({**base, **change}) != digest


def test_the_daemons_registry_builds_each_embedding_model_once():
    from powercontext.entrypoints.cli.hook_daemon_server import _KeptModels
    from powercontext.plugins.registry import Registry

    kept = _KeptModels(Registry())
    first = kept.embedding_model("deterministic")
    assert kept.embedding_model("deterministic") is first
    assert kept.embedding_model("deterministic", dimension=8) is not first
    assert set(kept.embedding_model_factories()) == set(Registry().embedding_model_factories())


def test_the_reply_to_another_installation_is_sent_before_the_daemon_stops(monkeypatch):
    """A daemon stopping for a changed installation replied first (the process may exit
    as soon as it stops: the reply was once lost that way)."""
    import json
    import socket
    import threading

    from powercontext.entrypoints.cli.hook_daemon_server import HookDaemon

    daemon = HookDaemon(lambda: None, "/tmp/pchd-unit/m.db", None, None)
    ours, theirs = socket.socketpair()
    received: list[bytes] = []
    stopped = threading.Event()

    def stop() -> None:
        theirs.setblocking(False)
        try:
            received.append(theirs.recv(65536))
        except BlockingIOError:
            received.append(b"")
        stopped.set()

    class AtOnce:  # the stopping thread runs when started, so the order is fixed
        def __init__(self, target, daemon=None):
            self.target = target

        def start(self):
            self.target()

    from powercontext.entrypoints.cli import hook_daemon_server

    monkeypatch.setattr(hook_daemon_server.threading, "Thread", AtOnce)
    daemon.stop = stop  # type: ignore[method-assign]
    theirs.sendall(json.dumps({"build": "0:1:2", "length": 0}).encode() + b"\n")
    theirs.shutdown(socket.SHUT_WR)  # as the client does
    daemon.handle(ours)
    assert stopped.wait(10)
    assert json.loads(received[0]) == {"status": "fallback", "why": "another installation"}
    ours.close()
    theirs.close()
