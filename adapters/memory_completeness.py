"""VectorCompleteness: whether a Memory's vector projection is complete at a head
Revision (Memory RFC, "Search and reads": ``auto`` uses hybrid only when "all selected
Memory Artifacts have complete vector projections"; "Vector integrity and offline
rebuilds"), cached per (Memory, head Revision, projection generation), and the count
of head rows without a valid vector that each commit keeps
(:mod:`powercontext.adapters.vector_gaps`). Search reads it, every commit keeps it,
a rebuild or rehash clears it.
"""

from __future__ import annotations

import threading
from typing import Any

from powercontext.adapters import vector_gaps
from powercontext.adapters.memory_deployment import MemoryDeployment
from powercontext.adapters.memory_tables import MemoryTables
from powercontext.core.models import EmbeddingProfile
from powercontext.core.plan import MemoryPlan
from powercontext.ports.engine import MemorySearchProjection

__all__ = ["GENERATION_KEY", "VectorCompleteness"]

#: Deployment metadata key: the offline rebuilds' generation (a rebuild changes
#: projections without changing heads).
GENERATION_KEY = "projection_generation"

#: (artifact_id, head revision, projection generation)
Key = tuple[str, int, str]


class VectorCompleteness:
    """``host``: the storage (``_meta_get_sync``, ``_db_caps``); ``tables``: the Memory
    tables (their vector-gap counts); ``projection``: the engine's
    :class:`~powercontext.ports.engine.MemorySearchProjection` (its vector hashes);
    ``deployment``: the profile vectors are checked against. Thread-safe: the cache is
    shared by the worker thread and whoever clears it."""

    def __init__(self, host: Any, tables: MemoryTables, projection: MemorySearchProjection,
                 deployment: MemoryDeployment) -> None:
        self._host = host
        self._tables = tables
        self._projection = projection
        self._deployment = deployment
        self._cache: dict[Key, bool] = {}
        self._lock = threading.Lock()

    def generation(self) -> str:
        """The offline rebuilds' generation (``powercontext_meta``), read in the caller's
        transaction."""
        return self._host._meta_get_sync(GENERATION_KEY) or "0"  # type: ignore[no-any-return]

    def bump_generation(self) -> None:
        """A rebuild or rehash changed projections: the next reads count again."""
        current = int(self.generation())
        self._host._meta_set_sync(GENERATION_KEY, str(current + 1))

    def complete(self, artifact_id: str, revision: int, generation: str | None = None) -> bool:
        """True when every head row of the Memory at ``revision`` has a valid vector:
        from the cache, else the stored count, else counted over the head rows. The
        generation is read in this transaction (or by the caller, in it, for several
        Memories: ``generation``), so another process's rebuild is never missed."""
        if generation is None:
            generation = self.generation()
        key = (artifact_id, revision, generation)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        profile = self._deployment.profile
        assert profile is not None
        gaps = self._tables.gaps
        stored = None if gaps is None else gaps.read(artifact_id, revision, generation)
        ok = (vector_gaps.missing(self._projection.vector_projection(artifact_id), profile) == 0
              if stored is None else stored == 0)
        with self._lock:
            self._cache[key] = ok
        return ok

    def remember(self, key: Key, ok: bool) -> None:
        """Cache what a committed write computed."""
        with self._lock:
            self._cache[key] = ok

    def invalidate(self, artifact_id: str) -> None:
        """Forget every cached answer of one Memory."""
        with self._lock:
            for key in [k for k in self._cache if k[0] == artifact_id]:
                del self._cache[key]

    def clear(self) -> None:
        """Forget every cached answer."""
        with self._lock:
            self._cache.clear()

    def gaps_profile(self) -> EmbeddingProfile | None:
        """The profile vectors are checked against when this database keeps the count of
        head rows without a valid vector (None: it keeps none)."""
        caps = self._host._db_caps
        if self._tables.gaps is None or caps is None or not caps.vector:
            return None
        return self._deployment.profile or caps.embedding_profile  # type: ignore[no-any-return]

    def count_gaps(self, plan: MemoryPlan, lost: int, added: int,
                   profile: EmbeddingProfile) -> tuple[Key, bool]:
        """Store the Memory's count of head rows without a valid vector as of the plan's
        Revision: its base's minus the ones the plan replaced (``lost``) plus the ones it
        wrote without a vector (``added``); counted whole when the base's is not stored
        (a Memory an earlier release wrote, or a rebuild since). Returns the cache entry
        to :meth:`remember` once the write has committed."""
        gaps = self._tables.gaps
        assert gaps is not None
        generation = self.generation()
        base = (0 if plan.base is None else
                gaps.read(plan.artifact_id, plan.base.revision, generation))
        count = (vector_gaps.missing(self._projection.vector_projection(plan.artifact_id),
                                     profile)
                 if base is None else base - lost + added)
        gaps.write(plan.artifact_id, plan.revision, generation, count)
        return (plan.artifact_id, plan.revision, generation), count == 0
