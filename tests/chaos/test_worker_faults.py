"""Faults of one Worker (Topic Memory RFC, "In-memory queue and Workers", "Retry and
observability"):

* kill -9 of a Worker in the middle of generation: the reservations it committed stay
  (never refunded), the Cursor does not move, and the Supervisor dispatches the Window
  again (after its backoff) to a new Worker that publishes it once;
* a Cursor-CAS conflict loop: every Worker of a Scope loses its Window to a concurrent
  ``topic process`` (the test, publishing that Window while the Worker is held in its
  evolve call); each loss is a control signal that waits the fixed short delay
  (CONTROL_DELAY_SECONDS) before the next dispatch -- no hot loop, and no ordinary
  backoff (which would make the loop minutes long).

Each ends with the quiescence checker and the Cursor recorder."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest
from support.chaos import (
    SupervisorProcess,
    blocked_worker,
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
    pending_rows,
)
from support.chaos_model import calls

from powercontext.core.topic.supervision import CONTROL_DELAY_SECONDS

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.subprocess,
              pytest.mark.usefixtures("needs_supervisor")]

TEXTS = [f"# Fault topic {i % 2}\n\nfault note {i} on releases" for i in range(6)]


def test_kill_9_of_a_worker_keeps_reservations_and_the_window_is_redispatched(
        chaos, db_url, procs):
    scope = "chaos:kill"
    seed_sources(db_url, {scope: TEXTS})
    assert flush(db_url, scope) == ["accepted"]
    config = write_config(chaos.root / "config.toml", worker_timeout=120,
                          control=chaos.control)
    chaos.block(stage="evolve")
    recorder = CursorRecorder(db_url).start()
    sup = SupervisorProcess.supervisor(chaos, db_url, config)
    procs.append(sup)
    worker = wait_for(lambda: blocked_worker(chaos, sup), 120, "a Worker held in evolve")
    [before] = budget_rows(db_url)
    assert before[2] == 1 and before[3] >= 1  # attempt 1, its requests reserved
    os.kill(worker, signal.SIGKILL)
    wait_for(lambda: not is_alive(worker), 30, "the killed Worker to be gone")
    [kept] = budget_rows(db_url)
    assert kept[:5] == before[:5]  # the reservations stay: never refunded
    assert cursors(db_url).get(scope, 0) == 0  # nothing published
    chaos.unblock(stage="evolve")
    wait_for(lambda: cursors(db_url).get(scope) == len(TEXTS), 150,
             "the redispatched Window to be published")
    wait_for(lambda: not pending_rows(db_url), 60, "Pending to be handled")
    callers = {pid for pid, _stage in calls(chaos.control)}
    assert worker in callers and len(callers) == 2  # one more Worker did it, once
    sup.stop()
    recorder.check()
    counted = check_quiescent(db_url)
    assert counted["publications"] == {scope: 1}
    assert "worker_crash" in sup.output()


def _publish_next_window(db_url: str, config) -> int:
    """What a concurrent ``topic process`` does: publish the Window after the Cursor
    (deterministic provider, no Supervisor term); its end."""
    from powercontext.runtime import open_topic_processor

    async def go() -> int:
        processor = open_topic_processor(db_url, config=str(config))
        try:
            outcome = await processor.process_window("chaos:cas")
            assert outcome is not None
            return int(outcome.through)
        finally:
            await processor.service.close()

    return asyncio.run(go())


def test_cas_conflict_loop_waits_the_fixed_delay_between_dispatches(chaos, db_url, procs):
    scope, rounds = "chaos:cas", 4
    texts = [f"# CAS topic {i}\n\ncas note {i}" for i in range(rounds + 3)]
    seed_sources(db_url, {scope: texts})
    assert flush(db_url, scope) == ["accepted"]
    config = write_config(chaos.root / "config.toml", window_limit=1, worker_timeout=120,
                          control=chaos.control)
    plain = write_config(chaos.root / "plain.toml", window_limit=1,
                         provider="deterministic")
    chaos.block(stage="evolve")
    recorder = CursorRecorder(db_url).start()
    sup = SupervisorProcess.supervisor(chaos, db_url, config)
    procs.append(sup)
    # (Worker pid, the Window the rival published, when the Worker was let go, when the
    # next Worker was seen held)
    seen: list[tuple[int, int, float]] = []
    held_at: list[float] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def rival() -> None:
        try:
            while not stop.is_set() and len(seen) < rounds:
                worker = blocked_worker(chaos, sup)
                if worker is None or any(w == worker for w, _t, _r in seen):
                    time.sleep(0.02)
                    continue
                held_at.append(time.monotonic())
                through = _publish_next_window(db_url, plain)  # the Worker's Window
                chaos.release(worker)  # its commit must now lose: a control signal
                seen.append((worker, through, time.monotonic()))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=rival, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(seen) >= rounds or errors, 120, f"{rounds} conflict rounds")
    finally:
        stop.set()
        thread.join(60)
    assert not errors, errors
    assert [t for _w, t, _r in seen] == list(range(1, rounds + 1))
    # from letting a Worker go (it then loses its commit) to the next Worker held: at
    # least the fixed delay each time (no hot loop); and the loop went on at that pace,
    # not at the ordinary backoff (30 s, 60 s, ...), or the rounds would not all have
    # been seen within the wait above
    gaps = [held_at[i + 1] - seen[i][2] for i in range(rounds - 1)]
    assert all(g >= CONTROL_DELAY_SECONDS for g in gaps), gaps
    chaos.unblock(stage="evolve")
    wait_for(lambda: cursors(db_url).get(scope) == len(texts) and not pending_rows(db_url),
             180, "the rest of the Scope to be processed")
    sup.stop()
    recorder.check()
    counted = check_quiescent(db_url)
    assert counted["publications"] == {scope: len(texts)}  # each Window exactly once
