"""What the offline ``deterministic`` Topic provider writes, read as a person reads it
(TOPIC-MEMORY.md, "Providers"; docs/topic-memory.md, "The offline provider"): a title
from the heading or the first sentence that names the subject (never a speaker label,
a keyword list or a comment cut mid-sentence), a summary of at most two sentences and
300 characters, a detail in readable Markdown (code, configuration and their comments
in fences, never headings; a conversation as a conversation).

Each example of the kind that reached users is here (before: ``User:``, ``release,
branch, captain, tag``, ``powercontext developer entry points. `make quickstart` and
`make test` each work on a``, a whole file as one summary paragraph, ``#`` comments as
H1 headings); the properties hold for any text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from powercontext.adapters.topic_generation._words import sentences
from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core import canonical
from powercontext.core.topic.content import make_content
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.stages import SYSTEM_PROMPT
from powercontext.core.topic.window import estimate_tokens

MODEL = DeterministicTopicModel()
ROOT = Path(__file__).resolve().parents[2]

MAKEFILE = """\
# powercontext developer entry points. `make quickstart` and `make test` each work on a
# fresh machine by themselves: they create .venv, install what is missing, then run.
# quickstart installs only the base package (no extras, no Debian packages).
#
#   make quickstart   the coding-agent scenario on real files of this repository
#   make test         the whole test suite
#
# Variables: PYTHON (interpreter that creates .venv, default python3.11).

SHELL := /bin/bash
PYTHON ?= python3.11

quickstart: install-base
\t$(BIN)/python -m powercontext.entrypoints.quickstart

test: install
\t$(BIN)/pytest $(PYTEST_ARGS)
"""
TOX = """\
[tox]
env_list = py311, lint, types
min_version = 4.0

[testenv]
description = run the test suite
extras = dev
commands =
    pytest {posargs}

