"""Analyzer v1 (Memory RFC, "Normalization, hashing, and the search analyzer")."""

from __future__ import annotations

import re
import unicodedata

import pytest

from powercontext.core.analyzer import (
    MAX_WORD_BYTES,
    MAX_WORD_CHARS,
    STOPWORDS,
    analyze,
    is_cjk,
    query_terms,
    searchable_text,
)

TOKEN = re.compile(r"[a-z0-9_]+")


def test_spec_example_chinese_gives_unigrams_then_bigram() -> None:
    assert searchable_text("中文") == "u_4e2d u_6587 b_4e2d_6587"
    assert analyze("中文") == ["u_4e2d", "u_6587", "b_4e2d_6587"]


def test_three_han_characters_give_three_unigrams_and_two_bigrams() -> None:
    assert analyze("数据库") == [
        "u_6570",
        "u_636e",
        "u_5e93",
        "b_6570_636e",
        "b_636e_5e93",
    ]


def test_japanese_hiragana_and_katakana_form_one_cjk_run() -> None:
    # ひらがな + カタカナ + 漢字 in one run: every adjacent pair is a bigram.
    assert analyze("データの") == [
        "u_30c7",
        "u_30fc",
        "u_30bf",
        "u_306e",
        "b_30c7_30fc",
        "b_30fc_30bf",
        "b_30bf_306e",
    ]


def test_korean_hangul_gives_unigrams_and_bigram() -> None:
    assert analyze("한국") == ["u_d55c", "u_ad6d", "b_d55c_ad6d"]


def test_cjk_run_is_split_by_latin_word_and_spaces() -> None:
    assert analyze("用Python写 代码") == [
        "u_7528",
        "python",
        "u_5199",
        "u_4ee3",
        "u_7801",
        "b_4ee3_7801",
    ]


def test_katakana_middle_dot_separates_runs_like_punctuation() -> None:
    assert analyze("コーヒー・ショップ") == analyze("コーヒー ショップ")
    assert "u_30fb" not in analyze("コーヒー・ショップ")
    assert analyze("・゠゛゜") == []


def test_han_extension_h_is_cjk_whatever_the_python_unicode_version() -> None:
    assert analyze("\U00031350\U00031351") == ["u_31350", "u_31351", "b_31350_31351"]


def test_supplementary_plane_han_is_cjk() -> None:
    assert analyze("\U00020000\U00020001") == ["u_20000", "u_20001", "b_20000_20001"]


@pytest.mark.parametrize(
    "ch",
    [
        "中", "ひ", "カ", "ｱ", "한", "ㄱ", "\u1100", "\U0002a700",
        "\U00031350",  # Han Extension H (Unicode 15: unassigned in Python 3.11)
        "\U0002f800",  # Han compatibility supplement
        "\ua960", "\ud7b0", "\uffa1",  # Hangul Jamo Ext-A, Ext-B, halfwidth Hangul
        "\U0001b001",  # Kana supplement (hentaigana)
    ],
)  # fmt: skip
def test_is_cjk_accepts_han_kana_hangul(ch: str) -> None:
    assert is_cjk(ch)


@pytest.mark.parametrize(
    "ch", ["a", "é", "Ж", "1", " ", "。", "\u3000", "😀", "・", "゠", "゛", "゜", "･"]
)
def test_is_cjk_rejects_latin_cyrillic_digits_punctuation(ch: str) -> None:
    assert not is_cjk(ch)


def test_adjacent_cjk_pair_query_terms_all_in_text_tokens() -> None:
    text = "我们使用SQLite和OceanBase存储记忆。日本語のテキスト、한국어 문장"
    tokens = set(analyze(text))
    normalized = unicodedata.normalize("NFC", text)
    pairs = [
        normalized[i : i + 2]
        for i in range(len(normalized) - 1)
        if is_cjk(normalized[i]) and is_cjk(normalized[i + 1])
    ]
    assert len(pairs) > 10
    for pair in pairs:
        terms = query_terms(pair)
        assert len(terms) == 3
        assert set(terms) <= tokens, pair


def test_nfc_and_nfd_spellings_give_identical_tokens() -> None:
    for word in ["Café", "naïve résumé", "Ångström", "한국어", "がぎぐ", "Ελληνικά"]:
        nfc = unicodedata.normalize("NFC", word)
        nfd = unicodedata.normalize("NFD", word)
        assert nfc != nfd
        assert analyze(nfc) == analyze(nfd)


def test_nfd_hangul_jamo_compose_to_syllables() -> None:
    assert analyze(unicodedata.normalize("NFD", "한")) == ["u_d55c"]


def test_casefolding_latin_and_greek_and_german() -> None:
    assert analyze("SQLite FTS5") == ["sqlite", "fts5"]
    assert analyze("ΣΊΣΥΦΟΣ") == analyze("σίσυφος")
    assert analyze("STRASSE") == analyze("straße") == ["strass"]  # Porter stem of "strasse"


def test_non_ascii_word_is_utf8_hex_with_x_prefix() -> None:
    assert analyze("café") == ["x_" + "café".encode().hex()]
    assert analyze("Привет") == ["x_" + "привет".encode().hex()]


