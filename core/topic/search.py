"""Topic search ranking (Topic Memory RFC, "Detail chunks and deployment-enabled
retrieval channels", "search_topic_memory"; TOPIC-MEMORY.md, "Topic search").

The backend streams each enabled channel's rows in the engine's order (best first):
``topic_fts`` / ``detail_fts`` by full-text relevance, ``topic_vector`` /
``detail_vector`` by L2 distance. Here, per channel: the Memory admission floors
(:mod:`powercontext.core.search_admission`; fts over the query's distinct Analyzer
terms against the row's tokens, vector on the L2 distance of unit vectors), then the
collapse by Topic (its first admitted row, the best, is kept: for a detail channel, the
chunk the snippet comes from), then at most ``budget = candidate_budget(limit)`` Topics
(the per-channel limit applies only after the collapse). Channels are fused by RRF
(k = 60, summed exactly as fractions as :mod:`powercontext.core.rrf` does, so equal sums
tie exactly); ties go by ascending UTF-8 artifact_id, then revision. A Topic takes one
slot; ``matched_by`` lists its channels in :data:`CHANNELS_HYBRID` order. The snippet is
the best ``detail_fts`` chunk's :func:`~.snippets.match_snippet`, else the best
``detail_vector`` chunk's :func:`~.snippets.stable_snippet`, else None.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal, overload

import attrs

from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import IntegrityError, InvalidInputError
from powercontext.core.query import search_terms
from powercontext.core.ranking import candidate_budget
from powercontext.core.rrf import RRF_K
from powercontext.core.search_admission import fts_admits, vector_admits
from powercontext.core.topic.chunks import MAX_CHUNKS
from powercontext.core.topic.content import check_scope_id
from powercontext.core.topic.models import (
    CHANNELS_HYBRID,
    TopicChannel,
    TopicRef,
    TopicSearchRequest,
)
from powercontext.core.topic.snippets import match_snippet, stable_snippet

__all__ = [
    "MAX_LIMIT",
    "ChannelCollector",
    "ChannelRow",
    "ChannelRows",
    "FusedTopic",
    "channel_budget",
    "check_limit",
    "check_request",
    "collapse",
    "fuse_channels",
    "snippet_chunk",
    "topic_snippet",
    "vector_k",
]

MAX_LIMIT = 20
_FTS_CHANNELS = frozenset(("topic_fts", "detail_fts"))
_DETAIL_CHANNELS = frozenset(("detail_fts", "detail_vector"))


@attrs.frozen
class ChannelRow:
    """One active projection row a channel returned, in the engine's order: the Topic
    ref, the chunk ordinal (None for the title + summary channels), the row's Analyzer
    text (fts) and its L2 ``distance`` (vector)."""

    ref: TopicRef
    ordinal: int | None
    fts_text: str
    distance: float | None = None


class ChannelRows(Sequence[ChannelRow]):
    """One channel's rows as the engine returned them (``raw``, in its order), each made
    a :class:`ChannelRow` by ``make`` only when it is read: a collapse stops at its
    budget of Topics, often long before a KNN's ``k`` rows or a page end. Equal to any
    sequence of the same ChannelRows (a list included)."""

    __slots__ = ("_make", "_raw")

    def __init__(self, raw: Sequence[Any], make: Callable[[Any], ChannelRow]) -> None:
        self._raw = raw
        self._make = make

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, index: int) -> ChannelRow: ...
    @overload
    def __getitem__(self, index: slice) -> list[ChannelRow]: ...
    def __getitem__(self, index: int | slice) -> ChannelRow | list[ChannelRow]:
        if isinstance(index, slice):
            return [self._make(r) for r in self._raw[index]]
        return self._make(self._raw[index])

    def __iter__(self) -> Iterator[ChannelRow]:
        return map(self._make, self._raw)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ChannelRows | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ChannelRows({list(self)!r})"


@attrs.frozen
class FusedTopic:
    """One fused Topic: its active ref, the exact RRF score (rounded to a float once),
    the channels that matched it (CHANNELS_HYBRID order) and, per detail channel that
    matched, the ordinal of its best chunk."""

    ref: TopicRef
    score: float
    matched_by: tuple[TopicChannel, ...]
    best_chunk: Mapping[TopicChannel, int]  # detail channel -> ordinal of its best chunk


def check_limit(value: object) -> int:
    """``limit`` as an int in 1..:data:`MAX_LIMIT` (20). InvalidInputError (field
    ``limit``) for 0, 21, a bool, a string, a float or anything else."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError("limit", f"must be an integer, got {type(value).__name__}")
    if not 1 <= value <= MAX_LIMIT:
        raise InvalidInputError("limit", f"must be between 1 and {MAX_LIMIT}, got {value}")
    return value


