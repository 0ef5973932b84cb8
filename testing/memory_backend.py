"""An in-memory DatabaseMemoryBackend: the smallest backend that implements the SPI.

The worked example for third-party adapters: the storage primitives of
:class:`powercontext.adapters.database.DatabaseMemoryBackend`'s base (transactions,
metadata, Sources, the shared Artifact rows), a rows object (:class:`InMemoryRows`:
the methods of :class:`~powercontext.adapters.memory_sql_rows.SQLMemoryRows`) and a
search projection (:class:`InMemoryProjection`:
:class:`~powercontext.ports.engine.MemorySearchProjection`), all over plain dicts, and
it passes the same contract kit as SQLite and OceanBase (so it declares the
``ports.MemoryRebuild``, ``ports.MemoryInventory`` and ``ports.SourceCitations``
capabilities the base class implements) and the kit's ``FaultInjection`` hook. It also
serves unit tests of the core and the service. It is not durable and not meant for
real data: each transaction deep-copies the whole state.

Usage in a test module::

    from powercontext.testing import InMemoryBackend, MemoryBackendContract

    class TestMine(MemoryBackendContract):
        @pytest.fixture
        def memory_backend_factory(self):
            return lambda profile: InMemoryBackend(profile=profile)
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from powercontext.adapters.database import DatabaseMemoryBackend, RevisionRow, VectorRow
from powercontext.adapters.memory_search import paged_fts_stream
from powercontext.adapters.storage import SourceJournal
from powercontext.core.errors import PowerContextError, RevisionConflictError
from powercontext.core.models import (
    EmbeddingProfile,
    EmbeddingVector,
    MemoryCapabilities,
    MemoryEntryVersion,
)
from powercontext.core.plan import ProjectionRow
from powercontext.core.ranking import SearchCandidate
from powercontext.testing.memory_sources import InMemorySources

__all__ = ["InMemoryBackend", "InMemoryProjection", "InMemoryRows"]


class _DuplicateKey(Exception):
    pass


class InMemoryBackend(InMemorySources, DatabaseMemoryBackend):
    """Dict tables behind the SPI. ``profile``: the deployment's EmbeddingProfile (None:
    no vector capability); ``analyzer``: the Analyzer version to open with (a new
    database records it; None: the default).
    ``fail_at`` (a name of :data:`FAULT_POINTS`, or :meth:`inject_fault`) makes every
    commit that reaches that primitive raise RuntimeError there."""

    def __init__(self, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | None = None) -> None:
        super().__init__(rows=InMemoryRows(self), projection=InMemoryProjection(self),
                         sources=SourceJournal(self),
                         profile=profile, analyzer=analyzer)
        self._state: dict[str, Any] = {
            "meta": {},
            "revisions": {},
            "heads": {},
            "versions": {},
            "projection": {},
            "vectors": {},
            "sources": {},
            "journal": [],
            "keys": {},
            "next_projection": 1,
        }
        self._saved: dict[str, Any] | None = None
        self.fail_at: str | None = None

    #: The primitives of a commit where ``fail_at`` / :meth:`inject_fault` can fail it.
    FAULT_POINTS = (
        "_insert_revision_sync",
        "_insert_head_sync",
        "_cas_head_sync",
        "_insert_entry_versions_sync",
        "_delete_projections_sync",
        "_insert_projections_sync",
        "_insert_memory_key_sync",
        "_commit_sync",
    )

    def _maybe_fail(self, name: str) -> None:
        if self.fail_at == name:
            raise RuntimeError(f"injected failure at {name}")

    def fault_points(self) -> tuple[str, ...]:
        """The contract kit's ``FaultInjection`` hook: :data:`FAULT_POINTS`."""
        return self.FAULT_POINTS

    def inject_fault(self, point: str | None) -> None:
        """Fail every commit that reaches the primitive ``point`` (RuntimeError) until
        cleared with None. ValueError for a name not in :data:`FAULT_POINTS`."""
        if point is not None and point not in self.FAULT_POINTS:
            raise ValueError(f"unknown fault point {point!r}; one of {self.FAULT_POINTS}")
        self.fail_at = point

    def _open_sync(self) -> MemoryCapabilities:
        vector = self.profile is not None
        return MemoryCapabilities(True, vector, vector, self.profile)

    def _close_sync(self) -> None:
        pass

    def _begin_sync(self, write: bool) -> None:
        self._saved = copy.deepcopy(self._state)

    def _commit_sync(self) -> None:
        self._maybe_fail("_commit_sync")
        self._saved = None

    def _rollback_sync(self) -> None:
        if self._saved is not None:
            self._state = self._saved
            self._saved = None

    def _database_error(self, exc: BaseException) -> PowerContextError | None:
        if isinstance(exc, _DuplicateKey):
            return RevisionConflictError(str(exc))
        return None

    def _meta_get_sync(self, key: str) -> str | None:
        return self._state["meta"].get(key)

    def _meta_set_sync(self, key: str, value: str | None) -> None:
        if value is None:
            self._state["meta"].pop(key, None)
        else:
            self._state["meta"][key] = value

    def _insert_revision_sync(self, row: RevisionRow) -> None:
        self._maybe_fail("_insert_revision_sync")
        key = (row.artifact_id, row.revision)
        if key in self._state["revisions"]:
            raise _DuplicateKey(f"Revision {key} exists")
        self._state["revisions"][key] = row

    def _insert_head_sync(self, artifact_id: str, revision: int) -> None:
        self._maybe_fail("_insert_head_sync")
        if artifact_id in self._state["heads"]:
            raise _DuplicateKey(f"head of {artifact_id} exists")
        self._state["heads"][artifact_id] = revision

    def _cas_head_sync(self, artifact_id: str, base_revision: int, revision: int) -> bool:
        self._maybe_fail("_cas_head_sync")
        if self._state["heads"].get(artifact_id) != base_revision:
            return False
        self._state["heads"][artifact_id] = revision
        return True


    # test helpers -------------------------------------------------------------------

    def table_sizes(self) -> dict[str, int]:
        """Row counts of every table (for all-or-nothing checks)."""
        return {k: len(v) for k, v in self._state.items() if isinstance(v, dict | list)}


