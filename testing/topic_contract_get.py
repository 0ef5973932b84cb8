"""Topic contract group: exact get (Topic Memory RFC, "HTTP API" GET of a Topic;
TOPIC-MEMORY.md, "get"): the exact Revision asked for, never the latest head by id,
with its own ``published_at``; another Scope's Topic is not found, never leaked."""

from __future__ import annotations

import pytest

from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
from powercontext.core.models import ArtifactRef
from powercontext.core.topic.models import TopicRef
from powercontext.testing.base import run
from powercontext.testing.topic_base import TopicContractBase, new_topic_id
from powercontext.testing.topic_strategies import BAD_SCOPE_IDS

__all__ = ["TopicGetContract"]


class TopicGetContract(TopicContractBase):
    """get() and heads(): exact and historical Revisions, Scopes, bad references."""

    def test_get_returns_exactly_the_revision_asked_for(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                r1 = await kit.create("s", "Kiwi", "kiwi summary", "Kiwi detail\n\nline two.",
                                      sources=("src_a", "src_b"))
                r2 = await kit.update("s", r1.ref, "Kiwi v2", "kiwi summary two",
                                      "Kiwi detail, revised.", sources=("src_c",))
                g1 = await kit.backend.get("s", r1.ref)
                g2 = await kit.backend.get("s", r2.ref)
                assert g1 == r1 and g2 == r2
                assert g1.content.detail == "Kiwi detail\n\nline two."
                assert g1.sources == (kit.sources["src_a"], kit.sources["src_b"])
                assert g2.sources == (kit.sources["src_c"],)
                assert (g1.based_on, g2.based_on) == (None, r1.ref)
                assert g1.published_at == r1.published_at  # not the head's time
                assert g1.content != g2.content

        run(body())

    def test_unknown_and_foreign_references_are_not_found(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                secret_scope = "repo:/secret-scope"
                r1 = await kit.create(secret_scope, "Kiwi", "kiwi", "Kiwi.")
                missing = (TopicRef(new_topic_id(), 1), TopicRef(r1.ref.artifact_id, 2))
                for ref in missing:
                    with pytest.raises(ArtifactNotFoundError):
                        await kit.backend.get(secret_scope, ref)
                with pytest.raises(ArtifactNotFoundError) as info:
                    await kit.backend.get("repo:/other", r1.ref)
                assert secret_scope not in str(info.value)
                assert await kit.backend.heads("repo:/other") == ()
                assert (await kit.search("repo:/other", "kiwi")).hits == ()

        run(body())

    def test_bad_references_and_scopes_are_bad_input(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                r1 = await kit.create("s", "Kiwi", "kiwi", "Kiwi.")
                aid = r1.ref.artifact_id
                bad_refs = (
                    TopicRef(aid, 1, "memory"),
                    TopicRef(aid, 0),
                    TopicRef(aid, -1),
                    TopicRef(aid, True),
                    TopicRef(aid, None),  # type: ignore[arg-type]
                    TopicRef(aid, "1"),  # type: ignore[arg-type]
                    TopicRef("", 1),
                    ArtifactRef(aid, 1),
                    None,
                )
                for ref in bad_refs:
                    with pytest.raises(InvalidInputError):
                        await kit.backend.get("s", ref)  # type: ignore[arg-type]
                for scope in BAD_SCOPE_IDS:
                    with pytest.raises(InvalidInputError) as info:
                        await kit.backend.get(scope, r1.ref)  # type: ignore[arg-type]
                    assert info.value.field == "scope_id"
                    with pytest.raises(InvalidInputError):
                        await kit.backend.heads(scope)  # type: ignore[arg-type]
                assert await kit.backend.get("s", r1.ref) == r1

        run(body())
