"""Properties of ``v2``'s folding and dotted numbers over arbitrary text
(core/analyzer_fold.py; core/analyzer.py, rules 1 and 5b): the folding equals its
description step by step (support/analyzer_reference.py), is idempotent, treats every
spelling a person might type alike, and keeps CJK as ``v1`` cuts it."""

from __future__ import annotations

import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.analyzer_reference import reference_fold

from powercontext.core.analyzer import V1_PORTER, V2
from powercontext.core.analyzer_fold import fold

SETTINGS = settings(deadline=None)

_tricky = st.sampled_from(
    [*"ｶﾀｶﾅﾞﾟｱｰ゛゜ゟヿㄱㅏﾡﾤ㍿㌖㍻ำຳໜཷཹﷺﷻıİIiøØłŁæÆœŒþÞðÐđĐßẞſﬁﬃςΣ²½①Ⅻ𝐀ＡＰＩ．－１　",
     "\u0301", "\u0308", "\u0316", "\u0345", "\u3099", "\u309a", "\u05b8", "\u064e",
     "\u0654", "\u0640", "\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff",
     "\ufe0f", "\U000e0041", "\u093f", "\u0e48", "e\u0301", "ᾳ", "ё", "й", " ", ".", "-",
     "v1", "1", "a", "Z"]
)
_texts = st.one_of(
    st.lists(st.one_of(st.characters(exclude_categories=("Cs",)), _tricky),
             max_size=40).map("".join),
    # mostly ASCII with a few others: fold() then decides its steps on those few
    st.lists(st.one_of(st.text(st.characters(max_codepoint=0x7F), min_size=8, max_size=30),
                       _tricky), max_size=12).map("".join),
)


@SETTINGS
@given(_texts)
@example("\u0345\u0300")  # casefold makes U+0345 a starter: not dropped with the accents
@example("ｶ\u0301ﾞ")  # the voiced mark still joins its kana across a dropped accent
@example("ﾡㅏ\u1161")  # kept jamo never compose
@example("mostly ASCII text with İ, Ø, e\u0301 and ＡＰＩ in it, long enough to probe")
def test_fold_equals_its_description(text: str) -> None:
    assert fold(text) == reference_fold(text)


@SETTINGS
@given(_texts)
def test_fold_is_idempotent_and_v2_analyzes_its_own_output_alike(text: str) -> None:
    folded = fold(text)
    assert fold(folded) == folded
    assert V2.analyze(folded) == V2.analyze(text)


@SETTINGS
@given(_texts)
def test_nfc_nfd_and_full_width_spellings_give_the_same_v2_tokens(text: str) -> None:
    nfc = unicodedata.normalize("NFC", text)
    assert V2.analyze(unicodedata.normalize("NFD", text)) == V2.analyze(nfc)


_LATIN = st.sampled_from("abcdefghijklmnopqrstuvwxyzαβγδεσςωабвгдежз0123456789 .-")
_DIACRITICS = st.sampled_from(["\u0300", "\u0301", "\u0302", "\u0303", "\u0308", "\u030a",
                               "\u030c", "\u0327", "\u0328", "\u0313", "\u0306", "\u1dc4"])


@SETTINGS
@given(st.lists(st.tuples(_LATIN, st.lists(_DIACRITICS, max_size=3)), max_size=30))
def test_a_text_typed_without_its_diacritics_gets_the_same_tokens(pairs) -> None:
    plain = "".join(ch for ch, _ in pairs)
    marked = unicodedata.normalize("NFC", "".join(ch + "".join(m) for ch, m in pairs))
    assert V2.analyze(marked) == V2.analyze(plain)


@SETTINGS
@given(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=60))
def test_full_width_ascii_gets_the_tokens_of_ascii(text: str) -> None:
    wide = "".join("\u3000" if c == " " else chr(ord(c) + 0xFEE0) for c in text)
    assert V2.analyze(wide) == V2.analyze(text)


@SETTINGS
@given(st.text(st.characters(min_codepoint=0xFF66, max_codepoint=0xFF9F), max_size=40))
def test_half_width_katakana_gets_the_tokens_of_full_width(text: str) -> None:
    full = unicodedata.normalize("NFKC", text)
    assert V2.analyze(text) == V2.analyze(full) == V1_PORTER.analyze(full)


@SETTINGS
@given(st.text(st.one_of(
    st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
    st.characters(min_codepoint=0x3041, max_codepoint=0x3096),
    st.characters(min_codepoint=0x30A1, max_codepoint=0x30FA),
    st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3),
    st.characters(min_codepoint=0x3131, max_codepoint=0x318E),
    st.characters(min_codepoint=0x20000, max_codepoint=0x2A6DF),
    st.sampled_from(" 、。,.ー・"),
), max_size=40))
def test_full_width_cjk_is_cut_as_v1_cuts_it(text: str) -> None:
    assert V2.analyze(text) == V1_PORTER.analyze(text)


@SETTINGS
@given(st.text(alphabet=st.one_of(
    st.characters(categories=("Lu", "Ll", "Lt", "Nd")), st.sampled_from(" -.ßſﬁΣσςǅİı")),
    max_size=40))
def test_every_case_of_a_text_gets_the_same_v2_tokens_turkish_i_included(text: str) -> None:
    expected = V2.analyze(text)
    assert V2.analyze(text.upper()) == expected
    assert V2.analyze(text.lower()) == expected


_NUMBERS = st.lists(st.integers(0, 999), min_size=2, max_size=5).map(
    lambda ns: ".".join(map(str, ns)))


@SETTINGS
@given(_NUMBERS, st.sampled_from(["", "v", "V", "release-", "pkg-", "x/"]),
       st.sampled_from(["", "-beta", ".tar.gz", "_rc1"]))
def test_a_dotted_number_finds_every_identifier_that_holds_it(number, prefix, suffix):
    stored = V2.analyze(f"shipped {prefix}{number}{suffix} today")
    assert set(V2.query_terms(number)) <= set(stored)
    if prefix.lower() == "v" and not suffix:
        assert set(V2.query_terms(f"v{number}")) <= set(stored)
