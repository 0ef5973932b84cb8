"""core.topic.chunks: the ``topic-chunks-v1`` policy on ordinary and adversarial
Details (Topic Memory RFC, "Detail chunks and deployment-enabled retrieval channels")."""

from __future__ import annotations

import unicodedata

import pytest

from powercontext.core import analyzer
from powercontext.core.errors import InvalidInputError
from powercontext.core.topic import chunks as ch
from powercontext.core.topic.content import MAX_DETAIL_CHARS, MAX_TOPIC_FTS_CHARS
from powercontext.core.topic.models import DetailChunk


def assert_policy(detail: str) -> tuple[DetailChunk, ...]:
    """Chunks of ``detail`` checked against every invariant of the policy."""
    cs = ch.chunk_detail(detail)
    assert cs and cs[0].start == 0 and cs[-1].end == len(detail)
    covered = 0
    for i, c in enumerate(cs):
        assert c.ordinal == i
        assert c.text == detail[c.start:c.end]
        assert 0 < c.end - c.start <= ch.MAX_CHUNK_CHARS
        assert c.start <= covered < c.end  # no gap, always progressing
        if i:
            assert c.start > cs[i - 1].start and c.end > cs[i - 1].end
        for cut in (c.start, c.end):
            if 0 < cut < len(detail):
                assert detail[cut - 1:cut + 1] != "\r\n"
        covered = c.end
    assert ch.chunk_detail(detail) == cs
    if len(detail) <= MAX_DETAIL_CHARS:
        assert len(cs) <= ch.MAX_CHUNKS
    else:
        assert len(cs) <= max(ch.MAX_CHUNKS, ch.window_count_bound(len(detail)))
    return cs


def test_short_detail_is_one_chunk() -> None:
    cs = assert_policy("# Title\n\nHello world.\n\n- a\n- b\n")
    assert [c.text for c in cs] == ["# Title\n\nHello world.\n\n- a\n- b\n"]


def test_blocks_pack_to_the_target_and_break_at_headings() -> None:
    para = ("word " * 100).strip() + ".\n\n"  # 501 code points
    detail = "# One\n\n" + para * 5 + "# Two\n\n" + para * 5
    cs = assert_policy(detail)
    assert [c.text.startswith("# ") for c in cs] == [True, False, True, False]
    assert all(c.text.endswith("\n\n") for c in cs[:-1])
    assert all(c.end - c.start <= ch.MAX_CHUNK_CHARS for c in cs)


def test_undersized_tail_merges_backwards() -> None:
    para = ("w" * 9 + " ") * 60 + "\n\n"  # 602
    detail = para * 2 + "tail."
    cs = assert_policy(detail)
    assert len(cs) == 1
    detail = para * 4 + "tail."
    cs = assert_policy(detail)
    assert cs[-1].text.endswith("tail.") and len(cs[-1].text) > 5


def test_a_fenced_code_block_that_fits_is_kept_whole() -> None:
    code = "```python\n" + "x = 1\n\ny = 2\n" * 100 + "```\n"  # blank lines inside
    detail = "intro " * 150 + "\n\n" + code + "\nafter " * 200
    cs = assert_policy(detail)
    whole = [c for c in cs if code in c.text]
    assert len(whole) == 1


def test_an_over_long_paragraph_splits_at_sentence_ends() -> None:
    sentence = "This is a sentence of some length. "  # 35
    detail = sentence * 200  # 7000, one paragraph
    cs = assert_policy(detail)
    assert len(cs) > 1
    assert all(c.text.endswith(". ") for c in cs[:-1])
    assert all(cs[i].end == cs[i + 1].start for i in range(len(cs) - 1))  # no overlap


def test_a_block_without_boundaries_is_windowed_with_limited_overlap() -> None:
    detail = "x" * 5000
    cs = assert_policy(detail)
    assert [(c.start, c.end) for c in cs] == [(0, 2048), (1792, 3840), (3584, 5000)]


@pytest.mark.parametrize("name", ["no_punctuation", "headings", "deep_lists", "code_fence",
                                  "crlf", "zero_width", "surrogate_pairs", "cjk",
                                  "dots", "closing_quotes", "ideographic_stops"])
