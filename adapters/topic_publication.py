"""The Topic Memory publication unit of work over a database backend (Topic Memory RFC,
"Storage, Head, and atomic activation"): :class:`TopicUnitOfWork`.

One publication is one short write transaction in the spec's order::

    guards.supervisor (the lease row first: holder, generation, unexpired)
    -> guards.cursor CAS -> guards.budget fence
    -> Head compare of every write (UPDATE: the base is the head, same Scope;
       CREATE: the id is free)
    -> every Revision, its Head move and both lineage tables (each Source stored)
    -> one database-UTC ``published_at`` -> a publications row per Revision
    -> each Topic's active projections replaced (old rows with their full-text and
       vector rows deleted, the new ones inserted)
    -> Cursor advance -> Pending update -> budget-row delete -> COMMIT

Everything the batch can be checked for without the database is checked before the
transaction, at the write boundary, with the backend's own analyzer and shape
(:func:`powercontext.core.topic.publication.verify_publication`, which recomputes every
projection) and the guard values (:func:`powercontext.core.topic.guards.check_guards`).
A publication with guards may have no write at all (a NOOP Window, or one of only
lineage-only Sources): it still advances the Cursor, updates Pending and deletes the
budget row. Without guards, zero writes stay refused.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from powercontext.adapters.storage import RevisionRow
from powercontext.adapters.topic_deployment import TopicDeployment
from powercontext.adapters.topic_host import TopicArtifactHost
from powercontext.adapters.topic_ledger_rows import LedgerRows
from powercontext.adapters.topic_rows import TopicRows
from powercontext.core.errors import (
    InvalidInputError,
    RetrievalShapeError,
    RevisionConflictError,
)
from powercontext.core.topic import content as topic_content
from powercontext.core.topic.guards import check_cursor_at, check_guards, pending_after
from powercontext.core.topic.models import (
    TOPIC_FAMILY,
    PublicationGuards,
    RetrievalShape,
    TopicPublication,
    TopicRevision,
    TopicWrite,
)
from powercontext.core.topic.processing import BudgetRelease, CursorAdvance, PendingUpdate
from powercontext.core.topic.publication import verify_publication
from powercontext.core.topic.supervision import SupervisorTerm
from powercontext.ports.engine import TopicSearchProjection

__all__ = ["TopicUnitOfWork"]


class TopicUnitOfWork:
    """``publish`` of a Topic backend: the order of one publication's I/O over the
    host's Artifact rows and transaction, the Topic rows, the ledger rows of the guards,
    the engine's search projection and the deployment's shape. ``fence(term)`` is the
    Supervisor's term fence
    (:meth:`~powercontext.adapters.topic_supervision_store.TopicSupervision.fence`)."""

    def __init__(self, host: TopicArtifactHost, rows: TopicRows, ledger: LedgerRows,
                 projection: TopicSearchProjection, deployment: TopicDeployment,
                 fence: Callable[[SupervisorTerm], None]) -> None:
        self._host = host
        self._rows = rows
        self._ledger = ledger
        self._projection = projection
        self._deployment = deployment
        self._fence = fence

    async def publish(self, publication: TopicPublication) -> tuple[TopicRevision, ...]:
        """Publish every write of ``publication`` in one transaction, or nothing (Topic
        Memory RFC, "Storage, Head, and atomic activation"; see the module docstring for
        the order). The first publication of a deployment (no Topic Head yet) fixes the
        retrieval shape: hybrid when the backend has an embedding profile and working
        vectors, else fts.

        Returns the published Revisions in batch order, each with the one database-UTC
        ``published_at`` of the batch. Errors (nothing written on any):
        InvalidInputError naming the field for a bad batch, a lineage Source that is not
        stored (or stored with another hash), an UPDATE whose base is not a Topic or is
        in another Scope; SecretDetectedError (an InvalidInputError naming
        ``writes[i].content.summary``, ...) for a title, summary or detail holding a
        secret (the core rules and detect-secrets); RevisionConflictError when an
        UPDATE's base is no longer the head or a CREATE's id exists; IntegrityError for
        a forged or incomplete projection; RetrievalShapeError when another process
        fixed another shape;
        SupervisorTermError when ``guards.supervisor`` (a SupervisorTerm) is no
        longer the lease's term (checked first in the transaction).

        Guards (:class:`~powercontext.core.topic.processing.CursorAdvance`,
        ``PendingUpdate``, ``BudgetRelease``): RevisionConflictError ("cursor moved")
        when the Cursor is no longer ``guards.cursor.expected``, ("attempt superseded")
        when the budget row of (Scope, binding, ``source_after``) is gone or holds
        another attempt; then nothing is written either."""
        if not isinstance(publication, TopicPublication):
            raise InvalidInputError("publication", "must be a TopicPublication")
        if not isinstance(publication.guards, PublicationGuards):
            raise InvalidInputError("publication.guards", "must be PublicationGuards")
        if isinstance(publication.writes, tuple):
            check_guards(publication.guards, publication.writes)
            _refuse_secrets(publication.writes)
        return await self._host._run(self._publish_checked, publication)

    def _publish_checked(self, publication: TopicPublication) -> tuple[TopicRevision, ...]:
        shape = self._deployment.wanted_shape()
        verify_publication(publication, self._deployment.db_analyzer, shape.kind,
                           shape.embedding_profile)
        published = self._host._in_tx(True, self._publish_sync, publication, shape)
        host = self._host
        if publication.writes:  # a guarded publication without writes fixes no shape
            assert host._db_caps is not None
            host._db_caps = attrs.evolve(host._db_caps, shape=shape, channels=shape.channels)
        return published

    # ------------------------------------------------------------------ the transaction

    def _publish_sync(self, publication: TopicPublication,
                      shape: RetrievalShape) -> tuple[TopicRevision, ...]:
        writes = publication.writes
        term = publication.guards.supervisor
        if isinstance(term, SupervisorTerm):
            self._fence(term)  # the lease row before any other row
        if writes:
            self._fix_shape_sync(shape)
        self._check_guards_sync(publication.guards)
        for w in writes:
            self._compare_head_sync(w)
        self._check_sources_sync(writes)
        for w in writes:
            self._write_revision_sync(w)
        published_at = self._rows.now()
        for w in writes:
            self._rows.insert_publication(w.ref, w.scope_id, published_at)
        for w in writes:
            self._projection.delete_active(w.ref.artifact_id)
            self._projection.insert_active(w, shape.profile_fingerprint)
        self._advance_guards_sync(publication.guards)
        return tuple(
            TopicRevision(w.scope_id, w.ref, w.content, topic_content.content_hash(w.content),
                          w.sources, w.base, published_at)
            for w in writes)

    def _fix_shape_sync(self, shape: RetrievalShape) -> None:
        """Store ``shape`` when none is stored or no Head exists yet; refuse a stored
        shape that differs while Heads exist (another process fixed it)."""
        stored = self._rows.shape()
        if stored == shape:
            return
        if stored is not None and self._rows.head_count():
            raise RetrievalShapeError(
                f"the retrieval shape is fixed as {stored.kind!r} "
                f"(profile fingerprint {stored.profile_fingerprint}); this backend would "
                f"publish {shape.kind!r} (fingerprint {shape.profile_fingerprint}): reopen it")
        self._rows.set_shape(shape)

    def _check_guards_sync(self, guards: PublicationGuards) -> None:
        """The Cursor CAS and the budget-row fence, before any Head compare (the guard
        values were checked by ``check_guards``; the Supervisor term was fenced first). The
        budget row is locked before the Cursor row, the order ``begin_attempt`` takes
        them in."""
        cursor = guards.cursor
        if not isinstance(cursor, CursorAdvance):
            return
        budget = guards.budget
        row = (self._ledger.budget_row(cursor.scope_id, cursor.binding_name,
                                     budget.source_after, lock=True)
               if isinstance(budget, BudgetRelease) else None)
        stored = self._ledger.cursor(cursor.binding_name, cursor.scope_id, lock=True) or 0
        check_cursor_at(cursor, stored, self._host._scope_head_sync(cursor.scope_id))
        if isinstance(budget, BudgetRelease) and (row is None
                                                  or row.attempt_id != budget.attempt_id):
            raise RevisionConflictError(
                f"attempt superseded: another attempt holds the budget row of the Window "
                f"after Cursor {budget.source_after} of Scope {cursor.scope_id!r}")

    def _advance_guards_sync(self, guards: PublicationGuards) -> None:
        """After the projections: the Cursor advance (insert at Cursor 0, else CAS), the
        Pending update (handled generation; the row deleted under the spec's
        condition) and the budget-row delete."""
        cursor = guards.cursor
        if not isinstance(cursor, CursorAdvance):
            return
        binding, scope = cursor.binding_name, cursor.scope_id
        if cursor.expected == 0:
            self._ledger.cursor_insert(binding, scope, cursor.through)
        elif not self._ledger.cursor_cas(binding, scope, cursor.expected, cursor.through):
            raise RevisionConflictError(f"cursor moved: Scope {scope!r} left {cursor.expected}")
        if isinstance(guards.pending, PendingUpdate):
            row = self._ledger.pending_row(binding, scope, lock=True)
            if row is not None:
                after = pending_after(row, cursor.through, guards.pending)
                if after is None:
                    self._ledger.pending_delete(binding, scope)
                elif after != row:
                    self._ledger.pending_handled(binding, scope, after.handled_flush_generation)
        budget = guards.budget
        if isinstance(budget, BudgetRelease) and not self._ledger.budget_delete(
                scope, binding, budget.source_after, budget.attempt_id):
            raise RevisionConflictError(
                f"attempt superseded: the budget row after Cursor {budget.source_after} moved")

    def _compare_head_sync(self, w: TopicWrite) -> None:
        aid = w.ref.artifact_id
        head = self._rows.head_for_update(aid)
        if w.op == "create":
            if head is not None:
                raise RevisionConflictError(f"an Artifact {aid!r} exists already")
            return
        assert w.base is not None  # verify_publication
        if head is None or head[1] != TOPIC_FAMILY:
            raise InvalidInputError("base", f"no Topic {aid!r} is stored")
        if self._rows.scope_of(aid) != w.scope_id:
            raise InvalidInputError(
                "base", f"Topic {aid!r} belongs to another Scope than {w.scope_id!r}")
        if head[0] != w.base.revision:
            raise RevisionConflictError(
                f"Topic {aid!r} is at Revision {head[0]}, not the base {w.base.revision}")

    def _check_sources_sync(self, writes: tuple[TopicWrite, ...]) -> None:
        wanted = list(dict.fromkeys(s.source_id for w in writes for s in w.sources))
        stored = self._rows.source_hashes(wanted) if wanted else {}
        for w in writes:
            for s in w.sources:
                found = stored.get(s.source_id)
                if found is None:
                    raise InvalidInputError("sources", f"Source {s.source_id!r} is not stored")
                if found != s.content_hash:
                    raise InvalidInputError(
                        "sources", f"Source {s.source_id!r} is stored with another content hash")

    def _write_revision_sync(self, w: TopicWrite) -> None:
        aid, rev = w.ref.artifact_id, w.ref.revision
        self._host._insert_revision_sync(RevisionRow(
            aid, rev, TOPIC_FAMILY, topic_content.content_bytes(w.content),
            topic_content.content_hash(w.content),
            topic_content.lineage_bytes(w.sources, w.base)))
        if w.base is None:
            self._host._insert_head_sync(aid, rev)
        elif not self._host._cas_head_sync(aid, w.base.revision, rev):
            raise RevisionConflictError(f"Topic {aid!r} moved past Revision {w.base.revision}")
        self._rows.insert_lineage(w.ref, w.sources, w.base)


def _refuse_secrets(writes: tuple[object, ...]) -> None:
    """SecretDetectedError (field ``writes[i].content.summary``, ...) when the default
    scanner (the core rules and detect-secrets) finds a secret in a write's title,
    summary or detail, before the transaction: a Topic holds no secret."""
    from powercontext.adapters.secret_scanner import refuse_secret  # writes only

    for i, write in enumerate(writes):
        content = getattr(write, "content", None)
        for name in ("title", "summary", "detail"):
            text = getattr(content, name, None)
            if isinstance(text, str):
                refuse_secret(f"writes[{i}].content.{name}", text)
