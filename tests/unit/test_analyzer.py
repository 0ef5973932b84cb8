"""The search analyzers ``v1`` (the spec's Analyzer v1) and ``v1-porter`` (Memory RFC,
"Normalization, hashing, and the search analyzer"), and how versions are registered.
The module-level functions are the default analyzer's (``v2``: tests/unit/test_analyzer_v2.py)."""

from __future__ import annotations

import hashlib
import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core.analyzer import (
    ANALYZERS,
    DEFAULT_VERSION,
    ENGINE_STOPWORDS,
    EXTENDED_STOPWORDS,
    MAX_TOKEN_CHARS,
    MAX_WORD_BYTES,
    MAX_WORD_CHARS,
    MEMO_MAX_CHARS,
    V1,
    V1_PORTER,
    V2,
    get,
    is_cjk,
    is_unspaced,
)

# The spec's Analyzer v1 unless a test names v1-porter (the module-level functions are
# the default analyzer's, see test_module_functions_are_the_default_analyzers).
analyze = V1.analyze
query_terms = V1.query_terms
searchable_text = V1.searchable_text

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
    assert analyze("STRASSE") == analyze("straße") == ["strasse"]
    assert V1_PORTER.analyze("straße") == ["strass"]  # Porter stem of "strasse"


def test_non_ascii_word_is_utf8_hex_with_x_prefix() -> None:
    assert analyze("café") == ["x_" + "café".encode().hex()]
    assert analyze("Привет") == ["x_" + "привет".encode().hex()]


def test_punctuation_splits_words_and_joined_words_add_an_identifier_token() -> None:
    # (identifier tokens are new in v1: they pinned the old rules before)
    assert analyze("multi-agent") == ["multi", "agent", "j_multi_agent"]
    assert analyze("TODO: fix") == ["todo", "fix"]
    assert analyze("3.11") == ["3", "11", "j_3_11"]
    assert analyze("50%") == ["50"]
    assert analyze("@name") == ["name"]
    assert analyze("snake_case_name") == ["snake", "case", "name", "j_snake_case_name"]
    assert analyze("end. Next") == ["end", "next"]  # a separator then a space joins nothing
    assert analyze("x--y") == ["x", "y"]  # only single separators join


def test_stopwords_are_dropped_but_not_and_near_are_kept() -> None:
    assert analyze("The cat AND the dog OR a bird") == ["cat", "and", "dog", "bird"]
    assert V1_PORTER.analyze("The cat AND the dog OR a bird") == ["cat", "dog", "bird"]
    assert analyze("NOT NEAR") == V1_PORTER.analyze("NOT NEAR") == ["not", "near"]
    assert {"and", "or", "the", "a"} <= EXTENDED_STOPWORDS
    assert {"or", "the", "a"} <= ENGINE_STOPWORDS


def test_stopwords_include_oceanbase_space_parser_defaults() -> None:
    # seekdb 1.4.0: SELECT TOKENIZE(..., 'space', '[{"additional_args":
    # [{"min_token_size":1}]}]') drops exactly the InnoDB default list.
    innodb = {
        "a", "about", "an", "are", "as", "at", "be", "by", "com", "de", "en", "for", "from",
        "how", "i", "in", "is", "it", "la", "of", "on", "or", "that", "the", "this", "to",
        "und", "was", "what", "when", "where", "who", "will", "with", "www",
    }  # fmt: skip
    assert V1.stopwords == innodb  # the spec's v1 drops exactly the engine-forced list
    assert all(innodb <= a.stopwords for a in ANALYZERS.values())
    assert analyze("how www com de la en und") == []
    assert V1_PORTER.analyze("how www com de la en und") == []


def _hash_token(form: str) -> str:
    return "h_" + hashlib.sha256(form.encode()).hexdigest()[:32]


def test_long_ascii_word_gives_its_prefix_and_a_hash_of_its_full_form() -> None:
    # v1 cut every word at 40 characters: two long words with one prefix were the same
    # token, and a word was never found by its own full form past the cut.
    assert analyze("a" * MAX_TOKEN_CHARS) == ["a" * MAX_TOKEN_CHARS]  # fits: kept whole
    word = "a" * 100
    assert analyze(word) == ["a" * MAX_WORD_CHARS, _hash_token(word)]
    other = "a" * 99 + "b"
    assert analyze(other)[0] == analyze(word)[0] and analyze(other)[1] != analyze(word)[1]


def test_long_non_ascii_word_gives_its_byte_prefix_and_a_hash() -> None:
    # 'é' is 2 bytes: the prefix keeps 20 chars = 40 bytes.
    prefix, hashed = analyze("é" * 50)
    assert prefix == "x_" + ("é" * 20).encode().hex()
    assert hashed == _hash_token("x_" + ("é" * 50).encode().hex())
    # 'ж' 2 bytes, then 3-byte chars: the cut never splits a character.
    prefix, _ = analyze("ж" + "ह" * 30)
    raw = bytes.fromhex(prefix[2:])
    assert raw.decode("utf-8") == "ж" + "ह" * 12
    assert len(raw) <= MAX_WORD_BYTES
    # 41 bytes still fit in one token (2 + 82 characters)
    assert analyze("é" * 20 + "x") == ["x_" + ("é" * 20 + "x").encode().hex()]


