"""powercontext.core.topic.guards: the guard values a publication may carry, the
allowance decisions and the bounded failure code (Topic Memory RFC, "Cumulative work
and evidence ceilings", "Storage, Head, and atomic activation")."""

from __future__ import annotations

import pytest

from powercontext.core.errors import (
    InvalidInputError,
)
from powercontext.core.topic.guards import (
    add_reservation,
    admit_attempt,
    check_failure_code,
    check_grant,
    check_guards,
)
from powercontext.core.topic.models import PublicationGuards
from powercontext.core.topic.processing import (
    BINDING,
    CODE_ATTEMPT_LIMIT,
    CODE_BUDGET_EXCEEDED,
    REQUEST_LIMIT,
    TOKEN_LIMIT,
    AttemptGrant,
    BudgetRelease,
    BudgetRow,
    CursorAdvance,
    PendingUpdate,
)
from powercontext.core.topic.supervision import SupervisorTerm

S = "project:x"
AID = "0b8c2a52-6a43-4f0b-9a0e-1c2d3e4f5a6b"


def test_the_supervisor_guard_takes_a_term_and_needs_the_cursor() -> None:
    with pytest.raises(InvalidInputError, match=r"guards\.supervisor"):
        check_guards(PublicationGuards(supervisor=object()), ())
    with pytest.raises(InvalidInputError, match=r"guards\.cursor"):
        check_guards(PublicationGuards(supervisor=SupervisorTerm("h" * 36, 1)), ())
    with pytest.raises(InvalidInputError, match=r"guards\.supervisor\.generation"):
        check_guards(PublicationGuards(supervisor=SupervisorTerm("h", 0),
                                       cursor=CursorAdvance(BINDING, S, 0, 1)), ())
    check_guards(PublicationGuards(supervisor=SupervisorTerm("h", 1),
                                   cursor=CursorAdvance(BINDING, S, 0, 1)), ())


@pytest.mark.parametrize("guards, field", [
    (PublicationGuards(cursor=object()), "guards.cursor"),
    (PublicationGuards(cursor=CursorAdvance("other-binding", S, 0, 1)), "binding_name"),
    (PublicationGuards(cursor=CursorAdvance(BINDING, "", 0, 1)), "scope_id"),
    (PublicationGuards(cursor=CursorAdvance(BINDING, S, -1, 1)), "expected"),
    (PublicationGuards(cursor=CursorAdvance(BINDING, S, 2, 2)), "through"),
    (PublicationGuards(cursor=CursorAdvance(BINDING, S, 0, True)), "through"),
    (PublicationGuards(pending=PendingUpdate(None)), "guards.cursor"),
    (PublicationGuards(budget=BudgetRelease(AID, 0)), "guards.cursor"),
    (PublicationGuards(cursor=CursorAdvance(BINDING, S, 0, 1), pending=object()),
     "guards.pending"),
    (PublicationGuards(cursor=CursorAdvance(BINDING, S, 0, 1), pending=PendingUpdate(-1)),
     "claimed_flush_generation"),
    (PublicationGuards(cursor=CursorAdvance(BINDING, S, 0, 1), budget=object()),
     "guards.budget"),
    (PublicationGuards(cursor=CursorAdvance(BINDING, S, 0, 1), budget=BudgetRelease("", 0)),
     "attempt_id"),
    (PublicationGuards(cursor=CursorAdvance(BINDING, S, 0, 1),
                       budget=BudgetRelease("x" * 37, 0)), "attempt_id"),
    (PublicationGuards(cursor=CursorAdvance(BINDING, S, 1, 2), budget=BudgetRelease(AID, 0)),
     "source_after"),
])
def test_malformed_guards_are_bad_input_naming_the_field(guards, field) -> None:
    with pytest.raises(InvalidInputError) as info:
        check_guards(guards, ())
    assert field in info.value.args[0] or field in str(info.value)


def test_well_formed_guards_pass() -> None:
    check_guards(PublicationGuards(), ())
    check_guards(PublicationGuards(cursor=CursorAdvance(BINDING, S, 0, 3),
                                   pending=PendingUpdate(2),
                                   budget=BudgetRelease(AID, 0)), ())


@pytest.mark.parametrize("code", ["", "A", "provider-error", "x" * 65, "code1", None, 3])
def test_failure_codes_are_bounded(code) -> None:
    with pytest.raises(InvalidInputError, match="code"):
        check_failure_code(code)


def test_a_failure_code_of_64_lowercase_letters_is_accepted() -> None:
    assert check_failure_code("a" * 64) == "a" * 64
    assert check_failure_code("window_requires_work_planner") == "window_requires_work_planner"


def test_grants_are_checked() -> None:
    good = AttemptGrant(S, BINDING, 0, AID, 1)
    assert check_grant(good) is good
    for bad in (AttemptGrant(S, "b", 0, AID, 1), AttemptGrant(S, BINDING, -1, AID, 1),
                AttemptGrant(S, BINDING, 0, AID, 0), AttemptGrant("", BINDING, 0, AID, 1),
                object()):
        with pytest.raises(InvalidInputError):
            check_grant(bad)


def _row(**kw) -> BudgetRow:
    base = dict(scope_id=S, binding_name=BINDING, source_after=0, furthest_through=0,
                attempt_id=AID, attempt_count=1, reserved_requests=0, reserved_tokens=0)
    base.update(kw)
    return BudgetRow(**base)  # type: ignore[arg-type]


def test_the_fourth_attempt_stores_the_attempt_limit() -> None:
    d = admit_attempt(_row(attempt_count=3, reserved_requests=7), S, 0, "new")
    assert d.row == _row(attempt_count=3, reserved_requests=7, failure_code=CODE_ATTEMPT_LIMIT)
    assert d.error is not None and d.error.code == CODE_ATTEMPT_LIMIT and d.error.terminal


def test_an_attempt_keeps_every_reservation() -> None:
    d = admit_attempt(_row(reserved_requests=5, reserved_tokens=9), S, 0, "new")
    assert d.error is None and d.row == _row(attempt_id="new", attempt_count=2,
                                             reserved_requests=5, reserved_tokens=9)


def test_exactly_the_limits_are_admitted() -> None:
    grant = AttemptGrant(S, BINDING, 0, AID, 1)
    ok = add_reservation(_row(reserved_requests=REQUEST_LIMIT - 1,
                              reserved_tokens=TOKEN_LIMIT - 1), grant, 1, 1, 1)
    assert ok.error is None and ok.row is not None
    assert (ok.row.reserved_requests, ok.row.reserved_tokens) == (REQUEST_LIMIT, TOKEN_LIMIT)
    over = add_reservation(ok.row, grant, 1, 0, 1)
    assert over.error is not None and over.error.code == CODE_BUDGET_EXCEEDED
    assert over.row is not None and over.row.reserved_requests == REQUEST_LIMIT
