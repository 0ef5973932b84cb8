"""The manifest packs (adapters/manifest_packs.py) on real SQLite: after any sequence of
remember / revise / forget / reactivate, the packs of a Memory are exactly its head's
canonical manifest item bytes, cut at their first entry ids; a new process reads the
head from them without reading the log's rows, and gets the Revision the writer
committed; packs that do not check (a flipped byte, a wrong first id or count) give
way to the log; a database an earlier release wrote (no pack tables) opens, reads the
same and gets its packs at its first write."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.memory_ops import write_sequence

from powercontext.adapters import manifest_log, manifest_packs
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core import canonical
from powercontext.core.manifest import view as manifest_view
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.service import MemoryService

ops = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(1, 6)),
    st.tuples(st.just("revise"), st.integers(0, 50)),
    st.tuples(st.just("forget"), st.integers(0, 50)),
    st.tuples(st.just("reactivate"), st.integers(0, 50)),
), min_size=1, max_size=12)


async def _write(svc: MemoryService, sequence: list[tuple[str, int]],
                 head: ArtifactRef | None, tag: str) -> ArtifactRef:
    head, _ = await write_sequence(svc, sequence, head, tag)
    assert head is not None
    return head


def _packs(path: Path, artifact_id: str) -> tuple[int | None, list[tuple[str, int, bytes]]]:
    conn = apsw.Connection(str(path))
    try:
        head = conn.execute("SELECT revision FROM memory_manifest_pack_heads "
                            "WHERE memory_artifact_id = ?", (artifact_id,)).fetchall()
        rows = conn.execute("SELECT first_entry_id, item_count, items FROM memory_manifest_packs "
                            "WHERE memory_artifact_id = ? ORDER BY first_entry_id",
                            (artifact_id,)).fetchall()
    finally:
        conn.close()
    return (head[0][0] if head else None), [(f, n, bytes(b)) for f, n, b in rows]


def _held(revision_bytes: bytes, packs: list[tuple[str, int, bytes]], rev) -> None:
    items = [canonical.manifest_entry_bytes(e) for e in rev.content.manifest.entries]
    assert b",".join(p[2] for p in packs) == b",".join(items)
    assert sum(p[1] for p in packs) == len(items)
    ids = [e.entry_id for e in rev.content.manifest.entries]
    at = 0
    for first, count, _ in packs:
        assert first == ids[at] and 1 <= count <= 2 * manifest_packs.PACK_ITEMS
        at += count


def _no_log_range(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("the head was read from the log's rows, not its packs")
    monkeypatch.setattr(manifest_log.ManifestLog, "range", refuse)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(sequence=ops, pack_items=st.integers(1, 4))
def test_the_packs_are_the_head_manifest_and_a_new_process_reads_the_head_from_them(
        sequence: list[tuple[str, int]], pack_items: int) -> None:
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setattr(manifest_packs, "PACK_ITEMS", pack_items)
        path = Path(tmp) / "m.db"

        async def run() -> None:
            svc = MemoryService(SQLiteMemoryBackend(str(path)))
            try:
                head = await _write(svc, sequence, None, "p")
                written = await svc.revision(head)
            finally:
                await svc.close()
            packed, packs = _packs(path, head.artifact_id)
            assert packed == head.revision
            _held(b"", packs, written)
            _no_log_range(mp)
            fresh = MemoryService(SQLiteMemoryBackend(str(path)))
            try:
                read = await fresh.revision(head)
                assert read.content_hash == written.content_hash
                assert canonical.content_bytes(read.content) == canonical.content_bytes(
                    written.content)
                # the first write of the new process, from the packs alone
                head2 = await fresh.remember(head, entries=[MemoryEntryInput("fact", "next")],
                                             mode="append")
                assert head2 is not None
                after = await fresh.revision(head2)
            finally:
                await fresh.close()
            _held(b"", _packs(path, head.artifact_id)[1], after)

        asyncio.run(run())


def _flip(path: Path, sql: str) -> None:
    conn = apsw.Connection(str(path))
    conn.execute(sql)
    conn.close()


@pytest.mark.parametrize("damage", [
    "UPDATE memory_manifest_packs SET items = CAST(replace(CAST(items AS TEXT), "
    "'active', 'inactive') AS BLOB)",
    "UPDATE memory_manifest_packs SET item_count = item_count + 1",
    "UPDATE memory_manifest_packs SET first_entry_id = first_entry_id || 'x'",
    "DELETE FROM memory_manifest_packs WHERE rowid = (SELECT MAX(rowid) FROM "
    "memory_manifest_packs)",
    # malformed rows (a pack's bytes stored as TEXT, a count that is no number) made
    # every read and write of the Memory fail with TypeError / a bad-input error
    "UPDATE memory_manifest_packs SET items = CAST(items AS TEXT)",
    "UPDATE memory_manifest_packs SET item_count = 'abc'",
])
def test_packs_that_do_not_check_give_way_to_the_log(tmp_path: Path, damage: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifest_packs, "PACK_ITEMS", 3)
    path = tmp_path / "m.db"

    async def run() -> None:
        svc = MemoryService(SQLiteMemoryBackend(str(path)))
        try:
            head = await _write(svc, [("add", 6), ("add", 5), ("forget", 3), ("add", 2)],
                                None, "d")
            written = await svc.revision(head)
        finally:
            await svc.close()
        _flip(path, damage)
        fresh = MemoryService(SQLiteMemoryBackend(str(path)))
        try:
            read = await fresh.revision(head)
            assert canonical.content_bytes(read.content) == canonical.content_bytes(
                written.content)
            head2 = await fresh.remember(head, entries=[MemoryEntryInput("fact", "d new")],
                                         mode="append")
            assert head2 is not None
            after = await fresh.revision(head2)
        finally:
            await fresh.close()
        # the write after the damage wrote whole packs again only where it could trust
        # them: a new process reads the same Revision either way
        again = MemoryService(SQLiteMemoryBackend(str(path)))
        try:
            reread = await again.revision(head2)
            assert reread.content_hash == after.content_hash
        finally:
            await again.close()

    asyncio.run(run())


def test_a_database_an_earlier_release_wrote_opens_reads_and_gets_packs_at_its_first_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"

    async def run() -> None:
        svc = MemoryService(SQLiteMemoryBackend(str(path)))
        try:
            head = await _write(svc, [("add", 5), ("add", 3), ("forget", 1)], None, "e")
            revisions = [await svc.revision(ArtifactRef(head.artifact_id, r))
                         for r in range(1, head.revision + 1)]
        finally:
            await svc.close()
        # what an earlier release leaves: no pack tables at all
        _flip(path, "DROP TABLE memory_manifest_packs")
        _flip(path, "DROP TABLE memory_manifest_pack_heads")
        fresh = MemoryService(SQLiteMemoryBackend(str(path)))
        try:
            for rev in revisions:
                read = await fresh.revision(rev.ref)
                assert canonical.content_bytes(read.content) == canonical.content_bytes(
                    rev.content)
            head2 = await fresh.remember(head, entries=[MemoryEntryInput("fact", "e new")],
                                         mode="append")
            assert head2 is not None
            after = await fresh.revision(head2)
        finally:
            await fresh.close()
        packed, packs = _packs(path, head.artifact_id)
        assert packed == head2.revision
        _held(b"", packs, after)
        _no_log_range(monkeypatch)
        again = MemoryService(SQLiteMemoryBackend(str(path)))
        try:
            assert (await again.revision(head2)).content_hash == after.content_hash
        finally:
            await again.close()

    asyncio.run(run())


def test_the_first_write_of_a_new_process_reads_no_log_row_of_the_head(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails on the release before the packs: it read the head from the log's rows."""
    path = tmp_path / "m.db"

    async def run() -> None:
        svc = MemoryService(SQLiteMemoryBackend(str(path)))
        try:
            head = await _write(svc, [("add", 6)] * 5, None, "f")
        finally:
            await svc.close()
        _no_log_range(monkeypatch)
        fresh = MemoryService(SQLiteMemoryBackend(str(path)))
        try:
            head2 = await fresh.remember(head, entries=[MemoryEntryInput("fact", "f new")],
                                         mode="append")
            assert head2 is not None and head2.revision == head.revision + 1
            assert len(manifest_view((await fresh.revision(head2)).content.manifest)) == 31
        finally:
            await fresh.close()

    asyncio.run(run())
