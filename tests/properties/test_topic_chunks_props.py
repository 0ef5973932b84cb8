"""Properties of the chunk policy ``topic-chunks-v1`` (Topic Memory RFC, "Detail chunks
and deployment-enabled retrieval channels"): the chunks cover the Detail exactly, in
order, within the size and count bounds, the same every time, and every chunk's
Analyzer text fits the full-text column."""

from __future__ import annotations

import unicodedata

from hypothesis import example, given
from hypothesis import strategies as st

from powercontext.core import analyzer
from powercontext.core.topic import chunks as ch
from powercontext.core.topic.content import MAX_DETAIL_CHARS

WORDS = st.sampled_from(["alpha", "beta", "中文", "ก่ข", "ADR-0005", "x\u0301", "\u200b",
                         "\U0001f600", "ﬃ", "word.", "end!", "q?", "。", "a" * 90])
NL = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def markdown(draw: st.DrawFn) -> str:
    """Markdown-ish Details: headings, paragraphs, list items (nested), code fences
    (closed or not), blank lines, mixed line endings and scripts, some repeated many
    times so the bounds are reached."""
    nl = draw(NL)
    blocks = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["h", "p", "li", "code", "blank", "raw"]))
        words = " ".join(draw(st.lists(WORDS, min_size=1, max_size=30)))
        if kind == "h":
            block = "#" * draw(st.integers(1, 7)) + " " + words + nl
        elif kind == "p":
            block = words + nl + nl
        elif kind == "li":
            bullet = draw(st.sampled_from(["- ", "1. ", "* "]))
            block = "  " * draw(st.integers(0, 8)) + bullet + words + nl
        elif kind == "code":
            block = "```" + nl + words + nl + (draw(st.sampled_from(["```", ""])) + nl)
        elif kind == "blank":
            block = nl
        else:
            block = draw(st.text(max_size=40))
        blocks.append(block * draw(st.sampled_from([1, 1, 2, 7, 50, 400])))
    return "".join(blocks)[:MAX_DETAIL_CHARS] or "x"


def _check(detail: str) -> None:
    cs = ch.chunk_detail(detail)
    assert cs[0].start == 0 and cs[-1].end == len(detail)
    end = 0
    for i, c in enumerate(cs):
        assert c.ordinal == i and c.text == detail[c.start:c.end]
        assert 0 < len(c.text) <= ch.MAX_CHUNK_CHARS
        assert c.start <= end < c.end  # contiguous or overlapping, never a gap
        if c.start < end:  # overlap happens only between fixed windows, and is limited
            assert end - c.start <= ch.OVERLAP_CHARS + 1
        for cut in (c.start, c.end):
            assert detail[max(0, cut - 1):cut + 1] != "\r\n" or cut in (0, len(detail))
        end = c.end
    assert len(cs) <= ch.MAX_CHUNKS
    assert ch.chunk_detail(detail) == cs


@given(markdown())
@example("# h\n" * (MAX_DETAIL_CHARS // 4))
@example("- " * (MAX_DETAIL_CHARS // 2))
@example("\r\n" * (MAX_DETAIL_CHARS // 2))
@example("w" * MAX_DETAIL_CHARS)
def test_chunks_cover_the_detail_within_size_and_count_bounds(detail: str) -> None:
    _check(detail)


@given(st.text(min_size=1, max_size=6000))
def test_chunks_of_any_text_cover_it_within_bounds(detail: str) -> None:
    _check(detail)


@given(st.integers(1, 4 * MAX_DETAIL_CHARS))
def test_window_fallback_count_is_within_its_bound(length: int) -> None:
    detail = ("ab\r\n" * length)[:length]
    windows = list(ch._windows(detail, 0, length))
    assert len(windows) <= ch.window_count_bound(length)
    if length <= MAX_DETAIL_CHARS:
        assert len(windows) <= ch.MAX_CHUNKS


@given(st.text(max_size=300).map(lambda t: unicodedata.normalize("NFC", t)))
@example("\u0e01" * 300)
@example(unicodedata.normalize("NFC", "\u0e01\u0f73" * 100))
@example("\u0e01\U00011127" * 150)
@example("\ufdfa\u0f77\u0e01\uff9e\u3316\u0e33" * 50)  # v2 keeps or folds each within it
def test_analyzer_text_of_nfc_text_is_at_most_26_characters_per_code_point(text: str) -> None:
    for a in analyzer.ANALYZERS.values():
        assert len(a.searchable_text(text)) <= ch.max_fts_chars(len(text))
