"""Snippet windows (Topic Memory RFC, chunk policy item 5). STUB."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.core.analyzer import Analyzer

__all__ = ["SNIPPET_CHARS", "match_snippet", "stable_snippet"]

SNIPPET_CHARS = 320


def match_snippet(text: str, terms: Sequence[str], analyzer: Analyzer) -> str | None:
    """A window of at most :data:`SNIPPET_CHARS` of ``text`` centred on the best
    Analyzer match of ``terms``; None when no term matches."""
    raise NotImplementedError


def stable_snippet(text: str) -> str:
    """The stable window of a chunk matched by the vector channel only."""
    raise NotImplementedError
