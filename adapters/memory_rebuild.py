"""The offline rebuild of a Memory backend's projections and its inventory (Memory
RFC, "Vector integrity and offline rebuilds"; "Normalization, hashing, and the search
analyzer"): :class:`MemoryRebuild`, one of the Memory backend's upkeep collaborators, through which
every SQL backend is a :class:`powercontext.ports.MemoryRebuild` and a
:class:`powercontext.ports.MemoryInventory` (the hash upgrade ``rehash`` is
:class:`~powercontext.adapters.memory_rehash.MemoryRehash`).

Everything here runs from the authoritative tables (Revisions, entry versions) and
rewrites only projections (head rows, FTS, vectors) and deployment metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from powercontext.adapters.memory_completeness import VectorCompleteness
from powercontext.adapters.memory_deployment import MemoryDeployment, resolve_analyzer
from powercontext.adapters.memory_rehash import MemoryRehash
from powercontext.adapters.memory_rows import VectorRow
from powercontext.adapters.memory_tables import MemoryTables
from powercontext.core import canonical
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import (
    CapabilityNotSupportedError,
    IntegrityError,
    InvalidInputError,
    ProfileMismatchError,
    RevisionConflictError,
)
from powercontext.core.models import ArtifactRef, EmbeddingProfile, RebuildReport
from powercontext.core.plan import ProjectionRow
from powercontext.core.vectors import check_vector, prepare_vector
from powercontext.ports.engine import MemorySearchProjection

if TYPE_CHECKING:
    from powercontext.adapters.memory_reads import MemoryStore

__all__ = ["MemoryRebuild", "resolve_analyzer"]


class MemoryRebuild:
    """``rebuild``, ``inventory`` and ``allow_analyzer_migration`` of a Memory backend.
    ``host``: the storage (``_run``, ``_in_tx``, the metadata table, the Source
    journal, ``_db_caps``, ``long_transactions``); ``tables``: the Memory tables;
    ``projection``: the engine's search projection, which it rewrites; ``store``: the
    Memory store (checked entry versions); ``deployment``, ``completeness``,
    ``rehash``: the analyzer and profile, the vector-completeness cache, the write
    pause."""

    def __init__(self, host: Any, tables: MemoryTables, projection: MemorySearchProjection,
                 store: MemoryStore, deployment: MemoryDeployment,
                 completeness: VectorCompleteness,
                 rehash: MemoryRehash) -> None:
        self._host = host
        self._tables = tables
        self._projection = projection
        self._store = store
        self._deployment = deployment
        self._completeness = completeness
        self._rehash = rehash

    def allow_analyzer_migration(self) -> None:
        """Let the next open accept a database built by another or an unknown analyzer
        (full-text search stays off until :meth:`rebuild` has migrated it). Only for the
        rebuild command, which must open such a database to migrate it."""
        self._deployment.analyzer_migration = True

    async def rebuild(
        self,
        model: Any = None,
        *,
        new_profile: EmbeddingProfile | None = None,
        analyzer: str | Analyzer | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        batch_size: int = 64,
    ) -> RebuildReport:
        """Rebuild every Memory's head, FTS and vector projection from the authoritative
        tables (Memory RFC, "Vector integrity and offline rebuilds").

        Writers are paused for the whole run (``WritesPausedError`` for them; a second
        rebuild is refused the same way) and resumed at the end, even on failure.
        Each Memory's active entries are re-validated (manifest membership, content hash,
        canonical bytes) and projected in one transaction per Memory. ``model`` (an
        EmbeddingModel whose profile matches, else ProfileMismatchError) embeds every
        active entry again. A vector is never removed because it cannot be refilled:
        without a model, when the model raises (anything: it is then unavailable for that
        batch) or when one of its vectors is refused (``prepare_vector``), the stored
        vector is kept if it still matches the entry and profile; every entry left
        without one is listed in ``report.missing`` and the rebuild goes on.
        ``new_profile`` migrates first and needs ``model`` of that profile
        (InvalidInputError otherwise; CapabilityNotSupportedError, with nothing changed,
        when the model fails a probe): the vector projection is dropped and recreated
        for that profile, which is stored as the deployment's. ``progress`` is called as
        ``progress(done, total, artifact_id)``.
        ``analyzer`` (a version name; InvalidInputError for an unknown one) migrates the
        full-text projection to that analyzer (Memory RFC, "Normalization, hashing, and
        the search analyzer"): every head row is re-analyzed and re-indexed, and the
        version is recorded once all are done (until then the database records no known
        version, so a crashed migration refuses to open until a rebuild completes).
        Without it a database built by an unknown analyzer migrates to the backend's
        choice or the default.
        """
        if new_profile is not None and (model is None or model.profile != new_profile):
            raise InvalidInputError(
                "model", "a migration needs the embedding model of the new profile "
                "(it refills every vector)"
            )
        target = resolve_analyzer(analyzer)
        host, deployment = self._host, self._deployment
        run, in_tx = host._run, host._in_tx
        if not host._opened:
            deployment.analyzer_migration = True
        await run(in_tx, True, self._rehash.pause_sync)
        host.long_transactions = True  # whole-database transactions follow
        try:
            await run(in_tx, True, self._migrate_analyzer_sync, target)
            if new_profile is not None:
                await self._probe_model(model, new_profile)  # before any vector is dropped
                await run(in_tx, True, self._migrate_sync, new_profile)
            profile = deployment.profile
            if model is not None and (profile is None or model.profile != profile):
                raise ProfileMismatchError(
                    "the embedding model's profile differs from the database's; "
                    "migrate with a new profile first"
                )
            heads = await run(in_tx, False, self._tables.rows.all_heads)
            report = RebuildReport()
            for done, (artifact_id, revision) in enumerate(heads, start=1):
                try:
                    rows = await run(
                        in_tx, False, self._rebuild_rows_sync,
                        ArtifactRef(artifact_id, revision),
                    )
                except IntegrityError as exc:
                    # authoritative data of this Memory fails its checks: report it, leave
                    # its projection alone, and go on with the others
                    report.corrupt.append((artifact_id, str(exc)))
                    if progress is not None:
                        progress(done, len(heads), artifact_id)
                    continue

                vectors: list[VectorRow | None] = [None] * len(rows)
                if profile is not None and host._db_caps and host._db_caps.vector:
                    vectors = await self._rebuild_vectors(
                        ArtifactRef(artifact_id, revision), rows, model, profile, batch_size,
                        report,
                    )
                await run(
                    in_tx,
                    True,
                    self._write_rebuild_sync,
                    ArtifactRef(artifact_id, revision),
                    rows,
                    vectors,
                )
                report.memories += 1
                report.entries += len(rows)
                report.vectors += sum(1 for v in vectors if v is not None)
                if progress is not None:
                    progress(done, len(heads), artifact_id)
            if profile is not None and host._db_caps and host._db_caps.vector:
                for artifact_id, revision in heads:
                    ok = await run(
                        in_tx, False, self._completeness.complete, artifact_id, revision
                    )
                    if not ok:
                        report.incomplete.append(artifact_id)
            await run(in_tx, True, self._mark_rebuilt_sync)
            report.analyzer = deployment.db_analyzer.version
            return report
        finally:
            deployment.analyzer_migration = host.long_transactions = False
            await run(in_tx, True, host._meta_set_sync, "writes_paused", None)

    @staticmethod
    async def _probe_model(model: Any, profile: EmbeddingProfile) -> None:
        try:
            (raw,) = (await model.embed(("powercontext migration probe",))).vectors
            prepare_vector(raw, profile)
        except Exception as exc:
            raise CapabilityNotSupportedError(
                f"the new embedding model is unavailable ({type(exc).__name__}: {exc}); "
                "nothing was migrated"
            ) from exc

    async def _rebuild_vectors(
        self,
        ref: ArtifactRef,
        rows: list[ProjectionRow],
        model: Any,
        profile: EmbeddingProfile,
        batch_size: int,
        report: RebuildReport,
    ) -> list[VectorRow | None]:
        """A vector per row: a fresh one from ``model``; else (no model, the model
        failed, the vector was refused) the stored one when it still matches the
        profile and the entry; else None, reported in ``report.missing``. A vector is
        never dropped because it could not be refilled (Memory RFC, "Vector integrity
        and offline rebuilds")."""
        out: list[VectorRow | None] = [None] * len(rows)
        why: dict[int, str] = {}
        if model is None:
            why = dict.fromkeys(range(len(rows)), "no embedding model was given")
        for start in range(0, len(rows) if model is not None else 0, batch_size):
            chunk = rows[start : start + batch_size]
            try:
                raw = tuple((await model.embed(tuple(r.text for r in chunk))).vectors)
                if len(raw) != len(chunk):
                    raise InvalidInputError(
                        "vectors", f"{len(raw)} vectors for {len(chunk)} texts")
            except Exception as exc:  # any model failure: the model is unavailable
                for i in range(start, start + len(chunk)):
                    why[i] = f"the embedding model failed: {type(exc).__name__}: {exc}"
                continue
            for i, (r, vec) in enumerate(zip(chunk, raw, strict=True), start=start):
                try:
                    good = prepare_vector(vec, profile)
                except InvalidInputError as exc:
                    why[i] = f"the embedding model returned a refused vector: {exc}"
                    continue
                out[i] = VectorRow(
                    canonical.embedding_content_hash(profile, r.entry_content_hash), good
                )
        if why:
            stored = await self._host._run(self._host._in_tx, False,
                                           self._projection.head_vectors, ref.artifact_id)
            for i, reason in sorted(why.items()):
                r = rows[i]
                kept = stored.get(r.entry_version_id)
                if kept is not None and kept.embedding_content_hash == (
                    canonical.embedding_content_hash(profile, r.entry_content_hash)
                ):
                    try:
                        check_vector(kept.vector, profile)
                        out[i] = kept
                        report.kept += 1
                        continue
                    except InvalidInputError:
                        pass
                report.missing.append((ref.artifact_id, r.entry_id, reason))
        return out

    def _migrate_analyzer_sync(self, target: Analyzer | None) -> None:
        """Start moving the FTS projection to ``target`` (None: the analyzer chosen at
        open): until the rebuild ends (``_mark_rebuilt_sync``) the database records no
        known version."""
        host, deployment = self._host, self._deployment
        target = target or deployment.db_analyzer
        stored = host._meta_get_sync("analyzer_version")
        if stored == target.version:
            return
        host._meta_set_sync("analyzer_version", f"incomplete-migration-to-{target.version}")
        deployment.analyzer = target
        if host._db_caps is not None and host._db_caps.fts:
            deployment.fts_off(stored)

    def _mark_rebuilt_sync(self) -> None:
        """Every FTS projection now comes from the backend's analyzer: record it, and let
        the projection finish (:meth:`MemorySearchProjection.after_rebuild`)."""
        host = self._host
        host._meta_set_sync("analyzer_version", self._deployment.db_analyzer.version)
        caps = host._db_caps
        if caps is not None and not caps.fts:
            reasons = tuple(r for r in caps.reasons if "FTS projection" not in r)
            host._db_caps = attrs.evolve(caps, fts=True, hybrid=caps.vector, reasons=reasons)
        self._projection.after_rebuild()

    async def inventory(self) -> dict[str, Any]:
        """What the database holds, read in one snapshot: ``heads`` (every Memory's
        current head, a tuple of ArtifactRef sorted by id), ``sources`` (how many Sources
        are stored), ``analyzer_version`` (the Analyzer version its FTS projection was
        built with; None when unrecorded) and ``writes_paused``.
        CapabilityNotSupportedError when the adapter cannot list its heads."""
        return await self._host._run(self._host._in_tx, False, self._inventory_sync)

    def _inventory_sync(self) -> dict[str, Any]:
        host = self._host
        heads = tuple(ArtifactRef(a, r) for a, r in self._tables.rows.all_heads())
        sources, after = 0, 0
        while page := host._journal_sync(after, 1000):
            sources += len(page)
            after = page[-1][0]
        return {"heads": heads, "sources": sources,
                "analyzer_version": host._meta_get_sync("analyzer_version"),
                "writes_paused": bool(host._meta_get_sync("writes_paused"))}

    def _migrate_sync(self, profile: EmbeddingProfile) -> None:
        host = self._host
        self._projection.reset_vectors(profile)
        self._completeness.bump_generation()
        host._meta_set_sync("embedding_profile", canonical.canonical_dumps(profile).decode())
        self._deployment.profile = profile
        caps = host._db_caps
        if caps is not None:
            host._db_caps = attrs.evolve(caps, embedding_profile=profile, vector=caps.fts,
                                         hybrid=caps.fts)
        self._completeness.clear()

    def _rebuild_rows_sync(self, ref: ArtifactRef) -> list[ProjectionRow]:
        parsed = self._tables.parsed(ref.artifact_id, ref.revision)
        active = [
            e.entry_id for e in parsed.revision.content.manifest.entries if e.state == "active"
        ]
        versions = self._store.versions_checked_sync(parsed.by_entry, active)
        return [
            ProjectionRow(
                v.entry_id,
                v.entry_version_id,
                v.entry_content_hash,
                self._deployment.db_analyzer.searchable_text(v.text),
                v.text,
            )
            for v in (versions[e] for e in active)
        ]

    def _write_rebuild_sync(
        self, ref: ArtifactRef, rows: list[ProjectionRow], vectors: list[VectorRow | None]
    ) -> None:
        if self._tables.rows.head(ref.artifact_id) != ref.revision:
            raise RevisionConflictError(f"Memory {ref.artifact_id!r} moved during the rebuild")
        self._projection.clear_projection(ref.artifact_id)
        if rows:
            self._projection.insert_projections(ref.artifact_id, ref.revision, rows, vectors)
        self._completeness.bump_generation()
        self._completeness.invalidate(ref.artifact_id)
