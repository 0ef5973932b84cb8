"""Properties of the session notes and the screening of candidates (core/extraction/
task_outcomes.py, screening.py): whatever the sequence of Stops (sessions, turns, repeated
deliveries, trivial and repeated outcomes), a session keeps one active note, a repeated
Stop of a turn changes nothing, and no two active entries say the same thing once
normalised. The Memory is modelled by applying the screened candidates the way the
planner does (a revision replaces the text and unions its evidence; a new entry is
added)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.core import canonical
from powercontext.core.corrections import normalized
from powercontext.core.extraction import screen_memory_candidates, task_outcome_candidates
from powercontext.core.extraction.task_outcomes import MAX_SESSION_TURNS, session_of
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source

_REPLIES = (
    "Ran `make test`: 12 passed.", "ran `make test`: 12 passed", "Done.", "You're welcome!",
    "Glad to help!", "No problem.", "Sure!", "Added `--json` to `gh label list`.",
    "Fixed the flaky test in tests/test_io.py; it now waits for the lock.",
    "Opened the draft PR with the changelog entry.", "Left to do: docs and one more run.",
)


class Memory:
    """The active entries, applied as the planner would apply screened candidates."""

    def __init__(self) -> None:
        self.entries: dict[str, MemoryEntryVersion] = {}
        self.sources: dict[str, Source] = {}
        self.writes = 0

    def apply(self, candidates: tuple[MemoryEntryInput, ...]) -> None:
        for c in candidates:
            self.writes += 1
            if c.entry is not None:
                old = self.entries[c.entry.entry_id]
                refs = canonical.sort_source_refs({*old.sources, *(s.ref for s in c.sources)})
                self.entries[old.entry_id] = MemoryEntryVersion(
                    "mem_art_1", old.entry_id, f"{old.entry_version_id}+", old.version + 1,
                    old.entry_version_id, c.kind, c.text, refs, (),
                    canonical.entry_content_hash(c.kind, c.text, refs, ()), 1)
            else:
                n = len(self.entries)
                refs = canonical.sort_source_refs(s.ref for s in c.sources)
                self.entries[f"e{n}"] = MemoryEntryVersion(
                    "mem_art_1", f"e{n}", f"mem_ver_{n:04d}", 1, None, c.kind, c.text, refs,
                    (), canonical.entry_content_hash(c.kind, c.text, refs, ()), 1)

    def stop(self, source: Source) -> None:
        self.sources[source.source_id] = source
        current = tuple(self.entries.values())
        out = task_outcome_candidates((source,), current, self.sources)
        screened = screen_memory_candidates([("task_outcome", c) for c in out.candidates],
                                            (source,), current)
        self.apply(screened.candidates)


def outcome(session: str, turn: str, reply: str) -> Source:
    meta = {"agent": "claude-code", "repo": "/r", "session_id": session, "turn_id": turn}
    digest = canonical.source_content_hash("task_outcome", reply, None,
                                           tuple(sorted(meta.items())))
    return canonical.make_source(f"src_{digest[:40]}", "task_outcome", reply, None, meta)


_stops = st.lists(st.tuples(st.sampled_from(["A", "B", "C"]), st.integers(0, 12),
                            st.sampled_from(_REPLIES)), max_size=30)


def _notes_of(memory: Memory) -> dict[str, int]:
    count: dict[str, int] = {}
    for e in memory.entries.values():
        if e.kind != "working_note":
            continue
        sessions = {session_of(memory.sources[r.source_id])[1] for r in e.sources}
        for s in sessions:
            count[s] = count.get(s, 0) + 1
    return count


@settings(max_examples=150)
@given(_stops)
def test_a_session_keeps_one_note_whatever_the_stops(stops):
    memory = Memory()
    for session, turn, reply in stops:
        memory.stop(outcome(session, f"{session}-{turn}", reply))
    assert len(stops) <= MAX_SESSION_TURNS
    assert all(n == 1 for n in _notes_of(memory).values()), _notes_of(memory)
    # and every note cites the outcomes of one session only
    for e in memory.entries.values():
        assert len({session_of(memory.sources[r.source_id])[1] for r in e.sources}) == 1


@settings(max_examples=150)
@given(_stops, st.data())
def test_a_repeated_stop_of_a_turn_changes_nothing(stops, data):
    memory = Memory()
    delivered: list[Source] = []
    for session, turn, reply in stops:
        src = outcome(session, f"{session}-{turn}", reply)
        memory.stop(src)
        delivered.append(src)
    if not delivered:
        return
    again = data.draw(st.sampled_from(delivered))
    other_reply = data.draw(st.sampled_from(_REPLIES))
    before = dict(memory.entries)
    meta = dict(again.metadata)
    memory.stop(again)  # the same payload
    memory.stop(outcome(meta["session_id"], meta["turn_id"], other_reply))  # same turn
    if any(again.source_id in {r.source_id for r in e.sources} for e in before.values()):
        assert memory.entries == before


@settings(max_examples=150)
@given(_stops)
def test_no_two_active_entries_say_the_same_thing(stops):
    memory = Memory()
    rule = MemoryEntryInput("preference", "Ran `make test`: 12 passed.",
                            sources=(outcome("X", "x", "rule"),))
    memory.sources[rule.sources[0].source_id] = rule.sources[0]
    memory.apply((rule,))
    for session, turn, reply in stops:
        memory.stop(outcome(session, f"{session}-{turn}", reply))
    said = [normalized(e.text) for e in memory.entries.values()]
    assert len(said) == len(set(said))
    latest = [normalized(e.text.split("\nEarlier in this session:")[0])
              for e in memory.entries.values()]
    assert len(latest) == len(set(latest))


@settings(max_examples=100)
@given(st.lists(st.tuples(st.sampled_from(["fact", "preference", "working_note"]),
                          st.sampled_from(["Use uv.", "use UV", "Use uv!", "Run tox.",
                                           "run  tox", "Never edit build/."])),
                max_size=12))
def test_screening_never_adds_an_entry_equal_once_normalised_to_an_active_one(items):
    src = canonical.make_source("src_a", "user_note", "a")
    current: list[MemoryEntryVersion] = []
    for kind, text in items:
        screened = screen_memory_candidates(
            [("p", MemoryEntryInput(kind, text, sources=(src,)))], (src,), tuple(current))
        for c in screened.candidates:
            n = len(current)
            refs = (src.ref,)
            current.append(MemoryEntryVersion(
                "mem_art_1", f"e{n}", f"v{n}", 1, None, c.kind, c.text, refs, (),
                canonical.entry_content_hash(c.kind, c.text, refs, ()), 1))
    said = [normalized(e.text) for e in current]
    assert len(said) == len(set(said))
