"""core.topic.window: the Window policy rule by rule (Topic Memory RFC, "Window selection
and context budgets", "Cumulative work and evidence ceilings", "Topic evidence and
Source lineage"; TOPIC-MEMORY.md, "Token estimates")."""

from __future__ import annotations

import json

import pytest
import rfc8785

from powercontext.core.canonical import make_source
from powercontext.core.errors import IntegrityError, InvalidInputError
from powercontext.core.models import Source
from powercontext.core.topic import window as w
from powercontext.core.topic.processing import (
    CODE_COMPLEXITY,
    MAX_DEPTH,
    MAX_SOURCE_CHARS,
    MAX_VISITED_VALUES,
    MAX_WINDOW_CHARS,
    JournalEntry,
    ProcessingSettings,
)

SMALL = ProcessingSettings(context_window_tokens=1_024)  # Window budget 819 tokens
#: The projection's own keys: "kind", "content", "uri", "metadata".
PROJECTION_KEY_CHARS = 22
#: Values and keys of a Source projection without metadata: the root, 4 keys, 4 values.
PROJECTION_VALUES = 9


def src(i: int, content: str = "note", kind: str = "user_note",
        metadata: dict[str, str] | None = None) -> Source:
    return make_source(f"src_{i:04d}", kind, content, None, metadata or {})


def raw_source(i: int, content: str) -> Source:
    """A Source value built without make_source's checks (e.g. holding a lone
    surrogate, which RFC 8785 cannot serialise): serialising it raises."""
    return Source(f"src_{i:04d}", "user_note", content, "0" * 64)


def journal(sources: list[Source], after: int = 0, scope: str = "project:x",
            lineage: frozenset[int] = frozenset()) -> list[JournalEntry]:
    return [JournalEntry(scope, after + 1 + i, s, after + 1 + i in lineage)
            for i, s in enumerate(sources)]


def sized(i: int, tokens: int) -> Source:
    """A Source whose evidence text estimates exactly ``tokens``."""
    base = w.estimate_tokens(w.evidence_text(src(i, "")))
    content = "a" * (3 * (tokens - base))
    s = src(i, content)
    assert w.estimate_tokens(w.evidence_text(s)) == tokens
    return s


# ------------------------------------------------------------------ token estimate


@pytest.mark.parametrize(("text", "tokens"), [
    ("", 8), ("a", 9), ("abc", 9), ("abcd", 10), ("é", 9), ("\U0001f600", 10),
    ("中文字", 11), ("\ud800", 9),
])
def test_estimate_tokens_is_utf8_bytes_over_three_rounded_up_plus_overhead(text, tokens):
    assert w.estimate_tokens(text) == tokens


def test_window_token_budget_is_eighty_percent_of_the_context_window_floored():
    assert w.window_token_budget(ProcessingSettings()) == 100_000
    assert w.window_token_budget(SMALL) == 819
    assert w.window_token_budget(ProcessingSettings(context_window_tokens=1_031)) == 824


# ------------------------------------------------------------------ complexity


def test_evidence_text_is_rfc8785_of_kind_content_uri_metadata():
    s = make_source("src_1", "file", "é \"q\"", "file:///a.md", {"b": "2", "a": "1"})
    text = w.evidence_text(s)
    assert text.encode() == rfc8785.dumps(
        {"kind": "file", "content": "é \"q\"", "uri": "file:///a.md",
         "metadata": {"a": "1", "b": "2"}})
    assert json.loads(w.evidence_text(src(1)))["uri"] is None


def test_source_of_65537_values_is_over_the_ceiling_and_65535_is_within():
    # a Source's count is odd: 9 + 2 per metadata pair
    pairs = (MAX_VISITED_VALUES + 1 - PROJECTION_VALUES) // 2
    over = src(1, metadata={f"k{i}": "v" for i in range(pairs)})
    within = src(2, metadata={f"k{i}": "v" for i in range(pairs - 1)})
    assert PROJECTION_VALUES + 2 * pairs == 65_537
    assert "values" in w.check_complexity(over)
    assert w.check_complexity(within) is None


