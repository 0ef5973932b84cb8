"""Words and sentences as the ``deterministic`` Topic provider counts them (:mod:`._text`,
:mod:`._code`, :mod:`._topics`): subject terms (the ``v1-porter`` analyzer's terms, less
stopwords, numbers and very short words), sentences, and cuts at a word. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from powercontext.core import analyzer as analyzers

__all__ = ["ANALYZER", "content_terms", "cut_words", "sentences", "subject_terms",
           "subject_words"]

ANALYZER: Final = analyzers.get("v1-porter")
_WORDS = re.compile(r"[^\W_]+(?:[-_.'][^\W_]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=\S)")
#: Words too common to say what a text is about (on top of the analyzer's stopwords).
_STOP_TEXT: Final = """
about above after again against all also and any are because been before being below
between both but can cannot could did does doing down during each even ever few for from
further get got had has have having here how into its itself just let like lot made make
many more most much must nor not now off once only other our out over own really same
say should since some still such than that the their them then there these they thing
things think this those though through too under until very want was way well were what
when where which while who whom why will with would yeah yes you your going know good
great thanks thank sure definitely totally awesome wow glad hey okay one two lots feel
feeling see went come came time day new happy love cool nice amazing lol back yep sounds
something anything everything always never maybe pretty kind sort tell told said ask
asked last others taking shared use used using need needs via per etc note notes
"""
_STOP: Final = frozenset(ANALYZER.analyze(_STOP_TEXT)) | frozenset(_STOP_TEXT.split())


def content_terms(text: str) -> list[str]:
    """The analyzer terms of ``text`` (``v1-porter``: casefolded, stemmed) that can name
    a subject: no stopwords, no numbers, no one- or two-letter terms, no joined
    identifiers or hashed long words; in order, duplicates kept."""
    return [t for t in ANALYZER.analyze(text)
            if len(t) > 2 and not t.isdigit() and t not in _STOP
            and not t.startswith(("j_", "h_", "jx_"))]


def subject_terms(text: str, limit: int, exclude: Iterable[str] = ()) -> tuple[str, ...]:
    """The ``limit`` most frequent :func:`content_terms` of ``text`` (ties: first
    appearance), without the terms of the ``exclude`` words (speaker names)."""
    skip = {t for w in exclude for t in ANALYZER.analyze(w)}
    count: dict[str, int] = {}
    for t in content_terms(text):
        if t not in skip:
            count[t] = count.get(t, 0) + 1
    order = {t: i for i, t in enumerate(count)}
    return tuple(sorted(count, key=lambda t: (-count[t], order[t]))[:limit])


def subject_words(text: str, limit: int, exclude: Iterable[str] = ()) -> list[str]:
    """The words of ``text`` (their first spelling) that give its :func:`subject_terms`,
    in that order."""
    wanted = subject_terms(text, limit, exclude)
    if not wanted:
        return []
    spelling: dict[str, str] = {}
    for word in dict.fromkeys(_WORDS.findall(text)):
        for t in ANALYZER.analyze(word):
            spelling.setdefault(t, word)
        if len(spelling.keys() & set(wanted)) == len(wanted):
            break
    return [spelling[t] for t in wanted if t in spelling]


def cut_words(text: str, limit: int) -> str:
    """``text`` (one line) when it fits ``limit`` characters, else its longest prefix
    ending at a word (else a character) that fits with a closing ``…``."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[:limit - 1]
    at = head.rfind(" ")
    if at > limit // 3:
        head = head[:at]
    return head.rstrip(" ,;:-–—") + "…"


def sentences(text: str) -> list[str]:
    """The sentences of one paragraph of prose (white space collapsed; split after
    ``.``, ``!``, ``?`` or ``…`` followed by white space)."""
    flat = " ".join(text.split())
    return [s for s in _SENTENCE_END.split(flat) if s] if flat else []
