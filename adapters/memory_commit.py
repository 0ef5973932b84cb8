"""The Memory family's unit of work over a database backend (Memory RFC, "Concurrency
and transactions"; "Writes and lifecycle"): :class:`MemoryCommit`, the Memory backend's write
collaborator, and :class:`DatabaseUnitOfWork`, what the backend's ``begin`` yields.

One commit is one write transaction on the worker thread: the head compare-and-swap
precondition (:func:`powercontext.core.verify.check_head`), the stored facts the plan
depends on in bulk reads (:meth:`MemoryCommit.plan_facts_sync`), one descent into
the core that checks the whole plan (:func:`powercontext.core.verify.verify`: canonical
bytes, manifest, entry references, evidence), then the writes (Revision row, head CAS,
entry versions, changed projections) and, for a new Memory, its business key. Every
commit keeps the vector-completeness count
(:class:`~powercontext.adapters.memory_completeness.VectorCompleteness`) that search
consults.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from powercontext.adapters import revision_codec, vector_gaps
from powercontext.adapters.manifest_packs import PackLayout
from powercontext.adapters.memory_completeness import Key, VectorCompleteness
from powercontext.adapters.memory_deployment import MemoryDeployment
from powercontext.adapters.memory_rows import MEMORY_FAMILY, VectorRow
from powercontext.adapters.memory_tables import MemoryTables
from powercontext.adapters.revision_cache import ParsedRevision
from powercontext.adapters.storage.rows import RevisionRow
from powercontext.core import canonical, keys, verify
from powercontext.core.errors import (
    CapabilityNotSupportedError,
    CommitOutcomeUnknownError,
    InvalidInputError,
    RevisionConflictError,
    WritesPausedError,
)
from powercontext.core.manifest import ManifestView
from powercontext.core.models import ArtifactRef, EmbeddingVector
from powercontext.core.plan import MemoryPlan, ProjectionRow
from powercontext.core.vectors import check_vector
from powercontext.ports.engine import MemorySearchProjection

__all__ = ["DatabaseUnitOfWork", "MemoryCommit"]


class MemoryCommit:
    """The synchronous commit of a Memory plan, in one write transaction.

    ``host``: the storage (``_in_tx``, the metadata table, the shared Artifact rows
    ``_insert_revision_sync``, ``_insert_head_sync``, ``_cas_head_sync``, the Source
    store's ``_get_sources_sync``, ``_db_caps``); ``tables``: the Memory tables;
    ``projection``: the engine's search projection (the changed head rows);
    ``deployment``: the profile and analyzer; ``completeness``: the vector-gap count it
    keeps. ``revision_encodings``: the engine stores ``RevisionRow.encoding`` (deltas
    and checkpoints where there is no manifest log)."""

    def __init__(self, host: Any, tables: MemoryTables, projection: MemorySearchProjection,
                 deployment: MemoryDeployment, completeness: VectorCompleteness, *,
                 revision_encodings: bool = False) -> None:
        self._host = host
        self._tables = tables
        self._rows = tables.rows
        self._projection = projection
        self._deployment = deployment
        self._completeness = completeness
        self.revision_encodings = revision_encodings
        #: what a commit computed, kept once it has committed
        self._pending_cache: tuple[ArtifactRef, ParsedRevision] | None = None
        self._pending_complete: tuple[Key, bool] | None = None
        self._pending_layout: PackLayout | None = None

    def commit_plan_sync(
        self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector] | None,
        key: str | None = None,
    ) -> ArtifactRef:
        """Commit ``plan`` (with ``vectors`` by entry_version_id, and for a new Memory
        its business ``key``) in one write transaction, rerun as a whole on lock
        contention. RevisionConflictError, WritesPausedError, the typed errors of
        :func:`powercontext.core.verify.verify`; CommitOutcomeUnknownError naming the
        planned Revision when the COMMIT's answer was lost."""
        try:
            ref = self._host._in_tx(True, self._apply_sync, plan, vectors or {}, key)
        except CommitOutcomeUnknownError as exc:
            self._completeness.invalidate(plan.artifact_id)
            # name what the commit may have created, so the caller can reread it
            raise CommitOutcomeUnknownError(
                f"{exc} (the planned Revision is {plan.ref.artifact_id}@{plan.ref.revision})",
                planned=plan.ref, content_hash=plan.content_hash,
            ) from exc
        self._completeness.invalidate(plan.artifact_id)
        pending, self._pending_cache = self._pending_cache, None
        if pending is not None and pending[0] == ref:
            self._tables.put(ref.artifact_id, ref.revision, pending[1])
        complete, self._pending_complete = self._pending_complete, None
        if complete is not None and complete[0][:2] == (ref.artifact_id, ref.revision):
            self._completeness.remember(*complete)
        layout, self._pending_layout = self._pending_layout, None
        log = self._tables.log
        if layout is not None and log is not None and layout[0] == ref.revision:
            log.packs.committed(ref.artifact_id, layout)
        return ref

    def _apply_sync(self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector],
                    key: str | None) -> ArtifactRef:
        self._pending_cache = None
        self._pending_complete = None
        self._pending_layout = None
        if self._host._meta_get_sync("writes_paused"):
            raise WritesPausedError("writes are paused by an offline rebuild; retry later")
        ref = self.apply_plan_sync(plan, vectors)
        if key is not None:
            self._claim_key_sync(plan, key)
        return ref

    def _claim_key_sync(self, plan: MemoryPlan, key: str) -> None:
        """Store ``key`` for the Memory ``plan`` creates, in the plan's transaction: a key
        another writer stored first is a RevisionConflictError (nothing commits)."""
        if plan.base is not None:
            raise InvalidInputError("key", "only the write that creates a Memory stores its key")
        owner = self._rows.key_owner(key)
        if owner is not None:
            raise RevisionConflictError(
                f"key {key!r} already names Memory {owner!r}: reread the key and write there")
        self._rows.insert_key(key, plan.artifact_id)

    def apply_plan_sync(
        self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector]
    ) -> ArtifactRef:
        """The writes of ``plan``, inside the caller's write transaction (see
        :meth:`commit_plan_sync`)."""
        host, rows, projection = self._host, self._rows, self._projection
        # 1. head compare-and-swap precondition and base manifest
        verify.check_head(plan, rows.head(plan.artifact_id))
        base_view: ManifestView | None = None
        if plan.base is not None:
            base_view = self._tables.parsed(plan.artifact_id, plan.base.revision).view
        # 2. the stored facts (bulk reads), then the whole plan checked in core
        verified = verify.verify(plan, base_view, self.plan_facts_sync(plan))
        # 3. Revision, head CAS, versions, the manifest log
        log = self._tables.log
        if log is not None:  # the changes; the items go to the log (below)
            encoding, stored = revision_codec.LOG, revision_codec.encode_changes(
                plan.content.changes)
        elif self.revision_encodings:
            encoding, stored = revision_codec.encode(
                plan.revision, plan.content, lambda: plan.content_bytes, dict(verified.items)
            )
        else:
            encoding, stored = revision_codec.FULL, plan.content_bytes
        host._insert_revision_sync(
            RevisionRow(
                plan.artifact_id,
                plan.revision,
                MEMORY_FAMILY,
                stored,
                plan.content_hash,
                canonical.lineage_bytes(plan.lineage),
                encoding,
            )
        )
        if plan.base is None:
            host._insert_head_sync(plan.artifact_id, plan.revision)
        elif not host._cas_head_sync(plan.artifact_id, plan.base.revision, plan.revision):
            raise RevisionConflictError(
                f"Memory {plan.artifact_id!r} moved past Revision {plan.base.revision}"
            )
        if plan.new_versions:
            rows.insert_entry_versions(plan.new_versions)
        if log is not None:
            if plan.base is None:
                log.insert_baseline(plan.artifact_id, plan.revision, verified.view.entries)
            else:
                if not log.covers(plan.artifact_id, plan.base.revision):
                    # a Memory an earlier release wrote: its base, whole, once
                    assert base_view is not None
                    log.insert_baseline(plan.artifact_id, plan.base.revision,
                                        base_view.entries)
                log.insert(plan.artifact_id, plan.revision, verified.items.values())
            # the head's items as packs, for the next process's first read
            self._pending_layout = log.packs.write(
                plan.artifact_id, plan.base.revision if plan.base is not None else None,
                plan.revision, verified.view, list(verified.items))
        # 4. projections: only what changed, and the count of rows without a vector
        profile = self._completeness.gaps_profile()
        lost = 0
        if profile is not None:
            replaced = vector_gaps.changed_entries([(c.op, c.entry_id)
                                                    for c in plan.content.changes])
            if replaced:
                lost = vector_gaps.missing(
                    projection.vector_projection_of(plan.artifact_id, replaced), profile)
        touched = list(plan.deletes) + [r.entry_id for r in plan.upserts]
        if touched:
            projection.delete_projections(plan.artifact_id, touched)
        vector_rows = [self._vector_row(r, vectors) for r in plan.upserts]
        if plan.upserts:
            projection.insert_projections(plan.artifact_id, plan.revision, plan.upserts,
                                          vector_rows)
        if profile is not None:
            self._pending_complete = self._completeness.count_gaps(
                plan, lost, sum(1 for r in vector_rows if r is None), profile)
        self._pending_cache = (plan.ref, ParsedRevision(verified.revision, verified.view))
        return plan.ref

    def plan_facts_sync(self, plan: MemoryPlan) -> verify.PlanFacts:
        """What :func:`powercontext.core.verify.verify` needs from the store, read inside
        the write transaction: one read of entry versions, one of entry ids used
        elsewhere, one of Sources, one per evidence Artifact Revision."""
        rows = self._rows
        wanted = verify.lookups(plan)
        found = (rows.entry_versions(list(wanted.entry_version_ids))
                 if wanted.entry_version_ids else [])
        versions = {v.entry_version_id: v for v in found}
        elsewhere = (
            rows.entry_ids_elsewhere(plan.artifact_id, list(wanted.added_entry_ids))
            if wanted.added_entry_ids else set()
        )
        sources = (
            {s.source_id: s.content_hash
             for _, s in self._host._get_sources_sync(list(wanted.source_ids))}
            if wanted.source_ids else {}
        )
        artifacts: dict[ArtifactRef, tuple[str, str]] = {}
        for ref in wanted.artifacts:
            found_rows = rows.revision_rows(ref.artifact_id, ref.revision - 1, ref.revision)
            if found_rows and found_rows[0].revision == ref.revision:
                artifacts[ref] = (found_rows[0].family, found_rows[0].content_hash)
        return verify.PlanFacts(
            versions, frozenset(elsewhere), sources, artifacts, self._deployment.db_analyzer
        )

    def _vector_row(
        self, row: ProjectionRow, vectors: dict[str, EmbeddingVector]
    ) -> VectorRow | None:
        vec = vectors.get(row.entry_version_id)
        if vec is None:
            return None
        profile = self._deployment.profile
        caps = self._host._db_caps
        if profile is None or not (caps and caps.vector):
            raise CapabilityNotSupportedError(
                "vectors given but this database has no vector projection"
            )
        check_vector(vec, profile)
        return VectorRow(canonical.embedding_content_hash(profile, row.entry_content_hash), vec)


class DatabaseUnitOfWork:
    """The unit of work a Memory backend's ``begin`` yields (implements
    :class:`powercontext.ports.MemoryUnitOfWork`): ``commit`` runs the whole
    transaction in one call of ``run_commit`` (the backend's: on its worker thread).
    ``commit`` is all-or-nothing."""

    def __init__(self, run_commit: Callable[..., Awaitable[ArtifactRef]]) -> None:
        self._run_commit = run_commit
        self._done = False

    async def commit(
        self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector] | None = None,
        *, key: str | None = None,
    ) -> ArtifactRef:
        """See :meth:`powercontext.ports.MemoryUnitOfWork.commit`."""
        if self._done:
            raise RuntimeError("this unit of work has already committed")
        if key is not None:
            key = keys.normalize_key(key)
            from powercontext.core.secrets import check_text  # writes only

            check_text("key", key)  # a key is stored and shown like content: never a secret
        self._done = True
        args = (plan, vectors) if key is None else (plan, vectors, key)
        return await self._run_commit(*args)

    async def rollback(self) -> None:
        self._done = True
