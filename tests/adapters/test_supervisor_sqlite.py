"""The ArtifactProcessingSupervisor on a real SQLite file with real child-process Workers
(Topic Memory RFC, "Artifact Processing Supervisor" through "Retry and observability";
TOPIC-MEMORY.md, "SQLite and other processes"): Topics appear after a flush with no
command; Scopes run in parallel; a failing key backs off alone; a Worker past its
timeout is terminated and redispatched; a second Supervisor on the file refuses to
start; a restart takes generation + 1 and recovers from Pending; an automatic wave
completes and cleans Pending."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from support.supervisor_models import POISON, calls
from support.supervisor_runs import isolated_env, sources, supervisor, until, write_config

from powercontext import open_topic_service
from powercontext.core.errors import SupervisorUnavailableError
from powercontext.core.topic.processing import BINDING

pytestmark = pytest.mark.subprocess


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return isolated_env(tmp_path, monkeypatch)


@pytest.fixture
def control(tmp_path: Path) -> Path:
    return tmp_path / "control"


async def _add(db: str, scope: str, *, flush: bool = True, **kw) -> None:
    async with open_topic_service(db, embedding="none") as svc:
        await svc.add_sources(scope, sources(scope, **kw))
        if flush:
            assert await svc.flush(scope) == "accepted"


async def _status(db: str, scope: str):
    async with open_topic_service(db, embedding="none") as svc:
        (st,) = await svc.status(scope)
        heads = await svc.backend.heads(scope)
        return st, heads


async def _done(db: str, scope: str) -> bool:
    st, _ = await _status(db, scope)
    return st.source_head > 0 and st.cursor == st.source_head and st.pending is None


def test_a_flush_makes_topics_appear_without_any_command(tmp_path, env, control):
    db = str(tmp_path / "m.db")
    config = write_config(tmp_path, control)

    async def body() -> None:
        await _add(db, "repo:/a")
        async with supervisor(db, config) as sup:
            assert sup.term is not None and sup.term.generation == 1
            await until(lambda: sup.stats.published >= 1, "a Window published")
            await until(lambda: _done(db, "repo:/a"), "the flushed Scope covered")
        st, heads = await _status(db, "repo:/a")
        assert heads and st.budget is None

    asyncio.run(body())


def test_two_scopes_run_in_parallel_each_with_one_worker(tmp_path, env, control):
    db = str(tmp_path / "m.db")
    config = write_config(tmp_path, control, artifact_processing_max_workers=2)
    (control / "hang").touch()

    async def body() -> None:
        await _add(db, "s:one")
        await _add(db, "s:two")
        async with supervisor(db, config) as sup:
            await until(lambda: len(sup.running_keys) == 2, "both Scopes running at once")
            assert sup.running_keys == {(BINDING, "s:one"), (BINDING, "s:two")}
            (control / "hang").unlink()
            await until(lambda: _done(db, "s:one"), "s:one covered")
            await until(lambda: _done(db, "s:two"), "s:two covered")
            assert sup.stats.dispatched == 2  # one Window each, never two Workers per key

    asyncio.run(body())


def test_a_failing_key_backs_off_alone_while_another_key_publishes(tmp_path, env, control):
    db = str(tmp_path / "m.db")
    config = write_config(tmp_path, control, artifact_processing_max_workers=1)
    delays: list[int] = []

    def backoff(failures: int) -> float:
        delays.append(failures)
        return 0.2

    async def body() -> None:
        await _add(db, "s:bad", text=f"{POISON} the deploy notes")
        await _add(db, "s:good")
        async with supervisor(db, config, backoff=backoff) as sup:
            await until(lambda: _done(db, "s:good"), "the healthy Scope covered")
            # three attempts (the durable allowance), then a terminal frontier left alone
            await until(lambda: sup.stats.failures >= 3, "three failed attempts")
            st, _ = await _status(db, "s:bad")
            await until(lambda: (BINDING, "s:bad") not in sup.known_keys, "s:bad left alone")
            dispatched = sup.stats.dispatched
            await asyncio.sleep(0.5)
            assert sup.stats.dispatched == dispatched  # no Worker for a terminal frontier
        st, heads = await _status(db, "s:bad")
        assert st.cursor == 0 and st.pending is not None and not heads
        assert st.budget is not None and st.budget.attempt_count == 3
        assert delays[:2] == [1, 2]  # the per-key failure count rose: jittered backoff

    asyncio.run(body())


def test_a_worker_past_its_timeout_is_terminated_and_redispatched(tmp_path, env, control):
    db = str(tmp_path / "m.db")
    # the hanging Worker waits for ever, so any timeout ends it; the redispatched one must
    # start and finish within it, which took over 1 s at a load average of 10 (4 s here)
    config = write_config(tmp_path, control, artifact_processing_worker_timeout_seconds=4)
    (control / "hang").touch()

    async def body() -> None:
        await _add(db, "s:slow")
        async with supervisor(db, config, backoff=lambda n: 0.1) as sup:
            await until(lambda: sup.stats.timeouts >= 1, "a Worker timed out")
            st, _ = await _status(db, "s:slow")
            assert st.cursor == 0  # the terminated Window published nothing
            (control / "hang").unlink()
            await until(lambda: _done(db, "s:slow"), "redispatched and covered")
            assert sup.stats.dispatched >= 2
        assert calls(control) >= 2

    asyncio.run(body())


def test_a_second_supervisor_on_the_same_file_refuses_to_start(tmp_path, env, control):
    db = str(tmp_path / "m.db")
    config = write_config(tmp_path, control)

    async def body() -> None:
        async with supervisor(db, config) as first:
            with pytest.raises(SupervisorUnavailableError, match="another Supervisor"):
                async with supervisor(f"sqlite:///{db}", config):
                    pass
            assert first.term is not None
        async with supervisor(db, config) as again:  # the lock went with the first
            assert again.term is not None

    asyncio.run(body())


def test_a_restart_takes_the_next_generation_and_recovers_from_pending(tmp_path, env,
                                                                       control, caplog):
    db = str(tmp_path / "m.db")
    config = write_config(tmp_path, control)
    (control / "hang").touch()

    async def body() -> None:
        await _add(db, "s:r")
        async with supervisor(db, config) as first:
            await until(lambda: first.running_keys, "a Worker running")
            generation = first.term.generation
        st, _ = await _status(db, "s:r")
        assert st.cursor == 0 and st.pending is not None  # the Worker was terminated
        (control / "hang").unlink()
        with caplog.at_level(logging.INFO, logger="powercontext.supervisor"):
            async with supervisor(db, config) as second:
                assert second.term.generation == generation + 1
                assert second.holder_id != first.holder_id
                await until(lambda: _done(db, "s:r"), "recovered from Pending")
                # the Worker commits, then sends its result: the log line follows
                await until(lambda: second.stats.published >= 1, "the result collected")
        from powercontext.entrypoints.topic_worker import StructuredFormatter

        lines = [StructuredFormatter().format(r) for r in caplog.records]
        assert any("supervisor term acquired" in m and f"supervisor_generation="
                   f"{generation + 1}" in m for m in lines)
        assert any("window published" in m and "scope_id='s:r'" in m for m in lines)
        assert not any("deploys go out" in m for m in lines)  # never Source text
        for m in lines:  # each field once: the message is the event alone
            fields = [w.partition("=")[0] for w in m.split() if "=" in w]
            assert len(fields) == len(set(fields)), m

    asyncio.run(body())


def test_an_automatic_wave_processes_unflushed_pending_and_completes(tmp_path, env,
                                                                     control):
    db = str(tmp_path / "m.db")
    config = write_config(tmp_path, control, topic_memory_auto_interval_seconds=3600)

    async def body() -> None:
        await _add(db, "s:auto1", flush=False)
        await _add(db, "s:auto2", flush=False)
        async with supervisor(db, config) as sup:
            await until(lambda: sup.stats.auto_waves_completed >= 1, "the wave completed")
            assert sup.stats.auto_waves == 1
            assert await _done(db, "s:auto1") and await _done(db, "s:auto2")
            async with open_topic_service(db, embedding="none") as svc:
                state = await svc.backend.scheduling_state()
                assert state.last_auto_wave_completed_at is not None
            # the next wave waits for the interval: new Sources stay Pending
            await _add(db, "s:auto1", flush=False, n=3)
            await asyncio.sleep(0.5)
            assert sup.stats.auto_waves == 1
            st, _ = await _status(db, "s:auto1")
            assert st.pending is not None and st.cursor == 2

    asyncio.run(body())


def test_the_runner_refuses_a_sqlite_database_as_serve_role_background_does(tmp_path, env,
                                                                            control):
    """The first SQLite release runs the Supervisor only inside ``serve --role all``:
    the background runner is refused on a SQLite file before anything is opened (it
    started and processed before)."""
    import subprocess
    import sys

    db = tmp_path / "m.db"
    write_config(tmp_path, control)
    done = subprocess.run(
        [sys.executable, "-m", "powercontext.entrypoints.supervisor", "--db", str(db), "--config",
         str(tmp_path / "config.toml")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "serve --role all" in done.stderr and "OceanBase" in done.stderr
    assert not db.exists()  # refused before the database was opened
