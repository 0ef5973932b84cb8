"""Contract group: changes, expand and citations."""

from __future__ import annotations

import pytest

from powercontext.core.errors import ArtifactNotFoundError, InvalidCitationError
from powercontext.core.models import ArtifactRef, HandoffCitation, MemoryEntryInput
from powercontext.testing.base import ContractBase, run


class HistoryContract(ContractBase):
    """changes(), expand() and Handoff citations (Memory RFC, "changes()", "expand()")."""

    # -- changes / expand / citations --------------------------------------------------------

    def test_changes_semantics(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = (await self._scenario(svc))["r1"]
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "second"),))
                r3 = await svc.remember(r2, entries=(MemoryEntryInput("fact", "third"),))
                full = await svc.changes(r3, 0)
                assert [c.memory_ref.revision for c in full] == [1, 2, 3]
                assert [c.memory_ref.revision for c in await svc.changes(r3, 1)] == [2, 3]
                assert [c.memory_ref.revision for c in await svc.changes(r3)] == [3]
                assert await svc.changes(r3, 3) == ()
                assert [c.memory_ref.revision for c in await svc.changes(r2, 0)] == [1, 2]
                with pytest.raises(ValueError):
                    await svc.changes(r3, -1)
                with pytest.raises(ValueError):
                    await svc.changes(r2, 3)
                with pytest.raises(ArtifactNotFoundError):
                    await svc.changes(ArtifactRef(r1.artifact_id, 9), 0)
                with pytest.raises(ArtifactNotFoundError):
                    await svc.changes(ArtifactRef("mem_art_missing", 1), 0)

        run(body())

    def test_expand_and_citations(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = (await self._scenario(svc))["r1"]
                hits = (await svc.search("make test review", (r1,), mode="fts")).hits
                assert hits
                (v,) = await svc.expand(hits[:1])
                assert (v.entry_id, v.entry_version_id, v.text) == (
                    hits[0].entry_id,
                    hits[0].entry_version_id,
                    hits[0].text,
                )
                cite = svc.cite(hits[0])
                # the Memory moves on; the old citation still validates
                r2 = await svc.remember(
                    r1,
                    entries=(MemoryEntryInput(v.kind, v.text + " Also run make lint.", entry=v),),
                )
                assert r2.revision == 2
                assert (await svc.validate_citation(cite)) == v
                for bad in (
                    HandoffCitation(r2, cite.entry_id, cite.entry_version_id),
                    HandoffCitation(cite.memory_ref, cite.entry_id, "mem_ver_forged"),
                    HandoffCitation(
                        ArtifactRef(r1.artifact_id, 7), cite.entry_id, cite.entry_version_id
                    ),
                    HandoffCitation(
                        ArtifactRef("mem_art_other", 1), cite.entry_id, cite.entry_version_id
                    ),
                ):
                    with pytest.raises(InvalidCitationError):
                        await svc.validate_citation(bad)

        run(body())

    def test_artifact_evidence_and_citations_are_checked_exactly(self, memory_backend_factory):
        from powercontext.core.models import Artifact

        async def body():
            async with self._service(memory_backend_factory) as svc:
                ref = await svc.remember(None, entries=(MemoryEntryInput("fact", "alpha"),))
                rev = await svc.revision(ref)
                good = Artifact(ref, "memory", rev.content_hash)
                other = await svc.remember(None, artifacts=(good,), entries=(
                    MemoryEntryInput("fact", "cites alpha", artifacts=(good,)),))
                assert other is not None
                for bad in (Artifact(ref, "handoff", rev.content_hash),
                            Artifact(ref, "memory", "0" * 64)):
                    with pytest.raises(ValueError, match="artifacts"):
                        await svc.remember(other, artifacts=(bad,), entries=(
                            MemoryEntryInput("fact", "forged", artifacts=(bad,)),))
                (v,) = (await svc.entries(ref)).values()
                for revision in (True, 1.0, "1", None):
                    with pytest.raises(InvalidCitationError):
                        await svc.validate_citation(HandoffCitation(
                            ArtifactRef(ref.artifact_id, revision),  # type: ignore[arg-type]
                            v.entry_id,
                            v.entry_version_id))
        run(body())

