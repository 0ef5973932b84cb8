"""Rules from a user's notes and prompts: the ``user_note`` part of the rules provider
(Memory RFC, "Task events and extraction boundaries": a user correction is persisted as
the user's original statement, ``src_user_note``, and a revision candidate is generated
against the current Memory; "remember()": a revision only when the link is certain)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from powercontext.core.corrections import (
    UserRule,
    corrected_entry,
    normalized,
    replaced,
    user_rules,
)
from powercontext.core.extraction.results import ExtractionResult, Refusal, cut_text
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source

__all__ = ["MAX_NOTE_RULE_CHARS", "user_note_candidates"]

#: A user note without a durable statement is one rule only up to this many characters.
MAX_NOTE_RULE_CHARS = 1000


def user_note_candidates(sources: Sequence[Source], current: Sequence[MemoryEntryVersion],
                         classify: Callable[[str], str | None]) -> ExtractionResult:
    """Rules from ``user_note`` Sources (those without ``memory.*`` metadata, which the
    structured provider reads): each durable statement of the note
    (:func:`~powercontext.core.corrections.user_rules`) is one rule in the user's words;
    a note without one is one rule when ``classify`` (the rule provider's classifier)
    calls its whole text (at most :data:`MAX_NOTE_RULE_CHARS` characters, whitespace
    collapsed) a rule. A rule whose normalised text
    (:func:`~powercontext.core.corrections.normalized`) equals an active entry's is not
    proposed (a repeated note changes nothing). A rule that replaces something
    (:func:`~powercontext.core.corrections.replaced`) revises the one active rule that
    states it when the link is certain
    (:func:`~powercontext.core.corrections.corrected_entry`; the reason names what it
    replaces); otherwise it is a new entry, which the prompt hook ranks above the rule it
    names. Every candidate cites its note."""
    seen = {normalized(e.text) for e in current}
    out: list[MemoryEntryInput] = []
    refused: list[Refusal] = []
    revised: set[str] = set()
    for s in sources:
        if s.kind != "user_note" or any(k.startswith("memory.") for k, _ in s.metadata):
            continue
        rules = list(user_rules(s.content))
        if not rules:
            text = " ".join(s.content.split())
            kind = classify(text) if text else None
            if kind is None:
                continue
            if len(text) > MAX_NOTE_RULE_CHARS:
                refused.append(Refusal(kind, cut_text(text, 200), "user note longer than "
                                       f"{MAX_NOTE_RULE_CHARS} characters: not one rule; "
                                       "give a structured entry"))
                continue
            rules = [UserRule(text, kind, replaced(text))]
        for rule in rules:
            key = normalized(rule.text)
            if key in seen:
                continue
            seen.add(key)
            entry = corrected_entry(rule.replaces, current)
            if entry is not None and entry.entry_id not in revised:
                revised.add(entry.entry_id)
                what = ", ".join(f"`{t}`" for t in rule.replaces)
                out.append(MemoryEntryInput(rule.kind, rule.text, entry=entry, sources=(s,),
                                            reason=f"the user's correction replaces {what}"))
            else:
                out.append(MemoryEntryInput(rule.kind, rule.text, sources=(s,)))
    return ExtractionResult(tuple(out), tuple(refused))
