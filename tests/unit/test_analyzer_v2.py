"""The search analyzer ``v2`` (core/analyzer.py, core/analyzer_fold.py; docs/analyzers.md,
"v2"): search matches what people type. A query without the marks, widths or special
letters of the stored text finds it, query terms get the same folding as stored text, a
version number is found with or without its ``v``, and CJK stays as ``v1`` cuts it.
``v1`` and ``v1-porter`` keep their tokens (the spec's Analyzer v1 is the conformance
rule)."""

from __future__ import annotations

import re
import unicodedata

import pytest

from powercontext.core import analyzer
from powercontext.core.analyzer import DEFAULT_VERSION, V1, V1_PORTER, V2, get
from powercontext.core.analyzer_fold import DROPPED, KEPT, LETTER_FOLDS, fold

# What users see is the default analyzer's: these run on it (and fail on an earlier
# default that did not fold).
analyze = analyzer.analyze
query_terms = analyzer.query_terms


def finds(query: str, stored: str) -> bool:
    """Every term of ``query`` is a token of ``stored`` (an fts query finds the entry by
    all its terms)."""
    terms = query_terms(query)
    return bool(terms) and set(terms) <= set(analyze(stored))


# -------------------------------------------------------------- the examples


@pytest.mark.parametrize(
    ("query", "stored"),
    [
        ("cafe", "café au lait"),
        ("resume", "send me your résumé"),
        ("zurich", "the Zürich office"),
        ("API", "the ＡＰＩ gateway"),  # full-width Latin letters
        ("ｶﾀｶﾅ", "カタカナで書く"),  # half-width Katakana finds full-width
        ("カタカナ", "ｶﾀｶﾅで書く"),  # and the other way round
        ("1.2.3", "release v1.2.3 added the export button"),
    ],
)
def test_a_query_typed_without_marks_or_widths_finds_the_entry(query: str, stored: str) -> None:
    assert finds(query, stored), (query_terms(query), analyze(stored))


@pytest.mark.parametrize(
    ("query", "stored"),
    [("café", "cafe au lait"), ("Résumé", "my resume"), ("ＡＰＩ", "the API gateway"),
     ("ＣＡＦÉ", "Café"), ("ｶﾀｶﾅ", "ｶﾀｶﾅ")],
)
def test_query_terms_get_the_same_folding_as_stored_text(query: str, stored: str) -> None:
    assert finds(query, stored)


def test_a_version_with_its_v_finds_the_number_without_it() -> None:
    from powercontext.core.search_admission import fts_admits

    terms = query_terms("v1.2.3")
    stored = analyze("release 1.2.3")
    assert {"1", "2", "3", "j_1_2_3"} <= set(terms) & set(stored)
    assert fts_admits(terms, stored)


def test_the_default_is_v2_and_the_spec_analyzer_v1_keeps_its_rules() -> None:
    assert DEFAULT_VERSION == "v2" and get() is V2
    # v1 is the spec's conformance rule, v1-porter the earlier default: unchanged
    for old in (V1, V1_PORTER):
        assert not set(old.query_terms("cafe")) <= set(old.analyze("café"))
        assert old.analyze("ＡＰＩ") == ["x_" + "ａｐｉ".encode().hex()]
        assert old.analyze("v1.2.3") == ["v1", "2", "3", "j_v1_2_3"]


# -------------------------------------------------------------- the special foldings


