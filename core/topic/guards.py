"""The publication guards and the durable allowance as pure rules (Topic Memory RFC,
"Storage, Head, and atomic activation", "Pending dirty set", "Cumulative work and
evidence ceilings"; TOPIC-MEMORY.md, "The Worker's transactions").

The adapters run the I/O around these (each backend the same way): what a guarded
publication may carry (:func:`check_guards`), how a budget row changes when an attempt
is admitted (:func:`admit_attempt`) or a reservation is made (:func:`add_reservation`),
the bounded failure code (:func:`check_failure_code`), and what the Pending update of a
Window does (:func:`pending_after`). Nothing here reads a clock or makes an id: the new
attempt id comes in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from powercontext.core.errors import (
    InvalidInputError,
    RevisionConflictError,
    SupervisorTermError,
    TopicProcessingError,
)
from powercontext.core.topic.content import check_scope_id
from powercontext.core.topic.models import PublicationGuards, TopicWrite
from powercontext.core.topic.processing import (
    ATTEMPT_LIMIT,
    BINDING,
    CODE_ATTEMPT_LIMIT,
    CODE_BUDGET_EXCEEDED,
    REQUEST_LIMIT,
    TOKEN_LIMIT,
    AttemptGrant,
    BudgetRelease,
    BudgetRow,
    CursorAdvance,
    PendingRow,
    PendingUpdate,
)
from powercontext.core.topic.supervision import CODE_TERM_LOST, SUPERVISOR_GROUP, SupervisorTerm

__all__ = [
    "CODE_ATTEMPT_SUPERSEDED",
    "CODE_CURSOR_CONFLICT",
    "MAX_ATTEMPT_ID_CHARS",
    "AttemptDecision",
    "ReservationDecision",
    "add_reservation",
    "admit_attempt",
    "check_cursor_at",
    "check_failure_code",
    "check_grant",
    "check_guards",
    "check_holder_id",
    "check_position",
    "check_term",
    "fence_term",
    "pending_after",
    "term_lost",
]

#: Control signals (not terminal): the Cursor moved, or a newer attempt holds the key.
CODE_CURSOR_CONFLICT = "cursor_conflict"
CODE_ATTEMPT_SUPERSEDED = "attempt_superseded"
#: ``attempt_id`` is a UUID's 36-character text form (``VARCHAR(36)``).
MAX_ATTEMPT_ID_CHARS = 36

_FAILURE_CODE = re.compile(r"[a-z_]{1,64}")


def check_position(value: object, field: str, lo: int = 0) -> int:
    """``value`` when it is an int (not a bool) >= ``lo``, else InvalidInputError naming
    ``field``. Journal positions and Cursors are 0-based counts of a Scope's journal."""
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise InvalidInputError(field, f"must be an integer >= {lo}, not {value!r}")
    return value


def check_failure_code(code: object) -> str:
    """A bounded failure code, ``[a-z_]{1,64}`` (no Source text, prompt or output fits
    one); InvalidInputError naming ``code`` otherwise."""
    if not isinstance(code, str) or _FAILURE_CODE.fullmatch(code) is None:
        raise InvalidInputError("code", f"must match [a-z_]{{1,64}}, not {code!r}"[:160])
    return code


def _check_attempt_id(value: object, field: str) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ATTEMPT_ID_CHARS \
            or not value.isascii() or not value.isprintable():
        raise InvalidInputError(field, f"must be 1..{MAX_ATTEMPT_ID_CHARS} printable ASCII "
                                "characters (the attempt's UUID)")
    return value


def check_holder_id(value: object, field: str = "holder_id") -> str:
    """A Supervisor's ``holder_id``: 1..36 printable ASCII characters (its UUIDv4
    text, ``VARCHAR(36)``); InvalidInputError naming ``field`` otherwise."""
    return _check_attempt_id(value, field)


