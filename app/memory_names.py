"""Names of Memories: the one form of business keys (``repo:<repository>``,
:func:`memory_key`), the Memory names the CLI, MCP and hooks accept (``ID``, ``ID@REV``,
``key:NAME``, ``key:NAME@REV``: :func:`memory_selector`, :func:`resolve_memory`), the
one path explicit entries take into ``remember()`` (:func:`remember_entries`) and the
retirement of a Memory created by mistake (:func:`retire_memory`).

One repository, one Memory, one name:

- a path names the repository whose files it is in: the Git top level around it
  (:func:`repo_root`, the checkout), and for a linked ``git worktree`` the repository
  that worktree belongs to (Git's common directory: :func:`identity_root`), so every
  worktree of a repository shares its Memory. A submodule is a repository of its own
  (its own contract files): a path inside it names the submodule, never the
  superproject; a linked worktree of a submodule names the submodule's checkout.
- a Memory name prints a key as ``key:NAME``; a key itself never starts with ``key:``.
  Passing a printed name where a key is asked for (``--key key:repo:/x``, MCP
  ``remember_memory(key="key:repo:/x")``) is refused with the spelling that works,
  instead of creating a second Memory under ``key:repo:/x``.

Re-exported by :mod:`powercontext.runtime`; nothing here runs at import time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs

from powercontext.core import canonical, keys
from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
from powercontext.core.models import (
    ArtifactRef,
    CurrentHead,
    MemoryEntryInput,
    MemoryEntryVersion,
    Source,
)
from powercontext.service import MemoryService

__all__ = [
    "RetiredMemory",
    "identity_root",
    "memory_key",
    "memory_selector",
    "remember_entries",
    "repo_key",
    "repo_root",
    "resolve_memory",
    "retire_memory",
]


def repo_root(path: str | os.PathLike[str]) -> Path:
    """The Git top level around ``path`` (the checkout whose files a bootstrap reads):
    the nearest ancestor of its real path (symlinks resolved) holding a ``.git``
    directory or file (a linked worktree and a submodule count), else that real path
    itself. No subprocess is started."""
    start = Path(path).expanduser().resolve()
    for p in (start, *start.parents):
        if (p / ".git").exists():
            return p
    return start


def _gitdir_of(top: Path) -> Path | None:
    """The git directory a ``.git`` file points to (``gitdir: PATH``, relative to
    ``top``), or None when ``top/.git`` is a directory or unreadable."""
    dotgit = top / ".git"
    if not dotgit.is_file():
        return None
    try:
        text = dotgit.read_text("utf-8", "replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    return (top / text[len("gitdir:"):].strip()).resolve()


def _core_worktree(gitdir: Path) -> Path | None:
    """``core.worktree`` of a git directory's config (relative to it), or None."""
    try:
        config = (gitdir / "config").read_text("utf-8", "replace")
    except OSError:
        return None
    section = ""
    for line in config.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.strip("[]").strip().lower()
        elif section == "core" and re.match(r"^worktree\s*=", stripped, re.IGNORECASE):
            value = stripped.split("=", 1)[1].strip().strip('"')
            return (gitdir / value).resolve() if value else None
    return None


def identity_root(path: str | os.PathLike[str]) -> Path:
    """The repository ``path`` belongs to, as a path: :func:`repo_root`, except in a
    linked ``git worktree`` (a ``.git`` file naming a git directory with a
    ``commondir``), which names the repository's main checkout (the parent of Git's
    common ``.git`` directory, or the ``core.worktree`` of a submodule's git directory,
    or the bare repository itself). A submodule (its git directory has no
    ``commondir``) is its own repository. No subprocess is started."""
    top = repo_root(path)
    gitdir = _gitdir_of(top)
    if gitdir is None:
        return top
    try:
        common_ref = (gitdir / "commondir").read_text("utf-8", "replace").strip()
    except OSError:
        return top  # a submodule or a separate git directory: its own repository
    common = (gitdir / common_ref).resolve()
    if common.name == ".git":
        return common.parent
    return _core_worktree(common) or common


