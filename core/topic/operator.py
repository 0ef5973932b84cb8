"""Operator decisions at a terminal frontier (Topic Memory RFC, "Retry and
observability": terminal input or repeated failures require deliberate operator
remediation; no automatic reset, and flushes and restarts never authorise more model
cost).

A Scope stopped at a terminal frontier (a budget row with ``window_attempt_limit``,
``window_provider_budget_exceeded`` or ``source_complexity_limit`` at the Cursor) goes
on only by an operator decision, recorded with who and why as an audit row
(``pc_topic_memory_operator_decisions``), in one transaction with its effect:

* ``skip``: the named Source (the first Source after the Cursor that processing
  reads; lineage-only rows before it are passed with it) is passed over: the Cursor
  moves to its position, publishing no Topic for it, as a NOOP Window does. The
  Source itself stays stored and journaled.
* ``grant``: one fresh durable allowance for the named frontier (the Cursor the Scope
  is stopped at): its budget row goes, so the next attempt starts a new row (3
  attempts, 512 requests, 64,000,000 tokens). Refused for ``source_complexity_limit``:
  no allowance makes an over-ceiling Source processable; skip it.

Either way the frontier's budget row is deleted (its counts are kept in the audit row)
and the Scope is flushed (``source_through`` = the head, ``flush_generation + 1``) when
Sources remain after the Cursor, so processing resumes. Nothing else changes a
terminal frontier. Pure values and rules; the backends run them
(:mod:`powercontext.adapters.topic_operator_store`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Literal

import attrs

from powercontext.core.errors import InvalidInputError, RevisionConflictError
from powercontext.core.topic.processing import (
    CODE_COMPLEXITY,
    BudgetRow,
    JournalEntry,
    ScopeStatus,
)

__all__ = [
    "ACTIONS",
    "MAX_OPERATOR_CHARS",
    "MAX_REASON_CHARS",
    "Action",
    "BlockedFrontier",
    "OperatorDecision",
    "blocked_frontier",
    "check_operator",
    "check_reason",
    "plan_decision",
    "unblock_command",
]

Action = Literal["skip", "grant"]
ACTIONS: tuple[Action, ...] = ("skip", "grant")
#: Who decided: an operator's name or id, at most this many characters.
MAX_OPERATOR_CHARS = 128
#: Why: at most this many characters.
MAX_REASON_CHARS = 2000


@attrs.frozen
class OperatorDecision:
    """One audit row of ``pc_topic_memory_operator_decisions``: the decision's id
    (UUIDv4 text), the Scope and binding, the frontier it was taken at
    (``source_after``: the Cursor then), the action, for ``skip`` the Source's
    position and id (None for ``grant``), the frontier's failure code and the
    allowance it had consumed (attempts, reserved requests and tokens: the model cost
    already spent), who and why, and when (database UTC, ``YYYY-MM-DDTHH:MM:SS.ffffffZ``;
    None before it is stored)."""

    decision_id: str
    scope_id: str
    binding_name: str
    source_after: int
    action: Action
    position: int | None
    source_id: str | None
    failure_code: str
    attempt_count: int
    reserved_requests: int
    reserved_tokens: int
    decided_by: str
    reason: str
    decided_at: str | None = None


@attrs.frozen
class BlockedFrontier:
    """Why a Scope is stopped (``topic status``, the dashboard, the HTTP status): the
    frontier (the Cursor), the Window the blocked attempts covered
    ``(source_after, through]``, the failure code, the Source processing stops at (its
    position, id, kind and uri; None when it is not journaled any more), a short
    reason (no Source text) and the operator commands that unblock it."""

    scope_id: str
    source_after: int
    through: int
    failure_code: str
    position: int | None
    source_id: str | None
    kind: str | None
    uri: str | None
    reason: str
    commands: tuple[str, ...]


def _text(value: object, field: str, limit: int) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(field, "must be a string")
    text = unicodedata.normalize("NFC", value).strip()
    if not text:
        raise InvalidInputError(field, "must not be empty: say who decided and why")
    if len(text) > limit:
        raise InvalidInputError(field, f"is {len(text)} characters; at most {limit}")
    if any(unicodedata.category(c) in ("Cc", "Cs") and c not in "\n\t" for c in text):
        raise InvalidInputError(field, "must not contain control characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(field, "contains a lone surrogate") from None
    return text


def check_operator(value: object) -> str:
    """Who decided: NFC, trimmed, 1..128 characters, one line. InvalidInputError
    naming ``decided_by`` otherwise."""
    who = _text(value, "decided_by", MAX_OPERATOR_CHARS)
    if "\n" in who or "\t" in who:
        raise InvalidInputError("decided_by", "must be one line")
    return who


def check_reason(value: object) -> str:
    """Why: NFC, trimmed, 1..2,000 characters. InvalidInputError naming ``reason``."""
    return _text(value, "reason", MAX_REASON_CHARS)


def _is_terminal_at(status: ScopeStatus) -> BudgetRow | None:
    budget = status.budget
    if budget is not None and budget.terminal and budget.source_after == status.cursor:
        return budget
    return None


def unblock_command(scope_id: str, action: Action, value: int) -> str:
    """The CLI command of a decision (shown by ``topic status`` and the dashboard):
    ``powercontext topic unblock --scope 'S' --skip N|--grant N --by WHO --reason
    WHY``."""
    import shlex

    flag = "--skip" if action == "skip" else "--grant"
    return (f"powercontext topic unblock --scope {shlex.quote(scope_id)} {flag} {value} "
            "--by NAME --reason 'WHY'")


def blocked_frontier(status: ScopeStatus, stop: JournalEntry | None,
                     reason: str | None) -> BlockedFrontier | None:
    """The blocked view of ``status``, or None when the Scope is not at a terminal
    frontier. ``stop`` is the journal row processing stops at (the first one after the
    Cursor that processing reads: the rejected Source of a complexity frontier), None
    when not found; ``reason`` the check's words for a complexity rejection (None:
    the failure code's own explanation is used)."""
    budget = _is_terminal_at(status)
    if budget is None:
        return None
    code = budget.failure_code or ""
    through = max(budget.furthest_through, status.cursor + 1)
    if code == CODE_COMPLEXITY:
        why = f"the Source is over a Topic processing ceiling ({reason or 'complexity'})"
    elif code == "window_attempt_limit":
        why = (f"{budget.attempt_count} attempts of the Window ({status.cursor}, {through}] "
               "failed (see the logs for each attempt's failure code)")
    else:
        why = (f"the Window ({status.cursor}, {through}] used its provider allowance "
               f"({budget.reserved_requests} requests, {budget.reserved_tokens} tokens "
               "reserved)")
    commands = []
    if stop is not None:
        commands.append(unblock_command(status.scope_id, "skip", stop.position))
    if code != CODE_COMPLEXITY:
        commands.append(unblock_command(status.scope_id, "grant", status.cursor))
    return BlockedFrontier(
        status.scope_id, status.cursor, through, code,
        None if stop is None else stop.position,
        None if stop is None else stop.source.source_id,
        None if stop is None else stop.source.kind,
        None if stop is None else stop.source.uri, why, tuple(commands))


