"""How the ``deterministic`` Topic provider writes Topics (:mod:`.deterministic`): a
Source as a Markdown section, the summary, which Topic a Source belongs to, and Topics
that grow past one detail. Pure: no I/O, no clock, no randomness.

- **Sections.** Each Source becomes one Markdown section (:func:`section`): Markdown as
  written, its headings shifted so the highest is level 2 (a heading equal to the
  Topic's title is left out); code and configuration in a fence named by its language
  (a Makefile's ``#`` comments stay inside it, never headings); a conversation as
  ``**User:**`` / ``**Assistant:**`` paragraphs; a chat as a list of turns. A fence left
  open is closed. A Topic's detail is its sections in Source order, blank line between.
- **Summary** (:func:`summary`): at most two sentences and :data:`SUMMARY_CHARS`
  characters: the first Source's lead sentences; once a later Source is added, the
  first Source's lead and ``Latest:`` the newest Source's lead, so a correction shows.
- **Same subject** (:func:`similarity`): a Source belongs to a Topic whose title (less
  a ``(part N)`` suffix) equals the Source's title, casefolded, white space collapsed;
  else when at least half of its subject terms (and two or more) are among the Topic's;
  the best match wins, ties by the Topics' content, never by a handle or an id.
- **Books** (:class:`Book`): a Topic and its continuations ``Title (part 2)``, ... A
  Source is added to the last part; what does not fit one detail starts the next part
  (a section too long for any part is split at blocks, fences closed and reopened), so
  nothing is dropped and the split points depend only on the Sources in order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import attrs

from powercontext.adapters.topic_generation._text import (
    SourceText,
    prose_paragraphs,
    read_source,
)
from powercontext.adapters.topic_generation._words import (
    content_terms,
    cut_words,
    sentences,
    subject_terms,
)
from powercontext.core.topic.content import MAX_DETAIL_CHARS, MAX_TITLE_CHARS

__all__ = [
    "SUMMARY_CHARS",
    "Book",
    "Part",
    "base_title",
    "roll",
    "section",
    "similarity",
    "summary",
    "title_key",
]

#: A summary is at most this many characters (and two sentences).
SUMMARY_CHARS: Final = 300
_FIRST_CHARS: Final = 150
_LATEST: Final = "Latest: "
#: Subject terms compared: a Source's and a Topic's.
_SOURCE_TERMS: Final = 12
_TOPIC_TERMS: Final = 24
#: Room kept in a part for the continuation lines around a split section.
_MARKER_ROOM: Final = 2 * MAX_TITLE_CHARS + 120
_PART = re.compile(r"^(.*\S) \(part (\d{1,6})\)$")
_HEADING = re.compile(r"^( {0,3})(#{1,6})([ \t].*|)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_BACKTICKS = re.compile(r"`{3,}")
_ROLES: Final = ("user", "assistant", "assist", "human", "system")
#: Titles that name no subject: a bare label (``User:``) or a keyword list.
_JUNK_TITLE = re.compile(r"[^:\n]{1,40}:|[^\s,]+(?:, [^\s,]+){2,}")
_ROLLED: Final = "_(Earlier material of this Topic is in its older Revisions.)_"


def title_key(title: str) -> str:
    """A title compared: casefolded, white space collapsed, no closing full stop."""
    return " ".join(title.casefold().split()).rstrip(".")


def base_title(title: str) -> tuple[str, int]:
    """``("Title", 2)`` for ``"Title (part 2)"``; ``(title, 1)`` otherwise."""
    m = _PART.match(title)
    return (m.group(1), int(m.group(2))) if m else (title, 1)


def part_title(base: str, part: int) -> str:
    return base if part == 1 else f"{base[:MAX_TITLE_CHARS - 16]} (part {part})"


# ---------------------------------------------------------------------- sections

def _fence_lines(lines: Sequence[str]) -> tuple[list[bool], str | None]:
    """Which lines are inside (or open or close) a fence, and the opening line of a
    fence still open at the end (None when every fence is closed)."""
    inside: list[bool] = []
    opened: str | None = None
    for line in lines:
        m = _FENCE.match(line)
        if opened is None:
            if m:
                opened = line
            inside.append(bool(m))
            continue
        o = _FENCE.match(opened)
        assert o is not None
        if m and m.group(1)[0] == o.group(1)[0] and len(m.group(1)) >= len(o.group(1)) \
                and not m.group(2).strip():
            opened = None
        inside.append(True)
    return inside, opened


def _closing(opened: str) -> str:
    m = _FENCE.match(opened)
    assert m is not None
    return m.group(1)


def shift_headings(text: str, top: int, drop: str = "") -> str:
    """``text`` with its ATX headings (outside fences) shifted so the highest is level
    ``top`` (at most 6); a heading whose text is ``drop`` (:func:`title_key`) left out;
    a fence left open closed."""
    lines = text.splitlines()
    inside, opened = _fence_lines(lines)
    levels = [len(m.group(2)) for line, code in zip(lines, inside, strict=True)
              if not code and (m := _HEADING.match(line))]
    shift = top - min(levels) if levels else 0
    out: list[str] = []
    for line, code in zip(lines, inside, strict=True):
        m = None if code else _HEADING.match(line)
        if m is None:
            out.append(line)
            continue
        words = m.group(3).strip().rstrip("#").strip()
        if drop and title_key(words) == drop:
            continue
        out.append("#" * min(6, len(m.group(2)) + shift) + (f" {words}" if words else ""))
    if opened is not None:
        out.append(_closing(opened))
    return "\n".join(out).strip()


def _fence(text: str, language: str) -> str:
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=2)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{text}\n{ticks}"


def section(src: SourceText, title: str, opening: bool = False) -> str:
    """One Source as a Markdown section of the Topic titled ``title`` (module doc);
    ``opening``: it begins the Topic's detail, so a heading equal to the title stays
    (the detail names its subject once)."""
    drop = "" if opening else title_key(base_title(title)[0])
    if src.kind == "code":
        body = _fence(src.content, "" if src.language == "text" else src.language)
        name = src.name if src.name and title_key(src.name) != drop else ""
        return f"## {name}\n\n{body}" if name else body
    if src.kind == "conversation":
        parts = []
        for who, text in src.turns:
            said = shift_headings(text, 3)
            single = "\n" not in said and not said.startswith(("#", "-", "*", ">", "|"))
            parts.append(f"**{who}:** {said}" if single else f"**{who}:**\n\n{said}")
        return "\n\n".join(parts)
    if src.kind == "chat":
        turns = "\n".join(f"- **{who}:** {' '.join(text.split())}" for who, text in src.turns)
        return f"**{src.header}**\n\n{turns}" if src.header else turns
    return shift_headings(src.content, 2, drop)


def _size(detail: str) -> int:
    return len(detail.strip())


def _split(text: str, room: int) -> tuple[str, str]:
    """``text`` cut in two so the first piece (with a fence it leaves open closed) is at
    most ``room`` characters: at the last blank line, else line, else space, else
    character before ``room``; the second piece reopens that fence."""
    if len(text) <= room:
        return text, ""
    limit = max(1, room - 16)
    while True:
        head = text[:limit]
        at, sep = len(head), ""
        for mark in ("\n\n", "\n", " "):
            if head.rfind(mark) > 0:
                at, sep = head.rfind(mark), mark
                break
        first = text[:at].rstrip()
        rest = text[at + 1:] if sep == " " else text[at:].lstrip("\n")
        _, opened = _fence_lines(first.splitlines())
        if opened is not None:
            first = f"{first}\n{_closing(opened)}"
            rest = f"{opened}\n{rest}"
        if len(first) <= room or limit == 1:
            return first, rest
        limit = max(1, limit - (len(first) - room) - 1)


# ---------------------------------------------------------------------- summary

def _first_sentence(text: str) -> str:
    found = sentences(text)
    return found[0] if found else ""


def _ended(sentence: str) -> str:
    sentence = sentence.strip()
    return sentence if not sentence or sentence[-1:] in ".!?…" else sentence + "."


def summary(first: Sequence[str], latest: Sequence[str] | None, title: str) -> str:
    """A Topic's summary (module doc): ``first`` the lead sentences of its first Source,
    ``latest`` those of its newest Source (None when it has one Source). Never more
    than two sentences (:func:`sentences`) nor :data:`SUMMARY_CHARS` characters."""
    made = _summary(first, latest, title)
    parts = sentences(made)
    return " ".join(parts[:2]) if len(parts) > 2 else made


def _summary(first: Sequence[str], latest: Sequence[str] | None, title: str) -> str:
    first = [_ended(s) for s in first if s.strip()] or [_ended(cut_words(title, 200))]
    if latest is None:
        head = _ended(cut_words(first[0], SUMMARY_CHARS))
        if len(first) > 1 and len(head) + 1 + len(first[1]) <= SUMMARY_CHARS:
            return f"{head} {first[1]}"
        return head
    head = _ended(cut_words(first[0], _FIRST_CHARS))
    news = [_ended(s) for s in latest if s.strip()]
    if not news:
        return head
    room = SUMMARY_CHARS - len(head) - 1 - len(_LATEST)
    return f"{head} {_LATEST}{_ended(cut_words(news[0], room))}"


def leads_of(src: SourceText) -> tuple[str, ...]:
    """The Source's lead sentences, else the first sentence of its title."""
    if src.leads or not src.title:
        return src.leads
    return (_ended(cut_words(_first_sentence(src.title) or src.title, 200)),)


