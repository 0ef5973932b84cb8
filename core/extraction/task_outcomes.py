"""Task-outcome memory candidates: one mechanical ``working_note`` per task outcome,
never a fact, decision or constraint (Memory RFC, "Candidate generation and model-free
fallback")."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.core.extraction.admission import check_memory_admission
from powercontext.core.extraction.results import ExtractionResult, Refusal, cut_text
from powercontext.core.models import MemoryEntryInput, Source
from powercontext.core.secrets import find_secret

__all__ = ["MAX_NOTE_SUMMARY", "task_outcome_candidates"]

MAX_NOTE_SUMMARY = 600


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


def task_outcome_candidates(sources: Sequence[Source]) -> ExtractionResult:
    """One ``working_note`` per ``task_outcome`` Source, assembled mechanically from
    what the provider supplied: the report's first paragraph (code blocks dropped, at
    most 600 characters), metadata ``status``, ``paths`` (newline-separated; at most 8
    named), ``head`` and ``verification``. Never a fact, decision or constraint. No
    note when neither a summary nor a verification result remains; a summary refused
    by admission is dropped with a reason."""
    out: list[MemoryEntryInput] = []
    refused: list[Refusal] = []
    for s in sources:
        if s.kind != "task_outcome":
            continue
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
            continue
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
            continue
        out.append(MemoryEntryInput("working_note", text, sources=(s,)))
    return ExtractionResult(tuple(out), tuple(refused))

