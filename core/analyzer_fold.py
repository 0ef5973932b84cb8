"""How the search analyzers normalise a text before its tokens are cut
(:mod:`powercontext.core.analyzer`, rule 1 in its docstring; docs/analyzers.md).

:func:`normalize` is rule 1 of ``v1`` and ``v1-porter``: NFC, full case folding, NFC.

:func:`fold` is rule 1 of ``v2``, which folds what people do not type the way a text
was written, in this order:

1. **Compatibility forms** become their plain characters (NFKC): full-width ``ＡＰＩ``
   -> ``API``, half-width ``ｶﾀｶﾅ`` -> ``カタカナ`` (a half-width voiced mark joins its
   kana: ``ｶﾞ`` -> ``ガ``), ligatures (``ﬁ`` -> ``fi``), superscripts and subscripts
   (``²`` -> ``2``), circled and parenthesized letters and digits, mathematical letters,
   Roman numerals, Arabic presentation forms, Kangxi radicals, the no-break and other
   fixed-width spaces. The :data:`KEPT` characters stay as they are: those whose
   compatibility form is several CJK, Thai or Lao characters (squared words such as
   ``㌖`` and ``㍿``, the kana digraphs ``ゟ ヿ``, ``ำ``), a phrase (``ﷺ``) or a letter
   and two marks (Tibetan ``ཷ ཹ``): one character would give many tokens, past the
   full-text bound of the chunk policy; the spacing kana voiced marks ``゛ ゜``
   (punctuation, as in ``v1``); the Hangul compatibility jamo (NFKC would make them
   conjoining jamo that compose into syllables). Half-width Hangul becomes those jamo.
2. **Full case folding** (``str.casefold``): ``ß`` -> ``ss``, final ``ς`` -> ``σ``, the
   long ``ſ`` -> ``s``, ``İ`` -> ``i`` + U+0307.
3. **Marks and invisible characters** go (after canonical decomposition, :data:`DROPPED`):
   the combining diacritics of the Latin, Greek and Cyrillic alphabets (blocks
   U+0300-036F, U+1AB0-1AFF, U+1DC0-1DFF, U+20D0-20FF, U+FE20-FE2F: ``café`` ->
   ``cafe``, ``Zürich`` -> ``zurich``, ``İ`` -> ``i``, ``ё`` -> ``е``, ``й`` -> ``и``,
   Greek accents; not the iota subscript U+0345, which step 2 made ``ι``), the optional
   points of Hebrew and Arabic (vowel points, cantillation, harakat, the hamza above or
   below its carrier, the stretching tatweel), and the invisible format characters
   (soft hyphen, zero-width space, joiner and non-joiner, word joiner, byte order mark,
   direction marks and embeddings, variation selectors, tags), so a word keeps together
   across them.
4. **Letters without a decomposition** fold to the letters people type instead
   (:data:`LETTER_FOLDS`): dotless ``ı`` -> ``i`` (so Turkish ``İ I ı i`` all meet at
   ``i``), ``ø`` -> ``o``, ``ł`` -> ``l``, ``đ ð`` -> ``d``, ``ħ`` -> ``h``, ``ŧ`` ->
   ``t``, ``þ`` -> ``th``, ``æ`` -> ``ae``, ``œ`` -> ``oe`` and the other Latin letters
   with a stroke or bar.
5. NFC, which composes what is left (Hangul syllables, kana with their voiced marks).

Both are pure functions of the text; an ASCII text is only lowercased. The marks of
other scripts (Devanagari vowel signs, Thai and Khmer marks, the kana voiced marks) are
kept: there they are letters, not accents.
"""

from __future__ import annotations

import re
import unicodedata
from types import MappingProxyType
from typing import Final

__all__ = ["DROPPED", "KEPT", "LETTER_FOLDS", "fold", "normalize"]

#: Characters that compatibility folding leaves as they are (module docstring, step 1),
#: as a regex character class. Each is a starter (combining class 0) that composes with
#: nothing, so the text around them folds as if they were not there.
KEPT: Final = (
    "\u0e33\u0eb3\u0edc\u0edd"  # Thai and Lao SARA AM, Lao HO NO / HO MO
    "\u0f77\u0f79"  # Tibetan vocalic rr / ll: a subjoined letter and two marks
    "\u309b\u309c\u309f\u30ff"  # spacing kana voiced marks, kana digraphs yori / koto
    "\u3131-\u318e"  # Hangul compatibility jamo
    "\u321d\u321e\u327c\u327d"  # parenthesized and circled Korean words
    "\u32ff-\u3357\u337b-\u337f"  # squared era names and katakana words
    "\U0001f200\U0001f201"  # squared hiragana hoka, katakana koko
    "\ufdfa\ufdfb"  # Arabic ligatures of whole phrases
    "\uffa0-\uffdc"  # half-width Hangul (becomes the compatibility jamo)
)
_KEPT = re.compile(f"[{KEPT}]+")
# Half-width Hangul -> the compatibility jamo (its one-step decomposition, <narrow>).
_HALFWIDTH_HANGUL: Final = MappingProxyType({
    cp: int(unicodedata.decomposition(chr(cp)).split()[1], 16)
    for cp in range(0xFFA0, 0xFFDD) if unicodedata.decomposition(chr(cp))
})

