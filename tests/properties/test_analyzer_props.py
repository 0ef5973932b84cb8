"""Properties of the search analyzers over arbitrary text (Memory RFC, "Normalization,
hashing, and the search analyzer"). Module-level functions are the default analyzer's;
properties that every version must keep run on each of them."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st

from powercontext.core.analyzer import (
    ANALYZERS,
    MAX_TOKEN_CHARS,
    V1,
    V1_PORTER,
    Analyzer,
    analyze,
    is_cjk,
    query_terms,
    stem,
)

TOKEN = re.compile(r"[a-z0-9_]+")
SETTINGS = settings(deadline=None)  # example counts come from the Hypothesis profile

# Any Unicode except lone surrogates, plus hand-picked troublemakers.
_any_char = st.characters(exclude_categories=("Cs",))
_tricky_char = st.sampled_from(
    [
        "中",
        "文",
        "ひ",
        "カ",
        "ｱ",
        "한",
        "\u1100",
        "\u1161",
        "\u11a8",
        "\U00020000",
        "ß",
        "İ",
        "ſ",
        "K",
        "ﬁ",
        "Σ",
        "ς",
        "²",
        "½",
        "٣",
        "१",
        "Ⅻ",
        "\u0301",
        "\u0308",
        "\u0345",
        "\u200d",
        "\u200f",
        "\u202e",
        "ا",
        "ע",
        "😀",
        "👩\u200d💻",
        "\ufe0f",
        ".",
        "-",
        "_",
        "'",
        '"',
        "*",
        "(",
        ")",
        ":",
        "@",
        "%",
        " ",
        "\t",
        "\n",
        "\x00",
        "a",
        "Z",
        "0",
        "9",
        "and",
        "OR",
        "NOT",
        "NEAR",
    ]
)
analyzers = st.sampled_from(sorted(ANALYZERS.values(), key=lambda a: a.version))
texts = st.lists(st.one_of(_any_char, _tricky_char), max_size=60).map("".join)
cjk_texts = st.lists(
    st.one_of(
        st.sampled_from("中文数据库日本語のテキストデータ한국어문장ｱｲｳ"),
        st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
        st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3),
        st.characters(min_codepoint=0x3041, max_codepoint=0x3096),
        st.sampled_from(" ,.a1é"),
    ),
    min_size=2,
    max_size=40,
).map("".join)


@SETTINGS
@given(texts)
@example("x²³ ٣٤ Ⅻ ½")
@example("\u0130stanbul ΣΊΣΥΦΟΣ ﬁle")
@example("a\u0301\u0302\u0303" * 30)
@example("😀" * 50)
def test_tokens_are_always_ascii_lowercase_alnum_underscore(text: str) -> None:
    for a in ANALYZERS.values():
        tokens = a.analyze(text)
        for token in tokens:
            assert TOKEN.fullmatch(token), (text, token)
            assert len(token) <= MAX_TOKEN_CHARS, (text, token)  # OceanBase drops longer
        assert a.searchable_text(text) == " ".join(tokens)


@SETTINGS
@given(texts, analyzers)
def test_query_terms_are_distinct_safe_and_never_stopwords(text: str, a: Analyzer) -> None:
    terms = a.query_terms(text)
    assert isinstance(terms, tuple)
    assert len(terms) == len(set(terms))
    assert all(TOKEN.fullmatch(t) for t in terms)
    assert not set(terms) & a.stopwords
    assert set(terms) == set(a.analyze(text))


@SETTINGS
@given(texts)
def test_nfc_and_nfd_spellings_give_same_tokens(text: str) -> None:
    nfc = unicodedata.normalize("NFC", text)
    assert analyze(unicodedata.normalize("NFD", text)) == analyze(nfc) == analyze(text)


@SETTINGS
@given(
    st.text(
        alphabet=st.one_of(
            # Turkish dotted/dotless i (İ, ı) do not round-trip through upper/lower by design.
            st.characters(categories=("Lu", "Ll", "Lt", "Nd"), exclude_characters="İı"),
            st.sampled_from(" -.ßſﬁΣσςǅ"),
        ),
        max_size=40,
    )
)
def test_upper_lower_and_title_case_give_same_tokens(text: str) -> None:
    expected = analyze(text)
    assert analyze(text.upper()) == expected
    assert analyze(text.lower()) == expected
    assert analyze(text.title()) == expected


@SETTINGS
@given(texts)
@example("\u0345\u0300")  # casefold(U+0345) is U+03B9, a starter: order matters
def test_normalization_pipeline_is_idempotent(text: str) -> None:
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    assert analyze(folded) == analyze(text)


@SETTINGS
@given(cjk_texts, st.data())
def test_any_adjacent_cjk_pair_as_query_is_contained_in_text_tokens(text: str, data) -> None:
    text = unicodedata.normalize("NFC", text)
    pairs = [i for i in range(len(text) - 1) if is_cjk(text[i]) and is_cjk(text[i + 1])]
    tokens = set(analyze(text))
    if not pairs:
        return
    i = data.draw(st.sampled_from(pairs))
    terms = query_terms(text[i : i + 2])
    assert terms
    assert set(terms) <= tokens


@SETTINGS
@given(cjk_texts, st.data())
def test_any_substring_query_terms_are_contained_in_text_tokens_for_cjk(text: str, data) -> None:
    # Substrings that start and end on CJK characters never split a word.
    text = unicodedata.normalize("NFC", text)
    idx = [i for i, c in enumerate(text) if is_cjk(c)]
    if not idx:
        return
    a = data.draw(st.sampled_from(idx))
    b = data.draw(st.sampled_from([j for j in idx if j >= a]))
    assert set(query_terms(text[a : b + 1])) <= set(analyze(text))


def _plain(tokens: list[str]) -> list[str]:
    """Word tokens only (no joined identifier tokens)."""
    return [t for t in tokens if not t.startswith(("j_", "jx_"))]


@SETTINGS
@given(st.text(alphabet=st.characters(codec="ascii"), max_size=200))
def test_ascii_words_are_kept_lowercase(text: str) -> None:
    def token(a: Analyzer, w: str) -> str:
        # v1-porter: letters-only words are Porter-stemmed unless the stem is a stopword
        s = stem(w) if a.porter and w.isalpha() else w
        return w if s in a.stopwords else s

    words = re.findall(r"[A-Za-z0-9]+", text.lower())
    for a in (V1, V1_PORTER):
        expected = [token(a, w) for w in words if w not in a.stopwords]
        assert _plain(a.analyze(text)) == expected


@SETTINGS
@given(
    st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8),
             min_size=2, max_size=5),
    st.lists(st.sampled_from("-./_"), min_size=4, max_size=4),
    analyzers,
)
def test_an_identifier_query_finds_itself_by_its_joined_token(
    parts: list[str], seps: list[str], a: Analyzer
) -> None:
    ident = parts[0] + "".join(s + p for s, p in zip(seps, parts[1:], strict=False))
    joined = "j_" + "_".join(parts)
    assert joined in a.query_terms(ident)
    assert joined in a.analyze(f"see {ident} for details")
    assert joined not in a.analyze(" ".join(parts))  # spaces are not an identifier


@SETTINGS
@given(
    st.text(alphabet=st.characters(categories=("L", "N")), min_size=1, max_size=300),
    analyzers,
)
def test_any_word_is_found_by_its_full_form(word: str, a: Analyzer) -> None:
    terms = a.query_terms(word)
    tokens = set(a.analyze(f"before {word} after"))
    assert set(terms) <= tokens
    for token in a.analyze(word):
        assert len(token) <= MAX_TOKEN_CHARS


@SETTINGS
@given(
    st.lists(st.sampled_from(["ก", "ข", "ท", "\u0e35", "\u0e49", "เ", "ม", "ລ", "ກ",
                              "\u0ec8", "က", "\u103a", "ក", "\u17d2", "\u17b6"]),
             min_size=2, max_size=30).map("".join),
    st.data(),
    analyzers,
)
def test_unspaced_script_substring_of_whole_clusters_is_found(
    text: str, data: st.DataObject, a: Analyzer
) -> None:
    # cluster starts: a character that is not a combining mark
    starts = [i for i, c in enumerate(text) if not unicodedata.category(c).startswith("M")]
    if len(starts) < 2:
        return
    i = data.draw(st.sampled_from(starts))
    ends = [j for j in [*starts, len(text)] if j > i]
    j = data.draw(st.sampled_from(ends))
    assert set(a.query_terms(text[i:j])) <= set(a.analyze(text))