def repo_key(path: str | os.PathLike[str]) -> str:
    """The business key of the repository around ``path``: ``repo:`` +
    :func:`identity_root` (a sub-directory, a symlinked checkout or a linked worktree
    gives the repository's key)."""
    return memory_key(f"repo:{identity_root(path)}")


def memory_key(key: object, field: str = "key", *, stored: bool = False) -> str:
    """A business key in the one form every caller (CLI ``--key`` and ``key:NAME``, hooks,
    ``repo`` commands, MCP) stores and looks up: NFC, bounded, no control characters
    (:func:`powercontext.core.keys.normalize_key`), and a ``repo:PATH`` key whose PATH is
    absolute (or starts with ``~``) names the repository around PATH
    (:func:`identity_root`: a sub-directory, a symlinked checkout or a linked worktree
    gives the same key). Any other key, a relative ``repo:`` one included, is a plain
    name, the same from every directory. A key starting with ``key:`` is a Memory name
    pasted where a key belongs: refused with the key it names, unless ``stored`` (the
    lookup of a ``key:NAME`` name, so a key stored that way by an earlier release can
    still be named and retired). InvalidInputError naming ``field`` otherwise."""
    norm = keys.normalize_key(key, field)
    if norm.startswith("key:") and not stored:
        named = norm[len("key:"):]
        raise InvalidInputError(
            field, f"{norm!r} is a Memory name (key:NAME), not a key: the key it names is "
                   f"{named!r}. Give {named!r} as the key (--key {named}), or name the "
                   f"Memory as {norm!r} (--memory {norm})")
    if norm.startswith("repo:"):
        path = norm[len("repo:"):]
        if not path:
            raise InvalidInputError(field, "repo: needs a path, e.g. repo:/abs/path")
        if path.startswith(("/", "~")):
            norm = keys.normalize_key(f"repo:{identity_root(path)}", field)
    return norm