# ---------------------------------------------------------------------- subjects

def source_terms(src: SourceText) -> frozenset[str]:
    """A Source's subject terms (speakers and role labels left out)."""
    names = [w for who, _ in src.turns for w in who.split()]
    return frozenset(subject_terms(src.content, _SOURCE_TERMS, [*names, *_ROLES]))


def topic_terms(title: str, summary_text: str, detail: str) -> frozenset[str]:
    """A Topic's subject terms: its title's and its most frequent ones."""
    text = f"{title}\n{summary_text}\n{detail}"
    return frozenset(content_terms(title)) | frozenset(subject_terms(text, _TOPIC_TERMS))


def similarity(title: str, terms: frozenset[str], topic_title: str,
               topic_terms_: frozenset[str]) -> float | None:
    """How surely a Source (its ``title`` and subject ``terms``) belongs to a Topic: 2.0
    for an equal title (less a part suffix), else the share of its subject terms the
    Topic has when that is at least half and two or more terms; None otherwise."""
    if title_key(title) and title_key(title) == title_key(base_title(topic_title)[0]):
        return 2.0
    if not terms:
        return None
    shared = len(terms & topic_terms_)
    if shared >= 2 and shared >= math.ceil(len(terms) / 2):
        return shared / len(terms)
    return None


