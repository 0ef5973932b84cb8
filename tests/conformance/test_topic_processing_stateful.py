"""The processing-substrate state machine (testing/topic_processing_machine.py)
on the shipped in-memory Topic backend and on SQLite (a new database file per run):
Scope journal, Pending, Cursors, flush and the durable allowance against a trusted
model, with the invariants of Topic Memory RFC, "Pending dirty set" and "Cumulative
work and evidence ceilings"."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest

from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.core.canonical import make_source
from powercontext.core.errors import InvalidInputError, RevisionConflictError
from powercontext.core.topic.models import PublicationGuards, TopicPublication
from powercontext.core.topic.processing import (
    BINDING,
    BudgetRelease,
    CursorAdvance,
    PendingUpdate,
)
from powercontext.testing import (
    InMemoryTopicBackend,
    topic_processing_state_machine_test,
)


def _sqlite() -> SQLiteTopicBackend:
    return SQLiteTopicBackend(str(Path(tempfile.mkdtemp(prefix="pc-proc-sm-")) / "topic.db"))


TestInMemoryProcessingStateMachine = topic_processing_state_machine_test(
    lambda: InMemoryTopicBackend())
TestSQLiteProcessingStateMachine = topic_processing_state_machine_test(
    _sqlite, max_examples=10)


@pytest.mark.parametrize("factory", [InMemoryTopicBackend, _sqlite], ids=["memory", "sqlite"])
def test_a_cursor_advance_past_the_source_head_is_refused(factory):
    async def body() -> None:
        b = factory()
        try:
            await b.put_scoped_sources("project:a", [make_source("s1", "user_note", "x")])
            grant = await b.begin_attempt("project:a", 0)
            guards = PublicationGuards(cursor=CursorAdvance(BINDING, "project:a", 0, 2),
                                       pending=PendingUpdate(None),
                                       budget=BudgetRelease(grant.attempt_id, 0))
            with pytest.raises((InvalidInputError, RevisionConflictError)):
                await b.publish(TopicPublication((), guards))
            (status,) = await b.processing_status("project:a")
            assert status.cursor == 0
        finally:
            await b.close()

    asyncio.run(body())
