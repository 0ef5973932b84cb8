"""A Scope blocked by a Source over a complexity ceiling stays blocked through flushes
and Supervisor restarts, and goes on only by an operator decision (Topic Memory RFC,
"Retry and observability": no automatic reset, and flushes or restarts never authorise
more model cost; deliberate operator remediation), on SQLite and seekdb, with a real
Supervisor and real Workers, and the CLI as a subprocess.

The failing input: Sources ``ok``, one with 70,000 metadata keys, ``ok``. Processing
stops at the second with ``source_complexity_limit`` for good: the third is never
processed, and no command retried or skipped (the dashboard said the frontier lasts
"until new Sources arrive or an operator acts")."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from support.cli import cli_argv
from support.supervisor_runs import isolated_env, supervisor, until, write_config

from powercontext import make_source, open_topic_service
from powercontext.core.topic.processing import CODE_COMPLEXITY

pytestmark = pytest.mark.subprocess

SCOPE = "repo:/blocked"


@pytest.fixture(params=["sqlite", pytest.param("seekdb", marks=pytest.mark.oceanbase)])
def db(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        yield str(tmp_path / "blocked.db")
        return
    from oceanbase_server import fresh_database

    with fresh_database(request.getfixturevalue("seekdb_url"), "pcunblock") as url:
        yield url


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return isolated_env(tmp_path, monkeypatch)


def _sources() -> list:
    big = {f"key{i}": "v" for i in range(70_000)}
    return [make_source("src_ok_1", "chat_turn", "user: deploys go out on Tuesdays"),
            make_source("src_big", "note", "a pasted table", metadata=big),
            make_source("src_ok_3", "chat_turn", "user: the release freeze is Friday")]


async def _status(db: str):
    async with open_topic_service(db, embedding="none") as svc:
        (st,) = await svc.status(SCOPE)
        return st, await svc.backend.heads(SCOPE)


async def _flush(db: str) -> str:
    async with open_topic_service(db, embedding="none") as svc:
        return str(await svc.flush(SCOPE))


async def _blocked_at_2(db: str) -> bool:
    st, _ = await _status(db)
    return (st.cursor == 1 and st.budget is not None and st.budget.terminal
            and st.budget.failure_code == CODE_COMPLEXITY)


def _cli(db: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cli_argv(), "--db", db, *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env})


def test_flushes_and_restarts_never_unblock_and_the_operator_command_does(
        db, tmp_path, env):
    control = tmp_path / "control"
    config = write_config(tmp_path, control)

    async def body() -> None:
        async with open_topic_service(db, embedding="none") as svc:
            assert await svc.add_sources(SCOPE, _sources()) == (1, 2, 3)
            assert await svc.flush(SCOPE) == "accepted"
        async with supervisor(db, config):
            await until(lambda: _blocked_at_2(db), "the Scope stopped at Source 2")
            stopped, heads = await _status(db)
            assert await _flush(db) == "accepted"  # a flush: still stopped
            await asyncio.sleep(1.0)  # many polls
            assert (await _status(db))[0].budget == stopped.budget
        for _ in range(2):  # restarts, each with a flush: still stopped, nothing spent
            async with supervisor(db, config) as sup:
                assert await _flush(db) == "accepted"
                await asyncio.sleep(1.0)
                assert sup.stats.dispatched <= 1  # at most one look, refused at once
            st, now_heads = await _status(db)
            assert st.cursor == 1 and st.budget == stopped.budget and now_heads == heads

        shown = _cli(db, env, "--json", "topic", "status", "--scope", SCOPE)
        assert shown.returncode == 0, shown.stderr
        (blocked,) = json.loads(shown.stdout)["blocked"]
        assert (blocked["position"], blocked["source_id"]) == (2, "src_big")
        assert blocked["failure_code"] == CODE_COMPLEXITY
        assert "values and keys" in blocked["reason"]
        assert any("--skip 2" in c for c in blocked["commands"])
        human = _cli(db, env, "topic", "status", "--scope", SCOPE)
        assert "stops at Source #2 src_big" in human.stdout
        assert "topic unblock --scope repo:/blocked --skip 2" in human.stdout

        async with supervisor(db, config):
            done = _cli(db, env, "topic", "unblock", "--scope", SCOPE, "--skip", "2",
                        "--by", "ops@example", "--reason", "70,000 keys pasted by mistake")
            assert done.returncode == 0, done.stderr
            assert "skipped Source #2 src_big" in done.stdout

            async def covered() -> bool:
                st, _ = await _status(db)
                return st.cursor == 3 and st.pending is None and st.budget is None

            await until(covered, "the rest of the Scope processed")
        st, heads = await _status(db)
        assert len(heads) >= 1
        listed = _cli(db, env, "--json", "topic", "decisions", "--scope", SCOPE)
        (row,) = json.loads(listed.stdout)["decisions"]
        assert (row["action"], row["position"], row["decided_by"]) == ("skip", 2,
                                                                       "ops@example")
        assert row["reason"] == "70,000 keys pasted by mistake"

    asyncio.run(body())
