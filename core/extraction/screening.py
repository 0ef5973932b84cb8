"""Screening of memory candidates: the mechanical checks every memory candidate passes
before the planner sees it (Memory RFC, "Memory admission rules", "remember()")."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import attrs

from powercontext.core import canonical
from powercontext.core.corrections import normalized
from powercontext.core.errors import InvalidInputError
from powercontext.core.extraction.admission import check_memory_admission
from powercontext.core.extraction.results import ExtractionResult, Refusal, cut_text
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source

__all__ = ["screen_memory_candidates"]


def screen_memory_candidates(
    candidates: Sequence[tuple[str, MemoryEntryInput]],
    sources: Sequence[Source],
    current: Sequence[MemoryEntryVersion],
) -> ExtractionResult:
    """The mechanical checks every memory candidate passes before the planner sees it:
    ``candidates`` are (provider name, candidate) pairs. Refused with a reason: a kind
    or text the planner would reject (blank, over 8192 UTF-8 bytes), memory admission
    (:func:`~powercontext.core.extraction.admission.check_memory_admission`), evidence
    outside the operation Sources (or, for a revision, its predecessor's), no evidence
    at all, a revision of an entry that is
    not a current active version, a second revision of one entry. Dropped silently:
    a revision identical to its entry, a candidate whose text, normalised (case, and
    punctuation and spaces as one space:
    :func:`~powercontext.core.corrections.normalized`), equals another
    active entry's or an earlier candidate's, whatever its kind (so no two active
    entries say the same thing). Revisions are ordered before new entries."""
    op = {s.ref for s in sources}
    active = {e.entry_version_id: e for e in current}
    said = {normalized(e.text): e.entry_id for e in current}
    revisions: list[MemoryEntryInput] = []
    new: list[MemoryEntryInput] = []
    refused: list[Refusal] = []
    revised: set[str] = set()
    seen: set[str] = set()
    ordered = sorted(candidates, key=lambda pc: pc[1].entry is None)
    for provider, c in ordered:
        try:
            kind = canonical.normalize_kind(c.kind)
            text = canonical.normalize_text(c.text)
            # a model's reason is one line: its line breaks and tabs become spaces
            reason = canonical.normalize_reason(
                " ".join(c.reason.split()) if isinstance(c.reason, str) else c.reason)
        except (InvalidInputError, TypeError) as exc:
            refused.append(Refusal(str(c.kind), cut_text(str(c.text), 200), str(exc), provider))
            continue
        why = check_memory_admission(kind, text)
        if why is None and not c.sources and not c.artifacts and c.entry is None:
            why = "cites no evidence"
        allowed = op | (set(c.entry.sources) if c.entry is not None else set())
        if why is None and not {s.ref for s in c.sources} <= allowed:
            why = "cites a Source outside this operation"
        if why is None and c.artifacts:
            why = "cites an Artifact: candidates from Sources may cite only Sources"
        if why is None and c.entry is not None:
            if active.get(c.entry.entry_version_id) != c.entry:
                why = f"revises {c.entry.entry_id!r}, which is not a current active version"
            elif c.entry.entry_id in revised:
                why = f"a second revision of {c.entry.entry_id!r} in one operation"
        if why is not None:
            refused.append(Refusal(kind, cut_text(text, 200), why, provider))
            continue
        c = attrs.evolve(c, kind=kind, text=unicodedata.normalize("NFC", text), reason=reason)
        key = normalized(c.text)
        if c.entry is not None:
            revised.add(c.entry.entry_id)
            if (kind, text) == (c.entry.kind, c.entry.text) and {s.ref for s in c.sources} <= set(
                    c.entry.sources):
                continue
            if key in seen or said.get(key, c.entry.entry_id) != c.entry.entry_id:
                continue  # another active entry (or candidate) already says it
            revisions.append(c)
            seen.add(key)
            continue
        if key in said or key in seen:
            continue
        seen.add(key)
        new.append(c)
    return ExtractionResult(tuple(revisions + new), tuple(refused))
