"""The snippet windows of core/topic/snippets.py as they stood before the search path
computed them from a span index (every span of the chunk analyzed on each call, up to
91 % of a Topic search), kept verbatim as the definition the fast path must equal byte
for byte (tests/properties/test_topic_snippets_props.py,
tests/unit/test_topic_snippets_golden.py)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence

from powercontext.core.analyzer import Analyzer, is_cjk, is_unspaced

__all__ = ["match_snippet", "stable_snippet", "token_spans"]

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
    ``analyzer.analyze(text)``."""
    seen: dict[str, list[str]] = {}  # a span's tokens depend on its text alone
    spans = list(_spans(text, 0, len(text), analyzer, seen))
    if not analyzer.fold or _tokens(spans) == analyzer.analyze(text):
        return spans
    out: list[Span] = []
    for m in _PIECE.finditer(text):
        piece = list(_spans(text, m.start(), m.end(), analyzer, seen))
        whole = analyzer.analyze(m.group())
        if _tokens(piece) == whole:
            out.extend(piece)
        elif whole:
            out.append((m.start(), m.end(), "W", whole))
    return out


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
    for start, end, kind, tokens in token_spans(text, analyzer):
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
