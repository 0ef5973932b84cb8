"""The reads of :class:`~powercontext.testing.InMemoryTopicBackend`: exact get,
heads and search over its dict tables (Topic Memory RFC, "Detail chunks and
deployment-enabled retrieval channels", "HTTP API"). Each read runs in one
transaction of the backend (one snapshot); the ranking is core.topic.search's."""

from __future__ import annotations

import math
from typing import Any

from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
from powercontext.core.models import EmbeddingVector
from powercontext.core.topic import content as topic_content
from powercontext.core.topic import search as topic_search
from powercontext.core.topic.chunks import CHUNK_POLICY_VERSION
from powercontext.core.topic.models import (
    RetrievalShape,
    TopicChannel,
    TopicHit,
    TopicRef,
    TopicRevision,
    TopicSearchRequest,
    TopicSearchResult,
)
from powercontext.core.vectors import check_vector

__all__ = ["InMemoryTopicReads"]


class InMemoryTopicReads:
    """get, heads and search of the in-memory Topic backend (a mixin: it reads
    ``self._state``, ``self._analyzer``, ``self._profile`` and ``self._kind()`` and
    runs through ``self._run`` / ``self._in_tx``)."""

    @property
    def _state(self) -> dict[str, Any]:
        raise NotImplementedError  # the backend's shared TopicDatabase state
    _analyzer: Any
    _profile: Any
    _run: Any
    _in_tx: Any
    _kind: Any

    # -- reads -------------------------------------------------------------------------

    def _revision(self, ref: TopicRef) -> TopicRevision:
        key = (ref.artifact_id, ref.revision)
        row = self._state["revisions"][key]
        scope_id, published_at = self._state["publications"][key]
        return TopicRevision(
            scope_id, ref, row["content"], row["content_hash"],
            self._state["lineage_sources"][key], self._state["lineage_artifacts"][key],
            published_at)

    async def get(self, scope_id: str, ref: TopicRef) -> TopicRevision:
        """That exact Revision with its own ``published_at``; ArtifactNotFoundError for
        an unknown ref or one of another Scope; InvalidInputError for a bad Scope or
        ref (see :meth:`powercontext.ports.topic.TopicMemoryBackend.get`)."""
        scope_id = topic_content.check_scope_id(scope_id)
        ref = topic_content.check_ref(ref, "ref")
        return await self._run(self._in_tx, False, self._get_sync, scope_id, ref)

    def _get_sync(self, scope_id: str, ref: TopicRef) -> TopicRevision:
        key = (ref.artifact_id, ref.revision)
        pub = self._state["publications"].get(key)
        if pub is None or pub[0] != scope_id:
            raise ArtifactNotFoundError(
                f"no Topic Revision {ref.artifact_id!r} revision {ref.revision} "
                "in this Scope")
        return self._revision(ref)

    async def heads(self, scope_id: str) -> tuple[TopicRef, ...]:
        """The current head of every Topic of the Scope, by artifact_id (UTF-8)."""
        scope_id = topic_content.check_scope_id(scope_id)
        return await self._run(self._in_tx, False, self._heads_sync, scope_id)

    def _heads_sync(self, scope_id: str) -> tuple[TopicRef, ...]:
        out = [TopicRef(aid, rev) for aid, rev in self._state["heads"].items()
               if self._state["publications"][(aid, 1)][0] == scope_id]
        return tuple(sorted(out, key=lambda r: r.artifact_id.encode()))

    async def search(self, request: TopicSearchRequest,
                     query_vector: EmbeddingVector | None = None) -> TopicSearchResult:
        """Active Topics of one Scope, collapsed per channel, fused by RRF (see
        :meth:`powercontext.ports.topic.TopicMemoryBackend.search`); the request is
        checked by :func:`powercontext.core.topic.search.check_request` (InvalidInputError
        naming ``request``, ``scope_id``, ``query`` or ``limit``; ``query_vector`` when
        it is missing in a hybrid deployment, given in an FTS-only one, or bad)."""
        await self._run(lambda: None)
        scope_id, terms, limit = topic_search.check_request(request, self._analyzer)
        return await self._run(self._in_tx, False, self._search_sync, scope_id, terms, limit,
                               query_vector)

    def _search_sync(self, scope_id: str, terms: tuple[str, ...], limit: int,
                     query_vector: EmbeddingVector | None) -> TopicSearchResult:
        kind = self._kind()
        if kind == "fts" and query_vector is not None:
            raise InvalidInputError(
                "query_vector", "is refused: this Topic Memory deployment is FTS-only")
        if kind == "hybrid":
            if query_vector is None:
                raise InvalidInputError(
                    "query_vector", "is required: this Topic Memory deployment is hybrid")
            assert self._profile is not None
            try:
                check_vector(tuple(query_vector), self._profile)
            except InvalidInputError as exc:
                raise InvalidInputError("query_vector", str(exc)) from exc
        channels: tuple[TopicChannel, ...] = RetrievalShape(
            kind, CHUNK_POLICY_VERSION, self._analyzer.version).channels
        budget = topic_search.channel_budget(limit)
        topics = [r for r in self._state["active_topics"].values() if r["scope_id"] == scope_id]
        chunks = [c for cs in self._state["active_chunks"].values() for c in cs
                  if c["scope_id"] == scope_id]
        rows: dict[TopicChannel, list[topic_search.ChannelRow]] = {
            "topic_fts": self._fts(topics, terms, detail=False),
            "detail_fts": self._fts(chunks, terms, detail=True),
        }
        if query_vector is not None:
            rows["topic_vector"] = self._knn(topics, query_vector, budget, detail=False)
            rows["detail_vector"] = self._knn(chunks, query_vector,
                                              topic_search.vector_k(limit), detail=True)
        collapsed = {ch: topic_search.collapse(ch, rows[ch], terms, budget) for ch in rows}
        fused = topic_search.fuse_channels(collapsed, limit)
        by_id = {r["ref"].artifact_id: r for r in topics}
        texts: dict[str, dict[int, str]] = {}
        for c in chunks:
            texts.setdefault(c["ref"].artifact_id, {})[c["ordinal"]] = c["text"]
        hits = []
        for f in fused:
            row = by_id[f.ref.artifact_id]
            snippet = topic_search.topic_snippet(f, texts.get(f.ref.artifact_id, {}), terms,
                                                 self._analyzer)
            hits.append(TopicHit(f.ref, row["title"], row["summary"], snippet, f.score,
                                 f.matched_by))
        return TopicSearchResult(tuple(hits), channels)

    @staticmethod
    def _fts(rows: list[dict[str, Any]], terms: tuple[str, ...], *, detail: bool
             ) -> list[topic_search.ChannelRow]:
        # the "engine": rows with any query term, by matched-token density then rowid
        wanted = set(terms)
        scored = []
        for r in rows:
            tokens = r["fts_text"].split()
            n = sum(1 for t in tokens if t in wanted)
            if n:
                scored.append((-n / (len(tokens) + 1), r["rowid"], r))
        scored.sort(key=lambda t: (t[0], t[1]))
        return [topic_search.ChannelRow(r["ref"], r["ordinal"] if detail else None,
                                        r["fts_text"]) for _, _, r in scored]

    @staticmethod
    def _knn(rows: list[dict[str, Any]], vector: EmbeddingVector, k: int, *, detail: bool
             ) -> list[topic_search.ChannelRow]:
        scored = sorted(
            ((math.dist(r["vector"], vector), r["rowid"], r) for r in rows
             if r["vector"] is not None), key=lambda t: (t[0], t[1]))[:k]
        return [topic_search.ChannelRow(r["ref"], r["ordinal"] if detail else None,
                                        r["fts_text"], d) for d, _, r in scored]

