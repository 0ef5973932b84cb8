"""Topic contract group: the publication guards (Topic Memory RFC, "Storage, Head, and
atomic activation", "Pending dirty set", "Cumulative work and evidence ceilings").

A guarded publication CASes and advances the Cursor, updates (or deletes) Pending under
the spec's condition and deletes the budget row, all with its Topics or not at all; a
guarded publication may have no write (a NOOP Window); a Cursor that moved or a budget
row held by another attempt rolls the whole publication back; of two workers on one
Window exactly one publishes. State is read through the port (``processing_status``);
the fault test needs the kit's ``FaultInjection`` hook with ``guard_fault_points()``,
the concurrency test ``topic_backend_reopen``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from powercontext.core.errors import InvalidInputError, RevisionConflictError
from powercontext.core.topic.models import PublicationGuards, TopicPublication
from powercontext.core.topic.processing import (
    BINDING,
    BudgetRelease,
    CursorAdvance,
    PendingUpdate,
)
from powercontext.testing.base import run
from powercontext.testing.contract_faults import FaultInjection
from powercontext.testing.topic_base import TopicKit
from powercontext.testing.topic_contract_budget import (
    QUERIES,
    SCOPE,
    ProcessingContractBase,
    guards,
    refused,
    scoped,
    status,
)

__all__ = ["TopicGuardsContract"]


class TopicGuardsContract(ProcessingContractBase):
    """The publication guards."""

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
            with pytest.raises(InvalidInputError, match="Source head"):  # head is 1
                await kit.publish(guards=guards(grant, 2))
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
                    assert isinstance(g.cursor, CursorAdvance)
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
