"""Operator decisions at a terminal frontier, engine-neutral (Topic Memory RFC, "Retry
and observability": deliberate operator remediation; the rules and values are
:mod:`powercontext.core.topic.operator`): :class:`TopicOperator` gives the
Topic backends ``unblock``, ``operator_decisions`` and ``blocked_frontiers``.

``unblock`` is one short write transaction: the journal lock of the Scope, the
frontier's budget row (locked), the Cursor (locked), the Source head, Pending and, for
``skip``, the journal rows after the Cursor through the named position; the rules
checked (:func:`~powercontext.core.topic.operator.plan_decision`); then the Cursor
moved (skip), the Pending row settled under the spec's condition, the frontier's
budget row deleted, the Scope flushed when Sources remain after the Cursor (so
processing resumes) and the audit row inserted with the database's UTC time. All or
nothing.

Over the host's Scope journal (``_scope_lock_sync``, ``_scope_head_sync``,
``_scope_journal_sync``, ``_pending_flush_sync``) and the ledger's rows
(:class:`~powercontext.adapters.topic_ledger_rows.LedgerRows`: budget, Cursor, Pending,
the audit rows and the database's clock).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from powercontext.adapters.topic_host import TopicHost
from powercontext.adapters.topic_ledger_rows import LedgerRows
from powercontext.adapters.topic_processing_store import TopicProcessingStatus
from powercontext.core.errors import InvalidInputError, RevisionConflictError
from powercontext.core.topic.content import check_scope_id
from powercontext.core.topic.guards import check_position, pending_after
from powercontext.core.topic.operator import (
    ACTIONS,
    BlockedFrontier,
    OperatorDecision,
    blocked_frontier,
    plan_decision,
)
from powercontext.core.topic.processing import (
    BINDING,
    CODE_COMPLEXITY,
    JournalEntry,
    PendingUpdate,
    ScopeStatus,
)

__all__ = ["MAX_DECISIONS", "TopicOperator"]

T = TypeVar("T")

#: The most audit rows one ``operator_decisions`` call returns.
MAX_DECISIONS = 200
#: How far after the Cursor a skip may name a Source (lineage-only rows before it).
_MAX_SKIP_DISTANCE = 1000


class TopicOperator:
    """``unblock``, ``operator_decisions`` and ``blocked_frontiers`` of
    :class:`powercontext.ports.topic.TopicMemoryBackend`, over the host's Scope journal,
    the ledger's rows and the processing status of ``status``."""

    def __init__(self, host: TopicHost, ledger: LedgerRows,
                 status: TopicProcessingStatus) -> None:
        self._host = host
        self._ledger = ledger
        self._status = status

    async def _tx(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        return await self._host._run(self._host._in_tx, write, fn, *args)

    async def unblock(self, scope_id: str, action: str, *, frontier: int,
                      position: int | None = None, decided_by: str,
                      reason: str) -> OperatorDecision:
        """Record an operator decision at the terminal frontier ``frontier`` (the
        Cursor the Scope is stopped at) and apply it, in one transaction: ``skip`` the
        Source at ``position`` (the first Source after the Cursor that processing
        reads: the Cursor moves to it, no Topic is published for it) or ``grant`` one
        fresh allowance (the frontier's budget row goes; a complexity frontier is
        refused). The frontier's budget row is deleted, its counts kept in the audit
        row; the Scope is flushed when Sources remain after the Cursor. Returns the
        stored decision (with ``decided_at``).

        Errors (nothing written): InvalidInputError naming ``scope_id`` (a bad id, or
        the Scope is not stopped at a terminal frontier), ``action``, ``frontier``,
        ``skip``/``grant`` (see :func:`~powercontext.core.topic.operator.plan_decision`),
        ``decided_by`` or ``reason``; RevisionConflictError when the Scope is no
        longer stopped at ``frontier``; SecretDetectedError when ``decided_by`` or
        ``reason`` holds a secret (they are stored and shown)."""
        scope = check_scope_id(scope_id)
        if action not in ACTIONS:
            raise InvalidInputError("action", f"must be 'skip' or 'grant', not {action!r}")
        check_position(frontier, "frontier")
        if action == "skip":
            check_position(position, "skip", frontier + 1)
            assert position is not None
            if position - frontier > _MAX_SKIP_DISTANCE:
                raise InvalidInputError("skip", f"position {position} is more than "
                                        f"{_MAX_SKIP_DISTANCE} after Cursor {frontier}")
        elif position is not None:
            raise InvalidInputError("position", "names the Source of a skip; a grant "
                                    "names only the frontier")
        from powercontext.adapters.secret_scanner import default_scanner  # writes only
        from powercontext.core.secrets import check_text

        for field, value in (("decided_by", decided_by), ("reason", reason)):
            if isinstance(value, str):
                check_text(field, value, default_scanner().scan)
        decision: OperatorDecision = await self._tx(
            True, self._unblock_sync, scope, action, frontier, position,
            str(uuid.uuid4()), decided_by, reason)
        return decision

    def _unblock_sync(self, scope: str, action: str, frontier: int, position: int | None,
                      decision_id: str, who: object, why: object) -> OperatorDecision:
        self._host._scope_lock_sync(scope)  # no Source write or flush in between
        row = self._ledger.budget_row(scope, BINDING, frontier, lock=True)
        stored = self._ledger.cursor(BINDING, scope, lock=True)
        cursor = stored or 0
        head = self._host._scope_head_sync(scope)
        pending = self._ledger.pending_row(BINDING, scope, lock=True)
        at_cursor = row if frontier == cursor else self._ledger.budget_row(
            scope, BINDING, cursor, lock=False)
        status = ScopeStatus(scope, BINDING, head, cursor, pending, at_cursor)
        entries: list[JournalEntry] = []
        if action == "skip" and position is not None and frontier == cursor:
            entries = list(self._host._scope_journal_sync(scope, cursor, position - cursor))
        decision, through = plan_decision(
            status, action, frontier, entries, position, decision_id=decision_id,
            decided_by=who, reason=why)
        assert row is not None  # plan_decision refused a Scope without a terminal row
        decision = attrs.evolve(decision, decided_at=self._ledger.now())
        if through != cursor:  # skip: the Cursor passes the Source, as a NOOP Window
            if stored is None:
                self._ledger.cursor_insert(BINDING, scope, through)
            elif not self._ledger.cursor_cas(BINDING, scope, cursor, through):
                raise RevisionConflictError(f"cursor moved: Scope {scope!r} left {cursor}")
            if pending is not None:
                after = pending_after(pending, through, PendingUpdate(None))
                if after is None:
                    self._ledger.pending_delete(BINDING, scope)
        if not self._ledger.budget_delete(scope, BINDING, frontier, row.attempt_id):
            raise RevisionConflictError(f"the budget row after Cursor {frontier} of Scope "
                                        f"{scope!r} moved")
        if head > through:  # processing resumes: the Scope is flushed
            self._host._pending_flush_sync(BINDING, scope, head)
        self._ledger.decision_insert(decision)
        return decision

    async def operator_decisions(self, scope_id: str, limit: int = 20
                                 ) -> tuple[OperatorDecision, ...]:
        """Read only: the Scope's operator decisions, newest first, at most ``limit``
        (1..200). InvalidInputError naming ``scope_id`` or ``limit``."""
        scope = check_scope_id(scope_id)
        if isinstance(limit, bool) or not isinstance(limit, int) \
                or not 1 <= limit <= MAX_DECISIONS:
            raise InvalidInputError("limit", f"must be an integer in 1..{MAX_DECISIONS}")
        rows = await self._tx(False, self._ledger.decisions, scope, limit)
        return tuple(rows)

    async def blocked_frontiers(self, scope_id: str | None = None
                                ) -> tuple[BlockedFrontier, ...]:
        """Read only: why each Scope (one, or with None every Scope
        ``processing_status`` knows) stopped at a terminal frontier is stopped, sorted
        like ``processing_status``: the Source processing stops at and the commands
        that unblock it (:class:`~powercontext.core.topic.operator.BlockedFrontier`).
        Scopes that are not stopped are left out."""
        out = []
        for status in await self._status.processing_status(scope_id):
            budget = status.budget
            if budget is None or not budget.terminal or budget.source_after != status.cursor:
                continue
            stop = await self._tx(False, self._stop_sync, status)
            reason = None
            if stop is not None and budget.failure_code == CODE_COMPLEXITY:
                from powercontext.core.topic.window import check_complexity

                reason = check_complexity(stop.source)
            view = blocked_frontier(status, stop, reason)
            if view is not None:
                out.append(view)
        return tuple(out)

    def _stop_sync(self, status: ScopeStatus) -> JournalEntry | None:
        """The journal row processing stops at: the recorded rejected Source of a
        complexity frontier, else the first row after the Cursor that is not
        lineage-only (at most 100 rows looked at)."""
        budget = status.budget
        assert budget is not None
        if budget.failure_code == CODE_COMPLEXITY and budget.furthest_through > status.cursor:
            rows = self._host._scope_journal_sync(status.scope_id, budget.furthest_through - 1, 1)
            if rows:
                return rows[0]  # type: ignore[no-any-return]
        after = status.cursor
        for _ in range(100):
            rows = self._host._scope_journal_sync(status.scope_id, after, 1)
            if not rows:
                return None
            if not rows[0].lineage_only:
                return rows[0]  # type: ignore[no-any-return]
            after = rows[0].position
        return None
