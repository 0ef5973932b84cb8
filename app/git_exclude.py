"""A database kept inside a Git checkout stays out of ``git status``: when a SQLite
database is created in a work tree (the README's ``POWERCONTEXT_DB=$PWD/.memory.db``),
its name and every file beside it that starts with that name (``-wal``, ``-shm``, the
runtime manifest, the hook socket, the Supervisor lock) is added to the repository's
own ``info/exclude``: the ignore list Git keeps inside ``.git``, never committed, so the
checkout gains no file and no ``.gitignore`` change to review.

Standard library only; nothing runs at import time.
"""

from __future__ import annotations

import logging
from pathlib import Path

__all__ = ["exclude_from_git"]

log = logging.getLogger("powercontext")

_HEADER = "# powercontext: the database and its runtime files (added when it was created)"


def _git_dir(top: Path) -> Path | None:
    """The directory holding ``info/exclude`` for the work tree at ``top``: ``.git``
    itself, or for a linked worktree (``.git`` is a file) the common directory."""
    dot_git = top / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        text = dot_git.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    git_dir = (top / text.partition(":")[2].strip()).resolve()
    common = git_dir / "commondir"
    if common.is_file():
        try:
            return (git_dir / common.read_text("utf-8").strip()).resolve()
        except (OSError, UnicodeDecodeError):
            return None
    return git_dir


def exclude_from_git(db: Path) -> Path | None:
    """Add ``/<db relative to the work tree>*`` to the ``info/exclude`` of the Git work
    tree holding ``db`` (when it is in one, and the pattern is not there yet). Returns
    the exclude file written, else None. Never raises: a checkout that cannot be
    written keeps working, with a log line."""
    try:
        path = db.expanduser().absolute()
        top = next((p for p in path.parents if (p / ".git").exists()), None)
        if top is None:
            return None
        git_dir = _git_dir(top)
        if git_dir is None:
            return None
        relative = path.relative_to(top).as_posix()
        if relative.startswith(".git/"):
            return None
        pattern = "/" + "".join(f"[{c}]" if c in "*?[]\\!#" else c for c in relative) + "*"
        exclude = git_dir / "info" / "exclude"
        existing = exclude.read_text("utf-8") if exclude.is_file() else ""
        if pattern in existing.splitlines():
            return None
        exclude.parent.mkdir(parents=True, exist_ok=True)
        sep = "" if not existing or existing.endswith("\n") else "\n"
        with open(exclude, "a", encoding="utf-8") as fh:
            fh.write(f"{sep}{_HEADER}\n{pattern}\n")
        return exclude
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        log.warning("could not add %s to the repository's info/exclude: %s", db, exc)
        return None
