"""A Supervisor that cannot start says why and holds nothing (Topic Memory RFC, "Process
roles"; TOPIC-MEMORY.md, "SQLite and other processes"): another Supervisor's lock on
the SQLite file (in this process or from ``powercontext serve``: it exits naming the
pid), and automatic scheduling configured without a usable
generation provider."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest
from support.supervisor_runs import isolated_env, write_config

from powercontext.configuration import load_config
from powercontext.core.errors import SupervisorUnavailableError, TopicProcessingUnavailableError
from powercontext.entrypoints.supervisor import ArtifactProcessingSupervisor
from powercontext.file_locks import acquire_supervisor_lock


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return isolated_env(tmp_path, monkeypatch)


def test_a_supervisor_refuses_to_start_while_the_file_is_locked(tmp_path, env):
    db = str(tmp_path / "m.db")
    config = write_config(tmp_path, tmp_path / "control")
    held = acquire_supervisor_lock(db)
    try:
        sup = ArtifactProcessingSupervisor(db, config)
        with pytest.raises(SupervisorUnavailableError, match=f"pid {os.getpid()}"):
            asyncio.run(sup.start())
        assert sup.term is None
    finally:
        held.release()


@pytest.mark.subprocess
def test_serve_exits_naming_the_other_supervisor(tmp_path, env):
    from support.cli import cli_argv

    db = str(tmp_path / "m.db")
    write_config(tmp_path, tmp_path / "control")
    held = acquire_supervisor_lock(db)
    try:
        done = subprocess.run(
            [*cli_argv(), "serve", "--db", db, "--config", str(tmp_path / "config.toml"),
             "--role", "all", "--port", "0"], capture_output=True, text=True, timeout=120)
    finally:
        held.release()
    assert done.returncode != 0
    assert "another Supervisor" in done.stderr and f"pid {os.getpid()}" in done.stderr


def test_automatic_scheduling_without_a_provider_refuses_start_and_frees_the_lock(
        tmp_path, env):
    db = str(tmp_path / "m.db")
    (tmp_path / "c.toml").write_text(
        "[runtime]\ntopic_memory_auto_interval_seconds = 60\n", encoding="utf-8")
    config = load_config(tmp_path / "c.toml", env=env)
    with pytest.raises(TopicProcessingUnavailableError, match="automatic"):
        asyncio.run(ArtifactProcessingSupervisor(db, config).start())
    again = acquire_supervisor_lock(db)  # released on the failed start
    assert again is not None
    again.release()
