"""Automatic waves of the ArtifactProcessingSupervisor with a real Supervisor and real
Workers on SQLite and seekdb (Topic Memory RFC, "Automatic scheduling"):

* catch-up: while a deferred target keeps a wave open, ordinary Pending of a Scope
  added after the wave froze is processed by an automatic catch-up attempt (its Cursor
  advances, its Pending stays), without joining the wave or starting another;
* deferral: a frozen target owned by explicit work or by a retry waits, the other
  targets go on, and the wave completes only once every target is covered; a target at
  a terminal frontier is left alone (the wave stays open) until an operator decision,
  then it comes round again and the wave completes;
* bounded pages: with more targets than a page holds and the first page's targets
  backing off, the later pages are still read and every target is dispatched once.

Dispatches are read from the Supervisor's ``worker dispatched`` records (``mode``,
``scope_id``)."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest
from support.supervisor_models import FLAKY
from support.supervisor_runs import isolated_env, supervisor, until, write_config

from powercontext import make_source, open_topic_service

pytestmark = pytest.mark.subprocess  # the Supervisor's Workers

AUTO = {"topic_memory_auto_interval_seconds": 3600}


@pytest.fixture(params=["sqlite", pytest.param("seekdb", marks=pytest.mark.oceanbase)])
def db(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        yield str(tmp_path / "auto.db")
        return
    from oceanbase_server import fresh_database

    with fresh_database(request.getfixturevalue("seekdb_url"), "pcauto") as url:
        yield url


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return isolated_env(tmp_path, monkeypatch)


@pytest.fixture
def dispatched(caplog: pytest.LogCaptureFixture):
    """``dispatched()``: the (scope_id, mode) of every Worker dispatched so far."""
    caplog.set_level(logging.INFO, logger="powercontext.supervisor")

    def read() -> list[tuple[str, str]]:
        return [(r.scope_id, r.mode) for r in caplog.records  # type: ignore[attr-defined]
                if r.name == "powercontext.supervisor"
                and r.getMessage() == "worker dispatched"]

    return read


async def _add(db: str, scope: str, n: int = 2, *, text: str = "deploys go out on Tuesdays",
               flush: bool = False) -> None:
    tag = "".join(c for c in scope if c.isalnum())
    async with open_topic_service(db, embedding="none") as svc:
        await svc.add_sources(scope, [
            make_source(f"src_{tag}_{i}", "chat_turn", f"user: {text} (note {i} of {tag})")
            for i in range(n)])
        if flush:
            assert await svc.flush(scope) == "accepted"


async def _status(db: str, scope: str):
    async with open_topic_service(db, embedding="none") as svc:
        (st,) = await svc.status(scope)
        return st


async def _cursor_at_head(db: str, scope: str) -> bool:
    st = await _status(db, scope)
    return st.source_head > 0 and st.cursor == st.source_head


async def _done(db: str, scope: str) -> bool:
    st = await _status(db, scope)
    return st.source_head > 0 and st.cursor == st.source_head and st.pending is None


async def _terminal(db: str, scope: str) -> bool:
    st = await _status(db, scope)
    return st.budget is not None and st.budget.terminal


def test_catch_up_covers_a_scope_added_after_the_wave_froze(db, tmp_path, env, dispatched):
    """A frozen target at a terminal frontier keeps the wave open; a Scope whose first
    Sources arrive after the freeze is processed by catch-up within a few polls, not
    left for the next automatic wave (an hour away here)."""
    control = tmp_path / "control"
    config = write_config(tmp_path, control, **AUTO)
    (control / "flaky").touch()

    async def body() -> None:
        await _add(db, "s:bad", text=f"{FLAKY} the deploy notes")
        await _add(db, "s:old")
        async with supervisor(db, config, backoff=lambda n: 0.05) as sup:
            await until(lambda: _terminal(db, "s:bad"), "s:bad at a terminal frontier")
            await until(lambda: _cursor_at_head(db, "s:old"), "s:old covered by the wave")
            assert sup.stats.auto_waves == 1 and sup.stats.auto_waves_completed == 0
            await _add(db, "s:late", n=3)  # outside the frozen set
            await until(lambda: _cursor_at_head(db, "s:late"), "s:late caught up", polls=200)
            st = await _status(db, "s:late")
            assert st.cursor == 3 and st.pending is not None  # catch-up leaves Pending
            assert st.pending.source_through == 3
            assert ("s:late", "catchup") in dispatched()
            assert sup.stats.auto_waves == 1 and sup.stats.auto_waves_completed == 0
            # a Source after the catch-up is caught up too, still without a new wave
            await _add(db, "s:late", n=4)
            await until(lambda: _cursor_at_head(db, "s:late"), "s:late caught up again",
                        polls=200)
            assert sup.stats.auto_waves == 1
        assert (await _status(db, "s:bad")).cursor == 0

    asyncio.run(body())


def test_targets_owned_by_explicit_work_or_a_retry_are_deferred(db, tmp_path, env,
                                                                dispatched):
    """``s:x`` is flushed (explicit work owns it when the wave freezes) and ``s:f`` is
    ordinary Pending; both fail once and back off. The healthy target is covered, the
    wave stays open while either is uncovered, and completes once both are; ``s:x`` is
    never dispatched as part of the wave."""
    control = tmp_path / "control"
    config = write_config(tmp_path, control, artifact_processing_max_workers=3, **AUTO)
    (control / "flaky").touch()

    async def body() -> None:
        await _add(db, "s:x", text=f"{FLAKY} the release notes", flush=True)
        await _add(db, "s:f", text=f"{FLAKY} the runbook")
        await _add(db, "s:ok")
        async with supervisor(db, config, backoff=lambda n: 3.0) as sup:
            await until(lambda: sup.stats.failures >= 2, "s:x and s:f failed once")
            await until(lambda: _cursor_at_head(db, "s:ok"), "the healthy target covered")
            await asyncio.sleep(0.5)  # many polls: the wave waits for its deferred targets
            assert sup.stats.auto_waves == 1 and sup.stats.auto_waves_completed == 0
            assert sup.stats.failures == 2
            (control / "flaky").unlink()
            await until(lambda: sup.stats.auto_waves_completed == 1, "the wave completed")
            for scope in ("s:x", "s:f", "s:ok"):
                assert await _done(db, scope), scope
            seen = dispatched()
            assert [m for s, m in seen if s == "s:x"] == ["explicit", "explicit"]
            assert [m for s, m in seen if s == "s:f"] == ["auto", "auto"]
            assert [m for s, m in seen if s == "s:ok"] == ["auto"]
            assert sup.stats.auto_waves == 1

    asyncio.run(body())


def test_a_terminal_target_is_left_alone_until_an_operator_unblocks_it(db, tmp_path, env,
                                                                       dispatched):
    control = tmp_path / "control"
    config = write_config(tmp_path, control, **AUTO)
    (control / "flaky").touch()

    async def body() -> None:
        await _add(db, "s:bad", text=f"{FLAKY} the deploy notes")
        await _add(db, "s:ok")
        async with supervisor(db, config, backoff=lambda n: 0.05) as sup:
            await until(lambda: _terminal(db, "s:bad"), "s:bad at a terminal frontier")
            await until(lambda: _cursor_at_head(db, "s:ok"), "s:ok covered")
            seen = len(dispatched())
            await asyncio.sleep(1.0)  # many polls: untouched, and the wave stays open
            assert len(dispatched()) == seen
            assert sup.stats.auto_waves_completed == 0
            st = await _status(db, "s:bad")
            assert st.cursor == 0 and st.budget is not None and st.budget.attempt_count == 3
            (control / "flaky").unlink()
            async with open_topic_service(db, embedding="none") as svc:
                await svc.unblock("s:bad", "grant", frontier=0, decided_by="ops@example",
                                  reason="the provider is back")
            await until(lambda: sup.stats.auto_waves_completed == 1, "the wave completed")
            assert await _done(db, "s:bad") and await _done(db, "s:ok")
            assert sup.stats.auto_waves == 1

    asyncio.run(body())


def test_every_target_is_dispatched_once_across_bounded_pages(db, tmp_path, env,
                                                              dispatched, monkeypatch):
    """Pages of two targets; the first page's two targets fail and back off for ten
    minutes: the later pages are read all the same (other Scopes make progress) and
    each of their targets gets exactly one Worker. Ten minutes later (the Supervisor's
    monotonic clock moved on) the two are retried and the wave completes.

    The failing input: the Supervisor counted the targets backing off as the wave's page
    in memory and read no further page until their retry, so one page of failing
    targets held every later target of the wave (here for ten minutes; with the default
    backoff up to half an hour)."""
    import powercontext.entrypoints.supervisor as module

    monkeypatch.setattr(module, "PAGE", 2)
    monkeypatch.setattr(module, "MAX_KNOWN_KEYS", 8)
    control = tmp_path / "control"
    config = write_config(tmp_path, control, artifact_processing_max_workers=2, **AUTO)
    (control / "flaky").touch()
    good = [f"s:g{i}" for i in range(5)]
    offset = [0.0]

    def clock() -> float:
        return time.monotonic() + offset[0]

    async def body() -> None:
        for scope in ("s:a1", "s:a2"):  # first in scope order: the first page
            await _add(db, scope, text=f"{FLAKY} the deploy notes")
        for scope in good:
            await _add(db, scope, n=1)
        async with supervisor(db, config, backoff=lambda n: 600.0, clock=clock) as sup:
            for scope in good:
                await until(lambda s=scope: _cursor_at_head(db, s), f"{scope} covered",
                            polls=300)
            await until(lambda: len(dispatched()) >= 7, "every Worker dispatched")
            await asyncio.sleep(0.5)
            seen = dispatched()
            assert sorted(seen) == sorted([("s:a1", "auto"), ("s:a2", "auto")]
                                          + [(s, "auto") for s in good])
            assert sup.stats.auto_waves == 1 and sup.stats.auto_waves_completed == 0
            (control / "flaky").unlink()
            offset[0] = 601.0  # the backoff is over
            await until(lambda: sup.stats.auto_waves_completed == 1, "the wave completed")
            for scope in ("s:a1", "s:a2", *good):
                assert await _done(db, scope), scope
            assert sorted(dispatched()) == sorted([*seen, ("s:a1", "auto"), ("s:a2", "auto")])

    asyncio.run(body())
