"""Contract group: reverse evidence (``ports.SourceCitations``, the dashboard's
Evidence page; Memory RFC, "Sources", "Memory entry versions")."""

from __future__ import annotations

from powercontext.core.errors import InvalidInputError
from powercontext.core.models import MemoryEntryInput
from powercontext.core.topic.insight import SourceScope
from powercontext.ports import SourceCitations
from powercontext.testing.base import ContractBase, run


class CitationsContract(ContractBase):
    """``citing_entry_versions`` lists every stored entry version naming a Source
    (superseded ones too, of every Memory, never a look-alike id) and ``source_scope``
    its Scope journal row. Skipped where the backend does not declare
    ``ports.SourceCitations``."""

    def test_citing_entry_versions_lists_every_version_that_names_the_source(
            self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                reads: SourceCitations = self._require(svc.backend, SourceCitations)
                s = await self._scenario(svc)
                twin = self._src("src_agents_mdX", "a look-alike id")  # LIKE-wise close
                other = await svc.remember(None, sources=(twin, s["agents"]), entries=(
                    MemoryEntryInput("fact", "twin", sources=(twin,)),
                    MemoryEntryInput("fact", "agents elsewhere", sources=(s["agents"],))),
                    mode="append")
                assert other is not None
                current = await svc.entries(s["r1"])
                fact = next(v for v in current.values() if v.kind == "fact")
                r2 = await svc.remember(s["r1"], sources=(s["agents"],), entries=(
                    MemoryEntryInput("fact", fact.text + " (revised)", entry=fact,
                                     sources=(s["agents"],)),), mode="append")
                assert r2 is not None
                got = await reads.citing_entry_versions("src_agents_md")
                assert [v.entry_version_id for v in got] == sorted(
                    v.entry_version_id for v in got)
                assert len(got) == 5  # 3 in r1, the revision, 1 in the other Memory
                assert all(any(r.source_id == "src_agents_md" for r in v.sources)
                           for v in got)
                assert {v.memory_artifact_id for v in got} == {
                    s["r1"].artifact_id, other.artifact_id}
                assert [v.text for v in await reads.citing_entry_versions(
                    "src_agents_mdX")] == ["twin"]
                assert len(await reads.citing_entry_versions("src_agents_md", 2)) == 2
                assert await reads.citing_entry_versions("src_nobody") == ()
                for bad in ("bad id", ""):
                    try:
                        await reads.citing_entry_versions(bad)
                    except InvalidInputError:
                        pass
                    else:
                        raise AssertionError(f"{bad!r} was accepted")

        run(body())

    def test_source_scope_names_the_journal_row(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                reads: SourceCitations = self._require(svc.backend, SourceCitations)
                a, b = self._src("src_scoped_a", "a"), self._src("src_scoped_b", "b")
                await svc.backend.put_scoped_sources("repo:/kit", [a, b])
                await svc.backend.put_sources([self._src("src_loose", "no scope")])
                assert await reads.source_scope("src_scoped_b") == SourceScope(
                    "repo:/kit", 2, False)
                assert await reads.source_scope("src_loose") is None
                assert await reads.source_scope("src_never") is None

        run(body())
