"""SQLTopicRows: the Topic Memory family's storage primitives that run one shared
template each, written once over the engine port (Topic Memory RFC, "Publication",
"Source, Window, Cursor, and Pending", "Operator decisions"): the retrieval shape, heads
and Revisions, lineage and publications, the budget reservations, Cursors and Pending
guards, operator decisions. What each engine does its own way stays with it: the search
projection (:class:`~powercontext.ports.engine.TopicSearchProjection`) and the reads
written as engine fragments."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.processing_rows import decision_params, decision_row
from powercontext.adapters.storage.rows import RevisionRow, opt_text, text
from powercontext.adapters.topic_budget_spi import (
    budget_params,
    budget_row,
    budget_update_params,
    pending_row,
)
from powercontext.adapters.topic_database import SHAPE_KEY, DatabaseTopicBackend
from powercontext.adapters.topic_supervision_sql_rows import SQLSupervisionRows
from powercontext.core import canonical
from powercontext.core.models import SourceRef
from powercontext.core.topic.models import TOPIC_FAMILY, RetrievalShape, TopicRef
from powercontext.core.topic.operator import OperatorDecision
from powercontext.core.topic.processing import BudgetRow, PendingRow
from powercontext.ports.engine import SQLEngine

__all__ = ["SQLTopicRows"]


class SQLTopicRows(SQLSupervisionRows, DatabaseTopicBackend):
    """:class:`DatabaseTopicBackend`'s shared-template primitives over ``engine`` (the
    concrete adapter's :class:`~powercontext.ports.engine.SQLEngine`). A ``lock`` asks
    for the rows ``FOR UPDATE`` where the engine has row locks."""

    engine: SQLEngine

    # ------------------------------------------------------------------ retrieval shape

    def _shape_sync(self) -> RetrievalShape | None:
        rows = self.engine.query("topic_shape_get", (SHAPE_KEY,))
        if not rows:
            return None
        kind, policy, analyzer_version, profile, fingerprint = rows[0]
        raw = opt_text(profile)
        return RetrievalShape(
            text(kind), text(policy), text(analyzer_version),  # type: ignore[arg-type]
            shared_rows.embedding_profile(raw) if raw is not None else None,
            opt_text(fingerprint))

    def _set_shape_sync(self, shape: RetrievalShape) -> None:
        profile = shape.embedding_profile
        self.engine.execute("topic_shape_delete", (SHAPE_KEY,))
        self.engine.execute("topic_shape_insert", (
            SHAPE_KEY, shape.kind, shape.chunk_policy, shape.analyzer_version,
            canonical.profile_bytes(profile).decode("utf-8") if profile is not None else None,
            shape.profile_fingerprint))

    # ------------------------------------------------------------------ heads, Revisions

    def _topic_head_count_sync(self) -> int:
        return int(self.engine.query("topic_head_count", (TOPIC_FAMILY,))[0][0])

    def _head_for_update_sync(self, artifact_id: str) -> tuple[int, str] | None:
        rows = self.engine.query("topic_head_get", (artifact_id,), for_update=True)
        return (int(rows[0][0]), text(rows[0][1])) if rows else None

    def _topic_scope_sync(self, artifact_id: str) -> str | None:
        rows = self.engine.query("topic_scope_get", (artifact_id,))
        return text(rows[0][0]) if rows else None

    def _topic_revision_sync(self, artifact_id: str, revision: int) -> RevisionRow | None:
        rows = self.engine.query("topic_revision_get", (artifact_id, revision, TOPIC_FAMILY))
        return shared_rows.revision_row(rows[0]) if rows else None

    def _topic_heads_sync(self, scope_id: str) -> list[TopicRef]:
        return [TopicRef(text(aid), int(rev)) for aid, rev in
                self.engine.query("topic_heads_by_scope", (scope_id,))]

    # ------------------------------------------------------------------ lineage, publication

    def _source_hashes_sync(self, source_ids: Sequence[str]) -> dict[str, str]:
        return {text(sid): text(h) for sid, h in
                self.engine.query_in("topic_source_hashes", source_ids)}

    def _insert_lineage_sync(self, ref: TopicRef, sources: Sequence[SourceRef],
                             based_on: TopicRef | None) -> None:
        self.engine.execute_many("topic_lineage_source_insert", [
            (ref.artifact_id, ref.revision, s.source_id, s.content_hash) for s in sources])
        if based_on is not None:
            self.engine.execute("topic_lineage_artifact_insert", (
                ref.artifact_id, ref.revision, based_on.family, based_on.artifact_id,
                based_on.revision))

    def _database_utc_now_sync(self) -> str:
        return self.engine.database_now()

    def _insert_publication_sync(self, ref: TopicRef, scope_id: str, published_at: str) -> None:
        self.engine.execute("topic_publication_insert",
                            (ref.artifact_id, ref.revision, scope_id, published_at))

    def _publication_sync(self, artifact_id: str, revision: int) -> tuple[str, str] | None:
        rows = self.engine.query("topic_publication_get", (artifact_id, revision))
        return (text(rows[0][0]), text(rows[0][1])) if rows else None

    def _lineage_sync(self, artifact_id: str,
                      revision: int) -> tuple[list[SourceRef], list[TopicRef]]:
        sources = [SourceRef(text(s), text(h)) for s, h in
                   self.engine.query("topic_lineage_sources_get", (artifact_id, revision))]
        based = [TopicRef(text(aid), int(rev), text(fam)) for fam, aid, rev in
                 self.engine.query("topic_lineage_artifacts_get", (artifact_id, revision))]
        return sources, based

    # ------------------------------------------------------------------ reservations

    def _budget_row_sync(self, scope_id: str, binding_name: str, source_after: int, *,
                         lock: bool) -> BudgetRow | None:
        rows = self.engine.query("budget_get", (scope_id, binding_name, source_after),
                                 for_update=lock)
        return budget_row(rows[0]) if rows else None

    def _budget_insert_sync(self, row: BudgetRow) -> None:
        self.engine.execute("budget_insert", budget_params(row))

    def _budget_update_sync(self, row: BudgetRow) -> None:
        self.engine.execute("budget_update", budget_update_params(row))

    def _budget_delete_sync(self, scope_id: str, binding_name: str, source_after: int,
                            attempt_id: str) -> bool:
        return self.engine.execute(
            "budget_delete", (scope_id, binding_name, source_after, attempt_id)) == 1

    # ------------------------------------------------------------------ Cursors, Pending

    def _cursor_sync(self, binding_name: str, scope_id: str, *, lock: bool) -> int | None:
        rows = self.engine.query("guard_cursor_get", (binding_name, scope_id), for_update=lock)
        return int(rows[0][0]) if rows else None

    def _cursor_insert_sync(self, binding_name: str, scope_id: str, position: int) -> None:
        self.engine.execute("guard_cursor_insert", (binding_name, scope_id, position))

    def _cursor_cas_sync(self, binding_name: str, scope_id: str, expected: int,
                         position: int) -> bool:
        return self.engine.execute(
            "guard_cursor_cas", (position, binding_name, scope_id, expected)) == 1

    def _pending_row_sync(self, binding_name: str, scope_id: str, *,
                          lock: bool) -> PendingRow | None:
        rows = self.engine.query("guard_pending_get", (binding_name, scope_id), for_update=lock)
        return pending_row(binding_name, scope_id, rows[0]) if rows else None

    def _pending_handled_sync(self, binding_name: str, scope_id: str, handled: int) -> None:
        self.engine.execute("guard_pending_handled", (handled, binding_name, scope_id))

    def _pending_delete_sync(self, binding_name: str, scope_id: str) -> None:
        self.engine.execute("guard_pending_delete", (binding_name, scope_id))

    # ------------------------------------------------------------------ operator decisions

    def _decision_insert_sync(self, decision: OperatorDecision) -> None:
        self.engine.execute("operator_decision_insert", tuple(decision_params(decision)))

    def _decisions_sync(self, scope_id: str, limit: int) -> list[OperatorDecision]:
        return [decision_row(r) for r in
                self.engine.query("operator_decisions_get", (scope_id, limit))]
