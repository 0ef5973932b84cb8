"""Fault injection into every statement of a GUARDED Topic publication (STYLE.md,
"SQLite's own testing"; Topic Memory RFC, "Storage, Head, and atomic activation": the
Window's CREATEs and UPDATEs commit atomically with the Cursor, and "Pending dirty set",
"Cumulative work and evidence ceilings").

Two Windows of one Scope, each a CREATE + UPDATE batch with every guard: the first
(Cursor 0 -> 3: the Cursor row inserted, Pending deleted) and a later one (Cursor 1 ->
2: Cursor CAS, Pending kept with its handled generation raised). For every statement N
of the publication (BEGIN IMMEDIATE to COMMIT), failing before it runs and after it
ran, on a fresh copy of the database: every Topic table, FTS5 and vec0 table, the
Cursor, Pending, the budget row and the Scope journal hold exactly their old rows, the
indexes are consistent, and the same publication then commits.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from support.statement_faults import Injected, StatementFaults

from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.core.topic.content import make_topic_id
from powercontext.core.topic.models import PublicationGuards, TopicPublication, TopicRef
from powercontext.core.topic.processing import (
    BINDING,
    AttemptGrant,
    BudgetRelease,
    CursorAdvance,
    PendingUpdate,
)

from .topic_helpers import (
    PROFILE,
    SCOPE,
    check_consistent,
    connect,
    create,
    needs_topic_core,
    publish,
    run,
    snapshot,
    source,
    update,
)

pytestmark = needs_topic_core

PROCESSING_TABLES = ("pc_source_scope_journal", "pc_artifact_processing_pending",
                     "pc_source_cursors", "pc_topic_memory_work_budgets")
DETAIL = "\n\n".join(f"## Part {i}\n\nParagraph {i} about cursors and pending rows."
                     for i in range(4))


class FaultyTopicBackend(StatementFaults, SQLiteTopicBackend):
    """Counts the statements of one publication and fails statement ``fail_at``."""

    async def publish(self, publication: TopicPublication) -> Any:
        await self.open()  # the statements of the publication only
        self.armed, self.count = True, 0
        try:
            return await super().publish(publication)
        finally:
            self.armed = False


def full_snapshot(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    out = snapshot(path)
    conn = connect(path)
    try:
        for t in PROCESSING_TABLES:
            out[t] = conn.execute(f'SELECT * FROM "{t}" ORDER BY 1, 2, 3').fetchall()
    finally:
        conn.close()
    return out


def _stable(snap: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    out = dict(snap)
    out["pc_topic_memory_revision_publications"] = [
        r[:-1] for r in snap["pc_topic_memory_revision_publications"]]
    return out


def _guards(grant: AttemptGrant, through: int, claimed: int | None) -> PublicationGuards:
    return PublicationGuards(
        cursor=CursorAdvance(BINDING, grant.scope_id, grant.source_after, through),
        pending=PendingUpdate(claimed),
        budget=BudgetRelease(grant.attempt_id, grant.source_after))


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two database files: ``first`` (Cursor 0, Pending through 3 flushed once, an
    attempt with a reservation) and ``later`` (Cursor 1 after a NOOP Window, a new
    attempt after it), and the batch each publishes."""
    root = tmp_path_factory.mktemp("guard-faults")
    first, later = root / "first.db", root / "later.db"
    srcs = [source(f"g{i}") for i in range(1, 4)]

    async def go() -> dict[str, Any]:
        b = SQLiteTopicBackend(str(first), profile=PROFILE)
        try:
            await b.put_scoped_sources(SCOPE, srcs)
            an = await b.analyzer()
            [old] = await publish(b, create(an, "Cursor", "Where processing is", DETAIL,
                                            srcs[:1], profile=PROFILE))
            assert await b.flush(SCOPE) == "accepted"
            g0 = await b.begin_attempt(SCOPE, 0)
            await b.reserve(g0, 1, 125_000, through=2)
        finally:
            await b.close()
        shutil.copy(first, later)
        b = SQLiteTopicBackend(str(later), profile=PROFILE)
        try:
            await b.publish(TopicPublication((), _guards(g0, 1, None)))
            g1 = await b.begin_attempt(SCOPE, 1)
            await b.reserve(g1, 1, 125_000, through=2)
        finally:
            await b.close()

        def batch(ref: TopicRef) -> tuple[Any, ...]:
            return (update(an, ref, "Cursor", "Updated", DETAIL + "\n\nTail.", srcs[:2],
                           profile=PROFILE),
                    create(an, "Pending", "The dirty set", DETAIL, srcs[1:2], profile=PROFILE,
                           artifact_id=make_topic_id(1_800_000_000_100, b"guardfault")))
        return {
            "first": (first, TopicPublication(batch(old.ref), _guards(g0, 3, 1))),
            "later": (later, TopicPublication(batch(old.ref), _guards(g1, 2, 1))),
        }
    return run(go())  # type: ignore[no-any-return]


@pytest.mark.parametrize("window", ["first", "later"],
                         ids=["cursor-insert+pending-delete", "cursor-cas+pending-kept"])
def test_a_failing_statement_anywhere_in_a_guarded_publication_changes_nothing(
        seeded: dict[str, Any], tmp_path: Path, window: str) -> None:
    seed_path, publication = seeded[window]
    probe = tmp_path / "count.db"
    shutil.copy(seed_path, probe)
    b = FaultyTopicBackend(str(probe), profile=PROFILE)
    run(b.publish(publication))
    total = b.count
    assert b.last_sql == "COMMIT"
    b.close_sync()
    check_consistent(probe)
    before = full_snapshot(seed_path)
    published = _stable(full_snapshot(probe))
    through = publication.guards.cursor.through
    assert published["pc_source_cursors"] == [(BINDING, SCOPE, through)]
    assert published["pc_topic_memory_work_budgets"] == []
    if window == "first":
        assert published["pc_artifact_processing_pending"] == []
    else:
        assert published["pc_artifact_processing_pending"] == [(BINDING, SCOPE, 3, 1, 1)]
    assert before["pc_topic_memory_work_budgets"] != []
    for after in (False, True):
        for n in range(1, total + 1):
            path = tmp_path / f"f{n}{after}.db"
            shutil.copy(seed_path, path)
            b = FaultyTopicBackend(str(path), profile=PROFILE)
            b.fail_at, b.after = n, after
            with pytest.raises(Injected):
                run(b.publish(publication))
            b.close_sync()
            check_consistent(path)
            if after and n == total:  # COMMIT ran, then the fault
                assert _stable(full_snapshot(path)) == published
                path.unlink()
                continue
            assert full_snapshot(path) == before, (n, after)
            b = FaultyTopicBackend(str(path), profile=PROFILE)
            run(b.publish(publication))  # nothing left behind blocks the same Window
            b.close_sync()
            assert _stable(full_snapshot(path)) == published, (n, after)
            path.unlink()