def check_request(request: object, analyzer: Analyzer) -> tuple[str, tuple[str, ...], int]:
    """``(scope_id, terms, limit)`` of a :class:`TopicSearchRequest`: the Scope id
    (:func:`~.content.check_scope_id`, field ``scope_id``), the query's distinct
    ``analyzer`` terms in first-seen order (:func:`powercontext.core.query.search_terms`:
    at most 8,192 characters and 64 distinct terms; FTS syntax characters are plain
    text), and the limit (:func:`check_limit`). InvalidInputError naming the field, also
    for a query with a lone surrogate or with no terms (empty, blank, punctuation or
    only stopwords)."""
    if not isinstance(request, TopicSearchRequest):
        raise InvalidInputError(
            "request", f"must be a TopicSearchRequest, got {type(request).__name__}")
    scope_id = check_scope_id(request.scope_id)
    if isinstance(request.query, str):
        try:
            request.query.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError("query", "contains a lone surrogate (not valid "
                                    "Unicode)") from None
    terms = search_terms(request.query, analyzer)
    if not terms:
        raise InvalidInputError("query", "has no searchable terms (empty, punctuation or "
                                "only stopwords)")
    return scope_id, terms, check_limit(request.limit)


def channel_budget(limit: int) -> int:
    """Topics kept per channel after the collapse:
    :func:`powercontext.core.ranking.candidate_budget` (``max(4 * limit, 32)``)."""
    return candidate_budget(check_limit(limit))


def vector_k(limit: int) -> int:
    """Neighbours the detail vector channel asks for: ``channel_budget(limit) *
    MAX_CHUNKS`` (3,840 at limit 20, within sqlite-vec's 4,096), so ``budget`` distinct
    Topics are found even when every chunk of each is nearer than any other Topic's."""
    return channel_budget(limit) * MAX_CHUNKS


def _admits(channel: TopicChannel, row: ChannelRow, terms: tuple[str, ...]) -> bool:
    if channel in _FTS_CHANNELS:
        return fts_admits(terms, row.fts_text.split())
    return row.distance is not None and vector_admits(row.distance)


class ChannelCollector:
    """The incremental form of :func:`collapse`, for a backend that pages an fts channel:
    :meth:`add` each page in order until :attr:`full` (``budget`` Topics) or the rows
    end; :attr:`rows` is then what :func:`collapse` gives for all rows seen."""

    def __init__(self, channel: TopicChannel, terms: Sequence[str], budget: int) -> None:
        if channel not in CHANNELS_HYBRID:
            raise InvalidInputError("channel", f"unknown Topic channel {channel!r}")
        self.channel: TopicChannel = channel
        self._terms = tuple(dict.fromkeys(terms))
        self._budget = budget
        self._seen: set[str] = set()
        self.rows: list[ChannelRow] = []

    @property
    def full(self) -> bool:
        return len(self.rows) >= self._budget

    def add(self, rows: Iterable[ChannelRow]) -> bool:
        """Take ``rows`` (the next page, in the engine's order; none is read once full);
        True once full."""
        if self.full:
            return True
        for row in rows:
            if row.ref.artifact_id in self._seen or not _admits(self.channel, row,
                                                                self._terms):
                continue
            if self.channel in _DETAIL_CHANNELS and row.ordinal is None:
                raise IntegrityError(f"{self.channel}: a row of {row.ref.artifact_id} "
                                     "without a chunk ordinal")
            self._seen.add(row.ref.artifact_id)
            self.rows.append(row)
            if self.full:
                break
        return self.full


