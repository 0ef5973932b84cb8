"""The embedding model as the Memory service uses it: the query vector of a search and
the vectors of a plan's changed texts, both computed outside any transaction, and both
turning any model failure into "model unavailable" (Memory RFC, "Search and reads",
"Vector integrity and offline rebuilds")."""

from __future__ import annotations

import logging

from powercontext.core.errors import (
    CapabilityNotSupportedError,
    InvalidInputError,
    PowerContextError,
)
from powercontext.core.models import EmbeddingVector
from powercontext.core.plan import MemoryPlan
from powercontext.core.vectors import prepare_vector
from powercontext.ports import EmbeddingModel, MemoryBackend

__all__ = ["MemoryEmbedding", "describe"]

log = logging.getLogger("powercontext")


def describe(exc: BaseException) -> str:
    """One line naming an exception (its type too, unless it is one of ours)."""
    return f"{type(exc).__name__}: {exc}" if not isinstance(exc, PowerContextError) else str(exc)


class MemoryEmbedding:
    """``model`` (optional, may be replaced at any time) checked against the profile
    ``backend`` records."""

    def __init__(self, backend: MemoryBackend, model: EmbeddingModel | None) -> None:
        self._backend = backend
        self.model = model

    async def query_vector(
        self, query: str, *, explicit: bool, embed: bool = True
    ) -> tuple[EmbeddingVector | None, str | None]:
        """(query vector, None) or (None, why there is none). CapabilityNotSupportedError
        instead when ``explicit``. ``embed=False`` checks the model without calling it."""
        model = self.model
        caps = await self._backend.capabilities()
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

    async def plan_vectors(self, plan: MemoryPlan) -> dict[str, EmbeddingVector] | None:
        """Vectors of the plan's changed texts by entry_version_id, or None when there is
        no usable model (the write then commits without vectors)."""
        model = self.model
        if model is None or not plan.upserts:
            return None
        caps = await self._backend.capabilities()
        if not caps.vector or caps.embedding_profile != model.profile:
            return None
        texts = tuple(r.text for r in plan.upserts)
        # Memory RFC, "Vector integrity and offline rebuilds": whatever the model does,
        # the Revision and its full-text projection commit; an entry without a usable
        # vector has none (never stale, never a placeholder) until a rebuild fills it.
        try:
            result = await model.embed(texts)
            raw = tuple(result.vectors)
            if len(raw) != len(texts):
                raise InvalidInputError(
                    "vectors", f"the model returned {len(raw)} vectors for {len(texts)} texts"
                )
        except Exception as exc:  # any model failure means "model unavailable"
            log.warning("embedding model unavailable, committing without vectors: %s",
                        describe(exc))
            return None
        vectors: dict[str, EmbeddingVector] = {}
        for row, vec in zip(plan.upserts, raw, strict=True):
            try:
                vectors[row.entry_version_id] = prepare_vector(vec, model.profile)
            except InvalidInputError as exc:  # refused for this entry only
                log.warning("entry %s gets no vector: %s", row.entry_id, exc)
        return vectors
