"""Every flush ends handled (Topic Memory RFC, "Pending dirty set": a flush during a wave
gives at most one successor wave, and Pending is deleted once its target is covered and
handled, whether or not a Window publishes), with a real Supervisor and real Workers on
SQLite and seekdb.

The failing input: one-Source Windows on 20 Sources and two flushes one second apart
with no new Source. The first wave's Windows cover the head and handle generation 1;
the successor wave of generation 2 found the Cursor at its target and ended without
handling it, so ``topic status`` showed ``through 20 gen 1/2`` for good (also after a
restart) while a further flush answered ``idle``. Tested with and without a new Source
per flush, and from a database already left in that state."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.supervisor_runs import isolated_env, supervisor, until, write_config

from powercontext import make_source, open_topic_service
from powercontext.core.topic.processing import BINDING
from powercontext.topic_processing import TopicProcessor


@pytest.fixture(params=["sqlite", pytest.param("seekdb", marks=pytest.mark.oceanbase)])
def db(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        yield str(tmp_path / "waves.db")
        return
    from oceanbase_server import fresh_database

    with fresh_database(request.getfixturevalue("seekdb_url"), "pcwave") as url:
        yield url


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return isolated_env(tmp_path, monkeypatch)


def _notes(scope: str, start: int, n: int) -> list:
    tag = "".join(c for c in scope if c.isalnum())
    return [make_source(f"src_{tag}_{i}", "chat_turn", f"user: release note {i} of {scope}")
            for i in range(start, start + n)]


async def _add(db: str, scope: str, start: int, n: int) -> None:
    async with open_topic_service(db, embedding="none") as svc:
        await svc.add_sources(scope, _notes(scope, start, n))


async def _flush(db: str, scope: str) -> str:
    async with open_topic_service(db, embedding="none") as svc:
        return str(await svc.flush(scope))


async def _status(db: str, scope: str):
    async with open_topic_service(db, embedding="none") as svc:
        (st,) = await svc.status(scope)
        return st


async def _covered(db: str, scope: str, head: int) -> bool:
    st = await _status(db, scope)
    return st.cursor == head and st.source_head == head and st.pending is None


@pytest.mark.subprocess  # the Supervisor's Workers
@pytest.mark.parametrize("new_source", [False, True], ids=["no-new-source", "new-source"])
def test_two_flushes_during_a_wave_end_with_pending_deleted(db, tmp_path, env, new_source):
    scope = "repo:/waves"
    control = tmp_path / "control"
    config = write_config(tmp_path, control, topic_memory_source_window_limit=1)

    async def body() -> None:
        await _add(db, scope, 0, 20)
        assert await _flush(db, scope) == "accepted"
        (control / "hang").touch()  # the first Window's Worker waits: the wave is running
        async with supervisor(db, config) as sup:
            await until(lambda: sup.running_keys, "the first wave's Worker running")
            await asyncio.sleep(1.0)  # the second flush, one second later
            if new_source:
                await _add(db, scope, 20, 1)
            assert await _flush(db, scope) == "accepted"
            st = await _status(db, scope)
            assert st.pending is not None and st.pending.flush_generation == 2
            (control / "hang").unlink()
            head = 21 if new_source else 20
            await until(lambda: _covered(db, scope, head), "the Scope covered and handled")
            # the Worker commits before the Supervisor collects its result: the Scope can
            # read as covered a moment before the count rises
            await until(lambda: sup.stats.published >= head, "the last result collected")
            await asyncio.sleep(0.5)
            assert sup.stats.published == head  # one-Source Windows, none twice
        st = await _status(db, scope)
        assert st.pending is None and st.budget is None
        assert await _flush(db, scope) == "idle"  # covered and handled: nothing to do

    asyncio.run(body())


async def _leave_flush_unhandled(db: str, scope: str) -> None:
    """A covered Scope whose Pending row is ``through 20 gen 1/2``: what the successor
    wave of a flush during a wave left behind before flushes were handled without a
    Window (written with the backend's own Pending primitives, on either engine)."""
    async with open_topic_service(db, embedding="none") as svc:
        backend = svc.backend

        def stuck() -> None:
            backend._pending_raise_sync(BINDING, scope, 20)
            backend._pending_flush_sync(BINDING, scope, 20)
            backend._pending_flush_sync(BINDING, scope, 20)
            backend.ledger_rows.pending_handled(BINDING, scope, 1)

        await backend._run(backend._in_tx, True, stuck)
        (st,) = await svc.status(scope)
    assert st.cursor == 20 and st.pending is not None
    assert (st.pending.source_through, st.pending.handled_flush_generation,
            st.pending.flush_generation) == (20, 1, 2)


@pytest.mark.subprocess  # the Supervisor's Workers
def test_a_restarted_supervisor_handles_a_flush_left_unhandled(db, tmp_path, env):
    scope = "repo:/restart"
    control = tmp_path / "control"
    config = write_config(tmp_path, control, topic_memory_source_window_limit=10)

    async def body() -> None:
        await _add(db, scope, 0, 20)
        assert await _flush(db, scope) == "accepted"
        async with supervisor(db, config):
            await until(lambda: _covered(db, scope, 20), "the first wave")
        await _leave_flush_unhandled(db, scope)
        async with supervisor(db, config) as sup:
            await until(lambda: _covered(db, scope, 20), "the unhandled flush handled")
            assert sup.stats.dispatched == 0  # no Window was left: no Worker

    asyncio.run(body())


def test_topic_process_handles_a_flush_whose_target_is_covered(db, tmp_path, env):
    scope = "repo:/process"

    async def body() -> None:
        from powercontext.adapters.topic_generation.deterministic import (
            DeterministicTopicModel,
        )

        await _add(db, scope, 0, 20)
        async with open_topic_service(db, embedding="none") as svc:
            processor = TopicProcessor(svc, DeterministicTopicModel())
            report = await processor.process(scope)
            assert report.stopped is None and report.status.cursor == 20
        await _leave_flush_unhandled(db, scope)
        async with open_topic_service(db, embedding="none") as svc:
            processor = TopicProcessor(svc, DeterministicTopicModel())
            report = await processor.process(scope)
            assert report.windows == () and report.stopped is None
            assert report.status.pending is None

    asyncio.run(body())
