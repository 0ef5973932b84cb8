"""The Supervisor-substrate state machine (testing/topic_supervision_machine.py)
on the in-memory Topic backend and on SQLite (a new database file per run): leases,
flushes, Source writes, freezes, fenced Windows and wave completions interleaved, with
the invariants of Topic Memory RFC, "Leader, term, and fencing" and "Automatic
scheduling" (generations never decrease, at most one valid term, no stale-term write
lands, Pending deleted only under the spec's condition)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.testing import InMemoryTopicBackend
from powercontext.testing.topic_supervision_machine import (
    topic_supervision_state_machine_test,
)


def _sqlite() -> SQLiteTopicBackend:
    return SQLiteTopicBackend(str(Path(tempfile.mkdtemp(prefix="pc-sup-sm-")) / "topic.db"))


TestInMemorySupervisionStateMachine = topic_supervision_state_machine_test(
    lambda: InMemoryTopicBackend())
TestSQLiteSupervisionStateMachine = topic_supervision_state_machine_test(
    _sqlite, max_examples=10)
