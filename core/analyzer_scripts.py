"""Which characters the search analyzers treat as CJK, as a script written without
spaces, or as a word character (:mod:`powercontext.core.analyzer`, rules 2 to 4 in its
docstring). Fixed blocks, not Unicode properties where it matters, so the tokens do not
depend on the Unicode version of the running Python."""

from __future__ import annotations

import unicodedata

__all__ = ["is_cjk", "is_latin_word_char", "is_unspaced", "is_word_char"]

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
    if cp < 0x1100 or cp in _KANA_PUNCTUATION:  # nothing below Hangul Jamo is CJK
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


#: Blocks of scripts written without spaces between words: Thai, Lao, Myanmar (and its
#: extensions A and B), Khmer (and Khmer symbols), Tai Le, New Tai Lue, Tai Tham, Tai Viet.
_UNSPACED_BLOCKS = (
    (0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1000, 0x109F), (0xAA60, 0xAA7F),
    (0xA9E0, 0xA9FF), (0x1780, 0x17FF), (0x19E0, 0x19FF), (0x1950, 0x197F),
    (0x1980, 0x19DF), (0x1A20, 0x1AAF), (0xAA80, 0xAADF),
)  # fmt: skip


def is_unspaced(ch: str) -> bool:
    """A letter, mark or digit of a script written without spaces (Thai, Lao, Myanmar,
    Khmer, Tai Le, New Tai Lue, Tai Tham, Tai Viet, by block); the punctuation of those
    blocks (``๏``, ``។``, ``၊``) separates like other punctuation."""
    cp = ord(ch)
    if cp < 0x0E00:  # below Thai: no unspaced script
        return False
    return any(lo <= cp <= hi for lo, hi in _UNSPACED_BLOCKS) and unicodedata.category(
        ch
    )[0] in "LMN"


def is_word_char(ch: str) -> bool:
    """A letter, digit or combining mark (any script)."""
    return ch.isalnum() or unicodedata.category(ch).startswith("M")


def is_latin_word_char(ch: str) -> bool:
    """A character of a rule-4 word (a word character, not CJK, not an unspaced script)."""
    if ch < "\x80":  # ASCII: no marks, no CJK, no unspaced script
        return ch.isalnum()
    return is_word_char(ch) and not is_cjk(ch) and not is_unspaced(ch)
