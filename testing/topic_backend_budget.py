"""The durable allowance and the publication guards of the in-memory Topic backend
(Topic Memory RFC, "Cumulative work and evidence ceilings", "Storage, Head, and atomic
activation", "Pending dirty set"): the same rules as the SQL backends
(:mod:`powercontext.core.topic.guards`) over three dict tables of the state,
``budgets`` ((scope_id, binding_name, source_after) -> BudgetRow), ``cursors``
((binding_name, scope_id) -> position) and ``pending`` ((binding_name, scope_id) ->
PendingRow)."""

from __future__ import annotations

from typing import Any

from powercontext.core.errors import (
    RevisionConflictError,
)
from powercontext.core.topic.guards import (
    check_cursor_at,
    pending_after,
)
from powercontext.core.topic.models import PublicationGuards
from powercontext.core.topic.processing import (
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
    """Mixin of :class:`~powercontext.testing.InMemoryTopicBackend`:
    the dict rows of the shared allowance
    (:class:`~powercontext.adapters.topic_allowance.TopicAllowance`, composed in
    :mod:`powercontext.testing.topic_backend_fronts`) and the guard steps its publish
    runs (``self._state``, ``self._run``, ``self._in_tx`` and ``self._maybe_fail`` come
    from the backend)."""

    _state: Any
    _run: Any
    _in_tx: Any
    _maybe_fail: Any
    _scope_head_sync: Any

    def _table(self, name: str) -> dict[Any, Any]:
        return self._state.setdefault(name, {})  # type: ignore[no-any-return]

    # -- the rows of the shared allowance (TopicAllowance) --------------------------------

    def _budget_row_sync(self, scope_id: str, binding_name: str, source_after: int, *,
                         lock: bool) -> BudgetRow | None:
        del lock  # one writer at a time already (the backend's lock)
        return self._table("budgets").get((scope_id, binding_name, source_after))

    def _budget_insert_sync(self, row: BudgetRow) -> None:
        self._table("budgets")[(row.scope_id, row.binding_name, row.source_after)] = row

    _budget_update_sync = _budget_insert_sync

    def _cursor_sync(self, binding_name: str, scope_id: str, *, lock: bool) -> int | None:
        del lock
        return self._table("cursors").get((binding_name, scope_id))  # type: ignore[no-any-return]

    # -- the rows of operator decisions (TopicOperator) ----------------------------------

    def _budget_delete_sync(self, scope_id: str, binding_name: str, source_after: int,
                            attempt_id: str) -> bool:
        key = (scope_id, binding_name, source_after)
        row = self._table("budgets").get(key)
        if row is None or row.attempt_id != attempt_id:
            return False
        del self._table("budgets")[key]
        return True

    def _cursor_insert_sync(self, binding_name: str, scope_id: str, position: int) -> None:
        key = (binding_name, scope_id)
        if key in self._table("cursors"):
            raise RevisionConflictError(f"a Cursor of {key!r} exists already")
        self._table("cursors")[key] = position

    def _cursor_cas_sync(self, binding_name: str, scope_id: str, expected: int,
                         position: int) -> bool:
        key = (binding_name, scope_id)
        if self._table("cursors").get(key) != expected:
            return False
        self._table("cursors")[key] = position
        return True

    def _decision_insert_sync(self, decision: Any) -> None:
        self._state.setdefault("operator_decisions", []).append(decision)

    def _decisions_sync(self, scope_id: str, limit: int) -> list[Any]:
        rows = [d for d in self._state.get("operator_decisions", []) if d.scope_id == scope_id]
        rows.sort(key=lambda d: (d.decided_at, d.decision_id), reverse=True)
        return rows[:limit]

    # -- the Pending rows of ``handle_flush`` (TopicSupervision) ---------------------------

    def _pending_row_sync(self, binding_name: str, scope_id: str, *,
                          lock: bool) -> PendingRow | None:
        del lock
        return self._table("pending").get((binding_name, scope_id))  # type: ignore[no-any-return]

    def _pending_handled_sync(self, binding_name: str, scope_id: str, handled: int) -> None:
        key = (binding_name, scope_id)
        row = self._table("pending")[key]
        self._table("pending")[key] = PendingRow(
            row.binding_name, row.scope_id, row.source_through, row.flush_generation, handled)

    def _pending_delete_sync(self, binding_name: str, scope_id: str) -> None:
        del self._table("pending")[(binding_name, scope_id)]

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
