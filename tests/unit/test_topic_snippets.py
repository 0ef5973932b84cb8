"""core.topic.snippets: windows centred on Analyzer matches, stable windows, and the
span segmentation that places tokens (Topic Memory RFC, chunk policy item 5)."""

from __future__ import annotations

import pytest

from powercontext.core import analyzer
from powercontext.core.topic.snippets import (
    SNIPPET_CHARS,
    match_snippet,
    stable_snippet,
    token_spans,
)

A = analyzer.V1_PORTER
FILLER = "Lorem ipsum dolor sit amet. " * 30


def test_match_snippet_centres_on_the_match_within_the_bound() -> None:
    text = FILLER + "The deployment uses kubernetes daily. " + FILLER
    snip = match_snippet(text, A.query_terms("deployment kubernetes"), A)
    assert snip is not None and snip in text and len(snip) <= SNIPPET_CHARS
    assert "deployment uses kubernetes" in snip
    mid = text.index("deployment")
    start = text.index(snip)
    assert abs((start + len(snip) // 2) - mid) < SNIPPET_CHARS // 2


def test_match_snippet_prefers_the_window_with_most_distinct_terms() -> None:
    text = "alpha here. " + FILLER + "alpha and beta together. " + FILLER
    snip = match_snippet(text, A.query_terms("alpha beta"), A)
    assert snip is not None and "alpha and beta" in snip


def test_match_snippet_cuts_at_word_boundaries() -> None:
    text = FILLER + "needle " + FILLER
    snip = match_snippet(text, A.query_terms("needle"), A)
    assert snip is not None
    start = text.index(snip)
    end = start + len(snip)
    assert start == 0 or text[start - 1].isspace()
    assert end == len(text) or text[end].isspace()


def test_match_snippet_places_cjk_terms_on_their_characters() -> None:
    text = "今天天气很好。" * 100 + "我们部署了新的服务器。" + "今天天气很好。" * 100
    snip = match_snippet(text, analyzer.V1.query_terms("服务器"), analyzer.V1)
    assert snip is not None and "服务器" in snip and len(snip) <= SNIPPET_CHARS


def test_match_snippet_places_unspaced_script_clusters() -> None:
    text = "กขค" * 300 + "ฟหก่" + "กขค" * 300
    terms = analyzer.V1.query_terms("ก่")
    snip = match_snippet(text, terms, analyzer.V1)
    assert snip is not None and "ก่" in snip


def test_match_snippet_identifier_and_joined_tokens() -> None:
    text = FILLER + "see src/app/main.py now " + FILLER
    snip = match_snippet(text, A.query_terms("main.py"), A)
    assert snip is not None and "src/app/main.py" in snip


def test_match_snippet_none_without_a_match_or_terms() -> None:
    assert match_snippet(FILLER, A.query_terms("absent"), A) is None
    assert match_snippet(FILLER, (), A) is None
    assert match_snippet("", ("a",), A) is None


def test_match_snippet_never_splits_crlf_or_surrogate_pairs() -> None:
    text = "x\r\n" * 400 + "needle" + "\r\ny" * 400
    snip = match_snippet(text, A.query_terms("needle"), A)
    assert snip is not None and "needle" in snip
    start = text.index(snip)
    assert not (start > 0 and text[start - 1] == "\r" and text[start] == "\n")
    pairs = "\ud83d\ude00" * 400 + " needle " + "\ud83d\ude00" * 400  # surrogatepass text
    snip = match_snippet(pairs, A.query_terms("needle"), A)
    assert snip is not None and "needle" in snip
    assert snip[0] != "\ude00" and snip[-1] != "\ud83d"


def test_match_snippet_is_deterministic() -> None:
    text = (FILLER + "needle haystack ") * 5
    terms = A.query_terms("needle haystack")
    assert len({match_snippet(text, terms, A) for _ in range(5)}) == 1


def test_stable_snippet_is_the_first_window() -> None:
    text = FILLER
    snip = stable_snippet(text)
    assert text.startswith(snip) and len(snip) <= SNIPPET_CHARS
    assert text[len(snip)].isspace()
    assert stable_snippet("short") == "short"
    assert stable_snippet("  padded \n") == "padded"
    crlf = "ab" * 159 + "c\r\n" + "d" * 100
    assert not stable_snippet(crlf).endswith("\r")


@pytest.mark.parametrize("text", [
    "a-b.c_d 中文x\u0301 ก่ขค", "\ufb03 İstanbul ΐ a..b -x- ", "ADR-0005/v1.2.3 日本語テキスト",
    "e\u0301t\u00e9 \u0301mark", "한국어 텍스트 kana・ka", "x" * 200 + "-y",
])
def test_token_spans_give_exactly_the_analyzer_tokens(text: str) -> None:
    for a in analyzer.ANALYZERS.values():
        assert [t for *_, toks in token_spans(text, a) for t in toks] == a.analyze(text)
