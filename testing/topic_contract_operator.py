"""Topic contract group: operator decisions at a terminal frontier (Topic Memory RFC,
"Retry and observability": deliberate operator remediation, no automatic reset;
:mod:`powercontext.core.topic.operator`).

A skip passes the Cursor over the Source the frontier stops at (lineage-only rows
before it too), a grant gives the frontier one fresh allowance; either deletes the
frontier's budget row, flushes the Scope when Sources remain and stores the audit row
(who, why, when, the allowance spent) in the same transaction. Refused with nothing
written: a Scope that is not stopped, a stale frontier, a skip of another Source, a
grant at a complexity frontier, an empty who or why. A flush never changes a terminal
frontier.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from powercontext.core.errors import InvalidInputError, RevisionConflictError
from powercontext.core.topic.processing import (
    ATTEMPT_LIMIT,
    BINDING,
    CODE_ATTEMPT_LIMIT,
    CODE_COMPLEXITY,
)
from powercontext.testing.topic_base import TopicKit
from powercontext.testing.topic_contract_budget import (
    ProcessingContractBase,
    refused,
    scoped,
    status,
)

__all__ = ["TopicOperatorContract"]

_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


async def _complexity_frontier(kit: TopicKit, scope: str) -> Any:
    """Sources 1..3 journaled; an attempt after Cursor 0 rejected Source 1 (recorded
    as ``source_complexity_limit`` through 1, as the Worker does)."""
    await scoped(kit, "o1", "o2", "o3", scope=scope)
    grant = await kit.backend.begin_attempt(scope, 0)  # type: ignore[attr-defined]
    await kit.backend.record_failure(grant, CODE_COMPLEXITY, through=1)  # type: ignore[attr-defined]
    return grant


class TopicOperatorContract(ProcessingContractBase):
    """``unblock``, ``operator_decisions`` and ``blocked_frontiers``."""

    def _orun(self, factory: Any, model: Any, body: Any) -> None:
        async def go(kit: TopicKit) -> None:
            if not callable(getattr(kit.backend, "unblock", None)):
                pytest.skip(f"{type(kit.backend).__name__} has no unblock()")
            await body(kit)
        self._run(factory, model, go)

    def test_a_skip_passes_the_rejected_source_and_is_recorded(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            b: Any = kit.backend
            scope = "project:skip"
            await _complexity_frontier(kit, scope)
            assert await b.flush(scope) == "accepted"
            stuck = await status(kit, scope)
            assert stuck.cursor == 0 and stuck.budget is not None and stuck.budget.terminal
            (view,) = await b.blocked_frontiers(scope)
            assert (view.position, view.source_id, view.failure_code) == (1, "o1",
                                                                         CODE_COMPLEXITY)
            assert any("--skip 1" in c for c in view.commands)
            assert not any("--grant" in c for c in view.commands)
            assert await b.flush(scope) == "accepted"  # flushes change nothing
            assert (await status(kit, scope)).budget == stuck.budget
            decision = await b.unblock(scope, "skip", frontier=0, position=1,
                                       decided_by=" alice ", reason="a pasted log file")
            assert (decision.action, decision.position, decision.source_id) == ("skip", 1, "o1")
            assert (decision.decided_by, decision.reason) == ("alice", "a pasted log file")
            assert decision.failure_code == CODE_COMPLEXITY and decision.source_after == 0
            assert decision.attempt_count == 1 and _UTC.fullmatch(decision.decided_at or "")
            after = await status(kit, scope)
            assert after.cursor == 1 and after.budget is None
            assert after.pending is not None and after.pending.source_through == 3
            assert after.pending.flush_generation > stuck.pending.flush_generation  # type: ignore[union-attr]
            assert await b.blocked_frontiers(scope) == ()
            assert await b.operator_decisions(scope) == (decision,)
            assert await b.heads(scope) == ()  # no Topic for the skipped Source
        self._orun(topic_backend_factory, topic_embedding_model, body)

    def test_a_grant_gives_the_frontier_one_fresh_allowance(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            b: Any = kit.backend
            scope = "project:grant"
            await scoped(kit, "g1", "g2", scope=scope)
            grants = [await b.begin_attempt(scope, 0) for _ in range(ATTEMPT_LIMIT)]
            await b.reserve(grants[-1], 2, 500, through=2)
            await refused(CODE_ATTEMPT_LIMIT, b.begin_attempt(scope, 0), terminal=True)
            with pytest.raises(InvalidInputError, match="skip"):  # not the stopping Source
                await b.unblock(scope, "skip", frontier=0, position=2, decided_by="bob",
                                reason="no")
            with pytest.raises(RevisionConflictError):  # a stale frontier
                await b.unblock(scope, "grant", frontier=1, decided_by="bob", reason="no")
            for who, why in (("", "x"), ("bob", "  "), ("a\nb", "x")):
                with pytest.raises(InvalidInputError, match=r"decided_by|reason"):
                    await b.unblock(scope, "grant", frontier=0, decided_by=who, reason=why)
            assert (await status(kit, scope)).budget.terminal  # type: ignore[union-attr]
            assert await b.operator_decisions(scope) == ()
            decision = await b.unblock(scope, "grant", frontier=0, decided_by="bob",
                                       reason="the provider was down")
            assert (decision.action, decision.position, decision.source_id) == ("grant", None,
                                                                                None)
            assert (decision.attempt_count, decision.reserved_requests,
                    decision.reserved_tokens) == (3, 2, 500)
            assert (await status(kit, scope)).budget is None
            again = await b.begin_attempt(scope, 0)  # a fresh allowance
            assert again.attempt_count == 1
            with pytest.raises(InvalidInputError, match="scope_id"):  # not stopped now
                await b.unblock(scope, "grant", frontier=0, decided_by="bob", reason="x")
        self._orun(topic_backend_factory, topic_embedding_model, body)

    def test_a_grant_at_a_complexity_frontier_and_an_unblocked_scope_are_refused(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            b: Any = kit.backend
            scope = "project:refuse"
            with pytest.raises(InvalidInputError, match="scope_id"):
                await b.unblock(scope, "grant", frontier=0, decided_by="c", reason="x")
            await _complexity_frontier(kit, scope)
            before = await status(kit, scope)
            with pytest.raises(InvalidInputError, match="grant"):
                await b.unblock(scope, "grant", frontier=0, decided_by="c", reason="x")
            with pytest.raises(InvalidInputError, match="action"):
                await b.unblock(scope, "reset", frontier=0, decided_by="c", reason="x")
            assert await status(kit, scope) == before
            assert await b.operator_decisions(scope) == ()
            with pytest.raises(InvalidInputError, match="limit"):
                await b.operator_decisions(scope, 0)
        self._orun(topic_backend_factory, topic_embedding_model, body)

    def test_skipping_the_last_source_settles_pending(
            self, topic_backend_factory, topic_embedding_model):
        async def body(kit: TopicKit) -> None:
            b: Any = kit.backend
            scope = "project:last"
            await scoped(kit, "l1", scope=scope)
            grant = await b.begin_attempt(scope, 0)
            await b.record_failure(grant, CODE_COMPLEXITY, through=1)
            await b.unblock(scope, "skip", frontier=0, position=1, decided_by="d",
                            reason="nothing else to do")
            st = await status(kit, scope)
            assert st.cursor == 1 and st.pending is None and st.budget is None
            assert st.binding_name == BINDING
        self._orun(topic_backend_factory, topic_embedding_model, body)