def test_plain_value_of_65536_values_is_within_and_65537_is_over():
    assert w.check_value_complexity([0] * (MAX_VISITED_VALUES - 1)) is None
    assert "65536 values" in w.check_value_complexity([0] * MAX_VISITED_VALUES)
    assert w.check_value_complexity({str(i): 0 for i in range(32_767)}) is None  # 65,535
    assert w.check_value_complexity({str(i): [] for i in range(32_768)}) is not None


def nested(depth: int, leaf: object = "x") -> object:
    value: object = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def test_depth_33_is_over_the_ceiling_and_32_is_within():
    # A Source's metadata is flat string pairs, so its projection is always at depth 2:
    # the depth ceiling is tested on plain JSON values, which the visitor takes.
    assert w.check_value_complexity(nested(MAX_DEPTH)) is None
    assert "deeper than 32" in w.check_value_complexity(nested(MAX_DEPTH + 1))
    assert w.check_value_complexity(nested(MAX_DEPTH + 1, leaf=[])) is not None
    assert w.check_value_complexity(nested(MAX_DEPTH, leaf=[])) is not None
    deep = nested(50_000)  # iterative: no RecursionError however deep
    assert "deeper" in w.check_value_complexity(deep)


def test_source_of_4194305_characters_metadata_included_is_over_the_ceiling():
    room = MAX_SOURCE_CHARS - PROJECTION_KEY_CHARS - len("user_note")
    assert w.check_complexity(src(1, "a" * (room + 1))) is not None
    # metadata counts: the same total split between content and a metadata value
    assert "characters" in w.check_complexity(
        src(2, "a" * (room - 5), metadata={"k": "v" * 5}))
    assert w.check_complexity(src(3, "a" * (room - 6), metadata={"k": "v" * 5})) is None


def test_complexity_is_checked_without_serialising_the_source():
    s = raw_source(1, "lone \ud800 surrogate")
    assert w.check_complexity(s) is None
    with pytest.raises(InvalidInputError):
        w.evidence_text(s)


class Poison(str):
    """A string whose visit fails the test: the visitor must stop before it."""

    __slots__ = ()

    def __len__(self) -> int:
        raise AssertionError("visited past the ceiling")


def test_complexity_visit_stops_at_the_first_ceiling_passed():
    assert "deeper" in w.check_value_complexity([nested(MAX_DEPTH + 1), Poison("x")])
    assert "values" in w.check_value_complexity([*([0] * MAX_VISITED_VALUES), Poison("x")])
    assert "characters" in w.check_value_complexity(
        ["a" * (MAX_SOURCE_CHARS + 1), Poison("x")])


# ------------------------------------------------------------------ select_window


def test_no_entries_after_the_cursor_is_no_window():
    assert w.select_window([], 4, ProcessingSettings()) is None


def test_window_takes_at_most_the_source_limit_with_ids_in_journal_order():
    entries = journal([src(i) for i in range(12)], after=3)
    win = w.select_window(entries, 3, ProcessingSettings())
    assert (win.after, win.through, win.oversized) == (3, 13, False)
    assert [s.evidence_id for s in win.sources] == [f"s{i}" for i in range(1, 11)]
    assert [s.entry for s in win.sources] == entries[:10]
    assert all(s.text == w.evidence_text(s.entry.source) for s in win.sources)
    win = w.select_window(entries, 3, ProcessingSettings(window_limit=3))
    assert win.through == 6 and len(win.sources) == 3


def test_window_stops_before_the_source_that_would_pass_the_token_budget():
    entries = journal([sized(1, 400), sized(2, 419), sized(3, 30)])
    win = w.select_window(entries, 0, SMALL)
    assert win.through == 2 and win.tokens == 819 and not win.oversized  # exactly full
    entries = journal([sized(1, 400), sized(2, 420), sized(3, 30)])
    win = w.select_window(entries, 0, SMALL)
    assert win.through == 1 and [s.tokens for s in win.sources] == [400]


def test_window_stops_before_the_source_that_would_pass_the_window_characters():
    big = ProcessingSettings(context_window_tokens=10_000_000)  # tokens never bind
    third = MAX_WINDOW_CHARS // 3
    entries = journal([src(1, "a" * third), src(2, "b" * third), src(3, "c" * third)])
    win = w.select_window(entries, 0, big)
    assert win.through == 2
    assert sum(len(s.text) for s in win.sources) <= MAX_WINDOW_CHARS


