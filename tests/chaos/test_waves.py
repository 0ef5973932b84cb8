"""Waves (Topic Memory RFC, "Pending dirty set", "Automatic scheduling"):

* flushes during a wave give exactly ONE successor wave (from the new snapshot), never
  one per flush; with or without a new Source every flush ends handled (Pending
  deleted), also after a restart;
* 1,000 concurrent flushes (8 processes x 125, at once) are one Pending row whose flush
  generation counts every one, and then one wave;
* a Supervisor stopped between the last Window of an automatic wave and the wave's
  completion (SIGSTOP while the Worker publishes, then kill -9): the replacement starts
  a new wave that finds every target covered, completes it, and publishes nothing twice.

Waves and dispatches are read from the Supervisor's structured log lines (``worker
dispatched ... mode=... target=...``, ``automatic wave started|completed``). Each test
ends with the quiescence checker."""

from __future__ import annotations

import signal
import time

import pytest
from support.chaos import (
    SupervisorProcess,
    blocked_worker,
    concurrent_flushes,
    events,
    flush,
    is_alive,
    seed_sources,
    wait_for,
    write_config,
)
from support.chaos_check import (
    CursorRecorder,
    check_quiescent,
    cursors,
    opened,
    pending_rows,
    publication_count,
)

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.subprocess,
              pytest.mark.usefixtures("needs_supervisor")]


def dispatches(sup: SupervisorProcess, scope: str) -> list[tuple[str, int]]:
    return [(e["mode"], e["target"]) for e in events(sup.output(), "worker dispatched")
            if e.get("scope_id") == scope]


def covered(db_url: str, scope: str, head: int) -> bool:
    return cursors(db_url).get(scope) == head and not pending_rows(db_url)


def test_flushes_during_a_wave_give_exactly_one_successor_wave(chaos, db_url, procs):
    scope = "chaos:successor"
    seed_sources(db_url, {scope: [f"# Wave {i % 2}\n\nfirst wave note {i}" for i in range(4)]})
    assert flush(db_url, scope) == ["accepted"]
    config = write_config(chaos.root / "config.toml", control=chaos.control)
    chaos.block(stage="evolve")
    recorder = CursorRecorder(db_url).start()
    sup = SupervisorProcess.supervisor(chaos, db_url, config)
    procs.append(sup)
    wait_for(lambda: blocked_worker(chaos, sup), 120, "the first wave's Worker")
    for i in range(3):  # during the wave: a new Source and a flush, three times
        seed_sources(db_url, {scope: [f"# Wave 2\n\nduring the wave {i}"]})
        assert flush(db_url, scope) == ["accepted"]
    assert pending_rows(db_url)[0][2:] == (7, 4, 0)
    chaos.unblock(stage="evolve")
    wait_for(lambda: covered(db_url, scope, 7), 120, "the successor wave to finish")
    sup.stop()
    # wave 1 froze target 4 (generation 1); ONE successor froze the new snapshot (7,
    # generation 4); each was one Window, dispatched once
    assert dispatches(sup, scope) == [("explicit", 4), ("explicit", 7)]
    recorder.check()
    assert check_quiescent(db_url)["publications"] == {scope: 2}


