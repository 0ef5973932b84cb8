"""Topic Memory reads over a database backend (Topic Memory RFC, "Detail chunks and
deployment-enabled retrieval channels", "HTTP API"; TOPIC-MEMORY.md, "Topic search",
"get"): :class:`TopicReads` -- ``search``, ``get`` and ``heads``.

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
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from powercontext.adapters.topic_deployment import TopicDeployment
from powercontext.adapters.topic_host import TopicHost
from powercontext.adapters.topic_rows import TopicRows
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import (
    ArtifactNotFoundError,
    IntegrityError,
    InvalidInputError,
)
from powercontext.core.models import EmbeddingVector
from powercontext.core.topic import content as topic_content
from powercontext.core.topic import search as topic_search
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
from powercontext.ports.engine import TopicSearchProjection

__all__ = ["TopicReads"]

T = TypeVar("T")


class TopicReads:
    """``search``, ``get`` and ``heads`` of a Topic backend: each read one snapshot of
    the host, over the Topic rows, the engine's search projection (channels, cards,
    snippet texts) and the deployment's analyzer and profile."""

    def __init__(self, host: TopicHost, rows: TopicRows, projection: TopicSearchProjection,
                 deployment: TopicDeployment) -> None:
        self._host = host
        self._rows = rows
        self._projection = projection
        self._deployment = deployment

    async def _tx(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        return await self._host._run(self._host._in_tx, write, fn, *args)

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

        InvalidInputError naming ``request``, ``scope_id``, ``limit``, ``query`` (not a
        string, a lone surrogate, over 8,192 characters or 64 distinct terms, no
        searchable term) or ``query_vector``
        (:func:`powercontext.core.topic.search.check_request`)."""
        return await self._host._run(self._search_checked, request, query_vector)

    def _search_checked(self, request: TopicSearchRequest,
                        query_vector: EmbeddingVector | None) -> TopicSearchResult:
        scope_id, terms, limit = topic_search.check_request(request, self._deployment.db_analyzer)
        caps = self._host._db_caps
        assert caps is not None
        channels = caps.channels
        if "topic_vector" in channels:
            if query_vector is None:
                raise InvalidInputError(
                    "query_vector", "is required: this Topic Memory deployment is hybrid")
            profile = self._deployment.profile
            assert profile is not None
            try:
                check_vector(query_vector, profile)
            except InvalidInputError as exc:
                raise InvalidInputError("query_vector", str(exc).removeprefix("vector: ")) \
                    from None
        elif query_vector is not None:
            raise InvalidInputError(
                "query_vector", "is refused: this Topic Memory deployment is FTS-only")
        return self._host._in_tx(False, self._search_sync, scope_id, terms, limit, query_vector,
                           channels)

    def _search_sync(self, scope_id: str, terms: tuple[str, ...], limit: int,
                     query_vector: EmbeddingVector | None,
                     channels: tuple[TopicChannel, ...]) -> TopicSearchResult:
        budget = topic_search.channel_budget(limit)
        rows: dict[TopicChannel, list[ChannelRow]] = {}
        for channel in channels:
            if channel in ("topic_fts", "detail_fts"):
                rows[channel] = self._fts_channel_sync(channel, scope_id, terms, budget)
                continue
            assert query_vector is not None
            # one KNN covers the budget: a Topic has at most MAX_CHUNKS chunk rows
            k = topic_search.vector_k(limit) if channel == "detail_vector" else budget
            cap = self._projection.vector_k_cap
            if cap is not None:
                k = min(k, cap)
            found = self._projection.vector_rows(channel, scope_id, query_vector, k)
            rows[channel] = topic_search.collapse(channel, found, terms, budget)
        fused = topic_search.fuse_channels(rows, limit)
        return TopicSearchResult(self._hits_sync(scope_id, fused, terms), channels)

    def _fts_channel_sync(self, channel: TopicChannel, scope_id: str,
                          terms: tuple[str, ...], budget: int) -> list[ChannelRow]:
        """The collapsed, admitted rows of one full-text channel: pages of the engine's
        order (the first of ``budget`` rows, then doubling) into a
        :class:`~powercontext.core.topic.search.ChannelCollector` until it holds
        ``budget`` distinct Topics or the rows end."""
        collector = topic_search.ChannelCollector(channel, terms, budget)
        offset, size = 0, budget
        while True:
            page = self._projection.fts_rows(channel, scope_id, terms, size, offset)
            if collector.add(page) or len(page) < size:
                return collector.rows
            offset += size
            size *= 2

    def _hits_sync(self, scope_id: str, fused: Sequence[FusedTopic],
                   terms: tuple[str, ...]) -> tuple[TopicHit, ...]:
        cards = self._projection.cards(scope_id, [f.ref.artifact_id for f in fused])
        hits = []
        for f in fused:
            card = cards.get(f.ref.artifact_id)
            if card is None or card[0] != f.ref:  # one snapshot: only damage gets here
                raise IntegrityError(f"active Topic row {f.ref!r} vanished inside a snapshot")
            pick = topic_search.snippet_chunk(f)
            texts: dict[int, str] = {}
            if pick is not None:
                text = self._projection.chunk_text(f.ref, pick[1])
                if text is not None:
                    texts[pick[1]] = text
            snippet = topic_search.topic_snippet(f, texts, terms, self._deployment.db_analyzer)
            hits.append(TopicHit(f.ref, card[1], card[2], snippet, f.score, f.matched_by))
        return tuple(hits)

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
        return await self._tx(False, self.get_sync, scope, checked)

    def get_sync(self, scope_id: str, ref: TopicRef) -> TopicRevision:
        """:meth:`get` inside the caller's transaction (the analyzer migration and the
        dashboard's history read Revisions with the same checks)."""
        aid, rev = ref.artifact_id, ref.revision
        publication = self._rows.publication(aid, rev)
        row = self._rows.revision(aid, rev)
        if publication is None or row is None or publication[0] != scope_id:
            raise ArtifactNotFoundError(f"no Topic Revision {aid!r}@{rev} in this Scope")
        where = f"Topic Revision {aid!r}@{rev}"
        if row.encoding != "identity":
            raise IntegrityError(f"{where} is stored in encoding {row.encoding!r}")
        content = _parse_content(row.content, where)
        if topic_content.content_hash(content) != row.content_hash:
            raise IntegrityError(f"{where}: stored content does not match its content hash")
        sources, based = self._rows.lineage(aid, rev)
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
        return tuple(await self._tx(False, self._rows.heads, scope))

    async def analyzer(self) -> Analyzer:
        """The Analyzer the database's Topic projections are built with (its recorded
        ``analyzer_version``). Opens the database: AnalyzerMismatchError for another
        explicit choice or an unknown recorded version. Once the database is open it is
        answered on the caller's thread, like the capability report (a search asks for
        both before its one hop to the worker thread)."""
        await self._host.capabilities()
        return self._deployment.db_analyzer

    async def topic_capabilities(self) -> TopicCapabilities:
        """The stored retrieval shape (None before the first publication), the shape a
        first publication would fix, the channels searched and the reasons anything is
        off. Opens the database (RetrievalShapeError, see
        :meth:`~powercontext.adapters.topic_deployment.TopicDeployment.check_open`)."""
        return await self._host.capabilities()


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
