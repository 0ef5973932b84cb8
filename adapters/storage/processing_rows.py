"""Row decoders of the Source-processing tables (``templates.PROCESSING_SCHEMA``), one
for every engine (APSW gives ``str`` and ``int``, mysqlclient ``bytes``/``str`` and
``int``; OceanBase's BOOLEAN is a TINYINT): the Scope journal joined to its Source,
the Pending row and the work-budget row, as the values of
:mod:`powercontext.core.topic.processing`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from powercontext.adapters.storage.rows import opt_text, source_row, text
from powercontext.core.topic.operator import OperatorDecision
from powercontext.core.topic.processing import BudgetRow, JournalEntry, PendingRow

__all__ = ["budget_row", "decision_params", "decision_row", "journal_entry", "pending_row"]


def journal_entry(scope_id: str, row: Sequence[Any]) -> JournalEntry:
    """``(position, lineage_only, journal_position, source_id, kind, content,
    content_hash, uri, metadata)``, the column order of ``scope_journal_after``."""
    position, lineage_only, *source = row
    _, s = source_row(source)
    return JournalEntry(scope_id, int(position), s, bool(int(lineage_only)))


def pending_row(row: Sequence[Any]) -> PendingRow:
    """``(binding_name, scope_id, source_through, flush_generation,
    handled_flush_generation)``, the column order of ``pending_get``."""
    binding, scope, through, flush, handled = row
    return PendingRow(text(binding), text(scope), int(through), int(flush), int(handled))


def budget_row(row: Sequence[Any]) -> BudgetRow:
    """``(scope_id, binding_name, source_after, furthest_through, attempt_id,
    attempt_count, reserved_requests, reserved_tokens, failure_code)``, the column order
    of ``status_budget_get``."""
    scope, binding, after, furthest, attempt, count, requests, tokens, code = row
    return BudgetRow(text(scope), text(binding), int(after), int(furthest), text(attempt),
                     int(count), int(requests), int(tokens), opt_text(code))


def decision_params(d: OperatorDecision) -> list[Any]:
    """The parameters of ``operator_decision_insert`` (``decided_at`` set)."""
    return [d.decision_id, d.scope_id, d.binding_name, d.source_after, d.action, d.position,
            d.source_id, d.failure_code, d.attempt_count, d.reserved_requests,
            d.reserved_tokens, d.decided_by, d.reason, d.decided_at]


def decision_row(row: Sequence[Any]) -> OperatorDecision:
    """A row of ``operator_decisions_get`` (the column order of
    :func:`decision_params`)."""
    (decision, scope, binding, after, action, position, source, code, attempts, requests,
     tokens, who, why, at) = row
    return OperatorDecision(
        text(decision), text(scope), text(binding), int(after), text(action),  # type: ignore[arg-type]
        None if position is None else int(position), opt_text(source), text(code),
        int(attempts), int(requests), int(tokens), text(who), text(why), opt_text(at))