def check_term(term: object, field: str = "term") -> SupervisorTerm:
    """``term`` when it is a :class:`SupervisorTerm` of the group ``global`` with a
    1..36-character printable ASCII ``holder_id`` (the UUIDv4 text) and a generation
    >= 1; InvalidInputError naming ``field`` (``field.holder_id``, ...) otherwise."""
    if not isinstance(term, SupervisorTerm):
        raise InvalidInputError(field, "must be a SupervisorTerm (the term acquire_lease "
                                "returned)")
    if term.group != SUPERVISOR_GROUP:
        raise InvalidInputError(f"{field}.group", f"must be {SUPERVISOR_GROUP!r}")
    check_holder_id(term.holder_id, f"{field}.holder_id")
    check_position(term.generation, f"{field}.generation", 1)
    return term


def fence_term(term: SupervisorTerm, stored: tuple[str, int, bool] | None) -> None:
    """The term check every fenced transaction makes first (Topic Memory RFC, "Leader,
    term, and fencing"): ``stored`` is the lease row of ``term.group`` read in that
    transaction, ``(holder_id, supervisor_generation, unexpired)`` (``unexpired``:
    always True on SQLite; on OceanBase ``lease_expires_at > UTC_TIMESTAMP(6)``), or
    None when there is no row. SupervisorTermError (a RevisionConflictError: roll the
    whole transaction back) unless holder and generation are ``term``'s and the lease
    is unexpired."""
    if stored is None:
        raise SupervisorTermError(f"{CODE_TERM_LOST}: no Supervisor lease of group "
                                  f"{term.group!r} is stored")
    holder, generation, unexpired = stored
    if holder != term.holder_id or generation != term.generation:
        raise SupervisorTermError(
            f"{CODE_TERM_LOST}: the lease of group {term.group!r} is at generation "
            f"{generation} of another holder or term, not generation {term.generation}")
    if not unexpired:
        raise SupervisorTermError(f"{CODE_TERM_LOST}: the lease of generation "
                                  f"{term.generation} expired by database time")


def term_lost(exc: SupervisorTermError, stage: str) -> TopicProcessingError:
    """A refused term as the port's TopicProcessingError of an attempt call
    (``supervisor_term_lost``, not terminal: a control signal)."""
    message = str(exc).removeprefix(f"{CODE_TERM_LOST}: ")
    return TopicProcessingError(CODE_TERM_LOST, message, stage=stage)


def check_grant(grant: object) -> AttemptGrant:
    """``grant`` when it is an :class:`AttemptGrant` of the binding
    :data:`~powercontext.core.topic.processing.BINDING` with a valid Scope, frontier,
    attempt id and count; InvalidInputError naming the field otherwise."""
    if not isinstance(grant, AttemptGrant):
        raise InvalidInputError("grant", "must be the AttemptGrant begin_attempt returned")
    if grant.binding_name != BINDING:
        raise InvalidInputError("grant.binding_name", f"must be {BINDING!r}")
    if check_scope_id(grant.scope_id, "grant.scope_id") != grant.scope_id:
        raise InvalidInputError("grant.scope_id", "must be in NFC")
    check_position(grant.source_after, "grant.source_after")
    _check_attempt_id(grant.attempt_id, "grant.attempt_id")
    check_position(grant.attempt_count, "grant.attempt_count", 1)
    if grant.supervisor is not None:
        check_term(grant.supervisor, "grant.supervisor")
    return grant


