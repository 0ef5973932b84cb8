"""The engine-neutral processing ledger and Supervisor classes of the SQL Topic backends
(:class:`~powercontext.adapters.topic_allowance.TopicAllowance`,
:class:`~powercontext.adapters.topic_processing_store.TopicProcessingStatus`,
:class:`~powercontext.adapters.topic_operator_store.TopicOperator`,
:class:`~powercontext.adapters.topic_supervision_store.TopicSupervision`), composed over
the in-memory Topic backend's dict rows: the same rules and order of I/O as the SQL
backends, so the contract kit holds both to one behaviour.

:class:`InMemoryLedgerRows` and :class:`InMemorySupervisionRows` give the rows those
classes read and write (:class:`~powercontext.adapters.topic_ledger_rows.LedgerRows`,
:class:`~powercontext.adapters.topic_supervision_rows.SupervisionRows`) over the
backend's ``_..._sync`` dict primitives; :class:`InMemoryTopicFronts` is the in-memory
backend's part that builds and calls them."""

from __future__ import annotations

import datetime
from typing import Any

from powercontext.adapters.topic_allowance import TopicAllowance
from powercontext.adapters.topic_operator_store import TopicOperator
from powercontext.adapters.topic_processing_store import TopicProcessingStatus
from powercontext.adapters.topic_supervision_store import TopicSupervision
from powercontext.core.topic.operator import BlockedFrontier, OperatorDecision
from powercontext.core.topic.processing import (
    AttemptGrant,
    BudgetRow,
    FlushStatus,
    PendingRow,
    ScopeStatus,
)
from powercontext.core.topic.supervision import SchedulingState, SupervisorTerm, WaveTarget
from powercontext.ports.topic_supervision import SupervisorLocking

__all__ = ["InMemoryLedgerRows", "InMemorySupervisionRows", "InMemoryTopicFronts"]


class InMemoryLedgerRows:
    """The ledger's rows over the in-memory backend's dict primitives."""

    def __init__(self, backend: Any) -> None:
        self._b = backend

    def budget_row(self, scope_id: str, binding_name: str, source_after: int, *,
                   lock: bool) -> BudgetRow | None:
        return self._b._budget_row_sync(  # type: ignore[no-any-return]
            scope_id, binding_name, source_after, lock=lock)

    def budget_insert(self, row: BudgetRow) -> None:
        self._b._budget_insert_sync(row)

    def budget_update(self, row: BudgetRow) -> None:
        self._b._budget_update_sync(row)

    def budget_delete(self, scope_id: str, binding_name: str, source_after: int,
                      attempt_id: str) -> bool:
        return bool(self._b._budget_delete_sync(scope_id, binding_name, source_after,
                                                attempt_id))

    def cursor(self, binding_name: str, scope_id: str, *, lock: bool) -> int | None:
        return self._b._cursor_sync(binding_name, scope_id,  # type: ignore[no-any-return]
                                    lock=lock)

    def cursor_insert(self, binding_name: str, scope_id: str, position: int) -> None:
        self._b._cursor_insert_sync(binding_name, scope_id, position)

    def cursor_cas(self, binding_name: str, scope_id: str, expected: int,
                   position: int) -> bool:
        return bool(self._b._cursor_cas_sync(binding_name, scope_id, expected, position))

    def pending_row(self, binding_name: str, scope_id: str, *,
                    lock: bool) -> PendingRow | None:
        return self._b._pending_row_sync(  # type: ignore[no-any-return]
            binding_name, scope_id, lock=lock)

    def pending_handled(self, binding_name: str, scope_id: str, handled: int) -> None:
        self._b._pending_handled_sync(binding_name, scope_id, handled)

    def pending_delete(self, binding_name: str, scope_id: str) -> None:
        self._b._pending_delete_sync(binding_name, scope_id)

    def decision_insert(self, decision: OperatorDecision) -> None:
        self._b._decision_insert_sync(decision)

    def decisions(self, scope_id: str, limit: int) -> list[OperatorDecision]:
        return self._b._decisions_sync(scope_id, limit)  # type: ignore[no-any-return]

    def now(self) -> str:
        return self._b._database_utc_now_sync()  # type: ignore[no-any-return]