@pytest.mark.parametrize(
    ("spellings", "why"),
    [
        (["İstanbul", "ISTANBUL", "istanbul", "Istanbul", "ıstanbul"],
         "Turkish dotted İ and dotless ı meet plain i, in every case"),
        (["DİYARBAKIR", "Diyarbakır", "diyarbakir"], "Turkish text typed on any keyboard"),
        (["Straße", "STRASSE", "strasse", "STRAẞE"], "ß and capital ẞ are ss"),
        (["ﬁle", "file", "FILE"], "the fi ligature"),
        (["ſtraſſe", "strasse"], "the long s"),
        (["Οδυσσεύς", "ΟΔΥΣΣΕΥΣ", "οδυσσευς", "Ὀδυσσεύς"],
         "Greek: final sigma, accents and breathings"),
        (["ёлка", "елка", "ЁЛКА"], "Cyrillic ё is е"),
        (["København", "kobenhavn", "KØBENHAVN"], "ø has no decomposition: o"),
        (["Łódź", "lodz"], "ł and the accents"),
        (["Ærø", "aero"], "æ is ae"),
        (["œuvre", "oeuvre", "Œuvre"], "œ is oe"),
        (["Þórður", "thordur"], "þ is th, ð is d"),
        (["Đakovo", "dakovo"], "đ is d"),
        (["naïve", "naive", "NAÏVE"], "diaeresis"),
        (["e\u0301cole", "école", "ecole"], "decomposed and precomposed accents"),
        (["micro\u00adservice", "microservice", "micro\u200bservice",
          "micro\u2060service", "\ufeffmicroservice"],
         "soft hyphen, zero-width space, word joiner, byte order mark: one word"),
        (["שָׁלוֹם", "שלום"], "Hebrew vowel points"),
        (["مُحَمَّد", "محمد", "مـحـمـد"], "Arabic harakat and the tatweel"),
        (["أحمد", "إحمد", "احمد"], "Arabic hamza on or under alef"),
        (["x²", "x2"], "superscript digits"),
        (["①", "1"], "circled digits"),
        (["𝐀𝐏𝐈", "API"], "mathematical letters"),
        (["Ⅻ", "xii"], "Roman numeral signs"),
        (["☕\ufe0f café", "☕ cafe"], "variation selectors"),
    ],
)
def test_special_foldings(spellings: list[str], why: str) -> None:
    tokens = {tuple(analyze(s)) for s in spellings}
    assert len(tokens) == 1, (why, {s: analyze(s) for s in spellings})
    assert tokens != {()}


def test_greek_iota_subscript_is_an_iota_in_both_spellings() -> None:
    # case folding makes U+0345 a letter (ι), so it is not dropped with the accents
    assert analyze("ᾳ") == analyze("α\u0345") == analyze("αι") == ["x_ceb1ceb9"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("किताब", "कताब"),  # Devanagari vowel signs are letters, not accents
        ("ที่", "ท"),  # Thai marks stay in their cluster
        ("ガ", "カ"),  # kana voiced marks are kept
        ("한", "하"),  # Hangul syllables are not decomposed
        ("ŋ", "n"),  # a letter of its own, not a letter with a stroke
    ],
)
def test_marks_that_are_letters_elsewhere_are_kept(a: str, b: str) -> None:
    assert analyze(a) != analyze(b)


# -------------------------------------------------------------- widths and CJK


def test_full_width_ascii_is_ascii() -> None:
    assert analyze("ＡＰＩ　Ｇａｔｅｗａｙ") == analyze("API Gateway") == ["api", "gatewai"]
    assert analyze("ｖ１．２．３") == analyze("v1.2.3")
    assert analyze("ＡＤＲ－０００５") == analyze("ADR-0005")


def test_half_width_katakana_is_full_width_with_its_voiced_marks() -> None:
    assert analyze("ｶﾞｷﾞｸﾞ") == analyze("ガギグ")
    assert analyze("ﾊﾟﾝ") == analyze("パン")
    assert analyze("ｰ") == analyze("ー")  # the prolonged sound mark
    # a voiced mark that composes with nothing stays a CJK unigram, as in v1
    assert analyze("ｱﾞ") == V1_PORTER.analyze("ア\u3099")


def test_half_width_hangul_is_the_full_width_jamo() -> None:
    assert analyze("ﾡﾤ") == analyze("ㄱㄴ") == V1_PORTER.analyze("ㄱㄴ")


@pytest.mark.parametrize(
    "text",
    ["中文记录偏好", "日本語のテキストです", "カタカナ テスト", "한국어 문장을 검색합니다",
     "ㅋㅋㅋ ㅠㅠ", "データの、中文。한국", "\U00020000\U0002a6d6", "ゟヿ"],
)
def test_full_width_cjk_gets_the_tokens_of_v1(text: str) -> None:
    assert V2.analyze(text) == V1_PORTER.analyze(text) != []


