"""Structured memory candidates: decisions, constraints and other entries the caller
gives as Sources with ``memory.*`` metadata (Memory RFC, "Candidate generation and
model-free fallback")."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.core.extraction.results import ExtractionResult
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source

__all__ = ["structured_candidates"]


def structured_candidates(sources: Sequence[Source],
                          current: Sequence[MemoryEntryVersion] = ()) -> ExtractionResult:
    """Entries the caller gives as Sources: a Source with metadata ``memory.kind``
    (or of kind ``decision``, ``constraint``, ``preference`` or ``fact``) proposes one
    entry of that kind; its text is ``memory.text`` or the content; ``memory.reason``
    is the change reason; ``memory.revises`` names an active entry_id to revise (an
    unknown id makes a new entry and a note). The Source is the evidence."""
    by_id = {e.entry_id: e for e in current}
    out: list[MemoryEntryInput] = []
    notes: list[str] = []
    for s in sources:
        meta = dict(s.metadata)
        kind = meta.get("memory.kind") or (s.kind if s.kind in (
            "decision", "constraint", "preference", "fact") else None)
        if kind is None:
            continue
        text = meta.get("memory.text") or s.content
        entry = None
        revises = meta.get("memory.revises")
        if revises:
            entry = by_id.get(revises)
            if entry is None:
                notes.append(f"{s.source_id}: entry {revises!r} is not an active entry; "
                             "proposed as a new entry")
        out.append(MemoryEntryInput(kind, text, entry=entry, sources=(s,),
                                    reason=meta.get("memory.reason") or None))
    return ExtractionResult(tuple(out), (), tuple(notes))