def test_adversarial_details_give_bounded_count_whole_coverage_same_chunks(name: str) -> None:
    big = {
        "no_punctuation": "word " * 200_000,
        "headings": "# h\n" * 100_000,
        "deep_lists": "".join("  " * (i % 64) + "- item\n" for i in range(100_000)),
        "code_fence": "```\n" + "x = 1\n" * 100_000,  # never closed
        "crlf": "line\r\n" * 200_000,
        "zero_width": "\u200b\u200c\u200d\ufeff" * 250_000,
        "surrogate_pairs": "\U0001f600" * 1_000_000,
        "cjk": "中文字符" * 250_000,
        # runs of sentence punctuation: scanned once (no regex backtracking per start)
        "dots": "." * 1_000_000,
        "closing_quotes": '."' * 500_000,
        "ideographic_stops": "\u3002" * 1_000_000,
    }[name]
    assert len(big) >= 400_000
    cs = assert_policy(big)
    assert len(cs) <= ch.window_count_bound(len(big))
    valid = big[:MAX_DETAIL_CHARS]
    assert len(assert_policy(valid)) <= ch.MAX_CHUNKS


def test_crlf_pairs_are_never_split_by_a_window() -> None:
    detail = "\r\n" * 5000
    cs = assert_policy(detail)
    assert all(c.start % 2 == 0 and c.end % 2 == 0 for c in cs)


def test_many_small_blocks_past_the_bound_fall_back_to_windows() -> None:
    # 4,096 headings of 8 code points: structurally one heading per chunk would be far
    # more than MAX_CHUNKS; the result is the window fallback of the whole detail.
    detail = "".join(f"# h{i:04d}\n\nx\n\n" for i in range(2500))[:MAX_DETAIL_CHARS]
    cs = assert_policy(detail)
    assert len(cs) <= ch.MAX_CHUNKS


def test_window_count_bound_arithmetic() -> None:
    assert ch.window_count_bound(ch.MAX_CHUNK_CHARS) == 1
    assert ch.window_count_bound(MAX_DETAIL_CHARS) == 19
    assert ch.window_count_bound(MAX_DETAIL_CHARS) <= ch.MAX_CHUNKS
    assert ch.MAX_CHUNKS * 80 <= 4096


def test_fts_column_bound_holds_for_the_worst_scripts() -> None:
    n = ch.MAX_CHUNK_CHARS
    worst = {
        "thai": "\u0e01" * n,
        "thai_marks": ("\u0e01\u0e48" * n)[:n],
        "astral_cjk": "\U00020000\U00020001" * (n // 2),
        "cjk": "中文" * (n // 2),
        "joined": "a." * (n // 2),
        "non_ascii_joined": "\u00e9." * (n // 2),
        "ligatures": "\ufb03 " * (n // 2),
        "hangul": "\uac00" * n,
        # v2's compatibility folding: what it keeps and what comes nearest the bound
        "squared_words": "\u3316" * n,  # ㌖ would be 6 katakana
        "arabic_phrase": "\ufdfa" * n,  # ﷺ would be 4 words
        "tibetan_vocalic": ("\u0f77\u0e01" * n)[:n],  # a letter and 2 marks
        "sara_am": "\u0e33" * n,
        "halfwidth_voiced": ("\uff9e\u0e01" * n)[:n],
        "parenthesized": "\u3220" * n,  # ㈠ is (一)
    }
    for name, text in worst.items():
        assert len(text) <= n
        for a in analyzer.ANALYZERS.values():
            got = len(a.searchable_text(text))
            assert got <= ch.max_fts_chars(len(text)), (name, a.version, got)
    assert ch.MAX_CHUNK_FTS_CHARS <= ch.FTS_COLUMN_BYTES
    assert MAX_TOPIC_FTS_CHARS <= ch.FTS_COLUMN_BYTES
    # the bound is tight: a Thai chunk comes within 26 characters of it
    assert len(analyzer.V1.searchable_text(worst["thai"])) == 26 * n - 18
    # it holds for NFC text (every Detail is NFC): NFC splits U+0F73 into two marks, so
    # the raw string would exceed it, its NFC form does not
    raw = "\u0e01\u0f73" * 100
    assert len(analyzer.V1.searchable_text(raw)) > ch.max_fts_chars(len(raw))
    nfc = unicodedata.normalize("NFC", raw)
    assert len(analyzer.V1.searchable_text(nfc)) <= ch.max_fts_chars(len(nfc))


@pytest.mark.parametrize("bad", ["", None, 3])
def test_chunk_detail_refuses_empty_and_non_strings(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        ch.chunk_detail(bad)  # type: ignore[arg-type]
