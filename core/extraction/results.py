"""What memory-candidate generation produces: candidates, refusals with reasons, and
notes (Memory RFC, "Candidate generation and model-free fallback")."""

from __future__ import annotations

import attrs

from powercontext.core.models import MemoryEntryInput

__all__ = ["ExtractionResult", "Refusal", "cut_text"]


@attrs.frozen
class Refusal:
    """A memory candidate that was not proposed: its kind, text (possibly cut), why, and
    which provider made it."""

    kind: str
    text: str
    reason: str
    provider: str = ""


@attrs.frozen
class ExtractionResult:
    """What candidate generation produced: the memory candidates (untrusted, still
    validated by the planner), the refused ones with reasons, and notes (e.g. a
    malformed model answer, a skipped file)."""

    candidates: tuple[MemoryEntryInput, ...] = ()
    refused: tuple[Refusal, ...] = ()
    notes: tuple[str, ...] = ()

    def __add__(self, other: ExtractionResult) -> ExtractionResult:
        return ExtractionResult(self.candidates + other.candidates,
                                self.refused + other.refused, self.notes + other.notes)


def cut_text(text: str, limit: int) -> str:
    """``text`` with its whitespace collapsed, cut at a word to at most ``limit``
    characters (an ellipsis marks the cut)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0] + "…"
