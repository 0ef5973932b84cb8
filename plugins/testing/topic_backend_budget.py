"""The durable allowance and the publication guards of the in-memory Topic backend
(Topic Memory RFC, "Cumulative work and evidence ceilings", "Storage, Head, and atomic
activation", "Pending dirty set"): the same rules as the SQL backends
(:mod:`powercontext.core.topic.guards`) over three dict tables of the state,
``budgets`` ((scope_id, binding_name, source_after) -> BudgetRow), ``cursors``
((binding_name, scope_id) -> position) and ``pending`` ((binding_name, scope_id) ->
PendingRow)."""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from powercontext.core.errors import (
    RevisionConflictError,
    TopicProcessingError,
)
from powercontext.core.topic.content import check_scope_id
from powercontext.core.topic.guards import (
    CODE_CURSOR_CONFLICT,
    AttemptDecision,
    ReservationDecision,
    add_reservation,
    admit_attempt,
    check_cursor_at,
    check_failure_code,
    check_grant,
    check_position,
    pending_after,
)
from powercontext.core.topic.models import PublicationGuards
from powercontext.core.topic.processing import (
    BINDING,
    AttemptGrant,
    BudgetRelease,
    BudgetRow,
    CursorAdvance,
    PendingRow,
    PendingUpdate,
)

__all__ = ["GUARD_FAULT_POINTS", "InMemoryTopicBudget"]

#: The guard steps of a guarded publication where ``inject_fault`` can fail it.
GUARD_FAULT_POINTS = (
    "_check_cursor_sync",
    "_check_budget_sync",
    "_advance_cursor_sync",
    "_update_pending_sync",
    "_delete_budget_sync",
)


