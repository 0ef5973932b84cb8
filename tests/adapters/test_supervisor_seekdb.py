"""Leadership of the ArtifactProcessingSupervisor on a real seekdb server (Topic Memory
RFC, "Leader, term, and fencing", "Supervisor failover and recovery"): of two
candidates exactly one leads; when the Leader stops (or stops renewing) the other takes
over with the next generation and processes the flushed work."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.supervisor_runs import isolated_env, sources, supervisor, until, write_config

from powercontext import open_topic_service

pytestmark = pytest.mark.oceanbase


@pytest.fixture
def db(seekdb_url):
    from oceanbase_server import fresh_database

    with fresh_database(seekdb_url, "pcsup") as url:
        yield url


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return isolated_env(tmp_path, monkeypatch)


async def _done(db: str, scope: str) -> bool:
    async with open_topic_service(db, embedding="none") as svc:
        (st,) = await svc.status(scope)
        return st.source_head > 0 and st.cursor == st.source_head and st.pending is None


def test_one_leader_of_two_and_a_takeover_with_the_next_generation(db, tmp_path, env):
    config = write_config(tmp_path, tmp_path / "control",
                          artifact_processing_lease_seconds=6)

    async def body() -> None:
        async with supervisor(db, config) as first, supervisor(db, config) as second:
            assert first.term is not None and first.term.generation == 1
            assert second.term is None  # a candidate while the lease is valid
            await asyncio.sleep(1.0)  # several renewals and candidate polls
            assert first.term is not None and second.term is None
            await first.stop()  # releases the lease
            term = await until(lambda: second.term, "the candidate took over")
            assert term.generation == 2 and term.holder_id == second.holder_id
            async with open_topic_service(db, embedding="none") as svc:
                await svc.add_sources("s:ob", sources("s:ob"))
                assert await svc.flush("s:ob") == "accepted"
            await until(lambda: _done(db, "s:ob"), "the new Leader processed the flush")
            # the Worker commits before the Supervisor collects its result: the Scope
            # can read as covered a moment before the count rises
            await until(lambda: second.stats.published >= 1, "the new Leader's count")
            assert first.stats.published == 0

    asyncio.run(body())


@pytest.mark.slow
def test_a_leader_that_vanishes_is_replaced_after_its_lease(db, tmp_path, env):
    config = write_config(tmp_path, tmp_path / "control",
                          artifact_processing_lease_seconds=6)

    async def body() -> None:
        async with supervisor(db, config) as first:
            generation = first.term.generation

            async def vanish(term):  # a crash: the lease is left to expire
                return None

            first._service.backend.release_lease = vanish
            await first.stop()
            async with supervisor(db, config) as second:
                term = await until(lambda: second.term, "taken over after the lease")
                assert term.generation == generation + 1

    asyncio.run(body())


def test_the_runner_announces_its_term_and_stops_on_sigterm(db, tmp_path, env):
    """``python -m powercontext.entrypoints.supervisor`` (the background role) on OceanBase: it
    prints ``supervisor ready holder=<id> generation=<n>``, processes a flush, logs each
    structured field once and never Source text, and exits 0 on SIGTERM."""
    import os
    import signal
    import subprocess
    import sys

    write_config(tmp_path, tmp_path / "control")

    async def add() -> None:
        async with open_topic_service(db, embedding="none") as svc:
            await svc.add_sources("s:run", sources("s:run"))
            assert await svc.flush("s:run") == "accepted"

    asyncio.run(add())
    tests = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "powercontext.entrypoints.supervisor", "--db", db, "--config",
         str(tmp_path / "config.toml"), "--plugin", "support.supervisor_models:plugin",
         "-v"],
        stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(tests), os.environ.get("PYTHONPATH", "")])})
    try:
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("supervisor ready "):
                break
        assert lines and lines[-1].startswith("supervisor ready holder=")
        assert lines[-1].rstrip().endswith("generation=1")
        asyncio.run(until(lambda: _done(db, "s:run"), "the runner processed the flush"))
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert "window published" in err and "user:" not in err  # no Source text logged
    for line in err.splitlines():
        if "powercontext.supervisor:" in line:
            names = [w.partition("=")[0] for w in line.split() if "=" in w]
            assert len(names) == len(set(names)), line  # each field once
