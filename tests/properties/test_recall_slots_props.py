"""Properties of how the prompt hook fills its slots (core/recall.py, ``order_slots``):
a slot goes to what adds an answer, not to a second copy of one already given; nothing
that passes the bar is left out while there is room; notes leave before rules do, and an
older note leaves altogether once a newer one names the same files or commands."""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.core import analyzer as analyzers
from powercontext.core import intents, recall

AN = analyzers.get()


@attrs.frozen
class Item:
    kind: str
    text: str
    entry_version_id: str


def _cands(texts: list[tuple[str, str]], prompt: str) -> list[tuple[Item, recall.Verdict]]:
    profile = recall.profile_prompt(prompt, AN)
    out = []
    for i, (kind, text) in enumerate(texts):
        verdict = recall.judge(profile, text, AN)
        assert verdict is not None, text
        out.append((Item(kind, text, f"mem_ver_{i:03d}"), verdict))
    return out


_RUNNERS = ["Run the whole suite with `tox`.", "Run one file: `pytest tests/test_x.py`.",
            "`make test` runs the unit tests.", "CI runs `nox -s tests` on every push.",
            "Use `npm test` for the JavaScript part.", "`just test` runs everything."]


@given(st.permutations(_RUNNERS), st.integers(0, 6))
def test_a_rule_that_adds_the_prompts_own_term_beats_another_test_command(runners, at):
    placement = ("A regression test goes into the existing file that covers the "
                 "feature; do not create a new file for it.")
    texts = [("preference", t) for t in runners]
    texts.insert(at, ("constraint", placement))
    cands = _cands(texts, "Write a regression test for the crash in the parser")
    chosen = recall.order_slots(cands, 5, None, ("test",))
    assert placement in [item.text for item, _ in chosen]


@given(st.integers(0, 3))
def test_a_word_answer_is_kept_when_there_is_room_beside_command_answers(at):
    word = "Every behaviour change needs a test; look for an existing test file first."
    texts = [("preference", t) for t in _RUNNERS[:3]]
    texts.insert(at, ("constraint", word))
    cands = _cands(texts, "Write a test for the new rule")
    chosen = recall.order_slots(cands, 5, None, ("test",))
    assert word in [item.text for item, _ in chosen]


_VERDICTS = st.builds(
    recall.Verdict, st.floats(0.5, 12, allow_nan=False),
    st.lists(st.tuples(st.sampled_from([i.name for i in intents.INTENTS]),
                       st.sampled_from([recall.RELATED, 1, 2])), max_size=3,
             unique_by=lambda t: t[0]).map(tuple),
    st.lists(st.sampled_from(["x", "y", "z"]), max_size=3, unique=True).map(tuple),
    st.integers(0, 1))


@settings(max_examples=200)
@given(st.lists(_VERDICTS, max_size=8), st.integers(1, 8),
       st.lists(st.sampled_from([i.name for i in intents.INTENTS]), max_size=3,
                unique=True))
def test_nothing_passing_the_bar_is_left_out_while_there_is_room(verdicts, limit, asked):
    # distinct texts: no two give the same answer
    cands = [(Item("preference", f"Rule number {i} says `tool{i} run`.", f"v{i:03d}"), v)
             for i, v in enumerate(verdicts)]
    chosen = recall.order_slots(cands, limit, None, tuple(asked))
    if len(cands) <= limit:
        assert len(chosen) == len(cands)
    assert len(chosen) <= recall.slot_limit(limit, len(asked))


@settings(max_examples=200)
@given(st.integers(0, 6), st.integers(0, 4), st.integers(1, 8))
def test_notes_leave_before_rules_and_an_older_note_covered_by_a_newer_one_leaves(
        n_rules, n_notes, limit):
    verdict = recall.Verdict(3.0, (("test", 2),))
    rules = [(Item("preference", f"Run `tool{i} test` for part {i}.", f"mem_ver_{i:03d}"),
              verdict) for i in range(n_rules)]
    # notes of successive sessions, all about the same file; the newest has the largest id
    notes = [(Item("working_note", f"Task outcome: ran tests on `src/app.py` (session {j}).",
                   f"mem_ver_{100 + j:03d}"), verdict) for j in range(n_notes)]
    chosen = recall.order_slots([*notes, *rules], limit, None, ("test",))
    kinds = [item.kind for item, _ in chosen]
    chosen_notes = [item for item, _ in chosen if item.kind == "working_note"]
    assert kinds.count("preference") == min(n_rules, len(chosen))  # rules first
    assert len(chosen_notes) <= 1  # the newer note covers the older ones' file
    if chosen_notes:
        assert chosen_notes[0].entry_version_id == f"mem_ver_{100 + n_notes - 1:03d}"


@given(st.sampled_from(["CHANGELOG.md", "CHANGELOG.rst", "HISTORY.md", "NEWS.rst",
                        "CHANGES.rst"]),
       st.sampled_from(["Update the `{f}`.", "Add a line to {f} under Unreleased."]))
def test_a_changelog_file_name_answers_the_changelog_and_a_pull_request(name, shape):
    text = shape.format(f=name)
    assert "changelog" in intents.entry_intents(text, ())
    profile = recall.profile_prompt("Prepare the pull request for this bug fix", AN)
    verdict = recall.judge(profile, text, AN)
    assert verdict is not None and "changelog" in verdict.facets