async def _parse_memory_name(service: MemoryService, name: object) -> tuple[str, int | None]:
    """``(artifact_id, revision or None for the current head)`` of a Memory name."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("memory", "name a Memory: ID, ID@REV, key:NAME or key:NAME@REV")
    rev: int | None = None
    if name.startswith("key:"):
        key = name[4:]
        if not key:
            raise InvalidInputError("memory", "key: needs a name, e.g. key:repo:/abs/path")
        artifact_id = await service.memory_key(memory_key(key, "memory", stored=True))
        if artifact_id is None and "@" in key:
            base_key, _, suffix = key.rpartition("@")
            if base_key and suffix.isdigit():
                rev = _revision_of(name, suffix)
                key = base_key
                artifact_id = await service.memory_key(memory_key(key, "memory", stored=True))
        if artifact_id is None:
            raise ArtifactNotFoundError(
                f"no Memory is mapped to key {memory_key(key, 'memory', stored=True)!r}")
    else:
        artifact_id = name
        if "@" in name:
            artifact_id, _, suffix = name.rpartition("@")
            rev = _revision_of(name, suffix)
        canonical.check_id(artifact_id, "memory")
    return artifact_id, rev


async def memory_selector(service: MemoryService, name: object) -> ArtifactRef | CurrentHead:
    """A Memory name as a search takes it: ``ID`` and ``key:NAME`` (the Memory the
    database's key NAME names) -> :class:`CurrentHead`, read inside the search's own
    transaction (a write in between is never a race); ``ID@REV`` and ``key:NAME@REV`` ->
    that exact ArtifactRef (a search refuses it with CapabilityNotSupportedError unless
    it is the head). InvalidInputError (field ``memory``) for a malformed name;
    ArtifactNotFoundError for a key that names no Memory."""
    artifact_id, rev = await _parse_memory_name(service, name)
    return CurrentHead(artifact_id) if rev is None else ArtifactRef(artifact_id, rev)


async def resolve_memory(service: MemoryService, name: object) -> ArtifactRef:
    """A Memory name to an ArtifactRef: ``ID`` -> its current head, ``ID@REV`` -> that
    exact Revision, ``key:NAME`` -> the head of the Memory the database's key NAME names
    (NAME in :func:`memory_key` form), ``key:NAME@REV`` -> that exact Revision of it (a
    key that itself ends in ``@DIGITS`` is taken whole when it is stored).
    InvalidInputError (field ``memory``) for a malformed name; ArtifactNotFoundError for
    an unknown Memory, key or Revision. A search takes :func:`memory_selector` instead
    (the head read in its transaction)."""
    artifact_id, rev = await _parse_memory_name(service, name)
    head = await service.head(artifact_id)
    if rev is None:
        return head
    if rev > head.revision:
        raise ArtifactNotFoundError(
            f"{artifact_id} has no Revision {rev} (its head is Revision {head.revision})")
    return ArtifactRef(artifact_id, rev)


def _revision_of(name: str, suffix: str) -> int:
    if not suffix.isdigit() or int(suffix) < 1:
        raise InvalidInputError("memory", f"bad Revision in {name!r}: REV is an integer >= 1")
    return int(suffix)


async def _corrections(service: MemoryService, base: ArtifactRef | None,
                       entries: list[dict[str, Any]],
                       current: dict[str, MemoryEntryVersion]) -> list[dict[str, Any]]:
    """``entries`` where a correction revises the rule it names: an entry without
    ``revise``, other than a working_note, whose text says what it replaces ("use
    `uv run pytest -x` instead of tox"; :func:`powercontext.core.corrections.replaced`)
    revises the one active rule of ``base`` that states it, when the link is certain
    (:func:`~powercontext.core.corrections.corrected_entry`); the reason, unless given,
    names what it replaces. ``current`` gains the versions so revised."""
    from powercontext.core.corrections import corrected_entry, replaced

    wanted = [(i, replaced(e["text"])) for i, e in enumerate(entries)
              if not e.get("revise") and (e.get("kind") or "fact") != "working_note"
              and isinstance(e.get("text"), str)]
    wanted = [(i, t) for i, t in wanted if t]
    if base is None or not wanted:
        return entries
    manifest = (await service.revision(base)).content.manifest.entries
    live = [m.entry_id for m in manifest if m.state == "active"]
    active = list((await service.entries(base, live)).values())
    out = list(entries)
    taken = set(current) | {e["revise"] for e in entries if e.get("revise")}
    for i, targets in wanted:
        old = corrected_entry(targets, active)
        if old is None or old.entry_id in taken:
            continue
        taken.add(old.entry_id)
        current[old.entry_id] = old
        what = ", ".join(f"`{t}`" for t in targets)
        out[i] = {**entries[i], "revise": old.entry_id,
                  "reason": entries[i].get("reason") or f"the user's correction replaces {what}"}
    return out


async def remember_entries(
    service: MemoryService,
    *,
    memory: str | None,
    key: str | None,
    entries: list[dict[str, Any]],
    sources: tuple[Source, ...] = (),
    settle: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]] | None = None,
) -> tuple[ArtifactRef | None, ArtifactRef | None]:
    """Explicit entries through ``remember(mode="append")`` (Memory RFC, "remember()"),
    the one path the CLI and the MCP tool share: ``(base, after)``.

    ``memory`` names the Memory to write (see :func:`resolve_memory`; a write needs its
    head). Without it, ``key`` (in :func:`memory_key` form) names the Memory to write: the
    head of the one the database's key names, or a new one stored with the key in the
    same transaction (concurrent writers of one new key get one Memory, none loses its
    write); with neither a new Memory is created. ``entries``: dicts with ``text`` (str),
    ``kind`` (str, default ``fact``), ``reason`` (str or None) and ``revise`` (an
    entry_id of the base, whose current version is revised); an entry without
    ``revise`` that corrects a rule ("... instead of `make test`") revises the one
    active rule stating what it replaces, when the link is certain (:func:`_corrections`).
    Every entry cites ``sources``. InvalidInputError when an entry revises with no base Memory;
    ArtifactNotFoundError for an entry_id the base does not hold; the service's own
    errors (limits, secrets, conflicts) pass through. ``after`` is None when nothing
    was worth a new Memory; equal to ``base`` when nothing changed; ``base`` is the
    Revision the write was applied to. ``settle`` wraps the write (the CLI passes one
    that rereads a COMMIT whose outcome is unknown)."""
    if memory is None and key is not None:
        key = memory_key(key)
        mapped = await service.memory_key(key)
        base = await service.head(mapped) if mapped is not None else None
    else:
        key = None
        base = await resolve_memory(service, memory) if memory else None
    revise_ids = [e["revise"] for e in entries if e.get("revise")]
    if revise_ids and base is None:
        raise InvalidInputError("revise", "a new Memory has no entries to revise: name the "
                                          "Memory")
    current = await service.entries(base, revise_ids) if base and revise_ids else {}
    for entry_id in revise_ids:
        if entry_id not in current:
            assert base is not None
            raise ArtifactNotFoundError(
                f"entry {entry_id!r} is not in {base.artifact_id}@{base.revision}")
    entries = await _corrections(service, base, entries, current)
    inputs = tuple(
        MemoryEntryInput(
            kind=e.get("kind") or "fact",
            text=e["text"],
            reason=e.get("reason"),
            entry=current[e["revise"]] if e.get("revise") else None,
            sources=sources,
        )
        for e in entries
    )

    def write() -> Awaitable[Any]:
        if key is not None:
            return service.remember(None, sources=sources, entries=inputs, mode="append",
                                    key=key)
        return service.remember(base, sources=sources, entries=inputs, mode="append")

    after = await (settle(write) if settle is not None else write())
    if key is not None and after is not None and after != base and after.revision > 1 and (
            base is None or base.artifact_id != after.artifact_id
            or after.revision != base.revision + 1):
        base = ArtifactRef(after.artifact_id, after.revision - 1)  # a concurrent write landed
    return base, after


@attrs.frozen
class RetiredMemory:
    """What :func:`retire_memory` did: the Memory, its head before and after (a new
    Revision when entries were active), the entries it marked inactive and the keys it
    removed."""

    artifact_id: str
    before: ArtifactRef
    after: ArtifactRef
    forgotten: tuple[str, ...]
    keys: tuple[str, ...]


async def retire_memory(
    service: MemoryService,
    name: object,
    *,
    reason: str | None = None,
    settle: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]] | None = None,
) -> RetiredMemory:
    """Retire a Memory created by mistake (e.g. under ``key:key:repo:/x`` by an earlier
    release): every active entry is marked inactive in one new Revision (Memory RFC,
    "forget()": history and old citations stay valid, ``ID@REV`` still reads every
    earlier Revision), then every business key naming the Memory is removed, so the key
    names nothing and can name another Memory. Nothing is rewritten or deleted besides
    the key rows. ``name`` is any Memory name (:func:`resolve_memory`) and must name
    the head; running it again after an interruption finishes the job (forgetting
    inactive entries is a no-op). InvalidInputError for an older Revision;
    ArtifactNotFoundError for an unknown Memory."""
    ref = await resolve_memory(service, name)
    head = await service.head(ref.artifact_id)
    if ref != head:
        raise InvalidInputError("memory", f"{name!r} names Revision {ref.revision}; retire the "
                                          f"Memory at its head ({head.artifact_id})")
    revision = await service.revision(head)
    active = [e.entry_id for e in revision.content.manifest.entries if e.state == "active"]
    after = head
    if active:
        def write() -> Awaitable[Any]:
            return service.forget(head, active, reason=reason or "retired")

        after = await (settle(write) if settle is not None else write())
    removed = []
    for key in (await service.keys_by_memory()).get(head.artifact_id, []):
        if await service.remove_memory_key(key, head.artifact_id):
            removed.append(key)
    return RetiredMemory(head.artifact_id, head, after, tuple(active), tuple(removed))
