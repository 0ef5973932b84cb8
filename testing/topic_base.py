"""What every Topic contract group shares: the backend factory fixtures, the ``shape``
parameter (``fts`` and ``hybrid``), and :class:`TopicKit`, a small writer and reader
that builds publications the way the application will (Topic Memory RFC, "Storage,
Head, and atomic activation": projections and embeddings prepared outside the
transaction, checked again at the write boundary)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest

from powercontext.core import canonical
from powercontext.core.models import EmbeddingProfile, EmbeddingVector, SourceRef
from powercontext.core.topic.content import make_content, make_topic_id
from powercontext.core.topic.models import (
    PublicationGuards,
    ShapeKind,
    TopicMemoryContent,
    TopicProjection,
    TopicPublication,
    TopicRef,
    TopicRevision,
    TopicSearchRequest,
    TopicSearchResult,
    TopicWrite,
)
from powercontext.core.topic.projection import build_projection, embedding_texts
from powercontext.ports.topic import TopicMemoryBackend

__all__ = ["TopicBackendFactory", "TopicContractBase", "TopicKit", "TopicReopen"]

#: ``factory(profile) -> TopicMemoryBackend``: a fresh, empty database per call, opened
#: with ``profile`` (None: an FTS-only deployment).
TopicBackendFactory = Callable[[EmbeddingProfile | None], TopicMemoryBackend]
#: ``reopen(backend, profile) -> TopicMemoryBackend``: a new backend on the database of
#: ``backend`` (which may still be open: a second connection), opened with ``profile``.
TopicReopen = Callable[[TopicMemoryBackend, EmbeddingProfile | None], TopicMemoryBackend]

_ids = itertools.count(1)


def new_topic_id() -> str:
    """A fresh ``topic_art_...`` id (process-wide counter as entropy)."""
    n = next(_ids)
    return make_topic_id(1_767_225_600_000 + n, n.to_bytes(10, "big"))


@attrs.define
class TopicKit:
    """One backend under test and, in a hybrid deployment, its embedding ``model``.

    Builds publications as the application does: :func:`make_content`,
    :func:`~powercontext.core.topic.projection.embedding_texts` embedded by ``model``,
    :func:`~powercontext.core.topic.projection.build_projection` with the backend's
    analyzer. Every method is a coroutine over the port only."""

    backend: TopicMemoryBackend
    model: Any = None
    sources: dict[str, SourceRef] = attrs.field(factory=dict)

    @property
    def backend_profile(self) -> EmbeddingProfile | None:
        return self.model.profile if self.model is not None else None

    @property
    def shape(self) -> ShapeKind:
        return "hybrid" if self.model is not None else "fts"

    async def source(self, name: str, body: str | None = None) -> SourceRef:
        """Store the Source ``name`` (once) and return its SourceRef."""
        if name not in self.sources:
            s = canonical.make_source(name, "user_note", body or f"evidence {name}")
            await self.backend.put_sources((s,))
            self.sources[name] = SourceRef(s.source_id, s.content_hash)
        return self.sources[name]

    async def vectors(self, texts: Sequence[str]) -> tuple[EmbeddingVector, ...] | None:
        if self.model is None:
            return None
        return tuple((await self.model.embed(tuple(texts))).vectors)

    async def projection(self, content: TopicMemoryContent) -> TopicProjection:
        analyzer = await self.backend.analyzer()
        if self.model is None:
            return build_projection(content, analyzer)
        vectors = await self.vectors(embedding_texts(content))
        return build_projection(content, analyzer, vectors, self.model.profile)

    async def write(self, scope_id: str, title: str, summary: str, detail: str, *,
                    base: TopicRef | None = None, sources: Sequence[str] = ("src_a",),
                    artifact_id: str | None = None) -> TopicWrite:
        """A CREATE (``base`` None: revision 1 of a new id) or an UPDATE of ``base``."""
        content = make_content(title, summary, detail)
        refs = canonical.sort_source_refs([await self.source(n) for n in sources])
        if base is None:
            ref = TopicRef(artifact_id or new_topic_id(), 1)
        else:
            ref = TopicRef(base.artifact_id, base.revision + 1)
        return TopicWrite("create" if base is None else "update", scope_id, ref, base,
                          content, refs, await self.projection(content))

    async def publish(self, *writes: TopicWrite,
                      guards: PublicationGuards | None = None) -> tuple[TopicRevision, ...]:
        return await self.backend.publish(
            TopicPublication(tuple(writes), guards or PublicationGuards()))

    async def create(self, scope_id: str, title: str, summary: str, detail: str,
                     **kw: Any) -> TopicRevision:
        (rev,) = await self.publish(await self.write(scope_id, title, summary, detail, **kw))
        return rev

    async def update(self, scope_id: str, base: TopicRef, title: str, summary: str,
                     detail: str, **kw: Any) -> TopicRevision:
        (rev,) = await self.publish(
            await self.write(scope_id, title, summary, detail, base=base, **kw))
        return rev

    async def search(self, scope_id: Any, query: Any, limit: Any = 10) -> TopicSearchResult:
        """Search as the application does: the query embedded in a hybrid deployment."""
        vector = None
        if self.model is not None and isinstance(query, str):
            try:
                vector = (await self.vectors((query,)) or (None,))[0]
            except ValueError:  # a text the model refuses (a lone surrogate): any unit
                dim = self.model.profile.dimension
                vector = (1.0,) + (0.0,) * (dim - 1)
        return await self.backend.search(TopicSearchRequest(scope_id, query, limit), vector)

    async def observe(self, scopes: Sequence[str], queries: Sequence[str]) -> Any:
        """Everything a reader sees of ``scopes`` through the port: heads, every Revision
        of every head, and the results of ``queries`` (for all-or-nothing checks)."""
        seen: list[Any] = [(await self.backend.topic_capabilities()).shape]
        for scope in scopes:
            heads = await self.backend.heads(scope)
            revs = [await self.backend.get(scope, TopicRef(h.artifact_id, r))
                    for h in heads for r in range(1, h.revision + 1)]
            results = [await self.search(scope, q, 20) for q in queries]
            seen.append((heads, revs, results))
        return seen


class TopicContractBase:
    """The shared fixtures of every Topic contract group. A backend's test class
    overrides ``topic_backend_factory`` (:data:`TopicBackendFactory`) and
    ``topic_backend_reopen`` (:data:`TopicReopen`; the retrieval-shape tests reopen a
    database with another configuration), optionally ``topic_embedding_model``.
    Every test taking the ``shape`` fixture runs twice: FTS-only and hybrid."""

    @pytest.fixture
    def topic_backend_factory(self) -> TopicBackendFactory:
        raise NotImplementedError("override topic_backend_factory in your test class")

    @pytest.fixture
    def topic_backend_reopen(self) -> TopicReopen | None:
        """Override to run the retrieval-shape tests (they skip without it)."""
        return None

    @pytest.fixture
    def topic_embedding_model(self) -> Any:
        """The model of the hybrid tests (any ``ports.EmbeddingModel``)."""
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

        return DeterministicEmbedding(dimension=64)

    @pytest.fixture(params=["fts", "hybrid"])
    def shape(self, request: Any) -> ShapeKind:
        return request.param  # type: ignore[no-any-return]

    @asynccontextmanager
    async def _kit(self, factory: TopicBackendFactory, shape: ShapeKind, model: Any
                   ) -> AsyncIterator[TopicKit]:
        """A fresh database of ``shape`` (its first publication fixes it)."""
        backend = factory(model.profile if shape == "hybrid" else None)
        kit = TopicKit(backend, model if shape == "hybrid" else None)
        try:
            if shape == "hybrid":
                caps = await backend.topic_capabilities()
                if caps.pending_kind != "hybrid":
                    pytest.skip("backend has no vector capability: "
                                f"{caps.reasons or '(no reason given)'}; topic_backend_factory "
                                "must open the backend with the profile it is given")
            yield kit
        finally:
            await backend.close()

    @staticmethod
    def _require(backend: Any, port: Any) -> Any:
        """``backend`` as the capability ``port`` (a runtime_checkable Protocol), or
        skip the test naming what it does not declare."""
        if not isinstance(backend, port):
            pytest.skip(f"{type(backend).__name__} does not declare {port.__name__}")
        return backend

    @staticmethod
    def _reopen(reopen: TopicReopen | None) -> TopicReopen:
        if reopen is None:
            pytest.skip("override topic_backend_reopen to run the retrieval-shape tests")
        return reopen
