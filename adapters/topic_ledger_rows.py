"""The rows of the Topic processing ledger (Topic Memory RFC, "Cumulative work and
evidence ceilings", "Source, Window, Cursor, and Pending", "Retry and observability"):
the budget row of each attempt (``pc_topic_memory_work_budgets``), the Cursors
(``pc_source_cursors``), the Pending rows (``pc_artifact_processing_pending``) and the
operator's audit rows.

:class:`LedgerRows` is what the engine-neutral ledger classes (the allowance, the
publication guards, the operator's decisions, the Supervisor's flush handling) read
and write through; :class:`SQLLedgerRows` is it over the engine port, one shared
template per method, written once. Every method runs inside the caller's transaction;
``lock=True`` reads lock the row until COMMIT where the engine has row locks
(OceanBase ``FOR UPDATE``; SQLite's ``BEGIN IMMEDIATE`` excludes every other writer).
The rules are :mod:`powercontext.core.topic.guards`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from powercontext.adapters.storage.processing_rows import (
    budget_row,
    decision_params,
    decision_row,
)
from powercontext.core.topic.operator import OperatorDecision
from powercontext.core.topic.processing import BudgetRow, PendingRow
from powercontext.ports.engine import SQLEngine

__all__ = ["LedgerRows", "SQLLedgerRows", "budget_params", "budget_update_params",
           "pending_row"]


def budget_params(row: BudgetRow) -> list[Any]:
    """The parameters of ``budget_insert``."""
    return [row.scope_id, row.binding_name, row.source_after, row.furthest_through,
            row.attempt_id, row.attempt_count, row.reserved_requests, row.reserved_tokens,
            row.failure_code]


def budget_update_params(row: BudgetRow) -> list[Any]:
    """The parameters of ``budget_update`` (the columns, then the key)."""
    return [row.furthest_through, row.attempt_id, row.attempt_count, row.reserved_requests,
            row.reserved_tokens, row.failure_code, row.scope_id, row.binding_name,
            row.source_after]


def pending_row(binding_name: str, scope_id: str, r: Sequence[Any]) -> PendingRow:
    """A ``guard_pending_get`` row as a PendingRow."""
    return PendingRow(binding_name, scope_id, int(r[0]), int(r[1]), int(r[2]))


class LedgerRows(Protocol):
    """The processing ledger's rows, as the ledger classes use them."""

    def budget_row(self, scope_id: str, binding_name: str, source_after: int, *,
                   lock: bool) -> BudgetRow | None:
        """The budget row of this key, or None."""
        ...

    def budget_insert(self, row: BudgetRow) -> None:
        """Insert the row; a duplicate key raises (mapped to RevisionConflictError)."""
        ...

    def budget_update(self, row: BudgetRow) -> None:
        """Set every non-key column of the stored row of ``row``'s key."""
        ...

    def budget_delete(self, scope_id: str, binding_name: str, source_after: int,
                      attempt_id: str) -> bool:
        """Delete the row of this key if it holds ``attempt_id``; True when one went."""
        ...

    def cursor(self, binding_name: str, scope_id: str, *, lock: bool) -> int | None:
        """The Cursor's ``source_position``, or None (no row: Cursor 0)."""
        ...

    def cursor_insert(self, binding_name: str, scope_id: str, position: int) -> None:
        """Insert the Cursor row (a duplicate raises)."""
        ...

    def cursor_cas(self, binding_name: str, scope_id: str, expected: int,
                   position: int) -> bool:
        """Move the Cursor from ``expected`` to ``position``; True when it matched."""
        ...

    def pending_row(self, binding_name: str, scope_id: str, *,
                    lock: bool) -> PendingRow | None:
        """The Pending row, or None."""
        ...

    def pending_handled(self, binding_name: str, scope_id: str, handled: int) -> None:
        """Set ``handled_flush_generation`` of the row."""
        ...

    def pending_delete(self, binding_name: str, scope_id: str) -> None:
        """Delete the row (the caller checked the spec's condition)."""
        ...

    def decision_insert(self, decision: OperatorDecision) -> None:
        """Insert an operator's audit row."""
        ...

    def decisions(self, scope_id: str, limit: int) -> list[OperatorDecision]:
        """The Scope's audit rows, newest first, at most ``limit``."""
        ...

    def now(self) -> str:
        """The database's UTC clock as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
        ...


class SQLLedgerRows:
    """:class:`LedgerRows` over ``engine`` (a :class:`~powercontext.ports.engine.SQLEngine`)."""

    def __init__(self, engine: SQLEngine) -> None:
        self._engine = engine

    def budget_row(self, scope_id: str, binding_name: str, source_after: int, *,
                   lock: bool) -> BudgetRow | None:
        rows = self._engine.query("budget_get", (scope_id, binding_name, source_after),
                                  for_update=lock)
        return budget_row(rows[0]) if rows else None

    def budget_insert(self, row: BudgetRow) -> None:
        self._engine.execute("budget_insert", budget_params(row))

    def budget_update(self, row: BudgetRow) -> None:
        self._engine.execute("budget_update", budget_update_params(row))

    def budget_delete(self, scope_id: str, binding_name: str, source_after: int,
                      attempt_id: str) -> bool:
        return self._engine.execute(
            "budget_delete", (scope_id, binding_name, source_after, attempt_id)) == 1

    def cursor(self, binding_name: str, scope_id: str, *, lock: bool) -> int | None:
        rows = self._engine.query("guard_cursor_get", (binding_name, scope_id),
                                  for_update=lock)
        return int(rows[0][0]) if rows else None

    def cursor_insert(self, binding_name: str, scope_id: str, position: int) -> None:
        self._engine.execute("guard_cursor_insert", (binding_name, scope_id, position))

    def cursor_cas(self, binding_name: str, scope_id: str, expected: int,
                   position: int) -> bool:
        return self._engine.execute(
            "guard_cursor_cas", (position, binding_name, scope_id, expected)) == 1

    def pending_row(self, binding_name: str, scope_id: str, *,
                    lock: bool) -> PendingRow | None:
        rows = self._engine.query("guard_pending_get", (binding_name, scope_id),
                                  for_update=lock)
        return pending_row(binding_name, scope_id, rows[0]) if rows else None

    def pending_handled(self, binding_name: str, scope_id: str, handled: int) -> None:
        self._engine.execute("guard_pending_handled", (handled, binding_name, scope_id))

    def pending_delete(self, binding_name: str, scope_id: str) -> None:
        self._engine.execute("guard_pending_delete", (binding_name, scope_id))

    def decision_insert(self, decision: OperatorDecision) -> None:
        self._engine.execute("operator_decision_insert", tuple(decision_params(decision)))

    def decisions(self, scope_id: str, limit: int) -> list[OperatorDecision]:
        return [decision_row(r) for r in
                self._engine.query("operator_decisions_get", (scope_id, limit))]

    def now(self) -> str:
        return self._engine.database_now()
