"""Runtime wiring: which database, which embedding model, and the runtime manifest that
maps business keys to Memory Artifact ids (Memory RFC, "Memory identity": the mapping
lives outside Memory Core).

Nothing here runs at import time; adapters are chosen through the plugin registry.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from powercontext.core import analyzer as analyzers
from powercontext.core import canonical
from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
from powercontext.core.models import ArtifactRef, CurrentHead, MemoryEntryInput, Source
from powercontext.plugins.registry import Registry, url_scheme
from powercontext.service import MemoryService

__all__ = [
    "RuntimeManifest",
    "check_sqlite_path",
    "data_dir",
    "default_db_url",
    "memory_selector",
    "open_service",
    "remember_embedding",
    "remember_entries",
    "resolve_embedding",
    "resolve_memory",
    "sqlite_path",
]

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
    """A MemoryService on ``db`` (a path or URL; default :func:`default_db_url`).

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
    return MemoryService(backend, embedding_model=model)


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
    """A small JSON file mapping business keys (``repo:/path``) to Memory Artifact ids.

    Writes are atomic (temp file + rename) under an exclusive ``flock`` so concurrent
    CLI processes never lose a mapping. Only ASCII Artifact ids are stored.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @classmethod
    def for_db(cls, db_url: str) -> RuntimeManifest:
        """The manifest beside a SQLite file, else in the data directory."""
        if url_scheme(db_url) is None and db_url != ":memory:":
            p = Path(db_url).expanduser()
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
        """The Memory Artifact id mapped to ``key``, or None."""
        return self._read()["memories"].get(key)

    def set(self, key: str, artifact_id: str) -> None:
        """Map ``key`` to ``artifact_id`` (only after the Memory exists)."""
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


def _parse_memory_name(name: object, manifest: RuntimeManifest | None
                       ) -> tuple[str, int | None]:
    """``(artifact_id, revision or None for the current head)`` of a Memory name."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("memory", "name a Memory: ID, ID@REV, key:NAME or key:NAME@REV")
    rev: int | None = None
    if name.startswith("key:"):
        key = name[4:]
        artifact_id = manifest.get(key) if manifest is not None and key else None
        if artifact_id is None and "@" in key:
            base_key, _, suffix = key.rpartition("@")
            if base_key and suffix.isdigit():
                rev = _revision_of(name, suffix)
                key = base_key
                artifact_id = manifest.get(key) if manifest is not None else None
        if not key:
            raise InvalidInputError("memory", "key: needs a name, e.g. key:repo:/abs/path")
        if artifact_id is None:
            raise ArtifactNotFoundError(f"no Memory is mapped to key {key!r}")
    else:
        artifact_id = name
        if "@" in name:
            artifact_id, _, suffix = name.rpartition("@")
            rev = _revision_of(name, suffix)
        canonical.check_id(artifact_id, "memory")
    return artifact_id, rev


def memory_selector(name: object, manifest: RuntimeManifest | None
                    ) -> ArtifactRef | CurrentHead:
    """A Memory name as a search takes it, without reading the database: ``ID`` and
    ``key:NAME`` (the Memory ``manifest`` maps NAME to) -> :class:`CurrentHead`, read
    inside the search's own transaction (a write in between is never a race);
    ``ID@REV`` and ``key:NAME@REV`` -> that exact ArtifactRef (a search refuses it with
    CapabilityNotSupportedError unless it is the head). InvalidInputError (field
    ``memory``) for a malformed name; ArtifactNotFoundError for an unmapped key."""
    artifact_id, rev = _parse_memory_name(name, manifest)
    return CurrentHead(artifact_id) if rev is None else ArtifactRef(artifact_id, rev)


async def resolve_memory(
    service: MemoryService, name: object, manifest: RuntimeManifest | None
) -> ArtifactRef:
    """A Memory name to an ArtifactRef: ``ID`` -> its current head, ``ID@REV`` -> that
    exact Revision, ``key:NAME`` -> the head of the Memory ``manifest`` maps NAME to,
    ``key:NAME@REV`` -> that exact Revision of it (a key that itself ends in ``@DIGITS``
    is taken whole when it is mapped). InvalidInputError (field ``memory``) for a
    malformed name; ArtifactNotFoundError for an unknown Memory, key or Revision. A
    search takes :func:`memory_selector` instead (the head read in its transaction)."""
    artifact_id, rev = _parse_memory_name(name, manifest)
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
    manifest: RuntimeManifest | None,
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
    head). Without it, ``key`` names a mapped Memory to write, or maps the new Memory
    created for it; with neither a new Memory is created. ``entries``: dicts with
    ``text`` (str), ``kind`` (str, default ``fact``), ``reason`` (str or None) and
    ``revise`` (an entry_id of the base, whose current version is revised). Every entry
    cites ``sources``. InvalidInputError when an entry revises with no base Memory;
    ArtifactNotFoundError for an entry_id the base does not hold; the service's own
    errors (limits, secrets, conflicts) pass through. ``after`` is None when nothing
    was worth a new Memory; equal to ``base`` when nothing changed. ``settle`` wraps the
    write (the CLI passes one that rereads a COMMIT whose outcome is unknown)."""
    if memory is None and key is not None and manifest is not None and manifest.get(key):
        memory = f"key:{key}"
    base = await resolve_memory(service, memory, manifest) if memory else None
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
        return service.remember(base, sources=sources, entries=inputs, mode="append")

    after = await (settle(write) if settle is not None else write())
    if base is None and after is not None and key is not None and manifest is not None:
        manifest.set(key, after.artifact_id)
    return base, after
