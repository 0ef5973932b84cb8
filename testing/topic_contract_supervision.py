"""Topic contract group: the Supervisor substrate (Topic Memory RFC, "Leader, term, and
fencing", "Supervisor failover and recovery", "Automatic scheduling"; TOPIC-MEMORY.md,
"SQLite and other processes").

Leases of group ``global`` with a generation that rises on every takeover and never on
a renewal; a superseded term refuses ``begin_attempt`` / ``reserve`` /
``record_failure`` (TopicProcessingError ``supervisor_term_lost``) and ``publish`` and
the wave calls (SupervisorTermError) with nothing written; bounded Pending pages; the
set-based freeze; the wave completion that deletes only qualifying Pending and takes
its time from the database clock. A backend whose leases expire by database time
declares ``lease_expires = True`` (acquire and renew then take a lease length); the
kit reads it to run the engine's own rule (SQLite: every acquire is a takeover;
OceanBase: a valid lease of another holder refuses, a released one can be taken).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from powercontext.core.errors import (
    InvalidInputError,
    RevisionConflictError,
    SupervisorTermError,
)
from powercontext.core.topic.models import PublicationGuards, TopicPublication
from powercontext.core.topic.processing import (
    BINDING,
    BudgetRelease,
    CursorAdvance,
    PendingUpdate,
)
from powercontext.core.topic.supervision import CODE_TERM_LOST, SupervisorTerm
from powercontext.testing.topic_base import TopicKit
from powercontext.testing.topic_contract_budget import (
    ProcessingContractBase,
    refused,
    scoped,
    status,
)

__all__ = ["TopicSupervisionContract", "lease_seconds", "supersede", "window"]

LEASE = 30.0


def lease_seconds(backend: Any) -> float | None:
    """The lease length the backend's acquire takes (None: no expiry)."""
    return LEASE if getattr(backend, "lease_expires", False) else None


async def supersede(backend: Any, term: SupervisorTerm) -> SupervisorTerm:
    """A new term of another holder after ``term``: a plain acquire where every acquire
    takes over (SQLite); else ``term`` is refused while valid, then released first."""
    holder = str(uuid.uuid4())
    seconds = lease_seconds(backend)
    if seconds is not None:
        assert await backend.acquire_lease(holder, seconds) is None
        await backend.release_lease(term)
    new = await backend.acquire_lease(holder, seconds)
    assert new is not None and new.generation == term.generation + 1, (term, new)
    return new  # type: ignore[no-any-return]


async def window(kit: TopicKit, scope: str, through: int,
                 term: SupervisorTerm | None) -> None:
    """Admit and publish the NOOP Window after the Scope's Cursor through ``through``
    as an automatic Worker does (the Cursor advances, Pending stays)."""
    cursor = (await status(kit, scope)).cursor
    grant = await kit.backend.begin_attempt(scope, cursor, supervisor=term)  # type: ignore[attr-defined]
    await kit.backend.publish(TopicPublication((), PublicationGuards(
        supervisor=term, cursor=CursorAdvance(BINDING, scope, cursor, through),
        budget=BudgetRelease(grant.attempt_id, cursor))))


def _wave() -> str:
    return str(uuid.uuid4())


