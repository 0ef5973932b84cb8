"""The bounded operating-contract Sources of a repository (Memory RFC, "Source changes
and incremental evidence": bootstrap reads only what the repository's operating
contract needs, never all code).

A file Source is content-addressed (``src_file_<hash>``), so the same file content at
the same path is the same Source whether read from the work tree or from a commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs

from powercontext.adapters.candidates.git import file_at
from powercontext.adapters.secret_scanner import default_scanner
from powercontext.core import canonical
from powercontext.core.extraction import BOOTSTRAP_FILES
from powercontext.core.models import Source
from powercontext.core.repo_docs import script_mentions

__all__ = ["MAX_FILE_BYTES", "MAX_SCRIPTS", "Skipped", "contract_sources", "file_source",
           "repo_key"]

MAX_FILE_BYTES = 256 * 1024
#: At most this many ``scripts/<name>`` entry points named by the contract files.
MAX_SCRIPTS = 8


@attrs.frozen
class Skipped:
    """A contract file that was not persisted, and why."""

    path: str
    reason: str


def repo_key(root: Path) -> str:
    """``repo:<real path of root>``: for a Git top level ``root``, the business key the
    runtime gives the repository (``powercontext.runtime.repo_key``, which also maps a
    sub-directory to its top level)."""
    return f"repo:{root.resolve()}"


def file_source(root: Path, path: str, text: str) -> Source:
    """The ``file`` Source of ``path`` (relative to ``root``) with content ``text``:
    uri ``file:///abs/path``, metadata ``path``."""
    uri = (root.resolve() / path).as_uri()
    meta = (("path", path),)
    digest = canonical.source_content_hash("file", text, uri, meta)
    return canonical.make_source(f"src_file_{digest[:40]}", "file", text, uri, meta)


def contract_sources(root: Path, *, commit: str | None = None,
                     names: Sequence[str] = BOOTSTRAP_FILES,
                     max_bytes: int = MAX_FILE_BYTES,
                     max_scripts: int = MAX_SCRIPTS) -> tuple[tuple[Source, ...],
                                                             tuple[Skipped, ...]]:
    """File Sources for the contract paths ``names`` present in the work tree (or at
    ``commit``), then for the ``scripts/<name>`` entry points those files name (at most
    ``max_scripts``), plus the ones skipped: larger than ``max_bytes``, not UTF-8, empty,
    or containing a secret (never persisted; the reason names the kind and line)."""
    root = root.resolve()
    sources: list[Source] = []
    skipped: list[Skipped] = []

    def read(name: str) -> None:
        if commit is None:
            p = root / name
            if not p.is_file():
                return
            if p.stat().st_size > max_bytes:
                skipped.append(Skipped(name, f"larger than {max_bytes} bytes"))
                return
            data = p.read_bytes()
        else:
            found = file_at(root, commit, name)
            if found is None:
                return
            data = found
            if len(data) > max_bytes:
                skipped.append(Skipped(name, f"larger than {max_bytes} bytes"))
                return
        try:
            text = data.decode("utf-8")
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
        sources.append(file_source(root, name, text))

    for name in names:
        read(name)
    scripts: list[str] = []
    for s in list(sources):
        scripts.extend(p for p in script_mentions(s.content) if p not in scripts)
    for name in scripts[:max_scripts]:
        read(name)
    return tuple(sources), tuple(skipped)
