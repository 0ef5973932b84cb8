"""Topic contract group: the retrieval shape (Topic Memory RFC, "Storage, Head, and
atomic activation", "Configuration"): fixed at the first publication; start-up refuses
(RetrievalShapeError, raised by every call) a vector configuration over FTS-only Heads
and a hybrid database opened without its profile or with another one; removing the
vector configuration reopens an FTS-only deployment; without Heads the shape may
change. These tests need the ``topic_backend_reopen`` fixture."""

from __future__ import annotations

import pytest

from powercontext.core.errors import RetrievalShapeError
from powercontext.core.topic.chunks import CHUNK_POLICY_VERSION
from powercontext.core.topic.models import CHANNELS_FTS, CHANNELS_HYBRID, TopicRef
from powercontext.core.topic.projection import profile_fingerprint
from powercontext.testing.base import run
from powercontext.testing.topic_base import TopicContractBase, TopicKit

__all__ = ["TopicShapeContract"]


class TopicShapeContract(TopicContractBase):
    """The retrieval shape: fixed once, refusals at open, per-family readiness."""

    def test_the_first_publication_fixes_the_shape(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                caps = await kit.backend.topic_capabilities()
                assert caps.shape is None and caps.pending_kind == shape
                want = CHANNELS_HYBRID if shape == "hybrid" else CHANNELS_FTS
                assert caps.channels == want
                await kit.create("s", "Kiwi", "kiwi", "Kiwi.")
                stored = (await kit.backend.topic_capabilities()).shape
                assert stored is not None
                assert stored.kind == shape and stored.channels == want
                assert stored.chunk_policy == CHUNK_POLICY_VERSION
                assert stored.analyzer_version == (await kit.backend.analyzer()).version
                if shape == "hybrid":
                    profile = topic_embedding_model.profile
                    assert stored.embedding_profile == profile
                    assert stored.profile_fingerprint == profile_fingerprint(profile)
                else:
                    assert stored.embedding_profile is None
                    assert stored.profile_fingerprint is None
                assert (await kit.search("s", "kiwi")).channels == want

        run(body())

    @staticmethod
    async def _refused(backend) -> None:
        """Every call of a backend whose shape check fails raises RetrievalShapeError."""
        try:
            for call in (backend.topic_capabilities(), backend.heads("s"),
                         backend.get("s", TopicRef("topic_art_x", 1))):
                with pytest.raises(RetrievalShapeError):
                    await call
        finally:
            await backend.close()

    def test_fts_heads_refuse_a_vector_configuration_until_it_is_removed(
            self, topic_backend_factory, topic_backend_reopen, topic_embedding_model):
        reopen = self._reopen(topic_backend_reopen)

        async def body():
            async with self._kit(topic_backend_factory, "fts", topic_embedding_model) as kit:
                r1 = await kit.create("s", "Kiwi", "kiwi", "Kiwi.")
                await kit.backend.close()
                await self._refused(reopen(kit.backend, topic_embedding_model.profile))
                again = reopen(kit.backend, None)
                try:
                    assert await again.get("s", r1.ref) == r1
                    shape = (await again.topic_capabilities()).shape
                    assert shape is not None and shape.kind == "fts"
                finally:
                    await again.close()

        run(body())

    def test_hybrid_refuses_a_missing_or_other_profile(
            self, topic_backend_factory, topic_backend_reopen, topic_embedding_model):
        reopen = self._reopen(topic_backend_reopen)

        async def body():
            from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

            other = DeterministicEmbedding(dimension=32).profile
            async with self._kit(topic_backend_factory, "hybrid",
                                 topic_embedding_model) as kit:
                r1 = await kit.create("s", "Kiwi", "kiwi", "Kiwi.")
                await kit.backend.close()
                await self._refused(reopen(kit.backend, None))
                await self._refused(reopen(kit.backend, other))
                again = reopen(kit.backend, topic_embedding_model.profile)
                try:
                    assert await again.get("s", r1.ref) == r1
                    hits = (await TopicKit(again, topic_embedding_model).search(
                        "s", "kiwi")).hits
                    assert [h.ref for h in hits] == [r1.ref]
                finally:
                    await again.close()

        run(body())

    def test_without_heads_the_shape_follows_the_configuration(
            self, topic_backend_factory, topic_backend_reopen, topic_embedding_model):
        reopen = self._reopen(topic_backend_reopen)

        async def body():
            async with self._kit(topic_backend_factory, "fts", topic_embedding_model) as kit:
                assert (await kit.backend.topic_capabilities()).pending_kind == "fts"
                await kit.backend.close()
                hybrid = TopicKit(reopen(kit.backend, topic_embedding_model.profile),
                                  topic_embedding_model)
                try:
                    caps = await hybrid.backend.topic_capabilities()
                    assert caps.shape is None and caps.pending_kind == "hybrid"
                    await hybrid.create("s", "Kiwi", "kiwi", "Kiwi.")
                    stored = (await hybrid.backend.topic_capabilities()).shape
                    assert stored is not None and stored.kind == "hybrid"
                finally:
                    await hybrid.backend.close()

        run(body())
