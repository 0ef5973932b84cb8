"""The search analyzers: one tokenization for content and queries on every backend
(Memory RFC, "Normalization, hashing, and the search analyzer"; ARCHITECTURE.md,
"Analyzer v1 gives both backends the same tokens" and "Analyzer versions").

An :class:`Analyzer` is a frozen value named by its ``version``; :func:`get` finds a
registered one (:data:`ANALYZERS`), :data:`DEFAULT_VERSION` names the one a new database
gets. A database records the version it was built with and refuses to open with another
(:class:`~powercontext.core.errors.AnalyzerMismatchError`);
``powercontext memory rebuild --analyzer NAME`` migrates. Any change to a rule below is a
new version, never an edit of an existing one.

Output tokens are ASCII, space separated, made only of ``[a-z0-9_]`` and at most
:data:`MAX_TOKEN_CHARS` (84) characters, so SQLite FTS5 (``unicode61`` with ``_`` as a
token character) and OceanBase's SPACE parser (which silently drops longer tokens) index
exactly the same tokens.

Rules shared by every version, in order:

1. NFC, then full Unicode case folding (``str.casefold``: ``ß``/``ẞ`` -> ``ss``, final
   ``ς`` -> ``σ``, Cherokee to its capitals, Deseret and other astral scripts to their
   lowercase, ``İ`` -> ``i`` + U+0307 as CaseFolding.txt's full mappings say), then NFC
   again.
2. A run of CJK characters (Han, Hiragana, Katakana, Hangul; :func:`is_cjk`) gives
   unigrams ``u_<code point hex>``, then bigrams ``b_<hex>_<hex>`` of adjacent
   characters (``中文`` -> ``u_4e2d u_6587 b_4e2d_6587``).
3. A run of a script written without spaces (Thai, Lao, Myanmar, Khmer, Tai Le, New Tai
   Lue, Tai Tham, Tai Viet; :func:`is_unspaced`) is cut into clusters (a character and the
   combining marks after it) and gives unigrams ``g_<utf-8 hex>`` then bigrams
   ``gb_<hex>_<hex>`` of adjacent clusters, like CJK: no dictionary, so any substring of
   whole clusters is found.
4. Any other run of letters, digits and combining marks is a word. An ASCII word is kept
   as is; a word with other characters becomes ``x_<utf-8 hex>``.
5. Words joined by single ``-``, ``.``, ``/`` or ``_`` characters (``ADR-0005``,
   ``v1.2.3``, ``acme-cloud-dev``, ``src/app/main.py``) form an identifier: after the
   tokens of its words comes one joined token, ``j_`` + the words joined by ``_``
   (``j_adr_0005``), or ``jx_<utf-8 hex of the same>`` when a word is not ASCII. The
   joined token is built from the folded words before stopwords and stemming.
6. Stopwords (the version's list) are dropped from content and queries alike (words
   only; joined and prefixed tokens are never stopwords).
7. A token longer than :data:`MAX_TOKEN_CHARS` becomes ``h_`` + the first 32 hex digits
   of the SHA-256 of its full form, so a long word is found by its full spelling; a long
   word is also preceded by its prefix (an ASCII word's first :data:`MAX_WORD_CHARS`
   characters, a non-ASCII word's first :data:`MAX_WORD_BYTES` UTF-8 bytes in whole
   characters), which helps partial matching.

The versions:

* ``v1`` (:data:`V1`): the spec's Analyzer v1 exactly. No stemming; the
  stopwords are exactly :data:`ENGINE_STOPWORDS`, the InnoDB default list that seekdb's
  SPACE parser drops and cannot be told to keep (seekdb 1.4.0: ``PARSER_PROPERTIES``
  takes only ``min_token_size``/``max_token_size`` for SPACE and refuses
  ``stopword_table``; ``TOKENIZE`` refuses a ``stopwords`` option; ``SET GLOBAL
  ft_stopword_file`` is accepted and changes nothing). Dropping them everywhere keeps
  both engines' hits equal.
* ``v1-porter`` (:data:`V1_PORTER`): ``v1`` plus the Porter (1980) stemmer on ASCII words
  made only of letters of at most :data:`MAX_TOKEN_CHARS` characters (:func:`stem`, the
  stems of SQLite FTS5's ``porter``; a stem that is a stopword, ``one`` -> ``on``, is not
  used) and the longer :data:`EXTENDED_STOPWORDS` (auxiliary verbs, pronouns, the pieces
  a split contraction leaves). The default (:data:`DEFAULT_VERSION`): it measures best
  on the LoCoMo dev benchmark (docs/analyzers.md).

The label ``analyzer-v1`` that databases of earlier releases carry is not a version: its
rules changed under it, so such a database must be rebuilt.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
import unicodedata
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, final

import attrs

from powercontext.core.analyzer_porter import stem
from powercontext.core.errors import InvalidInputError

__all__ = [
    "ANALYZERS",
    "DEFAULT_VERSION",
    "ENGINE_STOPWORDS",
    "EXTENDED_STOPWORDS",
    "MAX_TOKEN_CHARS",
    "MAX_WORD_BYTES",
    "MAX_WORD_CHARS",
    "V1",
    "V1_PORTER",
    "Analyzer",
    "analyze",
    "get",
    "is_cjk",
    "is_unspaced",
    "query_terms",
    "searchable_text",
    "stem",
]

#: OceanBase's SPACE parser drops tokens longer than this (``max_token_size`` <= 84).
MAX_TOKEN_CHARS: Final = 84
#: The prefix kept of an over-long ASCII word (beside its hash token).
MAX_WORD_CHARS: Final = 40
#: The prefix kept of an over-long non-ASCII word, in UTF-8 bytes (whole characters).
MAX_WORD_BYTES: Final = 40
_HASH_HEX = 32
_JOINERS = frozenset("-./_")

#: The words seekdb's SPACE parser drops whatever it is told: the InnoDB default
#: stopword list (seekdb 1.4.0, ``SELECT TOKENIZE(..., 'space', ...)`` and the index).
ENGINE_STOPWORDS: Final = frozenset((
    "a", "about", "an", "are", "as", "at", "be", "by", "com", "de", "en", "for", "from",
    "how", "i", "in", "is", "it", "la", "of", "on", "or", "that", "the", "this", "to",
    "und", "was", "what", "when", "where", "who", "will", "with", "www",
))  # fmt: skip

#: The stopwords of ``v1-porter``: :data:`ENGINE_STOPWORDS` plus auxiliary verbs, object
#: pronouns and the pieces a split contraction leaves (``s``, ``t``, ``ll``, ``re``, ``ve``).
EXTENDED_STOPWORDS: Final = ENGINE_STOPWORDS | frozenset(
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


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or unicodedata.category(ch).startswith("M")


def _is_latin_word_char(ch: str) -> bool:
    """A character of a rule-4 word (not CJK, not an unspaced script)."""
    if ch < "\x80":  # ASCII: no marks, no CJK, no unspaced script
        return ch.isalnum()
    return _is_word_char(ch) and not is_cjk(ch) and not is_unspaced(ch)


# The scanner's fast path (the same tokens as a character-by-character scan; tests hold
# it to a verbatim copy of that scan): runs of ASCII letters and digits, and runs of the
# other ASCII characters, which separate, are each consumed by one regex match.
_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]+")
_ASCII_SEPARATORS = re.compile(r"[\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+")
# An identifier of ASCII words joined by single joiners (rule 5) is one match, used when
# what follows it cannot continue it (not a non-ASCII letter, nor a joiner before one).
_ASCII_IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[-./_][A-Za-z0-9]+)*")
_ASCII_JOINER = re.compile(r"[-./_]")
# A non-ASCII character, and a run of characters that are not ASCII spaces or controls
# (the pieces :meth:`Analyzer._fast_tokens` scans rule by rule).
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_NON_SPACE_RUN = re.compile(r"[^\x00-\x20\x7f]*")
#: A text is scanned whole, rule by rule, when UTF-8 adds over 1/_SCAN_ALL_AT to its length
#: (8 KB, whole / in pieces: French 2.1 / 2.9 ms, Russian 3.7 / 5.4, LoCoMo 2.3 / 1.4)
_SCAN_ALL_AT = 50


def _latin_end(text: str, k: int, n: int) -> int:
    """The end of the run of rule-4 word characters of ``text`` starting at ``k``."""
    while k < n:
        m = _ASCII_ALNUM.match(text, k)
        if m is not None:
            k = m.end()
            continue
        ch = text[k]
        if ch < "\x80" or not _is_latin_word_char(ch):
            return k
        k += 1
    return k


def _hashed(token: str) -> str:
    return "h_" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:_HASH_HEX]


def _fit(token: str) -> str:
    """``token`` itself when short enough for both engines, else its hash token."""
    return token if len(token) <= MAX_TOKEN_CHARS else _hashed(token)


def _bigrams(prefix: str, units: list[str]) -> list[str]:
    return [_fit(f"{prefix}_{a}_{b}") for a, b in itertools.pairwise(units)]


def _cjk_tokens(run: str) -> list[str]:
    units = [f"{ord(c):x}" for c in run]
    return [f"u_{u}" for u in units] + _bigrams("b", units)


def _cluster_tokens(clusters: list[str]) -> list[str]:
    units = [c.encode("utf-8").hex() for c in clusters]
    return [_fit(f"g_{u}") for u in units] + _bigrams("gb", units)


def _joined_token(words: list[str]) -> str:
    joined = "_".join(words)
    if joined.isascii():
        return _fit("j_" + joined)
    return _fit("jx_" + joined.encode("utf-8").hex())


@final
@attrs.frozen
class Analyzer:
    """One version of the search analyzer (rules in the module docstring).

    ``version`` is the name a database records (``v1``, ``v1-porter``); ``stopwords``
    the ASCII words dropped from content and queries; ``porter`` whether ASCII letter
    words are Porter-stemmed. Pure: no I/O, the same tokens on every platform.
    """

    version: str
    stopwords: frozenset[str]
    porter: bool = False

    def analyze(self, text: str) -> list[str]:
        """All tokens of ``text`` in order, duplicates kept: each matches
        ``[a-z0-9_]{1,84}``. A new list on every call.

        A text of at most :data:`MEMO_MAX_CHARS` characters is answered from a bounded
        memo of the last :data:`MEMO_TEXTS` texts analyzed (one write analyzes an entry's
        text for its projection and again in a deterministic embedder; a search analyzes
        its query for the bounds and again in the backend). The memo is invisible: the
        output is a pure function of (analyzer, text)."""
        if len(text) <= MEMO_MAX_CHARS:
            return list(_memo_tokens(self, text))
        return self._tokens(text)

    def _tokens(self, text: str) -> list[str]:
        text = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
        if len(text.encode("utf-8", "surrogatepass")) - len(text) > len(text) // _SCAN_ALL_AT:
            tokens: list[str] = []  # mostly non-ASCII: one rule scan beats many pieces
            self._scan_into(text, tokens, {}, {})
            return tokens
        return self._fast_tokens(text)

    def _fast_tokens(self, text: str) -> list[str]:
        """The tokens :meth:`_scan_into` gives a normalized text, faster: each run of
        non-space characters around a non-ASCII character is scanned rule by rule, the
        ASCII stretches between them by one regex pass (on ASCII every character is a
        separator or starts an
        identifier nothing can continue, so the identifiers are ``_ASCII_IDENTIFIER``'s
        matches; each distinct one is computed once per call). ASCII spaces and controls
        end every rule's look-ahead, so the pieces' tokens are the text's. 8 KB LoCoMo
        texts: ASCII 3.1 -> 1.1 ms, with a few curly quotes 2.3 -> 1.4 ms."""
        tokens: list[str] = []
        words_seen: dict[str, list[str]] = {}
        idents: dict[str, list[str]] = {}
        pos = 0
        while (m := _NON_ASCII.search(text, pos)) is not None:
            # back to the last space or line break (starting earlier, at any separator or
            # at pos, scans alike); a walk back in Python took 140 ms on 1 MB of no space
            at = m.start()
            start = max(pos, text.rfind(" ", pos, at) + 1, text.rfind("\n", pos, at) + 1)
            end = _NON_SPACE_RUN.match(text, m.end()).end()  # type: ignore[union-attr]
            for ident in _ASCII_IDENTIFIER.findall(text, pos, start):
                self._ascii_identifier(ident, tokens, words_seen, idents)
            self._scan_into(text[start:end], tokens, words_seen, idents)
            pos = end
        for ident in _ASCII_IDENTIFIER.findall(text, pos):
            self._ascii_identifier(ident, tokens, words_seen, idents)
        return tokens

    def _scan_into(self, text: str, tokens: list[str], words_seen: dict[str, list[str]],
                   idents: dict[str, list[str]]) -> None:
        """Append the tokens of ``text`` rule by rule; ``words_seen`` and ``idents`` are
        the call's memos (a text repeats its words and identifiers)."""
        i, n = 0, len(text)
        while i < n:
            sep = _ASCII_SEPARATORS.match(text, i)
            if sep is not None:
                i = sep.end()
                continue
            ch = text[i]
            if ch < "\x80":  # an ASCII letter or digit: an identifier of ASCII words?
                m = _ASCII_IDENTIFIER.match(text, i)
                assert m is not None
                e = m.end()
                if e == n or (text[e] < "\x80" and (
                        text[e] not in _JOINERS or e + 1 == n or text[e + 1] < "\x80")):
                    self._ascii_identifier(m.group(), tokens, words_seen, idents)
                    i = e
                    continue
            if ch >= "\x80" and is_cjk(ch):
                j = i + 1
                while j < n and is_cjk(text[j]):
                    j += 1
                tokens.extend(_cjk_tokens(text[i:j]))
            elif ch >= "\x80" and is_unspaced(ch):
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
                    k = _latin_end(text, j + 1, n)
                    words.append(text[j:k])
                    if k + 1 < n and text[k] in _JOINERS and _is_latin_word_char(text[k + 1]):
                        j = k + 1
                        continue
                    j = k
                    break
                self._append_words(words, tokens, words_seen)
            else:
                j = i + 1
            i = j

    def _ascii_identifier(
        self, ident: str, tokens: list[str], words_seen: dict[str, list[str]],
        idents: dict[str, list[str]],
    ) -> None:
        """Append the tokens of an identifier made of ASCII words (rules 4 to 7),
        computed once per call (``idents``)."""
        found = idents.get(ident)
        if found is None:
            found = idents[ident] = []
            words = _ASCII_JOINER.split(ident) if len(ident) > 1 else [ident]
            self._append_words(words, found, words_seen)
        tokens.extend(found)

    def _append_words(self, words: list[str], tokens: list[str],
                      words_seen: dict[str, list[str]]) -> None:
        """Append each word's tokens (memoised in ``words_seen``) and, for more than one
        word, the joined token."""
        for word in words:
            found = words_seen.get(word)
            if found is None:
                found = words_seen[word] = self._word_tokens(word)
            tokens.extend(found)
        if len(words) > 1:
            tokens.append(_joined_token(words))

    def _word_tokens(self, word: str) -> list[str]:
        if word.isascii():
            if word in self.stopwords:
                return []
            token = word
            if self.porter and word.isalpha() and len(word) <= MAX_TOKEN_CHARS:
                stemmed = stem(word)
                # a stem that is a stopword ("one" -> "on") would vanish: keep the word
                token = word if stemmed in self.stopwords else stemmed
            if len(token) <= MAX_TOKEN_CHARS:
                return [token]
            return [token[:MAX_WORD_CHARS], _hashed(token)]
        data = word.encode("utf-8")
        token = "x_" + data.hex()
        if len(token) <= MAX_TOKEN_CHARS:
            return [token]
        prefix = data[:MAX_WORD_BYTES].decode("utf-8", "ignore").encode("utf-8")
        return ["x_" + prefix.hex(), _hashed(token)]

    def searchable_text(self, text: str) -> str:
        """The FTS projection text of an entry: its tokens joined by single spaces."""
        return " ".join(self.analyze(text))

    def query_terms(self, query: str) -> tuple[str, ...]:
        """Distinct tokens of a query, in first-seen order (safe to quote into MATCH)."""
        return tuple(dict.fromkeys(self.analyze(query)))