# ---------------------------------------------------------------------- books

@attrs.define
class Part:
    """One Topic of a :class:`Book`: its title, lead sentences (first and newest
    Source), detail, the evidence ids it cites (this operation's), its history
    ``handle`` (None: a new Topic) and whether this operation changed it."""

    title: str
    first: tuple[str, ...]
    latest: tuple[str, ...] | None
    detail: str
    cited: list[str] = attrs.field(factory=list)
    handle: str | None = None
    summary_text: str = ""
    changed: bool = False
    _terms: frozenset[str] | None = None

    def terms(self) -> frozenset[str]:
        if self._terms is None:
            self._terms = topic_terms(self.title, self.summary_text or " ".join(self.first),
                                      self.detail)
        return self._terms

    def topic(self) -> dict[str, Any]:
        return {"title": self.title, "summary": self.summary_text, "detail": self.detail,
                "evidence_ids": list(self.cited)}

    def key(self) -> tuple[str, str, str]:
        return title_key(self.title), self.title, self.detail


@attrs.define
class Book:
    """A Topic and its continuations (module doc). ``parts`` in part order."""

    base: str
    parts: list[Part]

    @classmethod
    def of_history(cls, handle: str, title: str, summary_text: str, detail: str) -> Book:
        """The Book of one history Topic; a title an earlier release wrote that names
        no subject (a bare label such as ``User:``, a keyword list such as ``release,
        branch, captain, tag``) is replaced by its detail's title when the Topic is
        next UPDATEd."""
        first = (_first_sentence(summary_text),) if summary_text.strip() else ()
        if _JUNK_TITLE.fullmatch(title.strip()):
            title = read_source(detail).title or title
        part = Part(title, first, None, detail.strip(), handle=handle,
                    summary_text=summary_text)
        return cls(base_title(title)[0], [part])

    @classmethod
    def new(cls, title: str) -> Book:
        return cls(title, [])

    @property
    def last(self) -> Part | None:
        return self.parts[-1] if self.parts else None

    def _open(self, first: tuple[str, ...]) -> Part:
        number = len(self.parts) + 1 if not self.parts else \
            base_title(self.parts[-1].title)[1] + 1
        prior = self.parts[-1].title if self.parts else None
        detail = f"_(Continued from “{prior}”.)_" if prior else ""
        part = Part(part_title(self.base, number), first, None, detail)
        self.parts.append(part)
        return part

    def _put(self, part: Part, eid: str, text: str, leads: tuple[str, ...]) -> None:
        part.detail = f"{part.detail}\n\n{text}" if part.detail else text
        if not part.first:
            part.first = leads
        elif part.cited or part.handle is not None:
            part.latest = leads
        if eid not in part.cited:
            part.cited.append(eid)
        part.changed = True
        part._terms = None
        part.summary_text = summary(part.first, part.latest, part.title)

    def add(self, eid: str, render: Callable[[bool], str], leads: tuple[str, ...]) -> bool:
        """Add one Source's section (``render(opening)``: its text when it opens a
        Topic's detail, or not) to the last part (a new part when it does not fit;
        split across parts when no part holds it). False when its text is already
        there (nothing added)."""
        text = render(False)
        if any(text in p.detail or render(True) in p.detail for p in self.parts):
            return False
        part = self.last or self._open(leads)
        if not part.detail:
            text = render(True)
        if _size(f"{part.detail}\n\n{text}") <= MAX_DETAIL_CHARS:
            self._put(part, eid, text, leads)
            return True
        if part.cited or part.handle is not None:
            part = self._open(leads)
            if _size(f"{part.detail}\n\n{text}") <= MAX_DETAIL_CHARS:
                self._put(part, eid, text, leads)
                return True
        rest = text
        while rest:
            room = MAX_DETAIL_CHARS - _size(part.detail) - _MARKER_ROOM
            piece, rest = _split(rest, room)
            nxt = part_title(self.base, base_title(part.title)[1] + 1)
            if rest:
                piece = f"{piece}\n\n_(Continued in “{nxt}”.)_"
            piece_leads = _piece_leads(piece) or leads
            self._put(part, eid, piece, piece_leads)
            if rest:
                part = self._open(piece_leads)
        return True

    def changed(self) -> list[Part]:
        return [p for p in self.parts if p.changed]