def test_every_token_fits_oceanbase_max_token_size() -> None:
    text = "Привет" * 20 + " สวัสดีครับผมชื่อสมชายยินดีที่ได้รู้จักครับ " + "😀" * 50 + " " + "x" * 99
    for a in ANALYZERS.values():
        tokens = a.analyze(text + " " + "-".join(["segment"] * 30) + " ก" + "\u0e48" * 40)
        assert tokens
        assert max(len(t) for t in tokens) <= 84  # OceanBase SPACE max_token_size is 84


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
    assert not {"and", "or"} & set(V1_PORTER.query_terms(query))
    assert "or" not in terms


def test_empty_and_blank_queries_give_no_terms() -> None:
    assert query_terms("") == ()
    assert query_terms("  \t\n ") == ()
    assert query_terms("the a of") == ()


def test_query_terms_distinct_in_first_seen_order() -> None:
    assert query_terms("b a b c a") == ("b", "c")  # "a" is a stopword
    assert query_terms("go rust go python") == ("go", "rust", "python")


def test_operators_become_plain_lowercase_tokens() -> None:
    assert query_terms("sqlite NOT oceanbase NEAR fts") == (
        "sqlite", "not", "oceanbase", "near", "fts",
    )  # fmt: skip
    assert V1_PORTER.query_terms("sqlite NOT oceanbase NEAR fts") == (
        "sqlite",
        "not",
        "oceanbas",  # Porter stems, as SQLite FTS5's porter tokenizer does
        "near",
        "ft",
    )
    assert query_terms('"x" OR "y" AND z*') == ("x", "y", "and", "z")
    assert V1_PORTER.query_terms('"x" OR "y" AND z*') == ("x", "y", "z")


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


# -- versions -------------------------------------------------------------------------


def test_versions_are_registered_by_name_and_the_default_folds() -> None:
    assert set(ANALYZERS) == {"v1", "v1-porter", "v2"}
    assert get("v1") is V1 and get("v1-porter") is V1_PORTER and get("v2") is V2
    # v2 = v1-porter (best on LoCoMo, docs/analyzers.md) + folding + dotted numbers
    assert DEFAULT_VERSION == "v2" and get() is V2
    assert not V1.porter and V1_PORTER.porter and V2.porter
    assert not (V1.fold or V1_PORTER.fold or V1.dotted_numbers or V1_PORTER.dotted_numbers)
    assert V2.fold and V2.dotted_numbers and V2.stopwords == V1_PORTER.stopwords


@pytest.mark.parametrize("name", ["analyzer-v1", "V1", "v3", "V2", "", None])
def test_unknown_or_ambiguous_version_is_a_typed_error_naming_the_known_ones(name) -> None:
    from powercontext.core import analyzer as module
    from powercontext.core.errors import InvalidInputError

    if name is None:  # None means the default, not an error
        assert module.get(None) is module.get(DEFAULT_VERSION)
        return
    with pytest.raises(InvalidInputError, match="v1, v1-porter, v2") as info:
        get(name)
    assert info.value.field == "analyzer"


def test_module_functions_are_the_default_analyzers() -> None:
    from powercontext.core import analyzer as module

    text = "The painters painted ADR-0005 中文 ฐานข้อมูล"
    default = get(DEFAULT_VERSION)
    assert module.analyze(text) == default.analyze(text)
    assert module.query_terms(text) == default.query_terms(text)
    assert module.searchable_text(text) == default.searchable_text(text)


def test_analyzers_are_frozen_values() -> None:
    import attrs

    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        V1.version = "v2"  # type: ignore[misc]
    assert get("v1") == V1 and V1 != V1_PORTER


# -- whole kinds of text ----------------------------------------------------------------

THAI = "ทีมของเราใช้ฐานข้อมูลโพสต์เกรสในการผลิต"


@pytest.mark.parametrize("a", [V1, V1_PORTER], ids=lambda a: a.version)
def test_thai_word_inside_a_run_is_found(a) -> None:
    # before: the whole run was one x_ token cut at 40 bytes, so "ฐานข้อมูล" was not found
    terms = a.query_terms("ฐานข้อมูล")
    assert len(terms) > 1
    assert set(terms) <= set(a.analyze(THAI))
    assert not set(a.query_terms("ภาษาไทย")) <= set(a.analyze(THAI))