#: Texts longer than this many characters are analyzed without the memo (an entry's text
#: is at most 8192 UTF-8 bytes, a query far less).
MEMO_MAX_CHARS: Final = 8192
#: How many (analyzer, text) results the memo keeps (least recently used goes first).
MEMO_TEXTS: Final = 64


@functools.lru_cache(maxsize=MEMO_TEXTS)
def _memo_tokens(analyzer: Analyzer, text: str) -> tuple[str, ...]:
    return tuple(analyzer._tokens(text))


#: The spec's Analyzer v1: no stemming, only the engine-forced stopwords.
V1: Final = Analyzer("v1", ENGINE_STOPWORDS)
#: Analyzer v1 with Porter stemming and the extended stopword list.
V1_PORTER: Final = Analyzer("v1-porter", EXTENDED_STOPWORDS, porter=True)
#: Every registered analyzer by version.
ANALYZERS: Final[Mapping[str, Analyzer]] = MappingProxyType(
    {a.version: a for a in (V1, V1_PORTER)}
)
#: The analyzer of a database created without a choice: the one that measures best on
#: the LoCoMo dev benchmark (``python -m bench locomo``; docs/benchmarks.md).
DEFAULT_VERSION: Final = "v1-porter"


def get(version: str | None = None) -> Analyzer:
    """The registered analyzer named ``version`` (None: :data:`DEFAULT_VERSION`).
    InvalidInputError (field ``analyzer``) names the known versions otherwise."""
    if version is None:
        version = DEFAULT_VERSION
    found = ANALYZERS.get(version) if isinstance(version, str) else None
    if found is None:
        raise InvalidInputError(
            "analyzer", f"unknown analyzer {version!r}; known: {', '.join(ANALYZERS)}"
        )
    return found


def analyze(text: str) -> list[str]:
    """:meth:`Analyzer.analyze` of the default analyzer."""
    return get().analyze(text)


def searchable_text(text: str) -> str:
    """:meth:`Analyzer.searchable_text` of the default analyzer."""
    return get().searchable_text(text)


def query_terms(query: str) -> tuple[str, ...]:
    """:meth:`Analyzer.query_terms` of the default analyzer."""
    return get().query_terms(query)