def test_lineage_only_rows_are_inside_the_interval_without_ids_or_tokens():
    entries = journal([src(1), src(2), src(3), src(4)], lineage=frozenset({1, 3}))
    win = w.select_window(entries, 0, ProcessingSettings())
    assert win.through == 4
    assert [(s.evidence_id, s.entry.position) for s in win.sources] == [("s1", 2), ("s2", 4)]
    # they count towards the Source limit (they are Journal positions)
    win = w.select_window(entries, 0, ProcessingSettings(window_limit=2))
    assert win.through == 2 and len(win.sources) == 1


def test_window_of_only_lineage_only_rows_has_no_sources():
    entries = journal([raw_source(1, "\ud800"), raw_source(2, "\ud800")],
                      lineage=frozenset({1, 2}))
    win = w.select_window(entries, 0, ProcessingSettings())  # never serialised
    assert (win.through, win.sources, win.oversized) == (2, (), False)


def test_first_source_over_the_budget_alone_is_a_single_source_window():
    entries = journal([sized(1, 900), sized(2, 30)])
    win = w.select_window(entries, 0, SMALL)
    assert win.oversized and win.through == 1 and len(win.sources) == 1
    # lineage-only rows before it stay in the interval; the Window ends with it
    entries = journal([src(1), sized(2, 900), sized(3, 30)], lineage=frozenset({1}))
    win = w.select_window(entries, 0, SMALL)
    assert win.oversized and win.through == 2
    assert [s.entry.position for s in win.sources] == [2]


def test_a_later_source_over_the_budget_alone_waits_for_its_own_window():
    entries = journal([sized(1, 30), sized(2, 900)])
    win = w.select_window(entries, 0, SMALL)
    assert not win.oversized and win.through == 1
    win = w.select_window(entries[1:], 1, SMALL)
    assert win.oversized and win.through == 2


def test_complex_first_source_is_a_rejection_and_a_later_one_ends_the_prefix():
    complex_ = src(3, "a" * (MAX_SOURCE_CHARS + 1))
    entries = journal([src(1), src(2), complex_, src(4)])
    win = w.select_window(entries, 0, ProcessingSettings())
    assert isinstance(win, w.Window) and win.through == 2
    rejection = w.select_window(entries[2:], 2, ProcessingSettings())
    assert rejection == w.WindowRejection("project:x", 3, CODE_COMPLEXITY,
                                          rejection.reason)
    assert "characters" in rejection.reason and "aaa" not in rejection.reason
    # after lineage-only rows the prefix also ends before it (they still advance)
    entries = journal([src(1), complex_], lineage=frozenset({1}))
    win = w.select_window(entries, 0, ProcessingSettings())
    assert isinstance(win, w.Window) and (win.through, win.sources) == (1, ())


