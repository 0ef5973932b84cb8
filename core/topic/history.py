"""Historical Topic selection for one Window (Topic Memory RFC, "Probe and historical
Topic selection"; TOPIC-MEMORY.md, "RRF normalised to 0..100").

Each Probe's query is searched in the Window's Scope through the enabled Topic channels
(the backend collapses by Topic and fuses with RRF, k = 60, ranks from 1:
:func:`powercontext.core.topic.search.fuse_channels`). Here, pure:

1. :func:`probe_queries`: the Probe queries worth searching, in Probe order: exact
   duplicates coalesced, queries without Analyzer terms skipped (search refuses them);
2. :func:`normalized_score`: a hit's fused score over the best possible score of the
   enabled channels (rank 1 in every channel: ``channels / 61``), times 100, so 0..100;
3. :func:`select_history`: a Topic keeps its best normalised score over the Probes;
   those at or above ``history_rrf_threshold`` (70) are selected, best first, up to
   ``history_max_candidates`` (20); when fewer than ``history_min_candidates`` (5)
   qualify, the next Topics in fused-rank order fill the set up to that minimum; when
   fewer exist, all are used. Fused-rank order: best normalised score first, then the
   hit's content (UTF-8 title, then summary), and only then UTF-8 ``artifact_id`` and
   revision: Topic ids are random, so a tie broken by an id would make two runs over
   the same Sources choose different history;
4. :func:`probe_hits`: the one historical Topic each Probe's search found first
   among the selected (at or above the threshold), which the Work Planner must keep in
   one Work Item with every other Probe that found it.

The pipeline hands the selected refs to the Global Topic Evolver as history handles
``h1``, ``h2``, ... in the order returned.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import attrs

from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import InvalidInputError, TopicProcessingError
from powercontext.core.query import search_terms
from powercontext.core.rrf import RRF_K
from powercontext.core.topic.models import CHANNELS_HYBRID, TopicHit, TopicRef
from powercontext.core.topic.processing import ProcessingSettings

__all__ = [
    "HistoryCandidate",
    "best_possible_score",
    "normalized_score",
    "probe_hits",
    "probe_queries",
    "select_history",
]

#: Float slack allowed above the best possible score (the backend's score is the exact
#: RRF sum rounded to a float once).
_SLACK = 1e-9


def _check_channels(channels: object) -> int:
    if isinstance(channels, bool) or not isinstance(channels, int) \
            or not 1 <= channels <= len(CHANNELS_HYBRID):
        raise InvalidInputError("channels", f"must be an integer in 1..{len(CHANNELS_HYBRID)} "
                                f"(the enabled Topic channels), not {channels!r}")
    return channels


def best_possible_score(channels: int) -> float:
    """The fused RRF score of a Topic ranked first in every one of ``channels`` enabled
    channels: ``channels / (60 + 1)``. InvalidInputError (field ``channels``) unless
    ``channels`` is an integer in 1..4."""
    return _check_channels(channels) / (RRF_K + 1)


def normalized_score(score: float, channels: int) -> float:
    """``score / (channels / 61) * 100``: a fused RRF score (k = 60, ranks from 1) of
    ``channels`` enabled channels on the 0..100 scale (100 = first in every channel).
    A float rounding excess over 100 is clamped. InvalidInputError naming ``score`` for
    a non-number, NaN, a negative score or one above the best possible (beyond float
    rounding), or naming ``channels`` (see :func:`best_possible_score`)."""
    best = best_possible_score(channels)
    if isinstance(score, bool) or not isinstance(score, int | float) \
            or not math.isfinite(score) or score < 0:
        raise InvalidInputError("score", f"must be a finite score >= 0, not {score!r}")
    if score > best * (1 + _SLACK):
        raise InvalidInputError("score", f"{score!r} is above the best possible RRF score "
                                f"of {channels} channels ({best!r})")
    return min(100.0, score * (100 * (RRF_K + 1)) / channels)


def probe_queries(queries: Iterable[str], analyzer: Analyzer | None = None) -> tuple[str, ...]:
    """The Probe queries to search, in first-seen order: exact duplicates coalesced,
    queries with no ``analyzer`` terms (blank, punctuation, only stopwords) skipped.
    InvalidInputError naming ``query`` for a non-string or a query over the search
    bounds (:func:`powercontext.core.query.search_terms`)."""
    out: list[str] = []
    seen: set[str] = set()
    for query in queries:
        if query in seen:
            continue
        seen.add(query)
        if search_terms(query, analyzer):
            out.append(query)
    return tuple(out)


@attrs.frozen
class HistoryCandidate:
    """One selected historical Topic: its exact ``ref`` (the searchable Revision the
    Probes found), its best normalised ``score`` over the Window's Probes (0..100),
    the ``hit`` that gave it (title, summary, snippet; the first Probe's on a tie) and
    ``probes``: the 0-based indexes of the Probes that found it, ascending."""

    ref: TopicRef
    score: float
    hit: TopicHit
    probes: tuple[int, ...]


def _content_key(hit: TopicHit) -> tuple[bytes, bytes, bytes, int]:
    return (hit.title.encode("utf-8"), hit.summary.encode("utf-8"),
            hit.ref.artifact_id.encode("utf-8"), hit.ref.revision)


def _rank_key(c: HistoryCandidate) -> tuple[float, tuple[bytes, bytes, bytes, int]]:
    return -c.score, _content_key(c.hit)


def select_history(per_probe: Sequence[Sequence[TopicHit]], channels: int,
                   settings: ProcessingSettings) -> tuple[HistoryCandidate, ...]:
    """The historical Topics of a Window, in fused-rank order (best normalised score,
    then the hit's UTF-8 title and summary, then artifact_id and revision), from
    ``per_probe``: one hit list per
    searched Probe (a backend search result's ``hits``, any order), all searched through
    the same ``channels`` enabled channels (2 or 4; the search result's
    ``len(channels)``).

    Every Topic found keeps its best :func:`normalized_score` over the Probes. With
    ``q`` = how many score at least ``settings.history_rrf_threshold``, the result is the
    first ``max(min(q, history_max_candidates), min(history_min_candidates, found))``
    Topics of that order: those meeting the threshold first (up to the maximum), then
    the next in fused-rank order up to the minimum, all of them when fewer exist.
    Deterministic: the order of ``per_probe`` affects only ``hit`` on equal scores.

    InvalidInputError for bad ``channels`` or scores (:func:`normalized_score`);
    TopicProcessingError (code ``head_conflict``, stage ``history``, not terminal) when
    two Probes found different revisions of one Topic (its Head moved between their
    searches: the Window is retried from the same Cursor)."""
    _check_channels(channels)
    found: dict[str, HistoryCandidate] = {}
    for i, hits in enumerate(per_probe):
        for hit in hits:
            score = normalized_score(hit.score, channels)
            key = hit.ref.artifact_id
            known = found.get(key)
            if known is None:
                found[key] = HistoryCandidate(hit.ref, score, hit, (i,))
                continue
            if known.ref != hit.ref:
                raise TopicProcessingError(
                    "head_conflict", f"Topic {key} was found at revisions "
                    f"{known.ref.revision} and {hit.ref.revision} by two Probes of one "
                    "Window", stage="history")
            probes = known.probes if known.probes[-1] == i else (*known.probes, i)
            if score > known.score:
                found[key] = HistoryCandidate(hit.ref, score, hit, probes)
            else:
                found[key] = attrs.evolve(known, probes=probes)
    ranked = sorted(found.values(), key=_rank_key)
    qualified = sum(1 for c in ranked if c.score >= settings.history_rrf_threshold)
    n = max(min(qualified, settings.history_max_candidates),
            min(settings.history_min_candidates, len(ranked)))
    return tuple(ranked[:n])


def probe_hits(per_probe: Sequence[Sequence[TopicHit]], channels: int,
               selected: Sequence[HistoryCandidate], settings: ProcessingSettings
               ) -> tuple[TopicRef | None, ...]:
    """For each searched Probe (``per_probe`` as for :func:`select_history`), the
    historical Topic its search found first among ``selected``: the one with the
    Probe's highest normalised score, when that is at least
    ``settings.history_rrf_threshold`` (ties by the hit's content, as in fused-rank
    order); None when it found none of them that well. Topic Memory RFC, "Work Planner
    and direct Work Items": Probes that hit the same historical ArtifactRef enter the
    same Work Item. A Probe hits one Topic at most, so the rule never asks one Item to
    hold two targets. InvalidInputError for bad ``channels`` or scores."""
    _check_channels(channels)
    chosen = {c.ref.artifact_id: c.ref for c in selected}
    out: list[TopicRef | None] = []
    for hits in per_probe:
        best: tuple[float, tuple[bytes, bytes, bytes, int], TopicRef] | None = None
        for hit in hits:
            ref = chosen.get(hit.ref.artifact_id)
            if ref is None:
                continue
            score = normalized_score(hit.score, channels)
            if score < settings.history_rrf_threshold:
                continue
            key = (-score, _content_key(hit), ref)
            if best is None or key[:2] < best[:2]:
                best = key
        out.append(None if best is None else best[2])
    return tuple(out)
