"""Analyzer v1: one tokenization for content and queries on every backend (Memory RFC,
"Normalization, hashing, and the search analyzer"; ARCHITECTURE.md, "Analyzer v1").

Output tokens are ASCII, space separated, made only of ``[a-z0-9_]``, so SQLite FTS5
(``unicode61`` with ``_`` as a token character) and OceanBase's SPACE parser see the same
tokens. Rules, in order:

* NFC, then case folding, then NFC again.
* A run of CJK characters (Han, Hiragana, Katakana, Hangul) gives unigrams ``u_<hex>``
  and bigrams ``b_<hex>_<hex>`` of adjacent characters (``中文`` -> ``u_4e2d u_6587
  b_4e2d_6587``).
* Other runs of letters, digits and combining marks form words. An ASCII word is kept
  as is; a word with other characters becomes ``x_<utf-8 hex>``. Words are cut to
  :data:`MAX_WORD_CHARS` characters, and a non-ASCII word further to at most
  :data:`MAX_WORD_BYTES` UTF-8 bytes (whole characters), so every token is at most 82
  characters: OceanBase's SPACE parser silently drops tokens longer than its
  ``max_token_size`` (at most 84; seen on seekdb 1.4.0).
* Stopwords (:data:`STOPWORDS`) are dropped from content and queries alike. The list
  contains every word OceanBase's SPACE parser drops by default (the InnoDB default
  list: ``com``, ``de``, ``en``, ``how``, ``la``, ``und``, ``www`` among them), so both
  backends index the same tokens.

Changing any rule needs a rebuild of every FTS projection (``powercontext memory rebuild``).
"""

from __future__ import annotations

import itertools
import unicodedata

__all__ = [
    "ANALYZER_VERSION",
    "MAX_WORD_BYTES",
    "MAX_WORD_CHARS",
    "STOPWORDS",
    "analyze",
    "is_cjk",
    "query_terms",
    "searchable_text",
]

ANALYZER_VERSION = "analyzer-v1"
MAX_WORD_CHARS = 40
MAX_WORD_BYTES = 40

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "com",
        "de",
        "en",
        "for",
        "from",
        "has",
        "have",
        "he",
        "her",
        "his",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "la",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "und",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "www",
        "you",
        "your",
    ]
)


#: Symbols and punctuation inside the kana blocks (categories Sk, Pd, Po): a fixed list,
#: not a category test, so tokens do not depend on Python's Unicode version.
_KANA_PUNCTUATION = frozenset((0x309B, 0x309C, 0x30A0, 0x30FB))


def is_cjk(ch: str) -> bool:
    """Han (incl. extensions and compatibility), Hiragana, Katakana, Hangul; not the kana
    punctuation inside those blocks (゛ ゜ ゠ ・), which separates like other punctuation.

    Whole blocks and planes, assigned or not, so the answer does not depend on the
    Unicode version of the running Python (3.12 adds Han Extension H at U+31350).
    """
    cp = ord(ch)
    if cp in _KANA_PUNCTUATION:
        return False
    return (
        0x3400 <= cp <= 0x4DBF  # Han Extension A
        or 0x4E00 <= cp <= 0x9FFF  # Han
        or 0xF900 <= cp <= 0xFAFF  # Han compatibility
        or 0x20000 <= cp <= 0x3FFFF  # Han Extensions B.. and supplements (planes 2, 3)
        or 0x3040 <= cp <= 0x309F  # Hiragana
        or 0x30A0 <= cp <= 0x30FF  # Katakana
        or 0x31F0 <= cp <= 0x31FF  # Katakana phonetic extensions
        or 0xFF66 <= cp <= 0xFF9F  # halfwidth Katakana
        or 0x1AFF0 <= cp <= 0x1B16F  # Kana extensions and supplement
        or 0x1100 <= cp <= 0x11FF  # Hangul Jamo
        or 0x3130 <= cp <= 0x318F  # Hangul compatibility Jamo
        or 0xA960 <= cp <= 0xA97F  # Hangul Jamo Extended-A
        or 0xAC00 <= cp <= 0xD7FF  # Hangul syllables, Jamo Extended-B
        or 0xFFA0 <= cp <= 0xFFDC  # halfwidth Hangul
    )


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or unicodedata.category(ch).startswith("M")


def _word_token(word: str) -> str | None:
    word = word[:MAX_WORD_CHARS]
    if word.isascii():
        return None if word in STOPWORDS else word
    data = word.encode("utf-8")
    if len(data) > MAX_WORD_BYTES:
        data = data[:MAX_WORD_BYTES].decode("utf-8", "ignore").encode("utf-8")
    return "x_" + data.hex()


def _cjk_tokens(run: str) -> list[str]:
    out = [f"u_{ord(c):x}" for c in run]
    out.extend(f"b_{ord(a):x}_{ord(b):x}" for a, b in itertools.pairwise(run))
    return out


def analyze(text: str) -> list[str]:
    """All tokens of ``text`` in order, duplicates kept."""
    text = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    tokens: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if is_cjk(ch):
            j = i
            while j < n and is_cjk(text[j]):
                j += 1
            tokens.extend(_cjk_tokens(text[i:j]))
            i = j
        elif _is_word_char(ch):
            j = i
            while j < n and _is_word_char(text[j]) and not is_cjk(text[j]):
                j += 1
            tok = _word_token(text[i:j])
            if tok:
                tokens.append(tok)
            i = j
        else:
            i += 1
    return tokens


def searchable_text(text: str) -> str:
    """The FTS projection text of an entry: its tokens joined by single spaces."""
    return " ".join(analyze(text))


def query_terms(query: str) -> tuple[str, ...]:
    """Distinct tokens of a query, in first-seen order (safe to quote into MATCH)."""
    return tuple(dict.fromkeys(analyze(query)))
