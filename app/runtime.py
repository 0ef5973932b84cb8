"""Runtime wiring: which database, which embedding model, the one form of business keys
(``repo:<git top level>``, :func:`memory_key`), and the runtime manifest, a JSON file
beside the database holding integration state (the remembered embedding model, the last
synced commit). Business keys live in the database (ARCHITECTURE.md, Decisions: "Keys
live in the database"); the manifest's ``memories`` mapping of earlier releases is
imported once (:func:`import_manifest_keys`).

Nothing here runs at import time; adapters are chosen through the plugin registry.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import logging
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from powercontext.core import analyzer as analyzers
from powercontext.core import canonical, keys
from powercontext.core.errors import (
    ArtifactNotFoundError,
    InvalidInputError,
    RevisionConflictError,
    WritesPausedError,
)
from powercontext.core.models import ArtifactRef, CurrentHead, MemoryEntryInput, Source
from powercontext.plugins.registry import Registry, url_scheme
from powercontext.service import MemoryService

__all__ = [
    "RuntimeManifest",
    "check_sqlite_path",
    "data_dir",
    "default_db_url",
    "import_manifest_keys",
    "memory_key",
    "memory_selector",
    "open_service",
    "remember_embedding",
    "remember_entries",
    "repo_key",
    "repo_root",
    "resolve_embedding",
    "resolve_memory",
    "sqlite_path",
]

log = logging.getLogger(__name__)

ENV_DB = "POWERCONTEXT_DB"
ENV_HOME = "POWERCONTEXT_HOME"
ENV_EMBEDDING = "POWERCONTEXT_EMBEDDING"
ENV_ANALYZER = "POWERCONTEXT_ANALYZER"


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


def open_service(
    db: str | os.PathLike[str] | None = None,
    *,
    embedding: str | None = None,
    embedding_options: dict[str, Any] | None = None,
    registry: Registry | None = None,
    analyzer: str | None = None,
) -> MemoryService:
    """A MemoryService on ``db`` (a path or URL; default :func:`default_db_url`), chosen
    through the plugin registry as the CLI does (``registry``: default a new
    :class:`~powercontext.plugins.registry.Registry`). Public as ``powercontext.open_service``.

    Nothing connects yet: the backend opens on the first call. The service is an async
    context manager that closes the backend (``async with open_service(db) as svc:``), or
    call ``await svc.close()``.

    ``embedding`` names a registered embedding model (``deterministic``, ``local``,
    ``openai``; ``none`` for none), resolved by :func:`resolve_embedding`. The model's
    profile is fixed in the database on first use; opening with another raises
    ProfileMismatchError on the first call. For a path, the parent directory is created;
    a path that cannot hold a database raises InvalidInputError (field ``db``, see
    :func:`check_sqlite_path`).

    ``analyzer`` names the search analyzer version (``v1``, ``v1-porter``; default
    ``$POWERCONTEXT_ANALYZER``, else no choice) a new database records; an existing
    database keeps its own, and a different explicit choice raises AnalyzerMismatchError
    on the first call (README, "Analyzer versions"). InvalidInputError for an unknown name.
    """
    registry = registry or Registry()
    url = str(db) if db is not None else default_db_url()
    check_sqlite_path(url)
    _name, _options, model = resolve_embedding(
        url, embedding, embedding_options, registry=registry
    )
    chosen = analyzer if analyzer is not None else os.environ.get(ENV_ANALYZER) or None
    if chosen is not None:
        analyzers.get(chosen)  # InvalidInputError for an unknown name, before any I/O
    backend = registry.backend_for_url(
        url, profile=model.profile if model else None, analyzer=chosen
    )
    return MemoryService(backend, embedding_model=model,
                         key_importer=functools.partial(import_manifest_keys, url))


_SQLITE_HEADER = b"SQLite format 3\x00"


def sqlite_path(url: str) -> Path | None:
    """The file a SQLite database URL or bare path names, or None (``:memory:``, another
    scheme)."""
    scheme = url_scheme(url)
    if scheme is None:
        return None if url == ":memory:" else Path(url).expanduser()
    if scheme != "sqlite":
        return None
    from powercontext.plugins.builtin import sqlite_path_from_url

    path = sqlite_path_from_url(url)
    return None if path == ":memory:" else Path(path)


def check_sqlite_path(url: str) -> None:
    """Make sure a SQLite ``url`` (bare path or ``sqlite:///``) can hold a database:
    creates the parent directory; InvalidInputError (field ``db``) when the path is a
    directory, its directory cannot be created or written, or an existing file is not a
    SQLite database. Other URLs are left to their backend."""
    path = sqlite_path(url)
    if path is None:
        return
    if path.is_dir():
        raise InvalidInputError("db", f"{path} is a directory; name a database file in it, "
                                      f"e.g. {path / 'memory.db'}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInputError(
            "db", f"cannot create the directory {path.parent}: {exc.strerror or exc}") from exc
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
    elif not os.access(path.parent, os.W_OK | os.X_OK):
        raise InvalidInputError("db", f"cannot create {path}: {path.parent} is not writable")


def resolve_embedding(
    db_url: str,
    embedding: str | None = None,
    embedding_options: dict[str, Any] | None = None,
    *,
    registry: Registry | None = None,
    remember: bool = True,
) -> tuple[str | None, dict[str, Any], Any]:
    """The embedding model every command on ``db_url`` uses: ``(name, options, model)``,
    all None/empty for none.

    ``embedding`` (e.g. the CLI's ``--embedding``) wins, then ``$POWERCONTEXT_EMBEDDING``,
    then the model remembered in the database's runtime manifest (the first one used,
    so vectors stay complete), else none; ``none`` means none. Options not given come
    from ``POWERCONTEXT_EMBEDDING_*`` (``openai``: model, dimension, base URL, API key)
    or from the remembered ones. ``remember`` stores the first model used.
    InvalidInputError when the model needs options nobody gave; UnknownPluginError for
    an unknown name.
    """
    registry = registry or Registry()
    name = embedding if embedding is not None else os.environ.get(ENV_EMBEDDING) or None
    manifest = RuntimeManifest.for_db(db_url)
    if name is None:
        remembered = manifest.get_state("embedding")
        if isinstance(remembered, dict) and remembered.get("name"):
            name = remembered["name"]
            embedding_options = embedding_options or remembered.get("options") or {}
            if embedding_options:  # a credential is never remembered: it comes from the env
                embedding_options = {**_secret_options_from_env(name), **embedding_options}
    elif name == "none":
        name = None
    if name is not None and not embedding_options:
        embedding_options = _options_from_env(name)
    try:
        model = registry.embedding_model(name, **(embedding_options or {})) if name else None
    except TypeError as exc:  # a model that needs options nobody gave
        raise InvalidInputError(
            "embedding", f"{name!r} needs options ({exc}); see the README, 'Vector and hybrid "
            "search'"
        ) from exc
    if remember and name is not None and manifest.get_state("embedding") is None:
        # only the first model used is remembered: a later mismatch (refused by the
        # database's stored profile) must not change what plain commands use
        remember_embedding(db_url, name, embedding_options or {})
    return name, dict(embedding_options or {}), model


def remember_embedding(db_url: str, name: str, options: dict[str, Any]) -> None:
    """Make ``name`` (with ``options``) the model plain commands on ``db_url`` use (after
    ``memory rebuild --migrate`` moved the database to its profile). Credentials
    (:data:`SECRET_OPTIONS`) are never written to the manifest: each command reads them
    from the environment again."""
    kept = {k: v for k, v in options.items() if k not in SECRET_OPTIONS}
    RuntimeManifest.for_db(db_url).set_state("embedding", {"name": name, "options": kept})


#: Embedding options that are credentials: never remembered on disk.
SECRET_OPTIONS = frozenset({"api_key"})


def _secret_options_from_env(name: str) -> dict[str, Any]:
    return {k: v for k, v in _options_from_env(name).items() if k in SECRET_OPTIONS}


def _options_from_env(name: str) -> dict[str, Any]:
    """Options of the ``openai`` embedding model from ``POWERCONTEXT_EMBEDDING_MODEL``,
    ``_DIMENSION``, ``_BASE_URL`` and ``_API_KEY`` (others need none)."""
    if name != "openai":
        return {}
    env = os.environ
    options: dict[str, Any] = {}
    for key, option in (("MODEL", "model"), ("BASE_URL", "base_url"), ("API_KEY", "api_key")):
        value = env.get(f"{ENV_EMBEDDING}_{key}")
        if value:
            options[option] = value
    dimension = env.get(f"{ENV_EMBEDDING}_DIMENSION")
    if dimension:
        if not dimension.isdigit():
            raise InvalidInputError(f"{ENV_EMBEDDING}_DIMENSION", "must be a positive integer")
        options["dimension"] = int(dimension)
    return options


class RuntimeManifest:
    """A small JSON file of integration state beside a database (``state``: e.g. the
    remembered embedding model). Its ``memories`` mapping (business key -> Memory id) is
    what earlier releases kept keys in: today keys live in the database, and the mapping
    is only read by :func:`import_manifest_keys`.

    Writes are atomic (temp file + rename) under an exclusive ``flock`` so concurrent
    CLI processes never lose a mapping. Only ASCII Artifact ids are stored.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @classmethod
    def for_db(cls, db_url: str) -> RuntimeManifest:
        """The manifest beside a SQLite file (named as a path or a ``sqlite:///`` URL, both
        resolved to the file's real path: one database, one manifest), else in the data
        directory."""
        path = sqlite_path(db_url)
        if path is not None:
            p = Path(os.path.realpath(path))
            return cls(p.with_name(p.name + ".runtime.json"))
        safe = canonical.sha256_hex(db_url.encode())[:16]
        return cls(data_dir() / f"runtime-{safe}.json")

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {"memories": {}, "state": {}}
        data.setdefault("memories", {})
        data.setdefault("state", {})
        return data

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self._read()
            yield data
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".runtime-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=2, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)

    def get(self, key: str) -> str | None:
        """The Memory Artifact id the legacy ``memories`` mapping gives ``key``, or None
        (not the database's keys: see :meth:`MemoryService.memory_key`)."""
        return self._read()["memories"].get(key)

    def set(self, key: str, artifact_id: str) -> None:
        """Add ``key`` -> ``artifact_id`` to the legacy ``memories`` mapping (as earlier
        releases did; imported into the database at the next open)."""
        canonical.check_id(artifact_id, "artifact_id")
        if not key:
            raise InvalidInputError("key", "must be non-empty")
        with self._locked() as data:
            data["memories"][key] = artifact_id

    def items(self) -> dict[str, str]:
        return dict(self._read()["memories"])

    def get_state(self, key: str) -> Any:
        """Integration state kept beside the mapping (e.g. last processed commit)."""
        return self._read()["state"].get(key)

    def set_state(self, key: str, value: Any) -> None:
        with self._locked() as data:
            data["state"][key] = value


def repo_root(path: str | os.PathLike[str]) -> Path:
    """The Git top level around ``path``: the nearest ancestor of its real path (symlinks
    resolved) holding a ``.git`` directory or file (so worktrees and submodules count),
    else that real path itself. No subprocess is started."""
    start = Path(path).expanduser().resolve()
    for p in (start, *start.parents):
        if (p / ".git").exists():
            return p
    return start


def repo_key(path: str | os.PathLike[str]) -> str:
    """The business key of the repository around ``path``: ``repo:`` + :func:`repo_root`
    (a sub-directory or a symlinked checkout gives its top level's key)."""
    return memory_key(f"repo:{repo_root(path)}")


def memory_key(key: object, field: str = "key") -> str:
    """A business key in the one form every caller (CLI ``--key`` and ``key:NAME``, hooks,
    ``repo`` commands, MCP) stores and looks up: NFC, bounded, no control characters
    (:func:`powercontext.core.keys.normalize_key`), and a ``repo:PATH`` key whose PATH is
    absolute (or starts with ``~``) names the real path of the Git top level around PATH
    (:func:`repo_root`: a sub-directory or a symlinked checkout gives the same key). Any
    other key, a relative ``repo:`` one included, is a plain name, the same from every
    directory. InvalidInputError naming ``field`` otherwise."""
    key = keys.normalize_key(key, field)
    if key.startswith("repo:"):
        path = key[len("repo:"):]
        if not path:
            raise InvalidInputError(field, "repo: needs a path, e.g. repo:/abs/path")
        if path.startswith(("/", "~")):
            key = keys.normalize_key(f"repo:{repo_root(path)}", field)
    return key


async def _parse_memory_name(service: MemoryService, name: object) -> tuple[str, int | None]:
    """``(artifact_id, revision or None for the current head)`` of a Memory name."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("memory", "name a Memory: ID, ID@REV, key:NAME or key:NAME@REV")
    rev: int | None = None
    if name.startswith("key:"):
        key = name[4:]
        if not key:
            raise InvalidInputError("memory", "key: needs a name, e.g. key:repo:/abs/path")
        artifact_id = await service.memory_key(memory_key(key, "memory"))
        if artifact_id is None and "@" in key:
            base_key, _, suffix = key.rpartition("@")
            if base_key and suffix.isdigit():
                rev = _revision_of(name, suffix)
                key = base_key
                artifact_id = await service.memory_key(memory_key(key, "memory"))
        if artifact_id is None:
            raise ArtifactNotFoundError(f"no Memory is mapped to key {memory_key(key, 'memory')!r}")
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
    entry_id of the base, whose current version is revised). Every entry cites
    ``sources``. InvalidInputError when an entry revises with no base Memory;
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


async def import_manifest_keys(db_url: str, service: MemoryService) -> dict[str, str]:
    """Import the business keys of the runtime manifest's ``memories`` mapping (written by
    earlier releases) into the database, once: only keys the database does not hold yet
    and whose Memory it holds (:meth:`MemoryBackend.import_memory_keys`), each in its
    :func:`memory_key` form; malformed pairs are skipped. The mapping stays in the file;
    its digest is recorded (``keys_imported``), so the next open imports nothing unless
    the mapping changed.
    Returns the keys stored. Writes paused by a rebuild: nothing is imported this time."""
    manifest = RuntimeManifest.for_db(db_url)
    mapping = manifest.items()
    if not mapping:
        return {}
    digest = canonical.sha256_hex(json.dumps(mapping, sort_keys=True).encode("utf-8"))
    if manifest.get_state("keys_imported") == digest:
        return {}
    pairs: dict[str, str] = {}
    for key, artifact_id in sorted(mapping.items()):
        try:
            canonical.check_id(artifact_id, "artifact_id")
            pairs.setdefault(memory_key(key), artifact_id)
        except InvalidInputError as exc:
            log.warning("runtime manifest key %r is not imported: %s", key, exc)
    stored: dict[str, str] = {}
    try:
        for attempt in range(3):
            try:
                stored = await service.backend.import_memory_keys(pairs)
                break
            except RevisionConflictError:  # a concurrent importer stored one first
                if attempt == 2:
                    raise
    except WritesPausedError:
        return {}
    manifest.set_state("keys_imported", digest)
    return stored
