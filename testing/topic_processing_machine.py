"""The processing-substrate stateful test: a Topic backend's Scope journal, Pending,
Cursors, flush and durable allowance against a trusted plain-Python model (Topic Memory
RFC, "Source, Window, Cursor, and Pending", "Pending dirty set", "Cumulative work and
evidence ceilings", "Storage, Head, and atomic activation").

:class:`TopicProcessingStateMachine` puts scoped Sources into three Scopes (new ones,
re-added ones, lineage-only ones, and refused batches naming another Scope's Source),
flushes, begins attempts (some after a stale Cursor), reserves (some past the
ceilings), records failures, and publishes guarded Windows with zero writes (a NOOP
Window) that advance the Cursor to a chosen position, with the current or a stale
attempt, an old or a bad claimed flush generation. After every step it compares the
backend's ``processing_status`` and ``scope_journal`` with its model and checks the
invariants on what the backend returned:

- journal positions run 1..n per Scope, never reused;
- a Pending row's ``source_through`` is at least every position written since the row
  existed; ``handled_flush_generation <= flush_generation``; a row disappears only when
  the Cursor >= ``source_through`` and handled == flush generation;
- a budget row's reservations never decrease while it lives, ``attempt_count <= 3``,
  a terminal row stays terminal (same code) while it lives;
- the Cursor never moves backwards.

Bind it to a backend with :func:`topic_processing_state_machine_test`::

    TestMyProcessing = topic_processing_state_machine_test(lambda: MyTopicBackend())
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import attrs
from hypothesis import event
from hypothesis import settings as _settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from powercontext.core import canonical
from powercontext.core.errors import (
    InvalidInputError,
    RevisionConflictError,
    TopicProcessingError,
)
from powercontext.core.topic.models import PublicationGuards, TopicPublication
from powercontext.core.topic.processing import (
    ATTEMPT_LIMIT,
    BINDING,
    CODE_ATTEMPT_LIMIT,
    CODE_BUDGET_EXCEEDED,
    CODE_COMPLEXITY,
    REQUEST_LIMIT,
    TERMINAL_CODES,
    TOKEN_LIMIT,
    AttemptGrant,
    BudgetRelease,
    BudgetRow,
    CursorAdvance,
    PendingRow,
    PendingUpdate,
)

__all__ = ["TopicProcessingStateMachine", "topic_processing_state_machine_test"]

T = TypeVar("T")
SCOPES = ("project:a", "project:b", "repo:/c")
FAILURE_CODES = ("provider_error", "model_output_invalid", CODE_COMPLEXITY)
#: Reservation sizes: small, and big enough that a few pass the ceilings.
REQUESTS = st.one_of(st.integers(0, 3),
                     st.sampled_from([100, 200, REQUEST_LIMIT, REQUEST_LIMIT + 1]))
#: The claimed flush generation of a Window: None, the current one, one before it, 0,
#: or one that was never flushed.
CLAIMS = st.sampled_from(["none", "current", "current", "older", "zero", "beyond"])
TOKENS = st.one_of(st.integers(0, 5_000),
                   st.sampled_from([10_000_000, 30_000_000, TOKEN_LIMIT, TOKEN_LIMIT + 1]))


class TopicProcessingStateMachine(RuleBasedStateMachine):
    """Subclass and set ``backend_factory`` (``() -> TopicMemoryBackend`` with the
    processing substrate, a fresh empty database per call)."""

    backend_factory: Callable[[], Any]

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.backend = type(self).backend_factory()
        self.n = 0
        self.journal: dict[str, list[str]] = {s: [] for s in SCOPES}  # source ids
        self.lineage: dict[str, set[int]] = {s: set() for s in SCOPES}
        self.pending: dict[str, PendingRow] = {}
        self.written_since: dict[str, int] = {}  # highest position since the row existed
        self.cursor: dict[str, int] = dict.fromkeys(SCOPES, 0)
        self.budgets: dict[tuple[str, int], BudgetRow] = {}
        self.grants: list[AttemptGrant] = []
        # what the invariants saw last (backend side)
        self.seen_cursor: dict[str, int] = dict.fromkeys(SCOPES, 0)
        self.seen_pending: dict[str, PendingRow] = {}
        self.seen_budget: dict[tuple[str, int], BudgetRow] = {}

    def teardown(self) -> None:
        self.loop.run_until_complete(self.backend.close())
        self.loop.close()

    def _run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    def _refused(self, error: type[Exception], coro: Awaitable[Any]) -> Exception:
        try:
            self._run(coro)
        except error as exc:
            return exc
        raise AssertionError(f"expected {error.__name__}")

    def _head(self, scope: str) -> int:
        return len(self.journal[scope])

    # ------------------------------------------------------------------ rules

    @rule(scope=st.sampled_from(SCOPES), new=st.integers(0, 3), data=st.data(),
          lineage=st.booleans(),
          kind=st.sampled_from(["plain", "plain", "readd", "foreign"]))
    def put(self, scope: str, new: int, data: st.DataObject, lineage: bool,
            kind: str) -> None:
        ids = []
        for _ in range(new):
            self.n += 1
            ids.append(f"src_{self.n:05d}")
        batch = list(ids)
        mine = self.journal[scope]
        if kind == "readd" and mine:
            batch += data.draw(st.lists(st.sampled_from(mine), min_size=1, max_size=2))
        others = [i for s in SCOPES if s != scope for i in self.journal[s]]
        if kind == "foreign" and others:
            batch.insert(data.draw(st.integers(0, len(batch))),
                         data.draw(st.sampled_from(others)))
        else:
            kind = "plain" if kind == "foreign" else kind
        if not batch:
            return
        sources = [canonical.make_source(i, "user_note", f"evidence {i}") for i in batch]
        put = self.backend.put_server_sources(scope, sources, lineage_only=lineage)
        if kind == "foreign":
            err = self._refused(InvalidInputError, put)
            assert err.field == "scope_id"  # type: ignore[attr-defined]
            return
        positions = self._run(put)
        want: dict[str, int] = {i: mine.index(i) + 1 for i in batch if i in mine}
        for i in batch:
            if i not in want:
                mine.append(i)
                want[i] = len(mine)
                if lineage:
                    self.lineage[scope].add(len(mine))
        assert tuple(positions) == tuple(want[i] for i in batch)
        if ids:  # the Pending raise: max(existing, position), generations unchanged
            head = self._head(scope)
            row = self.pending.get(scope)
            self.pending[scope] = (PendingRow(BINDING, scope, head) if row is None
                                   else attrs.evolve(row, source_through=max(
                                       row.source_through, head)))
            self.written_since[scope] = head

    @rule(scope=st.sampled_from(SCOPES), new=st.integers(1, 3), flushes=st.integers(1, 2))
    def add_and_flush(self, scope: str, new: int, flushes: int) -> None:
        """``source add`` then ``topic flush`` (once or twice: the second coalesces)."""
        batch = []
        for _ in range(new):
            self.n += 1
            batch.append(f"src_{self.n:05d}")
        sources = [canonical.make_source(i, "user_note", f"evidence {i}") for i in batch]
        positions = self._run(self.backend.put_scoped_sources(scope, sources))
        start = self._head(scope)
        assert tuple(positions) == tuple(range(start + 1, start + new + 1))
        self.journal[scope].extend(batch)
        row = self.pending.get(scope)
        head = self._head(scope)
        self.pending[scope] = (PendingRow(BINDING, scope, head) if row is None
                               else attrs.evolve(row, source_through=max(
                                   row.source_through, head)))
        self.written_since[scope] = head
        for _ in range(flushes):
            self.flush(scope)

    @rule(scope=st.sampled_from(SCOPES))
    def flush(self, scope: str) -> None:
        got = self._run(self.backend.flush(scope))
        head = self._head(scope)
        if head == 0 or self.cursor[scope] >= head:
            assert got == "idle"
            event("flush: idle")
            return
        event("flush: accepted")
        assert got == "accepted"
        row = self.pending.get(scope)
        if row is None:
            self.pending[scope] = PendingRow(BINDING, scope, head, 1, 0)
            self.written_since[scope] = head
        else:
            self.pending[scope] = attrs.evolve(
                row, source_through=max(row.source_through, head),
                flush_generation=row.flush_generation + 1)

    def _behind(self, data: st.DataObject) -> str:
        """Mostly a Scope with Sources after its Cursor (a Window to process)."""
        behind = [s for s in SCOPES if self._head(s) > self.cursor[s]]
        prefer: int = data.draw(st.integers(0, 4))
        return data.draw(st.sampled_from(behind if behind and prefer else SCOPES))

    @rule(data=st.data(), stale=st.sampled_from([0, 0, 0, 1, -1]))
    def begin_attempt(self, data: st.DataObject, stale: int) -> None:
        scope = self._behind(data)
        if self.cursor[scope] + stale >= 0:
            self._begin(scope, self.cursor[scope] + stale)

    def _begin(self, scope: str, after: int) -> AttemptGrant | None:
        key = (scope, after)
        row = self.budgets.get(key)
        call = self.backend.begin_attempt(scope, after)
        if after != self.cursor[scope]:
            err = self._refused(TopicProcessingError, call)
            assert (err.code, err.terminal) == ("cursor_conflict", False)  # type: ignore
            return None
        if row is not None and row.failure_code in TERMINAL_CODES:
            err = self._refused(TopicProcessingError, call)
            assert (err.code, err.terminal) == (row.failure_code, True)  # type: ignore
            event("begin: terminal frontier")
            return None
        if row is not None and row.attempt_count >= ATTEMPT_LIMIT:
            err = self._refused(TopicProcessingError, call)
            assert (err.code, err.terminal) == (CODE_ATTEMPT_LIMIT, True)  # type: ignore
            self.budgets[key] = attrs.evolve(row, failure_code=CODE_ATTEMPT_LIMIT)
            event("begin: attempt limit stored")
            return None
        grant = self._run(call)
        event("begin: admitted")
        count = 1 if row is None else row.attempt_count + 1
        assert (grant.scope_id, grant.binding_name, grant.source_after) == (scope, BINDING,
                                                                            after)
        assert grant.attempt_count == count
        assert all(g.attempt_id != grant.attempt_id for g in self.grants)
        self.grants.append(grant)
        self.budgets[key] = (
            BudgetRow(scope, BINDING, after, after, grant.attempt_id, 1, 0, 0)
            if row is None else attrs.evolve(row, attempt_id=grant.attempt_id,
                                             attempt_count=count))
        return grant

    def _pick_grant(self, data: st.DataObject) -> AttemptGrant | None:
        """Mostly the grant holding a live budget row, sometimes any older one (None
        before the first attempt)."""
        if not self.grants:
            return None
        holders = [g for g in self.grants
                   if (row := self.budgets.get((g.scope_id, g.source_after))) is not None
                   and row.attempt_id == g.attempt_id]
        prefer: int = data.draw(st.integers(0, 3))
        if holders and prefer:
            return data.draw(st.sampled_from(holders))
        return data.draw(st.sampled_from(self.grants))

    @rule(data=st.data(), requests=REQUESTS, tokens=TOKENS, ahead=st.integers(1, 4))
    def reserve(self, data: st.DataObject, requests: int, tokens: int, ahead: int) -> None:
        grant = self._pick_grant(data)
        if grant is not None:
            self._reserve(grant, requests, tokens, grant.source_after + ahead)

    def _reserve(self, grant: AttemptGrant, requests: int, tokens: int, through: int) -> None:
        key = (grant.scope_id, grant.source_after)
        row = self.budgets.get(key)
        call = self.backend.reserve(grant, requests, tokens, through=through)
        if row is None or row.attempt_id != grant.attempt_id:
            err = self._refused(TopicProcessingError, call)
            assert (err.code, err.terminal) == ("attempt_superseded", False)  # type: ignore
            return
        if row.failure_code in TERMINAL_CODES:
            err = self._refused(TopicProcessingError, call)
            assert (err.code, err.terminal) == (row.failure_code, True)  # type: ignore
            return
        if row.reserved_requests + requests > REQUEST_LIMIT \
                or row.reserved_tokens + tokens > TOKEN_LIMIT:
            err = self._refused(TopicProcessingError, call)
            assert (err.code, err.terminal) == (CODE_BUDGET_EXCEEDED, True)  # type: ignore
            self.budgets[key] = attrs.evolve(row, failure_code=CODE_BUDGET_EXCEEDED)
            event("reserve: budget exceeded stored")
            return
        self._run(call)
        self.budgets[key] = attrs.evolve(
            row, reserved_requests=row.reserved_requests + requests,
            reserved_tokens=row.reserved_tokens + tokens,
            furthest_through=max(row.furthest_through, through))
        if self.cursor[grant.scope_id] == grant.source_after:  # committed, seen at once
            (status,) = self._run(self.backend.processing_status(grant.scope_id))
            assert status.budget == self.budgets[key]

    @rule(data=st.data(), code=st.sampled_from(FAILURE_CODES))
    def record_failure(self, data: st.DataObject, code: str) -> None:
        grant = self._pick_grant(data)
        if grant is None:
            return
        key = (grant.scope_id, grant.source_after)
        self._run(self.backend.record_failure(grant, code))
        row = self.budgets.get(key)
        if row is None or row.attempt_id != grant.attempt_id \
                or row.failure_code in TERMINAL_CODES:
            return
        self.budgets[key] = attrs.evolve(row, failure_code=code)

    @rule(data=st.data(), claim=CLAIMS, with_pending=st.booleans())
    def publish_noop_window(self, data: st.DataObject, claim: str,
                            with_pending: bool) -> None:
        """A guarded publication with zero writes (a NOOP Window) by some grant, mostly
        one holding its budget row, ``through`` anywhere up to the Source head."""
        ready = [g for g in self.grants if self._head(g.scope_id) > g.source_after]
        if not ready:
            return
        holders = [g for g in ready if (row := self.budgets.get((g.scope_id, g.source_after)))
                   is not None and row.attempt_id == g.attempt_id]
        prefer: int = data.draw(st.integers(0, 3))
        grant = data.draw(st.sampled_from(holders if holders and prefer else ready))
        self._publish(grant, data.draw(st.integers(grant.source_after + 1,
                                                   self._head(grant.scope_id))),
                      claim, with_pending)

    @rule(data=st.data(), claim=CLAIMS, spend=st.integers(0, 2))
    def process_window(self, data: st.DataObject, claim: str, spend: int) -> None:
        """One whole NOOP Window of a Scope behind its Cursor: an attempt, up to two
        reservations, and the guarded publication up to a chosen position."""
        behind = [s for s in SCOPES if self._head(s) > self.cursor[s]]
        if not behind:
            return
        scope = data.draw(st.sampled_from(behind))
        grant = self._begin(scope, self.cursor[scope])
        if grant is None:
            return
        through = data.draw(st.integers(grant.source_after + 1, self._head(scope)))
        for _ in range(spend):
            self._reserve(grant, 1, 1_000, data.draw(st.integers(grant.source_after + 1,
                                                                 through)))
        self._publish(grant, through, claim, True)

    def _publish(self, grant: AttemptGrant, through: int, claim: str,
                 with_pending: bool) -> None:
        scope, after = grant.scope_id, grant.source_after
        row = self.pending.get(scope)
        generation = row.flush_generation if row is not None else 0
        claimed = {"none": None, "current": generation,
                   "older": max(0, generation - 1), "zero": 0,
                   "beyond": generation + 1}[claim]
        guards = PublicationGuards(
            cursor=CursorAdvance(BINDING, scope, after, through),
            pending=PendingUpdate(claimed) if with_pending else None,
            budget=BudgetRelease(grant.attempt_id, after))
        call = self.backend.publish(TopicPublication((), guards))
        budget = self.budgets.get((scope, after))
        if self.cursor[scope] != after or budget is None \
                or budget.attempt_id != grant.attempt_id:
            self._refused(RevisionConflictError, call)
            event("publish: refused (cursor moved or attempt superseded)")
            return
        if with_pending and row is not None and claimed is not None \
                and claimed > row.flush_generation:
            err = self._refused(InvalidInputError, call)
            assert err.field == "guards.pending.claimed_flush_generation"  # type: ignore
            event("publish: refused (claimed generation never flushed)")
            return
        assert self._run(call) == ()
        event(f"publish: advanced (claimed {claim})")
        self.cursor[scope] = through
        del self.budgets[(scope, after)]
        if with_pending and row is not None:
            handled = row.handled_flush_generation
            if claimed is not None:
                handled = max(handled, claimed)
            if through >= row.source_through and handled == row.flush_generation:
                event("publish: Pending deleted")
                del self.pending[scope]
                self.written_since.pop(scope, None)
            else:
                event("publish: Pending kept" + (
                    " (covered, a flush unhandled)" if through >= row.source_through else ""))
                self.pending[scope] = attrs.evolve(row, handled_flush_generation=handled)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def backend_matches_the_model(self) -> None:
        for scope in SCOPES:
            (status,) = self._run(self.backend.processing_status(scope))
            assert (status.scope_id, status.binding_name) == (scope, BINDING)
            assert status.source_head == self._head(scope)
            assert status.cursor == self.cursor[scope]
            assert status.pending == self.pending.get(scope)
            assert status.budget == self.budgets.get((scope, self.cursor[scope]))
        # every budget row lives at its Scope's current frontier
        assert all(after == self.cursor[scope] for scope, after in self.budgets)

    @invariant()
    def journal_positions_run_one_to_n(self) -> None:
        for scope in SCOPES:
            rows = self._run(self.backend.scope_journal(scope, 0, 1000))
            assert [r.position for r in rows] == list(range(1, len(rows) + 1))
            assert [r.source.source_id for r in rows] == self.journal[scope]
            assert {r.position for r in rows if r.lineage_only} == self.lineage[scope]
            assert all(r.scope_id == scope for r in rows)

    @invariant()
    def pending_cursor_and_budget_rules_hold(self) -> None:
        for scope in SCOPES:
            (status,) = self._run(self.backend.processing_status(scope))
            assert status.cursor >= self.seen_cursor[scope], "the Cursor moved backwards"
            self.seen_cursor[scope] = status.cursor
            pending, before = status.pending, self.seen_pending.get(scope)
            if pending is not None:
                assert pending.source_through >= 1
                assert 0 <= pending.handled_flush_generation <= pending.flush_generation
                assert pending.source_through >= self.written_since.get(scope, 0)
                self.seen_pending[scope] = pending
            elif before is not None:
                # gone: only when the Cursor covers it and every flush was handled
                assert status.cursor >= before.source_through
                del self.seen_pending[scope]
            budget = status.budget
            key = (scope, status.cursor)
            for old in [k for k in self.seen_budget if k[0] == scope and k != key]:
                del self.seen_budget[old]  # the Cursor left that frontier: row deleted
            if budget is None:
                self.seen_budget.pop(key, None)
                continue
            assert 1 <= budget.attempt_count <= ATTEMPT_LIMIT
            prior = self.seen_budget.get(key)
            if prior is not None:
                assert budget.reserved_requests >= prior.reserved_requests
                assert budget.reserved_tokens >= prior.reserved_tokens
                assert budget.furthest_through >= prior.furthest_through
                assert budget.attempt_count >= prior.attempt_count
                if prior.terminal:
                    assert budget.failure_code == prior.failure_code, "terminal stays"
            assert budget.reserved_requests <= REQUEST_LIMIT
            assert budget.reserved_tokens <= TOKEN_LIMIT
            self.seen_budget[key] = budget


def topic_processing_state_machine_test(
    factory: Callable[[], Any],
    *,
    max_examples: int | None = None,
    stateful_step_count: int = 40,
) -> Any:
    """A unittest TestCase class running :class:`TopicProcessingStateMachine` on
    ``factory`` (``() -> TopicMemoryBackend``, a fresh empty database per call)."""
    machine = type("BoundTopicProcessingStateMachine", (TopicProcessingStateMachine,),
                   {"backend_factory": staticmethod(factory)})
    overrides: dict[str, Any] = {"stateful_step_count": stateful_step_count, "deadline": None}
    if max_examples is not None:
        overrides["max_examples"] = max_examples
    test_case: Any = getattr(machine, "TestCase")  # noqa: B009 (made by hypothesis)
    test_case.settings = _settings(_settings(), **overrides)
    return test_case
