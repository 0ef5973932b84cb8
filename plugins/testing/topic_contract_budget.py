"""Topic contract group: the durable allowance and the publication guards (Topic Memory
RFC, "Cumulative work and evidence ceilings", "Storage, Head, and atomic activation",
"Pending dirty set"; TOPIC-MEMORY.md, "The Worker's transactions").

At most 3 attempts, 512 reserved requests and 64,000,000 reserved tokens per (Scope,
binding, source_after); each attempt and reservation committed on its own; nothing
refunded; terminal frontiers refuse before anything is written; a newer attempt takes
publication authority from an older one. A guarded publication CASes and advances the
Cursor, updates (or deletes) Pending and deletes the budget row, all with its Topics
or not at all. Every test reads the state through the port only
(``processing_status``); the fault test needs the kit's ``FaultInjection`` hook with
``guard_fault_points()``, the concurrency test ``topic_backend_reopen``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from powercontext.core import canonical
from powercontext.core.errors import (
    InvalidInputError,
    RevisionConflictError,
    TopicProcessingError,
)
from powercontext.core.models import SourceRef
from powercontext.core.topic.models import PublicationGuards, TopicPublication
from powercontext.core.topic.processing import (
    ATTEMPT_LIMIT,
    BINDING,
    CODE_ATTEMPT_LIMIT,
    CODE_BUDGET_EXCEEDED,
    CODE_COMPLEXITY,
    REQUEST_LIMIT,
    TOKEN_LIMIT,
    AttemptGrant,
    BudgetRelease,
    CursorAdvance,
    PendingUpdate,
    ScopeStatus,
)
from powercontext.plugins.testing.base import run
from powercontext.plugins.testing.contract_faults import FaultInjection
from powercontext.plugins.testing.topic_base import TopicContractBase, TopicKit

__all__ = ["TopicBudgetContract"]

QUERIES = ("kiwi", "mango", "plum")
SCOPE = "project:budget"


async def status(kit: TopicKit, scope: str = SCOPE) -> ScopeStatus:
    (found,) = await kit.backend.processing_status(scope)  # type: ignore[attr-defined]
    return found  # type: ignore[no-any-return]


async def scoped(kit: TopicKit, *names: str, scope: str = SCOPE) -> tuple[int, ...]:
    """Journal the Sources ``names`` in ``scope`` (each also usable as evidence)."""
    sources = [canonical.make_source(n, "user_note", f"evidence {n}") for n in names]
    positions = await kit.backend.put_scoped_sources(scope, sources)  # type: ignore[attr-defined]
    for s in sources:
        kit.sources[s.source_id] = SourceRef(s.source_id, s.content_hash)
    return tuple(positions)


def guards(grant: AttemptGrant, through: int, claimed: int | None = None,
           pending: bool = True) -> PublicationGuards:
    """The guards of the Window ``grant.source_after + 1 .. through``."""
    return PublicationGuards(
        cursor=CursorAdvance(BINDING, grant.scope_id, grant.source_after, through),
        pending=PendingUpdate(claimed) if pending else None,
        budget=BudgetRelease(grant.attempt_id, grant.source_after))


async def refused(code: str, call: Any, *, terminal: bool) -> TopicProcessingError:
    try:
        await call
    except TopicProcessingError as exc:
        assert exc.code == code, (exc.code, code)
        assert exc.terminal is terminal, exc
        return exc
    raise AssertionError(f"expected TopicProcessingError {code}")


class TopicBudgetContract(TopicContractBase):
    """The durable allowance and the publication guards."""

    @staticmethod
    def _substrate(backend: Any) -> None:
        for name in ("put_scoped_sources", "processing_status", "flush", "begin_attempt"):
            if not callable(getattr(backend, name, None)):
                pytest.skip(f"{type(backend).__name__} has no {name}() (processing substrate)")

    def _run(self, factory: Any, model: Any, body: Any, shape: str = "fts") -> None:
        async def go() -> None:
            async with self._kit(factory, shape, model) as kit:  # type: ignore[arg-type]
                self._substrate(kit.backend)
                await body(kit)
        run(go())

    # ------------------------------------------------------------------ attempts

    def test_three_attempts_are_admitted_and_the_fourth_is_a_stored_terminal_frontier(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            await scoped(kit, "a1")
            grants = [await kit.backend.begin_attempt(SCOPE, 0)
                      for _ in range(ATTEMPT_LIMIT)]
            assert [g.attempt_count for g in grants] == [1, 2, 3]
            assert len({g.attempt_id for g in grants}) == 3
            assert all((g.scope_id, g.binding_name, g.source_after) == (SCOPE, BINDING, 0)
                       for g in grants)
            row = (await status(kit)).budget
            assert row is not None and row.attempt_id == grants[-1].attempt_id
            assert row.attempt_count == 3 and row.failure_code is None
            await refused(CODE_ATTEMPT_LIMIT, kit.backend.begin_attempt(SCOPE, 0),
                          terminal=True)
            stored = (await status(kit)).budget
            assert stored is not None and stored.failure_code == CODE_ATTEMPT_LIMIT
            assert stored.attempt_count == 3 and stored.terminal
            # the frontier stays: a fifth attempt writes nothing, the holder spends nothing
            await refused(CODE_ATTEMPT_LIMIT, kit.backend.begin_attempt(SCOPE, 0),
                          terminal=True)
            await refused(CODE_ATTEMPT_LIMIT, kit.backend.reserve(grants[-1], 1, 1, through=1),
                          terminal=True)
            assert (await status(kit)).budget == stored
            assert await kit.backend.flush(SCOPE) == "accepted"  # a terminal frontier too

        self._run(topic_backend_factory, topic_embedding_model, body)

    def test_a_terminal_frontier_refuses_before_anything_is_written(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            await scoped(kit, "c1")
            grant = await kit.backend.begin_attempt(SCOPE, 0)
            await kit.backend.reserve(grant, 1, 100, through=1)
            await kit.backend.record_failure(grant, CODE_COMPLEXITY)
            before = await status(kit)
            assert before.budget is not None and before.budget.terminal
            assert before.budget.failure_code == CODE_COMPLEXITY
            await refused(CODE_COMPLEXITY, kit.backend.begin_attempt(SCOPE, 0), terminal=True)
            await refused(CODE_COMPLEXITY, kit.backend.reserve(grant, 1, 1, through=1),
                          terminal=True)
            await kit.backend.record_failure(grant, "provider_error")  # terminal: kept
            assert await status(kit) == before
            # another Scope goes on
            await scoped(kit, "c2", scope="project:other")
            other = await kit.backend.begin_attempt("project:other", 0)
            assert other.attempt_count == 1

        self._run(topic_backend_factory, topic_embedding_model, body)

    def test_reservations_add_up_across_attempts_and_are_never_refunded(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            await scoped(kit, "r1", "r2", "r3")
            g1 = await kit.backend.begin_attempt(SCOPE, 0)
            await kit.backend.reserve(g1, 2, 250_000, through=2)
            await kit.backend.reserve(g1, 1, 125_000, through=1)
            row = (await status(kit)).budget
            assert row is not None
            assert (row.reserved_requests, row.reserved_tokens, row.furthest_through) == (
                3, 375_000, 2)
            await kit.backend.record_failure(g1, "provider_error")  # the attempt failed
            after_failure = (await status(kit)).budget
            assert after_failure is not None and after_failure.failure_code == "provider_error"
            assert not after_failure.terminal
            assert after_failure.reserved_requests == 3
            g2 = await kit.backend.begin_attempt(SCOPE, 0)
            assert g2.attempt_count == 2
            row = (await status(kit)).budget
            assert row is not None and (row.reserved_requests, row.reserved_tokens) == (
                3, 375_000)
            await kit.backend.reserve(g2, 1, 10, through=3)
            row = (await status(kit)).budget
            assert row is not None
            assert (row.reserved_requests, row.reserved_tokens, row.furthest_through) == (
                4, 375_010, 3)
            assert row.attempt_id == g2.attempt_id

        self._run(topic_backend_factory, topic_embedding_model, body)

    def test_the_request_ceiling_is_terminal_and_the_refused_reservation_adds_nothing(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            await scoped(kit, "q1")
            grant = await kit.backend.begin_attempt(SCOPE, 0)
            await kit.backend.reserve(grant, REQUEST_LIMIT - 1, 0, through=1)
            await kit.backend.reserve(grant, 1, 0, through=1)  # the 512th: still admitted
            await refused(CODE_BUDGET_EXCEEDED, kit.backend.reserve(grant, 1, 0, through=1),
                          terminal=True)  # the 513th
            row = (await status(kit)).budget
            assert row is not None and row.reserved_requests == REQUEST_LIMIT
            assert row.failure_code == CODE_BUDGET_EXCEEDED and row.terminal
            await refused(CODE_BUDGET_EXCEEDED, kit.backend.begin_attempt(SCOPE, 0),
                          terminal=True)
            assert (await status(kit)).budget == row

        self._run(topic_backend_factory, topic_embedding_model, body)

    def test_the_token_ceiling_is_terminal_and_one_oversized_reservation_adds_nothing(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            await scoped(kit, "t1")
            await scoped(kit, "t2", scope="project:one-shot")
            grant = await kit.backend.begin_attempt(SCOPE, 0)
            await kit.backend.reserve(grant, 1, TOKEN_LIMIT, through=1)
            await refused(CODE_BUDGET_EXCEEDED, kit.backend.reserve(grant, 0, 1, through=1),
                          terminal=True)  # the 64,000,001st token
            row = (await status(kit)).budget
            assert row is not None and (row.reserved_requests, row.reserved_tokens) == (
                1, TOKEN_LIMIT)
            one = await kit.backend.begin_attempt("project:one-shot", 0)
            await refused(CODE_BUDGET_EXCEEDED,
                          kit.backend.reserve(one, REQUEST_LIMIT + 1, 0, through=1),
                          terminal=True)
            row = (await status(kit, "project:one-shot")).budget
            assert row is not None and (row.reserved_requests, row.reserved_tokens) == (0, 0)
            assert row.failure_code == CODE_BUDGET_EXCEEDED

        self._run(topic_backend_factory, topic_embedding_model, body)

    def test_a_newer_attempt_takes_publication_authority_from_an_older_one(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            await scoped(kit, "n1")
            old = await kit.backend.begin_attempt(SCOPE, 0)
            await kit.backend.reserve(old, 1, 100, through=1)
            new = await kit.backend.begin_attempt(SCOPE, 0)
            before = await status(kit)
            await refused("attempt_superseded", kit.backend.reserve(old, 1, 100, through=1),
                          terminal=False)
            await kit.backend.record_failure(old, "provider_error")  # not the holder: nothing
            assert await status(kit) == before
            w = await kit.write(SCOPE, "Kiwi", "kiwi", "Kiwi detail.", sources=("n1",))
            seen = await kit.observe([SCOPE], QUERIES)
            with pytest.raises(RevisionConflictError, match="attempt superseded"):
                await kit.publish(w, guards=guards(old, 1))
            assert await kit.observe([SCOPE], QUERIES) == seen
            assert await status(kit) == before
            (rev,) = await kit.publish(w, guards=guards(new, 1))
            assert rev.ref == w.ref
            after = await status(kit)
            assert after.cursor == 1 and after.budget is None

        self._run(topic_backend_factory, topic_embedding_model, body)

    def test_begin_attempt_refuses_a_cursor_that_moved(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            await scoped(kit, "m1", "m2")
            grant = await kit.backend.begin_attempt(SCOPE, 0)
            await kit.publish(guards=guards(grant, 1))  # a NOOP Window: no write
            await refused("cursor_conflict", kit.backend.begin_attempt(SCOPE, 0),
                          terminal=False)
            await refused("cursor_conflict", kit.backend.begin_attempt(SCOPE, 2),
                          terminal=False)
            assert (await status(kit)).budget is None  # nothing written for either key
            assert (await kit.backend.begin_attempt(SCOPE, 1)).attempt_count == 1

        self._run(topic_backend_factory, topic_embedding_model, body)

    def test_bad_allowance_input_is_refused_naming_the_field(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            await scoped(kit, "b1")
            grant = await kit.backend.begin_attempt(SCOPE, 0)
            before = await status(kit)
            for code in ("", "Provider_error", "provider-error", "x" * 65, "code1", None):
                with pytest.raises(InvalidInputError, match="code"):
                    await kit.backend.record_failure(grant, code)  # type: ignore[arg-type]
            for args, field in (((-1, 0), "requests"), ((0, -1), "tokens"),
                                ((True, 0), "requests"), ((1, 1.5), "tokens")):
                with pytest.raises(InvalidInputError, match=field):
                    await kit.backend.reserve(grant, *args, through=1)
            with pytest.raises(InvalidInputError, match="through"):
                await kit.backend.reserve(grant, 1, 1, through=0)
            with pytest.raises(InvalidInputError, match="grant"):
                await kit.backend.reserve(object(), 1, 1, through=1)  # type: ignore[arg-type]
            for scope, after in (("", 0), ("a\nb", 0), (SCOPE, -1), (SCOPE, True)):
                with pytest.raises(InvalidInputError):
                    await kit.backend.begin_attempt(scope, after)
            assert await status(kit) == before

        self._run(topic_backend_factory, topic_embedding_model, body)

    # ------------------------------------------------------------------ guards

    def test_a_guarded_publication_advances_the_cursor_settles_pending_and_deletes_the_row(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            await scoped(kit, "p1", "p2", "p3")
            assert await kit.backend.flush(SCOPE) == "accepted"
            start = await status(kit)
            assert start.pending is not None and start.pending.source_through == 3
            assert start.pending.flush_generation == 1
            claimed = start.pending.flush_generation
            # Window 1..1 of a wave whose target is 3: Pending stays, handled unchanged
            g1 = await kit.backend.begin_attempt(SCOPE, 0)
            await kit.backend.reserve(g1, 1, 1_000, through=1)
            w = await kit.write(SCOPE, "Kiwi", "kiwi", "Kiwi detail.", sources=("p1",))
            (rev,) = await kit.publish(w, guards=guards(g1, 1))
            s1 = await status(kit)
            assert s1.cursor == 1 and s1.budget is None
            assert s1.pending == start.pending
            assert (await kit.backend.heads(SCOPE)) == (rev.ref,)
            # a flush during the wave: the wave's claimed generation no longer settles it
            assert await kit.backend.flush(SCOPE) == "accepted"
            g2 = await kit.backend.begin_attempt(SCOPE, 1)
            upd = await kit.write(SCOPE, "Kiwi", "kiwi", "Kiwi detail, more.", base=rev.ref,
                                  sources=("p1", "p2", "p3"))
            await kit.publish(upd, guards=guards(g2, 3, claimed))
            s2 = await status(kit)
            assert s2.cursor == 3 and s2.budget is None
            assert s2.pending is not None
            assert (s2.pending.handled_flush_generation, s2.pending.flush_generation) == (1, 2)
            # the successor wave covers nothing new but claims generation 2: deleted
            await scoped(kit, "p4")
            g3 = await kit.backend.begin_attempt(SCOPE, 3)
            assert await kit.publish(guards=guards(g3, 4, 2)) == ()  # zero writes
            s3 = await status(kit)
            assert s3.cursor == 4 and s3.pending is None and s3.budget is None
            assert await kit.backend.flush(SCOPE) == "idle"

        self._run(topic_backend_factory, topic_embedding_model, body, shape)

    def test_pending_stays_while_the_cursor_is_behind_and_without_a_pending_update(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            await scoped(kit, "k1", "k2")
            raised = (await status(kit)).pending
            assert raised is not None and raised.flush_generation == 0
            g1 = await kit.backend.begin_attempt(SCOPE, 0)
            await kit.publish(guards=guards(g1, 1, None))  # behind source_through 2
            assert (await status(kit)).pending == raised
            g2 = await kit.backend.begin_attempt(SCOPE, 1)
            await kit.publish(guards=guards(g2, 2, pending=False))  # an automatic wave's
            assert (await status(kit)).pending == raised
            assert (await status(kit)).cursor == 2

        self._run(topic_backend_factory, topic_embedding_model, body)

    def test_zero_writes_without_guards_stay_refused(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            with pytest.raises(InvalidInputError, match="writes"):
                await kit.backend.publish(TopicPublication(()))
            await scoped(kit, "z1")
            grant = await kit.backend.begin_attempt(SCOPE, 0)
            bad = PublicationGuards(cursor=CursorAdvance(BINDING, SCOPE, 0, 1),
                                    budget=BudgetRelease(grant.attempt_id, 1))
            with pytest.raises(InvalidInputError, match="source_after"):
                await kit.publish(guards=bad)
            with pytest.raises(InvalidInputError, match="through"):
                await kit.publish(guards=PublicationGuards(
                    cursor=CursorAdvance(BINDING, SCOPE, 0, 0)))
            with pytest.raises(InvalidInputError, match="cursor"):
                await kit.publish(guards=PublicationGuards(pending=PendingUpdate(None)))
            w = await kit.write("project:elsewhere", "Kiwi", "kiwi", "Kiwi.", sources=("z1",))
            with pytest.raises(InvalidInputError, match="scope_id"):
                await kit.publish(w, guards=guards(grant, 1))
            assert (await status(kit)).cursor == 0

        self._run(topic_backend_factory, topic_embedding_model, body)

    def test_a_cursor_conflict_or_a_lost_budget_row_rolls_everything_back(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            await scoped(kit, "x1", "x2")
            await kit.backend.flush(SCOPE)
            existing = await kit.create(SCOPE, "Plum", "plum", "Plum detail.", sources=("x1",))
            grant = await kit.backend.begin_attempt(SCOPE, 0)
            await kit.backend.reserve(grant, 1, 500, through=2)
            batch = (await kit.write(SCOPE, "Mango", "mango", "Mango detail.",
                                     sources=("x2",)),
                     await kit.write(SCOPE, "Plum", "plum", "Plum, kiwi.", base=existing.ref,
                                     sources=("x1", "x2")))
            seen = await kit.observe([SCOPE], QUERIES)
            before = await status(kit)
            wrong_cursor = PublicationGuards(
                cursor=CursorAdvance(BINDING, SCOPE, 1, 2), pending=PendingUpdate(1),
                budget=BudgetRelease(grant.attempt_id, 1))
            with pytest.raises(RevisionConflictError, match="cursor moved"):
                await kit.publish(*batch, guards=wrong_cursor)
            lost = PublicationGuards(
                cursor=CursorAdvance(BINDING, SCOPE, 0, 2), pending=PendingUpdate(1),
                budget=BudgetRelease("00000000-0000-4000-8000-000000000000", 0))
            with pytest.raises(RevisionConflictError, match="attempt superseded"):
                await kit.publish(*batch, guards=lost)
            assert await kit.observe([SCOPE], QUERIES) == seen
            assert await status(kit) == before
            revs = await kit.publish(*batch, guards=guards(grant, 2, 1))
            assert [r.ref for r in revs] == [w.ref for w in batch]
            done = await status(kit)
            assert (done.cursor, done.pending, done.budget) == (2, None, None)

        self._run(topic_backend_factory, topic_embedding_model, body, shape)

    def test_a_guarded_publication_failing_at_any_step_leaves_everything_as_before(
            self, topic_backend_factory, topic_embedding_model):
        """Every fault point and guard fault point, for a CREATE + UPDATE batch with every
        guard over an existing Topic and for a deployment's first (guarded) publication:
        Topics, projections, Cursor, Pending and the budget row all as before; the same
        batch then publishes."""

        async def attempt(kit: TopicKit, point: str, batch: tuple[Any, ...],
                          g: PublicationGuards) -> bool:
            seen = (await kit.observe([SCOPE], QUERIES), await status(kit))
            kit.backend.inject_fault(point)  # type: ignore[attr-defined]
            try:
                await kit.publish(*batch, guards=g)
            except Exception:
                pass
            else:
                return False
            finally:
                kit.backend.inject_fault(None)  # type: ignore[attr-defined]
            assert (await kit.observe([SCOPE], QUERIES), await status(kit)) == seen, point
            integrity = getattr(kit.backend, "topic_integrity", None)
            if integrity is not None:
                assert await integrity() == [], point
            return True

        async def window(kit: TopicKit, n: int, first: bool) -> tuple[Any, PublicationGuards]:
            """Two new Sources and a flush; the Window ends at the second (Pending
            deleted) on even rounds, at the first (Pending kept, its handled generation
            raised) on odd ones."""
            cursor = (await status(kit)).cursor
            positions = await scoped(kit, f"f{n}a", f"f{n}b")
            await kit.backend.flush(SCOPE)
            pending = (await status(kit)).pending
            assert pending is not None
            through = positions[-1] if n % 2 == 0 else positions[0]
            grant = await kit.backend.begin_attempt(SCOPE, cursor)
            await kit.backend.reserve(grant, 1, 1_000, through=through)
            if first:
                batch: tuple[Any, ...] = (await kit.write(
                    SCOPE, "Papaya", "papaya", "Papaya.", sources=(f"f{n}a",)),)
            else:
                head = (await kit.backend.heads(SCOPE))[0]
                batch = (await kit.write(SCOPE, "Mango", "mango", "Mango.\n\n- a",
                                         sources=(f"f{n}a",)),
                         await kit.write(SCOPE, "Plum", "plum", f"Plum {n}.", base=head,
                                         sources=(f"f{n}a",)))
            return batch, guards(grant, through, pending.flush_generation)

        async def body() -> None:
            reached: set[str] = set()
            async with self._kit(topic_backend_factory, "fts", topic_embedding_model) as kit:
                self._substrate(kit.backend)
                backend = self._require(kit.backend, FaultInjection)
                extra = getattr(backend, "guard_fault_points", None)
                if extra is None:
                    pytest.skip(f"{type(backend).__name__} has no guard_fault_points()")
                points = (*backend.fault_points(), *extra())
                await kit.create(SCOPE, "Kiwi", "kiwi", "Kiwi detail.")
                for n, point in enumerate(points):
                    batch, g = await window(kit, n, False)
                    if await attempt(kit, point, batch, g):
                        reached.add(point)
                        await kit.publish(*batch, guards=g)
                    s = await status(kit)
                    assert s.budget is None and s.cursor == g.cursor.through, point
                    assert (s.pending is None) == (n % 2 == 0), point
            pending = [p for p in points if p not in reached]
            while pending:  # the points only a first publication reaches
                async with self._kit(topic_backend_factory, "fts",
                                     topic_embedding_model) as fresh:
                    while pending:
                        point = pending.pop(0)
                        batch, g = await window(fresh, 100 + len(pending), True)
                        if not await attempt(fresh, point, batch, g):
                            break
                        reached.add(point)
                        assert (await fresh.backend.topic_capabilities()).shape is None
            missing = [p for p in points if p not in reached]
            assert not missing, f"no guarded publication reaches the fault points {missing}"

        run(body())

    def test_two_concurrent_attempts_on_one_key_publish_once_and_both_spend(
            self, topic_backend_factory, topic_backend_reopen, topic_embedding_model):
        """Two workers (two backends on one database) on one Window: attempts begun at
        once both count; when the second begins while the first's provider call runs,
        both reservations stay consumed, and of their two concurrent publications
        exactly one (the newer attempt's) commits, the other rolls back whole."""
        reopen = self._reopen(topic_backend_reopen)

        async def body(kit: TopicKit) -> None:
            await scoped(kit, "w1")
            await scoped(kit, "w2", scope="project:race")
            other = reopen(kit.backend, None)
            try:
                both = await asyncio.gather(kit.backend.begin_attempt("project:race", 0),
                                            other.begin_attempt("project:race", 0))
                assert sorted(g.attempt_count for g in both) == [1, 2]
                raced = (await status(kit, "project:race")).budget
                assert raced is not None and raced.attempt_count == 2
                assert raced.attempt_id in {g.attempt_id for g in both}

                ga = await kit.backend.begin_attempt(SCOPE, 0)
                await kit.backend.reserve(ga, 1, 1_000, through=1)  # a's call in flight
                gb = await other.begin_attempt(SCOPE, 0)
                await other.reserve(gb, 1, 2_000, through=1)
                row = (await status(kit)).budget
                assert row is not None and row.attempt_id == gb.attempt_id
                assert (row.attempt_count, row.reserved_requests, row.reserved_tokens) == (
                    2, 2, 3_000)
                wa = await kit.write(SCOPE, "Kiwi", "kiwi", "Kiwi from a.", sources=("w1",))
                ob = TopicKit(other, kit.model, dict(kit.sources))
                wb = await ob.write(SCOPE, "Mango", "mango", "Mango from b.", sources=("w1",))
                outcomes = await asyncio.gather(
                    kit.publish(wa, guards=guards(ga, 1)), ob.publish(wb, guards=guards(gb, 1)),
                    return_exceptions=True)
                assert isinstance(outcomes[0], RevisionConflictError), outcomes
                assert not isinstance(outcomes[1], BaseException), outcomes
                assert [r.ref for r in outcomes[1]] == [wb.ref]
                assert await kit.backend.heads(SCOPE) == (wb.ref,)
                done = await status(kit)
                assert done.cursor == 1 and done.budget is None
                # the loser's retry from the same Cursor is refused: the Cursor moved
                await refused("cursor_conflict", kit.backend.begin_attempt(SCOPE, 0),
                              terminal=False)
            finally:
                await other.close()

        self._run(topic_backend_factory, topic_embedding_model, body)