@pytest.mark.parametrize("kept", ["㌖", "㍿", "㍻", "ำ", "ຳ", "ໜ", "ཷ", "ﷺ", "゛", "゜", "ㄱ"])
def test_kept_compatibility_characters_give_the_tokens_of_v1(kept: str) -> None:
    # folding these would turn one character into many unigrams and bigrams, or jamo
    # into syllables; kana voiced marks stay punctuation
    text = f"前{kept}後 x{kept}y"
    assert V2.analyze(text) == V1_PORTER.analyze(text)


def test_kept_characters_are_starters_that_compose_with_nothing() -> None:
    # what lets the text around them fold as if they were not there
    kept = re.compile(f"[{KEPT}]")
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000
             and kept.match(chr(c))]
    assert len(chars) > 200
    for ch in chars:
        assert unicodedata.combining(ch) == 0
        assert unicodedata.normalize("NFD", ch) == ch
        for other in ("a", "\u0301", "\u3099", "\u1161", "カ"):
            assert unicodedata.normalize("NFC", ch + other) == ch + unicodedata.normalize(
                "NFC", other)


def test_dropped_characters_become_nothing_else_before_they_go() -> None:
    # fold() removes them before the normalisers as well: nothing steps 1 and 2 make
    # of them may survive step 3
    dropped = re.compile(f"[{DROPPED}]")
    for cp in range(0x110000):
        ch = chr(cp)
        if dropped.match(ch):
            image = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", ch).casefold())
            assert dropped.sub("", image) == "", hex(cp)


def test_letter_folds_are_lowercase_letters_without_a_decomposition() -> None:
    for letter, typed in LETTER_FOLDS.items():
        assert letter.islower() and unicodedata.decomposition(letter) == ""
        assert typed.isascii() and typed.isalpha() and typed.islower()
        assert fold(letter.upper()) == typed


# -------------------------------------------------------------- dotted numbers (rule 5b)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("1.2.3", ["1", "2", "3", "j_1_2_3"]),
        ("v1.2.3", ["v1", "1", "2", "3", "j_v1_2_3", "j_1_2_3"]),
        ("V1.2.3", ["v1", "1", "2", "3", "j_v1_2_3", "j_1_2_3"]),
        ("release-1.2.3", ["releas", "1", "2", "3", "j_release_1_2_3", "j_1_2_3"]),
        ("v1.2.3-beta", ["v1", "1", "2", "3", "beta", "j_v1_2_3_beta", "j_1_2_3"]),
        ("pkg-2.0.1.tar.gz", ["pkg", "2", "0", "1", "tar", "gz", "j_pkg_2_0_1_tar_gz",
                              "j_2_0_1"]),
        ("1.2-3.4", ["1", "2", "3", "4", "j_1_2_3_4", "j_1_2", "j_3_4"]),
        ("v2", ["v2"]),  # no dotted number: no extra token
        ("v2-api", ["v2", "api", "j_v2_api"]),
        ("1-2-3", ["1", "2", "3", "j_1_2_3"]),  # only dots make a dotted number
        ("python3.12", ["python3", "12", "j_python3_12"]),
        ("ｖ１．２．３", ["v1", "1", "2", "3", "j_v1_2_3", "j_1_2_3"]),
    ],
)
def test_dotted_numbers(text: str, tokens: list[str]) -> None:
    assert V2.analyze(text) == tokens


@pytest.mark.parametrize("spelling", ["v1.2.3", "V1.2.3", "1.2.3", "release-1.2.3",
                                      "pkg-1.2.3.tar.gz", "app@1.2.3", "(v1.2.3)"])
def test_a_version_number_finds_every_spelling_of_it(spelling: str) -> None:
    assert finds("1.2.3", f"we shipped {spelling} today")
    assert not finds("1.2.4", f"we shipped {spelling} today")


def test_a_dotted_number_of_one_hundred_digit_words_is_hashed_like_any_token() -> None:
    tokens = V2.analyze("v" + "1" * 100 + ".2")
    assert all(len(t) <= analyzer.MAX_TOKEN_CHARS for t in tokens)
    assert V2.query_terms("1" * 100 + ".2")[-1] in tokens
