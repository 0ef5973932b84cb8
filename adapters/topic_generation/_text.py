"""How the ``deterministic`` Topic provider reads one Source (:mod:`.deterministic`):
what kind of text it is, its title, its lead sentences and its subject terms. Pure: no
I/O, no clock, no randomness; the same text always gives the same answers.

Kinds (:func:`read_source`):

- ``conversation``: what the hooks write, ``User:\\n<prompt>\\n\\nAssistant:\\n<reply>``
  (a role label alone on its line starts each message);
- ``chat``: speaker turns ``"[when] Name: text"`` (the ``[when]`` optional), every
  non-empty line a turn but a first header line (LoCoMo sessions and turns);
- ``code``: a file whose name says code or configuration (``Makefile``, ``tox.ini``,
  ``*.py``, ...), or text that looks like it (a ``#!`` line, a run of ``#`` comment
  lines, ``[section]`` with ``key = value`` lines): it is shown in a fence, and its
  ``#`` comments never become headings;
- ``markdown``: everything else (notes, READMEs, plain prose).

A title is the Source's heading, else the first sentence that names the subject (two or
more content words, at most :data:`TITLE_CHARS` characters; a speaker or role label is
never one), else for code the file name and its first comment sentence; a sentence is
cut only when no sentence fits, at a word, and then it ends with ``…``. Lead sentences
are what a summary is made of: the first prose sentences (a conversation: the question
and the answer's first sentence; a chat: its most central sentences with their
speakers; code: its comment sentences, else its sections or targets).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from typing import Any, Final

import attrs

from powercontext.adapters.topic_generation._code import (
    comment_sentences,
    file_name,
    structure,
)
from powercontext.adapters.topic_generation._code import language as code_language
from powercontext.adapters.topic_generation._words import (
    content_terms,
    cut_words,
    sentences,
    subject_terms,
)

__all__ = [
    "TITLE_CHARS",
    "SourceText",
    "evidence_source",
    "markdown_heading",
    "prose_paragraphs",
    "read_source",
    "title_of",
]

#: A title is at most this many characters (the content limit is 256; a title longer
#: than a line is not one).
TITLE_CHARS: Final = 100
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_TURN = re.compile(r"^\s*(?:\[([^\]\n]{1,80})\]\s*)?([^\s:\[\].!?…][^:\n.!?…]{0,39}):\s+(\S.*)$")
_ROLE = re.compile(r"^(User|Assistant|Human|System)\s*:\s*$", re.IGNORECASE)
_ROLE_PREFIX = re.compile(r"^\s*(?:user|assistant|human|ai|system|bot|agent)\s*:\s+",
                          re.IGNORECASE)
_LABELLED = re.compile(r"^\s*([^\W\d_][\w'’&/+ .-]{0,38}?)\s*:\s+(\S.*)$")
_SPEECH = re.compile(r"^(?:i|i'm|i've|i'll|i'd|we|we're|you|you're|my|our|hey|hi|hello|"
                     r"yes|yeah|no|ok|okay|thanks|thank|sure|oh|wow|haha|lol|me)\b",
                     re.IGNORECASE)
_GENERIC_TEXT: Final = """
note notes nb ps todo fyi tip tips warning important info update updates edit summary
question answer fix bug done status result problem solution example context decision
reminder idea thought remember see also re subject title http https
"""
_GENERIC_LABELS: Final = frozenset(_GENERIC_TEXT.split())
_BARE_LABEL = re.compile(r"^[^\s:][^:]{0,39}:$")
_ANNOTATION = re.compile(r"\[[^\]\n]{1,300}\]")
_LIST = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_LINKS_ONLY = re.compile(r"^(?:\s*!?\[[^\]]*\](?:\([^)]*\)|\[[^\]]*\])\s*)+$")


@attrs.frozen
class SourceText:
    """One Source as the provider reads it: ``kind`` (``conversation``, ``chat``,
    ``code`` or ``markdown``), its NFC ``content`` (trimmed), the file ``name`` (from
    its uri, else empty), the fence ``language`` (code), ``title``, ``leads`` (lead
    sentences, each ending in ``.``, ``!``, ``?`` or ``…``), ``turns`` (speaker, text)
    of a conversation or chat, and a chat's ``header`` line."""

    kind: str
    content: str
    name: str = ""
    language: str = ""
    title: str = ""
    leads: tuple[str, ...] = ()
    turns: tuple[tuple[str, str], ...] = ()
    header: str = ""


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _ended(sentence: str) -> str:
    sentence = sentence.strip()
    return sentence if sentence[-1:] in ".!?…" else sentence + "."


