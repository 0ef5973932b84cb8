"""Which files a ``file-lock`` database's Supervisor and ``topic process`` lock comes from
the Topic backend's declaration, not from whether the URL says ``sqlite``: a third-party
backend of another scheme that declares ``file-lock`` gets lock files (under the data
directory keyed by the URL, or named from the base it gives), so a second Supervisor on
its database refuses to start and two ``topic process`` runs of one Scope take turns.
Before, the lock paths existed only for SQLite URLs and two such Supervisors ran at
once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from powercontext.core.errors import SupervisorUnavailableError
from powercontext.entrypoints.supervisor_leases import Leadership
from powercontext.file_locks import (
    acquire_supervisor_lock,
    lock_file_base,
    supervisor_lock_path,
    topic_processing_lock,
)
from powercontext.plugins import hookimpl
from powercontext.plugins.registry import Registry
from powercontext.ports.topic_supervision import LockFileBase


class _LedgerBackend:
    """A third party's Topic backend over a network database whose term lasts until the
    next start: it declares ``file-lock`` and, when built with ``base``, names where its
    lock files live."""

    supervisor_locking = "file-lock"

    def __init__(self, url: str) -> None:
        self.url = url

    async def close(self) -> None:
        return None


class _NamedLedgerBackend(_LedgerBackend):
    def __init__(self, url: str, base: str | None) -> None:
        super().__init__(url)
        self._base = base

    @property
    def lock_file_base(self) -> str | None:
        return self._base


class _LedgerPlugin:
    """Registers the ``ledger`` scheme as a plugin of a third party would."""

    def __init__(self, base: Any = ...) -> None:
        self.base = base

    @hookimpl
    def powercontext_register_topic_backends(self, register: Any) -> None:
        def factory(url: str, *, profile: Any = None, analyzer: Any = None) -> Any:
            if self.base is ...:
                return _LedgerBackend(url)
            return _NamedLedgerBackend(url, self.base)

        register("ledger", factory)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _leader(url: str, registry: Registry) -> Leadership:
    leadership = Leadership(url, 30.0, lambda: 0.0)
    leadership.choose(registry.topic_backend_for_url(url))
    return leadership


def test_a_second_supervisor_on_a_third_party_file_lock_database_is_refused(home: Path):
    url = "ledger://alice:s3cret@db.example:7000/topics"
    registry = Registry(plugins=[_LedgerPlugin()])
    first = _leader(url, registry)
    try:
        assert first.locking == "file-lock"
        lock = supervisor_lock_path(url, registry.topic_backend_for_url(url))
        assert lock is not None and lock.parent == home / "locks"
        assert lock.read_text().strip() == str(os.getpid())
        assert "s3cret" not in str(lock) and "alice" not in str(lock)
        with pytest.raises(SupervisorUnavailableError,
                           match=rf"pid {os.getpid()}.* one Supervisor per database"):
            _leader(url, registry)
        # another user (or password) of the same database shares the lock
        with pytest.raises(SupervisorUnavailableError):
            _leader("ledger://bob@db.example:7000/topics", registry)
        # another database does not
        _leader("ledger://db.example:7000/other", registry).release_lock()
    finally:
        first.release_lock()
    _leader(url, registry).release_lock()  # free again once released


def test_the_lock_file_a_backend_names_is_the_one_taken(home: Path, tmp_path: Path):
    named = tmp_path / "shared" / "ledger.lock"
    registry = Registry(plugins=[_LedgerPlugin(str(tmp_path / "shared" / "ledger"))])
    backend = registry.topic_backend_for_url("ledger://db.example/topics")
    assert isinstance(backend, LockFileBase)
    assert supervisor_lock_path("ledger://db.example/topics", backend) == \
        tmp_path / "shared" / "ledger-supervisor.lock"
    named = tmp_path / "shared" / "ledger-supervisor.lock"
    first = _leader("ledger://db.example/topics", registry)
    try:
        assert named.read_text().strip() == str(os.getpid())
        assert not (home / "locks").exists()
        with pytest.raises(SupervisorUnavailableError):
            _leader("ledger://db.example/topics", registry)
    finally:
        first.release_lock()


def test_a_backend_may_say_its_database_needs_no_lock(home: Path):
    registry = Registry(plugins=[_LedgerPlugin(None)])
    url = "ledger://in-process"
    assert acquire_supervisor_lock(url, registry.topic_backend_for_url(url)) is None
    _leader(url, registry)
    _leader(url, registry)  # private to each process: two may run
    assert not (home / "locks").exists()


def test_sqlite_keeps_its_lock_beside_the_database_file(home: Path, tmp_path: Path):
    db = tmp_path / "m.db"
    assert supervisor_lock_path(str(db)) == tmp_path / "m.db-supervisor.lock"
    assert supervisor_lock_path(f"sqlite://{db}") == tmp_path / "m.db-supervisor.lock"
    assert supervisor_lock_path("sqlite://:memory:") is None
    assert supervisor_lock_path(":memory:") is None


def test_topic_process_locks_a_file_of_a_third_party_file_lock_database(home: Path):
    """The per-Scope lock of ``topic process`` on a ``file-lock`` backend of another
    scheme is taken on ``<base>-topic.lock`` (a second process waits on it: fcntl
    record locks, as on SQLite), beside the Supervisor's lock of the same base."""
    url = "ledger://db.example:7000/topics"
    backend = Registry(plugins=[_LedgerPlugin()]).topic_backend_for_url(url)
    base = lock_file_base(url, backend)
    assert base is not None and base.parent == home / "locks"
    with topic_processing_lock(url, "repo:/w", backend=backend):
        assert base.with_name(base.name + "-topic.lock").exists()
    assert supervisor_lock_path(url, backend) == base.with_name(base.name + "-supervisor.lock")


def test_topic_process_takes_no_lock_on_a_lease_backend(home: Path, tmp_path: Path):
    class _LeaseBackend(_LedgerBackend):
        supervisor_locking = "lease"

    with topic_processing_lock("ledger://db.example/topics", "repo:/w",
                               backend=_LeaseBackend("ledger://db.example/topics")):
        assert not (home / "locks").exists()
    with topic_processing_lock(str(tmp_path / "m.db"), "repo:/w"):
        assert (tmp_path / "m.db-topic.lock").exists()
