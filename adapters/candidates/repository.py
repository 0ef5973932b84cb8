"""The bounded operating-contract Sources of a repository (Memory RFC, "Source changes
and incremental evidence": bootstrap reads only what the repository's operating
contract needs, never all code).

A file Source is content-addressed (``src_file_<hash>``), so the same file content at
the same path is the same Source whether read from the work tree or from a commit.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from powercontext.adapters.candidates.git import file_at, is_link_at
from powercontext.adapters.secret_scanner import default_scanner
from powercontext.core import canonical
from powercontext.core.extraction import BOOTSTRAP_FILES
from powercontext.core.models import Source
from powercontext.core.repo_docs import script_mentions

__all__ = ["MAX_FILE_BYTES", "MAX_SCRIPTS", "Skipped", "contract_sources", "file_source"]

MAX_FILE_BYTES = 256 * 1024
#: At most this many ``scripts/<name>`` entry points named by the contract files.
MAX_SCRIPTS = 8


@attrs.frozen
class Skipped:
    """A contract file that was not persisted, and why."""

    path: str
    reason: str


def file_source(root: Path, path: str, text: str) -> Source:
    """The ``file`` Source of ``path`` (relative to ``root``) with content ``text``:
    uri ``file:///abs/path``, metadata ``path``."""
    uri = (root.resolve() / path).as_uri()
    meta = (("path", path),)
    digest = canonical.source_content_hash("file", text, uri, meta)
    return canonical.make_source(f"src_file_{digest[:40]}", "file", text, uri, meta)


_LINK_TEXT = re.compile(r"^[\w.\-/]{1,255}$")


@attrs.frozen
class _Found:
    """A contract path as found: its bytes, and the repository path of the file they
    are (the path itself, a symlink's target, or the target a link placeholder names),
    or ``outside`` when that target is outside the repository."""

    data: bytes | None = None
    real: str | None = None
    outside: str | None = None
    size: int = 0


def _inside(root: Path, real: Path) -> str | None:
    try:
        return real.relative_to(root).as_posix()
    except ValueError:
        return None


def _find_worktree(root: Path, name: str, max_bytes: int) -> _Found | None:
    p = root / name
    if not p.is_symlink() and not p.is_file():
        return None
    real = Path(os.path.realpath(p))
    rel = _inside(root, real)
    if rel is None:
        return _Found(outside=str(real))
    if not real.is_file():
        return None
    size = real.stat().st_size
    return _Found(real.read_bytes() if size <= max_bytes else None, rel, None, size)


def _find_commit(root: Path, commit: str, name: str, max_bytes: int) -> _Found | None:
    data = file_at(root, commit, name)
    if data is None:
        return None
    if is_link_at(root, commit, name):
        target = data.decode("utf-8", "replace").strip()
        return _resolve_text_link(root, name, target, lambda rel: _find_commit(
            root, commit, rel, max_bytes)) or _Found(outside=target)
    return _Found(data if len(data) <= max_bytes else None, name, None, len(data))


def _resolve_text_link(root: Path, name: str, target: str,
                       find: Any) -> _Found | None:
    """A link target written as text (a symlink's blob, or a placeholder file holding
    only a path, as Git writes links where symlinks are off): the file it names, or
    ``outside`` when it leaves the repository, or None when it names no file."""
    if not _LINK_TEXT.match(target) or target.startswith("/"):
        return _Found(outside=target) if target.startswith("/") else None
    rel = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    if rel.startswith("../") or rel == "..":
        return _Found(outside=target)
    if rel == name:
        return None
    found = find(rel)
    return found if found is not None and (found.data is not None or found.outside) else None


def contract_sources(root: Path, *, commit: str | None = None,
                     names: Sequence[str] = BOOTSTRAP_FILES,
                     max_bytes: int = MAX_FILE_BYTES,
                     max_scripts: int = MAX_SCRIPTS,
                     uri_root: Path | None = None) -> tuple[tuple[Source, ...],
                                                            tuple[Skipped, ...]]:
    """File Sources for the contract paths ``names`` present in the work tree (or at
    ``commit``), then for the ``scripts/<name>`` entry points those files name (at most
    ``max_scripts``), plus the ones skipped: larger than ``max_bytes``, not UTF-8, empty,
    containing a secret (never persisted; the reason names the kind and line), a link
    whose target is outside the repository (a symlink, or a placeholder file holding
    only a path: never followed, never read), or a second path to a file already read
    (``CLAUDE.md -> AGENTS.md``: the file is read once, under its own path when that is
    a contract path too, else under the first name that reaches it). ``uri_root``: the
    repository the files' ``file:`` uris name (default ``root``; a linked worktree
    passes its repository's main checkout, so the same path is the same file in every
    worktree)."""
    root = root.resolve()
    uri_base = (uri_root or root).resolve()
    sources: list[Source] = []
    skipped: list[Skipped] = []
    read_as: dict[str, str] = {}  # real repository path -> the name it was read under

    def find(name: str) -> _Found | None:
        if commit is None:
            return _find_worktree(root, name, max_bytes)
        return _find_commit(root, commit, name, max_bytes)

    def locate(name: str, hops: int = 8) -> _Found | None:
        """``name`` found, following link placeholders (at most ``hops`` of them)."""
        found = find(name)
        if found is None or found.data is None or len(found.data) > 1024 or hops == 0:
            return found
        text = found.data.decode("utf-8", "replace").strip()
        if "\n" in text or not _LINK_TEXT.match(text):
            return found
        target = _resolve_text_link(root, found.real or name, text,
                                    lambda rel: locate(rel, hops - 1))
        return target or found

    located = {n: locate(n) for n in names}

    def read(name: str, found: _Found | None) -> None:
        if found is None:
            return
        if found.outside is not None:
            skipped.append(Skipped(name, f"a link to {found.outside}, outside the "
                                         "repository: not read"))
            return
        real = found.real or name
        if real in read_as:
            skipped.append(Skipped(name, f"a link to {real}: read once, as {read_as[real]}"))
            return
        if real != name and real in located and located[real] is not None:
            return  # read under its own contract path
        if found.data is None:
            skipped.append(Skipped(name, f"larger than {max_bytes} bytes"))
            return
        try:
            text = found.data.decode("utf-8")
        except UnicodeDecodeError:
            skipped.append(Skipped(name, "not UTF-8 text"))
            return
        found_secrets = default_scanner().scan(text)
        if found_secrets:
            first = found_secrets[0]
            skipped.append(Skipped(name, f"contains a secret ({first.description}) on line "
                                         f"{first.line}; not persisted"))
            return
        if not text.strip():
            skipped.append(Skipped(name, "empty"))
            return
        read_as[real] = name
        sources.append(file_source(uri_base, name, text))

    for name in names:
        read(name, located[name])
    for name in names:  # the links to a file read under its own path
        f = located[name]
        if f is not None and f.real and f.real != name and f.real in located \
                and f.real in read_as and not any(k.path == name for k in skipped):
            skipped.append(Skipped(name, f"a link to {f.real}: read once, as "
                                         f"{read_as[f.real]}"))
    scripts: list[str] = []
    for s in list(sources):
        scripts.extend(p for p in script_mentions(s.content) if p not in scripts)
    for name in scripts[:max_scripts]:
        read(name, locate(name))
    return tuple(sources), tuple(skipped)
