"""Per-channel search admission applied before fusion (Memory RFC, "Search and reads").

Search relevance only: not the memory admission rules of candidate entries (Memory RFC,
"Memory admission rules"), which live with memory extraction.

FTS: distinct Analyzer v1 terms. A query of at most two terms needs one matched term;
a longer one needs at least :data:`FTS_MIN_MATCHED` matched terms and a coverage of at
least :data:`FTS_MIN_COVERAGE`. Vector: unit vectors, L2 distance turned into cosine
similarity (``1 - d**2 / 2``), admitted at or above :data:`VECTOR_MIN_COSINE`.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "FTS_MIN_COVERAGE",
    "FTS_MIN_MATCHED",
    "VECTOR_COSINE_TOLERANCE",
    "VECTOR_MIN_COSINE",
    "cosine_from_l2",
    "fts_admits",
    "vector_admits",
]

# Tuned on the LoCoMo dev benchmark (bench/locomo.py, issue 4 item 7): at least two
# matched terms and at least a quarter of the query's distinct terms (a third would gain
# hybrid recall but drop long natural-language queries that match two words); a cosine
# below 0.35 is at best loosely related for all-MiniLM-L6-v2 and only adds noise to RRF.
# A leave-one-conversation-out cross-validation of the floor (0.25..0.65,
# `python -m bench locomo --cv-only`) chose 0.40 or 0.65 by fold, neither stably, and no
# floor lifts hybrid above fts at R@5: the floor stays 0.35 (docs/benchmarks.md,
# "Cross-validated settings").
FTS_MIN_MATCHED = 2
FTS_MIN_COVERAGE = 0.25
VECTOR_MIN_COSINE = 0.35


def fts_admits(query_terms: tuple[str, ...], document_tokens: Iterable[str]) -> bool:
    """True when the document's tokens cover enough distinct query terms (repeated query
    terms count once)."""
    terms = set(query_terms)
    if not terms:
        return False
    matched = len(terms.intersection(document_tokens))
    if len(terms) <= 2:
        return matched >= 1
    return matched >= FTS_MIN_MATCHED and matched / len(terms) >= FTS_MIN_COVERAGE


def cosine_from_l2(distance: float) -> float:
    """Cosine similarity of two unit vectors from their L2 distance."""
    return 1.0 - (distance * distance) / 2.0


#: Engines compute distances in float32; a cosine within this of the bar is admitted on
#: every backend alike (seen: 0.25 exactly admitted by OceanBase, rejected by SQLite).
VECTOR_COSINE_TOLERANCE = 1e-6


def vector_admits(distance: float) -> bool:
    """True when the L2 distance of two unit vectors is close enough (cosine at or above
    :data:`VECTOR_MIN_COSINE`, within :data:`VECTOR_COSINE_TOLERANCE`)."""
    return cosine_from_l2(distance) >= VECTOR_MIN_COSINE - VECTOR_COSINE_TOLERANCE
