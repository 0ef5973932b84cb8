"""Task-outcome memory candidates: the mechanical ``working_note`` of a session's
progress, never a fact, decision or constraint (Memory RFC, "Candidate generation and
model-free fallback": "the runtime may mechanically assemble the final report, changed
paths, Git head, and verification results ... into one working_note"; "Task events and
extraction boundaries": "the runtime may combine multiple provider events by session").

One session leaves one note, revised turn by turn. A ``task_outcome`` Source names its
session in its metadata (``agent``, ``session_id`` or ``thread_id``, ``repo``); an active
``working_note`` whose evidence holds a ``task_outcome`` of the same agent, session and
repository is that session's note, and the link is certain: the new outcome revises it
(the new Source is added to its evidence, the earlier evidence kept, as a revision
always keeps its predecessor's). Its text is rolling and bounded: the latest outcome in
full (:data:`MAX_NOTE_SUMMARY`), then at most :data:`MAX_EARLIER` earlier outcomes of
the session, shortened, newest first (:data:`EARLIER_HEAD`). After
:data:`MAX_SESSION_TURNS` outcomes a session starts a new note.

Nothing is proposed (a no-op) for: a trivial outcome (:func:`trivial_outcome`: "Done.",
"You're welcome!", a typo fix); an outcome already in its session note's evidence, or of
a turn (metadata ``turn_id``) that note already holds (a repeated Stop of the same turn
changes nothing, whatever its Source id); an outcome whose text, normalised
(:func:`~powercontext.core.corrections.normalized`), equals an active entry's
or the latest outcome of a note.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from powercontext.core.corrections import normalized
from powercontext.core.extraction.admission import check_memory_admission
from powercontext.core.extraction.results import ExtractionResult, Refusal, cut_text
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source
from powercontext.core.secrets import find_secret

__all__ = [
    "EARLIER_HEAD",
    "MAX_EARLIER",
    "MAX_NOTE_SUMMARY",
    "MAX_SESSION_TURNS",
    "TRIVIAL_MAX_WORDS",
    "session_of",
    "task_outcome_candidates",
    "trivial_outcome",
]

MAX_NOTE_SUMMARY = 600
#: Earlier outcomes a session note keeps, newest first, each cut to :data:`MAX_EARLIER_CHARS`.
MAX_EARLIER = 4
MAX_EARLIER_CHARS = 200
#: A session note citing this many outcomes is not revised again: the session's next
#: outcome starts a new note (an entry version's evidence list stays bounded).
MAX_SESSION_TURNS = 50
#: The line that starts a session note's earlier outcomes.
EARLIER_HEAD = "Earlier in this session:"
#: An outcome longer than this many words is never trivial.
TRIVIAL_MAX_WORDS = 12

_COSMETIC = re.compile(
    r"\b(typos?|misspell\w*|spelling|whitespace|indentation|indent(ed|ing)?|formatting|"
    r"re-?format(ted|s)?|format(ted)?|punctuation|capitali[sz]ation|wording|trailing|"
    r"newlines?|lint(ing)? (nits?|warnings?))\b", re.IGNORECASE)
_ACK_PHRASE = (r"done|ok(?:ay)?|all set|finished|complete[d]?|sure(?: thing)?|got it"
               r"|understood|noted|will do|no changes?(?: needed)?|nothing to do"
               r"|thanks?(?: you)?(?: so much)?|you'?re (?:very )?welcome|(?:i'?m )?glad"
               r" (?:to|i could|that) help(?:ed)?|happy to help|no problem|no worries"
               r"|any ?time|my pleasure|cheers|great|perfect|sounds good|of course"
               r"|let me know if you need anything else")
_ACK = re.compile(rf"^(?:\W*(?:{_ACK_PHRASE})\b)+\W*$", re.IGNORECASE)
_PARTS = re.compile(r"\s(?:Changed|Head|Verification): ")
_OUTCOME_HEAD = re.compile(r"^Task outcome(?: \([^)]*\))?: ")


def trivial_outcome(answer: str, metadata: Any = None) -> str | None:
    """Why the outcome ``answer`` is not worth a working_note, or None when it is.
    Trivial means: no ``verification`` in ``metadata``, at most
    :data:`TRIVIAL_MAX_WORDS` words, and either only acknowledgements and pleasantries
    ("Done.", "All set!", "You're welcome!", "Glad to help!", "No problem.", "Sure!") or
    a cosmetic change (a typo, spelling, whitespace, indentation, formatting, wording)."""
    if metadata and dict(metadata).get("verification"):
        return None
    text = " ".join(answer.split())
    if not text or len(text.split()) > TRIVIAL_MAX_WORDS:
        return None
    if _ACK.match(text):
        return "an acknowledgement only"
    if _COSMETIC.search(text):
        return "a cosmetic change only"
    return None


def session_of(source: Source) -> tuple[str, str, str] | None:
    """``(agent, session, repo)`` of a ``task_outcome`` Source (metadata ``agent``,
    ``session_id`` or ``thread_id``, ``repo``), or None when it names no session."""
    if source.kind != "task_outcome":
        return None
    meta = dict(source.metadata)
    session = meta.get("session_id") or meta.get("thread_id") or ""
    if not session.strip():
        return None
    return meta.get("agent", ""), session, meta.get("repo", "")


def _summary(report: str) -> str:
    kept: list[str] = []
    fence = False
    for line in report.splitlines():
        if line.strip().startswith(("```", "~~~")):
            fence = not fence
            continue
        if fence:
            continue
        if not line.strip():
            if kept:
                break
            continue
        kept.append(line.strip().lstrip("#").strip())
    return "\n".join(kept)


def _outcome_text(s: Source, refused: list[Refusal]) -> str | None:
    """The note text of one outcome (the report's first paragraph, paths, head,
    verification), or None (refusals appended)."""
    meta = dict(s.metadata)
    summary = _summary(s.content)
    if summary:
        why = check_memory_admission("working_note", summary)
        if why is not None:
            refused.append(Refusal("working_note", cut_text(summary, 200), why, "task_outcome"))
            summary = ""
        summary = cut_text(summary, MAX_NOTE_SUMMARY)
    verification = cut_text(meta.get("verification", ""), 300)
    if verification and check_memory_admission("working_note", verification):
        verification = ""
    if not summary and not verification:
        return None
    why = trivial_outcome(summary, s.metadata) if summary else None
    if why is not None:
        refused.append(Refusal("working_note", cut_text(summary, 200), f"the outcome is {why}",
                               "task_outcome"))
        return None
    status = meta.get("status", "").strip()
    parts = [f"Task outcome{f' ({status})' if status else ''}: "
             + (summary if summary else "no report")]
    paths = [p for p in meta.get("paths", "").splitlines() if p.strip()]
    if paths:
        more = f" (+{len(paths) - 8} more)" if len(paths) > 8 else ""
        parts.append("Changed: " + ", ".join(paths[:8]) + more)
    if meta.get("head"):
        parts.append(f"Head: {meta['head'][:12]}")
    if verification:
        parts.append(f"Verification: {verification}")
    text = " ".join(p if p.endswith((".", "…")) else p + "." for p in parts)
    secret = find_secret(text)
    if secret:
        refused.append(Refusal("working_note", cut_text(text, 200),
                               f"contains a secret ({secret})", "task_outcome"))
        return None
    return text


def _split(note: str) -> tuple[str, list[str]]:
    """(latest outcome, earlier outcomes) of a session note's text."""
    latest, sep, rest = note.partition("\n" + EARLIER_HEAD)
    earlier = [ln[2:].strip() for ln in rest.splitlines() if ln.startswith("- ")] if sep else []
    return latest.strip(), earlier


