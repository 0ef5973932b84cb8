"""A Memory Revision as a Markdown file a person edits and a team reviews, and the
edit read back as the spec's operations (Memory RFC, "remember()", "forget()").

:func:`render` writes the active entries of one Revision: a header naming the exact
Revision (``<!-- powercontext:export ID@REV sha256:HASH -->``), then one ``## KIND``
section per entry kind (rules, then facts and other kinds, then working notes; kinds
of one rank by name), each entry a list item: its text (the first line after ``- ``,
the others indented by two spaces, an empty line left empty) and an entry line
``<!-- entry ENTRY_ID vN VERSION_ID · evidence SOURCE (kind name), ... -->``. Entries
of a section are ordered by entry id. Nothing depends on the clock or the reader: the
same Revision always renders to the same bytes, and after an edit is applied a diff of
two exports shows only the entries that changed.

:func:`parse` reads such a file back (edited or not) and :func:`plan_edits` compares
it with the Revision it names: a bullet whose text or section changed is a revision, a
bullet without an entry line is a new entry, an entry whose bullet is gone is
forgotten. A text line that would read as an entry line (``<!-- entry ...``) is
written with a backslash before it (one more backslash for a line that already starts
with backslashes before it) and read back without it, so every text round-trips.
Lines are separated by ``\\n`` only (a file saved with ``\\r\\n`` line ends is read as
such); other characters of a text are kept as they are.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import unquote, urlsplit

import attrs

from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import MemoryEntryVersion, Source
from powercontext.core.recall import kind_rank

__all__ = [
    "EXPORT_MARKER",
    "EditPlan",
    "ParsedExport",
    "ParsedItem",
    "parse",
    "plan_edits",
    "render",
    "source_label",
]

#: The header line that names the Revision an export was written from.
EXPORT_MARKER = "<!-- powercontext:export "
_ENTRY = "<!-- entry "
_EXPORT_RE = re.compile(r"<!-- powercontext:export (\S+)@(\d+) sha256:([0-9a-f]{64}) -->")
_ENTRY_RE = re.compile(r"  <!-- entry (\S+) v(\d+) (\S+)(?: · [^\n]*)? -->")
_ESCAPED = re.compile(r"(\\*)<!-- entry ")
#: A kind written bare in its heading; any other kind is written as a JSON string.
_PLAIN_KIND = re.compile(r"[A-Za-z0-9_.:/+-]+(?: [A-Za-z0-9_.:/+-]+)*")
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9_.@+-]")

_HOW = (
    "Edit this file and run `powercontext memory apply FILE` to change the Memory:\n"
    "change an entry's text (or move it under another `## kind`) to revise it, delete\n"
    "an entry (its bullet and its `<!-- entry ... -->` line) to forget it, and add a\n"
    "bullet under a `## kind` heading to remember a new entry. A file exported from an\n"
    "older Revision is refused: export again. `--dry-run` shows the plan first.\n"
)


@attrs.frozen
class ParsedItem:
    """One bullet of an export: its section ``kind``, its ``text`` (as written, the
    entry line and the indentation removed), the entry it names (``entry_id``,
    ``version`` and ``entry_version_id``; None for a new bullet) and its 1-based
    ``line`` in the file."""

    kind: str
    text: str
    entry_id: str | None
    version: int | None
    entry_version_id: str | None
    line: int


@attrs.frozen
class ParsedExport:
    """A parsed export: the Memory and Revision its header names, that Revision's
    content hash and its bullets in file order."""

    memory_id: str
    revision: int
    content_hash: str
    items: tuple[ParsedItem, ...]


@attrs.frozen
class EditPlan:
    """What an edited export changes at the Revision it names: ``revise`` pairs of
    (current version, new kind, new text), ``add`` pairs of (kind, text) in file order,
    ``forget`` the current versions whose bullets are gone, and ``unchanged`` (how many
    entries the file keeps as they are)."""

    revise: tuple[tuple[MemoryEntryVersion, str, str], ...]
    add: tuple[tuple[str, str], ...]
    forget: tuple[MemoryEntryVersion, ...]
    unchanged: int

    @property
    def empty(self) -> bool:
        return not (self.revise or self.add or self.forget)


def source_label(source: Source) -> str:
    """How an export names a Source beside its id: its kind and the last segment of
    its uri's path (``file AGENTS.md``), else its ``file`` metadata (``user_edit
    MEMORY.md``), reduced to characters that cannot end or break the entry line."""
    name = dict(source.metadata).get("file", "")
    if source.uri:
        path = unquote(urlsplit(source.uri).path).rstrip("/")
        name = path.rsplit("/", 1)[-1]
    name = name[:80]
    words = [_LABEL_UNSAFE.sub("_", w) for w in (source.kind, name) if w]
    return " ".join(words)


def _heading(kind: str) -> str:
    return f"## {kind}" if _PLAIN_KIND.fullmatch(kind) else "## " + json.dumps(kind)


def _escape(line: str) -> str:
    m = _ESCAPED.match(line)
    return "\\" + line if m else line


def _unescape(line: str) -> str:
    m = _ESCAPED.match(line)
    return line[1:] if m and m.group(1) else line


def _evidence(v: MemoryEntryVersion, labels: Mapping[str, str]) -> str:
    parts = [f"{r.source_id} ({labels[r.source_id]})" if labels.get(r.source_id)
             else r.source_id for r in v.sources]
    parts += [f"{a.artifact_id}@{a.revision}" for a in v.artifacts]
    return " · evidence " + ", ".join(parts) if parts else ""


def _section_order(kinds: Iterable[str]) -> list[str]:
    return sorted(set(kinds), key=lambda k: (kind_rank(k), k.encode("utf-8")))


def render(memory_id: str, revision: int, content_hash: str,
           entries: Sequence[MemoryEntryVersion],
           labels: Mapping[str, str] | None = None) -> str:
    """The export of Revision ``memory_id@revision`` (``content_hash``: its Artifact
    content hash) holding the active ``entries`` (any order), as described in the
    module docstring; ``labels`` maps a source id to :func:`source_label` of its
    Source. The result ends with one line feed."""
    labels = labels or {}
    by_kind: dict[str, list[MemoryEntryVersion]] = {}
    for v in entries:
        by_kind.setdefault(v.kind, []).append(v)
    count = len(entries)
    out = [
        f"# Memory {memory_id}",
        "",
        f"Revision {revision} of `{memory_id}`: {count} active "
        f"{'entry' if count == 1 else 'entries'}.",
        f"{EXPORT_MARKER}{memory_id}@{revision} sha256:{content_hash} -->",
        "",
        *_HOW.rstrip("\n").split("\n"),
    ]
    for kind in _section_order(by_kind):
        out += ["", _heading(kind)]
        for v in sorted(by_kind[kind], key=lambda v: v.entry_id.encode("utf-8")):
            first, *rest = v.text.split("\n")
            out += ["", f"- {first}"]
            out += [f"  {_escape(line)}" if line else "" for line in rest]
            out.append(f"  {_ENTRY}{v.entry_id} v{v.version} {v.entry_version_id}"
                       f"{_evidence(v, labels)} -->")
    return "\n".join(out) + "\n"


def _bad(where: str, line: int, message: str) -> InvalidInputError:
    return InvalidInputError(f"{where}:{line}", message)


def _kind_of(heading: str, where: str, line: int) -> str:
    raw = heading[3:].strip()
    if raw.startswith('"'):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise _bad(where, line, f"the heading's kind is not a JSON string: {exc}") from None
        if not isinstance(raw, str):
            raise _bad(where, line, "the heading's kind must be a string")
    return canonical.normalize_kind(raw, f"{where}:{line}")


def parse(text: str, where: str = "file") -> ParsedExport:
    """The export ``text`` read back (``where`` names the file in errors). Raises
    InvalidInputError naming ``where:LINE`` when the header line is missing or given
    twice, a bullet stands before the first ``## kind`` heading, text below it is in
    no bullet (an HTML comment line ``<!-- ...`` is allowed), an entry line is not at
    the end of its bullet, or a kind heading is malformed."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if any(line.startswith(EXPORT_MARKER) and line.endswith("\r") for line in lines):
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if not any(line.startswith(EXPORT_MARKER) for line in lines):
        raise InvalidInputError(where, "has no `<!-- powercontext:export ID@REV ... -->` "
                                "line: it is not a powercontext memory export")
    header: tuple[str, int, str] | None = None
    items: list[ParsedItem] = []
    kind: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(EXPORT_MARKER):
            m = _EXPORT_RE.fullmatch(line)
            if m is None:
                raise _bad(where, i + 1, "the export line must read "
                           "`<!-- powercontext:export ID@REV sha256:HASH -->`")
            if header is not None:
                raise _bad(where, i + 1, "a second export line: one file exports one "
                           "Revision")
            header = (m.group(1), int(m.group(2)), m.group(3))
            i += 1
        elif line.startswith("## "):
            kind = _kind_of(line, where, i + 1)
            i += 1
        elif line.startswith("- ") or line == "-":
            if kind is None:
                raise _bad(where, i + 1, "a bullet before the first `## kind` heading: "
                           "put it under the heading of its kind")
            start = i
            body = [line[2:]]
            i += 1
            while i < len(lines) and (lines[i] == "" or lines[i].startswith("  ")
                                      or lines[i].isspace()):
                body.append(lines[i])
                i += 1
            while len(body) > 1 and not body[-1].strip():
                body.pop()
            entry: tuple[str, int, str] | None = None
            m = _ENTRY_RE.fullmatch(body[-1]) if len(body) > 1 else None
            if m is not None:
                entry = (m.group(1), int(m.group(2)), m.group(3))
                body.pop()
            for j, rest in enumerate(body[1:], start=1):
                if _ENTRY_RE.fullmatch(rest):
                    raise _bad(where, start + j + 1, "an entry line must be the last line "
                               "of its bullet")
            text_lines = [body[0], *(_unescape(b[2:]) if b.startswith("  ") else b.lstrip(" ")
                                    for b in body[1:])]
            entry_id, version, version_id = entry or (None, None, None)
            items.append(ParsedItem(kind, "\n".join(text_lines), entry_id, version,
                                    version_id, start + 1))
        elif kind is not None and line.strip() and not line.startswith("<!--"):
            raise _bad(where, i + 1, "text outside an entry: indent it by two spaces to "
                       "continue the entry above, or start a new entry with `- `")
        else:
            i += 1
    assert header is not None
    return ParsedExport(header[0], header[1], header[2], tuple(items))


