"""SQLTopicBackend: the engine-neutral Topic Memory backend (Topic Memory RFC, "Storage,
Head, and atomic activation"; TOPIC-MEMORY.md), the page an engine author reads.

:class:`SQLTopicBackend` implements :class:`powercontext.ports.topic.TopicMemoryBackend`
(with :class:`~powercontext.ports.topic.TopicInsight`,
:class:`~powercontext.ports.topic.TopicRebuild` and
:class:`~powercontext.ports.topic_supervision.SupervisorLockingPolicy`) for any SQL
database by delegating each call to one collaborator of one concept, composed over the
storage it is (the "host": worker thread, transactions, metadata, Sources, the Artifact
rows):

- :class:`~powercontext.adapters.storage.sources.SourceJournal`: the Source store and
  its journals (:class:`powercontext.ports.SourceStore`, answered through it);
- :class:`~powercontext.adapters.topic_rows.TopicRows`: the shared Topic rows (shape,
  Heads, Revisions, lineage, publications), one shared template each;
- :class:`~powercontext.adapters.topic_ledger_rows.SQLLedgerRows`: the processing
  ledger's rows (budget rows, Cursors, Pending, audit rows);
- :class:`~powercontext.adapters.topic_deployment.TopicDeployment`: the checks at open
  and the shape the first publication fixes;
- :class:`~powercontext.adapters.topic_publication.TopicUnitOfWork`: ``publish``;
- :class:`~powercontext.adapters.topic_reads.TopicReads`: ``search``, ``get``, ``heads``;
- :class:`~powercontext.adapters.topic_rebuild.TopicRebuild`: the analyzer migration;
- :class:`~powercontext.adapters.topic_allowance.TopicAllowance`: ``begin_attempt``,
  ``reserve``, ``record_failure``;
- :class:`~powercontext.adapters.topic_processing_store.TopicProcessingStatus`:
  ``flush``, ``processing_status``;
- :class:`~powercontext.adapters.topic_operator_store.TopicOperator`: ``unblock`` and
  the operator's views;
- :class:`~powercontext.adapters.topic_supervision_store.TopicSupervision`: leases, the
  term fence, discovery pages and waves (over
  :class:`~powercontext.adapters.topic_supervision_rows.SQLSupervisionRows` and the
  engine's :class:`~powercontext.ports.engine.SupervisorLeases`);
- :class:`~powercontext.adapters.topic_insight.TopicInsightViews`: the dashboard's views.

An engine's Topic backend subclasses this class and gives three things from its
``__init__``: its :class:`~powercontext.ports.engine.SQLEngine` (``_use_engine``), its
:class:`~powercontext.ports.engine.TopicSearchProjection` (the active rows with their
full-text and vector indexes) and its :class:`~powercontext.ports.engine.SupervisorLeases`
(both to :meth:`_compose`); plus ``_open_sync``: ``_connect_sync()``, then its DDL and
probes inside ``engine.opening``, ending in ``self.deployment.infrastructure_caps(...)``.
The rules are in :mod:`powercontext.core.topic`; here is only who does what.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from powercontext.adapters.storage.sources import SourceJournal
from powercontext.adapters.storage.sql_storage import SQLStorage
from powercontext.adapters.topic_allowance import TopicAllowance
from powercontext.adapters.topic_deployment import TopicDeployment
from powercontext.adapters.topic_insight import TopicInsightViews
from powercontext.adapters.topic_ledger_rows import SQLLedgerRows
from powercontext.adapters.topic_operator_store import TopicOperator
from powercontext.adapters.topic_processing_store import TopicProcessingStatus
from powercontext.adapters.topic_publication import TopicUnitOfWork
from powercontext.adapters.topic_reads import TopicReads
from powercontext.adapters.topic_rebuild import TopicRebuild
from powercontext.adapters.topic_rows import SHAPE_KEY, TopicCard, TopicRows
from powercontext.adapters.topic_supervision_rows import SQLSupervisionRows
from powercontext.adapters.topic_supervision_store import TopicSupervision
from powercontext.core import analyzer as analyzers
from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingProfile, EmbeddingVector, Source
from powercontext.core.topic.insight import (
    CitingRevision,
    DayCount,
    ScopeSummary,
    SupervisionView,
)
from powercontext.core.topic.models import (
    TopicCapabilities,
    TopicPublication,
    TopicRebuildReport,
    TopicRef,
    TopicRevision,
    TopicSearchRequest,
    TopicSearchResult,
)
from powercontext.core.topic.operator import BlockedFrontier, OperatorDecision
from powercontext.core.topic.processing import (
    AttemptGrant,
    FlushStatus,
    JournalEntry,
    PendingRow,
    ScopeStatus,
)
from powercontext.core.topic.supervision import SchedulingState, SupervisorTerm, WaveTarget
from powercontext.ports.engine import SupervisorLeases, TopicSearchProjection
from powercontext.ports.topic_supervision import SupervisorLocking

__all__ = ["SHAPE_KEY", "DatabaseTopicBackend", "SQLTopicBackend", "TopicCard"]


class SQLTopicBackend(SQLStorage[TopicCapabilities]):
    """The engine-neutral Topic Memory backend; implements the TopicMemoryBackend port.

    ``profile``: the deployment's embedding profile (None: FTS-only). With it and a
    working vector projection the first publication fixes a hybrid shape (4 channels);
    otherwise an fts one (2 channels). ``analyzer`` (a version name or an Analyzer;
    None: no choice) is recorded by a new database; a database recording another
    version than an explicit choice raises AnalyzerMismatchError at open.
    """

    projection: TopicSearchProjection
    leases: SupervisorLeases
    deployment: TopicDeployment

    def __init__(self, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None) -> None:
        super().__init__()
        #: the Source store (:class:`powercontext.ports.SourceStore`), over this storage
        self.source_journal = SourceJournal(self)
        self._profile = profile
        # an explicit choice as a registered Analyzer (InvalidInputError when unknown)
        self._analyzer_choice = (analyzer if analyzer is None or isinstance(analyzer, Analyzer)
                                 else analyzers.get(analyzer))

    def _compose(self, projection: TopicSearchProjection, leases: SupervisorLeases) -> None:
        """Build the collaborators over ``self.engine`` (set by the engine first), the
        engine's ``projection`` and its ``leases``."""
        self.projection = projection
        self.leases = leases
        self.topic_rows = TopicRows(self.engine)
        self.ledger_rows = SQLLedgerRows(self.engine)
        self.deployment = TopicDeployment(self, self.topic_rows, projection, self._profile,
                                          self._analyzer_choice)
        self.supervision = TopicSupervision(
            self, SQLSupervisionRows(self.engine, leases), self.ledger_rows,
            lease_expires=leases.expires)
        fence: Callable[[SupervisorTerm], None] = self.supervision.fence
        self.allowance = TopicAllowance(self, self.ledger_rows, fence)
        self.unit_of_work = TopicUnitOfWork(self, self.topic_rows, self.ledger_rows,
                                            projection, self.deployment, fence)
        self.reads = TopicReads(self, self.topic_rows, projection, self.deployment)
        self.migration = TopicRebuild(self, self.topic_rows, projection, self.deployment,
                                      self.reads)
        self.processing = TopicProcessingStatus(self)
        self.operator = TopicOperator(self, self.ledger_rows, self.processing)
        self.insight = TopicInsightViews(self, self.engine, self.reads)

    # ------------------------------------------------------------------ family hooks

    def _check_open_sync(self) -> None:
        self.deployment.check_open()

    @property
    def profile(self) -> EmbeddingProfile | None:
        """The configured embedding profile (None: FTS-only)."""
        return self._profile

    @property
    def lease_expires(self) -> bool:
        """True when this engine's Supervisor leases expire by database time (the
        contract kit's declaration: acquire and renew then take a lease length)."""
        return self.supervision.lease_expires

    @property
    def supervisor_locking(self) -> SupervisorLocking:
        """``"lease"`` when this engine's leases expire by database time, else
        ``"file-lock"`` (:class:`~powercontext.ports.topic_supervision.SupervisorLockingPolicy`)."""
        return self.supervision.supervisor_locking

    async def put_server_sources(self, scope_id: str, sources: Sequence[Source], *,
                                 lineage_only: bool) -> tuple[int, ...]:
        """Server-only: :meth:`put_scoped_sources` with the ``lineage_only`` flag of the
        new journal rows (Topic Memory RFC, "Source, Window, Cursor, and Pending": a
        lineage-only Source may be cited but is never read as new evidence). A client
        cannot set ``lineage_only``: no CLI, HTTP or MCP call reaches this; the
        processing pipeline and the contract kit's state machines do."""
        return await self.source_journal.put_server_sources(scope_id, sources,
                                                            lineage_only=lineage_only)

    # ------------------------------------------------------------------ Sources

    async def put_sources(self, sources: Sequence[Source]) -> tuple[int, ...]:
        """See :meth:`SourceJournal.put_sources` (:class:`powercontext.ports.SourceStore`)."""
        return await self.source_journal.put_sources(sources)

    async def get_sources(self, source_ids: Sequence[str]) -> tuple[Source, ...]:
        """See :meth:`SourceJournal.get_sources`."""
        return await self.source_journal.get_sources(source_ids)

    async def journal(self, after: int = 0, limit: int = 100) -> tuple[tuple[int, Source], ...]:
        """See :meth:`SourceJournal.journal`."""
        return await self.source_journal.journal(after, limit)

    async def put_scoped_sources(self, scope_id: str, sources: Sequence[Source], *,
                                 once_per_uri: bool = False) -> tuple[int, ...]:
        """See :meth:`SourceJournal.put_scoped_sources`."""
        return await self.source_journal.put_scoped_sources(scope_id, sources,
                                                     once_per_uri=once_per_uri)

    async def scope_position_of_uri(self, scope_id: str, uri: str) -> int | None:
        """See :meth:`SourceJournal.scope_position_of_uri`."""
        return await self.source_journal.scope_position_of_uri(scope_id, uri)

    async def scope_journal(self, scope_id: str, after: int = 0,
                            limit: int = 100) -> tuple[JournalEntry, ...]:
        """See :meth:`SourceJournal.scope_journal`."""
        return await self.source_journal.scope_journal(scope_id, after, limit)

    async def source_head(self, scope_id: str) -> int:
        """See :meth:`SourceJournal.source_head`."""
        return await self.source_journal.source_head(scope_id)

    async def processing_cursor(self, binding_name: str, scope_id: str) -> int:
        """See :meth:`SourceJournal.processing_cursor`."""
        return await self.source_journal.processing_cursor(binding_name, scope_id)

    # ------------------------------------------------------------------ Topic store

    async def topic_capabilities(self) -> TopicCapabilities:
        """See :meth:`TopicReads.topic_capabilities`."""
        return await self.reads.topic_capabilities()

    async def analyzer(self) -> Analyzer:
        """See :meth:`TopicReads.analyzer`."""
        return await self.reads.analyzer()

    async def publish(self, publication: TopicPublication) -> tuple[TopicRevision, ...]:
        """See :meth:`TopicUnitOfWork.publish`."""
        return await self.unit_of_work.publish(publication)

    async def search(self, request: TopicSearchRequest,
                     query_vector: EmbeddingVector | None = None) -> TopicSearchResult:
        """See :meth:`TopicReads.search`."""
        return await self.reads.search(request, query_vector)

    async def get(self, scope_id: str, ref: TopicRef) -> TopicRevision:
        """See :meth:`TopicReads.get`."""
        return await self.reads.get(scope_id, ref)

    async def heads(self, scope_id: str) -> tuple[TopicRef, ...]:
        """See :meth:`TopicReads.heads`."""
        return await self.reads.heads(scope_id)

    def allow_analyzer_migration(self) -> None:
        """See :meth:`TopicRebuild.allow_analyzer_migration`."""
        self.migration.allow_analyzer_migration()

    async def rebuild_fts(self, progress: Callable[[int, int, str], None] | None = None,
                          ) -> TopicRebuildReport:
        """See :meth:`TopicRebuild.rebuild_fts`."""
        return await self.migration.rebuild_fts(progress)

    # ------------------------------------------------------------------ processing ledger

    async def flush(self, scope_id: str) -> FlushStatus:
        """See :meth:`TopicProcessingStatus.flush`."""
        return await self.processing.flush(scope_id)

    async def processing_status(self, scope_id: str | None = None) -> tuple[ScopeStatus, ...]:
        """See :meth:`TopicProcessingStatus.processing_status`."""
        return await self.processing.processing_status(scope_id)

    async def begin_attempt(self, scope_id: str, source_after: int, *,
                            supervisor: SupervisorTerm | None = None) -> AttemptGrant:
        """See :meth:`TopicAllowance.begin_attempt`."""
        return await self.allowance.begin_attempt(scope_id, source_after,
                                                  supervisor=supervisor)

    async def reserve(self, grant: AttemptGrant, requests: int, tokens: int, *,
                      through: int) -> None:
        """See :meth:`TopicAllowance.reserve`."""
        await self.allowance.reserve(grant, requests, tokens, through=through)

    async def record_failure(self, grant: AttemptGrant, code: str, *,
                             through: int | None = None) -> None:
        """See :meth:`TopicAllowance.record_failure`."""
        await self.allowance.record_failure(grant, code, through=through)

    async def unblock(self, scope_id: str, action: str, *, frontier: int,
                      position: int | None = None, decided_by: str,
                      reason: str) -> OperatorDecision:
        """See :meth:`TopicOperator.unblock`."""
        return await self.operator.unblock(scope_id, action, frontier=frontier,
                                           position=position, decided_by=decided_by,
                                           reason=reason)

    async def operator_decisions(self, scope_id: str, limit: int = 20
                                 ) -> tuple[OperatorDecision, ...]:
        """See :meth:`TopicOperator.operator_decisions`."""
        return await self.operator.operator_decisions(scope_id, limit)

    async def blocked_frontiers(self, scope_id: str | None = None
                                ) -> tuple[BlockedFrontier, ...]:
        """See :meth:`TopicOperator.blocked_frontiers`."""
        return await self.operator.blocked_frontiers(scope_id)

    # ------------------------------------------------------------------ Supervisor

    async def acquire_lease(self, holder_id: str, lease_seconds: float | None
                            ) -> SupervisorTerm | None:
        """See :meth:`TopicSupervision.acquire_lease`."""
        return await self.supervision.acquire_lease(holder_id, lease_seconds)

    async def renew_lease(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        """See :meth:`TopicSupervision.renew_lease`."""
        return await self.supervision.renew_lease(term, lease_seconds)

    async def release_lease(self, term: SupervisorTerm) -> None:
        """See :meth:`TopicSupervision.release_lease`."""
        await self.supervision.release_lease(term)

    async def pending_page(self, after_scope: str | None, limit: int, *,
                           flushed_only: bool = False,
                           outside_wave: str | None = None) -> tuple[PendingRow, ...]:
        """See :meth:`TopicSupervision.pending_page`."""
        return await self.supervision.pending_page(after_scope, limit,
                                                   flushed_only=flushed_only,
                                                   outside_wave=outside_wave)

    async def scheduling_state(self) -> SchedulingState:
        """See :meth:`TopicSupervision.scheduling_state`."""
        return await self.supervision.scheduling_state()

    async def clear_wave_targets(self, term: SupervisorTerm) -> int:
        """See :meth:`TopicSupervision.clear_wave_targets`."""
        return await self.supervision.clear_wave_targets(term)

    async def freeze_wave(self, term: SupervisorTerm, wave_id: str) -> int:
        """See :meth:`TopicSupervision.freeze_wave`."""
        return await self.supervision.freeze_wave(term, wave_id)

    async def wave_targets(self, wave_id: str, after_scope: str | None, limit: int
                           ) -> tuple[WaveTarget, ...]:
        """See :meth:`TopicSupervision.wave_targets`."""
        return await self.supervision.wave_targets(wave_id, after_scope, limit)

    async def complete_target(self, term: SupervisorTerm, wave_id: str, scope_id: str) -> bool:
        """See :meth:`TopicSupervision.complete_target`."""
        return await self.supervision.complete_target(term, wave_id, scope_id)

    async def complete_wave(self, term: SupervisorTerm, wave_id: str) -> bool:
        """See :meth:`TopicSupervision.complete_wave`."""
        return await self.supervision.complete_wave(term, wave_id)

    async def handle_flush(self, scope_id: str, target: int, claimed_flush_generation: int,
                           *, supervisor: SupervisorTerm | None = None) -> bool:
        """See :meth:`TopicSupervision.handle_flush`."""
        return await self.supervision.handle_flush(scope_id, target,
                                                   claimed_flush_generation,
                                                   supervisor=supervisor)

    # ------------------------------------------------------------------ dashboard views

    async def citing_topic_revisions(self, source_id: str, limit: int = 200
                                     ) -> tuple[CitingRevision, ...]:
        """See :meth:`TopicInsightViews.citing_topic_revisions`."""
        return await self.insight.citing_topic_revisions(source_id, limit)

    async def scopes(self) -> tuple[ScopeSummary, ...]:
        """See :meth:`TopicInsightViews.scopes`."""
        return await self.insight.scopes()

    async def topic_history(self, scope_id: str, artifact_id: str, limit: int = 50
                            ) -> tuple[TopicRevision, ...]:
        """See :meth:`TopicInsightViews.topic_history`."""
        return await self.insight.topic_history(scope_id, artifact_id, limit)

    async def publications_per_day(self, scope_id: str) -> tuple[DayCount, ...]:
        """See :meth:`TopicInsightViews.publications_per_day`."""
        return await self.insight.publications_per_day(scope_id)

    async def sources_per_day(self, scope_id: str) -> tuple[DayCount, ...]:
        """See :meth:`TopicInsightViews.sources_per_day`."""
        return await self.insight.sources_per_day(scope_id)

    async def supervision_view(self) -> SupervisionView:
        """See :meth:`TopicInsightViews.supervision_view`."""
        return await self.insight.supervision_view()


#: The name the engine-neutral Topic backend had before it was a facade.
DatabaseTopicBackend = SQLTopicBackend
