"""Properties of operator decisions (:mod:`powercontext.core.topic.operator`): a
decision is admitted only at the terminal frontier it names; a skip moves the Cursor
exactly to the first Source after it that processing reads (the lineage-only rows
before it passed with it) and to no other position; a grant never moves the Cursor and
never applies to a complexity frontier; every admitted decision carries the frontier's
failure code and the allowance it spent."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError, RevisionConflictError
from powercontext.core.topic.operator import blocked_frontier, plan_decision
from powercontext.core.topic.processing import (
    BINDING,
    CODE_ATTEMPT_LIMIT,
    CODE_BUDGET_EXCEEDED,
    CODE_COMPLEXITY,
    BudgetRow,
    JournalEntry,
    ScopeStatus,
)

SCOPE = "project:ops"
CODES = st.sampled_from([None, "provider_error", CODE_ATTEMPT_LIMIT, CODE_BUDGET_EXCEEDED,
                         CODE_COMPLEXITY])


def _entries(cursor: int, lineage: list[bool]) -> list[JournalEntry]:
    return [JournalEntry(SCOPE, cursor + i + 1,
                         canonical.make_source(f"src_{cursor + i + 1}", "note", "x"), flag)
            for i, flag in enumerate(lineage)]


@given(cursor=st.integers(0, 50), code=CODES, row_at=st.integers(0, 60),
       lineage=st.lists(st.booleans(), min_size=1, max_size=6),
       action=st.sampled_from(["skip", "grant"]), named=st.integers(0, 60),
       frontier=st.integers(0, 60))
def test_a_decision_is_admitted_only_as_the_rules_say(cursor, code, row_at, lineage,
                                                      action, named, frontier) -> None:
    budget = BudgetRow(SCOPE, BINDING, row_at, row_at + 1, "a" * 36, 3, 7, 700, code)
    status = ScopeStatus(SCOPE, BINDING, cursor + len(lineage), cursor, None, budget)
    entries = _entries(cursor, lineage)
    position = cursor + named if action == "skip" else None
    shown = [e for e in entries if position is not None and e.position <= position]
    terminal = code in (CODE_ATTEMPT_LIMIT, CODE_BUDGET_EXCEEDED, CODE_COMPLEXITY)
    try:
        decision, after = plan_decision(status, action, frontier, shown, position,
                                        decision_id="d" * 36, decided_by="ops",
                                        reason="because")
    except RevisionConflictError:
        assert terminal and row_at == cursor and frontier != cursor
        return
    except InvalidInputError:
        first = next((e.position for e in entries if not e.lineage_only), None)
        admitted = terminal and row_at == cursor and frontier == cursor and (
            (action == "grant" and code != CODE_COMPLEXITY)
            or (action == "skip" and position == first))
        assert not admitted
        return
    assert terminal and row_at == cursor == frontier == decision.source_after
    assert decision.failure_code == code
    assert (decision.attempt_count, decision.reserved_requests,
            decision.reserved_tokens) == (3, 7, 700)
    if action == "grant":
        assert code != CODE_COMPLEXITY and after == cursor and decision.position is None
    else:
        first = next(e.position for e in entries if not e.lineage_only)
        assert after == position == first == decision.position
        assert decision.source_id == f"src_{first}"


@given(code=CODES, cursor=st.integers(0, 9))
def test_the_blocked_view_offers_only_decisions_the_rules_admit(code, cursor) -> None:
    budget = BudgetRow(SCOPE, BINDING, cursor, cursor + 1, "a" * 36, 1, 0, 0, code)
    status = ScopeStatus(SCOPE, BINDING, cursor + 2, cursor, None, budget)
    (stop,) = _entries(cursor, [False])
    view = blocked_frontier(status, stop, "too big")
    if code not in (CODE_ATTEMPT_LIMIT, CODE_BUDGET_EXCEEDED, CODE_COMPLEXITY):
        assert view is None
        return
    assert view is not None and view.position == cursor + 1
    assert any(f"--skip {cursor + 1} " in c for c in view.commands)
    assert any(f"--grant {cursor} " in c for c in view.commands) == (code != CODE_COMPLEXITY)


@pytest.mark.parametrize("who,why,field", [
    ("", "x", "decided_by"), ("a\nb", "x", "decided_by"), ("x" * 129, "x", "decided_by"),
    ("ops", "", "reason"), ("ops", "x" * 2001, "reason"), ("ops", "a\x00b", "reason"),
    (5, "x", "decided_by"),
])
def test_who_and_why_are_checked(who, why, field) -> None:
    budget = BudgetRow(SCOPE, BINDING, 0, 1, "a" * 36, 3, 0, 0, CODE_ATTEMPT_LIMIT)
    status = ScopeStatus(SCOPE, BINDING, 1, 0, None, budget)
    with pytest.raises(InvalidInputError) as got:
        plan_decision(status, "grant", 0, [], None, decision_id="d" * 36,
                      decided_by=who, reason=why)
    assert got.value.field == field