[testenv:lint]
description = ruff check
commands = ruff check core ports adapters
"""
TURN = ("User:\nhow do we cut a release?\n\nAssistant:\nThe release captain cuts the "
        "release branch on Monday and tags it. Production deploys happen on Tuesday "
        "after a 48 hour soak in staging.\n\n# Steps\n\n1. cut the branch\n2. tag it")
SHIP = "User:\nok, ship it\n\nAssistant:\nDeploying now: the canary is at 5% and healthy."
CHAT = ("Release planning, session 3\n"
        "Alice: the release captain cuts the branch on monday\n"
        "Bob: and the release tag is signed by the captain\n"
        "Alice: the branch freezes once the release captain tags it")


def evidence(content: str, kind: str = "file", uri: str | None = None) -> str:
    return canonical.canonical_dumps(
        {"content": content, "kind": kind, "metadata": {}, "uri": uri}).decode("utf-8")


def evolve(*sources: tuple[str, str, str | None]) -> list[dict[str, Any]]:
    """The CREATEs the global Topic Evolver answers for these Sources (no history)."""
    payload = {"sources": [{"id": f"s{i}", "text": evidence(*s)}
                           for i, s in enumerate(sources, start=1)], "history": []}
    input_json = canonical.canonical_dumps(payload, "input").decode("utf-8")
    req = StageRequest("evolve", SYSTEM_PROMPT, "Stage: evolve.", input_json,
                       "topic_evolution", "{}", 100,
                       estimate_tokens(SYSTEM_PROMPT) + estimate_tokens(input_json) + 100)
    out = json.loads(MODEL.answer(req))
    for t in out["new"]:
        make_content(t["title"], t["summary"], t["detail"])
    return list(out["new"])


def one(content: str, kind: str = "file", uri: str | None = None) -> dict[str, Any]:
    (topic,) = evolve((content, kind, uri))
    return topic


def headings(markdown: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]


# ---------------------------------------------------------------------- titles

def test_a_makefile_is_titled_by_its_name_and_first_whole_comment_sentence() -> None:
    topic = one(MAKEFILE, "file", "file:///repo/Makefile")
    assert topic["title"] == "Makefile: powercontext developer entry points"


def test_a_makefile_comment_never_becomes_a_heading_and_the_file_is_fenced() -> None:
    detail = one(MAKEFILE, "file", "file:///repo/Makefile")["detail"]
    assert headings(detail) == ["Makefile"]
    assert detail.startswith("## Makefile\n\n```make\n# powercontext developer")
    assert MAKEFILE.strip() in detail and detail.endswith("```")


def test_configuration_is_fenced_and_summarised_by_its_sections() -> None:
    topic = one(TOX, "file", "file:///repo/tox.ini")
    assert topic["title"] == "tox.ini"
    assert topic["summary"] == "Sections: [tox], [testenv], [testenv:lint]."
    assert "```ini\n[tox]" in topic["detail"] and headings(topic["detail"]) == ["tox.ini"]


def test_a_conversation_is_titled_by_what_the_user_asked_never_by_its_speaker_label() -> None:
    topic = one(TURN, "conversation", "claude-code://session/a/turn/1")
    assert topic["title"] == "how do we cut a release?"
    assert topic["summary"] == ("The release captain cuts the release branch on Monday and "
                                "tags it. Production deploys happen on Tuesday after a 48 "
                                "hour soak in staging.")


def test_a_conversation_reads_as_a_conversation() -> None:
    detail = one(TURN, "conversation", None)["detail"]
    assert detail.startswith("**User:** how do we cut a release?\n\n**Assistant:**\n\n"
                             "The release captain")
    assert headings(detail) == ["Steps"]  # the reply's own heading, below the turn
    assert "### Steps" in detail


def test_a_prompt_that_names_nothing_leaves_the_title_to_the_answer() -> None:
    assert one(SHIP, "conversation", None)["title"] == (
        "Deploying now: the canary is at 5% and healthy")


def test_a_chat_is_titled_by_its_most_central_sentence_not_a_keyword_list() -> None:
    topic = one(CHAT, "chat_session", None)
    assert topic["title"] == "the release captain cuts the branch on monday"
    assert "," not in topic["title"] or " " in topic["title"].split(",")[0]
    assert topic["detail"].startswith("**Release planning, session 3**\n\n- **Alice:** ")


def test_a_note_is_titled_by_its_heading_its_subject_label_or_first_naming_sentence(
        ) -> None:
    assert one("# Release process\n\nDeploys on Tuesday.", "user_note")["title"] == \
        "Release process"
    assert one("Billing: invoices are emailed nightly.", "user_note")["title"] == "Billing"
    assert one("Hi! production deploys now happen on Wednesday, soak 24 hours.",
               "user_note")["title"] == (
        "production deploys now happen on Wednesday, soak 24 hours")
    # a speaker's line is not a subject label
    assert one("Caroline: I went to a support group yesterday.", "user_note")["title"] == (
        "I went to a support group yesterday")
    assert one("Caroline: The support group met yesterday.", "chat_turn")["title"] == (
        "The support group met yesterday")


def test_a_sentence_too_long_for_a_title_gives_its_first_clause_or_is_cut_visibly() -> None:
    long = ("tox environments; the Makefile is the everyday entry point and every install "
            "is constrained by the constraints file so that a torch pin holds everywhere.")
    assert one(long, "user_note")["title"] == "tox environments"
    words = " ".join(f"word{i}" for i in range(60)) + "."
    title = one(words, "user_note")["title"]
    assert len(title) <= 100 and title.endswith("…")


# ---------------------------------------------------------------------- properties

_prose = st.lists(st.sampled_from(
    ["The", "release", "captain", "cuts", "a", "branch.", "Deploys", "happen", "on",
     "Tuesday!", "Why?", "#", "##", "-", "*", "1.", "`make", "test`", "\n", "\n\n", "User:",
     "Assistant:", "Caroline:", "[8 May]", "```", "é", "漢字", "a-b_c", "https://x.y/z"]),
    min_size=1, max_size=120).map(" ".join)
_kind = st.sampled_from([("user_note", None), ("file", "file:///r/Makefile"),
                         ("file", "file:///r/notes.md"), ("conversation", None),
                         ("chat_turn", None), ("file", "file:///r/app.py")])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_prose, _kind), min_size=1, max_size=4))
def test_titles_and_summaries_are_short_and_whole_for_any_text(
        sources: list[tuple[str, tuple[str, str | None]]]) -> None:
    """Any Sources: every title is at most 100 characters, one line, never a bare
    speaker or role label; every summary is at most two sentences and 300 characters."""
    made = evolve(*[(text, kind, uri) for text, (kind, uri) in sources if text.strip()]) \
        if any(t.strip() for t, _ in sources) else []
    for t in made:
        title = t["title"]
        assert len(title) <= 100 and "\n" not in title
        assert title.casefold().rstrip(":") not in {"user", "assistant"}
        assert not title.endswith(":")
        assert len(t["summary"]) <= 300
        assert len(sentences(t["summary"])) <= 2, t["summary"]


@settings(max_examples=100, deadline=None)
@given(st.text(st.sampled_from("#ab \n\t=:"), min_size=1, max_size=400))
def test_code_comments_are_never_headings_of_the_detail(body: str) -> None:
    """A Makefile (or any code file) is one fenced block: its ``#`` lines never render
    as headings, whatever they hold."""
    if not body.strip():
        return
    topic = one(body, "file", "file:///repo/Makefile")
    assert headings(topic["detail"]) == ["Makefile"]


def test_this_repositorys_own_files_read_well() -> None:
    """The files the quickstart and the dashboard show, as they are today."""
    make = one((ROOT / "Makefile").read_text("utf-8"), "file", (ROOT / "Makefile").as_uri())
    assert make["title"].startswith("Makefile: ") and not make["title"].endswith(("a", "…"))
    assert headings(make["detail"]) == ["Makefile"]
    tox = one((ROOT / "tox.ini").read_text("utf-8"), "file", (ROOT / "tox.ini").as_uri())
    assert tox["title"].startswith("tox.ini") and len(tox["summary"]) <= 300


def test_a_title_an_earlier_release_wrote_that_names_no_subject_is_replaced_on_update(
        ) -> None:
    """Topics written before this provider may be titled ``User:`` or by a keyword list;
    the next UPDATE titles them from their detail."""
    history = [{"handle": "h1", "title": "release, branch, captain, tag", "summary": "Old.",
                "detail": "The release captain cuts the branch on Monday and tags it."}]
    payload = {"sources": [{"id": "s1", "text": evidence(
        "release: the captain now cuts the branch on Tuesday.", "user_note")}],
        "history": history}
    input_json = canonical.canonical_dumps(payload, "input").decode("utf-8")
    req = StageRequest("evolve", SYSTEM_PROMPT, "Stage: evolve.", input_json,
                       "topic_evolution", "{}", 100, 10_000)
    out = json.loads(MODEL.answer(req))
    assert out["history"]["h1"]["title"] == (
        "The release captain cuts the branch on Monday and tags it")


def test_a_window_never_answers_more_new_topics_than_the_schema_allows() -> None:
    def word(i: int, k: int) -> str:
        return f"w{chr(97 + i // 26)}{chr(97 + i % 26)}{'xyz'[k]}"

    made = evolve(*[(f"# {word(i, 0)}\n\n{word(i, 1)} and {word(i, 2)}.", "user_note", None)
                    for i in range(40)])
    assert [t["title"] for t in made] == [word(i, 0) for i in range(32)]  # the rest: uncited


def test_inputs_the_properties_found_stay_fixed() -> None:
    """Found by the properties above: a bare label is no title (``The User:`` once was
    one), and a chat line whose speaker held a full stop (``branch. User: ...``) made a
    four-sentence summary."""
    assert one("The User:", "user_note")["title"] == "Untitled user note"
    made = one("branch. User: 漢字. branch. User: release captain branch.", "chat_turn")
    assert len(sentences(made["summary"])) <= 2