def _same(text: str, kind: str, v: MemoryEntryVersion) -> bool:
    return kind == v.kind and unicodedata.normalize("NFC", text).strip() == v.text


def plan_edits(parsed: ParsedExport, active: Mapping[str, MemoryEntryVersion],
               where: str = "file") -> EditPlan:
    """The changes the edited export ``parsed`` makes to the active entries ``active``
    (entry id -> current version) of the Revision it names. A bullet naming an entry
    revises it when its kind or NFC-trimmed text differs; a bullet without an entry
    line adds an entry, unless its kind and text are those of an entry whose bullet is
    gone (its entry line was lost: the entry is kept); an active entry with no bullet
    is forgotten. Raises InvalidInputError naming ``where:LINE`` for an entry line that
    names no active entry of the Revision, another version of it, or an entry named
    twice, and for an empty bullet."""
    named: dict[str, ParsedItem] = {}
    new: list[ParsedItem] = []
    for item in parsed.items:
        if not item.text.strip():
            raise _bad(where, item.line, "an empty bullet: write the entry's text, or "
                       "delete the bullet")
        if item.entry_id is None:
            new.append(item)
            continue
        current = active.get(item.entry_id)
        if current is None:
            raise _bad(where, item.line, f"names entry {item.entry_id}, which is not an "
                       f"active entry of {parsed.memory_id}@{parsed.revision}")
        if (item.entry_version_id, item.version) != (current.entry_version_id,
                                                      current.version):
            raise _bad(where, item.line, f"names version {item.entry_version_id} (v"
                       f"{item.version}) of {item.entry_id}; the Revision holds "
                       f"{current.entry_version_id} (v{current.version})")
        if item.entry_id in named:
            raise _bad(where, item.line, f"names entry {item.entry_id} a second time "
                       f"(first on line {named[item.entry_id].line})")
        named[item.entry_id] = item
    gone = {e: v for e, v in active.items() if e not in named}
    adds: list[tuple[str, str]] = []
    for item in new:
        kept = next((e for e, v in gone.items() if _same(item.text, item.kind, v)), None)
        if kept is not None:
            named[kept] = item
            del gone[kept]
        else:
            adds.append((item.kind, item.text))
    revise = tuple((active[e], item.kind, item.text)
                   for e, item in sorted(named.items(), key=lambda p: p[0].encode("utf-8"))
                   if not _same(item.text, item.kind, active[e]))
    forget = tuple(v for _e, v in sorted(gone.items(), key=lambda p: p[0].encode("utf-8")))
    return EditPlan(revise, tuple(adds), forget, len(named) - len(revise))
