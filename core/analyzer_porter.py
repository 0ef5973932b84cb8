"""The Porter (1980) stemmer of the ``v1-porter`` analyzer (:mod:`powercontext.core.analyzer`,
rule list in its docstring): the stems of SQLite FTS5's ``porter`` tokenizer.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

__all__ = ["STEM_MEMO_WORDS", "stem"]

#: How many words' stems :func:`stem` keeps (a bounded memo of a pure function; the
#: import rule's ``_PURE_MEMOS``, docs/decisions.md "The analyzer memoises its own output").
STEM_MEMO_WORDS = 1 << 15

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


@functools.lru_cache(maxsize=STEM_MEMO_WORDS)
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
