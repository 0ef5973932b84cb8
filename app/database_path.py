"""Where a database lives on disk and whether that place can hold one: the file a SQLite
URL or bare path names, and the checks run before a backend opens it (the directory
exists or is the per-user data directory, the file is a SQLite database, both are
writable). Other URLs are left to their backend."""

from __future__ import annotations

import os
from pathlib import Path

from powercontext.core.errors import InvalidInputError
from powercontext.paths import data_dir
from powercontext.plugins.registry import url_scheme

__all__ = ["check_sqlite_path", "sqlite_path"]

_SQLITE_HEADER = b"SQLite format 3\x00"


def sqlite_path(url: str) -> Path | None:
    """The file a SQLite database URL or bare path names, or None (``:memory:``, another
    scheme)."""
    scheme = url_scheme(url)
    if scheme is None:
        return None if url == ":memory:" else Path(url).expanduser()
    if scheme != "sqlite":
        return None
    from powercontext.plugins.urls import sqlite_path_from_url

    path = sqlite_path_from_url(url)
    return None if path == ":memory:" else Path(path)


def check_sqlite_path(url: str) -> None:
    """Make sure a SQLite ``url`` (bare path or ``sqlite:///``) can hold a database.
    The per-user data directory (:func:`data_dir`) is created when the database is in
    it; any other missing directory is refused, never created (a mistyped ``--db`` would
    otherwise leave directories anywhere, even at ``/``). InvalidInputError (field
    ``db``) when the path is a directory, its directory is missing (outside the data
    directory), cannot be created or written, or an existing file is not a SQLite
    database or not writable. Other URLs are left to their backend."""
    path = sqlite_path(url)
    if path is None:
        return
    if path.is_dir():
        raise InvalidInputError("db", f"{path} is a directory; name a database file in it, "
                                      f"e.g. {path / 'memory.db'}")
    parent = path.parent
    if not parent.is_dir():
        existing = next(p for p in (parent, *parent.parents) if p.exists())
        if not existing.is_dir():  # mkdir -p would fail too: say what is in the way
            raise InvalidInputError("db", f"cannot create the directory {parent}: "
                                          f"{existing} is a file, not a directory")
        if parent.expanduser().absolute() != data_dir().expanduser().absolute():
            raise InvalidInputError(
                "db", f"the directory {parent} does not exist: create it first "
                f"(mkdir -p {parent}) or name a database in an existing directory")
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInputError(
                "db", f"cannot create the directory {parent}: {exc.strerror or exc}") from exc
    if path.exists():
        try:
            with open(path, "rb") as fh:
                header = fh.read(len(_SQLITE_HEADER))
        except OSError as exc:
            raise InvalidInputError("db", f"cannot read {path}: {exc.strerror or exc}") from exc
        if header and header != _SQLITE_HEADER:
            raise InvalidInputError("db", f"{path} is not a SQLite database")
        if not os.access(path, os.W_OK):
            raise InvalidInputError("db", f"{path} is not writable")
        if not os.access(path.parent, os.W_OK | os.X_OK):  # WAL writes files beside it
            raise InvalidInputError("db", f"{path.parent} is not writable: SQLite keeps "
                                          f"{path.name}-wal and {path.name}-shm there")
    elif not os.access(path.parent, os.W_OK | os.X_OK):
        raise InvalidInputError("db", f"cannot create {path}: {path.parent} is not writable")
    else:  # a new database: inside a Git checkout it stays out of `git status`
        from powercontext.git_exclude import exclude_from_git

        exclude_from_git(path)