def test_source_whose_canonical_text_passes_the_characters_is_rejected():
    # 2.1M raw characters, each escaped to two in canonical JSON
    s = src(1, '"' * (MAX_SOURCE_CHARS // 2 + 1))
    assert w.check_complexity(s) is None
    rejection = w.select_window(journal([s]), 0, ProcessingSettings())
    assert isinstance(rejection, w.WindowRejection)
    assert rejection.code == CODE_COMPLEXITY


def test_rejection_in_one_scope_leaves_another_scope_its_window():
    bad = journal([src(1, "a" * (MAX_SOURCE_CHARS + 1))], scope="project:bad")
    good = journal([src(2)], scope="project:good")
    assert isinstance(w.select_window(bad, 0, ProcessingSettings()), w.WindowRejection)
    assert w.select_window(good, 0, ProcessingSettings()).through == 1


def test_rows_after_the_window_end_are_never_serialised():
    poison = raw_source(9, "\ud800")
    entries = journal([src(1), poison])
    assert w.select_window(entries, 0, ProcessingSettings(window_limit=1)).through == 1
    entries = journal([sized(1, 900), poison])
    assert w.select_window(entries, 0, SMALL).through == 1
    entries = journal([sized(1, 800), sized(2, 100), poison])
    assert w.select_window(entries, 0, SMALL).through == 1


def test_entries_not_contiguous_after_the_cursor_are_an_integrity_error():
    with pytest.raises(IntegrityError):
        w.select_window(journal([src(1), src(2)], after=1), 0, ProcessingSettings())
    gap = journal([src(1)]) + journal([src(3)], after=2)
    with pytest.raises(IntegrityError):
        w.select_window(gap, 0, ProcessingSettings())
    mixed = journal([src(1)]) + journal([src(2)], after=1, scope="project:y")
    with pytest.raises(IntegrityError):
        w.select_window(mixed, 0, ProcessingSettings())


# ------------------------------------------------------------------ evidence ids


def three_window() -> w.Window:
    entries = journal([src(3), src(1), src(2), src(4)], lineage=frozenset({4}))
    return w.select_window(entries, 0, ProcessingSettings())


def test_evidence_ids_map_to_exact_source_refs_sorted():
    win = three_window()
    refs = win.refs(["s2", "s1"], "new[0].evidence_ids")
    assert refs == (src(1).ref, src(3).ref)
    assert win.refs(("s3",), "f") == (src(2).ref,)


@pytest.mark.parametrize(("ids", "field", "says"), [
    ([], "f", "at least one"),
    ("s1", "f", "list"),
    (None, "f", "list"),
    (["s1", 1], "f[1]", "string"),
    (["s1", "s1"], "f[1]", "duplicate"),
    (["x1"], "f[0]", "not an evidence id"),
    (["S1"], "f[0]", "not an evidence id"),
    (["s4"], "f[0]", "not in this Window"),  # the lineage-only row has no id
    (["s0"], "f[0]", "not in this Window"),
    (["s2", "s99"], "f[1]", "not in this Window"),
])
def test_bad_evidence_ids_are_refused_naming_the_field(ids, field, says):
    with pytest.raises(InvalidInputError) as err:
        three_window().refs(ids, "f")
    assert err.value.field == field and says in str(err.value)


# ------------------------------------------------------------------ fragments


def check_fragments(text: str, budget: int) -> tuple[w.Fragment, ...]:
    frags = w.fragments("s1", text, budget)
    assert "".join(f.text for f in frags) == text
    at = 0
    for f in frags:
        assert f.evidence_id == "s1" and f.start == at and f.text == text[f.start:f.end]
        assert f.end > f.start
        assert w.estimate_tokens(json.dumps(f.text, ensure_ascii=True)) <= budget
        assert w.estimate_tokens(json.dumps(f.text, ensure_ascii=False)) <= budget
        assert w.escaped_tokens(f.text) <= budget
        at = f.end
    assert at == len(text)
    return frags


def test_fragments_keep_every_character_and_fit_with_json_escaping():
    text = 'plain "quoted" back\\slash \n\t\x00 é 中文 \U0001f600 ' * 40
    frags = check_fragments(text, 40)
    assert len(frags) > 10
    assert w.fragments("s1", text, 40) == frags  # deterministic


def test_each_fragment_is_the_longest_that_fits():
    text = "abcdefghij" * 10
    frags = check_fragments(text, 12)  # room 3 * 4 - 2 = 10 escaped bytes
    assert [len(f.text) for f in frags] == [10] * 10
    frags = check_fragments('"' * 20, 12)  # each escapes to 2 bytes
    assert [len(f.text) for f in frags] == [5] * 4


def test_fragments_never_split_a_surrogate_pair():
    text = "ab" + "\ud83d\ude00" * 3  # a high then a low surrogate code point, paired
    frags = check_fragments(text, 13)  # room 13 escaped bytes: "ab" + 6 + cannot take 12
    for f in frags:
        assert not ("\ud800" <= text[f.end - 1] <= "\udbff" and f.end < len(text))
    assert frags[0].text == "ab"


def test_fragments_of_an_empty_text_and_a_too_small_budget():
    assert w.fragments("s1", "", 9) == ()
    with pytest.raises(InvalidInputError) as err:
        w.fragments("s1", "abc", 8)
    assert err.value.field == "budget_tokens"
    with pytest.raises(InvalidInputError):
        w.fragments("s1", "\U0001f600", 11)  # room 3 * 3 - 2 = 7 < 12 escaped bytes
    assert len(check_fragments("\U0001f600", 13)) == 1
    with pytest.raises(InvalidInputError):
        w.fragments("s1", "\ud83d\ude00", 12)  # the pair together needs 12
