"""Leadership faults (Topic Memory RFC, "Leader, term, and fencing", "Supervisor failover
and recovery"):

* a Worker held past its Supervisor's term (SIGSTOP on seekdb, past the lease; an orphan
  of a kill -9 on SQLite), a new term taken over (the test takes the lease through the
  port, exactly as a candidate does, so nothing else -- no newer attempt -- could be what
  refuses it), then the Worker resumed: its commit is refused and changes nothing;
* two Supervisors racing at start on seekdb: exactly one Leader dispatches Workers;
* the Leader's database connection cut (a TCP proxy closed under it): it stops
  dispatching and terminates its Worker; with the connection back it leads again under
  a new generation and finishes the work.

Each ends with the quiescence checker."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from urllib.parse import urlsplit

import pytest
from support.chaos import (
    SupervisorProcess,
    TcpProxy,
    blocked_worker,
    descendants,
    flush,
    is_alive,
    seed_sources,
    wait_for,
    write_config,
)
from support.chaos_check import (
    CursorRecorder,
    budget_rows,
    check_quiescent,
    cursors,
    lease,
    opened,
    pending_rows,
    publication_count,
)

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.subprocess,
              pytest.mark.usefixtures("needs_supervisor")]

TEXTS = [f"# Lead topic {i % 2}\n\nleadership note {i}" for i in range(5)]


def lease_expired(db_url: str) -> bool:
    with opened(db_url) as db:
        return bool(db.rows("SELECT 1 FROM pc_artifact_processing_leases WHERE "
                            "supervisor_group = 'global' AND lease_expires_at <= "
                            "UTC_TIMESTAMP(6)"))


def take_over(db_url: str, lease_seconds: float | None, timeout: float = 60):
    """Become the Leader through the port as a new holder (what a candidate / a new
    SQLite start does); the new term."""
    from powercontext.runtime import open_topic_service

    async def go():
        svc = open_topic_service(db_url)
        try:
            holder = str(uuid.uuid4())
            deadline = time.monotonic() + timeout
            while True:
                term = await svc.backend.acquire_lease(holder, lease_seconds)
                if term is not None:
                    return term
                if time.monotonic() >= deadline:  # a give-up bound, not a timing claim
                    pytest.fail("the old lease never expired")
                await asyncio.sleep(0.2)
        finally:
            await svc.close()

    return asyncio.run(go())


def test_a_worker_resumed_after_a_takeover_cannot_commit(chaos, db_url, procs):
    scope = "chaos:stale"
    oceanbase = db_url.startswith("oceanbase://")
    seed_sources(db_url, {scope: TEXTS})
    assert flush(db_url, scope) == ["accepted"]
    config = write_config(chaos.root / "config.toml", lease=3, worker_timeout=120,
                          control=chaos.control)
    chaos.block(stage="evolve")
    recorder = CursorRecorder(db_url).start()
    old = SupervisorProcess.supervisor(chaos, db_url, config, name="old")
    procs.append(old)
    worker = wait_for(lambda: blocked_worker(chaos, old), 120, "a Worker held in evolve")
    old_term = lease(db_url)
    assert old_term is not None
    [attempt] = budget_rows(db_url)
    os.kill(worker, signal.SIGSTOP)
    if oceanbase:
        old.signal(signal.SIGSTOP)  # it can neither renew nor stop its Worker
        term = take_over(db_url, 2.0)  # waits until the old lease expired
    else:
        old.kill()  # SQLite: the Supervisor dies, its Worker lives on as an orphan
        term = take_over(db_url, None)
    assert term.generation > old_term[1]
    chaos.release(worker)
    os.kill(worker, signal.SIGCONT)
    wait_for(lambda: not is_alive(worker), 60, "the resumed Worker to finish")
    # its commit was refused: nothing published, its attempt's row untouched
    assert publication_count(db_url) == 0
    assert cursors(db_url).get(scope, 0) == 0
    assert budget_rows(db_url)[0][:5] == attempt[:5]
    assert pending_rows(db_url)  # the flush is still to be handled
    # a new Supervisor (after the test's short lease) finishes the Scope
    if oceanbase:
        old.signal(signal.SIGCONT)  # it finds its term lost (it may lead again later,
        # under a new generation, once the test's short lease has expired)
    chaos.unblock(stage="evolve")
    new = SupervisorProcess.supervisor(chaos, db_url, config, name="new")
    procs.append(new)
    wait_for(lambda: cursors(db_url).get(scope) == len(TEXTS) and not pending_rows(db_url),
             150, "the new Leader to process the Scope")
    for p in procs:
        p.stop()
    recorder.check()
    assert check_quiescent(db_url)["publications"] == {scope: 1}


@pytest.mark.oceanbase
def test_two_supervisors_racing_at_start_elect_one_leader(chaos, seekdb_db, procs):
    scopes = [f"chaos:race{i}" for i in range(4)]
    seed_sources(seekdb_db, {s: [f"# Race {s}\n\nrace note {i} of {s}" for i in range(3)]
                             for s in scopes})
    assert flush(seekdb_db, *scopes) == ["accepted"] * len(scopes)
    (chaos.control / "sleep-probe").write_text("0.3", encoding="utf-8")
    config = write_config(chaos.root / "config.toml", lease=30, control=chaos.control)
    a = SupervisorProcess.supervisor(chaos, seekdb_db, config, name="a")
    b = SupervisorProcess.supervisor(chaos, seekdb_db, config, name="b")
    procs += [a, b]
    forkservers: dict[int, str] = {}

    def done() -> bool:
        for sup, name in ((a, "a"), (b, "b")):
            for pid in descendants(sup.pid):
                forkservers.setdefault(pid, name)
        return all(cursors(seekdb_db).get(s) == 3 for s in scopes) and not pending_rows(
            seekdb_db)

    wait_for(done, 180, "every Scope processed")
    leaders = {forkservers.get(ppid, "?") for ppid in chaos.parents().values()}
    assert len(leaders) == 1 and "?" not in leaders, (leaders, chaos.parents(), forkservers)
    term = lease(seekdb_db)
    assert term is not None and term[1] == 1  # one acquisition, no second Leader's term
    for p in procs:
        p.stop()
    check_quiescent(seekdb_db)


@pytest.mark.oceanbase
def test_a_leader_whose_connection_is_cut_stops_dispatching(chaos, seekdb_db, procs):
    scope = "chaos:cut"
    seed_sources(seekdb_db, {scope: TEXTS})
    assert flush(seekdb_db, scope) == ["accepted"]
    parts = urlsplit(seekdb_db)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 2881)
    try:
        config = write_config(chaos.root / "config.toml", lease=3, worker_timeout=120,
                              control=chaos.control)
        chaos.block(stage="evolve")
        sup = SupervisorProcess.supervisor(chaos, proxy.url_for(seekdb_db), config)
        procs.append(sup)
        worker = wait_for(lambda: blocked_worker(chaos, sup), 120, "a Worker held in evolve")
        first = lease(seekdb_db)
        assert first is not None
        proxy.cut()
        # renewal fails: the Leader stops dispatching and terminates its Worker (long
        # before the Worker's own timeout of 120 s could)
        wait_for(lambda: not is_alive(worker), 60, "the Leader to terminate its Worker")
        assert sup.alive()
        chaos.unblock(stage="evolve")
        workers_before = set(chaos.started_pids())
        time.sleep(1.0)  # several polls: nothing new may start while cut off
        assert set(chaos.started_pids()) == workers_before
        assert cursors(seekdb_db).get(scope, 0) == 0
        # back only once its lease has expired by database time, so that coming back is
        # a takeover (generation + 1), not the renewal of a still-valid lease
        wait_for(lambda: lease_expired(seekdb_db), 60, "the cut-off Leader's lease to expire")
        proxy.restore()
        wait_for(lambda: cursors(seekdb_db).get(scope) == len(TEXTS)
                 and not pending_rows(seekdb_db), 150, "the Leader to come back and finish")
        again = lease(seekdb_db)
        assert again is not None and again[1] > first[1]  # a new term after the loss
        sup.stop()
    finally:
        proxy.close()
    assert check_quiescent(seekdb_db)["publications"] == {scope: 1}
