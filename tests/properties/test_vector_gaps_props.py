"""The count of head rows without a valid vector that each commit keeps
(``memory_vector_gaps``) equals a recount over every head row, after any sequence of
adds with and without vectors, revisions, deactivations and reactivations, and a new
process answers whether the projection is complete from it, as the recount would."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.adapters import vector_gaps
from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.service import MemoryService

MODEL = DeterministicEmbedding(16)

#: (operation, with vectors, which entry)
_OPS = st.lists(st.tuples(st.sampled_from(["add", "revise", "forget", "reactivate"]),
                          st.booleans(), st.integers(0, 50)), min_size=1, max_size=12)


def _counts(b: SQLiteMemoryBackend, ref: ArtifactRef) -> tuple[int | None, int]:
    """(the stored count as of ``ref``, a recount over the head rows), read in one
    transaction."""
    def read() -> tuple[int | None, int]:
        gaps = b._memory_tables.gaps
        assert gaps is not None
        stored = gaps.read(ref.artifact_id, ref.revision, b._completeness.generation())
        return stored, vector_gaps.missing(b.projection.vector_projection(ref.artifact_id),
                                           MODEL.profile)
    return asyncio.run(b._run(b._in_tx, False, read))


@settings(max_examples=25, deadline=None)
@given(_OPS)
def test_the_kept_count_equals_a_recount_after_every_commit(ops) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "g.db")
        b = SQLiteMemoryBackend(path, profile=MODEL.profile)
        with_vectors = MemoryService(b, embedding_model=MODEL)
        without = MemoryService(b)  # the same backend, no model: rows without a vector
        ref = asyncio.run(with_vectors.remember(
            None, entries=[MemoryEntryInput("fact", f"first {i}") for i in range(3)],
            mode="append"))
        assert ref is not None
        n = 0
        for op, vectors, pick in ops:
            svc = with_vectors if vectors else without
            rev = asyncio.run(svc.revision(ref))
            entries = rev.content.manifest.entries
            active = [e for e in entries if e.state == "active"]
            inactive = [e for e in entries if e.state == "inactive"]
            n += 1
            if op == "add" or (op == "revise" and not active):
                new = asyncio.run(svc.remember(ref, entries=[
                    MemoryEntryInput("fact", f"note {n} {pick}")], mode="append"))
            elif op == "revise":
                e = active[pick % len(active)]
                version = asyncio.run(b.load_entry_versions(ref, [e.entry_id]))[e.entry_id]
                new = asyncio.run(svc.remember(ref, entries=[
                    MemoryEntryInput("fact", f"revised {n} {pick}", entry=version)],
                    mode="append"))
            elif op == "forget" and active:
                new = asyncio.run(svc.forget(ref, [active[pick % len(active)].entry_id]))
            elif op == "reactivate" and inactive:
                new = asyncio.run(svc.reactivate(ref, [inactive[pick % len(inactive)].entry_id]))
            else:
                continue
            assert new is not None
            ref = new
            stored, recount = _counts(b, ref)
            assert stored == recount
        want_complete = _counts(b, ref)[1] == 0
        asyncio.run(b.close())
        fresh = SQLiteMemoryBackend(path, profile=MODEL.profile)
        try:
            caps = asyncio.run(fresh.capabilities())
            assert caps.vector
            complete = asyncio.run(fresh._run(
                fresh._in_tx, False, fresh._completeness.complete, ref.artifact_id,
                ref.revision))
            assert complete is want_complete
        finally:
            asyncio.run(fresh.close())
