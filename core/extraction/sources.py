"""The repository files candidate generation reads, and how a file Source names its path
(Memory RFC, "Candidate generation and model-free fallback")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from powercontext.core import repo_docs
from powercontext.core.models import MemoryEntryVersion, Source

__all__ = [
    "BOOTSTRAP_FILES",
    "CONTRACT_FILES",
    "MAX_RULES_PER_FILE",
    "README_FILES",
    "RULE_FILES",
    "changed_uris",
    "evidence_uris",
    "file_uri",
    "root_files",
    "source_path",
    "unique_sources",
]

CONTRACT_FILES = ("pyproject.toml", "setup.cfg", "Makefile", "justfile", "Justfile",
                  ".justfile", "tox.ini", "noxfile.py", "package.json",
                  ".pre-commit-config.yaml", "Cargo.toml", "go.mod")
"""Build and tool configuration: read by the contract topics (parsed, never run)."""
RULE_FILES = ("AGENTS.md", "CLAUDE.md", "CONTRIBUTING.md", "CONTRIBUTING.rst",
              ".github/CONTRIBUTING.md", ".github/CONTRIBUTING.rst", "docs/contributing.md",
              "docs/CONTRIBUTING.md", "docs/contributing.rst", "docs/CONTRIBUTING.rst")
"""Prose contract documents: every section is read for rules."""
README_FILES = ("README.md", "README.rst")
"""READMEs: only their development sections are read for rules (contributing,
development, building, testing, code style, ...)."""
MAX_RULES_PER_FILE = 64
"""Beyond this many kept rules in one contract document the lowest-ranked are dropped
(reason ``budget``): a flood guard, far above what a contract file holds."""
BOOTSTRAP_FILES = (*CONTRACT_FILES, *RULE_FILES, *README_FILES)
"""The bounded operating-contract files a repository bootstrap reads (paths relative to
the root), plus the ``scripts/<name>`` entry points these files name
(:func:`powercontext.core.repo_docs.script_mentions`)."""


def source_path(source: Source) -> str | None:
    """The repository-relative path of a file Source (metadata ``path``, else the file
    name of a ``file:`` uri), or None."""
    meta = dict(source.metadata)
    if meta.get("path"):
        return meta["path"]
    if source.uri and source.uri.startswith("file:"):
        return PurePosixPath(unquote(urlsplit(source.uri).path)).name
    return None


def file_uri(source: Source) -> str | None:
    """The Source's ``file:`` uri, or None."""
    return source.uri if source.uri and source.uri.startswith("file:") else None


def root_files(sources: Sequence[Source]) -> dict[str, Source]:
    """File Sources by contract path: root-level files, the nested rule files and the
    ``scripts/<name>`` entry points (the first Source of each path)."""
    out: dict[str, Source] = {}
    for s in sources:
        if s.kind != "file":
            continue
        path = source_path(s)
        if path and ("/" not in path or path in RULE_FILES or repo_docs.is_script_path(path)) \
                and path not in out:
            out[path] = s
    return out


def unique_sources(sources: Iterable[Source]) -> tuple[Source, ...]:
    """``sources`` without repeated source ids, in first-seen order."""
    out: dict[str, Source] = {}
    for s in sources:
        out.setdefault(s.source_id, s)
    return tuple(out.values())


def evidence_uris(entry: MemoryEntryVersion, evidence: Mapping[str, Source]) -> set[str]:
    """The ``file:`` uris of the stored Sources ``entry`` cites (``evidence``: source id
    -> Source)."""
    uris: set[str] = set()
    for ref in entry.sources:
        s = evidence.get(ref.source_id)
        uri = file_uri(s) if s is not None else None
        if uri:
            uris.add(uri)
    return uris


def changed_uris(sources: Sequence[Source]) -> set[str]:
    """``file:`` uris of the paths a Git change Source names."""
    out: set[str] = set()
    for s in sources:
        if s.kind != "git_change":
            continue
        meta = dict(s.metadata)
        repo = meta.get("repo")
        if not repo:
            continue
        for path in meta.get("paths", "").splitlines():
            if path:
                out.add(PurePosixPath(repo, path).as_uri())
    return out
