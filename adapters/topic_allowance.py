"""The durable allowance of a SQL Topic backend (Topic Memory RFC, "Cumulative work and
evidence ceilings", "Retry and observability"; TOPIC-MEMORY.md, "The Worker's
transactions"): :class:`TopicAllowance` gives ``begin_attempt``, ``reserve`` and
``record_failure``.

Each call is its own short write transaction, committed before the caller goes on:
the attempt counter before any Source is materialised, each reservation before its
provider call. A refusal that must be remembered (``window_attempt_limit``,
``window_provider_budget_exceeded``) is committed first and raised after the COMMIT.
Nothing is ever refunded; only a successful publication deletes the row
(:mod:`powercontext.adapters.topic_publication`). The rules are
:mod:`powercontext.core.topic.guards`; the rows
:class:`~powercontext.adapters.topic_ledger_rows.LedgerRows`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from powercontext.adapters.topic_host import TopicHost
from powercontext.adapters.topic_ledger_rows import LedgerRows
from powercontext.core.errors import (
    RevisionConflictError,
    SupervisorTermError,
    TopicProcessingError,
)
from powercontext.core.topic.content import check_scope_id
from powercontext.core.topic.guards import (
    CODE_CURSOR_CONFLICT,
    AttemptDecision,
    ReservationDecision,
    add_reservation,
    admit_attempt,
    check_failure_code,
    check_grant,
    check_position,
    check_term,
    term_lost,
)
from powercontext.core.topic.processing import BINDING, AttemptGrant
from powercontext.core.topic.supervision import SupervisorTerm

__all__ = ["TopicAllowance"]

T = TypeVar("T")

#: How often begin_attempt reruns after a concurrent attempt created the row first.
_INSERT_RACES = 3


class TopicAllowance:
    """``begin_attempt``, ``reserve`` and ``record_failure`` of a Topic backend (see
    :class:`powercontext.ports.topic.TopicMemoryBackend` for the contract), over the
    host's transactions, the ledger's rows (SQL:
    :class:`~powercontext.adapters.topic_ledger_rows.SQLLedgerRows`; the in-memory
    backend's over dicts) and the Supervisor's term fence ``fence(term)``
    (:meth:`~powercontext.adapters.topic_supervision_store.TopicSupervision.fence`).
    With a Supervisor term every transaction reads the lease row first: a lost term is
    TopicProcessingError ``supervisor_term_lost`` (not terminal) and nothing is
    written."""

    def __init__(self, host: TopicHost, ledger: LedgerRows,
                 fence: Callable[[SupervisorTerm], None]) -> None:
        self._host = host
        self._ledger = ledger
        self._fence = fence

    async def _tx(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        return await self._host._run(self._host._in_tx, write, fn, *args)

    def _fenced_attempt_sync(self, term: SupervisorTerm | None) -> None:
        if term is not None:
            try:
                self._fence(term)
            except SupervisorTermError as exc:
                raise term_lost(exc, "attempt") from exc

    async def begin_attempt(self, scope_id: str, source_after: int, *,
                            supervisor: SupervisorTerm | None = None) -> AttemptGrant:
        """Admit one attempt of the Window after Cursor ``source_after`` of ``scope_id``
        (its own committed transaction): the budget row (created if absent) counts it
        and takes a new UUIDv4 ``attempt_id`` (publication authority).

        Errors: InvalidInputError for a bad Scope id or a negative ``source_after``;
        TopicProcessingError ``cursor_conflict`` (not terminal, nothing written) when
        the Cursor is not ``source_after``; TopicProcessingError (terminal) with the
        stored code of a terminal row (nothing written), or ``window_attempt_limit``
        (committed) when ATTEMPT_LIMIT (3) attempts were admitted already. With
        ``supervisor`` (a SupervisorTerm; InvalidInputError naming ``supervisor``
        otherwise) the transaction is fenced by it first (TopicProcessingError
        ``supervisor_term_lost``, not terminal, nothing written) and the grant
        carries it."""
        scope_id = check_scope_id(scope_id)
        check_position(source_after, "source_after")
        if supervisor is not None:
            check_term(supervisor, "supervisor")
        for race in range(_INSERT_RACES):
            try:
                decision: AttemptDecision = await self._tx(
                    True, self._begin_attempt_sync, scope_id, source_after,
                    str(uuid.uuid4()), supervisor)
                break
            except RevisionConflictError:  # a concurrent attempt inserted the row first
                if race == _INSERT_RACES - 1:
                    raise
        if decision.error is not None:
            raise decision.error
        row = decision.row
        assert row is not None
        return AttemptGrant(scope_id, BINDING, source_after, row.attempt_id, row.attempt_count,
                            supervisor)

    def _begin_attempt_sync(self, scope_id: str, source_after: int, attempt_id: str,
                            supervisor: SupervisorTerm | None = None) -> AttemptDecision:
        self._fenced_attempt_sync(supervisor)  # the lease row before any other row
        # the row first: a publication of this key holds it until its COMMIT, so the
        # Cursor read after it sees that publication's advance (no row is then made
        # for a frontier that has just been passed)
        row = self._ledger.budget_row(scope_id, BINDING, source_after, lock=True)
        cursor = self._ledger.cursor(BINDING, scope_id, lock=False) or 0
        if cursor != source_after:
            raise TopicProcessingError(
                CODE_CURSOR_CONFLICT, f"the Cursor of Scope {scope_id!r} is at {cursor}, not "
                f"{source_after}", stage="attempt")
        decision = admit_attempt(row, scope_id, source_after, attempt_id)
        if decision.row is not None:
            if decision.insert:
                self._ledger.budget_insert(decision.row)
            else:
                self._ledger.budget_update(decision.row)
        return decision

    async def reserve(self, grant: AttemptGrant, requests: int, tokens: int, *,
                      through: int) -> None:
        """Reserve ``requests`` provider requests and ``tokens`` token capacity for the
        next provider call of ``grant`` (its own committed, fenced transaction; never
        refunded), ``furthest_through = max(existing, through)``.

        Errors: InvalidInputError for a bad grant, negative amounts or ``through <=
        grant.source_after``; TopicProcessingError ``attempt_superseded`` (not
        terminal, nothing written) when another attempt holds the row, or
        ``supervisor_term_lost`` when ``grant.supervisor`` is no longer the term; terminal
        ``window_provider_budget_exceeded`` (stored, nothing reserved) when the totals
        would pass 512 requests or 64,000,000 tokens, or the row's own terminal code."""
        check_grant(grant)
        check_position(requests, "requests")
        check_position(tokens, "tokens")
        check_position(through, "through", grant.source_after + 1)
        decision: ReservationDecision = await self._tx(
            True, self._reserve_sync, grant, requests, tokens, through)
        if decision.error is not None:
            raise decision.error

    def _reserve_sync(self, grant: AttemptGrant, requests: int, tokens: int,
                      through: int) -> ReservationDecision:
        self._fenced_attempt_sync(grant.supervisor)  # type: ignore[arg-type]
        row = self._ledger.budget_row(grant.scope_id, grant.binding_name, grant.source_after,
                                    lock=True)
        decision = add_reservation(row, grant, requests, tokens, through)
        if decision.row is not None:
            self._ledger.budget_update(decision.row)
        return decision

    async def record_failure(self, grant: AttemptGrant, code: str, *,
                             through: int | None = None) -> None:
        """Store the bounded failure ``code`` (``[a-z_]{1,64}``, else InvalidInputError
        naming ``code``) on ``grant``'s budget row in its own committed transaction,
        unless the row is terminal already or another attempt holds it (then nothing
        is written). A code of TERMINAL_CODES makes the row a terminal frontier.
        ``through`` (> ``grant.source_after``; InvalidInputError naming ``through``
        otherwise) raises ``furthest_through`` to it: a rejected Source's position, so
        the row names the Source a ``source_complexity_limit`` frontier stops at.
        TopicProcessingError ``supervisor_term_lost`` (nothing written) when
        ``grant.supervisor`` is no longer the term."""
        check_grant(grant)
        check_failure_code(code)
        if through is not None:
            check_position(through, "through", grant.source_after + 1)
        await self._tx(True, self._record_failure_sync, grant, code, through)

    def _record_failure_sync(self, grant: AttemptGrant, code: str,
                             through: int | None = None) -> None:
        self._fenced_attempt_sync(grant.supervisor)  # type: ignore[arg-type]
        row = self._ledger.budget_row(grant.scope_id, grant.binding_name, grant.source_after,
                                    lock=True)
        if row is None or row.attempt_id != grant.attempt_id or row.terminal:
            return
        furthest = max(row.furthest_through, through or 0)
        if row.failure_code != code or row.furthest_through != furthest:
            self._ledger.budget_update(attrs.evolve(row, failure_code=code,
                                                  furthest_through=furthest))

