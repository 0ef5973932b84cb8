"""The processing-substrate state machine (plugins/testing/topic_processing_machine.py)
on the shipped in-memory Topic backend and on SQLite (a new database file per run):
Scope journal, Pending, Cursors, flush and the durable allowance against a trusted
model, with the invariants of Topic Memory RFC, "Pending dirty set" and "Cumulative
work and evidence ceilings"."""

from __future__ import annotations

import tempfile
from pathlib import Path

from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.plugins.testing import (
    InMemoryTopicBackend,
    topic_processing_state_machine_test,
)


def _sqlite() -> SQLiteTopicBackend:
    return SQLiteTopicBackend(str(Path(tempfile.mkdtemp(prefix="pc-proc-sm-")) / "topic.db"))


TestInMemoryProcessingStateMachine = topic_processing_state_machine_test(
    lambda: InMemoryTopicBackend())
TestSQLiteProcessingStateMachine = topic_processing_state_machine_test(
    _sqlite, max_examples=10)