def _fenced(lines: list[str]) -> Iterator[tuple[str, bool]]:
    """Each line with whether it is inside (or is) a fenced code block."""
    fence: str | None = None
    for line in lines:
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                yield line, True
                continue
            yield line, False
        else:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not m.group(2).strip():
                fence = None
            yield line, True


def markdown_heading(content: str) -> str:
    """The first heading of Markdown ``content`` (ATX, or setext: a line underlined
    with ``=`` or ``-``), outside fences; empty when it has none."""
    lines = content.splitlines()
    previous = ""
    for line, code in _fenced(lines):
        if code:
            previous = ""
            continue
        m = _HEADING.match(line)
        if m and (m.group(2) or "").strip():
            return m.group(2).strip()
        if _SETEXT.match(line) and previous.strip() and not _LIST.match(previous):
            return previous.strip()
        previous = line
    return ""


def prose_paragraphs(content: str) -> list[str]:
    """The prose of Markdown ``content``, one string per paragraph or list item: no
    headings, fences, tables, HTML, link-only lines (badges, tables of contents) or
    setext underlines."""
    out: list[str] = []
    current: list[str] = []

    def close() -> None:
        if current:
            out.append(" ".join(current))
            current.clear()

    lines = content.splitlines()
    for i, (line, code) in enumerate(_fenced(lines)):
        text = line.strip()
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if code or not text or _HEADING.match(line) or _SETEXT.match(line) \
                or text.startswith(("|", "<")) or _LINKS_ONLY.match(text) \
                or (_SETEXT.match(nxt) and nxt.strip()):
            close()
            continue
        if _LIST.match(line):
            close()
            text = _LIST.sub("", line).strip()
        current.append(text.lstrip("> ").strip())
    close()
    return [p for p in out if p]


def _names_subject(sentence: str, least: int) -> bool:
    return len(set(content_terms(sentence))) >= least


def _as_title(sentence: str) -> str:
    return sentence[:-1] if sentence.endswith(".") and not sentence.endswith("..") \
        else sentence


_CLAUSE = re.compile(r"[;:]\s|\s[—–-]\s")


def _pick(candidates: list[str], limit: int, least: int, questions: bool = False
          ) -> str | None:
    """The first candidate that names the subject with ``least`` content words and fits
    ``limit`` (else its first clause, up to ``;``, ``:`` or a dash, when that does)."""
    for s in candidates:
        if questions and not s.endswith("?"):
            continue
        if len(s) <= limit and _names_subject(s, least):
            return _as_title(s)
        clause = _CLAUSE.split(s, 1)[0].strip()
        if clause != s and len(clause) <= limit and _names_subject(clause, least):
            return clause
    return None


def _unlabelled(sentence: str, spoken: bool = False) -> str:
    """``sentence`` without a leading role label (``User: ...``) or a speaker's name
    before speech (``Caroline: I went ...``; any name when the Source is ``spoken``, a
    chat or a turn); empty for a bare label (``Alice:``)."""
    text = _ROLE_PREFIX.sub("", sentence).strip()
    if _BARE_LABEL.match(text):
        return ""
    m = _LABELLED.match(text)
    if m and (spoken or _SPEECH.match(m.group(2))):
        return m.group(2).strip()
    return text


def _first_six(candidates: list[str], spoken: bool = False) -> list[str]:
    return [t for s in candidates[:6] if (t := _unlabelled(s, spoken))]


