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

1. ``v1``, ``v1-porter``: NFC, then full Unicode case folding (``str.casefold``:
   ``ß``/``ẞ`` -> ``ss``, final ``ς`` -> ``σ``, Cherokee to its capitals, Deseret and
   other astral scripts to their lowercase, ``İ`` -> ``i`` + U+0307 as CaseFolding.txt's
   full mappings say), then NFC again
   (:func:`~powercontext.core.analyzer_fold.normalize`). ``v2`` also folds what people
   type otherwise (:func:`~powercontext.core.analyzer_fold.fold`: compatibility forms
   such as full-width and half-width ones, diacritics, invisible characters, letters
   such as ``ı``, ``ø`` and ``æ``), so ``cafe`` finds ``café`` and ``API`` finds
   ``ＡＰＩ``.
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

   5b (``v2``). A dotted number inside an identifier (two or more words of ASCII digits
   joined by ``.``, the first of which may be ``v`` + digits) also gives the joined
   token of its numbers after the identifier's (``release-1.2.3`` -> ...
   ``j_release_1_2_3 j_1_2_3``), unless that is the identifier's own joined token
   (``1.2.3``); a ``v`` + digits word there also gives its number after its own token
   (``v1.2.3`` -> ``v1 1 2 3 j_v1_2_3 j_1_2_3``). So ``1.2.3`` finds every spelling of
   that version, and ``v1.2.3`` finds ``1.2.3``.
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
  a split contraction leaves): it measures best on the LoCoMo dev benchmark
  (docs/analyzers.md).
* ``v2`` (:data:`V2`): ``v1-porter`` with v2's rule 1 (folding) and rule 5b (dotted
  numbers). The default (:data:`DEFAULT_VERSION`): search matches what people type.

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

from powercontext.core.analyzer_fold import fold, normalize
from powercontext.core.analyzer_porter import stem
from powercontext.core.analyzer_scripts import (
    is_cjk,
    is_latin_word_char,
    is_unspaced,
    is_word_char,
)
from powercontext.core.analyzer_stopwords import ENGINE_STOPWORDS, EXTENDED_STOPWORDS
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
    "V2",
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
        if ch < "\x80" or not is_latin_word_char(ch):
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


def _number(word: str) -> bool:
    return word.isdigit() and word.isascii()


def _dotted_numbers(words: list[str], joiners: list[str]) -> tuple[frozenset[int], list[str]]:
    """Rule 5b of an identifier's ``words`` and the ``joiners`` between them: (the
    indexes of the ``v``-words that start a dotted number, the dotted numbers' joined
    tokens, except one that is the identifier's own joined token). Linear."""
    versions: list[int] = []
    numbers: list[str] = []
    i, n = 0, len(words)
    while i < n - 1:
        word = words[i]
        version = len(word) > 1 and word[0] == "v" and _number(word[1:])
        if joiners[i] != "." or not (version or _number(word)) or not _number(words[i + 1]):
            i += 1
            continue
        j = i + 1
        while j + 1 < n and joiners[j] == "." and _number(words[j + 1]):
            j += 1
        if version:
            versions.append(i)
        if version or i > 0 or j < n - 1:  # else it is the identifier's own joined token
            numbers.append(_fit("j_" + "_".join([word[1:] if version else word,
                                                 *words[i + 1 : j + 1]])))
        i = j + 1
    return frozenset(versions), numbers


@final
@attrs.frozen
class Analyzer:
    """One version of the search analyzer (rules in the module docstring).

    ``version`` is the name a database records (``v1``, ``v1-porter``, ``v2``);
    ``stopwords`` the ASCII words dropped from content and queries; ``porter`` whether
    ASCII letter words are Porter-stemmed; ``fold`` whether rule 1 is v2's folding;
    ``dotted_numbers`` whether rule 5b applies. Pure: no I/O, the same tokens on every
    platform.
    """

    version: str
    stopwords: frozenset[str]
    porter: bool = False
    fold: bool = False
    dotted_numbers: bool = False

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
        text = fold(text) if self.fold else normalize(text)
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
            elif is_word_char(ch):
                words, joiners, j = [], [], i
                while True:
                    k = _latin_end(text, j + 1, n)
                    words.append(text[j:k])
                    if k + 1 < n and text[k] in _JOINERS and is_latin_word_char(text[k + 1]):
                        joiners.append(text[k])
                        j = k + 1
                        continue
                    j = k
                    break
                self._append_words(words, tokens, words_seen, joiners)
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
            if len(ident) == 1:
                self._append_words([ident], found, words_seen)
            elif self.dotted_numbers and "." in ident:
                joiners = _ASCII_JOINER.findall(ident)
                self._append_words(_ASCII_JOINER.split(ident), found, words_seen, joiners)
            else:
                self._append_words(_ASCII_JOINER.split(ident), found, words_seen)
        tokens.extend(found)

    def _append_words(self, words: list[str], tokens: list[str],
                      words_seen: dict[str, list[str]], joiners: list[str] | None = None,
                      ) -> None:
        """Append each word's tokens (memoised in ``words_seen``) and, for more than one
        word, the joined token; then, with :attr:`dotted_numbers` and the ``joiners``
        between the words, rule 5b's tokens."""
        numbers: list[str] = []
        versions: frozenset[int] = frozenset()
        if joiners is not None and self.dotted_numbers and "." in joiners:
            versions, numbers = _dotted_numbers(words, joiners)
        for i, word in enumerate(words):
            found = words_seen.get(word)
            if found is None:
                found = words_seen[word] = self._word_tokens(word)
            tokens.extend(found)
            if i in versions:  # "v1" of "v1.2.3": its number too
                number = word[1:]
                found = words_seen.get(number)
                if found is None:
                    found = words_seen[number] = self._word_tokens(number)
                tokens.extend(found)
        if len(words) > 1:
            tokens.append(_joined_token(words))
            tokens.extend(numbers)

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
#: ``v1-porter`` that also folds compatibility forms, diacritics, invisible characters and
#: special letters (rule 1 of v2) and finds a dotted number inside an identifier (5b).
V2: Final = Analyzer("v2", EXTENDED_STOPWORDS, porter=True, fold=True, dotted_numbers=True)
#: Every registered analyzer by version.
ANALYZERS: Final[Mapping[str, Analyzer]] = MappingProxyType(
    {a.version: a for a in (V1, V1_PORTER, V2)}
)
#: The analyzer of a database created without a choice (docs/analyzers.md, "v2").
DEFAULT_VERSION: Final = "v2"


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
