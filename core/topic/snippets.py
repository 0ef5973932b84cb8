"""Snippet windows of a chunk (Topic Memory RFC, "Detail chunks and deployment-enabled
retrieval channels", item 5: "After a search hit, expand the snippet dynamically around
the best matching position"; a vector-only detail hit "uses a stable window from its
matched chunk").

Where a term matched. An Analyzer's tokens carry no positions, and its rules are
versioned, so they are not changed here: the text is cut into *spans* that the
Analyzer treats independently (:func:`token_spans`) and each span is analyzed on its
own. A span is a maximal run of one class: CJK characters (rule 2), characters of a
script written without spaces with their marks (rule 3), or other word characters with
the single ``-./_`` joiners between them (rules 4-5); every other character separates.
The tokens of the spans, in order, are exactly the tokens of the whole text (a property
test holds it), so a term is found in a span exactly when the Analyzer finds it there.
An analyzer that folds the text first (``v2``: an invisible character joins the words
around it, ``㈱`` becomes ``(株)``, ``．`` a joiner) may see other runs than the raw
characters show: where the spans of a whitespace-separated piece do not give that
piece's tokens, the piece is one span (ASCII spaces and controls end every rule).
Inside a CJK or unspaced run, a term is placed on its character or cluster (pair);
inside a long word run, on its word between joiners. The spans are found fast (an ASCII
stretch by one regex split, each distinct span's tokens from a bounded memo; the
character loop only around a non-ASCII character) and only the spans holding a query
term are placed; tests/support/snippet_reference.py keeps the plain definition they
equal.

The window: at most :data:`SNIPPET_CHARS` code points holding the most distinct query
terms (ties: the earliest), centred on them, its ends moved to whitespace when that is
near (:data:`_WORD_SLACK`), never inside a CRLF or a surrogate pair, trimmed of
surrounding whitespace. Deterministic: the same text and terms give the same snippet.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import accumulate

from powercontext.core.analyzer import Analyzer, is_cjk, is_unspaced

__all__ = ["SNIPPET_CHARS", "match_snippet", "stable_snippet", "token_spans"]

#: Code points of a snippet at most.
SNIPPET_CHARS = 320
#: How far (code points) a window end moves to reach whitespace instead of cutting a word.
_WORD_SLACK = 32
#: A word run longer than this is placed word by word (between its joiners).
_LONG_RUN = 64
_JOINERS = frozenset("-./_")  # Analyzer rule 5
_LOW, _HIGH = range(0xDC00, 0xE000), range(0xD800, 0xDC00)
#: The pieces a folding analyzer's spans are checked in (between ASCII spaces/controls).
_PIECE = re.compile(r"[^\x00-\x20\x7f]+")


def _mark(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "M"


def _word(ch: str) -> bool:
    return ch.isalnum() or _mark(ch)


def _class(text: str, i: int) -> str:
    """``C`` (CJK), ``U`` (unspaced script), ``W`` (other word character), ``J`` (a
    joiner between two W characters) or ``S`` (separator) for ``text[i]``."""
    ch = text[i]
    if ch.isascii():  # no ASCII character is CJK, unspaced or a mark
        return "W" if ch.isalnum() else "S"
    if is_cjk(ch):
        return "C"
    if is_unspaced(ch):
        return "U"
    if _word(ch):
        return "W"
    return "S"


Span = tuple[int, int, str, list[str]]


def token_spans(text: str, analyzer: Analyzer) -> list[Span]:
    """``(start, end, kind, tokens)`` of each span of ``text`` that has tokens, in order
    (module docstring); kind is ``C``, ``U`` or ``W``. Concatenated, the tokens are
    ``analyzer.analyze(text)``. Each span's ``tokens`` is a new list."""
    return [(s, e, k, list(t)) for s, e, k, t in _all_spans(text, analyzer)]


def _all_spans(text: str, analyzer: Analyzer) -> list[Span]:
    """:func:`token_spans`, its token lists shared with the memo (never mutated)."""
    spans = _fast_spans(text, analyzer)
    # an ASCII text folds to its lower case, whose runs are the raw ones
    if not analyzer.fold or text.isascii() or _tokens(spans) == analyzer.analyze(text):
        return spans
    seen: dict[str, list[str]] = {}
    out: list[Span] = []
    for m in _PIECE.finditer(text):
        piece = list(_spans(text, m.start(), m.end(), analyzer, seen))
        whole = analyzer.analyze(m.group())
        if _tokens(piece) == whole:
            out.extend(piece)
        elif whole:
            out.append((m.start(), m.end(), "W", whole))
    return out


