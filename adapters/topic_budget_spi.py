"""The engine primitives of the durable allowance and the publication guards (Topic
Memory RFC, "Cumulative work and evidence ceilings", "Storage, Head, and atomic
activation", "Pending dirty set"): what a concrete Topic adapter implements for
``pc_topic_memory_work_budgets``, ``pc_source_cursors`` and
``pc_artifact_processing_pending``.

Like every primitive of :mod:`powercontext.adapters.topic_spi`, each runs on the
worker thread inside a transaction the engine-neutral code opened, never commits and
decides no rule (the rules are :mod:`powercontext.core.topic.guards`). ``lock=True``
reads lock the row until the transaction ends where the engine locks rows (OceanBase
``FOR UPDATE``; SQLite's ``BEGIN IMMEDIATE`` already excludes every other writer).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from powercontext.adapters.storage.processing_rows import budget_row
from powercontext.adapters.topic_deployment import TopicDeploymentMixin
from powercontext.core.topic.processing import BudgetRow, PendingRow

__all__ = ["TopicBudgetPrimitives", "budget_params", "budget_row", "budget_update_params",
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


class TopicBudgetPrimitives(TopicDeploymentMixin):
    """The abstract budget, Cursor and Pending primitives of a Topic backend."""

    # ------------------------------------------------------------------ budget rows

    @abc.abstractmethod
    def _budget_row_sync(self, scope_id: str, binding_name: str, source_after: int, *,
                         lock: bool) -> BudgetRow | None:
        """The ``pc_topic_memory_work_budgets`` row of this key, or None."""

    @abc.abstractmethod
    def _budget_insert_sync(self, row: BudgetRow) -> None:
        """Insert the row; a duplicate key raises the driver's error (a concurrent
        attempt created it first: mapped to RevisionConflictError)."""

    @abc.abstractmethod
    def _budget_update_sync(self, row: BudgetRow) -> None:
        """Set every non-key column of the stored row of ``row``'s key
        (furthest_through, attempt_id, attempt_count, reserved_requests,
        reserved_tokens, failure_code)."""

    @abc.abstractmethod
    def _budget_delete_sync(self, scope_id: str, binding_name: str, source_after: int,
                            attempt_id: str) -> bool:
        """Delete the row of this key if it holds ``attempt_id``; True when one row went."""

    # ------------------------------------------------------------------ Cursors

    @abc.abstractmethod
    def _cursor_sync(self, binding_name: str, scope_id: str, *, lock: bool) -> int | None:
        """``source_position`` of the ``pc_source_cursors`` row, or None (Cursor 0)."""

    @abc.abstractmethod
    def _cursor_insert_sync(self, binding_name: str, scope_id: str, position: int) -> None:
        """Insert the Cursor row (a duplicate raises the driver's error)."""

    @abc.abstractmethod
    def _cursor_cas_sync(self, binding_name: str, scope_id: str, expected: int,
                         position: int) -> bool:
        """``UPDATE ... SET source_position = position WHERE ... AND source_position =
        expected``; True when exactly one row matched."""

    # ------------------------------------------------------------------ Pending

    @abc.abstractmethod
    def _pending_row_sync(self, binding_name: str, scope_id: str, *,
                          lock: bool) -> PendingRow | None:
        """The ``pc_artifact_processing_pending`` row, or None."""

    @abc.abstractmethod
    def _pending_handled_sync(self, binding_name: str, scope_id: str, handled: int) -> None:
        """Set ``handled_flush_generation`` of the row (the CHECKs hold it <=
        ``flush_generation``)."""

    @abc.abstractmethod
    def _pending_delete_sync(self, binding_name: str, scope_id: str) -> None:
        """Delete the row (the caller checked the spec's condition)."""
