"""The analyzers' regex fast path and per-call word memo give exactly the tokens of the old
character-by-character scan (issue 14: an 8 KB entry took ~100 ms to analyze, twice per
commit). The reference is a verbatim copy of that scan (support/analyzer_reference.py)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from support import analyzer_reference as reference
from support.analyzer_reference import reference_analyze

from powercontext.core.analyzer import (
    ANALYZERS,
    V1_PORTER,
    is_cjk,
    is_unspaced,
)
from powercontext.core.analyzer_fold import fold, normalize

SETTINGS = settings(deadline=None)

_pieces = st.sampled_from(
    [
        "a", "Z", "0", "9", "go", "The", "painting", "ADR-0005", "v1.2.3", "src/app/main.py",
        "a--b", "x.", "_y", "-", ".", "/", "_", " ", "\t", "\n", "'", "’", "é", "É", "e\u0301",
        "\u0301", "ß", "İ", "K", "ﬁ", "Σς", "²", "½", "٣", "中文", "ひカ", "ｱ", "한국", "\u1100",
        "\u0e01\u0e34", "ไทย", "\u1780\u17b6", "\u17d4", "๏", "😀", "\ufe0f", "\x7f", "\x00",
        "@", "[", "`", "{", "~", "caf\u00e9-bar", "naïve_x", "x" * 90, "ж" * 30,
        # v2: folded forms and dotted numbers
        "1.2.3", "V1.2", "x.1.2", "v1.", ".2", "ＡＰＩ", "ｖ１．２", "ｶﾞ", "\u00ad", "\u200b",
        "ı", "ø", "æ", "㌖", "ำ", "ﷺ", "ﾡ", "\u05b8", "\u0640",
    ]
)  # fmt: skip
_text = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=60),
    st.lists(_pieces, max_size=30).map("".join),
    st.lists(st.one_of(_pieces, st.text(max_size=3)), max_size=30).map("".join),
)


@SETTINGS
@given(_text, st.sampled_from(sorted(ANALYZERS)))
@example("Caroline: I went to the LGBTQ support group yesterday.", "v1-porter")
@example("ADR-0005 v1.2.3 src/app/main.py a--b x. é-b b-é 中文-x", "v1")
@example("e\u0301-a a-\u0301 \u0e01\u0e34-a \u1780x", "v1-porter")
@example("a-é ab.é a- a-b-é a_\u0301 a\u0301 x.y.中 k-ß-k end.", "v1-porter")
@example("a-b", "v1")
@example("v1.2.3 1.2-3.4 ｖ１．２ x.v2.0 café-1.2 ＡＰＩ-1.2 micro\u00adservice.1.2", "v2")
def test_fast_scan_equals_the_character_scan(text: str, version: str) -> None:
    analyzer = ANALYZERS[version]
    assert analyzer.analyze(text) == reference_analyze(analyzer, text)


@SETTINGS
@given(st.lists(_pieces, max_size=12), st.integers(1, 4), st.sampled_from(sorted(ANALYZERS)))
def test_repeated_words_get_the_tokens_of_their_first_time(words, times, version):
    # analyze() memoizes a word's tokens within the call
    analyzer = ANALYZERS[version]
    text = " ".join(words * times)
    assert analyzer.analyze(text) == reference_analyze(analyzer, text)
    assert analyzer.searchable_text(text) == " ".join(reference_analyze(analyzer, text))


def test_an_8_kb_text_gets_the_reference_tokens() -> None:
    text = ("Caroline: I went to the LGBTQ support group yesterday, ADR-0005 café-bar "
            "中文 painting ponies ") * 100
    assert V1_PORTER.analyze(text) == reference_analyze(V1_PORTER, text)


@SETTINGS
@given(st.characters(exclude_categories=("Cs",)))
def test_the_early_outs_of_script_tests_hold(ch: str) -> None:
    # is_cjk answers False below U+1100, is_unspaced below U+0E00, without a table
    assert is_cjk(ch) == reference.is_cjk(ch)
    assert is_unspaced(ch) == reference.is_unspaced(ch)


_ascii_text = st.one_of(
    st.text(st.characters(max_codepoint=0x7F), max_size=80),
    st.lists(st.sampled_from(["a", "Z", "0", "go", "The", "ADR-0005", "v1.2.3", "a--b", "x.",
                              "_y", "-", ".", "/", "_", " ", "\n", "'", "\x7f", "\x00",
                              "x" * 90, "one", "running", "src/app/main.py"]),
             max_size=40).map("".join),
)


@SETTINGS
@given(_ascii_text, st.sampled_from(sorted(ANALYZERS)))
@example("Caroline: I went to the LGBTQ support group yesterday. a-b a-b A-B", "v1-porter")
def test_an_ascii_text_by_one_regex_pass_equals_the_rule_scan(text, version) -> None:
    """An ASCII text's identifiers by one findall, each distinct one analyzed once per
    call (an 8 KB LoCoMo entry: ~5 ms -> ~2 ms), give the rule-by-rule scan's tokens."""
    analyzer = ANALYZERS[version]
    folded = text.casefold()
    by_rules: list[str] = []
    analyzer._scan_into(folded, by_rules, {}, {})  # the whole text, rule by rule
    assert analyzer._fast_tokens(folded) == by_rules
    assert analyzer.analyze(text) == reference_analyze(analyzer, text)


_separators = st.sampled_from([" ", "\t", "\n", "\r\n", "\x0b", "\x1f", "\x7f", "\x00", "  ",
                               "\u00a0", "\u2003", "-", ". ", " ’"])


@SETTINGS
@given(st.lists(st.tuples(_pieces, _separators), max_size=40),
       st.sampled_from(sorted(ANALYZERS)))
@example([("naïve_x", "\x7f"), ("a-", " "), ("\u0301", "\t"), ("x", "\u00a0")], "v1")
@example([("caf\u00e9-bar", "\x1f"), ("ADR-0005", "\n"), ("中文", "-"), ("a", " ")], "v1-porter")
def test_mixed_text_pieces_get_the_tokens_of_the_whole_scan(pairs, version) -> None:
    # a text with non-ASCII characters is scanned rule by rule only around them, split
    # at ASCII spaces and controls (Analyzer._fast_tokens)
    analyzer = ANALYZERS[version]
    text = "".join(p + s for p, s in pairs) + "é"
    assert analyzer.analyze(text) == reference_analyze(analyzer, text)
    # the pieces themselves, also where analyze() scans a mostly non-ASCII text whole
    folded = fold(text) if analyzer.fold else normalize(text)
    assert analyzer._fast_tokens(folded) == reference_analyze(analyzer, text)
