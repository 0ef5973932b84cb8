"""OceanBaseTopicBackend: the Topic Memory family on OceanBase MySQL mode (4.3.5 BP3+) or
seekdb, over mysqlclient (Topic Memory RFC, "Storage, Head, and atomic activation";
TOPIC-MEMORY.md; ARCHITECTURE.md, "Decisions").

The rules and the order of the I/O are the engine-neutral
:class:`~powercontext.adapters.topic_database.DatabaseTopicBackend`'s; this module is
the OceanBase half, three layers, one concept each: the family-neutral connection,
transactions and Sources (:class:`~powercontext.adapters.oceanbase.connection.OceanBaseStorage`:
a publication is one READ COMMITTED transaction, a read one REPEATABLE READ read-only
snapshot, a duplicate key a RevisionConflictError), the active projections with their
FULLTEXT and HNSW indexes (:mod:`powercontext.adapters.oceanbase.topic_rows`), and here
the schema, the probes at open and the shared-table primitives (shape, Heads, Revisions,
lineage, publications).

One database holds both families: this backend creates the shared base tables
(``templates.SCHEMA`` without the Memory family's own ``memory_entry_heads``, which the
Memory backend creates with its FULLTEXT index), the shared Topic tables
(``templates.TOPIC_SCHEMA`` without the two active tables, which are OceanBase's own)
and never reads a Memory table; the Memory backend never reads a Topic one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from powercontext.adapters.oceanbase.connection import CONNECTION_LOST, OceanBaseStorage, errno
from powercontext.adapters.oceanbase.schema import SCHEMA_VERSION
from powercontext.adapters.oceanbase.topic_rows import OceanBaseTopicRows
from powercontext.adapters.oceanbase.topic_supervision import OceanBaseTopicSupervision
from powercontext.adapters.storage import RevisionRow
from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.processing_rows import decision_params, decision_row
from powercontext.adapters.storage.rows import opt_text
from powercontext.adapters.storage.rows import text as _text
from powercontext.adapters.topic_budget_spi import (
    budget_params,
    budget_row,
    budget_update_params,
    pending_row,
)
from powercontext.adapters.topic_database import SHAPE_KEY, DatabaseTopicBackend
from powercontext.adapters.topic_insight import TopicInsightMixin
from powercontext.core import canonical
from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingProfile, SourceRef
from powercontext.core.topic.models import (
    TOPIC_FAMILY,
    RetrievalShape,
    TopicCapabilities,
    TopicRef,
)
from powercontext.core.topic.operator import OperatorDecision
from powercontext.core.topic.processing import BudgetRow, PendingRow
from powercontext.sql import oceanbase as obsql
from powercontext.sql import oceanbase_topic as tsql
from powercontext.sql import templates

__all__ = ["OceanBaseTopicBackend"]

_DIALECT = "oceanbase"
#: Shared tables whose DDL comes from the templates (skipped when all exist).
_SHARED_TABLES = frozenset({"powercontext_meta", "artifact_revisions", "artifact_heads",
                            "sources", "memory_entry_versions", "memory_keys"})
_TOPIC_SHARED_TABLES = frozenset({"pc_artifact_lineage_sources",
                                  "pc_artifact_lineage_artifacts",
                                  "pc_topic_memory_retrieval_shape",
                                  "pc_topic_memory_revision_publications"})
#: Template DDL this engine replaces by its own (FULLTEXT / VECTOR inline).
_OWN_DDL = frozenset({"create_memory_entry_heads", "create_topic_active_topics",
                      "create_topic_active_topics_scope_index", "create_topic_active_chunks"})


def _q(name: str, n: int | None = None) -> str:
    return templates.render(name, _DIALECT, n)


class OceanBaseTopicBackend(TopicInsightMixin, OceanBaseTopicSupervision, OceanBaseTopicRows,
                            OceanBaseStorage[TopicCapabilities],
                            DatabaseTopicBackend):
    """Topic Memory on OceanBase MySQL mode or seekdb (Topic Memory RFC, "Storage, Head,
    and atomic activation").

    ``url`` is ``oceanbase://user:password@host:port/database`` (created when missing);
    ``profile`` the deployment's embedding profile (None: FTS-only), whose dimension
    becomes ``VECTOR(dim)`` on the two active tables; ``analyzer`` a version name or an
    Analyzer recorded by a new database. Open checks the server (CapabilityNotSupportedError
    unless OceanBase >= 4.3.5 BP3 in MySQL mode; BackendError when unreachable), creates
    the tables, probes the SPACE parser and the vector index, then runs the family's
    shape checks (RetrievalShapeError, see
    :meth:`~powercontext.adapters.topic_deployment.TopicDeploymentMixin._check_open_sync`).
    Search channels ask at most :attr:`vector_k_cap` (16,384) neighbours per scan.
    """

    def __init__(self, url: str, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None) -> None:
        super().__init__(profile=profile, analyzer=analyzer)
        self._init_connection(url)
        self._topic_vector_column = None

    def __repr__(self) -> str:
        return f"OceanBaseTopicBackend({self._url!r})"

    # ------------------------------------------------------------------ open

    def _open_checked_sync(self) -> TopicCapabilities:
        reasons: list[str] = []
        self._check_server_sync()
        existing = self._tables()
        if not existing >= _SHARED_TABLES:
            for name in templates.SCHEMA:
                if name not in _OWN_DDL:
                    self._exec_ddl(_q(name))
        if not existing >= set(templates.PROCESSING_TABLES):
            for name in templates.PROCESSING_SCHEMA:
                self._exec_ddl(_q(name))
        if not existing >= _TOPIC_SHARED_TABLES:
            for name in templates.TOPIC_SCHEMA:
                if name not in _OWN_DDL:
                    self._exec_ddl(_q(name))
        self._seed_meta_sync((("journal_lock", "0"), ("schema_version", SCHEMA_VERSION)))
        self._migrate_scope_uris_in_tx_sync()  # a journal of an earlier release: its uris
        wanted = self._wanted_dimension(reasons)
        self._create_active_tables_sync(existing, wanted)
        if self._topic_vector_column != wanted and not self._topic_head_count_sync():
            # no Topic Head: the active tables are empty and the shape may still change
            self._reshape_active_tables_sync(wanted)
        fts_ok = self._probe_tokenizer_sync(reasons)
        vectors_ok = self._probe_vectors_sync(wanted, reasons)
        return self._infrastructure_caps(fts_ok, vectors_ok, reasons)

    def _wanted_dimension(self, reasons: list[str]) -> int | None:
        profile = self._profile
        if profile is None:
            return None
        if profile.distance != "l2" or profile.normalization != "unit":
            reasons.append(f"embedding profile {profile.profile_id!r} uses {profile.distance}/"
                           f"{profile.normalization}; the HNSW index is L2 over unit vectors")
            return None
        return profile.dimension

    def _probe_tokenizer_sync(self, reasons: list[str]) -> bool:
        """The SPACE parser keeps every token kind the analyzers emit."""
        try:
            raw = self._all(obsql.tokenize(), (obsql.TOKENIZE_PROBE_TEXT,))[0][0]
        except Exception as exc:
            if errno(exc) in CONNECTION_LOST:
                raise
            reasons.append(f"TOKENIZE is unavailable ({exc}); the SPACE parser was not checked")
            return True
        kept = set(json.loads(_text(raw)))
        lost = sorted(set(obsql.TOKENIZE_MUST_KEEP) - kept)
        if lost:
            reasons.append(f"the SPACE parser drops {lost}, which every analyzer indexes: "
                           "full-text search is off on this server")
            return False
        return True

    def _probe_vectors_sync(self, wanted: int | None, reasons: list[str]) -> bool:
        """The active tables carry ``VECTOR(wanted)`` with an HNSW L2 index, and a
        Scope-filtered APPROXIMATE scan of each answers."""
        if wanted is None:
            return False
        if self._topic_vector_column != wanted:
            reasons.append(f"the active Topic tables have VECTOR({self._topic_vector_column}), "
                           f"the embedding profile has {wanted} dimensions")
            return False
        zero = obsql.vector_literal([0.0] * wanted)
        try:
            for search in (tsql.topic_vector_search, tsql.chunk_vector_search):
                self._all(search(True), (zero, "", zero, 1))
        except Exception as exc:
            if errno(exc) in CONNECTION_LOST:
                raise
            reasons.append(f"the Topic vector scan failed ({exc}); on OceanBase 4.3.5 raise "
                           "ob_vector_memory_limit_percentage")
            return False
        return True

    # ------------------------------------------------------------------ shape

    def _shape_sync(self) -> RetrievalShape | None:
        rows = self._all(_q("topic_shape_get"), (SHAPE_KEY,))
        if not rows:
            return None
        kind, policy, analyzer_version, profile, fingerprint = rows[0]
        raw = opt_text(profile)
        return RetrievalShape(
            _text(kind), _text(policy), _text(analyzer_version),  # type: ignore[arg-type]
            shared_rows.embedding_profile(raw) if raw is not None else None,
            opt_text(fingerprint))

    def _set_shape_sync(self, shape: RetrievalShape) -> None:
        self._exec(_q("topic_shape_delete"), (SHAPE_KEY,))
        profile = shape.embedding_profile
        self._exec(_q("topic_shape_insert"), (
            SHAPE_KEY, shape.kind, shape.chunk_policy, shape.analyzer_version,
            canonical.profile_bytes(profile).decode("utf-8") if profile is not None else None,
            shape.profile_fingerprint))

    def _topic_head_count_sync(self) -> int:
        return int(self._all(_q("topic_head_count"), (TOPIC_FAMILY,))[0][0])

    # ------------------------------------------------------------------ publication

    def _head_for_update_sync(self, artifact_id: str) -> tuple[int, str] | None:
        rows = self._all(_q("topic_head_get") + " FOR UPDATE", (artifact_id,))
        return (int(rows[0][0]), _text(rows[0][1])) if rows else None

    def _topic_scope_sync(self, artifact_id: str) -> str | None:
        rows = self._all(_q("topic_scope_get"), (artifact_id,))
        return _text(rows[0][0]) if rows else None

    def _source_hashes_sync(self, source_ids: Sequence[str]) -> dict[str, str]:
        return {_text(sid): _text(h) for sid, h in
                self._in_chunks("topic_source_hashes", list(dict.fromkeys(source_ids)))}

    def _insert_revision_sync(self, row: RevisionRow) -> None:
        self._exec(_q("revision_insert"), shared_rows.revision_params(row))

    def _insert_head_sync(self, artifact_id: str, revision: int) -> None:
        self._exec(_q("head_insert"), (artifact_id, revision))

    def _cas_head_sync(self, artifact_id: str, base_revision: int, revision: int) -> bool:
        # CLIENT.FOUND_ROWS makes rowcount the number of *matched* rows.
        cur = self._exec(_q("head_cas"), (revision, artifact_id, base_revision))
        return int(cur.rowcount) == 1

    def _insert_lineage_sync(self, ref: TopicRef, sources: Sequence[SourceRef],
                             based_on: TopicRef | None) -> None:
        self._exec_many(_q("topic_lineage_source_insert"), [
            (ref.artifact_id, ref.revision, s.source_id, s.content_hash) for s in sources])
        if based_on is not None:
            self._exec(_q("topic_lineage_artifact_insert"), (
                ref.artifact_id, ref.revision, based_on.family, based_on.artifact_id,
                based_on.revision))

    def _insert_publication_sync(self, ref: TopicRef, scope_id: str, published_at: str) -> None:
        self._exec(_q("topic_publication_insert"),
                   (ref.artifact_id, ref.revision, scope_id, published_at))

    # ------------------------------------------------------------------ allowance, guards
    # (READ COMMITTED: ``lock`` reads take the row lock FOR UPDATE until COMMIT)

    def _budget_row_sync(self, scope_id: str, binding_name: str, source_after: int, *,
                         lock: bool) -> BudgetRow | None:
        rows = self._all(_q("budget_get") + (" FOR UPDATE" if lock else ""),
                         (scope_id, binding_name, source_after))
        return budget_row(rows[0]) if rows else None

    def _budget_insert_sync(self, row: BudgetRow) -> None:
        self._exec(_q("budget_insert"), budget_params(row))

    def _budget_update_sync(self, row: BudgetRow) -> None:
        self._exec(_q("budget_update"), budget_update_params(row))

    def _budget_delete_sync(self, scope_id: str, binding_name: str, source_after: int,
                            attempt_id: str) -> bool:
        cur = self._exec(_q("budget_delete"), (scope_id, binding_name, source_after, attempt_id))
        return int(cur.rowcount) == 1

    def _cursor_sync(self, binding_name: str, scope_id: str, *, lock: bool) -> int | None:
        rows = self._all(_q("guard_cursor_get") + (" FOR UPDATE" if lock else ""),
                         (binding_name, scope_id))
        return int(rows[0][0]) if rows else None

    def _cursor_insert_sync(self, binding_name: str, scope_id: str, position: int) -> None:
        self._exec(_q("guard_cursor_insert"), (binding_name, scope_id, position))

    def _cursor_cas_sync(self, binding_name: str, scope_id: str, expected: int,
                         position: int) -> bool:
        # CLIENT.FOUND_ROWS makes rowcount the number of *matched* rows.
        cur = self._exec(_q("guard_cursor_cas"), (position, binding_name, scope_id, expected))
        return int(cur.rowcount) == 1

    def _pending_row_sync(self, binding_name: str, scope_id: str, *,
                          lock: bool) -> PendingRow | None:
        rows = self._all(_q("guard_pending_get") + (" FOR UPDATE" if lock else ""),
                         (binding_name, scope_id))
        return pending_row(binding_name, scope_id, rows[0]) if rows else None

    def _pending_handled_sync(self, binding_name: str, scope_id: str, handled: int) -> None:
        self._exec(_q("guard_pending_handled"), (handled, binding_name, scope_id))

    def _pending_delete_sync(self, binding_name: str, scope_id: str) -> None:
        self._exec(_q("guard_pending_delete"), (binding_name, scope_id))

    # ------------------------------------------------------------------ operator decisions

    def _decision_insert_sync(self, decision: OperatorDecision) -> None:
        self._exec(_q("operator_decision_insert"), tuple(decision_params(decision)))

    def _decisions_sync(self, scope_id: str, limit: int) -> list[OperatorDecision]:
        return [decision_row(r) for r in self._all(_q("operator_decisions_get"),
                                                   (scope_id, limit))]

    # ------------------------------------------------------------------ reads

    def _topic_revision_sync(self, artifact_id: str, revision: int) -> RevisionRow | None:
        rows = self._all(_q("topic_revision_get"), (artifact_id, revision, TOPIC_FAMILY))
        return shared_rows.revision_row(rows[0]) if rows else None

    def _publication_sync(self, artifact_id: str, revision: int) -> tuple[str, str] | None:
        rows = self._all(_q("topic_publication_get"), (artifact_id, revision))
        return (_text(rows[0][0]), _text(rows[0][1])) if rows else None

    def _lineage_sync(self, artifact_id: str,
                      revision: int) -> tuple[list[SourceRef], list[TopicRef]]:
        sources = [SourceRef(_text(s), _text(h)) for s, h in
                   self._all(_q("topic_lineage_sources_get"), (artifact_id, revision))]
        based = [TopicRef(_text(aid), int(rev), _text(fam)) for fam, aid, rev in
                 self._all(_q("topic_lineage_artifacts_get"), (artifact_id, revision))]
        return sources, based

    def _topic_heads_sync(self, scope_id: str) -> list[TopicRef]:
        return [TopicRef(_text(aid), int(rev)) for aid, rev in
                self._all(_q("topic_heads_by_scope"), (scope_id,))]
