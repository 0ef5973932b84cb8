"""Search of MemoryService: bounds checks, the query embedding and the fallback of
``auto`` (Memory RFC, "Search and reads")."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext._service_core import ServiceCore, describe
from powercontext.core import canonical
from powercontext.core import query as query_bounds
from powercontext.core.errors import CapabilityNotSupportedError, InvalidInputError
from powercontext.core.models import (
    ArtifactRef,
    CurrentHead,
    EmbeddingVector,
    MemorySearchRequest,
    MemorySearchResult,
    SearchMode,
)
from powercontext.core.vectors import prepare_vector

__all__ = ["MAX_SEARCH_LIMIT", "SearchOps"]

#: max(limit * 4, 32) candidates per channel must stay within vec0's k cap of 4096.
MAX_SEARCH_LIMIT = 1024
_SEARCH_MODES = ("fts", "vector", "hybrid", "auto")


class SearchOps(ServiceCore):
    """``search()`` and the query vector it needs."""

    async def search(
        self,
        query: str,
        memories: Sequence[ArtifactRef | CurrentHead],
        *,
        limit: int = 8,
        mode: SearchMode = "auto",
    ) -> MemorySearchResult:
        """Memory RFC, "Search and reads".

        ``query``: at most 8,192 characters and 64 distinct Analyzer v1 terms
        (:mod:`powercontext.core.query`), checked before any database work;
        InvalidInputError naming ``query`` beyond that. ``memories``: one or more
        Memories (duplicates dropped), each an exact ArtifactRef that must be the current
        head (CapabilityNotSupportedError for an older Revision) or a
        :class:`CurrentHead`, whose head the backend reads in the search's own read
        transaction (a concurrent write never turns it into a non-head). ``limit``:
        1..1024 hits; each channel contributes its first ``max(limit * 4, 32)`` admitted
        candidates, so a smaller limit gives a prefix of a larger one. ``mode``: fts,
        vector, hybrid or auto (hybrid when possible, else fts; ``result.mode`` says
        which ran). An explicit vector/hybrid request that cannot be served raises
        CapabilityNotSupportedError. Any exception from the model counts as "model
        unavailable": ``auto`` then runs fts and sets ``result.fallback_reason``. A blank
        query (whitespace only) has no terms and is not embedded: it returns no hits,
        after the same checks (heads; for explicit vector/hybrid, whether the mode could be
        served, raising CapabilityNotSupportedError when not), with ``result.mode`` the
        requested mode (``fts`` for auto, reason "the query is blank").
        """
        canonical._check_str("query", query)
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
                canonical._check_str(f"memories[{i}].artifact_id", m.artifact_id)
            if m not in refs:
                refs.append(m)
        if not refs:
            raise InvalidInputError("memories", "search needs at least one explicit Memory")
        blank = not query.strip()
        vector: EmbeddingVector | None = None
        problem: str | None = None
        if mode in ("vector", "hybrid", "auto"):
            vector, problem = await self._query_vector(
                query, explicit=mode != "auto", embed=not blank
            )
        if blank:
            # Validate the heads (and, for vector/hybrid, completeness), answer nothing.
            served = "fts" if mode == "auto" else mode
            await self.backend.search(MemorySearchRequest("", tuple(refs), limit, served, None))
            return MemorySearchResult(
                (), served, "the query is blank: nothing to embed" if mode == "auto" else None
            )
        result = await self.backend.search(
            MemorySearchRequest(query, tuple(refs), limit, mode, vector)
        )
        if mode == "auto" and result.mode == "fts":
            reason = problem or result.fallback_reason or "the backend served full text only"
            result = MemorySearchResult(result.hits, result.mode, reason)
        return result

    async def _query_vector(
        self, query: str, *, explicit: bool, embed: bool = True
    ) -> tuple[EmbeddingVector | None, str | None]:
        """(query vector, None) or (None, why there is none). CapabilityNotSupportedError
        instead when ``explicit``. ``embed=False`` checks the model without calling it."""
        model = self.embedding_model
        caps = await self.backend.capabilities()
        problem = None
        if model is None:
            problem = "no embedding model is configured"
        elif not caps.vector or caps.embedding_profile is None:
            problem = "the database has no vector projection (" + "; ".join(caps.reasons) + ")"
        elif model.profile != caps.embedding_profile:
            problem = "the embedding model's profile differs from the database's"
        if problem is None and not embed:
            return None, None
        if problem is None:
            assert model is not None and caps.embedding_profile is not None
            try:
                result = await model.embed((query,))
                (raw,) = result.vectors
                return prepare_vector(raw, caps.embedding_profile), None
            except Exception as exc:  # any model failure means "model unavailable"
                problem = f"the embedding model failed: {describe(exc)}"
        if explicit:
            raise CapabilityNotSupportedError(f"vector search is unavailable: {problem}")
        return None, problem