def check_guards(guards: PublicationGuards, writes: Sequence[TopicWrite]) -> None:
    """What a guarded publication may carry, checked before its transaction:

    * ``supervisor``: None or a :class:`SupervisorTerm` (:func:`check_term`); a term
      needs ``cursor`` (a Supervisor's Worker always publishes one Window). The
      publication transaction fences it first (:func:`fence_term`);
    * ``cursor``: None or a :class:`CursorAdvance` of the binding
      :data:`~powercontext.core.topic.processing.BINDING` for a valid Scope (in NFC)
      with ``0 <= expected < through``; every write must be in that Scope;
    * ``pending``: None or a :class:`PendingUpdate` (``claimed_flush_generation`` None
      or an int >= 0); ``budget``: None or a :class:`BudgetRelease` whose
      ``source_after`` is the Cursor's ``expected``. Both need ``cursor`` (it names the
      binding and the Scope).

    InvalidInputError naming the field (``guards.cursor.through``, ...) otherwise."""
    if guards.supervisor is not None:
        check_term(guards.supervisor, "guards.supervisor")
    cursor = guards.cursor
    if cursor is None:
        if guards.supervisor is not None:
            raise InvalidInputError("guards.cursor", "a Supervisor term guards the Cursor "
                                    "advance of one Window: give guards.cursor")
        if guards.pending is not None or guards.budget is not None:
            raise InvalidInputError("guards.cursor", "a Pending update or a budget release "
                                    "needs the Cursor advance of the same Window")
        return
    if not isinstance(cursor, CursorAdvance):
        raise InvalidInputError("guards.cursor", "must be a CursorAdvance")
    if cursor.binding_name != BINDING:
        raise InvalidInputError("guards.cursor.binding_name", f"must be {BINDING!r}")
    if check_scope_id(cursor.scope_id, "guards.cursor.scope_id") != cursor.scope_id:
        raise InvalidInputError("guards.cursor.scope_id", "must be in NFC")
    check_position(cursor.expected, "guards.cursor.expected")
    check_position(cursor.through, "guards.cursor.through", cursor.expected + 1)
    for i, w in enumerate(writes):
        if w.scope_id != cursor.scope_id:
            raise InvalidInputError(f"writes[{i}].scope_id",
                                    "must be the Scope of the Cursor being advanced")
    pending = guards.pending
    if pending is not None:
        if not isinstance(pending, PendingUpdate):
            raise InvalidInputError("guards.pending", "must be a PendingUpdate")
        if pending.claimed_flush_generation is not None:
            check_position(pending.claimed_flush_generation,
                           "guards.pending.claimed_flush_generation")
    budget = guards.budget
    if budget is not None:
        if not isinstance(budget, BudgetRelease):
            raise InvalidInputError("guards.budget", "must be a BudgetRelease")
        _check_attempt_id(budget.attempt_id, "guards.budget.attempt_id")
        if budget.source_after != cursor.expected:
            raise InvalidInputError("guards.budget.source_after",
                                    "must be the Cursor the Window starts after "
                                    "(guards.cursor.expected)")


def check_cursor_at(cursor: CursorAdvance, stored: int, head: int) -> None:
    """The Cursor CAS of a guarded publication, read inside its transaction: the stored
    Cursor must be ``cursor.expected`` (RevisionConflictError "cursor moved ..."
    otherwise, a control signal) and ``cursor.through`` at most the Scope's Source
    ``head`` (InvalidInputError ``guards.cursor.through``: a Cursor past the journal
    would skip the Sources written there later)."""
    if stored != cursor.expected:
        raise RevisionConflictError(
            f"cursor moved: the Cursor of Scope {cursor.scope_id!r} is at {stored}, not "
            f"{cursor.expected}; reprocess from the current Cursor")
    if cursor.through > head:
        raise InvalidInputError(
            "guards.cursor.through",
            f"{cursor.through} is past the Source head {head} of Scope "
            f"{cursor.scope_id!r}: a Cursor covers only journaled Sources")


def pending_after(row: PendingRow, cursor: int, update: PendingUpdate) -> PendingRow | None:
    """The Pending row after a Window advanced the Cursor to ``cursor`` (Topic Memory
    RFC, "Pending dirty set"): ``handled_flush_generation = max(current, claimed)``
    when ``claimed`` is given; None (delete the row) when ``cursor >= source_through``
    and ``handled_flush_generation == flush_generation``. InvalidInputError when the
    claimed generation is beyond the row's ``flush_generation`` (it was never
    flushed)."""
    handled = row.handled_flush_generation
    claimed = update.claimed_flush_generation
    if claimed is not None:
        if claimed > row.flush_generation:
            raise InvalidInputError(
                "guards.pending.claimed_flush_generation",
                f"{claimed} is beyond the Scope's flush generation {row.flush_generation}")
        handled = max(handled, claimed)
    if cursor >= row.source_through and handled == row.flush_generation:
        return None
    return attrs.evolve(row, handled_flush_generation=handled)