def _short(latest: str) -> str:
    """An earlier outcome as the note keeps it: the summary without its head, paths and
    the like, cut to :data:`MAX_EARLIER_CHARS`."""
    summary = _PARTS.split(_OUTCOME_HEAD.sub("", latest), maxsplit=1)[0]
    return cut_text(summary, MAX_EARLIER_CHARS)


def _compose(latest: str, earlier: list[str]) -> str:
    if not earlier:
        return latest
    return "\n".join([latest, EARLIER_HEAD, *(f"- {e}" for e in earlier)])


def _session_notes(key: tuple[str, str, str], notes: Sequence[MemoryEntryVersion],
                   evidence: Mapping[str, Source]) -> list[MemoryEntryVersion]:
    out = []
    for n in notes:
        cited = (evidence.get(r.source_id) for r in n.sources)
        if any(c is not None and session_of(c) == key for c in cited):
            out.append(n)
    return out


def _repeats(s: Source, note: MemoryEntryVersion, evidence: Mapping[str, Source]) -> bool:
    """Whether ``s`` is already ``note``'s evidence, or of a turn that note holds."""
    turn = dict(s.metadata).get("turn_id", "")
    for ref in note.sources:
        if ref.source_id == s.source_id:
            return True
        cited = evidence.get(ref.source_id)
        if turn and cited is not None and cited.kind == "task_outcome" \
                and dict(cited.metadata).get("turn_id") == turn:
            return True
    return False


def task_outcome_candidates(sources: Sequence[Source],
                            current: Sequence[MemoryEntryVersion] = (),
                            evidence: Mapping[str, Source] | None = None) -> ExtractionResult:
    """The session notes of the ``task_outcome`` Sources among ``sources`` (module
    docstring). ``current`` are the active entries, ``evidence`` the stored Sources they
    cite by id (without it no session link can be certain, and each outcome is a new
    note). The note of one outcome: the report's first paragraph (code blocks dropped,
    at most 600 characters), metadata ``status``, ``paths`` (newline-separated; at most
    8 named), ``head`` and ``verification``; no note when neither a summary nor a
    verification result remains; a summary refused by admission is dropped with a
    reason. One outcome per session per operation."""
    evidence = dict(evidence or {})
    evidence.update((s.source_id, s) for s in sources)
    notes = [e for e in current if e.kind == "working_note"]
    known = {normalized(e.text) for e in current}
    known.update(normalized(_split(n.text)[0]) for n in notes)
    out: list[MemoryEntryInput] = []
    refused: list[Refusal] = []
    done: set[tuple[str, str, str]] = set()
    for s in sources:
        if s.kind != "task_outcome":
            continue
        key = session_of(s)
        mine = _session_notes(key, notes, evidence) if key is not None else []
        if key is not None and (key in done or any(_repeats(s, n, evidence) for n in mine)):
            continue  # a repeated Stop of a turn the session's note already holds
        text = _outcome_text(s, refused)
        if text is None or normalized(text) in known:
            continue
        known.add(normalized(text))
        target = max(mine, key=lambda n: n.entry_version_id) if mine else None
        if target is not None and len(target.sources) >= MAX_SESSION_TURNS:
            target = None
        if key is not None:
            done.add(key)
        if target is None:
            out.append(MemoryEntryInput("working_note", text, sources=(s,)))
            continue
        latest, earlier = _split(target.text)
        earlier = [_short(latest), *earlier][:MAX_EARLIER]
        out.append(MemoryEntryInput("working_note", _compose(text, earlier), entry=target,
                                    sources=(s,)))
    return ExtractionResult(tuple(out), tuple(refused))
