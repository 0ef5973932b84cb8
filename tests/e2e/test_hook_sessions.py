"""A session leaves a few notes, and corrections supersede (issue 34 items 1 and 2):
Claude Code ``Stop`` events (payloads and JSONL transcripts as Claude Code writes them)
and Codex ``agent-turn-complete`` notifications through the real ``powercontext hook``
command (click's runner in process) on a real SQLite file, then what the Memory, ``memory
show``, ``memory search`` and the next prompt give back."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from support.cli import invoke_hooks

from powercontext.core.models import MemoryEntryInput
from powercontext.runtime import open_service

pytestmark = pytest.mark.subprocess  # git

TEST_RULE = ("Test command: run `make test` (pytest) for routine code changes; pytest is "
             "configured in pyproject.toml.")
FORMAT_RULE = "Format your code with black (`make format`)."
SNAPSHOT_RULE = "Update a snapshot with `make test-snapshot-update` after checking the diff."


class Session:
    """One Claude Code session: its transcript grows turn by turn, each turn ends in a
    Stop payload."""

    def __init__(self, tmp_path: Path, repo: Path, name: str) -> None:
        self.id = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
        self.repo = repo
        self.path = tmp_path / f"{name}.jsonl"
        self.path.write_text("")
        self.parent: str | None = None

    def _line(self, kind: str, message: dict[str, Any]) -> str:
        uid = str(uuid.uuid4())
        rec = {"parentUuid": self.parent, "type": kind, "message": message, "uuid": uid,
               "sessionId": self.id, "cwd": str(self.repo)}
        self.parent = uid
        return json.dumps(rec)

    def turn(self, prompt: str, reply: str, *, last_message: bool = True) -> str:
        lines = [self._line("user", {"role": "user", "content": prompt}),
                 self._line("assistant", {"role": "assistant", "content": [
                     {"type": "text", "text": reply}]})]
        with self.path.open("a") as fh:
            fh.write("\n".join(lines) + "\n")
        body = {"session_id": self.id, "transcript_path": str(self.path),
                "cwd": str(self.repo), "hook_event_name": "Stop", "stop_hook_active": False}
        if last_message:
            body["last_assistant_message"] = reply
        return json.dumps(body)


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root.resolve()


def seed(db: Path, repo: Path, *rules: tuple[str, str]) -> str:
    async def body() -> str:
        async with open_service(db) as svc:
            ref = await svc.remember(None, mode="append", key=f"repo:{repo}", entries=tuple(
                MemoryEntryInput(k, t) for k, t in rules))
            return ref.artifact_id

    return asyncio.run(body())


def state(db: Path, memory: str) -> tuple[Any, dict[str, Any]]:
    """(head, active entry versions by id)."""
    async def body():
        async with open_service(db) as svc:
            head = await svc.head(memory)
            rev = await svc.revision(head)
            live = [e.entry_id for e in rev.content.manifest.entries if e.state == "active"]
            return head, await svc.entries(head, live)

    return asyncio.run(body())


def sources(db: Path, ids: list[str]) -> list[Any]:
    async def body():
        async with open_service(db) as svc:
            return list(await svc.backend.get_sources(ids))

    return asyncio.run(body())


def stop(tmp_path: Path, db: Path, payload: str) -> dict[str, Any]:
    return json.loads(invoke_hooks(tmp_path, db, "--json", "hook", "claude-code",
                                   stdin=payload).stdout)


def prompt_lines(tmp_path: Path, db: Path, repo: Path, prompt: str) -> list[str]:
    payload = {"session_id": "probe", "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
               "prompt": prompt}
    out = invoke_hooks(tmp_path, db, "hook", "claude-code", stdin=json.dumps(payload)).stdout
    if not out:
        return []
    ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    return [ln for ln in ctx.splitlines() if ln.startswith("- [")]


REPORTS = [f"Step {i}: edited src/app/module_{i}.py and ran `make test`: {i + 10} passed."
           for i in range(30)]


# --------------------------------------------------------------------------- item 1


def test_thirty_stops_of_one_session_leave_one_note_revised_with_all_their_evidence(
        tmp_path, repo):
    db = tmp_path / "memory.db"
    memory = seed(db, repo, ("preference", TEST_RULE))
    session = Session(tmp_path, repo, "a")
    outcomes = [stop(tmp_path, db, session.turn(f"Do step {i}.", report))["source_id"]
                for i, report in enumerate(REPORTS)]
    _, entries = state(db, memory)
    (note,) = [v for v in entries.values() if v.kind == "working_note"]
    assert note.version == 30
    assert note.text.startswith("Task outcome: Step 29: edited src/app/module_29.py")
    assert "\nEarlier in this session:\n- Step 28:" in note.text and len(note.text) < 2000
    assert {r.source_id for r in note.sources} == set(outcomes)  # every turn's evidence
    # a later session gets its own note
    other = Session(tmp_path, repo, "b")
    stop(tmp_path, db, other.turn("Fix the parser.", "Fixed the parser in src/app/parse.py."))
    _, entries = state(db, memory)
    assert sum(v.kind == "working_note" for v in entries.values()) == 2


def test_memory_search_shows_a_sessions_progress_once(tmp_path, repo):
    db = tmp_path / "memory.db"
    memory = seed(db, repo, ("preference", TEST_RULE))
    session = Session(tmp_path, repo, "a")
    for i in range(12):
        stop(tmp_path, db, session.turn("Run the tests.", f"Task outcome: ran `make test`, "
                                                         f"{i} passed."))
    out = json.loads(invoke_hooks(tmp_path, db, "--json", "memory", "search",
                                  "how do I run the tests", "--memory", memory).stdout)
    notes = [h for h in out["hits"] if h["kind"] == "working_note"]
    assert len(notes) == 1


def test_a_repeated_stop_of_the_same_turn_changes_nothing(tmp_path, repo):
    db = tmp_path / "memory.db"
    memory = seed(db, repo, ("preference", TEST_RULE))
    session = Session(tmp_path, repo, "a")
    payload = session.turn("Fix the flaky io test.", "Fixed: the test now waits for the lock.")
    stop(tmp_path, db, payload)
    head, entries = state(db, memory)
    again = stop(tmp_path, db, payload)  # redelivered unchanged
    retold = stop(tmp_path, db, json.dumps(dict(json.loads(payload),
                                                last_assistant_message="Also ran ruff.")))
    assert state(db, memory) == (head, entries)
    assert again["memory_ref"] in (None, {"artifact_id": memory, "revision": head.revision})
    assert retold["memory_ref"] in (None, {"artifact_id": memory, "revision": head.revision})


def test_an_outcome_equal_once_normalised_to_an_active_entry_changes_nothing(tmp_path, repo):
    db = tmp_path / "memory.db"
    memory = seed(db, repo, ("preference", TEST_RULE))
    session = Session(tmp_path, repo, "a")
    stop(tmp_path, db, session.turn("Docs?", "Added a \"Compact buttons\" section to "
                                             "`docs/widgets/button.md`."))
    head, entries = state(db, memory)
    stop(tmp_path, db, session.turn("Did the docs build?", "added a compact buttons section "
                                                           "to docs/widgets/button.md"))
    assert state(db, memory) == (head, entries)


@pytest.mark.parametrize("reply", ["You're welcome!", "Glad to help!", "No problem.", "Sure!",
                                   "Done.", "Done, thanks!", "Happy to help!"])
def test_pleasantries_are_trivial_and_leave_no_note(tmp_path, repo, reply):
    db = tmp_path / "memory.db"
    memory = seed(db, repo, ("preference", TEST_RULE))
    report = stop(tmp_path, db, Session(tmp_path, repo, "a").turn("thanks", reply))
    assert report["trivial"] == "an acknowledgement only" and report["extracted"] is False
    head, entries = state(db, memory)
    assert head.revision == 1 and len(entries) == 1


def test_older_sessions_notes_leave_the_prompt_before_rules_and_once_newer_ones_cover_them(
        tmp_path, repo):
    db = tmp_path / "memory.db"
    seed(db, repo, ("preference", TEST_RULE))
    old = Session(tmp_path, repo, "old")
    stop(tmp_path, db, old.turn("Fix the test.", "Fixed the flaky test in tests/test_io.py; "
                                                 "ran `make test`."))
    new = Session(tmp_path, repo, "new")
    stop(tmp_path, db, new.turn("Check the test again.", "Re-ran tests/test_io.py with "
                                                         "`make test`: it passes."))
    lines = prompt_lines(tmp_path, db, repo, "Run the tests for tests/test_io.py")
    assert lines[0].startswith(f"- [preference] {TEST_RULE}")
    notes = [ln for ln in lines if ln.startswith("- [working_note]")]
    assert len(notes) == 1 and "Re-ran tests/test_io.py" in notes[0]


def test_memory_show_lists_rules_before_notes(tmp_path, repo):
    db = tmp_path / "memory.db"
    memory = seed(db, repo, ("fact", "The CLI lives in src/app/cli.py."))
    for name in ("a", "b", "c"):
        stop(tmp_path, db, Session(tmp_path, repo, name).turn(
            "Work.", f"Worked on src/app/{name}.py and ran `make test`."))
    invoke_hooks(tmp_path, db, "memory", "remember", "--memory", memory, "--kind",
                 "constraint", "--text", "Never edit files under build/.")
    out = json.loads(invoke_hooks(tmp_path, db, "--json", "memory", "show", memory).stdout)
    kinds = [e["kind"] for e in out["entries"]]
    assert kinds == ["constraint", "fact", "working_note", "working_note", "working_note"]
    human = invoke_hooks(tmp_path, db, "memory", "show", memory).stdout.splitlines()[1:]
    assert "constraint" in human[0] and "working_note" in human[-1]


# --------------------------------------------------------------------------- item 2

CORRECTION = ("Those timeouts come from running 16 workers on my laptop. From now on run the "
              "tests with `pytest -n 4 -x tests/` in the activated venv instead of "
              "`make test`.")
CORRECTED = ("From now on run the tests with `pytest -n 4 -x tests/` in the activated venv "
             "instead of `make test`.")


def test_a_correction_in_a_prompt_revises_the_rule_it_names(tmp_path, repo):
    db = tmp_path / "memory.db"
    memory = seed(db, repo, ("preference", TEST_RULE), ("preference", FORMAT_RULE),
                  ("preference", SNAPSHOT_RULE))
    head, before = state(db, memory)
    (rule_id,) = [i for i, v in before.items() if v.text == TEST_RULE]
    session = Session(tmp_path, repo, "a")
    payload = session.turn(
        CORRECTION, "Understood: from now on I'll run the suite with `pytest -n 4 -x tests/` "
                    "instead of `make test`. Re-ran it: 4314 passed.")
    report = stop(tmp_path, db, payload)
    head, after = state(db, memory)
    rule = after[rule_id]
    assert (rule.version, rule.kind, rule.text) == (2, "preference", CORRECTED)
    (note,) = sources(db, [report["user_note_source_id"]])
    assert note.kind == "user_note" and note.content == CORRECTION  # the user's words
    assert report["user_note_source_id"] in {r.source_id for r in rule.sources}
    assert {r.source_id for r in before[rule_id].sources} <= {r.source_id for r in rule.sources}
    # no other active entry states the superseded command as a rule
    assert [v.text for v in after.values() if "`make test`" in v.text
            and v.kind != "working_note"] == [CORRECTED]
    # the same Stop redelivered changes nothing
    stop(tmp_path, db, payload)
    assert state(db, memory) == (head, after)
    # a search never shows the superseded text above its correction
    hits = json.loads(invoke_hooks(tmp_path, db, "--json", "memory", "search", "make test",
                                   "--memory", memory).stdout)["hits"]
    assert TEST_RULE not in [h["text"] for h in hits]
    # the next prompt gets the correction first
    lines = prompt_lines(tmp_path, db, repo, "Run the tests for my change before I push.")
    assert lines[0] == f"- [preference] {CORRECTED} (entry {rule_id})"


def test_a_correction_with_no_certain_link_adds_a_rule_that_ranks_above_the_old_ones(
        tmp_path, repo):
    db = tmp_path / "memory.db"
    other = "Run `make test` before asking for review."
    memory = seed(db, repo, ("preference", TEST_RULE), ("preference", other))
    session = Session(tmp_path, repo, "a")
    stop(tmp_path, db, session.turn(CORRECTION, "Understood."))
    _, after = state(db, memory)
    texts = {v.text: v for v in after.values()}
    assert TEST_RULE in texts and other in texts  # two rules name it: neither is revised
    assert texts[CORRECTED].version == 1
    lines = prompt_lines(tmp_path, db, repo, "Run the tests for my change before I push.")
    ranks = {t: next(i for i, ln in enumerate(lines) if t in ln)
             for t in (CORRECTED, TEST_RULE, other) if any(t in ln for ln in lines)}
    assert ranks[CORRECTED] == min(ranks.values())


def test_a_correction_through_remember_revises_the_rule_it_names(tmp_path, repo):
    db = tmp_path / "memory.db"
    tox_rule = "Test command: run `tox` (environments py310, py311, py312, docs)."
    memory = seed(db, repo, ("preference", tox_rule), ("preference", FORMAT_RULE))
    _, before = state(db, memory)
    (rule_id,) = [i for i, v in before.items() if v.text == tox_rule]
    text = "From now on use `uv run pytest -x` instead of tox for the quick loop."
    invoke_hooks(tmp_path, db, "memory", "remember", "--key", f"repo:{repo}", "--kind",
                 "preference", "--text", text)
    _, after = state(db, memory)
    assert after[rule_id].text == text and after[rule_id].version == 2
    assert len(after) == 2
    changes = json.loads(invoke_hooks(tmp_path, db, "--json", "memory", "changes",
                                      memory).stdout)
    (change,) = changes[0]["changes"]
    assert change["op"] == "revise" and "`tox`" in change["reason"]


def test_the_agents_own_words_make_no_rule(tmp_path, repo):
    db = tmp_path / "memory.db"
    memory = seed(db, repo, ("preference", TEST_RULE))
    report = stop(tmp_path, db, Session(tmp_path, repo, "a").turn(
        "Run the whole test suite.",
        "From now on I'll always run `pytest -n 4` instead of `make test`: it is faster."))
    assert "user_note_source_id" not in report
    _, after = state(db, memory)
    assert [v.kind for v in after.values()].count("working_note") == 1
    assert any(v.text == TEST_RULE for v in after.values())


def test_a_codex_turn_with_a_correction_revises_the_rule(tmp_path, repo):
    db = tmp_path / "memory.db"
    memory = seed(db, repo, ("preference", TEST_RULE))
    note = {"type": "agent-turn-complete", "thread-id": "th-1", "turn-id": "7",
            "cwd": str(repo), "input-messages": [CORRECTION],
            "last-assistant-message": "Understood."}
    invoke_hooks(tmp_path, db, "hook", "codex", json.dumps(note))
    _, after = state(db, memory)
    assert CORRECTED in {v.text for v in after.values()}
    assert TEST_RULE not in {v.text for v in after.values()}
