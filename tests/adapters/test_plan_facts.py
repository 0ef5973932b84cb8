"""The facts a real database hands to :func:`powercontext.core.verify.verify`: what
``MemoryCommit.plan_facts_sync`` (the Memory backend's unit of work) reads inside the
write transaction on the in-memory fake, SQLite and seekdb (Memory RFC, "Concurrency
and transactions": "reload and validate Source/Artifact evidence"). The rules
themselves are property-tested without a database in
tests/properties/test_verify_props.py."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from oceanbase_server import fresh_database, seekdb_available
from support.fakes import InMemoryBackend

from powercontext.core import canonical, planning, verify
from powercontext.core.models import Artifact, ArtifactRef, MemoryEntryInput, SourceRef
from powercontext.core.plan import MemoryPlan
from powercontext.testing import run


class _Ids:
    def __init__(self) -> None:
        self._n = itertools.count(1)

    def __call__(self, n: int) -> bytes:
        return next(self._n).to_bytes(n, "big")


@pytest.fixture(params=[
    "memory", "sqlite",
    pytest.param("oceanbase", marks=[
        pytest.mark.oceanbase,
        pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                           "POWERCONTEXT_TEST_OCEANBASE_URL")]),
])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemoryBackend()
    elif request.param == "sqlite":
        from powercontext.adapters.sqlite import SQLiteMemoryBackend

        yield SQLiteMemoryBackend(str(tmp_path / "memory.db"))
    else:
        from powercontext.adapters.oceanbase import OceanBaseMemoryBackend

        server = request.getfixturevalue("seekdb_url")
        with fresh_database(server, "pc_facts") as url:
            yield OceanBaseMemoryBackend(url)


def test_the_adapter_reads_every_fact_verify_needs_in_the_write_transaction(backend):
    from powercontext.service import MemoryService

    async def body() -> None:
        svc = MemoryService(backend, entropy=_Ids())
        try:
            note = canonical.make_source("src_note", "user_note", "use uv, not pip")
            other = await svc.remember(None, entries=(MemoryEntryInput("fact", "other"),))
            (foreign,) = (await svc.entries(other)).values()
            upstream = Artifact(other, "memory", (await svc.revision(other)).content_hash)
            ref = await svc.remember(None, sources=(note,), entries=(
                MemoryEntryInput("fact", "use uv", sources=(note,)),
                MemoryEntryInput("fact", "site/ is generated")))
            by_text = {v.text: v for v in (await svc.entries(ref)).values()}
            ref = await svc.forget(ref, (by_text["site/ is generated"],))
            base = await svc._writes.base(ref, None)
            db_analyzer = await svc.backend.analyzer()
            revise = planning.plan_remember(
                base, [MemoryEntryInput("fact", "use uv always", entry=by_text["use uv"]),
                       MemoryEntryInput("decision", "cite the upstream",
                                        artifacts=(upstream,))],
                sources=(note,), artifacts=(upstream,), new_id=svc.new_id,
                analyzer=db_analyzer)
            reactivate = planning.plan_reactivate(
                base, [by_text["site/ is generated"]], analyzer=db_analyzer)
            assert isinstance(revise, MemoryPlan) and isinstance(reactivate, MemoryPlan)
            # lies the store must expose: an id of another Memory's entry, a new version
            # id that exists, an unknown Source, an unstored Revision
            unknown_src = SourceRef("src_nowhere", "c" * 64)
            unstored = ArtifactRef(other.artifact_id, 9)
            forged = attrs.evolve(
                revise,
                content=attrs.evolve(revise.content, changes=(
                    *revise.content.changes,
                    attrs.evolve(revise.content.changes[0], op="add",
                                 entry_id=foreign.entry_id))),
                new_versions=(*revise.new_versions,
                              attrs.evolve(revise.new_versions[0],
                                           entry_version_id=foreign.entry_version_id)),
                lineage=attrs.evolve(revise.lineage,
                                     sources=(*revise.lineage.sources, unknown_src),
                                     artifacts=(*revise.lineage.artifacts, unstored)),
            )

            async def facts(plan: MemoryPlan) -> verify.PlanFacts:
                return await backend._run(backend._in_tx, True,
                                          backend._commit.plan_facts_sync, plan)

            got = await facts(forged)
            prev = by_text["use uv"]
            assert set(got.versions) == {prev.entry_version_id, foreign.entry_version_id}
            assert got.versions[prev.entry_version_id] == prev
            assert got.entry_ids_elsewhere == {foreign.entry_id}
            assert dict(got.sources) == {note.source_id: note.content_hash}
            assert dict(got.artifacts) == {other: ("memory", upstream.content_hash)}
            assert got.analyzer == db_analyzer
            # the honest plans verify against those facts, and commit
            gone = by_text["site/ is generated"]
            got = await facts(reactivate)
            assert dict(got.versions) == {gone.entry_version_id: gone}
            view = (await backend.load_revision(ref)).content.manifest
            from powercontext.core.manifest import view as manifest_view

            for plan in (revise, reactivate):
                verify.verify(plan, manifest_view(view), await facts(plan))
            async with backend.begin() as uow:
                assert await uow.commit(revise) == revise.ref
        finally:
            await svc.close()

    run(body())