#: What step 3 removes, as a regex character class (after canonical decomposition):
#: diacritics (not U+0345, the Greek iota subscript, which case folding makes ``ι``),
#: Hebrew and Arabic points, invisible format characters. None of them becomes anything
#: else by steps 1 and 2, so they can go first as well (:func:`fold`).
DROPPED: Final = (
    "\u0300-\u0344\u0346-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
    "\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7"  # Hebrew points and accents
    "\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed"
    "\u0640"  # Arabic harakat, Quranic marks, tatweel
    "\u00ad\u061c\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f"
    "\ufe00-\ufe0f\ufeff\U000e0000-\U000e0fff"  # invisible format characters
)
_DROPPED = re.compile(f"[{DROPPED}]+")

#: Step 4: lowercase letters Unicode does not decompose -> what is typed instead.
LETTER_FOLDS: Final = MappingProxyType({
    "ı": "i", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "ħ": "h", "ŧ": "t", "þ": "th",
    "æ": "ae", "œ": "oe", "ƀ": "b", "ƚ": "l", "ƶ": "z", "ǥ": "g", "ȼ": "c", "ɇ": "e",
    "ɉ": "j", "ɍ": "r", "ɏ": "y", "ɨ": "i", "ʉ": "u", "ᵽ": "p",
})  # fmt: skip
_LETTERS = re.compile(f"[{''.join(LETTER_FOLDS)}]")
_LETTER_TABLE: Final = MappingProxyType({ord(k): v for k, v in LETTER_FOLDS.items()})


def normalize(text: str) -> str:
    """Rule 1 of ``v1`` and ``v1-porter``: NFC, full case folding, NFC."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


def _compatibility(text: str, kept: bool) -> str:
    """Step 1: NFKC, except the :data:`KEPT` characters (``kept``: the text holds some)."""
    if not kept:
        return unicodedata.normalize("NFKC", text)
    out: list[str] = []
    pos = 0
    for m in _KEPT.finditer(text):
        out.append(unicodedata.normalize("NFKC", text[pos : m.start()]))
        out.append(m.group().translate(_HALFWIDTH_HANGUL))
        pos = m.end()
    out.append(unicodedata.normalize("NFKC", text[pos:]))
    return "".join(out)


#: Runs of non-ASCII characters: every character a step can act on is among them.
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")


def fold(text: str) -> str:
    """Rule 1 of ``v2`` (module docstring): compatibility forms, full case folding,
    diacritics and invisible characters, letters without a decomposition, NFC.

    Removing the step-3 characters before the normalisers gives the same text as
    removing them after (the last NFC reorders and composes what is left), and keeps a
    long run of diacritics (Zalgo text) from reaching CPython's canonical reordering,
    which is quadratic in a run of combining marks. In a mostly ASCII text, which steps
    have work is decided on its non-ASCII characters alone (steps 1 to 3 map ASCII to
    ASCII, and what they make of a character is what they make of it inside the text):
    8 KB of English with a few curly quotes folds in 0.06 ms instead of 0.14."""
    if text.isascii():
        return text.lower()
    # mostly non-ASCII (UTF-8 over 1/4 longer): probing the rare part would save nothing
    whole = (len(text.encode("utf-8", "surrogatepass")) - len(text)) * 4 > len(text)
    rare = "" if whole else "".join(_NON_ASCII_RUN.findall(text))
    if _DROPPED.search(text if whole else rare) is not None:
        text, rare = _DROPPED.sub("", text), _DROPPED.sub("", rare)
    kept = _KEPT.search(text if whole else rare) is not None
    text = unicodedata.normalize("NFD", _compatibility(text, kept).casefold())
    image = text if whole else unicodedata.normalize(
        "NFD", _compatibility(rare, kept).casefold())
    if _DROPPED.search(image) is not None:
        text = _DROPPED.sub("", text)
    if _LETTERS.search(image) is not None:
        text = text.translate(_LETTER_TABLE)
    return unicodedata.normalize("NFC", text)
