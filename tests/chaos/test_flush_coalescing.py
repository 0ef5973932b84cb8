"""1,000 concurrent flushes coalesce (Topic Memory RFC, "Automatic processing and
explicit flush": "Concurrent flush calls coalesce into the same Pending record"): eight
processes flush one Scope 125 times each, all at once; the result is ONE Pending row whose
flush generation counts every accepted flush, covering the Source head; then (with the
Supervisor) one wave processes it."""

from __future__ import annotations

import pytest
from support.chaos import concurrent_flushes, seed_sources
from support.chaos_check import pending_rows

pytestmark = pytest.mark.chaos

SCOPE = "chaos:flush"
TEXTS = [f"# Flush topic {i % 2}\n\nflush note {i}" for i in range(6)]


def test_a_thousand_concurrent_flushes_make_one_pending_row(db_url):
    seed_sources(db_url, {SCOPE: TEXTS})
    statuses = concurrent_flushes(db_url, SCOPE, 8, 125)
    assert len(statuses) == 1_000
    assert set(statuses) == {"accepted"}  # the Cursor (0) never covers the head (6)
    rows = pending_rows(db_url)
    assert rows == [("topic-memory-source-window", SCOPE, 6, 1_000, 0)]
