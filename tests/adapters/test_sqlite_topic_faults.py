"""Fault injection into every statement of a Topic publication (STYLE.md, "SQLite's own
testing"; Topic Memory RFC, "Storage, Head, and atomic activation": all CREATEs and
UPDATEs of a batch commit atomically, or nothing).

For each scenario we count the statements the publication runs (BEGIN IMMEDIATE to
COMMIT), then for every N make statement N fail (before it runs, and after it ran) on a
fresh copy of a hybrid database and check: every table, FTS5 and vec0 table holds
exactly its old rows, the FTS5 integrity-check is clean, vector rows equal the active
rows; and the same batch then publishes cleanly.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.statement_faults import Injected, StatementFaults

from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.core.topic.content import make_topic_id
from powercontext.core.topic.models import TopicPublication, TopicRef, TopicWrite

from .topic_helpers import (
    PROFILE,
    check_consistent,
    create,
    needs_topic_core,
    publish,
    run,
    seed,
    snapshot,
    source,
    update,
)

DETAIL = "\n\n".join(f"## Part {i}\n\nParagraph {i} about write-ahead logging and pages."
                     for i in range(6))
NEW_ID = make_topic_id(1_800_000_000_000, b"faults-new")
NEW_ID2 = make_topic_id(1_800_000_000_001, b"faults-new")

pytestmark = needs_topic_core



class FaultyTopicBackend(StatementFaults, SQLiteTopicBackend):
    """Counts the statements of one publication and fails statement ``fail_at``."""

    async def publish(self, publication: TopicPublication) -> Any:
        await self.open()  # the statements of the publication only
        self.armed, self.count = True, 0
        try:
            return await super().publish(publication)
        finally:
            self.armed = False


def _stable(snap: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    """The snapshot without the publication times (the database clock moves)."""
    out = dict(snap)
    out["pc_topic_memory_revision_publications"] = [
        r[:-1] for r in snap["pc_topic_memory_revision_publications"]]
    return out


Scenario = Callable[[Any, TopicRef], tuple[TopicWrite, ...]]


def _update(an: Any, ref: TopicRef) -> tuple[TopicWrite, ...]:
    return (update(an, ref, "Write-ahead log", "Updated summary", DETAIL + "\n\nNew tail.",
                   [source("seed"), source("more")], profile=PROFILE),)


def _create(an: Any, ref: TopicRef) -> tuple[TopicWrite, ...]:
    return (create(an, "Rollback journal", "Older mode", DETAIL, [source("more")],
                   profile=PROFILE, artifact_id=NEW_ID),)


def _batch(an: Any, ref: TopicRef) -> tuple[TopicWrite, ...]:
    return (*_update(an, ref), *_create(an, ref),
            create(an, "Checkpoints", "Copy back", "Short detail.", [source("seed")],
                   profile=PROFILE, artifact_id=NEW_ID2))


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TopicRef]:
    path = tmp_path_factory.mktemp("topic-faults") / "seed.db"

    async def go() -> TopicRef:
        b = SQLiteTopicBackend(str(path), profile=PROFILE)
        try:
            await seed(b, source("seed"), source("more"))
            an = await b.analyzer()
            [rev] = await publish(b, create(an, "Write-ahead log", "Readers and writers",
                                            DETAIL, [source("seed")], profile=PROFILE))
            return rev.ref
        finally:
            await b.close()
    ref = run(go())
    return path, ref


def _publish(b: SQLiteTopicBackend, writes: tuple[TopicWrite, ...]) -> Any:
    return run(b.publish(TopicPublication(writes)))


# (a lone CREATE is covered by the batch: its statements are a subset of it)
@pytest.mark.parametrize("scenario", [_update, _batch], ids=["update", "update+2-creates"])
def test_a_failing_statement_anywhere_in_a_publication_leaves_the_old_state(
        seeded: tuple[Path, TopicRef], tmp_path: Path, scenario: Scenario) -> None:
    seed_path, ref = seeded
    probe = tmp_path / "count.db"
    shutil.copy(seed_path, probe)
    b = FaultyTopicBackend(str(probe), profile=PROFILE)
    writes = scenario(run(b.analyzer()), ref)
    _publish(b, writes)
    total = b.count
    assert b.last_sql == "COMMIT"
    b.close_sync()
    check_consistent(probe)
    assert total >= 10, total
    before = snapshot(seed_path)
    published = _stable(snapshot(probe))
    for after in (False, True):
        for n in range(1, total + 1):
            path = tmp_path / f"f{n}{after}.db"
            shutil.copy(seed_path, path)
            b = FaultyTopicBackend(str(path), profile=PROFILE)
            b.fail_at, b.after = n, after
            with pytest.raises(Injected):
                _publish(b, writes)
            b.close_sync()
            check_consistent(path)
            if after and n == total:  # COMMIT ran, then the fault
                assert _stable(snapshot(path)) == published
                path.unlink()
                continue
            assert snapshot(path) == before, (n, after)
            # nothing left behind blocks the same batch
            b = FaultyTopicBackend(str(path), profile=PROFILE)
            _publish(b, writes)
            b.close_sync()
            check_consistent(path)
            assert _stable(snapshot(path)) == published, (n, after)
            path.unlink()