class TopicSupervisionContract(ProcessingContractBase):
    """Leases, fencing, discovery and automatic waves."""

    def _srun(self, factory: Any, model: Any, body: Any) -> None:
        async def go(kit: TopicKit) -> None:
            if not callable(getattr(kit.backend, "acquire_lease", None)):
                pytest.skip(f"{type(kit.backend).__name__} has no acquire_lease()")
            await body(kit)
        self._run(factory, model, go)

    def test_a_superseded_term_refuses_every_fenced_call_and_writes_nothing(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            b: Any = kit.backend
            scope = "project:fence"
            await scoped(kit, "f1", "f2", scope=scope)
            old = await b.acquire_lease(str(uuid.uuid4()), lease_seconds(b))
            assert old is not None and old.generation >= 1
            grant = await b.begin_attempt(scope, 0, supervisor=old)
            assert grant.supervisor == old
            await b.reserve(grant, 1, 100, through=1)
            wave = _wave()
            assert await b.freeze_wave(old, wave) == 1
            before = await status(kit, scope)
            new = await supersede(b, old)
            assert not await b.renew_lease(old, lease_seconds(b))
            await refused(CODE_TERM_LOST, b.begin_attempt(scope, 0, supervisor=old),
                          terminal=False)
            await refused(CODE_TERM_LOST, b.reserve(grant, 1, 100, through=1),
                          terminal=False)
            await refused(CODE_TERM_LOST, b.record_failure(grant, "provider_error"),
                          terminal=False)
            w = await kit.write(scope, "Kiwi", "kiwi", "Kiwi detail.", sources=("f1",))
            with pytest.raises(SupervisorTermError):
                await b.publish(TopicPublication((w,), PublicationGuards(
                    supervisor=old, cursor=CursorAdvance(BINDING, scope, 0, 1),
                    budget=BudgetRelease(grant.attempt_id, 0))))
            for call in (b.freeze_wave(old, _wave()), b.clear_wave_targets(old),
                         b.complete_target(old, wave, scope), b.complete_wave(old, wave)):
                with pytest.raises(SupervisorTermError):
                    await call
            assert await status(kit, scope) == before  # budget, Cursor, Pending unchanged
            assert await b.heads(scope) == ()
            assert [t.scope_id for t in await b.wave_targets(wave, None, 10)] == [scope]
            # the new term goes on where the old one stopped
            assert await b.renew_lease(new, lease_seconds(b))
            await window(kit, scope, 2, new)
            assert (await status(kit, scope)).cursor == 2
        self._srun(topic_backend_factory, topic_embedding_model, body)

    def test_renewal_keeps_the_generation_and_acquire_follows_the_engine_rule(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            b: Any = kit.backend
            seconds = lease_seconds(b)
            holder = str(uuid.uuid4())
            first = await b.acquire_lease(holder, seconds)
            assert first is not None and first.holder_id == holder
            for _ in range(3):
                assert await b.renew_lease(first, seconds)
            again = await b.acquire_lease(holder, seconds)
            assert again is not None
            if seconds is None:  # SQLite: every start is a new term
                assert again.generation == first.generation + 1
                await b.release_lease(again)  # changes nothing
                assert await b.renew_lease(again, seconds)
            else:  # a holder asking again while valid is renewed
                assert again == first
                await b.release_lease(first)  # expired by database time now
                assert not await b.renew_lease(first, seconds)
                await refused(CODE_TERM_LOST, b.begin_attempt("project:r", 0,
                                                              supervisor=first),
                              terminal=False)
                back = await b.acquire_lease(holder, seconds)
                assert back is not None and back.generation == first.generation + 1
        self._srun(topic_backend_factory, topic_embedding_model, body)

    def test_bad_lease_and_term_values_are_invalid_input(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            b: Any = kit.backend
            seconds = lease_seconds(b)
            bad: Any
            for bad in ("", "x" * 37, "é", 5):
                with pytest.raises(InvalidInputError, match="holder_id"):
                    await b.acquire_lease(bad, seconds)
            wrong = LEASE if seconds is None else None
            with pytest.raises(InvalidInputError, match="lease_seconds"):
                await b.acquire_lease(str(uuid.uuid4()), wrong)
            if seconds is not None:
                for bad in (0, -1.0, float("nan"), 1e9, True):
                    with pytest.raises(InvalidInputError, match="lease_seconds"):
                        await b.acquire_lease(str(uuid.uuid4()), bad)
            with pytest.raises(InvalidInputError, match="supervisor"):
                await b.begin_attempt("project:x", 0, supervisor=object())
            with pytest.raises(InvalidInputError, match="generation"):
                await b.freeze_wave(SupervisorTerm("h", 0), _wave())
            term = await b.acquire_lease(str(uuid.uuid4()), seconds)
            for bad in ("w", str(uuid.uuid4()).upper(), None):
                with pytest.raises(InvalidInputError, match="wave_id"):
                    await b.freeze_wave(term, bad)
        self._srun(topic_backend_factory, topic_embedding_model, body)

    def test_pending_pages_are_bounded_ordered_and_filtered(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            b: Any = kit.backend
            scopes = ["project:b", "project:a", "project:é", "project:z", "project:a-"]
            for i, s in enumerate(scopes):
                await scoped(kit, f"pg{i}", scope=s)
            order = sorted(scopes, key=lambda s: s.encode("utf-8"))
            seen: list[str] = []
            after = None
            while True:
                page = await b.pending_page(after, 2)
                assert len(page) <= 2
                if not page:
                    break
                seen += [r.scope_id for r in page]
                after = page[-1].scope_id
            assert seen == order
            assert all(r.binding_name == BINDING for r in await b.pending_page(None, 10))
            assert await b.pending_page(None, 10, flushed_only=True) == ()
            assert await b.flush("project:z") == "accepted"
            flushed = await b.pending_page(None, 10, flushed_only=True)
            assert [(r.scope_id, r.flush_generation, r.handled_flush_generation)
                    for r in flushed] == [("project:z", 1, 0)]
            term = await b.acquire_lease(str(uuid.uuid4()), lease_seconds(b))
            wave = _wave()
            assert await b.freeze_wave(term, wave) == 5
            await scoped(kit, "pg9", scope="project:new")
            outside = await b.pending_page(None, 10, outside_wave=wave)
            assert [r.scope_id for r in outside] == ["project:new"]
            for bad in (0, 1001, True, "2", None):
                with pytest.raises(InvalidInputError, match="limit"):
                    await b.pending_page(None, bad)
                with pytest.raises(InvalidInputError, match="limit"):
                    await b.wave_targets(wave, None, bad)
            with pytest.raises(InvalidInputError, match="after_scope"):
                await b.pending_page("", 10)
            with pytest.raises(InvalidInputError, match="wave_id"):
                await b.pending_page(None, 10, outside_wave="nope")
        self._srun(topic_backend_factory, topic_embedding_model, body)

    def test_freeze_is_set_based_and_ignores_pending_written_after_it(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            b: Any = kit.backend
            await scoped(kit, "fa1", scope="project:a")
            await scoped(kit, "fb1", "fb2", scope="project:b")
            term = await b.acquire_lease(str(uuid.uuid4()), lease_seconds(b))
            wave = _wave()
            assert await b.wave_targets(wave, None, 10) == ()
            assert await b.freeze_wave(term, wave) == 2
            with pytest.raises(RevisionConflictError):  # one freeze per wave
                await b.freeze_wave(term, wave)
            await scoped(kit, "fa2", scope="project:a")  # raised after the freeze
            await scoped(kit, "fc1", scope="project:c")  # new after the freeze
            targets = await b.wave_targets(wave, None, 10)
            assert [(t.scope_id, t.source_through, t.completed) for t in targets] == [
                ("project:a", 1, False), ("project:b", 2, False)]
            assert [t.scope_id for t in await b.wave_targets(wave, "project:a", 10)] == [
                "project:b"]
            assert await b.clear_wave_targets(term) == 2
            assert await b.wave_targets(wave, None, 10) == ()
            assert await b.clear_wave_targets(term) == 0
        self._srun(topic_backend_factory, topic_embedding_model, body)

    def test_complete_wave_refuses_uncovered_targets_and_deletes_only_qualifying_pending(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            b: Any = kit.backend
            raised, flushed, done = "project:raised", "project:flushed", "project:done"
            for s in (raised, flushed, done):
                await scoped(kit, f"{s}-1", scope=s)
            assert await b.flush(flushed) == "accepted"
            term = await b.acquire_lease(str(uuid.uuid4()), lease_seconds(b))
            assert (await b.scheduling_state()).last_auto_wave_completed_at is None
            wave = _wave()
            assert await b.freeze_wave(term, wave) == 3
            await window(kit, raised, 1, term)
            assert not await b.complete_target(term, wave, flushed)  # not covered
            assert not await b.complete_wave(term, wave)  # two targets uncovered
            assert len(await b.pending_page(None, 10)) == 3
            assert (await b.scheduling_state()).last_auto_wave_completed_at is None
            await window(kit, flushed, 1, term)
            await window(kit, done, 1, term)
            await scoped(kit, f"{raised}-2", scope=raised)  # a newer Source
            assert await b.complete_target(term, wave, raised)
            assert [t.scope_id for t in await b.wave_targets(wave, None, 10)] == [
                done, flushed]
            start = (await b.scheduling_state()).database_now
            assert await b.complete_wave(term, wave)
            state = await b.scheduling_state()
            completed = state.last_auto_wave_completed_at
            assert completed is not None and completed.tzinfo is not None
            assert start <= completed <= state.database_now
            left = {r.scope_id: r for r in await b.pending_page(None, 10)}
            assert set(left) == {raised, flushed}  # raised by a newer Source; a flush unhandled
            assert left[raised].source_through == 2
            assert await b.wave_targets(wave, None, 10) == ()
            assert not await b.complete_wave(term, wave)  # no targets: no wave
        self._srun(topic_backend_factory, topic_embedding_model, body)

    def test_a_grant_carries_its_term_and_publish_checks_the_term_first(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            b: Any = kit.backend
            scope = "project:first"
            await scoped(kit, "t1", scope=scope)
            term = await b.acquire_lease(str(uuid.uuid4()), lease_seconds(b))
            grant = await b.begin_attempt(scope, 0, supervisor=term)
            stale = SupervisorTerm(term.holder_id, term.generation + 7)
            # a stale term fails before the Cursor CAS, even with a stale Cursor
            with pytest.raises(SupervisorTermError):
                await b.publish(TopicPublication((), PublicationGuards(
                    supervisor=stale, cursor=CursorAdvance(BINDING, scope, 5, 6),
                    budget=BudgetRelease(grant.attempt_id, 5))))
            await window(kit, scope, 1, term)
            assert (await status(kit, scope)).budget is None
        self._srun(topic_backend_factory, topic_embedding_model, body)

    def test_handle_flush_handles_a_covered_flush_with_no_window_left(
            self, topic_backend_factory, topic_embedding_model):
        """A flush during a wave with no new Source: the wave's last Window handles the
        claimed generation 1, the second flush (generation 2) finds its target covered;
        ``handle_flush`` handles it and deletes Pending without a Window. Below its
        target it writes nothing; a stale term is refused; a claim beyond the flushed
        generation is invalid input."""
        async def body(kit: TopicKit) -> None:
            b: Any = kit.backend
            scope = "project:handle"
            await scoped(kit, "h1", "h2", scope=scope)
            assert await b.flush(scope) == "accepted"
            term = await b.acquire_lease(str(uuid.uuid4()), lease_seconds(b))
            grant = await b.begin_attempt(scope, 0, supervisor=term)
            await b.publish(TopicPublication((), PublicationGuards(
                supervisor=term, cursor=CursorAdvance(BINDING, scope, 0, 1),
                budget=BudgetRelease(grant.attempt_id, 0))))
            assert await b.flush(scope) == "accepted"  # during the wave: generation 2
            assert not await b.handle_flush(scope, 2, 2, supervisor=term)  # Cursor at 1
            before = (await status(kit, scope)).pending
            assert before is not None and before.handled_flush_generation == 0
            grant = await b.begin_attempt(scope, 1, supervisor=term)
            await b.publish(TopicPublication((), PublicationGuards(
                supervisor=term, cursor=CursorAdvance(BINDING, scope, 1, 2),
                pending=PendingUpdate(1), budget=BudgetRelease(grant.attempt_id, 1))))
            pending = (await status(kit, scope)).pending
            assert pending is not None and (pending.handled_flush_generation,
                                             pending.flush_generation) == (1, 2)
            with pytest.raises(InvalidInputError, match="claimed_flush_generation"):
                await b.handle_flush(scope, 2, 3, supervisor=term)
            new = await supersede(b, term)
            with pytest.raises(SupervisorTermError):
                await b.handle_flush(scope, 2, 2, supervisor=term)
            assert (await status(kit, scope)).pending == pending
            assert await b.handle_flush(scope, 2, 2, supervisor=new)
            after = await status(kit, scope)
            assert after.pending is None and after.cursor == 2
            assert await b.flush(scope) == "idle"
            assert await b.handle_flush(scope, 2, 2)  # nothing left: True, no change
        self._srun(topic_backend_factory, topic_embedding_model, body)
