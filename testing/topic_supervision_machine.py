"""The Supervisor-substrate stateful test (Topic Memory RFC, "Leader, term, and
fencing", "Automatic scheduling", "Pending dirty set"): leases, flushes, Source writes,
wave freezes, fenced Windows and wave completions interleaved on a Topic backend whose
term lasts until the next acquire (SQLite, in-memory).

:class:`TopicSupervisionStateMachine` acquires new terms (every acquire is a takeover),
renews current and stale ones, adds Sources and flushes in three Scopes, freezes waves,
publishes NOOP Windows (automatic: Pending untouched; explicit: the claimed flush
generation) whose attempt and publication each carry the current term, a stale one or
none (``topic process``), completes targets and waves, and clears targets. Invariants:

- generations never decrease (each acquire is exactly one above the last);
- at most one term is valid (``renew_lease`` is True for the newest only);
- no stale-term call writes anything (the whole processing state and every wave's
  targets are unchanged after a refused call);
- Cursors never decrease;
- a Pending row disappears only when its Cursor covers the ``source_through`` last
  seen and every flush was handled (explicit Window or wave completion), and a wave
  completion deletes exactly the rows of its Scopes that satisfy that condition;
- a completed wave set ``last_auto_wave_completed_at`` within the database clock
  readings around it.

Bind it with :func:`topic_supervision_state_machine_test`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from hypothesis import event
from hypothesis import settings as _settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from powercontext.core import canonical
from powercontext.core.errors import SupervisorTermError, TopicProcessingError
from powercontext.core.topic.models import PublicationGuards, TopicPublication
from powercontext.core.topic.processing import (
    BINDING,
    BudgetRelease,
    CursorAdvance,
    PendingRow,
    PendingUpdate,
)
from powercontext.core.topic.supervision import CODE_TERM_LOST, SupervisorTerm

__all__ = ["TopicSupervisionStateMachine", "topic_supervision_state_machine_test"]

T = TypeVar("T")
SCOPES = ("project:a", "project:b", "repo:/c")
TERMS = st.sampled_from(["current", "current", "stale", "none"])


class TopicSupervisionStateMachine(RuleBasedStateMachine):
    """Subclass and set ``backend_factory`` (``() -> TopicMemoryBackend`` whose
    ``acquire_lease`` takes ``None``, a fresh empty database per call)."""

    backend_factory: Callable[[], Any]

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.backend = type(self).backend_factory()
        self.n = 0
        self.terms: list[SupervisorTerm] = []
        self.waves: list[str] = []
        self.seen_cursor: dict[str, int] = dict.fromkeys(SCOPES, 0)
        self.seen_pending: dict[str, PendingRow] = {}
        self.allowed_gone: set[str] = set()  # rows the last step may have deleted

    def teardown(self) -> None:
        self.loop.run_until_complete(self.backend.close())
        self.loop.close()

    def _run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    def _term(self, which: str) -> SupervisorTerm | None:
        if which == "none" or not self.terms:
            return None
        if which == "stale" and len(self.terms) > 1:
            return self.terms[-2]
        return self.terms[-1]

    def _stale(self, term: SupervisorTerm | None) -> bool:
        return term is not None and term != self.terms[-1]

    def _snapshot(self) -> Any:
        status = self._run(self.backend.processing_status())
        targets = {w: self._run(self.backend.wave_targets(w, None, 1000)) for w in self.waves}
        state = self._run(self.backend.scheduling_state())
        return status, targets, state.last_auto_wave_completed_at

    def _refused_unchanged(self, coro: Awaitable[Any], error: type[Exception]) -> None:
        before = self._snapshot()
        try:
            self._run(coro)
        except error as exc:
            if isinstance(exc, TopicProcessingError):
                assert exc.code == CODE_TERM_LOST and not exc.terminal, exc
        else:
            raise AssertionError(f"a stale term was not refused ({error.__name__})")
        assert self._snapshot() == before, "a stale-term call wrote something"
        event("stale term refused")

    def _pending(self) -> dict[str, PendingRow]:
        return {r.scope_id: r for r in self._run(self.backend.pending_page(None, 1000))}

    # ------------------------------------------------------------------ rules

    @rule()
    def acquire(self) -> None:
        term = self._run(self.backend.acquire_lease(str(uuid.uuid4()), None))
        assert term is not None
        last = self.terms[-1].generation if self.terms else 0
        assert term.generation == last + 1, (last, term)
        self.terms.append(term)

    @rule(which=TERMS)
    def renew(self, which: str) -> None:
        term = self._term(which)
        if term is None:
            return
        assert self._run(self.backend.renew_lease(term, None)) is (not self._stale(term))

    @rule(scope=st.sampled_from(SCOPES), new=st.integers(1, 3))
    def add_sources(self, scope: str, new: int) -> None:
        sources = []
        for _ in range(new):
            self.n += 1
            sources.append(canonical.make_source(f"sv_{self.n:05d}", "user_note",
                                                 f"text {self.n}"))
        self._run(self.backend.put_scoped_sources(scope, sources))

    @rule(scope=st.sampled_from(SCOPES))
    def flush(self, scope: str) -> None:
        self._run(self.backend.flush(scope))

    @precondition(lambda self: bool(self.terms))
    @rule(which=TERMS)
    def freeze(self, which: str) -> None:
        term = self._term(which) or self.terms[-1]
        wave = str(uuid.uuid4())
        if self._stale(term):
            self._refused_unchanged(self.backend.freeze_wave(term, wave), SupervisorTermError)
            return
        pending = self._pending()
        assert self._run(self.backend.freeze_wave(term, wave)) == len(pending)
        self.waves.append(wave)
        frozen = self._run(self.backend.wave_targets(wave, None, 1000))
        assert {t.scope_id: t.source_through for t in frozen} == {
            s: r.source_through for s, r in pending.items()}

    @rule(scope=st.sampled_from(SCOPES), begin=TERMS, publish=TERMS,
          explicit=st.booleans(), data=st.data())
    def window(self, scope: str, begin: str, publish: str, explicit: bool,
               data: st.DataObject) -> None:
        (status,) = self._run(self.backend.processing_status(scope))
        if status.source_head <= status.cursor:
            return
        through = data.draw(st.integers(status.cursor + 1, status.source_head))
        t_begin, t_publish = self._term(begin), self._term(publish)
        if self._stale(t_begin):
            self._refused_unchanged(self.backend.begin_attempt(
                scope, status.cursor, supervisor=t_begin), TopicProcessingError)
            return
        try:
            grant = self._run(self.backend.begin_attempt(scope, status.cursor,
                                                         supervisor=t_begin))
        except TopicProcessingError as exc:
            assert exc.terminal, exc  # an exhausted frontier (stale publishes left it)
            return
        claimed = status.pending.flush_generation if explicit and status.pending else None
        guards = PublicationGuards(
            supervisor=t_publish,
            cursor=CursorAdvance(BINDING, scope, status.cursor, through),
            pending=PendingUpdate(claimed) if explicit else None,
            budget=BudgetRelease(grant.attempt_id, status.cursor))
        publication = TopicPublication((), guards)
        if self._stale(t_publish):
            self._refused_unchanged(self.backend.publish(publication), SupervisorTermError)
            return
        self._run(self.backend.publish(publication))
        if explicit:
            self.allowed_gone.add(scope)

    @precondition(lambda self: bool(self.terms and self.waves))
    @rule(which=TERMS, data=st.data())
    def complete_target(self, which: str, data: st.DataObject) -> None:
        term = self._term(which) or self.terms[-1]
        wave = data.draw(st.sampled_from(self.waves))
        scope = data.draw(st.sampled_from(SCOPES))
        if self._stale(term):
            self._refused_unchanged(self.backend.complete_target(term, wave, scope),
                                    SupervisorTermError)
            return
        self._run(self.backend.complete_target(term, wave, scope))

    @precondition(lambda self: bool(self.terms and self.waves))
    @rule(which=TERMS, data=st.data())
    def complete_wave(self, which: str, data: st.DataObject) -> None:
        term = self._term(which) or self.terms[-1]
        wave = data.draw(st.sampled_from(self.waves))
        if self._stale(term):
            self._refused_unchanged(self.backend.complete_wave(term, wave),
                                    SupervisorTermError)
            return
        self._complete(term, wave)

    def _complete(self, term: SupervisorTerm, wave: str) -> None:
        (statuses, targets, last) = self._snapshot()
        cursors = {s.scope_id: s.cursor for s in statuses}
        # every target (completed or not) is a Pending Scope's frozen through; the
        # uncompleted ones are what wave_targets shows
        open_targets = targets[wave]
        covered = all(cursors.get(t.scope_id, 0) >= t.source_through for t in open_targets)
        pending = self._pending()
        start = self._run(self.backend.scheduling_state()).database_now
        done = self._run(self.backend.complete_wave(term, wave))
        after = self._pending()
        if not done:
            # refused: a target is uncovered, or the wave has no target left open
            # (never frozen, cleared, completed already, or every target completed)
            assert not covered or not open_targets
            assert after == pending
            assert self._run(self.backend.scheduling_state()).last_auto_wave_completed_at == last
            return
        assert covered, "a wave with an uncovered target completed"
        event("wave completed")
        state = self._run(self.backend.scheduling_state())
        completed = state.last_auto_wave_completed_at
        assert completed is not None and start <= completed <= state.database_now
        assert self._run(self.backend.wave_targets(wave, None, 1000)) == ()
        for scope, row in pending.items():
            qualifies = (cursors.get(scope, 0) >= row.source_through
                         and row.handled_flush_generation == row.flush_generation)
            if scope not in after:
                assert qualifies, f"{scope}: a Pending row that does not qualify was deleted"
                self.allowed_gone.add(scope)
            elif qualifies:
                # kept only when it was not a Scope of this wave
                assert all(t.scope_id != scope for t in open_targets), scope

    @precondition(lambda self: bool(self.terms and self.waves))
    @rule(data=st.data())
    def drive_wave(self, data: st.DataObject) -> None:
        """As the Leader's automatic Workers do: Windows under the current term bring
        every open target of a wave to its Source head, then the wave completes."""
        term = self.terms[-1]
        wave = data.draw(st.sampled_from(self.waves))
        for target in self._run(self.backend.wave_targets(wave, None, 1000)):
            (status,) = self._run(self.backend.processing_status(target.scope_id))
            if status.source_head <= status.cursor:
                continue
            try:
                grant = self._run(self.backend.begin_attempt(
                    target.scope_id, status.cursor, supervisor=term))
            except TopicProcessingError as exc:
                assert exc.terminal, exc
                return
            self._run(self.backend.publish(TopicPublication((), PublicationGuards(
                supervisor=term,
                cursor=CursorAdvance(BINDING, target.scope_id, status.cursor,
                                     status.source_head),
                budget=BudgetRelease(grant.attempt_id, status.cursor)))))
            assert self._run(self.backend.complete_target(term, wave, target.scope_id))
        self._complete(term, wave)

    @precondition(lambda self: bool(self.terms))
    @rule(which=TERMS)
    def clear(self, which: str) -> None:
        term = self._term(which) or self.terms[-1]
        if self._stale(term):
            self._refused_unchanged(self.backend.clear_wave_targets(term), SupervisorTermError)
            return
        self._run(self.backend.clear_wave_targets(term))
        self.waves.clear()

    # ------------------------------------------------------------------ invariants

    @invariant()
    def at_most_one_valid_term(self) -> None:
        valid = [t for t in self.terms if self._run(self.backend.renew_lease(t, None))]
        assert valid == self.terms[-1:], valid

    @invariant()
    def cursors_never_decrease_and_pending_goes_only_when_it_may(self) -> None:
        statuses = {s.scope_id: s for s in self._run(self.backend.processing_status())}
        for scope in SCOPES:
            st_ = statuses.get(scope)
            cursor = st_.cursor if st_ is not None else 0
            assert cursor >= self.seen_cursor[scope], "a Cursor moved backwards"
            self.seen_cursor[scope] = cursor
            row = st_.pending if st_ is not None else None
            before = self.seen_pending.get(scope)
            if row is not None:
                assert row.handled_flush_generation <= row.flush_generation
                if before is not None:
                    assert row.source_through >= before.source_through
                self.seen_pending[scope] = row
            elif before is not None:
                assert scope in self.allowed_gone, f"{scope}: Pending vanished"
                assert cursor >= before.source_through
                del self.seen_pending[scope]
        self.allowed_gone.clear()


def topic_supervision_state_machine_test(
    factory: Callable[[], Any],
    *,
    max_examples: int | None = None,
    stateful_step_count: int = 30,
) -> Any:
    """A unittest TestCase class running :class:`TopicSupervisionStateMachine` on
    ``factory`` (``() -> TopicMemoryBackend``, a fresh empty database per call)."""
    machine = type("BoundTopicSupervisionStateMachine", (TopicSupervisionStateMachine,),
                   {"backend_factory": staticmethod(factory)})
    overrides: dict[str, Any] = {"stateful_step_count": stateful_step_count,
                                 "deadline": None}
    if max_examples is not None:
        overrides["max_examples"] = max_examples
    test_case: Any = getattr(machine, "TestCase")  # noqa: B009 (made by hypothesis)
    test_case.settings = _settings(_settings(), **overrides)
    return test_case
