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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from powercontext.core import canonical
from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
from powercontext.core.models import ArtifactRef, CurrentHead
from powercontext.plugins.registry import Registry, url_scheme
from powercontext.service import MemoryService

__all__ = ["RuntimeManifest", "data_dir", "default_db_url", "memory_selector", "open_service",
           "resolve_memory"]

ENV_DB = "POWERCONTEXT_DB"
ENV_HOME = "POWERCONTEXT_HOME"
ENV_EMBEDDING = "POWERCONTEXT_EMBEDDING"


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
) -> MemoryService:
    """A MemoryService on ``db`` (a path or URL; default :func:`default_db_url`).

    ``embedding`` names a registered embedding model (``deterministic``, ``local``,
    ``openai``; ``none`` for none). Default: ``$POWERCONTEXT_EMBEDDING``, else the model
    this database was last opened with (kept in its runtime manifest), else none. The
    model's profile is fixed in the database on first use; opening with another raises
    ProfileMismatchError on the first call. For a path, the parent directory is created.
    """
    registry = registry or Registry()
    url = str(db) if db is not None else default_db_url()
    if url_scheme(url) is None and url != ":memory:":
        Path(url).expanduser().parent.mkdir(parents=True, exist_ok=True)
    name = embedding if embedding is not None else os.environ.get(ENV_EMBEDDING) or None
    manifest = RuntimeManifest.for_db(url)
    if name is None:
        # the model this database was last opened with, so vectors stay complete
        remembered = manifest.get_state("embedding")
        if isinstance(remembered, dict) and remembered.get("name"):
            name = remembered["name"]
            embedding_options = embedding_options or remembered.get("options") or {}
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
    if name is not None and manifest.get_state("embedding") is None:
        # only the first model used is remembered: a later mismatch (refused by the
        # database's stored profile) must not change what plain commands use
        manifest.set_state("embedding", {"name": name, "options": embedding_options or {}})
    backend = registry.backend_for_url(url, profile=model.profile if model else None)
    return MemoryService(backend, embedding_model=model)


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


def memory_selector(name: object, manifest: RuntimeManifest | None
                    ) -> ArtifactRef | CurrentHead:
    """A Memory name as a search takes it, without reading the database: ``ID`` and
    ``key:NAME`` (the Memory ``manifest`` maps NAME to) -> :class:`CurrentHead`, read
    inside the search's own transaction (a write in between is never a race);
    ``ID@REV`` -> that exact ArtifactRef (a search refuses it with
    CapabilityNotSupportedError unless it is the head). InvalidInputError for a
    malformed name; ArtifactNotFoundError for an unmapped key."""
    if not isinstance(name, str) or not name:
        raise InvalidInputError("memory", "name a Memory: ID, ID@REV or key:NAME")
    if name.startswith("key:"):
        artifact_id = manifest.get(name[4:]) if manifest is not None else None
        if artifact_id is None:
            raise ArtifactNotFoundError(f"no Memory is mapped to key {name[4:]!r}")
        return CurrentHead(artifact_id)
    if "@" in name:
        artifact_id, _, rev = name.rpartition("@")
        if not rev.isdigit() or int(rev) < 1:
            raise InvalidInputError("memory", f"bad Revision in {name!r}")
        return ArtifactRef(artifact_id, int(rev))
    return CurrentHead(name)


async def resolve_memory(
    service: MemoryService, name: object, manifest: RuntimeManifest | None
) -> ArtifactRef:
    """A Memory name to an ArtifactRef: ``ID`` -> its current head, ``ID@REV`` -> that
    exact Revision, ``key:NAME`` -> the head of the Memory ``manifest`` maps NAME to.
    InvalidInputError for a malformed name; ArtifactNotFoundError for an unknown one.
    A search takes :func:`memory_selector` instead (the head read in its transaction)."""
    selector = memory_selector(name, manifest)
    if isinstance(selector, CurrentHead):
        return await service.head(selector.artifact_id)
    return selector
