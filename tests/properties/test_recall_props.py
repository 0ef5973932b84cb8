"""Properties of the prompt hook's relevance bar and slots (core/recall.py, core/intents.py,
core/corrections.py): a common word alone never injects anything, the slots are bounded
and ordered (rules before notes, at most MAX_NOTES notes, a correction above what it
corrects, every asked intent answered when there is room), and a path never signals an
intent."""

from __future__ import annotations

import attrs
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from powercontext.core import analyzer as analyzers
from powercontext.core import corrections, intents, recall

AN = analyzers.get()
_ORDINARY = ("python", "javascript", "list", "tuple", "difference", "widget", "regex",
             "invoice", "billing", "browser", "shell", "status", "parser")
_PROSE = ("the", "a", "we", "this", "project", "has", "some", "notes", "about", "and")


@given(st.sampled_from(_ORDINARY), st.lists(st.sampled_from(_PROSE), max_size=12),
       st.lists(st.sampled_from(_PROSE), max_size=12))
def test_one_ordinary_word_in_common_never_passes_the_bar(word, left, right):
    profile = recall.profile_prompt(f"What is the {word} here?", AN)
    assert profile.intents == ()
    text = " ".join([*left, word.capitalize(), *right])
    assert recall.judge(profile, text, AN) is None


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz/_.-", min_size=1, max_size=30))
def test_a_path_never_signals_an_intent(tail):
    assert intents.prompt_intents(f"look at pkg/cmd/{tail}/pr/test/lint") == {}


@given(st.lists(st.sampled_from(list(recall.FILLER_WORDS | recall.COMMON_WORDS)),
                max_size=15))
def test_a_prompt_of_common_words_gets_nothing(words):
    profile = recall.profile_prompt(" ".join(words), AN)
    assume(not profile.intents)  # "check" and "pass" may still be words of an intent
    assert profile.empty
    assert recall.judge(profile, "Run `make test` before every commit.", AN) is None


@attrs.frozen
class Item:
    kind: str
    text: str
    entry_version_id: str


_TEXTS = (
    "Run `make test` before review.", "From now on run `pytest -x` instead of `make test`.",
    "Use `ruff check` for lint.", "Task outcome: ran `make test` on src/app.py.",
    "Task outcome: edited src/app.py and docs/index.md.", "Build with `make build`.",
    "Write the changelog entry in CHANGES.md.", "Open a PR with the template.",
)
_VERDICTS = st.builds(
    recall.Verdict, st.floats(0.5, 12, allow_nan=False),
    st.lists(st.tuples(st.sampled_from([i.name for i in intents.INTENTS]),
                       st.sampled_from([recall.RELATED, 1, 2])), max_size=3,
             unique_by=lambda t: t[0]).map(tuple),
    st.lists(st.sampled_from(["x", "y", "z"]), max_size=3, unique=True).map(tuple),
    st.integers(0, 1))
_CANDIDATES = st.lists(st.tuples(st.sampled_from(["preference", "constraint", "fact",
                                                  "working_note"]),
                                 st.sampled_from(_TEXTS), _VERDICTS), max_size=14)


@settings(max_examples=300)
@given(_CANDIDATES, st.integers(1, 8),
       st.lists(st.sampled_from([i.name for i in intents.INTENTS]), max_size=3,
                unique=True))
def test_slots_are_bounded_rules_first_and_corrections_above_what_they_correct(
        raw, limit, asked):
    cands = [(Item(k, t, f"mem_ver_{i:03d}"), v) for i, (k, t, v) in enumerate(raw)]
    chosen = recall.order_slots(cands, limit, corrections.corrects, tuple(asked))
    kinds = [item.kind for item, _ in chosen]
    assert len(chosen) <= recall.slot_limit(limit, len(asked))
    assert len(set(map(id, chosen))) == len(chosen)
    assert kinds.count("working_note") <= recall.MAX_NOTES
    if "working_note" in kinds:  # rules before notes
        first_note = kinds.index("working_note")
        assert all(k == "working_note" for k in kinds[first_note:])
    texts = [item.text for item, _ in chosen]
    for j, (new, _) in enumerate(chosen):
        if new.kind != "working_note":
            for old in texts[:j]:
                assert not corrections.corrects(new.text, old), (new.text, old)


