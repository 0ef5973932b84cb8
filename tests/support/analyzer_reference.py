"""The character-by-character scanner of the analyzers as it stood before the regex fast
path (issue 14: the analyzer ran at ~100 ms per 8 KB text), kept verbatim as the
reference the fast scanner must equal token for token
(tests/properties/test_analyzer_fast_props.py). Word tokens (stopwords, Porter stems,
hashing of long tokens) and v2's folding come from the analyzer itself (the folding has
its own reference, :func:`reference_fold`): only the scan is compared. v2's dotted
numbers (rule 5b) are found here by a regex over the identifier's text, not by the
analyzer's word walk."""

from __future__ import annotations

import re
import unicodedata

from powercontext.core.analyzer import (
    _JOINERS,
    Analyzer,
    _cjk_tokens,
    _cluster_tokens,
    _fit,
    _joined_token,
)
from powercontext.core.analyzer_fold import DROPPED, KEPT, LETTER_FOLDS, fold

_KANA_PUNCTUATION = frozenset((0x309B, 0x309C, 0x30A0, 0x30FB))
_UNSPACED_BLOCKS = (
    (0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1000, 0x109F), (0xAA60, 0xAA7F),
    (0xA9E0, 0xA9FF), (0x1780, 0x17FF), (0x19E0, 0x19FF), (0x1950, 0x197F),
    (0x1980, 0x19DF), (0x1A20, 0x1AAF), (0xAA80, 0xAADF),
)  # fmt: skip


def is_cjk(ch: str) -> bool:
    cp = ord(ch)
    if cp in _KANA_PUNCTUATION:
        return False
    return (
        0x3400 <= cp <= 0x4DBF
        or 0x4E00 <= cp <= 0x9FFF
        or 0xF900 <= cp <= 0xFAFF
        or 0x20000 <= cp <= 0x3FFFF
        or 0x3040 <= cp <= 0x309F
        or 0x30A0 <= cp <= 0x30FF
        or 0x31F0 <= cp <= 0x31FF
        or 0xFF66 <= cp <= 0xFF9F
        or 0x1AFF0 <= cp <= 0x1B16F
        or 0x1100 <= cp <= 0x11FF
        or 0x3130 <= cp <= 0x318F
        or 0xA960 <= cp <= 0xA97F
        or 0xAC00 <= cp <= 0xD7FF
        or 0xFFA0 <= cp <= 0xFFDC
    )


def is_unspaced(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _UNSPACED_BLOCKS) and unicodedata.category(
        ch
    )[0] in "LMN"


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or unicodedata.category(ch).startswith("M")


def _is_latin_word_char(ch: str) -> bool:
    return _is_word_char(ch) and not is_cjk(ch) and not is_unspaced(ch)


# a dotted number: number words joined by ".", the first maybe "v" + digits, starting at
# the identifier's start or after a joiner and ending at its end or before a joiner
_DOTTED = re.compile(r"(?:^|(?<=[-./_]))(v?)([0-9]+(?:\.[0-9]+)+)(?![^-./_])")


def _dotted(ident: str) -> tuple[list[int], list[str]]:
    """(word indexes of the v-words, joined tokens) of rule 5b in an identifier's text."""
    versions, numbers = [], []
    for m in _DOTTED.finditer(ident):
        if m.group(1):
            versions.append(sum(ident[: m.start()].count(j) for j in _JOINERS))
        if m.group(1) or m.start() > 0 or m.end() < len(ident):
            numbers.append(_fit("j_" + m.group(2).replace(".", "_")))
    return versions, numbers


def reference_fold(text: str) -> str:
    """v2's rule 1 straight from its description: each KEPT character swapped for a
    private-use placeholder (a starter that composes with nothing, as they are) around
    NFKC, half-width Hangul then mapped by its own decomposition; case folding; NFD; the
    DROPPED characters removed; LETTER_FOLDS; NFC."""
    kept = re.compile(f"[{KEPT}]")
    found = kept.findall(text)
    assert not any(0xF0000 <= ord(c) < 0xF0000 + len(found) for c in text)
    counter = iter(range(len(found)))
    marked = kept.sub(lambda _: chr(0xF0000 + next(counter)), text)
    out = unicodedata.normalize("NFKC", marked)
    for k, ch in enumerate(found):
        if 0xFFA0 <= ord(ch) <= 0xFFDC and unicodedata.decomposition(ch):
            ch = chr(int(unicodedata.decomposition(ch).split()[1], 16))
        out = out.replace(chr(0xF0000 + k), ch)
    out = unicodedata.normalize("NFD", out.casefold())
    out = re.sub(f"[{DROPPED}]", "", out)
    out = "".join(LETTER_FOLDS.get(c, c) for c in out)
    return unicodedata.normalize("NFC", out)


def reference_analyze(analyzer: Analyzer, text: str) -> list[str]:
    """``analyzer.analyze(text)`` as the old scanner computed it."""
    if analyzer.fold:
        text = fold(text)
    else:
        text = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    tokens: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if is_cjk(ch):
            j = i + 1
            while j < n and is_cjk(text[j]):
                j += 1
            tokens.extend(_cjk_tokens(text[i:j]))
        elif is_unspaced(ch):
            clusters, j = [], i
            while j < n and is_unspaced(text[j]):
                k = j + 1
                while k < n and unicodedata.category(text[k]).startswith("M"):
                    k += 1
                clusters.append(text[j:k])
                j = k
            tokens.extend(_cluster_tokens(clusters))
        elif _is_word_char(ch):
            words, j = [], i
            while True:
                k = j + 1
                while k < n and _is_latin_word_char(text[k]):
                    k += 1
                words.append(text[j:k])
                if k + 1 < n and text[k] in _JOINERS and _is_latin_word_char(text[k + 1]):
                    j = k + 1
                    continue
                j = k
                break
            versions, numbers = (_dotted(text[i:j]) if analyzer.dotted_numbers
                                 else ([], []))
            for w, word in enumerate(words):
                tokens.extend(analyzer._word_tokens(word))
                if w in versions:
                    tokens.extend(analyzer._word_tokens(word[1:]))
            if len(words) > 1:
                tokens.append(_joined_token(words))
                tokens.extend(numbers)
        else:
            j = i + 1
        i = j
    return tokens