def title_of(candidates: list[str], limit: int = TITLE_CHARS, spoken: bool = False) -> str:
    """The first sentence of the first six that names the subject (two or more content
    words, else one) and fits ``limit`` characters, without its closing full stop;
    when none fits, the first naming one cut at a word (ending in ``…``); empty when
    there is no sentence. Speaker labels are left out (:func:`_unlabelled`)."""
    first = _first_six(candidates, spoken)
    found = _pick(first, limit, 2) or _pick(first, limit, 1)
    if found:
        return found
    naming = next((s for s in first if _names_subject(s, 1)), first[0] if first else "")
    return cut_words(naming, limit) if naming else ""


def _lead_sentences(paragraphs: list[str], limit: int = 2) -> tuple[str, ...]:
    out: list[str] = []
    for p in paragraphs:
        for s in sentences(_ROLE_PREFIX.sub("", p)):
            if _names_subject(s, 1):
                out.append(_ended(s))
                if len(out) == limit:
                    return tuple(out)
    return tuple(out)


# ---------------------------------------------------------------------- kinds

def _label(content: str) -> str:
    """The subject label a note starts with (``Billing: invoices are ...`` ->
    ``Billing``): one to four words before ``": "`` on the first line, not a role, a
    generic word (``Note``, ``TODO``, ...) or a speaker (what follows is not speech:
    ``I``, ``we``, ``you``, a greeting)."""
    first = next((line for line in content.splitlines() if line.strip()), "")
    m = _LABELLED.match(first)
    if m is None:
        return ""
    label, said = m.group(1).strip(), m.group(2)
    words = label.split()
    if not 1 <= len(words) <= 4 or label.casefold() in _GENERIC_LABELS \
            or _ROLE_PREFIX.match(first) or _SPEECH.match(said):
        return ""
    return label


def _conversation(content: str) -> tuple[tuple[str, str], ...] | None:
    lines = content.splitlines()
    first = next((line for line in lines if line.strip()), "")
    if not _ROLE.match(first.strip()):
        return None
    turns: list[tuple[str, list[str]]] = []
    for line in lines:
        m = _ROLE.match(line.strip())
        if m:
            turns.append((m.group(1).capitalize(), []))
        elif turns:
            turns[-1][1].append(line)
    return tuple((who, "\n".join(body).strip()) for who, body in turns
                 if "\n".join(body).strip())


def _chat(content: str) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    lines = [line for line in content.splitlines() if line.strip()]
    if not lines or any(_HEADING.match(line) for line in lines):
        return None
    matches = [_TURN.match(line) for line in lines]
    if len(lines) == 1:
        m = matches[0]
        return ("", ((m.group(2).strip(), _turn_text(m)),)) if m and m.group(1) else None
    if sum(1 for m in matches if m) >= 2 and all(matches[1:]):
        header = "" if matches[0] else lines[0].strip()
        return header, tuple((m.group(2).strip(), _turn_text(m)) for m in matches if m)
    return None


def _turn_text(m: re.Match[str]) -> str:
    return f"[{m.group(1)}] {m.group(3).strip()}" if m.group(1) else m.group(3).strip()


def _central(turns: tuple[tuple[str, str], ...], limit: int) -> list[tuple[str, str]]:
    """The chat's most central sentences (speaker, sentence): those holding the most
    content words that recur in the chat, two or more each, at most ``limit``
    characters; ties by first appearance. An annotation in brackets (``[shared a
    photo ...]``) is not a sentence anyone said."""
    names = [w for who, _ in turns for w in who.split()]
    recurring = {t for t in subject_terms(" ".join(t for _, t in turns), 12, names)}
    scored: list[tuple[int, int, str, str]] = []
    for who, text in turns:
        said = _ANNOTATION.sub(" ", re.sub(r"^\[[^\]]*\]\s*", "", text))
        for s in sentences(said):
            terms = set(content_terms(s)) & recurring
            if len(terms) >= 2 and len(s) <= limit:
                scored.append((-len(terms), len(scored), who, s))
    return [(who, s) for _, _, who, s in sorted(scored)]


