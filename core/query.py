"""Bounds of a search query (Memory RFC, "Search and reads"; issue 9 item 3).

A query is at most :data:`MAX_QUERY_CHARS` characters and at most
:data:`MAX_QUERY_TERMS` distinct Analyzer v1 terms. Both bounds are checked before any
database work: a 40,000-word query would otherwise hold a backend's single worker for
seconds, and every other search would wait behind it. Topic Memory reuses the same
bounds.

:func:`search_terms` is the one place a search turns its query into terms.
"""

from __future__ import annotations

from collections.abc import Callable

from powercontext.core import analyzer as analyzers
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import InvalidInputError

__all__ = ["MAX_QUERY_CHARS", "MAX_QUERY_TERMS", "clip_query", "search_terms"]

#: Characters (Unicode code points) of a query, before analysis.
MAX_QUERY_CHARS = 8192
#: Distinct Analyzer v1 terms of a query.
MAX_QUERY_TERMS = 64


def search_terms(query: str, analyzer: Analyzer | None = None) -> tuple[str, ...]:
    """The distinct terms of ``query`` under ``analyzer`` (the database's; default: the
    default analyzer) in first-seen order, after checking its bounds. InvalidInputError
    naming ``query`` when it is not a string, is longer than :data:`MAX_QUERY_CHARS`
    characters or has more than :data:`MAX_QUERY_TERMS` distinct terms.
    A blank query has no terms."""
    if not isinstance(query, str):
        raise InvalidInputError("query", f"must be a string, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInputError(
            "query", f"is {len(query)} characters long; at most {MAX_QUERY_CHARS} are allowed")
    terms = (analyzer or analyzers.get(analyzers.DEFAULT_VERSION)).query_terms(query)
    if len(terms) > MAX_QUERY_TERMS:
        raise InvalidInputError(
            "query", f"has {len(terms)} distinct terms; at most {MAX_QUERY_TERMS} are allowed")
    return terms


def clip_query(text: str, analyzer: Analyzer | None = None) -> str:
    """The longest prefix of ``text`` that ends at a whitespace boundary (or is all of
    ``text``) and is within both bounds, for callers that build a query from free text
    (the prompt hook). Never raises for a string; may return ``""``."""
    terms_of = (analyzer or analyzers.get(analyzers.DEFAULT_VERSION)).query_terms
    text = text[:MAX_QUERY_CHARS + 1]
    if len(text) <= MAX_QUERY_CHARS and _fits(text, terms_of):
        return text
    # Whitespace always separates analyzer runs, so the terms of a prefix that ends at
    # whitespace are the union of the terms of its whitespace-separated pieces.
    seen: set[str] = set()
    end = 0
    for i, ch in enumerate(text):
        if not ch.isspace():
            continue
        piece = text[end:i]
        new = set(terms_of(piece)) - seen
        if i > MAX_QUERY_CHARS or len(seen) + len(new) > MAX_QUERY_TERMS:
            break
        seen |= new
        end = i
    clipped = text[:end]
    while clipped and not _fits(clipped, terms_of):  # pragma: no cover - defensive
        clipped = clipped[: len(clipped) // 2]
    return clipped


def _fits(text: str, terms_of: Callable[[str], tuple[str, ...]]) -> bool:
    return len(text) <= MAX_QUERY_CHARS and len(terms_of(text)) <= MAX_QUERY_TERMS
