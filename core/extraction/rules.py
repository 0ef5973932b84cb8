"""Rule memory candidates: the rules of a repository's prose contract documents
(``AGENTS.md``, ``CLAUDE.md``, the contributing guides in Markdown or reStructuredText,
the development sections of a README; read by
:func:`powercontext.core.extraction.file_rules.document_rules`), and durable
statements in user notes (Memory RFC, "Candidate generation and model-free
fallback")."""

from __future__ import annotations

import re
from collections.abc import Sequence

from powercontext.core import repo_docs
from powercontext.core.extraction.results import Dropped, ExtractionResult, Refusal
from powercontext.core.extraction.sources import (
    MAX_RULES_PER_FILE,
    README_FILES,
    RULE_FILES,
    root_files,
)
from powercontext.core.extraction.user_notes import user_note_candidates
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source

__all__ = ["MAX_RULES_PER_FILE", "classify_rule", "clean_rule", "file_rule_candidates",
           "rule_candidates"]

_NOT_NEEDED = re.compile(
    r"\b(?:do not|don't|does not|doesn't|need not|needn't|not) (?:need|required|necessary)\b"
    r"|\bno need\b|\bunnecessary\b|\boptional\b"
)
_CONSTRAINT = re.compile(
    r"\b(?:must|never|always|do not|don't|does not|doesn't|shall|required|forbidden"
    r"|not allowed|mandatory|only use|is prohibited|under no circumstances)\b"
)
_PREFERENCE = re.compile(
    r"\b(?:prefer|prefers|preferred|should|shouldn't|avoid|recommended|try to|ideally"
    r"|favou?r)\b"
)
_BULLET = re.compile(r"^\s*(?:>\s*)*(?:[-*+]|\d+[.)])?\s*(?:\[[ xX]\]\s*)?")


def classify_rule(text: str) -> str | None:
    """``constraint`` (must, never, always, do not, ...), ``preference`` (prefer,
    should, avoid, ..., or a plain imperative instruction such as "Run `pnpm test`
    before every commit.", see :func:`~powercontext.core.repo_docs.is_imperative_rule`)
    or None for a sentence; "do not need to" is not a prohibition."""
    low = text.lower().replace("’", "'")
    neutral = _NOT_NEEDED.sub(" ", low)
    if _CONSTRAINT.search(neutral):
        return "constraint"
    if _PREFERENCE.search(neutral) or repo_docs.is_imperative_rule(text):
        return "preference"
    return None


_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")


def clean_rule(line: str) -> str:
    """A Markdown rule line without its bullet, checkbox and bold markers, whitespace
    collapsed."""
    text = _BULLET.sub("", line, count=1).strip()
    text = _BOLD.sub(lambda m: m.group(1) or m.group(2), text)
    return " ".join(text.split())


def file_rule_candidates(sources: Sequence[Source],
                         current: Sequence[MemoryEntryVersion] = ()) -> ExtractionResult:
    """The rules of the contract documents among ``sources`` (root-level file Sources
    named in :data:`RULE_FILES`, and the development sections of
    :data:`README_FILES`), each a constraint, preference or fact citing its file, in
    rank order per file; the sentences left out are in ``dropped`` with their reasons.
    Rules equal to an active entry's text are skipped."""
    files = root_files(sources)
    if not any(n in RULE_FILES or n in README_FILES for n in files):
        return ExtractionResult()
    # imported here: the sentence classifier compiles its patterns once, when a contract
    # document is read (a Stop hook's outcome never needs them)
    from powercontext.core.extraction.file_rules import document_rules
    from powercontext.core.extraction.parsers import project_names

    texts = {e.text for e in current}
    out: list[MemoryEntryInput] = []
    dropped: list[Dropped] = []
    project = project_names({n: s.content for n, s in files.items()})
    for name, s in files.items():
        if name not in RULE_FILES and name not in README_FILES:
            continue
        rules, left = document_rules(name, s.content, project=project,
                                     contract_sections_only=name in README_FILES)
        dropped.extend(left)
        out.extend(MemoryEntryInput(r.kind, r.text, sources=(s,)) for r in rules
                   if r.text not in texts)
    return ExtractionResult(tuple(out), dropped=tuple(dropped))


def rule_candidates(sources: Sequence[Source],
                    current: Sequence[MemoryEntryVersion] = ()) -> ExtractionResult:
    """Explicit rules: the rules of the contract documents
    (:func:`file_rule_candidates`); rules equal to an active entry's text are skipped.
    ``user_note`` Sources give rules in the user's words, a correction revising the rule
    it certainly replaces
    (:func:`~powercontext.core.extraction.user_notes.user_note_candidates`)."""
    result = file_rule_candidates(sources, current)
    out: list[MemoryEntryInput] = list(result.candidates)
    refused: list[Refusal] = []
    notes_of_user = user_note_candidates(sources, current, classify_rule)
    out.extend(notes_of_user.candidates)
    refused.extend(notes_of_user.refused)
    return ExtractionResult(tuple(out), tuple(refused), (), result.dropped)