def read_source(content: str, kind: str = "", uri: object = None) -> SourceText:
    """The :class:`SourceText` of one Source's ``content`` (its ``kind`` and ``uri``
    help: the file name chooses code; a ``conversation`` is read as one). A title is
    never a bare label: one that would be (``User:``) is ``Untitled <kind>``."""
    src = _read_source(content, kind, uri)
    raw = src.title.strip()
    title = raw.rstrip(":").strip()
    if not title or _BARE_LABEL.match(raw) or _ROLE_PREFIX.match(f"{title}: x"):
        title = "Untitled " + (" ".join(kind.replace("_", " ").split()) or "note")
    return attrs.evolve(src, title=title)


def _read_source(content: str, kind: str, uri: object) -> SourceText:
    content = _nfc(content).replace("\x00", "").strip()
    name = file_name(uri)
    turns = _conversation(content)
    if turns:
        by_role = {who: text for who, text in reversed(turns)}
        asked = prose_paragraphs(by_role.get("User", turns[0][1]))
        answered = prose_paragraphs(by_role.get("Assistant", turns[-1][1]))
        q = _first_six([s for p in asked for s in sentences(p)])
        a = _first_six([s for p in answered for s in sentences(p)])
        title = (_pick(q, TITLE_CHARS, 2) or _pick(q, TITLE_CHARS, 1, questions=True)
                 or _pick(a, TITLE_CHARS, 2) or title_of(q) or title_of(a))
        leads = _lead_sentences(answered) or _lead_sentences(asked)
        return SourceText("conversation", content, name, "", title, leads, turns)
    language = code_language(name, content)
    if language is not None:
        comments = comment_sentences(content)
        room = TITLE_CHARS - len(name) - 2
        said = (_pick(comments[:6], room, 2) or _pick(comments[:6], room, 1) or "") \
            if room > 10 else ""
        title = f"{name}: {said}" if name and said else (name or said or cut_words(
            next(iter(content.splitlines()), ""), TITLE_CHARS))
        rest = [_ended(s) for s in comments if not said or _as_title(s) != said]
        held = structure(language, content)
        leads = tuple(rest[:2]) or ((held,) if held else ())
        return SourceText("code", content, name, language, title, leads)
    chat = _chat(content)
    if chat is not None:
        header, said_turns = chat
        central = _central(said_turns, TITLE_CHARS)
        title = _as_title(central[0][1]) if central else title_of(
            [s for _, t in said_turns for s in sentences(t)])
        leads = tuple(_ended(f"{who}: {s}") for who, s in _central(said_turns, 280)[:2])
        return SourceText("chat", content, name, "", title or header, leads, said_turns,
                          header)
    spoken = any(w in kind.casefold() for w in ("chat", "turn", "conversation", "message"))
    label = "" if markdown_heading(content) or spoken else _label(content)
    heading = markdown_heading(content) or label
    paragraphs = prose_paragraphs(content)
    if label and paragraphs:  # the label is the title; the lead is what follows it
        paragraphs[0] = paragraphs[0].split(":", 1)[1].strip() or paragraphs[0]
    title = cut_words(heading, TITLE_CHARS) if heading else title_of(
        [s for p in paragraphs for s in sentences(p)], spoken=spoken)
    return SourceText("markdown", content, name, "", title or cut_words(name, TITLE_CHARS),
                      _lead_sentences(paragraphs))


def evidence_source(text: str) -> tuple[str, str, object]:
    """``(content, kind, uri)`` of one Window Source's evidence text (RFC 8785 JSON of
    content, kind, metadata, uri); the raw text as content when it is not that JSON."""
    try:
        value: Any = json.loads(text)
    except ValueError:
        return text, "", None
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"], str(value.get("kind") or ""), value.get("uri")
    return text, "", None
