"""Contract group: vector, hybrid and auto search, and models that fail."""

from __future__ import annotations

import pytest

from powercontext.core.errors import CapabilityNotSupportedError
from powercontext.core.models import MemoryEntryInput
from powercontext.testing.base import ContractBase, SwitchableModel, ThirdPartyModel, run


class VectorContract(ContractBase):
    """Vector, hybrid and auto search with a model, without one, and with one that fails
    (Memory RFC, "Backend capabilities", "Vector integrity and offline rebuilds").
    Every part that needs vectors skips where the backend declares no vector capability
    (``capabilities().vector``)."""

    def test_vector_hybrid_and_auto_with_a_model(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = memory_embedding_model

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None,
                    entries=(
                        MemoryEntryInput("fact", "the release checklist lives in RELEASING.md"),
                        MemoryEntryInput("fact", "python dependencies are managed with uv"),
                        MemoryEntryInput("preference", "prefer small focused pull requests"),
                    ),
                )
                other = await svc.remember(
                    None,
                    entries=(MemoryEntryInput("fact", "python dependencies are managed with uv"),),
                )
                vec = await svc.search("python dependencies uv", (r1,), mode="vector")
                assert vec.mode == "vector" and vec.hits
                assert vec.hits[0].text == "python dependencies are managed with uv"
                assert all(h.matched_by == ("vector",) for h in vec.hits)
                assert {h.memory_ref for h in vec.hits} == {r1}  # filtered inside the scan
                hyb = await svc.search("python dependencies uv", (r1,), mode="hybrid")
                assert hyb.mode == "hybrid"
                assert hyb.hits[0].matched_by == ("fts", "vector")
                assert hyb.hits[0].score == pytest.approx(2 / 61)
                auto = await svc.search("python dependencies uv", (r1, other), mode="auto")
                assert auto.mode == "hybrid"
                assert {h.memory_ref for h in auto.hits} == {r1, other}
                ties = [h for h in auto.hits if h.score == auto.hits[0].score]
                keys = [
                    (h.memory_ref.artifact_id, h.entry_id.encode(), h.entry_version_id)
                    for h in ties
                ]
                assert keys == sorted(keys)

        run(body())

    def test_without_a_model_explicit_vector_fails_and_auto_falls_back(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = memory_embedding_model

        async def body():
            async with self._service(memory_backend_factory, model.profile, None) as svc:
                r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "uv rocks"),))
                assert (await svc.search("uv", (r1,), mode="auto")).mode == "fts"
                for mode in ("vector", "hybrid"):
                    with pytest.raises(CapabilityNotSupportedError):
                        await svc.search("uv", (r1,), mode=mode)

        run(body())

    def test_model_down_at_write_leaves_no_vector_and_search_falls_back(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = SwitchableModel(memory_embedding_model)

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "uv rocks"),))
                assert (await svc.search("uv", (r1,), mode="auto")).mode == "hybrid"
                model.mode = "down"
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "pip is out"),))
                assert r2.revision == 2  # the Revision and its FTS projection commit
                model.mode = "ok"
                assert [h.text for h in (await svc.search("pip", (r2,), mode="fts")).hits] == [
                    "pip is out"
                ]
                assert (await svc.search("pip", (r2,), mode="auto")).mode == "fts"
                with pytest.raises(CapabilityNotSupportedError, match="incomplete"):
                    await svc.search("pip", (r2,), mode="vector")
                # a bad vector (NaN, wrong length, not unit) is never written either
                for bad in ("nan", "short", "long"):
                    model.mode = bad
                    fresh = await svc.remember(None, entries=(MemoryEntryInput("fact", bad),))
                    model.mode = "ok"
                    with pytest.raises(CapabilityNotSupportedError):
                        await svc.search(bad, (fresh,), mode="vector")
                # forgetting the entry without a vector makes the projection complete again
                versions = await svc.entries(r2)
                pip = next(v for v in versions.values() if v.text == "pip is out")
                r3 = await svc.forget(r2, (pip,))
                assert (await svc.search("uv", (r3,), mode="auto")).mode == "hybrid"

        run(body())

    def test_forget_drops_vectors_and_reactivate_restores_them(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = memory_embedding_model

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None,
                    entries=(
                        MemoryEntryInput("fact", "deploys go through the staging cluster"),
                        MemoryEntryInput("fact", "unrelated note about lunch"),
                    ),
                )
                versions = await svc.entries(r1)
                deploy = next(v for v in versions.values() if "deploys" in v.text)
                r2 = await svc.forget(r1, (deploy,))
                hits = (await svc.search("staging cluster deploys", (r2,), mode="vector")).hits
                assert deploy.entry_id not in {h.entry_id for h in hits}
                r3 = await svc.reactivate(r2, (deploy,))
                hits = (await svc.search("staging cluster deploys", (r3,), mode="vector")).hits
                assert hits[0].entry_id == deploy.entry_id
                assert hits[0].entry_version_id == deploy.entry_version_id

        run(body())

    # -- a failing model never breaks a write or a search (issue 9 item 6) ----------------

    def test_a_third_party_model_that_raises_never_breaks_a_write_or_a_search(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = ThirdPartyModel(memory_embedding_model)

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None, entries=(MemoryEntryInput("fact", "uv manages python dependencies"),)
                )
                auto = await svc.search("uv python", (r1,), mode="auto")
                assert (auto.mode, auto.fallback_reason) == ("hybrid", None)
                model.down = True
                r2 = await svc.remember(
                    r1, entries=(MemoryEntryInput("fact", "pip is no longer used"),)
                )
                assert r2.revision == 2  # the Revision and its full-text projection commit
                fts = await svc.search("pip", (r2,), mode="fts")
                assert [h.text for h in fts.hits] == ["pip is no longer used"]
                assert fts.fallback_reason is None
                auto = await svc.search("pip", (r2,), mode="auto")
                assert auto.mode == "fts" and [h.text for h in auto.hits] == [
                    "pip is no longer used"
                ]
                assert "ConnectionError" in auto.fallback_reason
                for mode in ("vector", "hybrid"):
                    with pytest.raises(CapabilityNotSupportedError, match="ConnectionError"):
                        await svc.search("pip", (r2,), mode=mode)
                    with pytest.raises(CapabilityNotSupportedError, match="incomplete"):
                        await svc.search("  ", (r2,), mode=mode)  # blank, still refused
                assert await svc.expand(fts.hits)
                assert len(await svc.changes(r2, 0)) == 2
                pip = fts.hits[0]
                r3 = await svc.forget(r2, (pip.entry_id,))
                r4 = await svc.reactivate(r3, (pip.entry_id,))
                assert r4.revision == 4
                model.down = False
                auto = await svc.search("pip", (r4,), mode="auto")
                assert auto.mode == "fts" and "incomplete" in auto.fallback_reason

        run(body())

    def test_one_bad_vector_costs_only_its_own_entry(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = ThirdPartyModel(memory_embedding_model)
        bad = ("nanvec beta", "infvec gamma", "zerovec delta", "shortvec epsilon",
               "emptyvec zeta")

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None,
                    entries=(
                        MemoryEntryInput("fact", "deploys go through the staging cluster"),
                        *(MemoryEntryInput("fact", t) for t in bad),
                        MemoryEntryInput("fact", "scaledvec the release checklist lives "
                                                 "in RELEASING.md"),
                    ),
                )
                auto = await svc.search("release checklist", (r1,), mode="auto")
                assert auto.mode == "fts" and "incomplete" in auto.fallback_reason
                versions = await svc.entries(r1)
                r2 = await svc.forget(r1, [v for v in versions.values() if v.text in bad])
                # every other entry kept its vector (the non-unit one normalised)
                vec = await svc.search("release checklist RELEASING.md", (r2,), mode="vector")
                assert vec.mode == "vector" and vec.hits[0].text.startswith("scaledvec")
                auto = await svc.search("staging cluster deploys", (r2,), mode="auto")
                assert (auto.mode, auto.fallback_reason) == ("hybrid", None)
                assert auto.hits[0].matched_by == ("fts", "vector")

        run(body())

    def test_a_blank_query_returns_nothing_but_is_checked_like_any_other(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = memory_embedding_model

        async def body():
            async with self._service(memory_backend_factory, model.profile, None) as svc:
                r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "uv rocks"),))
                for mode in ("vector", "hybrid"):
                    with pytest.raises(CapabilityNotSupportedError):
                        await svc.search(" \t", (r1,), mode=mode)
                res = await svc.search(" ", (r1,), mode="auto")
                assert (res.hits, res.mode) == ((), "fts") and "blank" in res.fallback_reason
                res = await svc.search("", (r1,), mode="fts")
                assert (res.hits, res.mode, res.fallback_reason) == ((), "fts", None)
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "uv rocks"),))
                for mode in ("vector", "hybrid"):
                    res = await svc.search("  ", (r1,), mode=mode)
                    assert (res.hits, res.mode, res.fallback_reason) == ((), mode, None)

        run(body())