@pytest.mark.parametrize("new_source", [False, True], ids=["no-new-source", "new-source"])
def test_two_flushes_a_second_apart_during_one_source_windows_end_handled(
        chaos, db_url, procs, new_source):
    """One-Source Windows on 20 Sources and a second flush one second into the wave,
    with and without a new Source: every flush ends handled (Pending deleted), also
    across a restart, and a further flush is ``idle``. Without a new Source the
    successor wave has no Window to publish: it handles the flush without a Worker."""
    scope = "chaos:twoflush"
    seed_sources(db_url, {scope: [f"# Note {i % 3}\n\none-source window note {i}"
                                  for i in range(20)]})
    assert flush(db_url, scope) == ["accepted"]
    config = write_config(chaos.root / "config.toml", control=chaos.control, window_limit=1)
    chaos.block(stage="evolve")
    recorder = CursorRecorder(db_url).start()
    sup = SupervisorProcess.supervisor(chaos, db_url, config)
    procs.append(sup)
    wait_for(lambda: blocked_worker(chaos, sup), 120, "the first Window's Worker")
    time.sleep(1.0)
    if new_source:
        seed_sources(db_url, {scope: ["# Note 9\n\na note written during the wave"]})
    assert flush(db_url, scope) == ["accepted"]
    chaos.unblock(stage="evolve")
    head = 21 if new_source else 20
    wait_for(lambda: covered(db_url, scope, head), 180, "every flush handled")
    sup.stop()
    first_wave = [("explicit", 20)] * 20
    assert dispatches(sup, scope) == first_wave + ([("explicit", 21)] if new_source else [])
    again = SupervisorProcess.supervisor(chaos, db_url, config, name="again")
    procs.append(again)
    time.sleep(2.0)  # several polls of a restarted Supervisor: nothing to do
    again.stop()
    assert covered(db_url, scope, head) and dispatches(again, scope) == []
    assert flush(db_url, scope) == ["idle"]
    recorder.check()
    assert check_quiescent(db_url)["publications"] == {scope: head}


def test_a_thousand_concurrent_flushes_are_one_wave(chaos, db_url, procs):
    scope = "chaos:thousand"
    seed_sources(db_url, {scope: [f"# Flush {i % 2}\n\nthousand note {i}" for i in range(6)]})
    assert set(concurrent_flushes(db_url, scope, 8, 125)) == {"accepted"}
    assert pending_rows(db_url) == [("topic-memory-source-window", scope, 6, 1_000, 0)]
    config = write_config(chaos.root / "config.toml", control=chaos.control)
    sup = SupervisorProcess.supervisor(chaos, db_url, config)
    procs.append(sup)
    wait_for(lambda: covered(db_url, scope, 6), 120, "the wave to finish")
    sup.stop()
    assert dispatches(sup, scope) == [("explicit", 6)]
    assert check_quiescent(db_url)["publications"] == {scope: 1}


def _completed_at(db_url: str):
    with opened(db_url) as db:
        if not db.has_table("pc_artifact_processing_binding_states"):
            return None
        rows = db.rows("SELECT last_auto_wave_completed_at FROM "
                       "pc_artifact_processing_binding_states")
    return rows[0][0] if rows else None


def test_a_restart_before_the_wave_completes_starts_a_new_wave_and_publishes_nothing_twice(
        chaos, db_url, procs):
    scope = "chaos:auto"
    texts = [f"# Auto {i % 2}\n\nautomatic note {i}" for i in range(5)]
    seed_sources(db_url, {scope: texts})  # ordinary Pending: no flush
    config = write_config(chaos.root / "config.toml", auto_interval=3600, lease=3,
                          control=chaos.control)
    chaos.block(stage="evolve")
    recorder = CursorRecorder(db_url).start()
    first = SupervisorProcess.supervisor(chaos, db_url, config, name="first")
    procs.append(first)
    worker = wait_for(lambda: blocked_worker(chaos, first), 120, "the automatic wave's Worker")
    assert dispatches(first, scope) == [("auto", 5)]
    first.signal(signal.SIGSTOP)  # it cannot see the Worker's result nor complete the wave
    chaos.unblock(stage="evolve")
    wait_for(lambda: not is_alive(worker) and cursors(db_url).get(scope) == 5, 120,
             "the last Window to be published")
    # the Cursor covers the target, but the wave is not complete: Pending stays
    assert [r[1] for r in pending_rows(db_url)] == [scope]
    assert _completed_at(db_url) is None
    published = publication_count(db_url)
    first.kill()
    second = SupervisorProcess.supervisor(chaos, db_url, config, name="second")
    procs.append(second)
    wait_for(lambda: not pending_rows(db_url) and _completed_at(db_url) is not None, 120,
             "the new wave to complete")
    second.stop()
    assert events(second.output(), "automatic wave started")
    assert events(second.output(), "automatic wave completed")
    assert publication_count(db_url) == published  # nothing published twice
    assert not [d for d in dispatches(second, scope) if d[0] != "auto"]
    recorder.check()
    assert check_quiescent(db_url)["publications"] == {scope: 1}
