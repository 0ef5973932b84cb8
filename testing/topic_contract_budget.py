"""Topic contract group: the durable allowance (Topic Memory RFC, "Cumulative work and
evidence ceilings", "Retry and observability"; TOPIC-MEMORY.md, "The Worker's
transactions"). The publication guards are :mod:`.topic_contract_guards`.

At most 3 attempts, 512 reserved requests and 64,000,000 reserved tokens per (Scope,
binding, source_after); each attempt and reservation committed on its own; nothing
refunded; terminal frontiers refuse before anything is written; a newer attempt takes
publication authority from an older one. Every test reads the state through the port
only (``processing_status``).
"""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.core import canonical
from powercontext.core.errors import (
    InvalidInputError,
    RevisionConflictError,
    TopicProcessingError,
)
from powercontext.core.models import SourceRef
from powercontext.core.topic.models import PublicationGuards
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
from powercontext.testing.base import run
from powercontext.testing.topic_base import TopicContractBase, TopicKit

__all__ = ["ProcessingContractBase", "TopicBudgetContract"]

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


class ProcessingContractBase(TopicContractBase):
    """What the allowance and guard groups share: a kit over a backend with the
    processing substrate (skipped, naming what is missing, without it)."""

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


class TopicBudgetContract(ProcessingContractBase):
    """The durable allowance."""

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
