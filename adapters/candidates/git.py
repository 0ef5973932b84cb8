"""Git change Sources through the ``git`` CLI (Memory RFC, "Source changes and
incremental evidence": the runtime reuses Git; Memory Core never diffs).

A change Source holds the base commit, head commit, changed paths and the patch,
bounded in size; it is immutable and content-addressed (``src_git_<hash>``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from powercontext.adapters.secret_scanner import redact_fields
from powercontext.core import canonical
from powercontext.core.errors import PowerContextError
from powercontext.core.models import Source

__all__ = ["MAX_PATCH_BYTES", "GitError", "file_at", "git_change_source", "head_commit",
           "is_link_at", "resolve_commit"]

MAX_PATCH_BYTES = 256 * 1024


class GitError(PowerContextError, ValueError):
    """``git`` failed: not a repository, unknown commit, or git is missing."""


def _git(repo: Path, *args: str) -> bytes:
    env = dict(os.environ, LC_ALL="C", GIT_TERMINAL_PROMPT="0")
    try:
        proc = subprocess.run(["git", "-C", str(repo), "-c", "core.quotepath=off", *args],
                              capture_output=True, env=env, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]} failed: {exc}") from exc
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])} in {repo}: "
                       f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout


def resolve_commit(repo: Path, rev: str) -> str:
    """The full commit id ``rev`` names in ``repo``. GitError when it names none."""
    return _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").decode().strip()


def head_commit(repo: Path) -> str | None:
    """The HEAD commit id, or None when ``repo`` is not a Git work tree or has no commit."""
    try:
        return resolve_commit(repo, "HEAD")
    except GitError:
        return None


def file_at(repo: Path, commit: str, path: str) -> bytes | None:
    """The bytes of ``path`` at ``commit``, or None when it does not exist there."""
    try:
        return _git(repo, "show", f"{commit}:{path}")
    except GitError:
        return None


def is_link_at(repo: Path, commit: str, path: str) -> bool:
    """True when ``path`` at ``commit`` is a symbolic link (tree mode 120000): its blob is
    the link's target, not a file's content."""
    try:
        out = _git(repo, "ls-tree", commit, "--", path)
    except GitError:
        return False
    return out.startswith(b"120000 ")


def git_change_source(repo: Path, base: str, head: str = "HEAD", *,
                      max_patch_bytes: int = MAX_PATCH_BYTES,
                      uri_root: Path | None = None) -> Source | None:
    """The ``git_change`` Source of ``base..head`` in ``repo``, or None when both name
    the same commit.

    Metadata: ``repo`` (absolute path), ``base`` and ``head`` (full commit ids),
    ``paths`` (changed paths, newline-separated, sorted), ``truncated`` (``"true"`` when
    the patch was cut at ``max_patch_bytes`` on a line boundary). Content: the unified
    patch (``git diff --no-color --no-ext-diff -M``; binary files as "Binary files
    differ"), every secret in it redacted (``[REDACTED:<rule>]``). ``uri`` is the
    repository's ``file:`` uri; ``uri_root`` (default ``repo``) is the repository named
    there (a linked worktree names its repository's main checkout). GitError for an
    unknown commit.
    """
    repo = repo.resolve()
    named = (uri_root or repo).resolve()
    base_id, head_id = resolve_commit(repo, base), resolve_commit(repo, head)
    if base_id == head_id:
        return None
    names = _git(repo, "diff", "--name-only", "-z", "-M", base_id, head_id)
    paths = sorted({p.decode("utf-8", "replace") for p in names.split(b"\0") if p})
    raw = _git(repo, "diff", "--no-color", "--no-ext-diff", "-M", base_id, head_id)
    truncated = len(raw) > max_patch_bytes
    if truncated:
        raw = raw[:max_patch_bytes].rsplit(b"\n", 1)[0] + b"\n"
    patch = raw.decode("utf-8", "replace")
    meta = {"repo": str(named), "base": base_id, "head": head_id, "paths": "\n".join(paths),
            "truncated": "true" if truncated else "false"}
    uri = named.as_uri()
    patch, _, meta = redact_fields(patch, None, meta)  # Sources are append-only
    digest = canonical.source_content_hash("git_change", patch, uri, tuple(sorted(meta.items())))
    return canonical.make_source(f"src_git_{digest[:40]}", "git_change", patch, uri, meta)