#: Distinct spans whose tokens :func:`_span_tokens` keeps (a chunk's words recur across
#: chunks and searches).
_MEMO_SPANS = 1 << 16
#: An ASCII W span (rules 4-5: ASCII letters and digits, single joiners between them).
_ASCII_SPAN_SPLIT = re.compile(r"([A-Za-z0-9]+(?:[-./_][A-Za-z0-9]+)*)")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_NON_SPACE_RUN = re.compile(r"[^\x00-\x20\x7f]*")


@functools.lru_cache(maxsize=_MEMO_SPANS)
def _span_tokens(analyzer: Analyzer, span: str) -> list[str]:
    """``analyzer.analyze(span)``, memoised (a pure function of its arguments; the list
    is shared and never mutated)."""
    return analyzer.analyze(span)


def _fast_spans(text: str, analyzer: Analyzer,
                terms: frozenset[str] | None = None) -> list[Span]:
    """The spans :func:`_spans` gives for the whole ``text`` (only those whose tokens
    hold one of ``terms``, when given), faster: each ASCII stretch by one regex split
    (an ASCII W run is an :data:`_ASCII_SPAN_SPLIT` match; each distinct one is analyzed
    once, through the memo), each run of characters that are not ASCII spaces or
    controls around a non-ASCII character by :func:`_spans` (an ASCII space or control
    is in no span, so the loop restarts after one exactly as it does over the whole
    text)."""
    seen: dict[str, list[str]] = {}  # the spans around non-ASCII characters, this call
    out: list[Span] = []
    pos = 0
    while True:
        m = _NON_ASCII.search(text, pos)
        stop = len(text) if m is None else max(
            pos, text.rfind(" ", pos, m.start()) + 1, text.rfind("\n", pos, m.start()) + 1)
        parts = _ASCII_SPAN_SPLIT.split(text[pos:stop])  # gap, span, gap, span, ..., gap
        found: dict[str, list[str]] = {}
        for span in set(parts[1::2]):
            tokens = _span_tokens(analyzer, span)
            if tokens and (terms is None or not terms.isdisjoint(tokens)):
                found[span] = tokens
        if found:
            at = list(accumulate(map(len, parts), initial=pos))
            out.extend((at[k], at[k + 1], "W", found[parts[k]])
                       for k in range(1, len(parts), 2) if parts[k] in found)
        if m is None:
            return out
        end = _NON_SPACE_RUN.match(text, m.end()).end()  # type: ignore[union-attr]
        out.extend(span for span in _spans(text, stop, end, analyzer, seen)
                   if terms is None or not terms.isdisjoint(span[3]))
        pos = end


def _tokens(spans: list[Span]) -> list[str]:
    return [t for *_, tokens in spans for t in tokens]


def _spans(text: str, i: int, n: int, analyzer: Analyzer,
           seen: dict[str, list[str]]) -> Iterator[Span]:
    """The spans of ``text[i:n]`` by the raw characters' classes."""
    while i < n:
        kind = _class(text, i)
        j = i + 1
        if kind == "C":
            while j < n and is_cjk(text[j]):
                j += 1
        elif kind == "U":
            while j < n and (is_unspaced(text[j]) or _mark(text[j])):
                j += 1
        elif kind == "W":
            while j < n:
                if _class(text, j) == "W":
                    j += 1
                elif (text[j] in _JOINERS and j + 1 < n and _class(text, j + 1) == "W"
                      and _class(text, j - 1) == "W"):
                    j += 2
                else:
                    break
        else:
            i = j
            continue
        span = text[i:j]
        tokens = seen.get(span)
        if tokens is None:
            tokens = seen[span] = analyzer.analyze(span)
        if tokens:
            yield i, j, kind, tokens
        i = j


def _units(text: str, start: int, end: int, kind: str) -> list[tuple[int, int]]:
    """The units of a span a term is placed on: characters (C), clusters (U) or the
    words between joiners (W)."""
    if kind == "C":
        return [(k, k + 1) for k in range(start, end)]
    units: list[tuple[int, int]] = []
    k = start
    while k < end:
        m = k + 1
        if kind == "U":
            while m < end and _mark(text[m]):
                m += 1
        else:
            while m < end and text[m] not in _JOINERS:
                m += 1
        units.append((k, m))
        k = m + 1 if kind == "W" else m
    return units


