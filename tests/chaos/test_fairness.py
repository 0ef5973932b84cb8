"""A hot Scope (10,000 Sources, 1,000 Windows) flushed with 100 small Scopes: the small
ones finish first (Topic Memory RFC, "In-memory queue and Workers": a key with more work
returns to the back of the queue, so a hot Scope cannot starve other Scopes). The test
stops once every small Scope is covered -- the hot one is left unfinished on purpose
(the quiescence checker then leaves its Pending and Cursor out and checks everything
else)."""

from __future__ import annotations

import pytest
from support.chaos import SupervisorProcess, flush, seed_sources, wait_for, write_config
from support.chaos_check import CursorRecorder, check_quiescent, cursors

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.subprocess,
              pytest.mark.usefixtures("needs_supervisor")]

HOT = "chaos:hot"
SMALL = [f"chaos:small-{i:03d}" for i in range(100)]


def test_a_hot_scope_does_not_starve_a_hundred_small_ones(chaos, sqlite_url, procs):
    seed_sources(sqlite_url, {HOT: [f"# Hot {i % 50}\n\nhot note {i}" for i in range(10_000)]})
    seed_sources(sqlite_url, {s: [f"# Small {s}\n\nsmall note {i} of {s}" for i in range(2)]
                              for s in SMALL})
    assert set(flush(sqlite_url, HOT, *SMALL)) == {"accepted"}
    config = write_config(chaos.root / "config.toml", workers=2, control=chaos.control)
    recorder = CursorRecorder(sqlite_url, interval=0.5).start()
    sup = SupervisorProcess.supervisor(chaos, sqlite_url, config)
    procs.append(sup)

    def small_done() -> dict[str, int] | None:
        sup.check_alive()
        now = cursors(sqlite_url)
        return now if all(now.get(s) == 2 for s in SMALL) else None

    at_end = wait_for(small_done, 400, "every small Scope to be covered", interval=0.2)
    sup.stop()
    hot = cursors(sqlite_url).get(HOT, 0)
    # round robin: the hot Scope got about one Window per pass over the queue, not its
    # 1,000 Windows first; and it was not starved either
    assert 0 < at_end.get(HOT, 0) <= 100, at_end.get(HOT)
    assert hot < 10_000
    recorder.check()
    counted = check_quiescent(sqlite_url, unfinished=[HOT])
    assert all(counted["publications"][s] == 1 for s in SMALL)
