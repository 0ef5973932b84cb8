"""The character-by-character scanner of the analyzers as it stood before the regex fast
path (issue 14: the analyzer ran at ~100 ms per 8 KB text), kept verbatim as the
reference the fast scanner must equal token for token
(tests/properties/test_analyzer_fast_props.py). Word tokens (stopwords, Porter stems,
hashing of long tokens) come from the analyzer itself: only the scan is compared."""

from __future__ import annotations

import unicodedata

from powercontext.core.analyzer import (
    _JOINERS,
    Analyzer,
    _cjk_tokens,
    _cluster_tokens,
    _joined_token,
)

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


def reference_analyze(analyzer: Analyzer, text: str) -> list[str]:
    """``analyzer.analyze(text)`` as the old scanner computed it."""
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
            for word in words:
                tokens.extend(analyzer._word_tokens(word))
            if len(words) > 1:
                tokens.append(_joined_token(words))
        else:
            j = i + 1
        i = j
    return tokens