def _matches(text: str, terms: frozenset[str], analyzer: Analyzer
             ) -> list[tuple[int, int, str]]:
    """``(start, end, term)`` of every placed match, ascending."""
    out: list[tuple[int, int, str]] = []
    # a folded text with other characters than ASCII is checked against its whole tokens
    spans = _all_spans(text, analyzer) if analyzer.fold and not text.isascii() \
        else _fast_spans(text, analyzer, terms)
    for start, end, kind, tokens in spans:
        found = terms.intersection(tokens)
        if not found:
            continue
        if kind == "W" and end - start <= _LONG_RUN:
            out.extend((start, end, t) for t in sorted(found))
            continue
        placed: set[str] = set()
        units = _units(text, start, end, kind)
        for a, (s, e) in enumerate(units):
            one = found.intersection(analyzer.analyze(text[s:e]))
            out.extend((s, e, t) for t in sorted(one))
            placed |= one
            if kind != "W" and a + 1 < len(units):
                pair_end = units[a + 1][1]
                two = found.intersection(analyzer.analyze(text[s:pair_end])) - one
                two -= set(analyzer.analyze(text[units[a + 1][0]:pair_end]))
                out.extend((s, pair_end, t) for t in sorted(two))
                placed |= two
        # a joined token (or anything not placed on a unit) belongs to the whole span
        out.extend((start, end, t) for t in sorted(found - placed))
    out.sort()
    return out


def _best(matches: list[tuple[int, int, str]]) -> tuple[int, int]:
    """The region ``[start, end)`` of the matches of the window (at most SNIPPET_CHARS
    from its first match) with the most distinct terms; ties: the earliest."""
    best, best_region = -1, (0, 0)
    counts: Counter[str] = Counter()
    j = 0
    for i, (start, _, _) in enumerate(matches):
        if j < i:
            j = i
            counts.clear()
        while j < len(matches) and (matches[j][1] - start <= SNIPPET_CHARS or j == i):
            counts[matches[j][2]] += 1
            j += 1
        if len(counts) > best:
            best = len(counts)
            best_region = (start, max(m[1] for m in matches[i:j]))
        counts[matches[i][2]] -= 1
        if not counts[matches[i][2]]:
            del counts[matches[i][2]]
    return best_region


def _forward(text: str, i: int) -> int:
    """``i`` moved forward by one when it would split a CRLF or a surrogate pair."""
    if 0 < i < len(text):
        a, b = text[i - 1], text[i]
        if (a == "\r" and b == "\n") or (ord(a) in _HIGH and ord(b) in _LOW):
            return i + 1
    return i


def _back(text: str, i: int) -> int:
    """``i`` moved back by one when it would split a CRLF or a surrogate pair."""
    if 0 < i < len(text):
        a, b = text[i - 1], text[i]
        if (a == "\r" and b == "\n") or (ord(a) in _HIGH and ord(b) in _LOW):
            return i - 1
    return i


def _trim(text: str, start: int, end: int) -> str:
    s, e = start, end
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return text[s:e] if e > s else text[start:end]


def _window(text: str, rs: int, re_: int) -> str:
    n = len(text)
    if re_ - rs >= SNIPPET_CHARS:
        ws, we = rs, rs + SNIPPET_CHARS
    else:
        ws = max(0, rs - (SNIPPET_CHARS - (re_ - rs)) // 2)
        we = min(n, ws + SNIPPET_CHARS)
        ws = max(0, we - SNIPPET_CHARS)
        if ws > 0 and not text[ws - 1].isspace():  # do not start inside a word
            for k in range(ws, min(rs, ws + _WORD_SLACK)):
                if text[k].isspace():
                    ws = k + 1
                    break
        if we < n and not text[we].isspace():  # do not end inside a word
            for k in range(we - 1, max(re_, we - _WORD_SLACK) - 1, -1):
                if text[k].isspace():
                    we = k
                    break
    ws, we = _forward(text, ws), _back(text, min(we, n))
    return _trim(text, ws, we)


def match_snippet(text: str, terms: Sequence[str], analyzer: Analyzer) -> str | None:
    """A substring of ``text`` of at most :data:`SNIPPET_CHARS` code points around the
    best match of ``terms`` (the query's distinct Analyzer tokens, from
    ``analyzer.query_terms``) under ``analyzer``: the window with the most distinct
    matched terms, the earliest on a tie (module docstring). None when no term matches
    (or ``terms`` is empty)."""
    wanted = frozenset(terms)
    if not wanted or not text:
        return None
    matches = _matches(text, wanted, analyzer)
    if not matches:
        return None
    return _window(text, *_best(matches))


def stable_snippet(text: str) -> str:
    """The stable window of a chunk matched by a vector channel only: its first
    :data:`SNIPPET_CHARS` code points, ended at whitespace when that is near, never
    inside a CRLF or a surrogate pair, trimmed of surrounding whitespace (the same
    string for the same chunk)."""
    we = min(len(text), SNIPPET_CHARS)
    if we < len(text) and not text[we].isspace():
        for k in range(we - 1, max(0, we - _WORD_SLACK) - 1, -1):
            if text[k].isspace():
                we = k
                break
    return _trim(text, 0, _back(text, we))
