"""The Supervisor lease on a real seekdb (Topic Memory RFC, "Leader, term, and
fencing"): candidates racing from their own connections get exactly one Leader, an
expired lease is taken over with generation + 1 and the old term's fenced calls are
refused, and a takeover waits for an in-flight fenced transaction (the lease row is
read FOR UPDATE first)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator

import pytest
from oceanbase_server import fresh_database, seekdb_available

from powercontext.adapters.oceanbase import OceanBaseTopicBackend
from powercontext.core.errors import TopicProcessingError
from powercontext.core.topic.supervision import CODE_TERM_LOST

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]

CANDIDATES = 4


@pytest.fixture
def db_url(seekdb_url: str) -> Iterator[str]:
    with fresh_database(seekdb_url, "pc_supervision") as url:
        yield url


def _race(url: str, rounds: int) -> list[list[object]]:
    """``rounds`` races of CANDIDATES threads, each on its own backend (connection),
    released together by a barrier; after each round the Leader releases."""
    backends = [OceanBaseTopicBackend(url) for _ in range(CANDIDATES)]
    for b in backends:
        asyncio.run(b.open())
    results: list[list[object]] = []
    try:
        for _ in range(rounds):
            barrier = threading.Barrier(CANDIDATES)
            got: list[object] = [None] * CANDIDATES

            def candidate(i: int, barrier: threading.Barrier = barrier,
                          got: list[object] = got) -> None:
                holder = str(uuid.uuid4())
                barrier.wait()
                got[i] = asyncio.run(backends[i].acquire_lease(holder, 30.0))

            threads = [threading.Thread(target=candidate, args=(i,))
                       for i in range(CANDIDATES)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            results.append(got)
            leader = next(t for t in got if t is not None)
            asyncio.run(backends[0].release_lease(leader))  # type: ignore[arg-type]
    finally:
        for b in backends:
            asyncio.run(b.close())
    return results


def test_candidates_racing_from_their_own_connections_get_exactly_one_leader(db_url):
    results = _race(db_url, rounds=4)
    generations = []
    for got in results:
        leaders = [t for t in got if t is not None]
        assert len(leaders) == 1, got
        generations.append(leaders[0].generation)  # type: ignore[attr-defined]
    # the first round inserts generation 1; every later round is a takeover
    assert generations == list(range(1, len(results) + 1))


def test_an_expired_lease_is_taken_over_and_the_old_term_is_refused(db_url):
    async def go():
        a, b = OceanBaseTopicBackend(db_url), OceanBaseTopicBackend(db_url)
        try:
            old = await a.acquire_lease(str(uuid.uuid4()), 0.3)
            assert old is not None
            rival = str(uuid.uuid4())
            new = None
            for _ in range(200):  # until the database clock passes the short lease
                new = await b.acquire_lease(rival, 30.0)
                if new is not None:
                    break
                await asyncio.sleep(0.05)
            assert new is not None and new.generation == old.generation + 1
            assert not await a.renew_lease(old, 30.0)
            with pytest.raises(TopicProcessingError) as info:
                await a.begin_attempt("project:x", 0, supervisor=old)
            assert info.value.code == CODE_TERM_LOST and not info.value.terminal
            assert await b.renew_lease(new, 30.0)
        finally:
            await a.close()
            await b.close()
    asyncio.run(go())


def test_a_takeover_waits_for_the_fenced_transaction_holding_the_lease_row(db_url):
    """The fence's FOR UPDATE: a fenced transaction that read the lease row first keeps
    a rival's takeover waiting until it commits; the takeover then wins and the old
    term is refused from there on."""
    a, b = OceanBaseTopicBackend(db_url), OceanBaseTopicBackend(db_url)
    asyncio.run(a.open())
    asyncio.run(b.open())
    try:
        old = asyncio.run(a.acquire_lease(str(uuid.uuid4()), 30.0))
        assert old is not None
        asyncio.run(a.release_lease(old))
        # a's lease is expired now, but a fenced read of the row by a's connection
        # would refuse; hold the row lock with a plain transaction instead
        a._begin_sync(True)
        a.ob_engine.rows("SELECT holder_id FROM pc_artifact_processing_leases "
               "WHERE supervisor_group = 'global' FOR UPDATE")
        order: list[str] = []
        done = threading.Event()

        def rival() -> None:
            got = asyncio.run(b.acquire_lease(str(uuid.uuid4()), 30.0))
            order.append(f"acquired:{got is not None}")
            done.set()

        t = threading.Thread(target=rival)
        t.start()
        assert not done.wait(1.0)  # still waiting for the row lock
        order.append("commit")
        a._commit_sync()
        t.join()
        assert order == ["commit", "acquired:True"]
    finally:
        asyncio.run(a.close())
        asyncio.run(b.close())
