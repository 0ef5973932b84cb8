"""The Supervisor's locking policy is a capability the Topic backend declares
(``ports.topic_supervision.SupervisorLockingPolicy``: ``lease`` or ``file-lock``), not a
guess from the database URL (it tested whether the URL said ``sqlite``, so a backend
of another scheme whose term lasts until the next start was driven with leases: its
``acquire_lease`` refused the lease length and the Supervisor stayed a candidate)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.supervisor_runs import PLUGIN, isolated_env, write_config

from powercontext.adapters.oceanbase.topic_backend import OceanBaseTopicBackend
from powercontext.adapters.sqlite.topic_backend import SQLiteTopicBackend
from powercontext.entrypoints.supervisor import ArtifactProcessingSupervisor, main
from powercontext.entrypoints.supervisor_leases import locking_policy
from powercontext.file_locks import supervisor_lock_path
from powercontext.plugins import hookimpl
from powercontext.plugins.loading import resolve
from powercontext.plugins.registry import Registry
from powercontext.ports.topic_supervision import SupervisorLockingPolicy
from powercontext.testing import InMemoryTopicBackend


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return isolated_env(tmp_path, monkeypatch)


def test_each_backend_declares_its_policy_without_opening(tmp_path: Path) -> None:
    sqlite = SQLiteTopicBackend(str(tmp_path / "m.db"))
    oceanbase = OceanBaseTopicBackend("oceanbase://root@127.0.0.1:1/nothing_here")
    for backend, policy in ((sqlite, "file-lock"), (oceanbase, "lease"),
                            (InMemoryTopicBackend(), "file-lock")):
        assert isinstance(backend, SupervisorLockingPolicy)
        assert backend.supervisor_locking == policy
        assert locking_policy(backend) == policy
    assert not (tmp_path / "m.db").exists()  # declared, never opened


def test_a_backend_that_declares_nothing_gets_leases() -> None:
    assert locking_policy(object()) == "lease"


class _LitePlugin:
    """A third-party Topic backend under the scheme ``lite``: SQLite underneath, so its
    term lasts until the next start (``file-lock``)."""

    @hookimpl
    def powercontext_register_topic_backends(self, register: Any) -> None:
        def factory(url: str, *, profile: Any = None, analyzer: Any = None) -> Any:
            return SQLiteTopicBackend(url.removeprefix("lite://"), profile=profile,
                                      analyzer=analyzer)

        register("lite", factory)


@pytest.mark.subprocess  # the Workers' forkserver
def test_a_file_lock_backend_of_another_scheme_takes_its_term_at_start(
        tmp_path: Path, env: dict[str, str]) -> None:
    config = write_config(tmp_path, tmp_path / "control")
    registry = Registry(plugins=[resolve(PLUGIN), _LitePlugin()])

    async def body() -> None:
        sup = ArtifactProcessingSupervisor(f"lite://{tmp_path / 'm.db'}", config,
                                           registry=registry, worker_plugins=[PLUGIN])
        await sup.start()
        try:
            assert sup.locking == "file-lock"
            assert sup.term is not None and sup.term.generation == 1
        finally:
            await sup.stop()

    asyncio.run(body())


@pytest.mark.subprocess
def test_a_sqlite_supervisor_holds_the_file_lock(tmp_path: Path, env: dict[str, str]
                                                 ) -> None:
    db = str(tmp_path / "m.db")
    config = write_config(tmp_path, tmp_path / "control")
    lock = supervisor_lock_path(db)
    assert lock is not None

    async def body() -> None:
        sup = ArtifactProcessingSupervisor(db, config, worker_plugins=[PLUGIN])
        await sup.start()
        try:
            assert sup.locking == "file-lock" and sup.term is not None
            assert lock.read_text().strip().isdigit()  # the holder's pid
        finally:
            await sup.stop()

    asyncio.run(body())


def test_the_background_runner_refuses_a_file_lock_backend(tmp_path: Path, capsys: Any
                                                           ) -> None:
    assert main(["--db", str(tmp_path / "m.db")]) == 2
    assert "SQLite supports only `powercontext serve --role all`" in capsys.readouterr().err
    assert not (tmp_path / "m.db").exists()
    assert main(["--db", "nowhere://x"]) == 2
    assert "no Topic Memory backend for URL scheme 'nowhere'" in capsys.readouterr().err


@pytest.mark.parametrize("make", [
    lambda tmp: SQLiteTopicBackend(str(tmp / "agree.db")),
    lambda tmp: OceanBaseTopicBackend("oceanbase://root@127.0.0.1:1/agree"),
], ids=["sqlite", "oceanbase"])
def test_the_supervisor_policy_agrees_with_the_engine_port(make, tmp_path):
    """The Topic backend's ``supervisor_locking`` and its engine's
    ``EngineCapabilities.locking`` name the same policy (one writer with a file lock, or
    expiring leases), read without opening the database."""
    from powercontext.ports.engine import EngineBacked, LockingPolicy

    backend = make(tmp_path)
    assert isinstance(backend, EngineBacked)
    expected = {LockingPolicy.SINGLE_WRITER: "file-lock", LockingPolicy.LEASES: "lease"}
    assert backend.supervisor_locking == expected[backend.engine.engine_capabilities.locking]
