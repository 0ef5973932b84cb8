"""The file locks beside a SQLite database that keep processes apart (Topic Memory RFC,
"In-memory queue and Workers", "Process roles"; TOPIC-MEMORY.md, "SQLite and other
processes"): the per-Scope single-flight lock of ``topic process`` and the whole-file
lock a ``file-lock`` Supervisor holds for its life (SQLite, and any backend that declares
that policy: :mod:`powercontext.ports.topic_supervision`). Lease databases need none."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from powercontext.core.errors import SupervisorUnavailableError
from powercontext.database_path import sqlite_path
from powercontext.paths import data_dir, db_url
from powercontext.plugins.urls import url_scheme
from powercontext.ports.topic_supervision import FILE_LOCK, LockFileBase, SupervisorLockingPolicy

__all__ = ["LOCKS_DIR", "SupervisorLock", "acquire_supervisor_lock", "lock_file_base",
           "supervisor_lock_path", "topic_processing_lock"]

#: Byte ranges of the processing lock file: one per Scope (a hash collision only
#: serialises two Scopes, never lets two processes work on one).
_SCOPE_LOCK_RANGE = 1 << 31


@contextlib.contextmanager
def topic_processing_lock(db: str | os.PathLike[str] | None, scope_id: str, *,
                          backend: object = None, on_wait: Any = None) -> Iterator[None]:
    """Hold the per-Scope single-flight lock of ``topic process`` on a ``file-lock``
    database
    (Topic Memory RFC, "In-memory queue and Workers": at most one Worker per (binding,
    Scope); TOPIC-MEMORY.md, "SQLite and other processes"). Two processes working on
    one Scope at once would each admit an attempt of the same Window, and the durable
    allowance counts every admitted attempt: racing processes could spend the Window's
    three attempts and leave a terminal frontier although no provider failed. So a
    second process WAITS here (``on_wait()`` is called once, before it blocks) and then
    finds the Scope covered. An advisory ``fcntl`` lock on one byte (chosen by a hash
    of the Scope id) of ``<base>-topic.lock`` (:func:`lock_file_base`: beside a SQLite
    database file), released when the block ends or the process dies. No lock for a
    ``backend`` that does not declare ``file-lock`` (OceanBase: fenced by the
    Supervisor's lease, a later part) or a database private to this process
    (``:memory:``); without ``backend``, only a SQLite file is locked."""
    base = lock_file_base(db, backend) if _file_locked(db, backend) else None
    if base is None:
        yield
        return
    offset = int.from_bytes(hashlib.sha256(scope_id.encode("utf-8")).digest()[:8],
                            "big") % _SCOPE_LOCK_RANGE
    base.parent.mkdir(parents=True, exist_ok=True)
    with open(base.with_name(base.name + "-topic.lock"), "a+b") as fh:
        try:
            fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
        except OSError:
            if on_wait is not None:
                on_wait()
            fcntl.lockf(fh, fcntl.LOCK_EX, 1, offset)
        try:
            yield
        finally:
            fcntl.lockf(fh, fcntl.LOCK_UN, 1, offset)


class SupervisorLock:
    """The whole-file lock a SQLite Supervisor holds for its life (Topic Memory RFC,
    "Process roles": SQLite supports one single-process ``all`` Supervisor;
    TOPIC-MEMORY.md, "SQLite and other processes"): ``fcntl.flock`` LOCK_EX on
    ``<database>-supervisor.lock``, the holder's pid written inside. ``flock`` is held
    by the open file, so a second Supervisor in the same process is refused too. The
    kernel releases it when the process dies. :meth:`release` is idempotent."""

    def __init__(self, path: Path, fh: Any) -> None:
        self.path = path
        self._fh = fh

    def release(self) -> None:
        fh, self._fh = self._fh, None
        if fh is None:
            return
        try:
            fcntl.flock(fh, fcntl.LOCK_UN)
        finally:
            fh.close()

    @property
    def held(self) -> bool:
        return self._fh is not None


#: The folder under the data directory of the lock files of databases that are not files.
LOCKS_DIR = "locks"


def lock_file_base(db: str | os.PathLike[str] | None, backend: object = None
                   ) -> Path | None:
    """The path the file locks of ``db`` (default :func:`default_db_url`) are named from,
    ``<base>-supervisor.lock`` and ``<base>-topic.lock``, or None when the database
    needs none, in this order:

    1. the base ``backend`` names (:class:`~powercontext.ports.topic_supervision.
       LockFileBase`; None there: none);
    2. for a SQLite URL or bare path, the database file (``:memory:``: none);
    3. any other database (a third-party ``file-lock`` backend that names no base):
       ``<data dir>/locks/<hash>``, the hash being SHA-256 of the URL without its user
       and password (every user of one database shares its locks; no credential
       reaches a file name)."""
    url = db_url(db)
    if isinstance(backend, LockFileBase):
        named = backend.lock_file_base
        return None if named is None else Path(named)
    if _names_sqlite(url):
        return sqlite_path(url)
    key = hashlib.sha256(_without_credentials(url).encode("utf-8")).hexdigest()[:32]
    return data_dir() / LOCKS_DIR / key


def supervisor_lock_path(db: str | os.PathLike[str] | None, backend: object = None
                         ) -> Path | None:
    """The file a ``file-lock`` Supervisor on ``db`` locks: ``<base>-supervisor.lock``
    of :func:`lock_file_base` (``<database>-supervisor.lock`` beside a SQLite file), or
    None when the database needs none."""
    base = lock_file_base(db, backend)
    return None if base is None else base.with_name(base.name + "-supervisor.lock")


def _file_locked(db: str | os.PathLike[str] | None, backend: object) -> bool:
    if backend is None:
        return _names_sqlite(db_url(db))
    return (isinstance(backend, SupervisorLockingPolicy)
            and backend.supervisor_locking == FILE_LOCK)


def _names_sqlite(url: str) -> bool:
    return url_scheme(url) in (None, "sqlite")


def _without_credentials(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=host))


def acquire_supervisor_lock(db: str | os.PathLike[str] | None, backend: object = None
                            ) -> SupervisorLock | None:
    """Take the Supervisor lock of ``db`` (the file :func:`supervisor_lock_path` names
    for ``db`` and its ``backend``) without waiting (see :class:`SupervisorLock`); None
    for a database that needs none (``:memory:``; a lease database never asks).
    SupervisorUnavailableError naming the holder's pid when another Supervisor holds
    it."""
    lock = supervisor_lock_path(db, backend)
    if lock is None:
        return None
    lock.parent.mkdir(parents=True, exist_ok=True)
    fh = open(lock, "a+")  # noqa: SIM115 -- held for the Supervisor's life
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.seek(0)
        holder = fh.read(32).strip() or "unknown"
        fh.close()
        if _names_sqlite(db_url(db)):
            why = (f"this SQLite database (lock {lock}); SQLite supports one single-process "
                   "Supervisor: stop it first, or use OceanBase for several")
        else:
            why = (f"this database (lock {lock}); its backend supports one Supervisor per "
                   "database: stop it first")
        raise SupervisorUnavailableError(
            f"another Supervisor (pid {holder}) already runs on {why}") from None
    fh.seek(0)
    fh.truncate()
    fh.write(str(os.getpid()))
    fh.flush()
    return SupervisorLock(lock, fh)