def test_thai_clusters_keep_their_combining_marks() -> None:
    # ที = ท + U+0E35 (one cluster), ข้ = ข + U+0E49
    assert V1.analyze("ที") == ["g_" + "ที".encode().hex()]
    assert V1.analyze("ทีม") == [
        "g_" + "ที".encode().hex(), "g_" + "ม".encode().hex(),
        "gb_" + "ที".encode().hex() + "_" + "ม".encode().hex(),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("ພວກເຮົາໃຊ້ຖານຂໍ້ມູນ", "ຖານຂໍ້ມູນ"),  # Lao
        ("យើងប្រើមូលដ្ឋានទិន្នន័យ", "ទិន្នន័យ"),  # Khmer
        ("ကျွန်ုပ်တို့ဒေတာဘေ့စ်ကိုသုံးသည်", "ဒေတာဘေ့စ်"),  # Myanmar
    ],
)
def test_lao_khmer_myanmar_words_inside_a_run_are_found(text: str, query: str) -> None:
    for a in (V1, V1_PORTER):
        assert set(a.query_terms(query)) <= set(a.analyze(text))


def test_unspaced_script_punctuation_separates() -> None:
    assert is_unspaced("ก") and is_unspaced("\u0e35") and is_unspaced("๑")
    assert not is_unspaced("๏") and not is_unspaced("។") and not is_unspaced("a")
    assert V1.analyze("กข๏คง") == V1.analyze("กข คง")


@pytest.mark.parametrize(
    ("upper", "lower"),
    [
        ("ΣΊΣΥΦΟΣ", "σίσυφος"),  # Greek final sigma folds like medial sigma
        ("ὈΔΥΣΣΕΎΣ", "ὀδυσσεύς"),
        ("STRASSE", "straße"),  # ß folds to ss
        ("ẞ", "ss"),  # capital sharp s
        ("ᏣᎳᎩ", "ꮳꮃꭹ"),  # Cherokee: lowercase letters fold to the capitals
        ("\U00010400\U00010401", "\U00010428\U00010429"),  # Deseret (astral)
        ("İSTANBUL", "i\u0307stanbul"),  # full folding: İ is i + combining dot above
        ("ǄEMAL", "ǆemal"),  # titlecase digraphs
        ("ﬁle", "FILE"),  # ligature fi
    ],
)
def test_full_case_folding_matches_every_script(upper: str, lower: str) -> None:
    for a in (V1, V1_PORTER):
        assert a.query_terms(upper) == a.query_terms(lower), (upper, lower)
        assert set(a.query_terms(upper)) <= set(a.analyze(f"x {lower} y"))


def test_dotted_capital_i_is_not_plain_i_under_full_case_folding() -> None:
    # CaseFolding.txt maps İ to "i̇" (status F), not to "i" (the Turkic-only T mapping)
    assert V1.analyze("İstanbul") != V1.analyze("istanbul")
    assert V1.analyze("İstanbul") == V1.analyze("i\u0307stanbul")


@pytest.mark.parametrize("ident", ["ADR-0005", "v1.2.3", "acme-cloud-dev", "src/app/main.py"])
def test_identifier_gives_a_joined_token_found_by_the_identifier(ident: str) -> None:
    for a in (V1, V1_PORTER):
        terms = a.query_terms(ident)
        joined = [t for t in terms if t.startswith("j_")]
        assert len(joined) == 1
        assert joined[0] in a.analyze(f"we decided {ident} yesterday")
    assert V1.query_terms("ADR-0005") == ("adr", "0005", "j_adr_0005")
    assert "j_adr_0050" not in V1.query_terms("ADR-0005")


def test_non_ascii_identifier_gets_a_hex_joined_token() -> None:
    assert V1.analyze("café-bar")[-1] == "jx_" + "café_bar".encode().hex()


# --- the memo (issue 14: one write and one search analyze the same text twice) ---------


@given(st.text(max_size=300), st.sampled_from(sorted(ANALYZERS)))
def test_memoised_analyze_equals_the_uncached_tokens(text: str, version: str) -> None:
    a = ANALYZERS[version]
    assert a.analyze(text) == a._tokens(text)
    assert a.analyze(text) == a._tokens(text)  # the second call is the memo's


def test_memoised_analyze_returns_a_fresh_list_each_call() -> None:
    first = V1.analyze("memo fresh list")
    first.append("mutated")
    assert V1.analyze("memo fresh list") == ["memo", "fresh", "list"]


def test_the_memo_keys_on_the_analyzer_not_only_the_text() -> None:
    text = "running the painted ponies"
    assert V1.analyze(text) != V1_PORTER.analyze(text)
    assert V1_PORTER.analyze(text) == V1_PORTER._tokens(text)


def test_texts_past_the_memo_bound_are_analyzed_without_it() -> None:
    text = "word " * (MEMO_MAX_CHARS // 5 + 1)
    assert len(text) > MEMO_MAX_CHARS
    assert V1.analyze(text) == ["word"] * (MEMO_MAX_CHARS // 5 + 1)


def test_both_memos_are_bounded() -> None:
    from powercontext.core import analyzer as module
    from powercontext.core.analyzer_porter import STEM_MEMO_WORDS, stem

    assert module._memo_tokens.cache_info().maxsize == module.MEMO_TEXTS == 64
    assert stem.cache_info().maxsize == STEM_MEMO_WORDS == 1 << 15
