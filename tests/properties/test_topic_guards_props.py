"""Properties of the durable allowance and the Pending update as pure rules
(powercontext.core.topic.guards; Topic Memory RFC, "Cumulative work and evidence
ceilings", "Pending dirty set").

Over any sequence of attempts, reservations and failures on one budget key: at most
ATTEMPT_LIMIT attempts are admitted; the reserved totals never decrease and never pass
REQUEST_LIMIT / TOKEN_LIMIT; a refused reservation adds nothing; a terminal row never
changes again; only the latest attempt reserves. And the Pending update never raises
the handled generation past the flush generation, never lowers it, and deletes the row
exactly under the spec's condition.
"""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core.topic.guards import add_reservation, admit_attempt, pending_after
from powercontext.core.topic.processing import (
    ATTEMPT_LIMIT,
    BINDING,
    REQUEST_LIMIT,
    TOKEN_LIMIT,
    AttemptGrant,
    BudgetRow,
    PendingRow,
    PendingUpdate,
)

SCOPE = "project:p"

ops = st.lists(st.one_of(
    st.tuples(st.just("begin")),
    st.tuples(st.just("reserve"), st.integers(0, 2),  # which grant (0 = the newest)
              st.integers(0, 300), st.integers(0, 40_000_000)),
), max_size=25)


@given(ops)
def test_the_allowance_never_refunds_never_exceeds_and_stays_terminal(steps):
    row: BudgetRow | None = None
    grants: list[AttemptGrant] = []
    admitted = 0
    for n, step in enumerate(steps):
        before = row
        if step[0] == "begin":
            d = admit_attempt(row, SCOPE, 0, f"attempt-{n}")
            if d.error is None:
                admitted += 1
                assert d.row is not None
                grants.insert(0, AttemptGrant(SCOPE, BINDING, 0, d.row.attempt_id,
                                              d.row.attempt_count))
            else:
                assert d.error.terminal
        else:
            if not grants:
                continue
            _, which, requests, tokens = step
            grant = grants[min(which, len(grants) - 1)]
            d = add_reservation(row, grant, requests, tokens, 1)  # type: ignore[assignment]
            if d.error is not None and d.row is None:
                assert before is not None
            if d.error is not None and not d.error.terminal:
                assert d.error.code == "attempt_superseded"
                assert grant.attempt_id != (before.attempt_id if before else None)
        if d.row is not None:
            row = d.row
        if before is not None and before.terminal:
            assert row == before  # a terminal frontier never changes
        if row is not None:
            assert 1 <= row.attempt_count <= ATTEMPT_LIMIT
            assert row.reserved_requests <= REQUEST_LIMIT
            assert row.reserved_tokens <= TOKEN_LIMIT
            if before is not None:
                assert row.reserved_requests >= before.reserved_requests
                assert row.reserved_tokens >= before.reserved_tokens
            if step[0] == "reserve" and d.error is not None and before is not None:
                assert (row.reserved_requests, row.reserved_tokens) == (
                    before.reserved_requests, before.reserved_tokens)
    assert admitted <= ATTEMPT_LIMIT


@given(st.integers(1, 50), st.integers(0, 5), st.integers(0, 5), st.integers(0, 60),
       st.one_of(st.none(), st.integers(0, 5)))
def test_the_pending_update_follows_the_spec(through, flush, handled, cursor, claimed):
    handled = min(handled, flush)
    row = PendingRow(BINDING, SCOPE, through, flush, handled)
    if claimed is not None and claimed > flush:
        try:
            pending_after(row, cursor, PendingUpdate(claimed))
        except ValueError:
            return
        raise AssertionError("a claimed generation beyond the flush generation is refused")
    after = pending_after(row, cursor, PendingUpdate(claimed))
    new_handled = max(handled, claimed) if claimed is not None else handled
    if cursor >= through and new_handled == flush:
        assert after is None
    else:
        assert after == attrs.evolve(row, handled_flush_generation=new_handled)
        assert handled <= after.handled_flush_generation <= after.flush_generation
