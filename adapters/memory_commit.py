"""The Memory family's unit of work over a database backend (Memory RFC, "Concurrency
and transactions"; "Writes and lifecycle"): :class:`MemoryCommitMixin`, a base of
:class:`~powercontext.adapters.database.DatabaseMemoryBackend`, and
:class:`DatabaseUnitOfWork`, what its ``begin`` yields.

One commit is one write transaction on the worker thread: the head compare-and-swap
precondition (:func:`powercontext.core.verify.check_head`), the stored facts the plan
depends on in bulk reads (:meth:`MemoryCommitMixin._plan_facts_sync`), one descent into
the core that checks the whole plan (:func:`powercontext.core.verify.verify`: canonical
bytes, manifest, entry references, evidence), then the writes (Revision row, head CAS,
entry versions, changed projections) and, for a new Memory, its business key. The
mixin also owns the vector-completeness cache that search consults and every commit
invalidates.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from powercontext.adapters import revision_codec, vector_gaps
from powercontext.adapters.manifest_log import ManifestLog
from powercontext.adapters.memory_reads import MemoryReadsMixin
from powercontext.adapters.memory_rows import MEMORY_FAMILY, VectorRow
from powercontext.adapters.revision_cache import ParsedRevision
from powercontext.adapters.storage.rows import RevisionRow
from powercontext.adapters.vector_gaps import VectorGaps
from powercontext.core import canonical, keys, verify
from powercontext.core.errors import (
    CapabilityNotSupportedError,
    CommitOutcomeUnknownError,
    InvalidInputError,
    RevisionConflictError,
    WritesPausedError,
)
from powercontext.core.manifest import ManifestView
from powercontext.core.models import (
    ArtifactRef,
    EmbeddingProfile,
    EmbeddingVector,
    MemoryEntryVersion,
)
from powercontext.core.plan import MemoryPlan, ProjectionRow
from powercontext.core.vectors import check_vector

__all__ = ["DatabaseUnitOfWork", "MemoryCommitMixin"]


class MemoryCommitMixin(MemoryReadsMixin):
    """``begin`` (a :class:`DatabaseUnitOfWork`) and the synchronous commit behind it,
    plus the vector-completeness cache (``_complete_sync``, ``_invalidate``). The host
    class (DatabaseMemoryBackend) provides the state and primitives listed under
    ``TYPE_CHECKING``."""

    if TYPE_CHECKING:  # provided by DatabaseMemoryBackend
        supports_revision_encodings: bool
        _pending_cache: tuple[ArtifactRef, ParsedRevision] | None
        _manifest_log: ManifestLog | None
        _vector_gaps: VectorGaps | None

        def _cache_put(self, key: tuple[str, int], parsed: ParsedRevision) -> None: ...
        def _insert_revision_sync(self, row: RevisionRow) -> None: ...
        def _insert_head_sync(self, artifact_id: str, revision: int) -> None: ...
        def _cas_head_sync(self, artifact_id: str, base_revision: int, revision: int) -> bool: ...
        def _insert_entry_versions_sync(self, versions: Sequence[MemoryEntryVersion]) -> None: ...
        def _delete_projections_sync(self, artifact_id: str, entry_ids: Sequence[str]) -> None: ...
        def _insert_projections_sync(
            self, artifact_id: str, head_revision: int, rows: Sequence[ProjectionRow],
            vectors: Sequence[VectorRow | None]) -> None: ...
        def _entry_ids_elsewhere_sync(
            self, artifact_id: str, entry_ids: Sequence[str]) -> set[str]: ...
        def _vector_projection_sync(self, artifact_id: str) -> list[tuple[str, str | None]]: ...
        def _vector_projection_of_sync(
            self, artifact_id: str, entry_ids: Sequence[str]) -> list[tuple[str, str | None]]: ...

    @contextlib.asynccontextmanager
    async def begin(self) -> AsyncIterator[DatabaseUnitOfWork]:
        """A unit of work; its ``commit`` runs the whole transaction in one worker call."""
        uow = DatabaseUnitOfWork(self)
        try:
            yield uow
        finally:
            await uow.rollback()

    #: the completeness a commit computed, kept once it has committed
    _pending_complete: tuple[tuple[str, int, str], bool] | None = None

    def _commit_plan_sync(
        self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector] | None,
        key: str | None = None,
    ) -> ArtifactRef:
        self._pending_cache = None
        self._pending_complete = None
        try:
            self._begin_sync(True)
            if self._meta_get_sync("writes_paused"):
                raise WritesPausedError("writes are paused by an offline rebuild; retry later")
            ref = self._apply_plan_sync(plan, vectors or {})
            if key is not None:
                self._claim_key_sync(plan, key)
            self._commit_sync()
        except CommitOutcomeUnknownError as exc:
            self._rollback_sync()
            self._invalidate(plan.artifact_id)
            # name what the commit may have created, so the caller can reread it
            raise CommitOutcomeUnknownError(
                f"{exc} (the planned Revision is {plan.ref.artifact_id}@{plan.ref.revision})",
                planned=plan.ref, content_hash=plan.content_hash,
            ) from exc
        except BaseException as exc:
            mapped = self._abort_sync(exc)
            if mapped is not None:
                raise mapped from exc
            raise
        self._invalidate(plan.artifact_id)
        pending, self._pending_cache = self._pending_cache, None
        if pending is not None and pending[0] == ref:
            self._cache_put((ref.artifact_id, ref.revision), pending[1])
        complete, self._pending_complete = self._pending_complete, None
        if complete is not None and complete[0][:2] == (ref.artifact_id, ref.revision):
            with self._cache_lock:
                self._complete_cache[complete[0]] = complete[1]
        return ref

    def _claim_key_sync(self, plan: MemoryPlan, key: str) -> None:
        """Store ``key`` for the Memory ``plan`` creates, in the plan's transaction: a key
        another writer stored first is a RevisionConflictError (nothing commits)."""
        if plan.base is not None:
            raise InvalidInputError("key", "only the write that creates a Memory stores its key")
        owner = self._memory_key_sync(key)
        if owner is not None:
            raise RevisionConflictError(
                f"key {key!r} already names Memory {owner!r}: reread the key and write there")
        self._insert_memory_key_sync(key, plan.artifact_id)

    def _invalidate(self, artifact_id: str) -> None:
        with self._cache_lock:
            for key in [k for k in self._complete_cache if k[0] == artifact_id]:
                del self._complete_cache[key]

    def _apply_plan_sync(
        self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector]
    ) -> ArtifactRef:
        # 1. head compare-and-swap precondition and base manifest
        verify.check_head(plan, self._head_sync(plan.artifact_id))
        base_view: ManifestView | None = None
        if plan.base is not None:
            base_view = self._parsed_sync(plan.artifact_id, plan.base.revision).view
        # 2. the stored facts (bulk reads), then the whole plan checked in core
        verified = verify.verify(plan, base_view, self._plan_facts_sync(plan))
        # 3. Revision, head CAS, versions, the manifest log
        log = self._manifest_log
        if log is not None:  # the changes; the items go to the log (below)
            encoding, stored = revision_codec.LOG, revision_codec.encode_changes(
                plan.content.changes)
        elif self.supports_revision_encodings:
            encoding, stored = revision_codec.encode(
                plan.revision, plan.content, lambda: plan.content_bytes, dict(verified.items)
            )
        else:
            encoding, stored = revision_codec.FULL, plan.content_bytes
        self._insert_revision_sync(
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
            self._insert_head_sync(plan.artifact_id, plan.revision)
        elif not self._cas_head_sync(plan.artifact_id, plan.base.revision, plan.revision):
            raise RevisionConflictError(
                f"Memory {plan.artifact_id!r} moved past Revision {plan.base.revision}"
            )
        if plan.new_versions:
            self._insert_entry_versions_sync(plan.new_versions)
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
        # 4. projections: only what changed, and the count of rows without a vector
        profile = self._gaps_profile()
        lost = 0
        if profile is not None:
            replaced = vector_gaps.changed_entries([(c.op, c.entry_id)
                                                    for c in plan.content.changes])
            if replaced:
                lost = vector_gaps.missing(
                    self._vector_projection_of_sync(plan.artifact_id, replaced), profile)
        touched = list(plan.deletes) + [r.entry_id for r in plan.upserts]
        if touched:
            self._delete_projections_sync(plan.artifact_id, touched)
        rows = [self._vector_row(r, vectors) for r in plan.upserts]
        if plan.upserts:
            self._insert_projections_sync(plan.artifact_id, plan.revision, plan.upserts, rows)
        if profile is not None:
            self._count_gaps_sync(plan, lost, sum(1 for r in rows if r is None), profile)
        self._pending_cache = (plan.ref, ParsedRevision(verified.revision, verified.view))
        return plan.ref

    def _gaps_profile(self) -> EmbeddingProfile | None:
        """The profile vectors are checked against when this database keeps the count of
        head rows without a valid vector (:mod:`powercontext.adapters.vector_gaps`)."""
        caps = self._db_caps
        if self._vector_gaps is None or caps is None or not caps.vector:
            return None
        return self._profile or caps.embedding_profile

    def _count_gaps_sync(self, plan: MemoryPlan, lost: int, added: int,
                         profile: EmbeddingProfile) -> None:
        """Store the Memory's count of head rows without a valid vector as of the plan's
        Revision: its base's minus the ones the plan replaced (``lost``) plus the ones it
        wrote without a vector (``added``); counted whole when the base's is not stored
        (a Memory an earlier release wrote, or a rebuild since)."""
        assert self._vector_gaps is not None
        generation = self._projection_generation_sync()
        base = (0 if plan.base is None else
                self._vector_gaps.read(plan.artifact_id, plan.base.revision, generation))
        count = (vector_gaps.missing(self._vector_projection_sync(plan.artifact_id), profile)
                 if base is None else base - lost + added)
        self._vector_gaps.write(plan.artifact_id, plan.revision, generation, count)
        self._pending_complete = ((plan.artifact_id, plan.revision, generation), count == 0)

    def _plan_facts_sync(self, plan: MemoryPlan) -> verify.PlanFacts:
        """What :func:`powercontext.core.verify.verify` needs from the store, read inside
        the write transaction: one read of entry versions, one of entry ids used
        elsewhere, one of Sources, one per evidence Artifact Revision."""
        wanted = verify.lookups(plan)
        found = (self._entry_versions_sync(list(wanted.entry_version_ids))
                 if wanted.entry_version_ids else [])
        versions = {v.entry_version_id: v for v in found}
        elsewhere = (
            self._entry_ids_elsewhere_sync(plan.artifact_id, list(wanted.added_entry_ids))
            if wanted.added_entry_ids else set()
        )
        sources = (
            {s.source_id: s.content_hash
             for _, s in self._get_sources_sync(list(wanted.source_ids))}
            if wanted.source_ids else {}
        )
        artifacts: dict[ArtifactRef, tuple[str, str]] = {}
        for ref in wanted.artifacts:
            rows = self._revision_rows_sync(ref.artifact_id, ref.revision - 1, ref.revision)
            if rows and rows[0].revision == ref.revision:
                artifacts[ref] = (rows[0].family, rows[0].content_hash)
        return verify.PlanFacts(
            versions, frozenset(elsewhere), sources, artifacts, self._db_analyzer
        )

    def _vector_row(
        self, row: ProjectionRow, vectors: dict[str, EmbeddingVector]
    ) -> VectorRow | None:
        vec = vectors.get(row.entry_version_id)
        if vec is None:
            return None
        if self._profile is None or not (self._db_caps and self._db_caps.vector):
            raise CapabilityNotSupportedError(
                "vectors given but this database has no vector projection"
            )
        check_vector(vec, self._profile)
        return VectorRow(
            canonical.embedding_content_hash(self._profile, row.entry_content_hash), vec
        )

    def _complete_sync(self, artifact_id: str, revision: int,
                       generation: str | None = None) -> bool:
        # A rebuild changes projections without changing heads: the generation it bumps
        # is read in this transaction (or by the caller, in it, for several Memories:
        # ``generation``), so another process's rebuild is never missed.
        if generation is None:
            generation = self._projection_generation_sync()
        key = (artifact_id, revision, generation)
        with self._cache_lock:
            if key in self._complete_cache:
                return self._complete_cache[key]
        assert self._profile is not None
        stored = (None if self._vector_gaps is None
                  else self._vector_gaps.read(artifact_id, revision, generation))
        ok = (vector_gaps.missing(self._vector_projection_sync(artifact_id), self._profile) == 0
              if stored is None else stored == 0)
        with self._cache_lock:
            self._complete_cache[key] = ok
        return ok

    def _projection_generation_sync(self) -> str:
        """The offline rebuilds' generation (``powercontext_meta``), read in the caller's
        transaction."""
        return self._meta_get_sync("projection_generation") or "0"


class DatabaseUnitOfWork:
    """The unit of work of a :class:`MemoryCommitMixin` backend (DatabaseMemoryBackend).
    ``commit`` is all-or-nothing."""

    def __init__(self, backend: MemoryCommitMixin) -> None:
        self._backend = backend
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
        return await self._backend._run(self._backend._commit_plan_sync, *args)

    async def rollback(self) -> None:
        self._done = True
