"""Reciprocal rank fusion (Memory RFC, "Search and reads").

``rrf_score = sum(1 / (60 + rank_in_channel))`` with ranks from 1; equal scores are broken
by ascending memory_artifact_id, UTF-8 entry_id, entry_version_id.

Scores are summed exactly (as fractions) and rounded to a float once, so candidates whose
sums are mathematically equal (ranks 6 and 39 versus 12 and 28) get the same score and
fall to the tie-break; summing floats would order them by rounding error.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import NamedTuple

import attrs

__all__ = ["RRF_K", "FusedCandidate", "RankKey", "fuse"]

RRF_K = 60


class RankKey(NamedTuple):
    """The identity of a ranked entry, in tie-break order. A plain 3-tuple compares and
    hashes equal to it, so :func:`fuse` takes either and returns the keys it was given."""

    memory_artifact_id: str
    entry_id: str
    entry_version_id: str


@attrs.frozen
class FusedCandidate:
    key: tuple[str, str, str]  # as given to fuse (a RankKey from core.ranking)
    score: float
    matched_by: tuple[str, ...]


def _tie_key(key: tuple[str, str, str]) -> tuple[bytes, bytes, bytes]:
    return (key[0].encode(), key[1].encode(), key[2].encode())


def fuse(
    channels: Mapping[str, Sequence[tuple[str, str, str]]], k: int = RRF_K
) -> list[FusedCandidate]:
    """Fuse admitted candidates of each channel (already in the channel's order).

    Keys are :class:`RankKey` ``(memory_artifact_id, entry_id, entry_version_id)``; a key
    repeated within one channel counts at its first rank. ``matched_by`` lists channels
    in the order ``fts``, ``vector`` (the order of ``channels``). Ties of the exact score
    go by ascending UTF-8 memory_artifact_id, entry_id, entry_version_id.
    """
    filled = [(name, keys) for name, keys in channels.items() if keys]
    if len(filled) == 1:
        # one channel with candidates (an empty one adds nothing): the ranks are
        # distinct, so the order is the channel's and no two scores tie; 1 / (k + rank)
        # is the float of the exact fraction (both round once)
        ((name, keys),) = filled
        single: dict[tuple[str, str, str], None] = dict.fromkeys(keys)
        return [FusedCandidate(key, 1 / (k + rank), (name,))
                for rank, key in enumerate(single, start=1)]
    scores: dict[tuple[str, str, str], Fraction] = {}
    matched: dict[tuple[str, str, str], list[str]] = {}
    for name, keys in channels.items():
        seen: set[Hashable] = set()
        rank = 0
        for key in keys:
            if key in seen:
                continue
            seen.add(key)
            rank += 1
            scores[key] = scores.get(key, Fraction(0)) + Fraction(1, k + rank)
            matched.setdefault(key, []).append(name)
    ordered = sorted(scores, key=lambda key: (-scores[key], _tie_key(key)))
    return [FusedCandidate(key, float(scores[key]), tuple(matched[key])) for key in ordered]
