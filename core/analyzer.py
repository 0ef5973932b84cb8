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
  backends index the same tokens, plus auxiliary verbs, object pronouns and the pieces
  that splitting a contraction leaves (``s``, ``t``, ``ll``, ``re``, ``ve``).
* An ASCII word made only of letters is stemmed with the Porter (1980) algorithm
  (:func:`stem`; the same stems as SQLite FTS5's ``porter`` tokenizer), so ``painting``
  and ``paints`` both give ``paint``; a word whose stem is a stopword (``one`` -> ``on``)
  is kept unstemmed. Words with digits and non-ASCII words are not stemmed.

Changing any rule needs a rebuild of every FTS projection (``powercontext memory rebuild``).
"""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Iterable

__all__ = [
    "ANALYZER_VERSION",
    "MAX_WORD_BYTES",
    "MAX_WORD_CHARS",
    "STOPWORDS",
    "analyze",
    "is_cjk",
    "query_terms",
    "searchable_text",
    "stem",
]

ANALYZER_VERSION = "analyzer-v1"
MAX_WORD_CHARS = 40
MAX_WORD_BYTES = 40

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "am",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "being",
        "but",
        "by",
        "com",
        "d",
        "de",
        "did",
        "do",
        "does",
        "doing",
        "en",
        "for",
        "from",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "him",
        "his",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "la",
        "ll",
        "m",
        "me",
        "my",
        "myself",
        "of",
        "on",
        "or",
        "our",
        "re",
        "s",
        "she",
        "so",
        "t",
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
        "us",
        "ve",
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


# --- Porter stemmer (M. F. Porter, "An algorithm for suffix stripping", 1980) -----------
# Lowercase ASCII letters only. Steps and conditions as in SQLite FTS5's ``porter``
# tokenizer (its ``bli -> ble`` and ``logi -> log`` rules, and its handling of a word that
# is all suffix and of ``yy``); m is the measure of [C](VC)^m[V]; steps 2 to 4 try only
# their longest matching suffix.

_VOWELS = frozenset("aeiou")
_STEP2 = {
    "ational": "ate", "tional": "tion", "enci": "ence", "anci": "ance", "izer": "ize",
    "bli": "ble", "alli": "al", "entli": "ent", "eli": "e", "ousli": "ous", "ization": "ize",
    "ation": "ate", "ator": "ate", "alism": "al", "iveness": "ive", "fulness": "ful",
    "ousness": "ous", "aliti": "al", "iviti": "ive", "biliti": "ble", "logi": "log",
}  # fmt: skip
_STEP3 = {
    "icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic", "ful": "",
    "ness": "",
}  # fmt: skip
_STEP4 = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion",
    "ou", "ism", "ate", "iti", "ous", "ive", "ize",
)  # fmt: skip


def _consonant(w: str, i: int) -> bool:
    ch = w[i]
    if ch in _VOWELS:
        return False
    if ch == "y":  # y is a consonant at the start of a word or after a vowel
        return i == 0 or not _consonant(w, i - 1)
    return True


def _measure(w: str) -> int:
    m, after_vowel = 0, False
    for i in range(len(w)):
        vowel = not _consonant(w, i)
        if after_vowel and not vowel:
            m += 1
        after_vowel = vowel
    return m


def _has_vowel(w: str) -> bool:
    return any(not _consonant(w, i) for i in range(len(w)))


def _double_consonant(w: str) -> bool:
    # as in FTS5, "yy" always counts as a double consonant
    return len(w) >= 2 and w[-1] == w[-2] and w[-1] not in _VOWELS


def _cvc(w: str) -> bool:
    """Ends consonant, vowel, consonant, the last not w, x or y (``*o`` in the paper)."""
    n = len(w)
    return (
        n >= 3
        and w[-1] not in "wxy"
        and _consonant(w, n - 1)
        and not _consonant(w, n - 2)
        and _consonant(w, n - 3)
    )


def _longest(w: str, suffixes: Iterable[str]) -> str | None:
    found = [s for s in suffixes if w.endswith(s)]
    return max(found, key=len) if found else None


def stem(word: str) -> str:
    """The Porter stem of a lowercase ASCII word (``ponies`` -> ``poni``, ``painting`` ->
    ``paint``, ``relational`` -> ``relat``); words of one or two letters are unchanged."""
    if len(word) <= 2:
        return word
    w = word
    if w.endswith(("sses", "ies")) and len(w) > 4 - w.endswith("ies"):  # step 1a
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if w.endswith("eed") and len(w) > 3:  # step 1b
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    else:
        for ending in ("ed", "ing"):
            if w.endswith(ending) and _has_vowel(w[: -len(ending)]):
                w = w[: -len(ending)]
                if w.endswith(("at", "bl", "iz")):
                    w += "e"
                elif _double_consonant(w) and w[-1] not in "lsz":
                    w = w[:-1]
                elif _measure(w) == 1 and _cvc(w):
                    w += "e"
                break
    if w.endswith("y") and _has_vowel(w[:-1]):  # step 1c
        w = w[:-1] + "i"
    for table in (_STEP2, _STEP3):  # steps 2 and 3
        suffix = _longest(w, table)
        if suffix is not None and _measure(w[: -len(suffix)]) > 0:
            w = w[: -len(suffix)] + table[suffix]
    suffix = _longest(w, _STEP4)  # step 4
    if suffix is not None:
        base = w[: -len(suffix)]
        if _measure(base) > 1 and (suffix != "ion" or base.endswith(("s", "t"))):
            w = base
    if w.endswith("e"):  # step 5a
        m = _measure(w[:-1])
        if m > 1 or (m == 1 and not _cvc(w[:-1])):
            w = w[:-1]
    if w.endswith("ll") and _measure(w) > 1:  # step 5b
        w = w[:-1]
    return w


def _word_token(word: str) -> str | None:
    word = word[:MAX_WORD_CHARS]
    if word.isascii():
        if word in STOPWORDS:
            return None
        if word.isalpha():
            stemmed = stem(word)
            # a stem that is a stopword ("one" -> "on") would vanish: keep the word
            return word if stemmed in STOPWORDS else stemmed
        return word
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
