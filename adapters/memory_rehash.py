"""The hash upgrade of a Memory database and the write pause every offline operation
takes (Memory RFC, "Normalization, hashing, and the search analyzer"; "Vector integrity
and offline rebuilds"): :class:`MemoryRehashMixin`, a base of
:class:`~powercontext.adapters.memory_rebuild.MemoryRebuildMixin`.

A database written before the spec's Artifact content hash records
``hash_format = LEGACY_HASH_FORMAT`` (marked at its first open by this version) and
opens with UpgradeRequiredError until ``rehash`` has rewritten its stored hashes; the
one update a Revision row ever gets.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from powercontext.adapters import manifest_log, revision_codec
from powercontext.adapters.revision_cache import RevisionCache
from powercontext.adapters.storage import RevisionRow, SourceStore
from powercontext.core import canonical
from powercontext.core.errors import (
    CapabilityNotSupportedError,
    IntegrityError,
    RevisionConflictError,
    WritesPausedError,
)
from powercontext.core.manifest import ManifestView, splice
from powercontext.core.manifest import content_bytes as manifest_content_bytes
from powercontext.core.manifest import view as manifest_view
from powercontext.core.models import MemoryCapabilities, MemoryContent, RehashReport

__all__ = ["HASH_FORMAT_KEY", "REHASH_COMMAND", "MemoryRehashMixin"]

#: Deployment metadata key recording the formula of the stored Artifact content hashes
#: (``canonical.HASH_FORMAT`` or ``canonical.LEGACY_HASH_FORMAT``).
HASH_FORMAT_KEY = "hash_format"
REHASH_COMMAND = "powercontext memory rebuild --rehash"


class MemoryRehashMixin(SourceStore[MemoryCapabilities]):
    """``rehash`` and ``resume_writes``, the write pause and the projection generation
    of a Memory backend. The host class (DatabaseMemoryBackend) provides what is listed
    under ``TYPE_CHECKING``."""

    if TYPE_CHECKING:  # provided by DatabaseMemoryBackend
        _legacy_hashes: bool
        _allow_legacy: bool
        _revisions: RevisionCache
        _complete_cache: dict[tuple[str, int, str], bool]
        _cache_lock: threading.Lock
        _manifest_log: manifest_log.ManifestLog | None

        def _revision_rows_sync(
            self, artifact_id: str, after: int, upto: int) -> list[RevisionRow]: ...
        def _set_revision_hash_sync(
            self, artifact_id: str, revision: int, old_hash: str, new_hash: str) -> bool: ...
        def _all_heads_sync(self) -> list[tuple[str, int]]: ...

    def _mark_hash_format_sync(self) -> str:
        stored = self._meta_get_sync(HASH_FORMAT_KEY)
        if stored is None:
            try:
                existing = bool(self._all_heads_sync())
            except CapabilityNotSupportedError:
                existing = False  # an adapter without the listing has no old databases
            stored = canonical.LEGACY_HASH_FORMAT if existing else canonical.HASH_FORMAT
            self._meta_set_sync(HASH_FORMAT_KEY, stored)
        return stored

    async def rehash(self) -> RehashReport:
        """Upgrade a database written with the pre-spec Artifact content hash (Memory RFC,
        "Normalization, hashing, and the search analyzer"; ``memory rebuild --rehash``).

        Such a database opens with :class:`UpgradeRequiredError` naming this command, so
        no Revision is ever reported corrupt or silently re-hashed. This call pauses
        writers (``WritesPausedError`` for them and for a second rebuild), then in one
        write transaction recomputes each Memory Revision's canonical MemoryContent bytes
        (decoding stored deltas), and where the stored hash equals the legacy formula
        SHA-256("powercontext:artifact-content:v1\\0" + bytes) rewrites only the stored
        ``content_hash`` to SHA-256(bytes); content, lineage and entry versions are never
        touched. A Revision matching neither formula is reported in ``corrupt`` and left
        as it was. The marker ``hash_format`` is set to the spec's format in the same
        transaction, and writers are resumed. Vector projections are not rewritten: their
        embedding hashes used a prefix too, so they no longer verify and vector search
        reports the projection incomplete until ``rebuild`` with the model refills it.
        Idempotent: on a database already in the spec's format it returns
        ``RehashReport(already=True)``."""
        self._allow_legacy = self.long_transactions = True
        try:
            await self._run(self._in_tx, True, self._pause_sync)
            try:
                report = await self._run(self._in_tx, True, self._rehash_sync)
            finally:
                await self._run(self._in_tx, True, self._meta_set_sync, "writes_paused", None)
        finally:
            self._allow_legacy = self.long_transactions = False
        self._legacy_hashes = False
        self._revisions.clear()
        with self._cache_lock:
            self._complete_cache.clear()
        return report

    def _rehash_sync(self) -> RehashReport:
        report = RehashReport()
        if self._meta_get_sync(HASH_FORMAT_KEY) == canonical.HASH_FORMAT:
            report.already = True
            return report
        for artifact_id, head in self._all_heads_sync():
            base: ManifestView | None = None
            for row in self._revision_rows_sync(artifact_id, 0, head):
                try:
                    body, base = self._canonical_body(row, base)
                except (IntegrityError, ValueError, KeyError, TypeError) as exc:
                    report.corrupt.append((artifact_id, row.revision, str(exc)))
                    base = None
                    continue
                new = canonical.artifact_content_hash(body)
                if row.content_hash == new:
                    report.current += 1
                elif row.content_hash == canonical.legacy_artifact_content_hash(body):
                    if not self._set_revision_hash_sync(
                        artifact_id, row.revision, row.content_hash, new
                    ):
                        raise RevisionConflictError(
                            f"Revision {row.revision} of {artifact_id!r} changed during rehash"
                        )
                    report.rewritten += 1
                else:
                    report.corrupt.append((
                        artifact_id, row.revision,
                        "stored content matches its content hash under neither formula",
                    ))
        self._meta_set_sync(HASH_FORMAT_KEY, canonical.HASH_FORMAT)
        self._bump_generation_sync()
        return report

    def _canonical_body(
        self, row: RevisionRow, base: ManifestView | None
    ) -> tuple[bytes, ManifestView]:
        """The canonical MemoryContent bytes a stored row holds, and its manifest view
        (a manifest-log row: its changes, and its manifest from the log)."""
        if row.encoding == revision_codec.LOG:
            return self._log_body(row, base)
        if revision_codec.is_full(row.encoding):
            body = revision_codec.decode_full(row.encoding, row.content)
            content = canonical.parse_content(body)
            if canonical.content_bytes(content) != body:
                raise IntegrityError("content is not canonical")
            return body, manifest_view(content.manifest)
        if base is None:
            raise IntegrityError("a delta without its base")
        items, changes = revision_codec.decode_delta(row.content)
        view = splice(base, items)
        return canonical.content_bytes(MemoryContent(view.manifest, changes), view.joined), view

    def _log_body(self, row: RevisionRow, base: ManifestView | None
                  ) -> tuple[bytes, ManifestView]:
        """:meth:`_canonical_body` of a manifest-log row: the base's manifest with the
        items set at this Revision, or, without a base, the log from its baseline."""
        log = self._manifest_log
        if log is None:
            raise IntegrityError("a manifest-log Revision on a backend without the log")
        changes = revision_codec.decode_changes(row.content)
        aid, r = row.artifact_id, row.revision
        if base is not None:
            view = splice(base, manifest_log.latest(log.changed(aid, r - 1, r)), memoize=False)
        else:
            low = log.baseline_upto(aid, r)
            if low is None:
                raise IntegrityError("a manifest-log Revision without its baseline")
            view = manifest_log.decode_view(log.range(aid, low, r))
        return manifest_content_bytes(MemoryContent(view.manifest, changes), view), view

    def _pause_sync(self) -> None:
        if self._meta_get_sync("writes_paused"):
            raise WritesPausedError(
                "writes are already paused: another rebuild is running "
                "(or one crashed; `powercontext memory rebuild --resume`)"
            )
        self._meta_set_sync("writes_paused", "rebuild")

    async def resume_writes(self) -> None:
        """Clear a pause left by a rebuild (or rehash) that crashed; works on a database
        that still needs ``rehash()`` (it reads no Revision)."""
        self._allow_legacy = True
        try:
            await self._run(self._in_tx, True, self._meta_set_sync, "writes_paused", None)
        finally:
            self._allow_legacy = False

    def _bump_generation_sync(self) -> None:
        current = int(self._meta_get_sync("projection_generation") or "0")
        self._meta_set_sync("projection_generation", str(current + 1))
