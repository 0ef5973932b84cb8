"""The Memory family's reads over a database backend (Memory RFC, "Search and reads",
"Handoff citation") and its business keys (ARCHITECTURE.md, Decisions: "Keys live in
the database"): :class:`MemoryStore`, the Memory backend's read collaborator (search is
:class:`~powercontext.adapters.memory_search.MemorySearch`).

Every read runs in one read transaction on the worker thread and returns validated
values only: Revisions come from the Revision cache
(:mod:`powercontext.adapters.revision_cache`, hash and canonical bytes checked on a
miss), entry versions are checked against the manifest by
:func:`powercontext.core.verify.check_version_matches`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from powercontext.adapters import revision_walk
from powercontext.adapters.manifest_log import LazyManifest
from powercontext.adapters.memory_tables import MemoryTables
from powercontext.adapters.revision_cache import MEMORY_FAMILY
from powercontext.core import canonical, keys, verify
from powercontext.core.errors import (
    ArtifactNotFoundError,
    IntegrityError,
    InvalidCitationError,
    InvalidInputError,
    WritesPausedError,
)
from powercontext.core.models import (
    ArtifactRef,
    MemoryEntryVersion,
    MemoryHit,
    MemoryManifestEntry,
    MemoryRevision,
    MemoryRevisionChanges,
)
from powercontext.core.ranking import ManifestItems

__all__ = ["MemoryStore"]

T = TypeVar("T")


class MemoryStore:
    """``head``, ``load_revision``, ``load_entry_versions``, ``changes``, ``expand`` and
    the business-key calls ``memory_key``, ``memory_keys``, ``import_memory_keys``,
    ``remove_memory_key`` of a Memory backend, each with its synchronous half.
    ``host``: the storage (``_run``, ``_in_tx``, ``_meta_get_sync``); ``tables``: the
    Memory tables (rows, Revision cache, manifest log)."""

    def __init__(self, host: Any, tables: MemoryTables) -> None:
        self._host = host
        self._tables = tables
        self._rows = tables.rows

    def _in_tx(self, write: bool, fn: Callable[..., T], *args: Any) -> Awaitable[T]:
        """``fn(*args)`` in one transaction on the worker thread."""
        return self._host._run(self._host._in_tx, write, fn, *args)  # type: ignore[no-any-return]

    def memory_head_sync(self, artifact_id: str) -> int | None:
        """The head revision of ``artifact_id`` when it is a Memory (an Artifact of
        another family on the same database, a Topic, is not one), else None."""
        head = self._rows.head(artifact_id)
        if head is None:
            return None
        if self._tables.cached(artifact_id, head) is not None:
            # only validated Memory Revisions are cached: no need to read the row (with
            # its content: a checkpoint of a 100k-entry manifest is megabytes)
            return head
        rows = self._rows.revision_rows(artifact_id, head - 1, head)
        return head if rows and rows[0].family == MEMORY_FAMILY else None

    def require_head_sync(self, ref: ArtifactRef) -> int:
        head = self._rows.head(ref.artifact_id)
        if head is None:
            raise ArtifactNotFoundError(f"no Memory Artifact {ref.artifact_id!r}")
        return head

    def load_revision_sync(self, ref: ArtifactRef) -> MemoryRevision:
        head = self.require_head_sync(ref)
        if not 1 <= ref.revision <= head:
            raise ArtifactNotFoundError(
                f"Memory {ref.artifact_id!r} has Revisions 1..{head}; {ref.revision} is not one"
            )
        return self._tables.parsed(ref.artifact_id, ref.revision).revision

    async def head(self, artifact_id: str) -> ArtifactRef | None:
        """The current head ArtifactRef of a Memory, or None when it does not exist."""
        rev = await self._in_tx(False, self.memory_head_sync, artifact_id)
        return None if rev is None else ArtifactRef(artifact_id, rev)

    async def load_revision(self, ref: ArtifactRef) -> MemoryRevision:
        """The validated Revision (hash and canonical bytes checked). ArtifactNotFoundError."""
        return await self._in_tx(False, self.load_revision_sync, ref)

    def versions_checked_sync(
        self, manifest: Mapping[str, MemoryManifestEntry], entry_ids: Sequence[str]
    ) -> dict[str, MemoryEntryVersion]:
        wanted = {}
        for entry_id in entry_ids:
            item = manifest.get(entry_id)
            if item is None:
                raise ArtifactNotFoundError(f"no entry {entry_id!r} in this Revision")
            wanted[item.entry_version_id] = item
        found = {v.entry_version_id: v for v in self._rows.entry_versions(list(wanted))}
        out: dict[str, MemoryEntryVersion] = {}
        for version_id, item in wanted.items():
            v = found.get(version_id)
            if v is None:
                raise IntegrityError(f"entry version {version_id!r} of the manifest is missing")
            verify.check_version_matches(v, item)
            out[item.entry_id] = v
        return out

    def _load_entry_versions_sync(
        self, ref: ArtifactRef, entry_ids: Sequence[str] | None
    ) -> dict[str, MemoryEntryVersion]:
        rev = self.load_revision_sync(ref)
        manifest = self._tables.parsed(ref.artifact_id, ref.revision).by_entry
        ids = [e.entry_id for e in rev.content.manifest.entries] if entry_ids is None else entry_ids
        return self.versions_checked_sync(manifest, ids)

    async def load_entry_versions(
        self, ref: ArtifactRef, entry_ids: Sequence[str] | None = None
    ) -> dict[str, MemoryEntryVersion]:
        """Versions the manifest of ``ref`` points to, by entry_id, each hash-checked."""
        return await self._in_tx(False, self._load_entry_versions_sync, ref, entry_ids)

    def _changes_sync(
        self, memory: ArtifactRef, since_revision: int | None
    ) -> tuple[MemoryRevisionChanges, ...]:
        self.load_revision_sync(memory)  # target exists and is at most the head
        if since_revision is None:
            after = memory.revision - 1
        else:
            if isinstance(since_revision, bool) or not isinstance(since_revision, int):
                raise InvalidInputError("since_revision", "must be an integer")
            if since_revision < 0:
                raise InvalidInputError("since_revision", "must be 0 or a positive Revision")
            if since_revision > memory.revision:
                raise InvalidInputError(
                    "since_revision",
                    f"{since_revision} is after the target Revision {memory.revision}",
                )
            after = since_revision
        # the changes alone (issue 14: decoding ten 100k-entry Revisions as models peaked
        # RSS): from the cache, else a walk over the stored rows as canonical bytes, else
        # (rows it does not read) full Revisions; every Revision on the way is validated
        # and none is cached, only its changes
        cache = self._tables.revisions
        walked = cache.known_changes(memory.artifact_id, after, memory.revision)
        if walked is None:
            walked = revision_walk.walk_changes(memory.artifact_id, after, memory.revision,
                                                self._rows.revision_rows, cache.get)
            if walked is None:
                walked = cache.changes(memory.artifact_id, after, memory.revision,
                                       self._rows.revision_rows,
                                       self._tables.log_decoder())
            cache.remember_changes(walked)
        return tuple(MemoryRevisionChanges(ref, changes) for ref, changes in walked)

    async def changes(
        self, memory: ArtifactRef, since_revision: int | None = None
    ) -> tuple[MemoryRevisionChanges, ...]:
        """Memory RFC, "changes()": per-Revision changes after ``since_revision``
        (exclusive; 0 = the whole history; None = the target Revision only), ascending.
        ArtifactNotFoundError for an unknown Artifact or Revision; ValueError for a
        negative or too-large ``since_revision``."""
        return await self._in_tx(False, self._changes_sync, memory, since_revision)

    def cited_items_sync(self, ref: ArtifactRef) -> ManifestItems:
        """The manifest items of the cited Revision ``ref``: the cached Revision's, else
        the manifest log's when it holds the Revision (read per entry), else the
        Revision decoded whole. InvalidCitationError when ``ref`` names no Revision."""
        try:
            head = self.require_head_sync(ref)
            if not 1 <= ref.revision <= head:
                raise ArtifactNotFoundError(
                    f"Memory {ref.artifact_id!r} has Revisions 1..{head}; {ref.revision} is "
                    "not one")
            cached = self._tables.cached(ref.artifact_id, ref.revision)
            if cached is not None:
                return cached.by_entry
            log = self._tables.log
            if log is not None and log.covers(ref.artifact_id, ref.revision):
                return LazyManifest(log, ref.artifact_id, ref.revision)
            return self._tables.parsed(ref.artifact_id, ref.revision).by_entry
        except ArtifactNotFoundError as exc:
            raise InvalidCitationError(f"citation names no stored Revision: {exc}") from exc

    def _expand_sync(self, hits: Sequence[MemoryHit]) -> tuple[MemoryEntryVersion, ...]:
        out = []
        manifests: dict[ArtifactRef, ManifestItems] = {}
        for hit in hits:
            if hit.memory_ref not in manifests:
                manifests[hit.memory_ref] = self.cited_items_sync(hit.memory_ref)
            manifest = manifests[hit.memory_ref]
            if isinstance(manifest, LazyManifest):
                manifest.prefetch(h.entry_id for h in hits if h.memory_ref == hit.memory_ref)
            item = manifest.get(hit.entry_id)
            if item is None or item.entry_version_id != hit.entry_version_id:
                raise InvalidCitationError(
                    f"Revision {hit.memory_ref.revision} of {hit.memory_ref.artifact_id!r} "
                    f"does not hold entry {hit.entry_id!r} at version {hit.entry_version_id!r}"
                )
            found = self._rows.entry_versions([hit.entry_version_id])
            if not found:
                raise InvalidCitationError(f"entry version {hit.entry_version_id!r} is missing")
            v = found[0]
            try:
                verify.check_version_matches(v, item)
            except IntegrityError as exc:
                raise InvalidCitationError(str(exc)) from exc
            if v.memory_artifact_id != hit.memory_ref.artifact_id:
                raise InvalidCitationError("entry version belongs to another Memory")
            out.append(v)
        return tuple(out)

    async def expand(self, hits: Sequence[MemoryHit]) -> tuple[MemoryEntryVersion, ...]:
        """Memory RFC, "expand()": the exact versions the anchors name, after checking
        id, version id, content hash and canonical bytes. InvalidCitationError."""
        return await self._in_tx(False, self._expand_sync, hits)

    # -- business keys ------------------------------------------------------------

    async def memory_key(self, key: str) -> str | None:
        """The Memory Artifact id the business ``key`` names, or None (ARCHITECTURE.md,
        Decisions: "Keys live in the database"). ``key`` is compared in its NFC form
        (:func:`powercontext.core.keys.normalize_key`; InvalidInputError, field ``key``).
        Every process and host that opens the database sees the same keys."""
        key = keys.normalize_key(key)
        return await self._in_tx(False, self._rows.key_owner, key)

    async def memory_keys(self) -> dict[str, str]:
        """Every business key and the Memory Artifact id it names, sorted by key."""
        rows = await self._in_tx(False, self._rows.all_keys)
        return dict(rows)

    async def import_memory_keys(self, mapping: Mapping[str, str]) -> dict[str, str]:
        """Store the keys of ``mapping`` (key -> Memory Artifact id) that are not stored
        yet and name an existing Memory, in one transaction; a stored key keeps its
        Memory. Returns the keys stored by this call. InvalidInputError (field ``key`` or
        ``artifact_id``) for a malformed pair, SecretDetectedError (field ``key``) for a
        key holding a secret (the pure rules of :mod:`powercontext.core.secrets`: the
        first command on a database imports keys, and a prompt hook loads no detector),
        before anything is stored."""
        from powercontext.core.secrets import check_text  # writes only

        pairs = []
        for key, artifact_id in mapping.items():
            canonical.check_id(artifact_id, "artifact_id")
            pairs.append((keys.normalize_key(key), artifact_id))
            check_text("key", pairs[-1][0])  # the pure rules: no detector is loaded
        if not pairs:
            return {}
        return await self._in_tx(True, self._import_memory_keys_sync, pairs)

    async def remove_memory_key(self, key: str, artifact_id: str) -> bool:
        """Delete the business ``key`` when it names ``artifact_id`` (one transaction);
        True when it did, False when the key names no Memory or another one. The Memory
        and its history are untouched. InvalidInputError for a malformed key or id;
        WritesPausedError while an offline rebuild runs."""
        key = keys.normalize_key(key)
        canonical.check_id(artifact_id, "artifact_id")
        return await self._in_tx(True, self._remove_memory_key_sync, key, artifact_id)

    def _remove_memory_key_sync(self, key: str, artifact_id: str) -> bool:
        if self._host._meta_get_sync("writes_paused"):
            raise WritesPausedError("writes are paused by an offline rebuild; retry later")
        return self._rows.delete_key(key, artifact_id)

    def _import_memory_keys_sync(self, pairs: list[tuple[str, str]]) -> dict[str, str]:
        if self._host._meta_get_sync("writes_paused"):
            raise WritesPausedError("writes are paused by an offline rebuild; retry later")
        stored: dict[str, str] = {}
        for key, artifact_id in pairs:
            if key in stored or self._rows.key_owner(key) is not None:
                continue
            if self.memory_head_sync(artifact_id) is None:
                continue  # the Memory is not in this database
            self._rows.insert_key(key, artifact_id)
            stored[key] = artifact_id
        return stored
