"""Where powercontext keeps its files by default: the per-user data directory and the
default database. Standard library only, so the prompt hook's client
(:mod:`powercontext.entrypoints.cli.hook_daemon`) can find the database without importing
the runtime; :mod:`powercontext.runtime` re-exports these names."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENV_DB", "ENV_HOME", "data_dir", "db_url", "default_db_url"]

ENV_DB = "POWERCONTEXT_DB"
ENV_HOME = "POWERCONTEXT_HOME"


def data_dir() -> Path:
    """The per-user data directory (``$POWERCONTEXT_HOME`` or the platform's user data
    directory for "powercontext")."""
    home = os.environ.get(ENV_HOME)
    if home:
        return Path(home).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("powercontext", appauthor=False))


def default_db_url() -> str:
    """``$POWERCONTEXT_DB``, else ``<data dir>/memory.db`` (SQLite)."""
    return os.environ.get(ENV_DB) or str(data_dir() / "memory.db")


def db_url(db: str | os.PathLike[str] | None) -> str:
    """``db`` (a path or URL) as text; None: :func:`default_db_url`."""
    return str(db) if db is not None else default_db_url()
