"""The family-neutral storage base (adapters/storage) on a real SQLite database: the
bounded rerun of lock contention, one transaction per attempt, and the capability ports
the SQL backends keep declaring now that the rebuild is a collaborator of its own."""

from __future__ import annotations

import pytest

from powercontext.adapters.database import DatabaseMemoryBackend
from powercontext.adapters.oceanbase import OceanBaseMemoryBackend
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.adapters.storage import RetryableError, SourceJournal, StorageBackend
from powercontext.core.errors import BackendError, RevisionConflictError
from powercontext.ports import MemoryInventory, MemoryRebuild

from .conftest import run


class _Contention(Exception):
    """Stands for a driver's lock-wait timeout."""


def _contended(tmp_path):
    b = SQLiteMemoryBackend(str(tmp_path / "m.db"))
    b.retry_backoff = 0.0
    real = b._database_error
    b._database_error = lambda exc: (  # type: ignore[method-assign]
        RetryableError("lock contention") if isinstance(exc, _Contention) else real(exc))
    return b


def test_lock_contention_reruns_the_whole_transaction_until_it_passes(tmp_path):
    b = _contended(tmp_path)
    attempts: list[int] = []

    def flaky(fails: int) -> str:
        attempts.append(len(attempts) + 1)
        b._meta_set_sync(f"attempt_{len(attempts)}", "written")
        if len(attempts) <= fails:
            raise _Contention()
        return "done"

    try:
        assert run(b._run(b._in_tx, True, flaky, 2)) == "done"
        assert attempts == [1, 2, 3]
        written = [run(b._run(b._in_tx, False, b._meta_get_sync, f"attempt_{i}"))
                   for i in (1, 2, 3)]
        assert written == [None, None, "written"]  # each failed attempt rolled back
    finally:
        b.close_sync()


def test_contention_past_every_attempt_is_a_backend_error_never_a_conflict(tmp_path):
    b = _contended(tmp_path)
    attempts: list[int] = []

    def always() -> None:
        attempts.append(1)
        raise _Contention()

    try:
        with pytest.raises(BackendError) as info:
            run(b._run(b._in_tx, False, always))
        assert not isinstance(info.value, RevisionConflictError)
        assert f"persisted after {b.retry_attempts} attempts" in str(info.value)
        assert len(attempts) == b.retry_attempts == 4
    finally:
        b.close_sync()


def test_the_engine_may_end_what_holds_the_locks_between_attempts_only(tmp_path):
    b = _contended(tmp_path)
    events: list[str] = []
    b._contention_sync = lambda: events.append("contention")  # type: ignore[method-assign]

    def always() -> None:
        events.append("attempt")
        raise _Contention()

    try:
        with pytest.raises(BackendError):
            run(b._run(b._in_tx, True, always))
        assert events == ["attempt", "contention"] * 3 + ["attempt"]
    finally:
        b.close_sync()


def test_maintenance_marks_its_transactions_long_while_it_runs(tmp_path):
    b = SQLiteMemoryBackend(str(tmp_path / "m.db"))
    seen: list[bool] = []
    for part, name in ((b._rebuild, "_migrate_analyzer_sync"), (b._rehash, "_rehash_sync")):
        real = getattr(part, name)

        def spy(*args, _real=real):
            seen.append(b.long_transactions)
            return _real(*args)

        setattr(part, name, spy)
    try:
        assert b.long_transactions is False
        run(b.rebuild())
        run(b.rehash())
        assert seen == [True, True] and b.long_transactions is False
    finally:
        b.close_sync()


def test_the_sql_backends_build_on_the_storage_base_and_keep_their_capability_ports(tmp_path):
    for cls in (SQLiteMemoryBackend, OceanBaseMemoryBackend):
        assert issubclass(cls, DatabaseMemoryBackend)
        assert issubclass(cls, StorageBackend)
    b = SQLiteMemoryBackend(str(tmp_path / "m.db"))
    assert isinstance(b.source_journal, SourceJournal)  # the Source store, composed
    assert isinstance(b, MemoryRebuild) and isinstance(b, MemoryInventory)
    assert not (tmp_path / "m.db").exists()  # nothing opened by the checks
