"""Contract groups of the maintenance capabilities: offline rebuild and rehash
(``ports.MemoryRebuild``) and inventory (``ports.MemoryInventory``)."""

from __future__ import annotations

import pytest

from powercontext.core.errors import CapabilityNotSupportedError, InvalidInputError
from powercontext.core.models import MemoryEntryInput
from powercontext.ports import MemoryInventory, MemoryRebuild
from powercontext.testing.base import ContractBase, SwitchableModel, ThirdPartyModel, run


class RebuildContract(ContractBase):
    """rebuild() fills, migrates and reports (Memory RFC, "Vector integrity and offline
    rebuilds"). Skipped where the backend does not declare ``ports.MemoryRebuild``."""

    # -- offline rebuild ---------------------------------------------------------------

    def test_rebuild_fills_missing_vectors_while_writers_wait(
        self, memory_backend_factory, memory_embedding_model
    ):
        from powercontext.core.errors import WritesPausedError

        model = SwitchableModel(memory_embedding_model)

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                rebuilder: MemoryRebuild = self._require(svc.backend, MemoryRebuild)
                await self._vector_ready(svc)
                model.mode = "down"
                r1 = await svc.remember(
                    None,
                    entries=(
                        MemoryEntryInput("fact", "the cache lives in redis"),
                        MemoryEntryInput("fact", "logs go to loki"),
                    ),
                )
                r1b = await svc.remember(None, entries=(MemoryEntryInput("fact", "x y z"),))
                model.mode = "ok"
                with pytest.raises(CapabilityNotSupportedError):
                    await svc.search("redis cache", (r1,), mode="vector")
                blocked: list[str] = []

                class _Probe:
                    profile = model.profile

                    async def embed(self, texts):
                        try:
                            await svc.remember(r1, entries=(MemoryEntryInput("fact", "w"),))
                        except WritesPausedError as exc:
                            blocked.append(str(exc))
                        return await model.embed(texts)

                seen: list[tuple[int, int]] = []
                try:
                    report = await rebuilder.rebuild(
                        _Probe(), progress=lambda d, t, a: seen.append((d, t))
                    )
                except CapabilityNotSupportedError as exc:
                    pytest.skip(f"backend cannot rebuild: {exc}")
                assert blocked, "writers must be paused during a rebuild"
                assert (report.memories, report.entries, report.vectors) == (2, 3, 3)
                assert report.incomplete == [] and seen[-1] == (2, 2)
                hits = await svc.search("redis cache", (r1,), mode="vector")
                assert hits.hits[0].text == "the cache lives in redis"
                assert (await svc.search("x", (r1b,), mode="auto")).mode == "hybrid"
                # writes resume afterwards
                assert (
                    await svc.remember(r1, entries=(MemoryEntryInput("fact", "w"),))
                ).revision == 2

        run(body())

    def test_rebuild_migrates_to_a_new_profile(
        self, memory_backend_factory, memory_embedding_model
    ):
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

        model = memory_embedding_model
        new_model = DeterministicEmbedding(
            dimension=model.profile.dimension // 2, profile_id="migrated"
        )

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                rebuilder: MemoryRebuild = self._require(svc.backend, MemoryRebuild)
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None, entries=(MemoryEntryInput("fact", "tests run with pytest"),)
                )
                try:
                    report = await rebuilder.rebuild(new_model, new_profile=new_model.profile)
                except CapabilityNotSupportedError as exc:
                    pytest.skip(f"backend cannot migrate: {exc}")
                assert (report.vectors, report.incomplete) == (1, [])
                caps = await svc.backend.capabilities()
                assert caps.embedding_profile == new_model.profile
                svc.embedding_model = new_model
                hits = await svc.search("pytest", (r1,), mode="vector")
                assert hits.hits[0].text == "tests run with pytest"
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "lint: ruff"),))
                assert (await svc.search("ruff", (r2,), mode="auto")).mode == "hybrid"

        run(body())


    def test_rebuild_reports_each_bad_entry_keeps_stored_vectors_and_goes_on(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = ThirdPartyModel(memory_embedding_model)

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                rebuilder: MemoryRebuild = self._require(svc.backend, MemoryRebuild)
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None,
                    entries=(
                        MemoryEntryInput("fact", "the cache lives in redis"),
                        MemoryEntryInput("fact", "logs go to loki"),
                    ),
                )
                model.down = True
                r2 = await svc.remember(None, entries=(MemoryEntryInput("fact", "traces"),))
                model.down = False
                r2 = await svc.remember(
                    r2, entries=(MemoryEntryInput("fact", "nanvec metrics in prometheus"),)
                )
                ids = {v.text: e for e, v in (await svc.entries(r2)).items()}
                # no model: nothing is removed, what is missing is reported
                try:
                    report = await rebuilder.rebuild(None)
                except CapabilityNotSupportedError as exc:
                    pytest.skip(f"backend cannot rebuild: {exc}")
                assert (report.memories, report.entries, report.vectors, report.kept) == (
                    2, 4, 2, 2)
                assert sorted(e for _, e, _ in report.missing) == sorted(ids.values())
                assert all("no embedding model" in why for _, _, why in report.missing)
                assert report.incomplete == [r2.artifact_id]
                hits = await svc.search("redis cache", (r1,), mode="vector")
                assert hits.hits[0].text == "the cache lives in redis"
                # the model is back but refuses one vector: that entry is reported, the
                # others are filled, and the rebuild goes on to the end
                report = await rebuilder.rebuild(model)
                assert (report.memories, report.vectors, report.kept) == (2, 3, 0)
                [(aid, eid, why)] = report.missing
                assert (aid, eid) == (r2.artifact_id, ids["nanvec metrics in prometheus"])
                assert "NaN" in why
                # the model is down for the whole rebuild: every stored vector is kept
                model.down = True
                report = await rebuilder.rebuild(model)
                assert (report.vectors, report.kept, report.incomplete) == (
                    3, 3, [r2.artifact_id])
                assert {e for _, e, _ in report.missing} == {ids["nanvec metrics in prometheus"]}
                assert all("ConnectionError" in why for _, _, why in report.missing)
                model.down = False
                assert (await svc.search("redis cache", (r1,), mode="auto")).mode == "hybrid"
                r3 = await svc.forget(r2, (ids["nanvec metrics in prometheus"],))
                assert (await svc.search("traces", (r3,), mode="auto")).mode == "hybrid"

        run(body())

    def test_a_migration_with_an_unavailable_model_changes_nothing(
        self, memory_backend_factory, memory_embedding_model
    ):
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

        model = memory_embedding_model
        new_model = ThirdPartyModel(DeterministicEmbedding(
            dimension=model.profile.dimension // 2, profile_id="migrated"))
        new_model.down = True

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                rebuilder: MemoryRebuild = self._require(svc.backend, MemoryRebuild)
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None, entries=(MemoryEntryInput("fact", "tests run with pytest"),)
                )
                with pytest.raises(InvalidInputError):
                    await rebuilder.rebuild(None, new_profile=new_model.profile)
                with pytest.raises(CapabilityNotSupportedError):
                    await rebuilder.rebuild(new_model, new_profile=new_model.profile)
                caps = await svc.backend.capabilities()
                assert caps.embedding_profile == model.profile
                hits = await svc.search("pytest", (r1,), mode="vector")
                assert hits.hits[0].text == "tests run with pytest"
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "ruff lints"),))
                assert (await svc.search("ruff", (r2,), mode="auto")).mode == "hybrid"

        run(body())


    def test_rehash_of_a_database_in_the_spec_format_changes_nothing(
        self, memory_backend_factory
    ):
        """``rehash()`` is idempotent: a database written in the spec's hash format
        reports ``already`` and keeps every Revision; writers are resumed after it, and
        ``resume_writes()`` on an unpaused database is a no-op."""

        async def body():
            async with self._service(memory_backend_factory) as svc:
                rebuilder: MemoryRebuild = self._require(svc.backend, MemoryRebuild)
                r1 = (await self._scenario(svc))["r1"]
                before = await svc.revision(r1)
                report = await rebuilder.rehash()
                assert (report.already, report.rewritten, report.corrupt) == (True, 0, [])
                assert await svc.revision(r1) == before
                await rebuilder.resume_writes()
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "after"),))
                assert r2 is not None and r2.revision == 2

        run(body())


class InventoryContract(ContractBase):
    """``inventory()`` lists what the database holds (``memory list``, ``info``).
    Skipped where the backend does not declare ``ports.MemoryInventory``."""

    def test_inventory_lists_every_head_and_counts_sources(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                lister: MemoryInventory = self._require(svc.backend, MemoryInventory)
                empty = await lister.inventory()
                assert (empty["heads"], empty["sources"], empty["writes_paused"]) == (
                    (), 0, False)
                r1 = (await self._scenario(svc))["r1"]
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "second"),))
                other = await svc.remember(None, entries=(MemoryEntryInput("fact", "other"),))
                assert r2 is not None and other is not None
                inv = await lister.inventory()
                assert inv["heads"] == tuple(sorted((r2, other), key=lambda r: r.artifact_id))
                assert (inv["sources"], inv["writes_paused"]) == (3, False)
                version = inv["analyzer_version"]
                assert version is None or version == (await svc.backend.analyzer()).version

        run(body())