def plan_decision(status: ScopeStatus, action: object, frontier: object,
                  after_cursor: Sequence[JournalEntry], position: int | None, *,
                  decision_id: str, decided_by: object, reason: object
                  ) -> tuple[OperatorDecision, int]:
    """Check one operator decision against the Scope's current ``status`` and return
    the audit row and the Cursor after it (``skip``: the Source's position; ``grant``:
    unchanged). ``after_cursor``: the journal rows after the Cursor through
    ``position`` (``skip``; empty for ``grant``).

    Errors (nothing is written): InvalidInputError naming ``action`` (not skip or
    grant), ``decided_by`` or ``reason`` (see :func:`check_operator`,
    :func:`check_reason`), ``scope_id`` (the Scope is not at a terminal frontier:
    nothing to unblock), ``grant`` (a complexity frontier: skip the Source instead) or
    ``skip`` (the position is not the first Source after the Cursor that processing
    reads, or no such Source); RevisionConflictError when ``frontier`` is not the
    Cursor the Scope is stopped at (the Scope moved since it was read)."""
    if action not in ACTIONS:
        raise InvalidInputError("action", f"must be 'skip' or 'grant', not {action!r}")
    who, why = check_operator(decided_by), check_reason(reason)
    if isinstance(frontier, bool) or not isinstance(frontier, int) or frontier < 0:
        raise InvalidInputError("frontier", f"must be a Cursor position >= 0, not {frontier!r}")
    budget = _is_terminal_at(status)
    if budget is None:
        raise InvalidInputError(
            "scope_id", f"Scope {status.scope_id!r} is not stopped at a terminal frontier "
            f"(Cursor {status.cursor}): there is nothing to unblock")
    if frontier != status.cursor:
        raise RevisionConflictError(
            f"Scope {status.scope_id!r} is stopped at Cursor {status.cursor}, not "
            f"{frontier}: read `topic status` again")
    code = budget.failure_code or ""
    cursor, source_id = status.cursor, None
    if action == "grant":
        if code == CODE_COMPLEXITY:
            raise InvalidInputError(
                "grant", "the Scope is stopped by a Source over a complexity ceiling; no "
                "allowance can process it: skip that Source")
        position = None
    else:
        entries = list(after_cursor)
        if position is None or not entries or entries[-1].position != position:
            raise InvalidInputError("skip", f"Scope {status.scope_id!r} has no Source at "
                                    f"position {position} after Cursor {status.cursor}")
        if any(not e.lineage_only for e in entries[:-1]) or entries[-1].lineage_only:
            first = next((e.position for e in entries if not e.lineage_only), None)
            raise InvalidInputError(
                "skip", f"position {position} is not the Source processing stops at; "
                f"that is position {first} (the first one after Cursor {status.cursor})")
        cursor, source_id = position, entries[-1].source.source_id
    decision = OperatorDecision(
        decision_id, status.scope_id, status.binding_name, status.cursor, action,
        position, source_id, code, budget.attempt_count, budget.reserved_requests,
        budget.reserved_tokens, who, why)
    return decision, cursor
