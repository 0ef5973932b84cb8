"""Properties of snippet windows (Topic Memory RFC, chunk policy item 5): a snippet is
a substring of the chunk within the bound that holds a match of the query, found exactly
when the Analyzer finds one, the same every time; the span segmentation gives exactly
the Analyzer's tokens."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from powercontext.core import analyzer
from powercontext.core.topic.snippets import (
    SNIPPET_CHARS,
    match_snippet,
    stable_snippet,
    token_spans,
)
from tests.support import snippet_reference

ANALYZERS = st.sampled_from(list(analyzer.ANALYZERS.values()))
WORDS = st.sampled_from(["alpha", "beta", "gamma", "deploy", "deployment", "中文", "服务器",
                         "ก่ข", "ADR-0005", "main.py", "x\u0301", "Straße", "\U0001f600",
                         "the", "and", "。", "\r\n", "\n\n", "-", "a_b", "日本語",
                         "café", "ＡＰＩ", "ｶﾀｶﾅ", "v1.2.3", "1.2.3", "micro\u00adservice"])
SEPS = st.sampled_from([" ", " ", "\n", ", ", "\r\n", "\u3000", ""])


@st.composite
def chunk_texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(WORDS, SEPS), min_size=1, max_size=400))
    return "".join(w + s for w, s in parts)


@given(st.text(max_size=400), ANALYZERS)
# v2 folds before it cuts: raw character classes do not show its runs
@example("micro\u00adservice and ㈱日本 ｖ１．２．３ a\u2024b café", analyzer.V2)
@example("中文\u200b日本語" * 3, analyzer.V2)
def test_token_spans_concatenate_to_the_analyzer_tokens(text: str, a: analyzer.Analyzer
                                                        ) -> None:
    spans = list(token_spans(text, a))
    assert [t for *_, toks in spans for t in toks] == a.analyze(text)
    assert all(s < e for s, e, *_ in spans)
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))


@given(chunk_texts(), st.lists(WORDS, min_size=1, max_size=4), ANALYZERS)
@example("prefix " * 60 + "micro\u00adservice ｖ１．２ suffix " * 30, ["microservice"],
         analyzer.V2)
def test_snippet_is_a_bounded_substring_holding_a_match(text: str, query: list[str],
                                                        a: analyzer.Analyzer) -> None:
    terms = a.query_terms(" ".join(query))
    snip = match_snippet(text, terms, a)
    assert snip == match_snippet(text, terms, a)
    if not set(terms).intersection(a.analyze(text)):
        assert snip is None
        return
    assert snip is not None
    assert snip in text and 0 < len(snip) <= SNIPPET_CHARS
    assert set(terms).intersection(a.analyze(snip))
    start = text.index(snip)
    assert text[start - 1:start + 1] != "\r\n" or start == 0


@given(chunk_texts())
def test_stable_snippet_is_a_bounded_prefix_window(text: str) -> None:
    snip = stable_snippet(text)
    assert snip == stable_snippet(text)
    assert snip in text[:SNIPPET_CHARS] and len(snip) <= SNIPPET_CHARS
    end = text.index(snip) + len(snip)
    assert text[end - 1:end + 1] != "\r\n" or end == len(text)


@given(st.one_of(chunk_texts(), st.text(max_size=600)), st.lists(WORDS, min_size=1, max_size=4),
       st.text(max_size=40), ANALYZERS)
@example("micro\u00adservice and ㈱日本 ｖ１．２．３ a\u2024b café " * 9, ["microservice"], "日本",
         analyzer.V2)
@example("x\tcafé-bar.baz\u0301 ok\x7fmain.py\r\n中文 " * 20, ["café", "main.py"], "bar baz",
         analyzer.V2)
def test_the_fast_path_equals_the_reference_definition(text: str, words: list[str],
                                                       extra: str, a: analyzer.Analyzer
                                                       ) -> None:
    """The search path's snippets and spans are those of the definition kept in
    tests/support/snippet_reference.py, on random chunks and queries (twice: the second
    call reads the span memo)."""
    for query in (" ".join(words), extra, " ".join(words) + " " + extra):
        terms = a.query_terms(query)
        want = snippet_reference.match_snippet(text, terms, a)
        assert match_snippet(text, terms, a) == want
        assert match_snippet(text, terms, a) == want
    assert token_spans(text, a) == snippet_reference.token_spans(text, a)
    assert stable_snippet(text) == snippet_reference.stable_snippet(text)