@attrs.frozen
class AttemptDecision:
    """What :func:`admit_attempt` decided: ``row`` to store (None: write nothing),
    ``insert`` (True: a new row), and ``error`` to raise after committing ``row`` (None:
    the attempt is admitted)."""

    row: BudgetRow | None
    insert: bool = False
    error: TopicProcessingError | None = None


def admit_attempt(row: BudgetRow | None, scope_id: str, source_after: int,
                  attempt_id: str) -> AttemptDecision:
    """One processing attempt of the key (``scope_id``, BINDING, ``source_after``)
    against its budget row (Topic Memory RFC, "Cumulative work and evidence
    ceilings"): a terminal row refuses (its stored code, terminal, nothing written); a
    row at ATTEMPT_LIMIT attempts becomes terminal ``window_attempt_limit`` (stored,
    then refused); otherwise the count goes up by one and ``attempt_id`` takes
    publication authority (a new row: count 1, nothing reserved, ``furthest_through =
    source_after``). Reservations are kept: nothing is ever refunded."""
    if row is None:
        return AttemptDecision(BudgetRow(scope_id, BINDING, source_after, source_after,
                                         attempt_id, 1, 0, 0, None), insert=True)
    if row.terminal:
        return AttemptDecision(None, error=_terminal(str(row.failure_code), row))
    if row.attempt_count >= ATTEMPT_LIMIT:
        stored = attrs.evolve(row, failure_code=CODE_ATTEMPT_LIMIT)
        return AttemptDecision(stored, error=_terminal(CODE_ATTEMPT_LIMIT, stored))
    return AttemptDecision(attrs.evolve(row, attempt_id=attempt_id,
                                        attempt_count=row.attempt_count + 1))


@attrs.frozen
class ReservationDecision:
    """What :func:`add_reservation` decided: ``row`` to store (None: write nothing) and
    ``error`` to raise, after committing ``row`` (None: reserved)."""

    row: BudgetRow | None
    error: TopicProcessingError | None = None


def add_reservation(row: BudgetRow | None, grant: AttemptGrant, requests: int, tokens: int,
                    through: int) -> ReservationDecision:
    """Reserve ``requests`` and ``tokens`` for the attempt ``grant`` on its budget row
    (fenced): the row must exist with ``grant.attempt_id`` (else
    TopicProcessingError ``attempt_superseded``, not terminal, nothing written); a
    terminal row refuses with its code; totals beyond REQUEST_LIMIT (512) or
    TOKEN_LIMIT (64,000,000) reserve nothing and store ``failure_code =
    window_provider_budget_exceeded`` (terminal); otherwise both totals grow and
    ``furthest_through = max(existing, through)``."""
    if row is None or row.attempt_id != grant.attempt_id:
        return ReservationDecision(None, TopicProcessingError(
            CODE_ATTEMPT_SUPERSEDED, "a newer attempt of this Window holds its budget row",
            stage="attempt"))
    if row.terminal:
        return ReservationDecision(None, _terminal(str(row.failure_code), row))
    total_requests = row.reserved_requests + requests
    total_tokens = row.reserved_tokens + tokens
    if total_requests > REQUEST_LIMIT or total_tokens > TOKEN_LIMIT:
        stored = attrs.evolve(row, failure_code=CODE_BUDGET_EXCEEDED)
        return ReservationDecision(stored, _terminal(
            CODE_BUDGET_EXCEEDED, stored,
            f"; asked {requests} requests and {tokens} tokens more (limits {REQUEST_LIMIT} "
            f"and {TOKEN_LIMIT})"))
    return ReservationDecision(attrs.evolve(
        row, reserved_requests=total_requests, reserved_tokens=total_tokens,
        furthest_through=max(row.furthest_through, through)))


def _terminal(code: str, row: BudgetRow, more: str = "") -> TopicProcessingError:
    return TopicProcessingError(
        code, f"the Window after Cursor {row.source_after} of Scope {row.scope_id!r} is at "
        f"a terminal frontier ({row.attempt_count} attempts, {row.reserved_requests} "
        f"requests and {row.reserved_tokens} tokens reserved){more}",
        stage="attempt", terminal=True)
