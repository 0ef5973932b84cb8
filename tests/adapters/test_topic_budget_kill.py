"""The durable allowance across processes, on SQLite and seekdb (Topic Memory RFC, "Cumulative work
and evidence ceilings": neither exceptions, cancellation, timeout nor process death
refunds a reservation; each reservation is committed before its provider call).

A worker process admits an attempt, reserves a stage call, says so, and is SIGKILLed
where its provider call would run; a fresh backend on the same file sees the attempt
and the reservation, and the next attempt counts on top of them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from oceanbase_server import fresh_database, seekdb_available

from powercontext.adapters.oceanbase import OceanBaseTopicBackend
from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.core.topic.processing import BINDING

from .topic_helpers import run

pytestmark = pytest.mark.subprocess

SCOPE = "project:killed"

_WORKER = textwrap.dedent("""
    import asyncio, sys, time
    from powercontext.adapters.oceanbase import OceanBaseTopicBackend
    from powercontext.adapters.sqlite import SQLiteTopicBackend
    from powercontext.core import canonical

    async def main(where):
        b = (OceanBaseTopicBackend(where) if where.startswith("oceanbase://")
             else SQLiteTopicBackend(where))
        await b.put_scoped_sources(%(scope)r, [
            canonical.make_source("k1", "user_note", "evidence one"),
            canonical.make_source("k2", "user_note", "evidence two")])
        grant = await b.begin_attempt(%(scope)r, 0)
        await b.reserve(grant, 1, 125_000, through=2)
        print(grant.attempt_id, flush=True)
        time.sleep(600)  # the provider call: the process dies here

    asyncio.run(main(sys.argv[1]))
""") % {"scope": SCOPE}


@pytest.fixture(params=["sqlite", pytest.param("oceanbase", marks=[
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL")])])
def database(request: Any, tmp_path: Path) -> Iterator[str]:
    """Where the worker and the fresh backend open: a SQLite file or a seekdb database."""
    if request.param == "sqlite":
        yield str(tmp_path / "killed.db")
        return
    with fresh_database(request.getfixturevalue("seekdb_url"), "pc_killed") as url:
        yield url


def _open(where: str) -> Any:
    return (OceanBaseTopicBackend(where) if where.startswith("oceanbase://")
            else SQLiteTopicBackend(where))


def test_a_kill_between_the_reservation_and_the_provider_call_refunds_nothing(
        database: str) -> None:
    with subprocess.Popen([sys.executable, "-c", _WORKER, database],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as worker:
        try:
            assert worker.stdout is not None and worker.stderr is not None
            attempt_id = worker.stdout.readline().strip()
            if not attempt_id:
                raise AssertionError(worker.stderr.read())
            os.kill(worker.pid, signal.SIGKILL)
        finally:
            if worker.poll() is None:
                worker.kill()
            worker.wait()
    assert worker.returncode == -signal.SIGKILL

    async def after() -> None:
        b = _open(database)
        try:
            (status,) = await b.processing_status(SCOPE)
            assert status.cursor == 0 and status.source_head == 2
            row = status.budget
            assert row is not None
            assert (row.binding_name, row.source_after, row.attempt_id) == (BINDING, 0,
                                                                            attempt_id)
            assert (row.attempt_count, row.reserved_requests, row.reserved_tokens,
                    row.furthest_through, row.failure_code) == (1, 1, 125_000, 2, None)
            grant = await b.begin_attempt(SCOPE, 0)  # the retry of the same Window
            assert grant.attempt_count == 2 and grant.attempt_id != attempt_id
            await b.reserve(grant, 1, 125_000, through=2)
            (status,) = await b.processing_status(SCOPE)
            assert status.budget is not None
            assert (status.budget.reserved_requests, status.budget.reserved_tokens) == (
                2, 250_000)
        finally:
            await b.close()
    run(after())
