"""A fault at every statement of a GUARDED publication on seekdb (Topic Memory RFC,
"Storage, Head, and atomic activation": the Window's Topics commit atomically with the
Cursor; "Pending dirty set"; "Cumulative work and evidence ceilings"): every Topic
table, the Cursor, Pending and the budget row stay as before, then the same Window
commits (Cursor CAS, Pending handled generation raised, budget row deleted)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from oceanbase_server import fresh_database, seekdb_available
from support.topic_ob import make_write, run, sql

from powercontext.core import canonical
from powercontext.core.errors import BackendError
from powercontext.core.models import SourceRef
from powercontext.core.topic.models import PublicationGuards, TopicPublication
from powercontext.core.topic.processing import (
    BINDING,
    BudgetRelease,
    CursorAdvance,
    PendingUpdate,
)

from .test_oceanbase_topic_faults import TABLES, _FailAt

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]
SCOPE = "project:guards"
PROCESSING = ("pc_source_scope_journal", "pc_artifact_processing_pending",
              "pc_source_cursors", "pc_topic_memory_work_budgets")


@pytest.fixture
def db_url(seekdb_url: str) -> Iterator[str]:
    with fresh_database(seekdb_url, "pc_guard_faults") as url:
        yield url


def _state(url: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for table in (*TABLES, *PROCESSING):
        cols = [r[0] for r in sql(url, f"SHOW COLUMNS FROM {table}") if r[0] != "embedding"]
        out[table] = sql(url, f"SELECT {', '.join(cols)} FROM {table} ORDER BY 1, 2")
    return out


def test_a_fault_at_each_statement_of_a_guarded_publication_changes_nothing(db_url):
    b = _FailAt(db_url)
    srcs = [canonical.make_source(f"gsrc_{i}", "note", f"guard evidence {i}")
            for i in range(1, 4)]
    refs = tuple(sorted(SourceRef(s.source_id, s.content_hash) for s in srcs))

    async def setup():
        await b.put_scoped_sources(SCOPE, srcs)
        old = await make_write(b, SCOPE, "Cursor", "Where processing is", "First.",
                               srcs=refs[:1])
        await b.publish(TopicPublication((old,)))
        assert await b.flush(SCOPE) == "accepted"
        g0 = await b.begin_attempt(SCOPE, 0)
        await b.publish(TopicPublication((), PublicationGuards(  # a NOOP Window 0 -> 1
            cursor=CursorAdvance(BINDING, SCOPE, 0, 1), pending=PendingUpdate(None),
            budget=BudgetRelease(g0.attempt_id, 0))))
        g1 = await b.begin_attempt(SCOPE, 1)
        await b.reserve(g1, 1, 125_000, through=2)
        upd = await make_write(b, SCOPE, "Cursor", "Updated", "Second.", base=old.ref,
                               srcs=refs[:2])
        new = await make_write(b, SCOPE, "Pending", "The dirty set", "Rows.", srcs=refs[1:2])
        return TopicPublication((upd, new), PublicationGuards(
            cursor=CursorAdvance(BINDING, SCOPE, 1, 2), pending=PendingUpdate(1),
            budget=BudgetRelease(g1.attempt_id, 1)))

    publication = run(setup())
    before = _state(db_url)
    assert before["pc_topic_memory_work_budgets"] != []
    n, failures = 1, 0
    while True:
        b.counting, b.seen, b.fail_at = True, 0, n
        try:
            run(b.publish(publication))
        except BackendError as exc:
            assert "injected fault" in str(exc)
            failures += 1
        else:
            break
        finally:
            b.counting = False
        assert _state(db_url) == before, f"a fault at statement {n} left rows behind"
        n += 1
    assert failures == b.seen >= 15
    after = _state(db_url)
    scope = SCOPE.encode()  # scope_id is VARBINARY on OceanBase (compared exactly)
    assert after["pc_source_cursors"] == [(BINDING, scope, 2)]
    assert after["pc_artifact_processing_pending"] == [(BINDING, scope, 3, 1, 1)]
    assert after["pc_topic_memory_work_budgets"] == []
    assert len(after["artifact_revisions"]) == len(before["artifact_revisions"]) + 2
    run(b.close())
