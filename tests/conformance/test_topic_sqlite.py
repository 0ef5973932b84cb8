"""The Topic contract kit and state machine on SQLite (``SQLiteTopicBackend``), run
exactly as a third-party Topic backend would run them; each factory call is a new
database file, and ``topic_backend_reopen`` opens the same file again (a second
connection) with another embedding profile."""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path

import pytest
from support.topic_faults import with_publication_faults

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.testing import TopicBackendContract, topic_state_machine_test

try:
    from powercontext.adapters.sqlite import SQLiteTopicBackend
except ImportError:  # the SQLite Topic backend is not merged into this tree yet
    SQLiteTopicBackend = None

# Under CI=true a missing backend fails (no Topic test is skipped there).
pytestmark = pytest.mark.skipif(
    SQLiteTopicBackend is None and os.environ.get("CI") != "true",
    reason="powercontext.adapters.sqlite.SQLiteTopicBackend is not in this tree")

_PATHS: dict[int, str] = {}


def _integrity(backend) -> list[str]:
    """FTS5 integrity-check of both FTS tables (raises on damage) and, in a hybrid
    database, vector rows equal to active rows."""
    report = backend._in_tx(False, backend.projection.integrity)
    problems = []
    for kind, active in (("topic", "topics"), ("chunk", "chunks")):
        vectors = report.get(f"{kind}_vectors")
        if vectors is not None and vectors != report[active]:
            problems.append(f"{vectors} {kind} vector rows for {report[active]} active rows")
    return problems


_Faulty = (with_publication_faults(SQLiteTopicBackend, _integrity)
           if SQLiteTopicBackend is not None else None)


def _open(path: str, profile):
    assert _Faulty is not None, "SQLiteTopicBackend is not in this tree"
    backend = _Faulty(path, profile=profile)
    _PATHS[id(backend)] = path
    return backend


class TestSQLiteTopicContract(TopicBackendContract):
    @pytest.fixture
    def topic_backend_factory(self, tmp_path):
        counter = itertools.count()
        return lambda profile: _open(str(tmp_path / f"topic-{next(counter)}.db"), profile)

    @pytest.fixture
    def topic_backend_reopen(self):
        return lambda backend, profile: _open(_PATHS[id(backend)], profile)


def _fresh(profile):
    return _open(str(Path(tempfile.mkdtemp(prefix="pc-topic-sm-")) / "topic.db"), profile)


TestSQLiteTopicStateMachine = topic_state_machine_test(_fresh, max_examples=10)
TestSQLiteHybridTopicStateMachine = topic_state_machine_test(
    _fresh, embedding_model=DeterministicEmbedding(dimension=64), max_examples=5)
