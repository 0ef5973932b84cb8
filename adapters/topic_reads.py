"""Topic Memory reads over a database backend (Topic Memory RFC, "Detail chunks and
deployment-enabled retrieval channels", "HTTP API"; TOPIC-MEMORY.md, "Topic search",
"get"): :class:`TopicReadsMixin` -- ``search``, ``get`` and ``heads``.

Each read is one read transaction (one snapshot), so a search never joins two Revisions
of one Topic: the channel rows, the hit cards and the snippets come from the same
active rows. The ranking is one descent into :mod:`powercontext.core.topic.search`
(collapse by Topic, admission, per-channel budget, RRF); this module streams each
channel's rows in the engine's order until the budget of distinct admitted Topics is
reached (full-text: pages of growing size; vector: one KNN of ``k`` rows that always
covers the budget, since a Topic has at most MAX_CHUNKS chunks).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from powercontext.adapters.topic_publication import TopicPublicationMixin
from powercontext.core import query as query_bounds
from powercontext.core import ranking
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import (
    ArtifactNotFoundError,
    IntegrityError,
    InvalidInputError,
)
from powercontext.core.models import EmbeddingVector
from powercontext.core.topic import content as topic_content
from powercontext.core.topic import search as topic_search
from powercontext.core.topic import snippets
from powercontext.core.topic.chunks import MAX_CHUNKS
from powercontext.core.topic.models import (
    TopicCapabilities,
    TopicChannel,
    TopicHit,
    TopicMemoryContent,
    TopicRef,
    TopicRevision,
    TopicSearchRequest,
    TopicSearchResult,
)
from powercontext.core.topic.search import ChannelRow, FusedTopic
from powercontext.core.vectors import check_vector

__all__ = ["TopicReadsMixin"]


class TopicReadsMixin(TopicPublicationMixin):
    """``search``, ``get`` and ``heads`` of a Topic backend."""

    # ------------------------------------------------------------------ search

    async def search(self, request: TopicSearchRequest,
                     query_vector: EmbeddingVector | None = None) -> TopicSearchResult:
        """The active Topics of ``request.scope_id`` for ``request.query`` (Topic Memory
        RFC, "Detail chunks and deployment-enabled retrieval channels"): the 2 (fts) or
        4 (hybrid) channels, each collapsed by Topic and admitted, ``max(limit * 4,
        32)`` Topics per channel, fused by RRF (k = 60); at most one hit per Topic,
        ``limit`` hits at most, read in one snapshot. ``query_vector`` (the embedded
        query, unit length, the profile's dimension) is required in a hybrid deployment
        and refused in an FTS-only one.

        InvalidInputError naming ``request``, ``scope_id``, ``limit``, ``query`` (over
        8,192 characters or 64 distinct terms) or ``query_vector``."""
        if not isinstance(request, TopicSearchRequest):
            raise InvalidInputError("request", "must be a TopicSearchRequest")
        scope_id = topic_content.check_scope_id(request.scope_id)
        limit = topic_search.check_limit(request.limit)
        return await self._run(self._search_checked, scope_id, request.query, limit,
                               query_vector)

    def _search_checked(self, scope_id: str, query: str, limit: int,
                        query_vector: EmbeddingVector | None) -> TopicSearchResult:
        terms = query_bounds.search_terms(query, self._db_topic_analyzer)
        assert self._db_caps is not None
        channels = self._db_caps.channels
        if "topic_vector" in channels:
            if query_vector is None:
                raise InvalidInputError(
                    "query_vector", "is required: this Topic Memory deployment is hybrid")
            assert self._profile is not None
            check_vector(query_vector, self._profile)
        elif query_vector is not None:
            raise InvalidInputError(
                "query_vector", "is refused: this Topic Memory deployment is FTS-only")
        return self._in_tx(False, self._search_sync, scope_id, terms, limit, query_vector,
                           channels)

    def _search_sync(self, scope_id: str, terms: tuple[str, ...], limit: int,
                     query_vector: EmbeddingVector | None,
                     channels: tuple[TopicChannel, ...]) -> TopicSearchResult:
        budget = ranking.candidate_budget(limit)
        rows: dict[TopicChannel, list[ChannelRow]] = {}
        for channel in channels:
            if channel.endswith("_fts"):
                rows[channel] = self._fts_channel_sync(channel, scope_id, terms, budget)
            else:
                assert query_vector is not None
                per_topic = MAX_CHUNKS if channel == "detail_vector" else 1
                k = budget * per_topic
                if self.vector_k_cap is not None:
                    k = min(k, self.vector_k_cap)
                found = self._vector_rows_sync(channel, scope_id, query_vector, k)
                rows[channel] = topic_search.collapse(channel, found, terms, budget)
        fused = topic_search.fuse_channels(rows, limit)
        return TopicSearchResult(self._hits_sync(scope_id, fused, terms), channels)

    def _fts_channel_sync(self, channel: TopicChannel, scope_id: str,
                          terms: tuple[str, ...], budget: int) -> list[ChannelRow]:
        """The collapsed, admitted rows of one full-text channel: pages of the engine's
        order (the first of ``budget`` rows, then doubling) until ``budget`` distinct
        Topics are admitted or the rows end."""
        if not terms:
            return []
        seen: list[ChannelRow] = []
        offset, size = 0, budget
        while True:
            page = self._fts_rows_sync(channel, scope_id, terms, size, offset)
            seen.extend(page)
            kept = topic_search.collapse(channel, seen, terms, budget)
            if len(kept) >= budget or len(page) < size:
                return kept
            offset += size
            size *= 2

    def _hits_sync(self, scope_id: str, fused: Sequence[FusedTopic],
                   terms: tuple[str, ...]) -> tuple[TopicHit, ...]:
        cards = self._cards_sync(scope_id, [f.ref.artifact_id for f in fused])
        hits = []
        for f in fused:
            card = cards.get(f.ref.artifact_id)
            if card is None or card[0] != f.ref:  # pragma: no cover - one snapshot
                raise IntegrityError(f"active Topic row {f.ref!r} vanished inside a snapshot")
            hits.append(TopicHit(f.ref, card[1], card[2], self._snippet_sync(f, terms),
                                 f.score, f.matched_by))
        return tuple(hits)

    def _snippet_sync(self, f: FusedTopic, terms: tuple[str, ...]) -> str | None:
        """The best detail_fts chunk's match snippet, else the best detail_vector chunk's
        stable snippet, else None."""
        ordinal = f.best_chunk.get("detail_fts")
        if ordinal is not None:
            text = self._chunk_text_sync(f.ref, ordinal)
            if text is not None:
                found = snippets.match_snippet(text, terms, self._db_topic_analyzer)
                if found is not None:
                    return found
        ordinal = f.best_chunk.get("detail_vector")
        if ordinal is not None:
            text = self._chunk_text_sync(f.ref, ordinal)
            if text is not None:
                return snippets.stable_snippet(text)
        return None

    # ------------------------------------------------------------------ get / heads

    async def get(self, scope_id: str, ref: TopicRef) -> TopicRevision:
        """That exact Revision (never the latest Head by id; Topic Memory RFC, "HTTP
        API"; TOPIC-MEMORY.md, "get"): title, summary, complete detail, the direct
        SourceRefs, the exact older ref it was based on and its own ``published_at``.
        ArtifactNotFoundError for an unknown ref or one of another Scope (never leaked);
        InvalidInputError for a bad Scope id, another family or revision < 1;
        IntegrityError when the stored Revision, its lineage rows and its hashes
        disagree (damage)."""
        scope = topic_content.check_scope_id(scope_id)
        checked = topic_content.check_ref(ref)
        return await self._run(self._in_tx, False, self._get_sync, scope, checked)

    def _get_sync(self, scope_id: str, ref: TopicRef) -> TopicRevision:
        aid, rev = ref.artifact_id, ref.revision
        publication = self._publication_sync(aid, rev)
        row = self._topic_revision_sync(aid, rev)
        if publication is None or row is None or publication[0] != scope_id:
            raise ArtifactNotFoundError(f"no Topic Revision {aid!r}@{rev} in this Scope")
        where = f"Topic Revision {aid!r}@{rev}"
        if row.encoding != "identity":
            raise IntegrityError(f"{where} is stored in encoding {row.encoding!r}")
        content = _parse_content(row.content, where)
        if topic_content.content_hash(content) != row.content_hash:
            raise IntegrityError(f"{where}: stored content does not match its content hash")
        sources, based = self._lineage_sync(aid, rev)
        if len(based) > 1 or (rev == 1) != (not based):
            raise IntegrityError(f"{where}: its lineage rows name {len(based)} base Revisions")
        based_on = based[0] if based else None
        if topic_content.lineage_bytes(tuple(sources), based_on) != row.lineage:
            raise IntegrityError(f"{where}: its lineage rows differ from its stored lineage")
        return TopicRevision(scope_id, ref, content, row.content_hash, tuple(sources),
                             based_on, publication[1])

    async def heads(self, scope_id: str) -> tuple[TopicRef, ...]:
        """The current Head of every Topic of the Scope, by artifact_id (binary order).
        InvalidInputError for a bad Scope id."""
        scope = topic_content.check_scope_id(scope_id)
        return tuple(await self._run(self._in_tx, False, self._topic_heads_sync, scope))

    async def analyzer(self) -> Analyzer:
        """The Analyzer the database's Topic projections are built with (its recorded
        ``analyzer_version``). Opens the database: AnalyzerMismatchError for another
        explicit choice or an unknown recorded version."""
        await self._run(lambda: None)
        return self._db_topic_analyzer

    async def topic_capabilities(self) -> TopicCapabilities:
        """The stored retrieval shape (None before the first publication), the shape a
        first publication would fix, the channels searched and the reasons anything is
        off. Opens the database (RetrievalShapeError, see ``_check_open_sync``)."""
        return await self.capabilities()


def _parse_content(body: bytes, where: str) -> TopicMemoryContent:
    try:
        data = json.loads(body)
    except ValueError:
        raise IntegrityError(f"{where}: stored content is not JSON") from None
    if not isinstance(data, dict) or set(data) != {"title", "summary", "detail"} \
            or not all(isinstance(v, str) for v in data.values()):
        raise IntegrityError(f"{where}: stored content is not title, summary and detail")
    content = TopicMemoryContent(data["title"], data["summary"], data["detail"])
    if topic_content.content_bytes(content) != body:
        raise IntegrityError(f"{where}: stored content is not canonical")
    return content
