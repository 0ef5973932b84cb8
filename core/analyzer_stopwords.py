"""The stopword lists of the search analyzers (:mod:`powercontext.core.analyzer`, rule 6
in its docstring; docs/analyzers.md, "Why the engine decides the stopwords")."""

from __future__ import annotations

from typing import Final

__all__ = ["ENGINE_STOPWORDS", "EXTENDED_STOPWORDS"]

#: The words seekdb's SPACE parser drops whatever it is told: the InnoDB default
#: stopword list (seekdb 1.4.0, ``SELECT TOKENIZE(..., 'space', ...)`` and the index).
#: Every analyzer version drops at least these, so both engines index the same tokens.
ENGINE_STOPWORDS: Final = frozenset((
    "a", "about", "an", "are", "as", "at", "be", "by", "com", "de", "en", "for", "from",
    "how", "i", "in", "is", "it", "la", "of", "on", "or", "that", "the", "this", "to",
    "und", "was", "what", "when", "where", "who", "will", "with", "www",
))  # fmt: skip

#: The stopwords of ``v1-porter`` and ``v2``: :data:`ENGINE_STOPWORDS` plus auxiliary
#: verbs, object pronouns and the pieces a split contraction leaves (``s``, ``t``,
#: ``ll``, ``re``, ``ve``).
EXTENDED_STOPWORDS: Final = ENGINE_STOPWORDS | frozenset((
    "am", "and", "been", "being", "but", "d", "did", "do", "does", "doing", "had", "has",
    "have", "having", "he", "her", "him", "his", "its", "ll", "m", "me", "my", "myself",
    "our", "re", "s", "she", "so", "t", "than", "their", "them", "then", "there", "these",
    "they", "us", "ve", "we", "were", "which", "whom", "why", "would", "you", "your",
))  # fmt: skip
