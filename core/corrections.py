"""User corrections: a user's own words asking for a durable change ("From now on run
the tests with `pytest -n 4 -x tests/` instead of `make test`"), the rule they state and
the rule they replace (Memory RFC, "Task events and extraction boundaries": "a user
explicitly corrects the agent, expresses a durable preference"; "remember()": a revision
only when the link is certain).

- :func:`user_rules`: the durable statements of a user's prompt, each one sentence in
  the user's words, with the commands, files or identifiers it says it replaces;
- :func:`replaced`: what a text says it replaces ("instead of X", "rather than X", "in
  place of X", "replace X with", "no longer use X", "stop using X", "switch from X to",
  "use A, not X", "don't run X anymore");
- :func:`states`: whether a text states a command or name (not merely as the thing it
  replaces);
- :func:`corrected_entry`: the one active rule a correction certainly revises, or None;
- :func:`corrects`: whether one text corrects another (the prompt hook puts a correction
  above what it corrects).

The rules provider turns them into candidates
(:func:`powercontext.core.extraction.user_notes.user_note_candidates`).

A replaced thing is certain only when it is a code span (`` `make test` ``) or at most
three plain words ("instead of tox"); a longer phrase names nothing certain. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from powercontext.core.models import MemoryEntryVersion

__all__ = [
    "UserRule",
    "corrected_entry",
    "corrects",
    "durable",
    "normalized",
    "replaced",
    "states",
    "user_rules",
]

_I = re.IGNORECASE
_DURABLE = re.compile(
    r"\b(?:from now on|going forward|from here on(?: out)?|in (?:the )?future|henceforth"
    r"|always|never(?! mind)|every time|whenever|no longer|by default|as a rule|prefer"
    r"|remember (?:that|to)|keep in mind|stop (?:using|running|calling|doing|adding)"
    r"|(?:do not|don't) \w+(?: \w+){0,6} any ?more)\b", _I)
_ACTION = re.compile(
    r"\b(?:use|run|call|prefer|avoid|put|keep|write|add|commit|push|test|format|lint|name"
    r"|place|store|import|install|build|create|delete|remove|edit|modify|touch|change|ask"
    r"|check|document|pin|update|open|merge|rebase|squash|mark|tag|release|bump|sign)\b", _I)
_MARKER = re.compile(
    r"\b(?:instead of|rather than|in place of|no longer (?:use|run|call)|stop (?:using"
    r"|running|calling)|switch(?:ed|ing)? (?:away )?from|replac(?:e|es|ed|ing))\s+"
    r"|,\s*not\s+", _I)
_ANYMORE = re.compile(r"\b(?:do not|don't|stop) (?:use|run|call)(?:ing)?\s+((?:the\s+)?`[^`\n]+`"
                      r"|\w[\w.-]*(?: \w[\w.-]*){0,2}) any ?more\b", _I)
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_PHRASE_END = re.compile(r"[.,;:!?()\[\]]|\s(?:and|but|so|because|when|with|for|on|in|to"
                         r"|from now on|going forward|which|that|since)\s", _I)
_LEADING = re.compile(r"^(?:(?:the|a|an|our|my|your|using|running|calling|plain)\s+)+", _I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CONSTRAINT = re.compile(r"\b(?:never|always|must|do not|don't|shall|forbidden"
                         r"|not allowed|mandatory)\b", _I)
_NOT_NEEDED = re.compile(r"\b(?:do not|don't|does not|doesn't|need not) (?:need|have) to\b", _I)
_NON_ALNUM = re.compile(r"[\W_]+")


def normalized(text: str) -> str:
    """``text`` case-folded, every run of characters other than letters and digits one
    space, the ends stripped: two texts equal under it say the same thing."""
    return " ".join(_NON_ALNUM.sub(" ", text.casefold()).split())


def _sentences(text: str) -> list[str]:
    """The sentences of ``text`` (a code span is never cut), whitespace collapsed."""
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        flat = " ".join(paragraph.split())
        start = 0
        for m in _SENTENCE_END.finditer(flat):
            if flat[:m.start()].count("`") % 2:
                continue  # inside a code span
            out.append(flat[start:m.start()])
            start = m.end()
        out.append(flat[start:])
    return [s.strip() for s in out if s.strip()]


def _target(after: str) -> tuple[str | None, int]:
    """What follows a replacement marker: (a code span or at most three plain words,
    or None; the length consumed)."""
    stripped = after.lstrip()
    lead = len(after) - len(stripped)
    span = re.match(r"(?:the\s+|a\s+|an\s+)?`([^`\n]+)`", stripped, _I)
    if span:
        return span.group(1).strip(), lead + span.end()
    end = _PHRASE_END.search(stripped)
    phrase = stripped[:end.start()] if end else stripped
    words = _LEADING.sub("", phrase.strip()).split()
    if not words or len(words) > 3:
        return None, lead + len(phrase)
    return " ".join(words), lead + len(phrase)


def _replacements(text: str) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    for m in _MARKER.finditer(text):
        target, used = _target(text[m.end():])
        if target:
            out.append((m.start(), m.end() + used, target))
    for m in _ANYMORE.finditer(text):
        target = re.sub(r"^(?:the\s+)?`|`$", "", m.group(1)).strip()
        out.append((m.start(), m.end(), target))
    return sorted(out)


def replaced(text: str) -> tuple[str, ...]:
    """The commands, files or names ``text`` says it replaces, in text order, without
    repeats (module docstring)."""
    return tuple(dict.fromkeys(t for _, _, t in _replacements(text)))


def _without_replacements(text: str) -> str:
    parts: list[str] = []
    at = 0
    for start, end, _ in _replacements(text):
        parts.append(text[at:start])
        at = end
    parts.append(text[at:])
    return " ".join(parts)


def states(text: str, target: str) -> bool:
    """Whether ``text`` names ``target`` (case-insensitive, as a whole command: not
    followed or preceded by more of a word or a ``-``) other than as something it says it
    replaces: ``make test`` is stated by "run `make test`" but not by "`make
    test-snapshot-update`" nor by "... instead of `make test`"."""
    pattern = re.compile(r"(?<![\w-])" + re.escape(target.strip()) + r"(?![\w-])", _I)
    return bool(target.strip()) and bool(pattern.search(_without_replacements(text)))


def durable(sentence: str) -> bool:
    """Whether ``sentence`` asks for a durable change: a marker of time or habit ("from
    now on", "always", "never", "no longer", "by default", "prefer", "stop using",
    "don't ... anymore", ...) and something to do (a verb of the trade or a code
    span)."""
    return bool(_DURABLE.search(sentence)) and bool(
        _ACTION.search(sentence) or _CODE_SPAN.search(sentence))


@attrs.frozen
class UserRule:
    """One durable statement of a user: its ``text`` (one sentence, the user's words),
    its ``kind`` (``constraint`` for always/never/must/do not, else ``preference``) and
    what it says it ``replaces``."""

    text: str
    kind: str
    replaces: tuple[str, ...] = ()


def user_rules(text: str) -> tuple[UserRule, ...]:
    """The durable statements of a user's prompt ``text`` (:func:`durable`), one
    sentence each, at most 400 characters, in text order without repeats. A prompt with
    no such sentence (a task: "Add a snapshot test for it.") has none."""
    out: dict[str, UserRule] = {}
    for sentence in _sentences(text):
        if len(sentence) > 400 or len(sentence.split()) < 4 or sentence.endswith("?"):
            continue
        if not durable(sentence):
            continue
        kind = "constraint" if _CONSTRAINT.search(_NOT_NEEDED.sub(" ", sentence)) \
            else "preference"
        out.setdefault(normalized(sentence), UserRule(sentence, kind, replaced(sentence)))
    return tuple(out.values())


def corrected_entry(targets: Sequence[str], current: Sequence[MemoryEntryVersion]
                    ) -> MemoryEntryVersion | None:
    """The one active rule a correction that replaces ``targets`` certainly revises: the
    only entry of ``current`` other than a ``working_note`` that :func:`states` every
    target; None when there is no target, no such entry or more than one."""
    if not targets:
        return None
    found = [e for e in current if e.kind != "working_note"
             and all(states(e.text, t) for t in targets)]
    return found[0] if len(found) == 1 else None


def corrects(new: str, old: str) -> bool:
    """Whether ``new`` corrects ``old``: ``new`` replaces something ``old`` states, and
    ``old`` does not state what ``new`` puts in its place (two texts that both mention
    both are not ordered)."""
    targets = replaced(new)
    if not targets or not any(states(old, t) for t in targets):
        return False
    return not states(old, _without_replacements(new)) and normalized(new) != normalized(old)

