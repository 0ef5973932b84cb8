"""The Supervisor's process plumbing without a Supervisor: the SQLite single-process
lock (TOPIC-MEMORY.md, "SQLite and other processes"), the Worker's result dict and
structured log lines, the picklable configuration copy, and
``TopicProcessor.process_assignment``'s early exits."""

from __future__ import annotations

import asyncio
import logging
import os
import pickle

import pytest

from powercontext.configuration import load_config
from powercontext.core.errors import SupervisorUnavailableError
from powercontext.core.topic.supervision import SupervisorTerm, WorkAssignment
from powercontext.entrypoints.topic_worker import (
    StructuredFormatter,
    config_from_state,
    config_state,
    result,
)
from powercontext.file_locks import acquire_supervisor_lock
from powercontext.testing import InMemoryTopicBackend
from powercontext.topic_processing import TopicProcessor
from powercontext.topic_service import TopicMemoryService


def test_a_second_supervisor_lock_on_one_sqlite_file_is_refused_naming_the_pid(tmp_path):
    db = tmp_path / "m.db"
    first = acquire_supervisor_lock(str(db))
    assert first is not None and first.held
    with pytest.raises(SupervisorUnavailableError, match=f"pid {os.getpid()}"):
        acquire_supervisor_lock(f"sqlite:///{db}")
    first.release()
    first.release()  # idempotent
    again = acquire_supervisor_lock(str(db))
    assert again is not None
    again.release()


def test_a_lease_backend_and_an_in_memory_sqlite_take_no_supervisor_lock(tmp_path,
                                                                          monkeypatch):
    from powercontext.adapters.oceanbase.topic_backend import OceanBaseTopicBackend
    from powercontext.entrypoints.supervisor_leases import Leadership

    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path))
    url = "oceanbase://u:p@127.0.0.1:2881/db"
    leadership = Leadership(url, 30.0, lambda: 0.0)
    leadership.choose(OceanBaseTopicBackend(url))  # declared, never opened
    assert leadership.locking == "lease"
    assert not (tmp_path / "locks").exists()
    assert acquire_supervisor_lock(":memory:") is None


def test_the_worker_result_has_the_documented_shape():
    assert result("failed", 3, code="provider_error", stage="probe") == {
        "status": "failed", "through": 3, "code": "provider_error", "terminal": False,
        "control": False, "stage": "probe"}


def test_the_configuration_copy_pickles_and_round_trips(tmp_path):
    (tmp_path / "c.toml").write_text(
        "[runtime]\nartifact_processing_max_workers = 3\n[inference]\n"
        "generation_provider = 'deterministic'\n[inference.generation_settings]\n"
        "temperature = 0.2\n", encoding="utf-8")
    config = load_config(tmp_path / "c.toml", env={})
    state = pickle.loads(pickle.dumps(config_state(config)))
    assert config_from_state(state) == config


def test_structured_log_lines_carry_the_fields_quoted():
    record = logging.LogRecord("powercontext.supervisor", logging.WARNING, __file__, 1,
                               "window failed", None, None)
    record.scope_id = "a b=c\nd"
    record.supervisor_generation = 4
    record.worker_id = "w4.1"
    record.error_code = None
    line = StructuredFormatter().format(record)
    assert line.endswith("scope_id='a b=c\\nd' supervisor_generation=4 worker_id='w4.1'")
    assert "\n" not in line and "error_code" not in line


@pytest.mark.parametrize(("after", "target"), [(1, 1), (0, 0)])
def test_process_assignment_does_nothing_when_the_cursor_moved_or_covers_the_target(
        after, target):
    """(1, 1): the Cursor is at 0, the assignment after 1 is stale; (0, 0): the
    Cursor at 0 covers target 0. Either way no attempt is admitted."""
    from powercontext import make_source

    async def body() -> None:
        svc = TopicMemoryService(InMemoryTopicBackend())
        await svc.add_sources("s", [make_source("src_a", "chat_turn", "user: hi")])
        processor = TopicProcessor(svc, None)
        assignment = WorkAssignment("topic-memory-source-window", "s", after, target,
                                    "explicit", SupervisorTerm("h", 1), "w1.1", 1)
        assert await processor.process_assignment(assignment) is None
        (st,) = await svc.status("s")
        assert st.cursor == 0 and st.budget is None

    asyncio.run(body())