class InMemorySupervisionRows:
    """The Supervisor's rows over the in-memory backend's dict primitives."""

    def __init__(self, backend: Any) -> None:
        self._b = backend

    def lease(self, group: str, *, lock: bool) -> tuple[str, int, bool] | None:
        return self._b._lease_sync(group, lock=lock)  # type: ignore[no-any-return]

    def lease_acquire(self, holder_id: str, lease_seconds: float | None
                      ) -> SupervisorTerm | None:
        return self._b._lease_acquire_sync(  # type: ignore[no-any-return]
            holder_id, lease_seconds)

    def lease_renew(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        return bool(self._b._lease_renew_sync(term, lease_seconds))

    def lease_release(self, term: SupervisorTerm) -> None:
        self._b._lease_release_sync(term)

    def binding_state(self, binding_name: str
                      ) -> tuple[datetime.datetime | None, datetime.datetime]:
        return self._b._binding_state_sync(binding_name)  # type: ignore[no-any-return]

    def binding_state_touch(self, binding_name: str) -> None:
        self._b._binding_state_touch_sync(binding_name)

    def pending_page(self, binding_name: str, after: str, limit: int,
                     flushed_only: bool, wave_id: str | None) -> list[PendingRow]:
        return self._b._pending_page_sync(  # type: ignore[no-any-return]
            binding_name, after, limit, flushed_only, wave_id)

    def targets_clear(self, binding_name: str) -> int:
        return int(self._b._targets_clear_sync(binding_name))

    def targets_freeze(self, binding_name: str, wave_id: str) -> int:
        return int(self._b._targets_freeze_sync(binding_name, wave_id))

    def targets_page(self, wave_id: str, binding_name: str, after: str,
                     limit: int) -> list[WaveTarget]:
        return self._b._targets_page_sync(  # type: ignore[no-any-return]
            wave_id, binding_name, after, limit)

    def target_get(self, wave_id: str, binding_name: str,
                   scope_id: str) -> WaveTarget | None:
        return self._b._target_get_sync(  # type: ignore[no-any-return]
            wave_id, binding_name, scope_id)

    def target_complete(self, wave_id: str, binding_name: str, scope_id: str) -> None:
        self._b._target_complete_sync(wave_id, binding_name, scope_id)

    def targets_count(self, wave_id: str, binding_name: str) -> tuple[int, int]:
        return self._b._targets_count_sync(wave_id, binding_name)  # type: ignore[no-any-return]

    def wave_cleanup(self, wave_id: str, binding_name: str) -> None:
        self._b._wave_cleanup_sync(wave_id, binding_name)


class InMemoryTopicFronts:
    """The in-memory Topic backend's ledger and Supervisor calls, each delegated to the
    engine-neutral class the SQL backends use (built on first use over ``self``)."""

    lease_expires = False
    _fronts: tuple[TopicAllowance, TopicProcessingStatus, TopicOperator,
                   TopicSupervision] | None = None

    def _built(self) -> tuple[TopicAllowance, TopicProcessingStatus, TopicOperator,
                              TopicSupervision]:
        if self._fronts is None:
            host: Any = self
            ledger = InMemoryLedgerRows(self)
            supervision = TopicSupervision(host, InMemorySupervisionRows(self), ledger,
                                           lease_expires=self.lease_expires)
            status = TopicProcessingStatus(host)
            self._fronts = (TopicAllowance(host, ledger, supervision.fence), status,
                            TopicOperator(host, ledger, status), supervision)
        return self._fronts

    def _fence_sync(self, term: SupervisorTerm) -> None:
        self._built()[3].fence(term)

    @property
    def supervisor_locking(self) -> SupervisorLocking:
        """``"file-lock"``: like SQLite, a term lasts until the next Supervisor start."""
        return self._built()[3].supervisor_locking

    async def begin_attempt(self, scope_id: str, source_after: int, *,
                            supervisor: SupervisorTerm | None = None) -> AttemptGrant:
        return await self._built()[0].begin_attempt(scope_id, source_after,
                                                    supervisor=supervisor)

    async def reserve(self, grant: AttemptGrant, requests: int, tokens: int, *,
                      through: int) -> None:
        await self._built()[0].reserve(grant, requests, tokens, through=through)

    async def record_failure(self, grant: AttemptGrant, code: str, *,
                             through: int | None = None) -> None:
        await self._built()[0].record_failure(grant, code, through=through)

    async def flush(self, scope_id: str) -> FlushStatus:
        return await self._built()[1].flush(scope_id)

    async def processing_status(self, scope_id: str | None = None) -> tuple[ScopeStatus, ...]:
        return await self._built()[1].processing_status(scope_id)

    async def unblock(self, scope_id: str, action: str, *, frontier: int,
                      position: int | None = None, decided_by: str,
                      reason: str) -> OperatorDecision:
        return await self._built()[2].unblock(scope_id, action, frontier=frontier,
                                              position=position, decided_by=decided_by,
                                              reason=reason)

    async def operator_decisions(self, scope_id: str, limit: int = 20
                                 ) -> tuple[OperatorDecision, ...]:
        return await self._built()[2].operator_decisions(scope_id, limit)

    async def blocked_frontiers(self, scope_id: str | None = None
                                ) -> tuple[BlockedFrontier, ...]:
        return await self._built()[2].blocked_frontiers(scope_id)

    async def acquire_lease(self, holder_id: str, lease_seconds: float | None
                            ) -> SupervisorTerm | None:
        return await self._built()[3].acquire_lease(holder_id, lease_seconds)

    async def renew_lease(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        return await self._built()[3].renew_lease(term, lease_seconds)

    async def release_lease(self, term: SupervisorTerm) -> None:
        await self._built()[3].release_lease(term)

    async def pending_page(self, after_scope: str | None, limit: int, *,
                           flushed_only: bool = False,
                           outside_wave: str | None = None) -> tuple[PendingRow, ...]:
        return await self._built()[3].pending_page(after_scope, limit,
                                                   flushed_only=flushed_only,
                                                   outside_wave=outside_wave)

    async def scheduling_state(self) -> SchedulingState:
        return await self._built()[3].scheduling_state()

    async def clear_wave_targets(self, term: SupervisorTerm) -> int:
        return await self._built()[3].clear_wave_targets(term)

    async def freeze_wave(self, term: SupervisorTerm, wave_id: str) -> int:
        return await self._built()[3].freeze_wave(term, wave_id)

    async def wave_targets(self, wave_id: str, after_scope: str | None, limit: int
                           ) -> tuple[WaveTarget, ...]:
        return await self._built()[3].wave_targets(wave_id, after_scope, limit)

    async def complete_target(self, term: SupervisorTerm, wave_id: str, scope_id: str) -> bool:
        return await self._built()[3].complete_target(term, wave_id, scope_id)

    async def complete_wave(self, term: SupervisorTerm, wave_id: str) -> bool:
        return await self._built()[3].complete_wave(term, wave_id)

    async def handle_flush(self, scope_id: str, target: int, claimed_flush_generation: int,
                           *, supervisor: SupervisorTerm | None = None) -> bool:
        return await self._built()[3].handle_flush(scope_id, target, claimed_flush_generation,
                                                   supervisor=supervisor)