class InMemoryTopicBudget:
    """Mixin of :class:`~powercontext.plugins.testing.InMemoryTopicBackend`:
    ``begin_attempt``, ``reserve``, ``record_failure`` and the guard steps its publish
    runs (``self._state``, ``self._run``, ``self._in_tx`` and ``self._maybe_fail`` come
    from the backend)."""

    _state: Any
    _run: Any
    _in_tx: Any
    _maybe_fail: Any
    _scope_head_sync: Any

    def _table(self, name: str) -> dict[Any, Any]:
        return self._state.setdefault(name, {})  # type: ignore[no-any-return]

    # -- the durable allowance ---------------------------------------------------------

    async def begin_attempt(self, scope_id: str, source_after: int) -> AttemptGrant:
        """See :meth:`powercontext.ports.topic.TopicMemoryBackend.begin_attempt`."""
        scope_id = check_scope_id(scope_id)
        check_position(source_after, "source_after")
        decision: AttemptDecision = await self._run(
            self._in_tx, True, self._begin_attempt_sync, scope_id, source_after,
            str(uuid.uuid4()))
        if decision.error is not None:
            raise decision.error
        row = decision.row
        assert row is not None
        return AttemptGrant(scope_id, BINDING, source_after, row.attempt_id, row.attempt_count)

    def _begin_attempt_sync(self, scope_id: str, source_after: int,
                            attempt_id: str) -> AttemptDecision:
        cursor = self._table("cursors").get((BINDING, scope_id), 0)
        if cursor != source_after:
            raise TopicProcessingError(
                CODE_CURSOR_CONFLICT, f"the Cursor of Scope {scope_id!r} is at {cursor}, not "
                f"{source_after}", stage="attempt")
        key = (scope_id, BINDING, source_after)
        decision = admit_attempt(self._table("budgets").get(key), scope_id, source_after,
                                 attempt_id)
        if decision.row is not None:
            self._table("budgets")[key] = decision.row
        return decision

    async def reserve(self, grant: AttemptGrant, requests: int, tokens: int, *,
                      through: int) -> None:
        """See :meth:`powercontext.ports.topic.TopicMemoryBackend.reserve`."""
        check_grant(grant)
        check_position(requests, "requests")
        check_position(tokens, "tokens")
        check_position(through, "through", grant.source_after + 1)
        decision: ReservationDecision = await self._run(
            self._in_tx, True, self._reserve_sync, grant, requests, tokens, through)
        if decision.error is not None:
            raise decision.error

    def _reserve_sync(self, grant: AttemptGrant, requests: int, tokens: int,
                      through: int) -> ReservationDecision:
        key = (grant.scope_id, grant.binding_name, grant.source_after)
        decision = add_reservation(self._table("budgets").get(key), grant, requests, tokens,
                                   through)
        if decision.row is not None:
            self._table("budgets")[key] = decision.row
        return decision

    async def record_failure(self, grant: AttemptGrant, code: str) -> None:
        """See :meth:`powercontext.ports.topic.TopicMemoryBackend.record_failure`."""
        check_grant(grant)
        check_failure_code(code)
        await self._run(self._in_tx, True, self._record_failure_sync, grant, code)

    def _record_failure_sync(self, grant: AttemptGrant, code: str) -> None:
        key = (grant.scope_id, grant.binding_name, grant.source_after)
        row: BudgetRow | None = self._table("budgets").get(key)
        if row is None or row.attempt_id != grant.attempt_id or row.terminal:
            return
        self._table("budgets")[key] = attrs.evolve(row, failure_code=code)

    # -- the publication guards (inside publish's transaction) ----------------------------

    def _check_guards(self, guards: PublicationGuards) -> None:
        cursor = guards.cursor
        if not isinstance(cursor, CursorAdvance):
            return
        self._check_cursor_sync(cursor)
        if isinstance(guards.budget, BudgetRelease):
            self._check_budget_sync(cursor, guards.budget)

    def _check_cursor_sync(self, cursor: CursorAdvance) -> None:
        self._maybe_fail("_check_cursor_sync")
        stored = self._table("cursors").get((cursor.binding_name, cursor.scope_id), 0)
        check_cursor_at(cursor, stored, self._scope_head_sync(cursor.scope_id))

    def _check_budget_sync(self, cursor: CursorAdvance, budget: BudgetRelease) -> None:
        self._maybe_fail("_check_budget_sync")
        row = self._table("budgets").get(
            (cursor.scope_id, cursor.binding_name, budget.source_after))
        if row is None or row.attempt_id != budget.attempt_id:
            raise RevisionConflictError(
                f"attempt superseded: another attempt holds the budget row of the Window "
                f"after Cursor {budget.source_after} of Scope {cursor.scope_id!r}")

    def _advance_guards(self, guards: PublicationGuards) -> None:
        cursor = guards.cursor
        if not isinstance(cursor, CursorAdvance):
            return
        self._advance_cursor_sync(cursor)
        if isinstance(guards.pending, PendingUpdate):
            self._update_pending_sync(cursor, guards.pending)
        if isinstance(guards.budget, BudgetRelease):
            self._delete_budget_sync(cursor, guards.budget)

    def _advance_cursor_sync(self, cursor: CursorAdvance) -> None:
        self._maybe_fail("_advance_cursor_sync")
        self._table("cursors")[(cursor.binding_name, cursor.scope_id)] = cursor.through

    def _update_pending_sync(self, cursor: CursorAdvance, update: PendingUpdate) -> None:
        self._maybe_fail("_update_pending_sync")
        key = (cursor.binding_name, cursor.scope_id)
        row: PendingRow | None = self._table("pending").get(key)
        if row is None:
            return
        after = pending_after(row, cursor.through, update)
        if after is None:
            del self._table("pending")[key]
        else:
            self._table("pending")[key] = after

    def _delete_budget_sync(self, cursor: CursorAdvance, budget: BudgetRelease) -> None:
        self._maybe_fail("_delete_budget_sync")
        del self._table("budgets")[(cursor.scope_id, cursor.binding_name, budget.source_after)]
