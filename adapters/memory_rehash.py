"""The hash upgrade of a Memory database and the write pause every offline operation
takes (Memory RFC, "Normalization, hashing, and the search analyzer"; "Vector integrity
and offline rebuilds"): :class:`MemoryRehash`, one of the Memory backend's upkeep collaborators.

A database written before the spec's Artifact content hash records
``hash_format = LEGACY_HASH_FORMAT`` (marked at its first open by this version) and
opens with UpgradeRequiredError until ``rehash`` has rewritten its stored hashes; the
one update a Revision row ever gets.
"""

from __future__ import annotations

from typing import Any

from powercontext.adapters import manifest_log, revision_codec
from powercontext.adapters.memory_completeness import VectorCompleteness
from powercontext.adapters.memory_deployment import (
    HASH_FORMAT_KEY,
    REHASH_COMMAND,
    MemoryDeployment,
)
from powercontext.adapters.memory_tables import MemoryTables
from powercontext.adapters.storage import RevisionRow
from powercontext.core import canonical
from powercontext.core.errors import (
    IntegrityError,
    RevisionConflictError,
    WritesPausedError,
)
from powercontext.core.manifest import ManifestView, splice
from powercontext.core.manifest import content_bytes as manifest_content_bytes
from powercontext.core.manifest import view as manifest_view
from powercontext.core.models import MemoryContent, RehashReport

__all__ = ["HASH_FORMAT_KEY", "REHASH_COMMAND", "MemoryRehash"]


class MemoryRehash:
    """``rehash`` and ``resume_writes``, and the write pause every offline operation
    takes. ``host``: the storage (``_run``, ``_in_tx``, the metadata table,
    ``long_transactions``); ``tables``: the Memory tables; ``deployment``: its
    legacy-hash state; ``completeness``: the vector-completeness cache and the
    projection generation."""

    def __init__(self, host: Any, tables: MemoryTables, deployment: MemoryDeployment,
                 completeness: VectorCompleteness) -> None:
        self._host = host
        self._tables = tables
        self._deployment = deployment
        self._completeness = completeness

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
        host, deployment = self._host, self._deployment
        deployment.allow_legacy = host.long_transactions = True
        try:
            await host._run(host._in_tx, True, self.pause_sync)
            try:
                report = await host._run(host._in_tx, True, self._rehash_sync)
            finally:
                await host._run(host._in_tx, True, host._meta_set_sync, "writes_paused", None)
        finally:
            deployment.allow_legacy = host.long_transactions = False
        deployment.legacy_hashes = False
        self._tables.revisions.clear()
        self._completeness.clear()
        return report

    def _rehash_sync(self) -> RehashReport:
        host, rows = self._host, self._tables.rows
        report = RehashReport()
        if host._meta_get_sync(HASH_FORMAT_KEY) == canonical.HASH_FORMAT:
            report.already = True
            return report
        for artifact_id, head in rows.all_heads():
            base: ManifestView | None = None
            for row in rows.revision_rows(artifact_id, 0, head):
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
                    if not rows.set_revision_hash(
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
        host._meta_set_sync(HASH_FORMAT_KEY, canonical.HASH_FORMAT)
        self._completeness.bump_generation()
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
        log = self._tables.log
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

    def pause_sync(self) -> None:
        """Pause writers (``writes_paused``), in the caller's write transaction;
        WritesPausedError when they are paused already (another rebuild runs, or one
        crashed)."""
        host = self._host
        if host._meta_get_sync("writes_paused"):
            raise WritesPausedError(
                "writes are already paused: another rebuild is running "
                "(or one crashed; `powercontext memory rebuild --resume`)"
            )
        host._meta_set_sync("writes_paused", "rebuild")

    async def resume_writes(self) -> None:
        """Clear a pause left by a rebuild (or rehash) that crashed; works on a database
        that still needs ``rehash()`` (it reads no Revision)."""
        host = self._host
        self._deployment.allow_legacy = True
        try:
            await host._run(host._in_tx, True, host._meta_set_sync, "writes_paused", None)
        finally:
            self._deployment.allow_legacy = False