@settings(max_examples=300)
@given(_CANDIDATES, st.lists(st.sampled_from([i.name for i in intents.INTENTS]),
                             max_size=3, unique=True))
def test_every_asked_intent_is_answered_when_there_is_room(raw, asked):
    cands = [(Item(k, t, f"mem_ver_{i:03d}"), v) for i, (k, t, v) in enumerate(raw)]
    rules = [c for c in cands if c[0].kind != "working_note"]
    limit = len(asked) + 1
    chosen = recall.order_slots(cands, limit, None, tuple(asked))
    for name in asked:
        best = max((s for _, v in cands for n, s in v.intents if n == name), default=None)
        if best is None or not any((name, best) in v.intents for _, v in rules):
            continue
        assert any((name, best) in v.intents for _, v in chosen), name


@given(st.sampled_from(["make test", "tox", "npm run lint", "cargo fmt", "uv run pytest -x"]),
       st.sampled_from(["pytest -n 4", "just ci", "ruff check", "nox -s tests"]))
def test_a_correction_states_what_it_puts_in_place_not_what_it_replaces(old, new):
    text = f"From now on run `{new}` instead of `{old}`."
    (rule,) = corrections.user_rules(f"Thanks. {text}")
    assert rule.text == text and rule.replaces == (old,)
    assert not corrections.states(text, old) and corrections.states(text, new)
    assert corrections.corrects(text, f"Run `{old}` before you push.")
    assert not corrections.corrects(f"Run `{old}` before you push.", text)


def test_the_hooks_note_cap_is_the_slots_one():
    from powercontext.entrypoints.cli import hook_prompt

    assert hook_prompt.MAX_NOTES == recall.MAX_NOTES


_WORDS = ("Run", "`make test`", "snapshots", "retryDelay", "src/app/cli.py", "--lf", "(tests)",
          "running", "the", "DataTable.sort", "needs-design", "Überprüfung", "文档", "flaky",
          "RELEASING", "docs/", "`tox -e docs`", "parameters,", "agent.run_sync()",
          "lint,test", "a/b,snapshot", "ﬁxes", "Straße", "(re-run)")


@settings(max_examples=300)
@given(st.lists(st.sampled_from(_WORDS), max_size=12), st.lists(st.sampled_from(_WORDS),
                                                                 min_size=1, max_size=8))
def test_the_terms_judge_reads_are_the_analyzers(text_words, prompt_words):
    """judge analyses only the words that may give a wanted term: the same terms."""
    for an in (analyzers.get("v1"), analyzers.get("v1-porter")):
        profile = recall.profile_prompt(" ".join(prompt_words), an)
        text = " ".join(text_words)
        expected = set(an.query_terms(text)) & profile.terms
        assert recall._terms_in(text, profile.terms, an) & profile.terms == expected


_PIECES = ("Use", "`uv run pytest`", "instead of", "rather than", "in place of", "tox",
           "no longer use", "stop using", "switch from", "replace", "with", ",not", ", not",
           "don't run", "anymore", "any more", "make test", "always", "from now on", ".",
           "Switched away from", "REPLACED", "Instead  of")


@settings(max_examples=500)
@given(st.lists(st.sampled_from(_PIECES), max_size=10))
def test_the_hooks_correction_prefilter_lets_every_correction_through(pieces):
    from powercontext.entrypoints.cli import hook_prompt

    text = " ".join(pieces)
    old = "Run `uv run pytest` and tox and make test before review."
    assert hook_prompt._corrects(text, old) == corrections.corrects(text, old)


def test_an_equal_answer_that_answers_an_intent_more_strongly_keeps_its_slot():
    """The input Hypothesis found: two entries with the same text, the lower-ranked one
    answering the asked intent more strongly, were folded into the first, and the prompt
    lost its best answer."""
    text = "Run `make test` before review."
    cands = [(Item("preference", text, "mem_ver_000"), recall.Verdict(1.0, (("test", 0),))),
             (Item("preference", text, "mem_ver_001"), recall.Verdict(1.0, (("test", 1),)))]
    chosen = recall.order_slots(cands, 2, None, ("test",))
    assert any(("test", 1) in v.intents for _, v in chosen)
