"""Search ranking: every rule of a search that needs no engine (Memory RFC, "Search and
reads").

A backend streams head projection rows (:class:`SearchCandidate`) of each channel in its
own order and asks this module about each one: is it :func:`trusted` by the head
manifest (condition 1 and 2 of the spec, plus the projection's content hash), does the
channel's search admission :func:`admit` it, is the stored version it names
:func:`confirmed` (condition 3: its canonical bytes hash to the manifest). It keeps the
first :func:`candidate_budget` accepted rows of each channel and hands the lists to
:func:`rank`, which fuses them with RRF and builds the hits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, cast

import attrs

from powercontext.core import rrf, search_admission
from powercontext.core.errors import IntegrityError
from powercontext.core.models import (
    ArtifactRef,
    Channel,
    MemoryEntryVersion,
    MemoryHit,
    MemoryManifestEntry,
)
from powercontext.core.rrf import RankKey
from powercontext.core.verify import check_version_matches

__all__ = [
    "ManifestItems",
    "RankKey",
    "SearchCandidate",
    "SearchHead",
    "admit",
    "candidate_budget",
    "confirmed",
    "rank",
    "refusal_ends_channel",
    "trusted",
]


@attrs.frozen
class SearchCandidate:
    """A head projection row a search channel read (not yet trusted): the Memory, entry,
    entry version and entry content hash the projection holds, its Analyzer v1
    searchable_text, and for the vector channel its L2 ``distance`` to the query."""

    artifact_id: str
    entry_id: str
    entry_version_id: str
    entry_content_hash: str
    searchable_text: str
    distance: float | None = None

    @property
    def key(self) -> RankKey:
        return RankKey(self.artifact_id, self.entry_id, self.entry_version_id)


class ManifestItems(Protocol):
    """The items of one manifest by entry_id, as a search reads them: a mapping, or a
    reader of the stored items that answers the entries asked for."""

    def get(self, entry_id: str, /) -> MemoryManifestEntry | None: ...


@attrs.frozen(eq=False)
class SearchHead:
    """The head a search reads one Memory at: its exact ref and manifest (entry_id ->
    item), read in the search's transaction."""

    ref: ArtifactRef
    manifest: ManifestItems


def candidate_budget(limit: int) -> int:
    """Candidates per channel: ``max(limit * 4, 32)`` (Memory RFC, "Search and reads"),
    counted after trust and admission."""
    return max(limit * 4, 32)


def trusted(c: SearchCandidate, heads: Mapping[str, SearchHead]) -> bool:
    """The head manifest holds the row's entry, active, at exactly its version and entry
    content hash (a stale or damaged projection row is never ranked)."""
    head = heads.get(c.artifact_id)
    item = head.manifest.get(c.entry_id) if head is not None else None
    return (
        item is not None
        and item.state == "active"
        and item.entry_version_id == c.entry_version_id
        and item.entry_content_hash == c.entry_content_hash
    )


def admit(channel: Channel, c: SearchCandidate, terms: Sequence[str] = ()) -> bool:
    """The channel's search admission (:mod:`powercontext.core.search_admission`): fts
    over the query's distinct Analyzer v1 ``terms`` and the row's searchable_text;
    vector over the row's L2 distance."""
    if channel == "fts":
        return search_admission.fts_admits(tuple(terms), c.searchable_text.split())
    return c.distance is not None and search_admission.vector_admits(c.distance)


def refusal_ends_channel(channel: Channel) -> bool:
    """True when no row after one refused by admission can pass (vector: admission is
    monotone in distance, and the channel is in ascending distance)."""
    return channel == "vector"


def confirmed(
    c: SearchCandidate, version: MemoryEntryVersion | None, heads: Mapping[str, SearchHead]
) -> bool:
    """The stored entry version a trusted row names belongs to its Memory, is the
    manifest's, and its canonical bytes hash to the manifest's entry content hash."""
    if version is None or version.memory_artifact_id != c.artifact_id:
        return False
    head = heads.get(c.artifact_id)
    item = head.manifest.get(c.entry_id) if head is not None else None
    if item is None:
        return False
    try:
        check_version_matches(version, item)
    except IntegrityError:
        return False
    return True


def rank(
    channels: Mapping[Channel, Sequence[SearchCandidate]],
    heads: Mapping[str, SearchHead],
    versions: Mapping[str, MemoryEntryVersion],
    limit: int,
) -> tuple[MemoryHit, ...]:
    """The hits of a search: the channels' accepted rows (each list in the backend's
    order, at most :func:`candidate_budget` long, channels in the order fts, vector)
    fused by RRF (:func:`powercontext.core.rrf.fuse`: ``sum 1 / (60 + rank)``, ties by
    ascending UTF-8 memory_artifact_id, entry_id, entry_version_id), the first ``limit``.

    ``heads``: the Memories searched, by artifact id; ``versions``: the stored entry
    versions by entry_version_id, as :func:`confirmed` accepted them. A row the head
    manifest does not trust, or without its version, is left out (never ranked). Hits at
    a smaller ``limit`` are the first hits at a larger one. Pure; no error.
    """
    keys: dict[str, list[RankKey]] = {}
    for name, rows in channels.items():
        keys[name] = [
            c.key for c in rows
            if trusted(c, heads) and _version_of(c, versions) is not None
        ]
    hits = []
    for f in rrf.fuse(keys)[: max(limit, 0)]:
        key = RankKey(*f.key)
        v = versions[key.entry_version_id]
        hits.append(
            MemoryHit(
                heads[key.memory_artifact_id].ref,
                v.entry_id,
                v.entry_version_id,
                v.text,
                f.score,
                tuple(cast("list[Channel]", list(f.matched_by))),
                v.kind,
            )
        )
    return tuple(hits)


def _version_of(
    c: SearchCandidate, versions: Mapping[str, MemoryEntryVersion]
) -> MemoryEntryVersion | None:
    v = versions.get(c.entry_version_id)
    if v is None or v.memory_artifact_id != c.artifact_id or v.entry_id != c.entry_id:
        return None
    return v
