"""The runtime manifest: a small JSON file of integration state beside a database (the
remembered embedding model, the last synced commit). Business keys live in the database
(ARCHITECTURE.md, Decisions: "Keys live in the database"); the manifest's ``memories``
mapping of earlier releases is imported once (:func:`import_manifest_keys`)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from powercontext.core import canonical
from powercontext.core.errors import (
    InvalidInputError,
    RevisionConflictError,
    SecretDetectedError,
    WritesPausedError,
)
from powercontext.database_path import sqlite_path
from powercontext.memory_names import memory_key
from powercontext.paths import data_dir

if TYPE_CHECKING:
    from powercontext.service import MemoryService

__all__ = ["RuntimeManifest", "import_manifest_keys"]

log = logging.getLogger("powercontext.runtime")


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
            import tempfile  # writes only: a read (the prompt hook) never needs it

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
            stored_key = memory_key(key)
            from powercontext.core.secrets import check_text  # the pure rules: light

            check_text("key", stored_key)
            pairs.setdefault(stored_key, artifact_id)
        except SecretDetectedError as exc:  # never echoed, even to the log
            log.warning("a runtime manifest key is not imported: %s", exc)
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
