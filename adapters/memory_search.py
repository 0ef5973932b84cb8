"""The Memory family's search over a database backend (Memory RFC, "Search and reads";
"Latest-head, full-text, and vector projection"): :class:`MemorySearch`, the Memory
backend's search collaborator.

One search is one read transaction on the worker thread. This module owns the I/O
half: the mode decision (auto's fallback, vector readiness), reading the current heads,
streaming each channel's candidates from the engine's search projection
(:class:`~powercontext.ports.engine.MemorySearchProjection`: its ``fts_stream``, and
:meth:`MemorySearch.vector_stream` over its ``vector_candidates``)
and reading the stored versions they name. The rules are one descent into
:mod:`powercontext.core.ranking` per search: manifest trust, channel admission, version
confirmation, the candidate budget and RRF fusion.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from powercontext.adapters.manifest_log import LazyManifest
from powercontext.adapters.memory_completeness import GENERATION_KEY, VectorCompleteness
from powercontext.adapters.memory_deployment import MemoryDeployment
from powercontext.adapters.memory_tables import MemoryTables
from powercontext.core import query as query_bounds
from powercontext.core import ranking
from powercontext.core.errors import (
    ArtifactNotFoundError,
    CapabilityNotSupportedError,
    InvalidInputError,
)
from powercontext.core.models import (
    ArtifactRef,
    Channel,
    CurrentHead,
    EmbeddingVector,
    MemoryEntryVersion,
    MemorySearchRequest,
    MemorySearchResult,
)
from powercontext.core.ranking import SearchCandidate, SearchHead
from powercontext.core.vectors import check_vector
from powercontext.ports.engine import MemorySearchProjection

__all__ = ["MemorySearch", "paged_fts_stream"]


def paged_fts_stream(
    candidates: Callable[..., list[SearchCandidate]], artifact_ids: Sequence[str],
    terms: Sequence[str], first: int,
) -> Iterator[SearchCandidate]:
    """Every head row of these Memories matching any of ``terms``, lazily, in the
    projection's total order (best first, a stable tie-break): pages of
    ``candidates(artifact_ids, terms, size, offset=offset)`` (a projection's
    ``fts_candidates``), the first of ``first`` rows, each next one twice as large.

    The pages are not pre-filtered by the admission minimum: the channel applies
    admission to every row, and on SQLite counting the minimum in FTS5 (a ``rowid
    IN`` of per-term rowid lists) measured slower than paging (10k LoCoMo turns, 50
    questions, fts limit 10: p50 19.1 ms / p95 135 ms pre-filtered against 5.6 /
    18.2 ms paged, same hits)."""
    offset, size = 0, first
    while True:
        page = candidates(artifact_ids, terms, size, offset=offset)
        yield from page
        if len(page) < size:
            return
        offset += size
        size *= 2


def _prefetch(heads: dict[str, SearchHead], rows: Sequence[SearchCandidate]) -> None:
    """Read the manifest items of ``rows`` of every lazily read head in one statement
    per Memory (a cached head has them all)."""
    wanted: dict[str, list[str]] = {}
    for c in rows:
        wanted.setdefault(c.artifact_id, []).append(c.entry_id)
    for artifact_id, entry_ids in wanted.items():
        head = heads.get(artifact_id)
        if head is not None and isinstance(head.manifest, LazyManifest):
            head.manifest.prefetch(entry_ids)


class MemorySearch:
    """``search`` and ``candidate_budget`` of a Memory backend. ``host``: the storage
    (``_run``, ``_in_tx``, ``_db_caps``); ``tables``: the Memory tables (heads, entry
    versions, the Revision cache and manifest log); ``projection``: the engine's
    :class:`~powercontext.ports.engine.MemorySearchProjection`; ``deployment``: the
    profile and analyzer; ``completeness``: whether a Memory's vectors are complete."""

    def __init__(self, host: Any, tables: MemoryTables, projection: MemorySearchProjection,
                 deployment: MemoryDeployment, completeness: VectorCompleteness) -> None:
        self._host = host
        self._tables = tables
        self._projection = projection
        self._deployment = deployment
        self._completeness = completeness

    #: Candidate budget per channel (Memory RFC: max(limit * 4, 32)), counted in
    #: admitted candidates (see :meth:`search`).
    @staticmethod
    def candidate_budget(limit: int) -> int:
        return ranking.candidate_budget(limit)

    def _vector_ready_sync(self, memories: Sequence[ArtifactRef]) -> str | None:
        """None when vector search can run on every Memory, else the reason it cannot."""
        caps = self._host._db_caps
        if self._deployment.profile is None or not (caps and caps.vector):
            return "the database has no vector projection"
        completeness = self._completeness
        generation = completeness.generation()  # once for all of them
        for m in memories:
            if not completeness.complete(m.artifact_id, m.revision, generation):
                return (
                    f"the vector projection of Memory {m.artifact_id!r} is incomplete "
                    "(fill it offline: `powercontext memory rebuild` with the model)"
                )
        return None

    def _heads_sync(
        self, memories: Sequence[ArtifactRef | CurrentHead]
    ) -> dict[str, SearchHead]:
        """The head of every Memory the search names, read in its transaction (one
        read of the rows' ``heads`` for all of them).
        A :class:`CurrentHead` takes whatever the head is now; an ArtifactRef must be it
        (CapabilityNotSupportedError otherwise). ArtifactNotFoundError for no Memory.

        Each head's manifest is the cached Revision's when the Revision cache holds it;
        else, when the manifest log holds the Revision, a
        :class:`~powercontext.adapters.manifest_log.LazyManifest` that reads only the
        items of the candidates (nothing proportional to the Memory in a new process or
        after another process's write); else the Revision, decoded whole."""
        manifests: dict[str, SearchHead] = {}
        tables = self._tables
        found = tables.rows.heads([m.artifact_id for m in memories])
        log = tables.log
        cold = [m.artifact_id for m in memories if m.artifact_id in found
                and tables.cached(m.artifact_id, found[m.artifact_id]) is None]
        first = log.first_baselines(cold) if log is not None and cold else {}
        for m in memories:
            head = found.get(m.artifact_id)
            if head is None:
                raise ArtifactNotFoundError(f"no Memory Artifact {m.artifact_id!r}")
            if isinstance(m, ArtifactRef) and head != m.revision:
                raise CapabilityNotSupportedError(
                    f"search needs current heads: Memory {m.artifact_id!r} is at Revision "
                    f"{head}, not {m.revision}"
                )
            cached = tables.cached(m.artifact_id, head)
            if cached is not None:
                manifests[m.artifact_id] = SearchHead(cached.revision.ref, cached.by_entry)
            elif log is not None and first.get(m.artifact_id, head + 1) <= head:
                manifests[m.artifact_id] = SearchHead(
                    ArtifactRef(m.artifact_id, head), LazyManifest(log, m.artifact_id, head))
            else:
                parsed = tables.parsed(m.artifact_id, head)
                manifests[m.artifact_id] = SearchHead(parsed.revision.ref, parsed.by_entry)
        return manifests

    def _ahead_sync(self, request: MemorySearchRequest
                    ) -> tuple[str, ...] | InvalidInputError:
        """The query's search terms (or the error they raise, raised where the search
        needs them), and, on a projection with ``search_ahead`` (a server a round trip
        away), the search's first queries named to it, to travel in one round trip."""
        terms: tuple[str, ...] | InvalidInputError = ()
        if request.mode != "vector":
            try:
                terms = query_bounds.search_terms(request.query, self._deployment.db_analyzer)
            except InvalidInputError as exc:  # raised where the search needs the terms
                terms = exc
        ahead = getattr(self._projection, "search_ahead", None)
        if ahead is not None:
            vector = request.query_vector if request.mode != "fts" else None
            fts = None if isinstance(terms, InvalidInputError) else terms
            ready = vector is not None and self._deployment.profile is not None
            ahead([m.artifact_id for m in request.memories], fts, vector,
                  self.candidate_budget(request.limit), GENERATION_KEY if ready else None)
        return terms

    def search_sync(self, request: MemorySearchRequest) -> MemorySearchResult:
        """:meth:`search` inside the caller's read transaction."""
        searched = self._ahead_sync(request)
        manifests = self._heads_sync(request.memories)
        heads = [head.ref for head in manifests.values()]
        mode = request.mode
        fallback: str | None = None
        blank = not request.query.strip()
        if mode == "auto":
            fallback = (
                "no query vector (no embedding model, or it is unavailable)"
                if request.query_vector is None
                else self._vector_ready_sync(heads)
            )
            mode = "hybrid" if fallback is None else "fts"
        elif mode in ("vector", "hybrid"):
            if request.query_vector is None and not blank:
                raise CapabilityNotSupportedError(f"{mode} search needs an embedding model")
            reason = self._vector_ready_sync(heads)
            if reason is not None:
                raise CapabilityNotSupportedError(f"{mode} search is unavailable: {reason}")
        caps = self._host._db_caps
        if mode in ("fts", "hybrid") and caps is not None and not caps.fts:
            raise CapabilityNotSupportedError(
                "full-text search is unavailable: " + "; ".join(caps.reasons)
            )
        if blank and request.query_vector is None:  # nothing to search with: no hits
            return MemorySearchResult((), mode, fallback)
        budget = self.candidate_budget(request.limit)
        ids = sorted(manifests)
        versions: dict[str, MemoryEntryVersion] = {}
        channels: dict[Channel, list[SearchCandidate]] = {}
        if mode in ("fts", "hybrid"):
            if isinstance(searched, InvalidInputError):
                raise searched
            terms = searched
            channels["fts"] = []
            if terms:
                stream = self._projection.fts_stream(ids, terms, budget)
                channels["fts"] = self._channel_sync(
                    "fts", stream, budget, manifests, versions, terms)
        if mode in ("vector", "hybrid"):
            profile = self._deployment.profile
            assert request.query_vector is not None and profile is not None
            check_vector(request.query_vector, profile)
            stream = self.vector_stream(ids, request.query_vector, budget)
            channels["vector"] = self._channel_sync(
                "vector", stream, budget, manifests, versions)
        hits = ranking.rank(channels, manifests, versions, request.limit)
        return MemorySearchResult(hits, mode, fallback)

    def _channel_sync(
        self,
        channel: Channel,
        stream: Iterator[SearchCandidate],
        budget: int,
        heads: dict[str, SearchHead],
        versions: dict[str, MemoryEntryVersion],
        terms: Sequence[str] = (),
    ) -> list[SearchCandidate]:
        """The first ``budget`` rows of ``stream`` (the backend's order) that the head
        manifest trusts, that the channel's admission accepts (over ``terms`` for fts)
        and whose stored version core confirms (:mod:`powercontext.core.ranking`), with
        the versions read into ``versions``. Fewer only when the stream runs out (or, on
        a channel whose admission is monotone, at the first refusal).

        Rows are taken in batches of as many as are still wanted (fts: admitted ones),
        whose manifest items (a lazily read head) and versions are each read in one
        statement; a batch whose rows fail takes another. Every row is judged in the
        stream's order, so the answer is the first ``budget`` rows that pass."""
        out: list[SearchCandidate] = []
        exhausted = False
        stops = ranking.refusal_ends_channel(channel)
        try:
            while len(out) < budget and not exhausted:
                batch: list[SearchCandidate] = []
                while len(batch) < budget - len(out):
                    c = next(stream, None)
                    if c is None:
                        exhausted = True
                        break
                    # fts: admission first: it refuses most rows (3 of 4 on LoCoMo
                    # questions), so trust is read and checked on the admitted ones only
                    if stops or ranking.admit(channel, c, terms):
                        batch.append(c)
                _prefetch(heads, batch)
                pending: list[SearchCandidate] = []
                for c in batch:
                    if not ranking.trusted(c, heads):
                        continue
                    # vector: only a trusted row's refusal ends the channel (an ANN
                    # stream at a larger k can place a nearer row after a stale one)
                    if stops and not ranking.admit(channel, c, terms):
                        exhausted = True
                        break
                    pending.append(c)
                wanted = [c.entry_version_id for c in pending
                          if c.entry_version_id not in versions]
                if wanted:
                    versions.update(
                        (v.entry_version_id, v)
                        for v in self._tables.rows.entry_versions(wanted))
                out.extend(c for c in pending
                           if ranking.confirmed(c, versions.get(c.entry_version_id), heads))
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # an adapter's open cursor ends with the channel
        return out

    def vector_stream(
        self, artifact_ids: Sequence[str], vector: EmbeddingVector, first: int
    ) -> Iterator[SearchCandidate]:
        """Head rows of these Memories by ascending L2 distance (the adapter's tie-break
        within equal distances), lazily, from nearest-neighbour queries of growing ``k``
        (the projection's ``vector_first_k``, then doubling). A row is yielded only once its
        place is certain: either the answer was shorter than ``k`` (every row seen) or
        its distance is below the ``k``-th one (rows at that distance may be missing
        from the answer). Past the projection's ``vector_k_cap`` the rows of the largest answer are
        yielded as given. An ANN answer (SQLite's sign-bit first pass) is yielded the
        same way, each row once."""
        projection = self._projection
        cap = projection.vector_k_cap
        start = projection.vector_first_k(first)
        k = start if cap is None else min(start, cap)
        seen: set[tuple[str, str, str]] = set()

        def fresh(rows: list[SearchCandidate]) -> Iterator[SearchCandidate]:
            # by identity, not position: an ANN answer at a larger k may place a row
            # before the ones already yielded (an exact one never does)
            for c in rows:
                key = (c.artifact_id, c.entry_id, c.entry_version_id)
                if key not in seen:
                    seen.add(key)
                    yield c

        while True:
            page = projection.vector_candidates(artifact_ids, vector, k)
            if len(page) < k or (cap is not None and k >= cap):
                yield from fresh(page)
                return
            last = page[-1].distance
            yield from fresh([c for c in page if c.distance is not None and last is not None
                              and c.distance < last])
            k = k * 2 if cap is None else min(k * 2, cap)

    async def search(self, request: MemorySearchRequest) -> MemorySearchResult:
        """Memory RFC, "Search and reads": one read transaction; only active entries of
        the current heads, re-checked against the manifest; admission then RRF.

        ``request.memories``: exact ArtifactRefs (each must be the head:
        CapabilityNotSupportedError otherwise) or :class:`CurrentHead` names, whose head
        is read inside the same transaction (never a race with a concurrent write).
        Each channel contributes the first ``max(limit * 4, 32)`` candidates, in the
        backend's order (bm25-like relevance over the OR of every query term; L2
        distance), that the manifest trusts and that pass the channel's admission: the
        spec's "max(limit * 4, 32) candidates" counted after admission, so a candidate
        refused by admission never takes an admitted one's place, and the hits at a
        smaller limit are the first ones at a larger limit (fts, vector) or as many as
        there are (hybrid, auto). ArtifactNotFoundError for an unknown Memory;
        InvalidInputError for a query over the bounds of :mod:`powercontext.core.query`;
        CapabilityNotSupportedError for an unservable mode."""
        return await self._host._run(self._host._in_tx, False, self.search_sync, request)