def test_punctuation_splits_words() -> None:
    assert analyze("multi-agent") == ["multi", "agent"]
    assert analyze("TODO: fix") == ["todo", "fix"]
    assert analyze("3.11") == ["3", "11"]
    assert analyze("50%") == ["50"]
    assert analyze("@name") == ["name"]
    assert analyze("snake_case_name") == ["snake", "case", "name"]


def test_stopwords_are_dropped_but_not_and_near_are_kept() -> None:
    assert analyze("The cat AND the dog OR a bird") == ["cat", "dog", "bird"]
    assert analyze("NOT NEAR") == ["not", "near"]
    assert {"and", "or", "the", "a"} <= STOPWORDS


def test_stopwords_include_oceanbase_space_parser_defaults() -> None:
    # seekdb 1.4.0: SELECT TOKENIZE(..., 'space', '[{"additional_args":
    # [{"min_token_size":1}]}]') drops exactly the InnoDB default list.
    innodb = {
        "a", "about", "an", "are", "as", "at", "be", "by", "com", "de", "en", "for", "from",
        "how", "i", "in", "is", "it", "la", "of", "on", "or", "that", "the", "this", "to",
        "und", "was", "what", "when", "where", "who", "will", "with", "www",
    }  # fmt: skip
    assert innodb <= STOPWORDS
    assert analyze("how www com de la en und") == []


def test_ascii_word_cut_to_max_chars() -> None:
    assert analyze("a" * 100) == ["a" * MAX_WORD_CHARS]


def test_non_ascii_word_cut_to_max_bytes_on_char_boundary() -> None:
    # 'é' is 2 bytes: 40 chars would be 80 bytes; the token keeps 20 chars = 40 bytes.
    assert analyze("é" * 50) == ["x_" + ("é" * 20).encode().hex()]
    # 'ж' 2 bytes, then 3-byte chars: the cut never splits a character.
    word = "ж" + "ह" * 30
    (token,) = analyze(word)
    raw = bytes.fromhex(token[2:])
    assert raw.decode("utf-8") == "ж" + "ह" * 12
    assert len(raw) <= MAX_WORD_BYTES


def test_every_token_fits_oceanbase_max_token_size() -> None:
    text = "Привет" * 20 + " สวัสดีครับผมชื่อสมชายยินดีที่ได้รู้จักครับ " + "😀" * 50 + " " + "x" * 99
    tokens = analyze(text)
    assert tokens
    assert max(len(t) for t in tokens) <= 82  # OceanBase SPACE max_token_size is 84


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        '"balanced"',
        "multi-agent",
        "TODO: fix",
        "*",
        "AND",
        "OR",
        "NOT",
        "NEAR",
        "NEAR(a b)",
        "(a OR b)",
        "@name",
        "50%",
        "3.11",
        "😀🚀",
        "a^b",
        "col:val",
        "-x +y",
        "{}[]",
        "'; DROP TABLE x; --",
        "\\",
        "\x00",
        "\u200b",
        "",
        "   ",
        "\t\n",
        "x" * 10_000,
        "中" * 10_000,
        "😀" * 10_000,
    ],
)
def test_nasty_queries_give_safe_tokens_and_never_raise(query: str) -> None:
    terms = query_terms(query)
    assert isinstance(terms, tuple)
    assert all(TOKEN.fullmatch(t) for t in terms)
    assert len(terms) == len(set(terms))
    assert not {"and", "or"} & set(terms)


def test_empty_and_blank_queries_give_no_terms() -> None:
    assert query_terms("") == ()
    assert query_terms("  \t\n ") == ()
    assert query_terms("the a of") == ()


def test_query_terms_distinct_in_first_seen_order() -> None:
    assert query_terms("b a b c a") == ("b", "c")  # "a" is a stopword
    assert query_terms("go rust go python") == ("go", "rust", "python")


def test_operators_become_plain_lowercase_tokens() -> None:
    assert query_terms("sqlite NOT oceanbase NEAR fts") == (
        "sqlite",
        "not",
        "oceanbas",  # Porter stems, as SQLite FTS5's porter tokenizer does
        "near",
        "ft",
    )
    assert query_terms('"x" OR "y" AND z*') == ("x", "y", "z")


def test_superscript_digit_and_other_script_digits_are_hex_encoded() -> None:
    assert analyze("x²") == ["x_" + "x²".encode().hex()]
    assert analyze("٣") == ["x_" + "٣".encode().hex()]


def test_emoji_and_symbols_give_no_tokens() -> None:
    assert analyze("😀 🚀 → ★") == []


def test_combining_mark_after_latin_stays_in_word() -> None:
    # 'q' + COMBINING ACUTE has no precomposed form: one non-ASCII word.
    assert analyze("q\u0301x") == ["x_" + "q\u0301x".encode().hex()]


def test_lone_surrogates_are_skipped_not_raised() -> None:
    assert analyze("ab\ud800cd") == ["ab", "cd"]


def test_searchable_text_is_tokens_joined_by_single_space() -> None:
    assert searchable_text("Hello,  World! 中文") == "hello world u_4e2d u_6587 b_4e2d_6587"
    assert searchable_text("") == ""
