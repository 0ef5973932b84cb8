"""Search of the Memory service: bounds checks, the query embedding and the fallback of
``auto`` (Memory RFC, "Search and reads")."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.core import canonical
from powercontext.core import query as query_bounds
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import (
    ArtifactRef,
    CurrentHead,
    EmbeddingVector,
    MemorySearchRequest,
    MemorySearchResult,
    SearchMode,
)
from powercontext.memory_embedding import MemoryEmbedding
from powercontext.ports import MemoryBackend

__all__ = ["MAX_SEARCH_LIMIT", "MemorySearch"]

#: max(limit * 4, 32) candidates per channel must stay within vec0's k cap of 4096.
MAX_SEARCH_LIMIT = 1024
_SEARCH_MODES = ("fts", "vector", "hybrid", "auto")


class MemorySearch:
    """``search()`` over ``backend``, with the query vector from ``embedding``."""

    def __init__(self, backend: MemoryBackend, embedding: MemoryEmbedding) -> None:
        self._backend = backend
        self._embedding = embedding

    async def search(
        self,
        query: str,
        memories: Sequence[ArtifactRef | CurrentHead],
        *,
        limit: int = 8,
        mode: SearchMode = "auto",
    ) -> MemorySearchResult:
        """Memory RFC, "Search and reads" (see ``MemoryService.search``)."""
        canonical.check_str("query", query)
        query_bounds.search_terms(query)
        if mode not in _SEARCH_MODES:
            raise InvalidInputError("mode", f"must be one of {', '.join(_SEARCH_MODES)}")
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= MAX_SEARCH_LIMIT
        ):
            raise InvalidInputError("limit", f"must be an integer in 1..{MAX_SEARCH_LIMIT}")
        refs: list[ArtifactRef | CurrentHead] = []
        for i, m in enumerate(memories):
            if not isinstance(m, ArtifactRef | CurrentHead):
                raise InvalidInputError(f"memories[{i}]", "must be an ArtifactRef or CurrentHead")
            if isinstance(m, CurrentHead):
                canonical.check_str(f"memories[{i}].artifact_id", m.artifact_id)
            if m not in refs:
                refs.append(m)
        if not refs:
            raise InvalidInputError("memories", "search needs at least one explicit Memory")
        blank = not query.strip()
        vector: EmbeddingVector | None = None
        problem: str | None = None
        if mode in ("vector", "hybrid", "auto"):
            vector, problem = await self._embedding.query_vector(
                query, explicit=mode != "auto", embed=not blank
            )
        if blank:
            # Validate the heads (and, for vector/hybrid, completeness), answer nothing.
            served = "fts" if mode == "auto" else mode
            await self._backend.search(MemorySearchRequest("", tuple(refs), limit, served, None))
            return MemorySearchResult(
                (), served, "the query is blank: nothing to embed" if mode == "auto" else None
            )
        result = await self._backend.search(
            MemorySearchRequest(query, tuple(refs), limit, mode, vector)
        )
        if mode == "auto" and result.mode == "fts":
            reason = problem or result.fallback_reason or "the backend served full text only"
            result = MemorySearchResult(result.hits, result.mode, reason)
        return result