class _OverState:
    """Reads the backend's current state (a rolled-back transaction replaces it)."""

    def __init__(self, backend: InMemoryBackend) -> None:
        self._backend = backend

    @property
    def _state(self) -> dict[str, Any]:
        return self._backend._state


class InMemoryRows(_OverState):
    """The Memory rows (heads, Revisions, entry versions, business keys) over the
    backend's dicts: the methods of
    :class:`~powercontext.adapters.memory_sql_rows.SQLMemoryRows`."""

    def head(self, artifact_id: str) -> int | None:
        return self._state["heads"].get(artifact_id)

    def heads(self, artifact_ids: Sequence[str]) -> dict[str, int]:
        heads = self._state["heads"]
        return {a: heads[a] for a in dict.fromkeys(artifact_ids) if a in heads}

    def revision_rows(self, artifact_id: str, after: int, upto: int) -> list[RevisionRow]:
        revs = self._state["revisions"]
        return [
            revs[(artifact_id, r)] for r in range(after + 1, upto + 1) if (artifact_id, r) in revs
        ]

    def entry_versions(self, entry_version_ids: Sequence[str]) -> list[MemoryEntryVersion]:
        return [
            self._state["versions"][i] for i in entry_version_ids if i in self._state["versions"]
        ]

    def set_revision_hash(self, artifact_id: str, revision: int, old_hash: str,
                                new_hash: str) -> bool:
        row = self._state["revisions"].get((artifact_id, revision))
        if row is None or row.content_hash != old_hash:
            return False
        self._state["revisions"][(artifact_id, revision)] = attrs.evolve(
            row, content_hash=new_hash)
        return True

    def entry_ids_elsewhere(self, artifact_id: str, entry_ids: Sequence[str]) -> set[str]:
        wanted = set(entry_ids)
        return {v.entry_id for v in self._state["versions"].values()
                if v.entry_id in wanted and v.memory_artifact_id != artifact_id}

    def insert_entry_versions(self, versions: Sequence[MemoryEntryVersion]) -> None:
        self._backend._maybe_fail("_insert_entry_versions_sync")
        for v in versions:
            if v.entry_version_id in self._state["versions"]:
                raise _DuplicateKey(f"entry version {v.entry_version_id} exists")
            self._state["versions"][v.entry_version_id] = v

    def key_owner(self, key: str) -> str | None:
        return self._state["keys"].get(key)

    def all_keys(self) -> list[tuple[str, str]]:
        return sorted(self._state["keys"].items())

    def insert_key(self, key: str, artifact_id: str) -> None:
        self._backend._maybe_fail("_insert_memory_key_sync")
        if key in self._state["keys"]:
            raise _DuplicateKey(f"memory_keys {key!r}")
        if artifact_id not in self._state["heads"]:
            raise RuntimeError(f"foreign key: no head {artifact_id!r}")
        self._state["keys"][key] = artifact_id

    def delete_key(self, key: str, artifact_id: str) -> bool:
        if self._state["keys"].get(key) != artifact_id:
            return False
        del self._state["keys"][key]
        return True

    def all_heads(self) -> list[tuple[str, int]]:
        return sorted(self._state["heads"].items())

    def citing_versions(self, source_id: str, limit: int) -> list[MemoryEntryVersion]:
        found = [v for _, v in sorted(self._state["versions"].items())
                 if any(s.source_id == source_id for s in v.sources)]
        return found[:limit]

    def entry_kinds(self, artifact_id: str) -> dict[str, str]:
        return {i: v.kind for i, v in self._state["versions"].items()
                if v.memory_artifact_id == artifact_id}