def _piece_leads(piece: str) -> tuple[str, ...]:
    out = []
    for p in prose_paragraphs(piece):
        for s in sentences(p):
            if content_terms(s) and not s.startswith("_("):
                out.append(_ended(s))
                if len(out) == 2:
                    return tuple(out)
    return tuple(out)


def best(title: str, terms: frozenset[str], parts: Iterable[Part]) -> Part | None:
    """The part a Source belongs to (:func:`similarity`; the best, ties by the parts'
    content), or None."""
    scored = [(s, p) for p in parts
              if (s := similarity(title, terms, p.title, p.terms())) is not None]
    if not scored:
        return None
    return min(scored, key=lambda sp: (-sp[0], sp[1].key()))[1]


def roll(old: str, new: Sequence[str]) -> str | None:
    """A detail that keeps every ``new`` text whole after ``old`` (blank lines between),
    leaving out ``old``'s first blocks (outside fences) until it fits, with a line saying
    the earlier material is in older Revisions; None when the new texts alone do not
    fit."""
    added = "\n\n".join(new)
    if _size(f"{old}\n\n{added}") <= MAX_DETAIL_CHARS:
        return f"{old}\n\n{added}".strip()
    if _size(f"{_ROLLED}\n\n{added}") > MAX_DETAIL_CHARS:
        return None
    blocks = _blocks(old.removeprefix(_ROLLED).strip())
    while blocks and _size("\n\n".join([_ROLLED, *blocks, added])) > MAX_DETAIL_CHARS:
        blocks.pop(0)
    return "\n\n".join([_ROLLED, *blocks, added])


def _blocks(text: str) -> list[str]:
    """``text`` as its blank-line separated blocks, a fence never split."""
    lines = text.splitlines()
    inside, _ = _fence_lines(lines)
    out: list[list[str]] = [[]]
    for line, code in zip(lines, inside, strict=True):
        if not line.strip() and not code:
            if out[-1]:
                out.append([])
            continue
        out[-1].append(line)
    return ["\n".join(b) for b in out if b]


def books_of_history(history: Sequence[dict[str, Any]]) -> list[Book]:
    """The Books of the history Topics given to a stage (``handle``, ``title``,
    ``summary``, ``detail``): parts of one base title (casefolded) in one Book, in part
    order, ties by content; Books in order of their first part's content. Independent
    of the order of the handles."""
    by_base: dict[str, list[Part]] = {}
    for h in history:
        book = Book.of_history(h["handle"], h["title"], h["summary"], h["detail"])
        by_base.setdefault(title_key(book.base), []).extend(book.parts)
    books = []
    for parts in by_base.values():
        parts.sort(key=lambda p: (base_title(p.title)[1], p.key()))
        books.append(Book(base_title(parts[0].title)[0], parts))
    books.sort(key=lambda b: b.parts[0].key())
    return books
