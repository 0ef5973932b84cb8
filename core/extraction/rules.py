"""Rule memory candidates: explicit rules of ``AGENTS.md``, ``CLAUDE.md``,
``CONTRIBUTING.md`` (lines with must/never/always/do not/... -> constraint;
prefer/should/avoid/... -> preference), and durable statements in user notes (Memory
RFC, "Candidate generation and model-free fallback")."""

from __future__ import annotations

import re
from collections.abc import Sequence

from powercontext.core import repo_docs
from powercontext.core.extraction.results import ExtractionResult, Refusal
from powercontext.core.extraction.sources import RULE_FILES, root_files
from powercontext.core.extraction.user_notes import user_note_candidates
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source

__all__ = ["MAX_RULES_PER_SOURCE", "classify_rule", "clean_rule", "rule_candidates"]

MAX_RULES_PER_SOURCE = 24

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


def _rule_lines(content: str) -> list[str]:
    """Rule candidates of a Markdown document: hard-wrapped paragraphs and list items
    are joined first (:func:`~powercontext.core.repo_docs.markdown_blocks`); a list item
    up to 400 characters is one rule, a paragraph (or a longer item) gives its
    sentences; a sentence that depends on the one before ("... instead.", "This ...")
    stays with it; questions, lead-ins ending in ``:`` and cut code spans are dropped."""
    out: list[str] = []
    for block, is_item in repo_docs.markdown_blocks(content):
        text = " ".join(_BOLD.sub(lambda m: m.group(1) or m.group(2), block).split())
        pieces = [text] if is_item and len(text) <= 400 else repo_docs.sentences(text)
        kept: list[str] = []
        for piece in pieces:
            if not 12 <= len(piece) <= 400 or piece.endswith((":", "?")) \
                    or piece.count("`") % 2:
                kept.append("")  # a lead-in, a question or a cut code span: not a rule
            elif kept and kept[-1] and repo_docs.is_dependent_sentence(piece) \
                    and len(kept[-1]) + len(piece) < 400:
                kept[-1] = f"{kept[-1]} {piece}"  # "... Use an explicit block instead."
            else:
                kept.append(piece)
        out.extend(k for k in kept if k)
    return out


def rule_candidates(sources: Sequence[Source],
                    current: Sequence[MemoryEntryVersion] = ()) -> ExtractionResult:
    """Explicit rules: each qualifying line of a root-level AGENTS.md, CLAUDE.md or
    CONTRIBUTING.md file Source becomes a constraint or preference citing that Source
    (at most :data:`MAX_RULES_PER_SOURCE` per file); rules equal to an active entry's text
    are skipped. ``user_note`` Sources give rules in the user's words, a correction
    revising the rule it certainly replaces
    (:func:`~powercontext.core.extraction.user_notes.user_note_candidates`)."""
    texts = {e.text for e in current}
    out: list[MemoryEntryInput] = []
    refused: list[Refusal] = []
    notes: list[str] = []
    for name, s in root_files(sources).items():
        if name not in RULE_FILES:
            continue
        count = 0
        for line in _rule_lines(s.content):
            kind = classify_rule(line)
            if kind is None or line in texts:
                continue
            if count == MAX_RULES_PER_SOURCE:
                notes.append(f"{name}: more than {MAX_RULES_PER_SOURCE} rules, the rest skipped")
                break
            count += 1
            out.append(MemoryEntryInput(kind, line, sources=(s,)))
    notes_of_user = user_note_candidates(sources, current, classify_rule)
    out.extend(notes_of_user.candidates)
    refused.extend(notes_of_user.refused)
    return ExtractionResult(tuple(out), tuple(refused), tuple(notes))