class InMemoryProjection(_OverState):
    """The search projection (:class:`~powercontext.ports.engine.MemorySearchProjection`)
    over the backend's dicts: head rows by (Memory, entry), vectors by projection id;
    full-text relevance is the share of a row's tokens that are query terms."""

    vector_k_cap: int | None = None

    def delete_projections(self, artifact_id: str, entry_ids: Sequence[str]) -> None:
        self._backend._maybe_fail("_delete_projections_sync")
        for entry_id in entry_ids:
            row = self._state["projection"].pop((artifact_id, entry_id), None)
            if row is not None:
                self._state["vectors"].pop(row["projection_id"], None)

    def insert_projections(
        self,
        artifact_id: str,
        head_revision: int,
        rows: Sequence[ProjectionRow],
        vectors: Sequence[VectorRow | None],
    ) -> None:
        self._backend._maybe_fail("_insert_projections_sync")
        for row, vec in zip(rows, vectors, strict=True):
            pid = self._state["next_projection"]
            self._state["next_projection"] += 1
            self._state["projection"][(artifact_id, row.entry_id)] = {
                "projection_id": pid,
                "row": row,
                "head_revision": head_revision,
            }
            if vec is not None:
                self._state["vectors"][pid] = vec

    def fts_candidates(
        self, artifact_ids: Sequence[str], terms: Sequence[str], limit: int, *,
        offset: int = 0,
    ) -> list[SearchCandidate]:
        # every term counts; the order (score, projection id) is total, so pages are exact
        wanted = set(terms)
        scored = []
        for (aid, _entry_id), p in self._state["projection"].items():
            if aid not in artifact_ids:
                continue
            tokens = p["row"].searchable_text.split()
            hits = sum(1 for t in tokens if t in wanted)
            if hits:
                score = hits / (len(tokens) + 1)
                scored.append((-score, p["projection_id"], aid, p["row"]))
        scored.sort()
        return [
            SearchCandidate(
                aid, r.entry_id, r.entry_version_id, r.entry_content_hash, r.searchable_text)
            for _, _, aid, r in scored[offset:offset + limit]
        ]

    def fts_stream(self, artifact_ids: Sequence[str], terms: Sequence[str], first: int
                   ) -> Iterator[SearchCandidate]:
        return paged_fts_stream(self.fts_candidates, artifact_ids, terms, first)

    def vector_candidates(
        self, artifact_ids: Sequence[str], vector: EmbeddingVector, limit: int
    ) -> list[SearchCandidate]:
        scored = []
        for (aid, _), p in self._state["projection"].items():
            vec = self._state["vectors"].get(p["projection_id"])
            if aid not in artifact_ids or vec is None:
                continue
            d = math.dist(vec.vector, vector)
            r = p["row"]
            scored.append(
                (
                    d,
                    p["projection_id"],
                    SearchCandidate(
                        aid,
                        r.entry_id,
                        r.entry_version_id,
                        r.entry_content_hash,
                        r.searchable_text,
                        d,
                    ),
                )
            )
        scored.sort(key=lambda t: (t[0], t[1]))
        return [c for _, _, c in scored[:limit]]

    def vector_first_k(self, first: int) -> int:
        return first + 1

    def vector_projection(self, artifact_id: str) -> list[tuple[str, str | None]]:
        out = []
        for (aid, _), p in self._state["projection"].items():
            if aid == artifact_id:
                vec = self._state["vectors"].get(p["projection_id"])
                out.append(
                    (p["row"].entry_content_hash, vec.embedding_content_hash if vec else None)
                )
        return out

    def vector_projection_of(self, artifact_id: str, entry_ids: Sequence[str]
                             ) -> list[tuple[str, str | None]]:
        wanted = set(entry_ids)
        return [(p["row"].entry_content_hash,
                 vec.embedding_content_hash if (vec := self._state["vectors"].get(
                     p["projection_id"])) else None)
                for (aid, eid), p in self._state["projection"].items()
                if aid == artifact_id and eid in wanted]

    def head_vectors(self, artifact_id: str) -> dict[str, VectorRow]:
        out = {}
        for (aid, _), p in self._state["projection"].items():
            vec = self._state["vectors"].get(p["projection_id"])
            if aid == artifact_id and vec is not None:
                out[p["row"].entry_version_id] = vec
        return out

    def clear_projection(self, artifact_id: str) -> None:
        for key in [k for k in self._state["projection"] if k[0] == artifact_id]:
            row = self._state["projection"].pop(key)
            self._state["vectors"].pop(row["projection_id"], None)

    def reset_vectors(self, profile: EmbeddingProfile | None) -> None:
        self._state["vectors"].clear()

    def after_rebuild(self) -> None:
        pass
