"""What memory-candidate generation sees and produces: the request a provider answers,
and candidates, refusals with reasons, and notes (Memory RFC, "Candidate generation and
model-free fallback")."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source

__all__ = ["Dropped", "ExtractionRequest", "ExtractionResult", "Refusal", "cut_text"]


@attrs.frozen
class ExtractionRequest:
    """What a provider sees: the operation Sources, the current active entries (a
    bounded window), and ``evidence``: the stored Sources those entries cite, by id
    (empty when no SourceStore is configured)."""

    sources: tuple[Source, ...]
    current: tuple[MemoryEntryVersion, ...]
    evidence: Mapping[str, Source] = attrs.field(factory=dict)


@attrs.frozen
class Refusal:
    """A memory candidate that was not proposed: its kind, text (possibly cut), why, and
    which provider made it."""

    kind: str
    text: str
    reason: str
    provider: str = ""


@attrs.frozen
class Dropped:
    """A sentence of a contract document that did not become a candidate: its file
    path, 1-based line, text, and the reason key
    (:data:`powercontext.core.extraction.rule_kinds.DROP_REASONS`)."""

    path: str
    line: int
    text: str
    reason: str


@attrs.frozen
class ExtractionResult:
    """What candidate generation produced: the memory candidates (untrusted, still
    validated by the planner), the refused ones with reasons, and notes (e.g. a
    malformed model answer, a skipped file), and the sentences of contract documents
    that were ``dropped`` as not worth an entry (with their reasons)."""

    candidates: tuple[MemoryEntryInput, ...] = ()
    refused: tuple[Refusal, ...] = ()
    notes: tuple[str, ...] = ()
    dropped: tuple[Dropped, ...] = ()

    def __add__(self, other: ExtractionResult) -> ExtractionResult:
        return ExtractionResult(self.candidates + other.candidates,
                                self.refused + other.refused, self.notes + other.notes,
                                self.dropped + other.dropped)


def cut_text(text: str, limit: int) -> str:
    """``text`` with its whitespace collapsed, cut at a word to at most ``limit``
    characters (an ellipsis marks the cut)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0] + "…"