def collapse(channel: TopicChannel, rows: Sequence[ChannelRow], terms: Sequence[str],
             budget: int) -> list[ChannelRow]:
    """The admitted rows of one channel (fts: :func:`~.search_admission.fts_admits` of
    the distinct ``terms`` against ``row.fts_text``'s tokens; vector:
    :func:`~.search_admission.vector_admits` of ``row.distance``), one per Topic (its
    first admitted row, the best in the engine's order), at most ``budget``, in order."""
    collector = ChannelCollector(channel, terms, budget)
    collector.add(rows)
    return collector.rows


def _tie(ref: TopicRef) -> tuple[bytes, int]:
    return ref.artifact_id.encode("utf-8"), ref.revision


def fuse_channels(channels: Mapping[TopicChannel, Sequence[ChannelRow]],
                  limit: int) -> list[FusedTopic]:
    """RRF (k = 60) over collapsed channels (:func:`collapse`'s output): a Topic's
    score is ``sum(1 / (60 + rank))`` over the channels it appears in (rank from 1; a
    repeated Topic within one channel counts at its first rank), summed exactly. At most
    ``limit`` Topics, best first; ties by ascending UTF-8 artifact_id, then revision.
    ``matched_by`` in CHANNELS_HYBRID order, naming only channels given. IntegrityError
    when two channels name different revisions of one Topic (a mixed snapshot)."""
    limit = check_limit(limit)
    scores: dict[str, Fraction] = {}
    refs: dict[str, TopicRef] = {}
    matched: dict[str, set[TopicChannel]] = {}
    best: dict[str, dict[TopicChannel, int]] = {}
    for channel in CHANNELS_HYBRID:
        rows = channels.get(channel)
        if rows is None:
            continue
        seen: set[str] = set()
        for row in rows:
            key = row.ref.artifact_id
            if key in seen:
                continue
            seen.add(key)
            known = refs.setdefault(key, row.ref)
            if known != row.ref:
                raise IntegrityError(f"{key}: channels name revisions {known.revision} and "
                                     f"{row.ref.revision} of one Topic")
            scores[key] = scores.get(key, Fraction(0)) + Fraction(1, RRF_K + len(seen))
            matched.setdefault(key, set()).add(channel)
            if channel in _DETAIL_CHANNELS and row.ordinal is not None:
                best.setdefault(key, {})[channel] = row.ordinal
    unknown = set(channels) - set(CHANNELS_HYBRID)
    if unknown:
        raise InvalidInputError("channels", f"unknown Topic channels {sorted(unknown)}")
    ordered = sorted(scores, key=lambda k: (-scores[k], _tie(refs[k])))[:limit]
    return [FusedTopic(refs[k], float(scores[k]),
                       tuple(c for c in CHANNELS_HYBRID if c in matched[k]),
                       dict(best.get(k, {})))
            for k in ordered]


def snippet_chunk(fused: FusedTopic) -> tuple[Literal["match", "stable"], int] | None:
    """Which chunk a hit's snippet comes from: ``("match", ordinal)`` of the best
    ``detail_fts`` chunk, else ``("stable", ordinal)`` of the best ``detail_vector``
    chunk, else None (matched on title + summary only)."""
    if "detail_fts" in fused.best_chunk:
        return "match", fused.best_chunk["detail_fts"]
    if "detail_vector" in fused.best_chunk:
        return "stable", fused.best_chunk["detail_vector"]
    return None


def topic_snippet(fused: FusedTopic, chunk_texts: Mapping[int, str],
                  terms: Sequence[str], analyzer: Analyzer) -> str | None:
    """The snippet of a hit from its active chunks' texts by ordinal (TOPIC-MEMORY.md,
    "Topic search"): :func:`~.snippets.match_snippet` of the best ``detail_fts`` chunk,
    else (no such chunk, or no term placed in it) the :func:`~.snippets.stable_snippet`
    of the best ``detail_vector`` chunk, else None. IntegrityError if a chosen chunk's
    text is missing."""
    def text_of(ordinal: int) -> str:
        text = chunk_texts.get(ordinal)
        if text is None:
            raise IntegrityError(f"{fused.ref.artifact_id}: active chunk {ordinal} is "
                                 "missing")
        return text

    if "detail_fts" in fused.best_chunk:
        found = match_snippet(text_of(fused.best_chunk["detail_fts"]), terms, analyzer)
        if found is not None:
            return found
    if "detail_vector" in fused.best_chunk:
        return stable_snippet(text_of(fused.best_chunk["detail_vector"]))
    return None
