"""The vector channel's choice reaches a user: ``--vector-index`` (before the command)
and ``$POWERCONTEXT_VECTOR_INDEX`` on the CLI, ``open_service(vector_index=...)`` in
Python (docs/configuration.md, docs/search.md). A name outside auto, ivf, exact, ann is
bad input (exit 2; InvalidInputError naming ``vector_index``), checked before any I/O."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.cli import cli_argv

from powercontext.core.errors import InvalidInputError
from powercontext.runtime import open_service

pytestmark = pytest.mark.subprocess


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "POWERCONTEXT_HOME": str(tmp_path / "home"), **env}
    environ.pop("POWERCONTEXT_DB", None)
    return subprocess.run([*cli_argv(), "--db", str(tmp_path / "m.db"), "--json", *args],
                          capture_output=True, text=True, env=environ, timeout=120)


def test_the_exact_scan_is_a_cli_option_and_an_environment_variable(tmp_path: Path) -> None:
    for text in ("kiwi orchards need frost", "the plum harvest starts in May"):
        made = _run(tmp_path, "--embedding", "deterministic", "memory", "remember",
                    "--key", "demo", "--text", text)
        assert made.returncode == 0, made.stdout + made.stderr
    answers = []
    for args, env in ((("--vector-index", "exact"), {}), ((), {}),
                      ((), {"POWERCONTEXT_VECTOR_INDEX": "exact"})):
        found = _run(tmp_path, *args, "memory", "search", "kiwi frost", "-m", "key:demo",
                     "--mode", "vector", **env)
        assert found.returncode == 0, found.stderr
        answers.append([h["entry_id"] for h in json.loads(found.stdout)["hits"]])
    assert answers[0] and answers[0] == answers[1] == answers[2]
    bad = _run(tmp_path, "--vector-index", "fast", "memory", "search", "kiwi", "-m", "key:demo")
    assert bad.returncode == 2 and "fast" in bad.stdout + bad.stderr
    env_bad = _run(tmp_path, "memory", "search", "kiwi", "-m", "key:demo",
                   POWERCONTEXT_VECTOR_INDEX="fast")
    assert env_bad.returncode == 2


def test_open_service_refuses_an_unknown_choice(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInputError) as raised:
        open_service(tmp_path / "x.db", vector_index="fast")
    assert raised.value.field == "vector_index"
    monkeypatch.setenv("POWERCONTEXT_VECTOR_INDEX", "fast")
    with pytest.raises(InvalidInputError):
        open_service(tmp_path / "y.db")
    monkeypatch.setenv("POWERCONTEXT_VECTOR_INDEX", "exact")
    svc = open_service(tmp_path / "z.db")
    assert svc.backend.projection.vector_index == "exact"  # type: ignore[attr-defined]


def test_an_unknown_choice_in_the_environment_never_fails_a_hook(tmp_path: Path) -> None:
    # POWERCONTEXT_VECTOR_INDEX=bogus made every hook exit 2 (a usage error while the
    # command line was parsed), which blocks the prompt of the agent that ran it
    payload = json.dumps({"session_id": "s1", "cwd": str(tmp_path), "prompt": "kiwi frost",
                          "hook_event_name": "UserPromptSubmit",
                          "transcript_path": str(tmp_path / "t.jsonl")})
    environ = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"),
                   POWERCONTEXT_VECTOR_INDEX="bogus")
    for args in (("hook", "claude-code"), ("mcp", "--help")):
        done = subprocess.run([*cli_argv(), "--db", str(tmp_path / "m.db"), *args],
                              input=payload, capture_output=True, text=True, env=environ,
                              timeout=120)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
