"""Second retrieval: the history queries of one CREATE's complete content (Topic Memory
RFC, "Second retrieval and related-group reconciliation": "using the complete title +
summary + detail"; TOPIC-MEMORY.md). The related groups formed from their results and
the ``reconcile`` stage are :mod:`powercontext.core.topic.reconcile`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from powercontext.core import analyzer as analyzers
from powercontext.core.analyzer import Analyzer
from powercontext.core.query import MAX_QUERY_CHARS, MAX_QUERY_TERMS
from powercontext.core.topic.models import TopicMemoryContent

__all__ = ["second_queries"]


_Terms = Callable[[str], tuple[str, ...]]


def _pieces(text: str, terms_of: _Terms) -> Iterator[tuple[str, tuple[str, ...]]]:
    """The whitespace-separated pieces of ``text`` with their terms, a piece over either
    query bound alone halved (at a code point) until each part is within both."""
    stack: list[str] = []
    for word in text.split():
        stack.append(word)
        while stack:
            piece = stack.pop()
            terms = terms_of(piece)
            if len(piece) <= MAX_QUERY_CHARS and len(terms) <= MAX_QUERY_TERMS:
                yield piece, terms
                continue
            mid = len(piece) // 2
            stack.append(piece[mid:])
            stack.append(piece[:mid])


def second_queries(content: TopicMemoryContent, analyzer: Analyzer | None = None
                   ) -> tuple[str, ...]:
    """The second-retrieval queries of one CREATE's complete content (Topic Memory RFC,
    "Second retrieval and related-group reconciliation"): the text of title, summary
    and detail, in that order, as a stream of whitespace-separated pieces packed
    greedily into queries of at most 8,192 characters and 64 distinct ``analyzer``
    terms each (:data:`~powercontext.core.query.MAX_QUERY_CHARS`,
    :data:`~powercontext.core.query.MAX_QUERY_TERMS`; default analyzer when None), the
    pieces of one query joined by single spaces. A piece that alone exceeds a bound
    (a long run without white space) is halved until each part fits. After the first
    query, a piece none of whose terms is new (every one was in an earlier query) is
    left out, so each query searches terms not searched yet. A query without terms
    (only stopwords or punctuation) is left out; exact duplicate queries coalesce.
    Every term of the content is in some query: the whole Topic is searched (Topic
    Memory RFC: "using the complete title + summary + detail"; a 32,768-character
    English detail gives a few dozen queries, each one search and, in a hybrid
    deployment, one reserved embedding request). A content with no terms gives
    ``()``. Every query passes :func:`powercontext.core.query.search_terms` with the
    same analyzer."""
    terms_of = (analyzer or analyzers.get(analyzers.DEFAULT_VERSION)).query_terms
    queries: dict[str, None] = {}
    current: list[str] = []
    length = 0
    terms: set[str] = set()
    searched: set[str] = set()

    def flush() -> None:
        if terms:
            queries.setdefault(" ".join(current))
            searched.update(terms)

    for field in (content.title, content.summary, content.detail):
        for piece, piece_terms in _pieces(field, terms_of):
            if queries and not set(piece_terms) - searched:
                continue  # nothing this piece would search is new
            new = terms.union(piece_terms)
            grown = length + len(piece) + (1 if current else 0)
            if current and (grown > MAX_QUERY_CHARS or len(new) > MAX_QUERY_TERMS):
                flush()
                current, length, terms = [piece], len(piece), set(piece_terms)
                continue
            current.append(piece)
            length, terms = grown, new
    flush()
    return tuple(queries)
