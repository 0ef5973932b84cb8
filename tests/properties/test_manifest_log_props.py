"""The manifest log answers exactly what the Revisions say (adapters/manifest_log.py),
on real SQLite: after any sequence of remember / forget / reactivate, every Revision read
whole from the log in a new process (from its baseline, or stepped from any earlier
cached Revision) is the Revision the writer committed, and the items a search or an
expand reads lazily at any Revision are that Revision's manifest items. Memories an
earlier release wrote get their baseline at their first write by this release and read
the same before and after."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.memory_ops import write_sequence

from powercontext.adapters import manifest_log
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core import canonical
from powercontext.core.models import MemoryRevision
from powercontext.service import MemoryService

ops = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(1, 4)),
    st.tuples(st.just("revise"), st.integers(0, 50)),
    st.tuples(st.just("forget"), st.integers(0, 50)),
    st.tuples(st.just("reactivate"), st.integers(0, 50)),
), min_size=1, max_size=14)


def _same(a: MemoryRevision, b: MemoryRevision) -> None:
    assert a.ref == b.ref and a.content_hash == b.content_hash
    assert canonical.content_bytes(a.content) == canonical.content_bytes(b.content)
    assert a.content.manifest.entries == b.content.manifest.entries
    assert a.content.changes == b.content.changes and a.lineage == b.lineage


async def _check_reads(path: Path, revisions: list[MemoryRevision], ids: set[str]) -> None:
    by_revision = {r.ref.revision: r for r in revisions}
    # whole reads in new processes: from the baseline, and stepped from each earlier one
    for r, want in by_revision.items():
        fresh = SQLiteMemoryBackend(str(path))
        try:
            _same(await fresh.load_revision(want.ref), want)
            for later in [x for x in by_revision if x > r][:3]:
                _same(await fresh.load_revision(by_revision[later].ref), by_revision[later])
            log = fresh._manifest_log
            assert log is not None
            if await fresh._run(fresh._in_tx, False, log.covers, want.ref.artifact_id, r):
                items = {e.entry_id: e for e in want.content.manifest.entries}

                def lazy(r: int = r, log: manifest_log.ManifestLog = log,
                         artifact_id: str = want.ref.artifact_id) -> dict[str, object]:
                    found = manifest_log.LazyManifest(log, artifact_id, r)
                    found.prefetch(sorted(ids)[::2])
                    return {i: found.get(i) for i in [*ids, "mem_ent_none"]}

                got = await fresh._run(fresh._in_tx, False, lazy)
                assert got == {i: items.get(i) for i in [*ids, "mem_ent_none"]}
        finally:
            await fresh.close()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(ops, ops, st.booleans())
def test_every_revision_reads_from_the_log_as_it_was_written(first, second, earlier):
    """``earlier``: the first sequence is written by an earlier release (Revision rows
    holding their manifests), the second by this one (a baseline at its first write)."""
    async def body(path: Path) -> None:
        writer = SQLiteMemoryBackend(str(path))
        if earlier:
            writer._manifest_log = None
        svc = MemoryService(writer)
        try:
            head, revisions = await write_sequence(svc, first, None, "a")
        finally:
            await svc.close()
        svc = MemoryService(SQLiteMemoryBackend(str(path)))
        try:
            before = [await svc.revision(r.ref) for r in revisions]
            for a, b in zip(before, revisions, strict=True):
                _same(a, b)
            head, more = await write_sequence(svc, second, head, "b")
            revisions += more
        finally:
            await svc.close()
        ids = {e.entry_id for r in revisions for e in r.content.manifest.entries}
        await _check_reads(path, revisions, ids)

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(body(Path(tmp) / "log.db"))
