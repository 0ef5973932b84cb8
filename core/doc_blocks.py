"""Pure readers of the prose documents of a repository's contract (Markdown and
reStructuredText) into :class:`Block` values: one paragraph or list item each, joined
from its hard-wrapped lines, with the section headings above it, the lead-in that
introduces its list, and the shell commands of a code block that directly follows it
(Memory RFC, "Candidate generation and model-free fallback": the deterministic adapter
for known material reads these blocks; what becomes a rule is decided in
:mod:`powercontext.core.extraction.rule_kinds`).

Markup is normalised to one inline form: Markdown's. reStructuredText ````code````
becomes ```code```, ```text <url>`_`` becomes ``[text](url)`` and a role such as
``:pep:`8``` becomes ``PEP 8``. Nothing here executes or includes anything: directives
other than admonitions and code blocks are skipped with their content.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

__all__ = ["Block", "command_lines", "read_document", "read_markdown", "read_rst",
           "rst_inline"]


@attrs.frozen
class Block:
    """One block of prose. ``kind``: ``para``, ``item`` (a list item), ``table`` (a
    table row), ``image`` (a badge or image line). ``section``: the heading titles
    above it, outermost first. ``lead_in``: for an item, the sentence ending in ``:``
    that introduces its list, or the text of its parent item. ``code``: the command
    lines of a shell code block that follows the block directly. ``group``: blocks of
    one list share it. ``line``: 1-based line of the block's first line."""

    text: str
    kind: str = "para"
    section: tuple[str, ...] = ()
    lead_in: str = ""
    code: tuple[str, ...] = ()
    line: int = 0
    group: int = 0
    depth: int = 0


# --------------------------------------------------------------------------- code blocks

_SHELL_LANGS = frozenset({"", "sh", "bash", "shell", "console", "zsh", "fish", "shell-session",
                          "shellsession", "powershell", "ps1", "pwsh", "cmd", "bat", "text",
                          "none", "bash-session", "terminal"})
_PROMPT = re.compile(r"^(?:\$|%|>|PS>|PS [A-Z]:\\[^>]*>)\s+")
_NOT_COMMAND = re.compile(
    r"^(?:def |class |import |from \w+ import|return\b|[{}\[\]()]|[\w.]+\s*=\s*[^=]|"
    r"<\w|//|/\*|\*|#include|fn |func |let |const |var |@)")


def command_lines(lines: Sequence[str], lang: str = "") -> tuple[str, ...]:
    """The shell commands of a code block: ``$``/``>`` prompts stripped, comments and
    output dropped; empty when the block is not a short shell snippet (a language
    other than a shell, a line of code, or more than three commands)."""
    if lang.strip().lower() not in _SHELL_LANGS:
        return ()
    body = [ln.strip() for ln in lines if ln.strip()]
    prompted = [ln for ln in body if _PROMPT.match(ln)]
    out: list[str] = []
    for ln in (prompted or body):
        cmd = _PROMPT.sub("", ln, count=1).strip()
        cmd = re.sub(r"\s+#\s.*$", "", cmd).strip()
        if not cmd or cmd.startswith("#"):
            continue
        if _NOT_COMMAND.match(cmd) or len(cmd) > 160:
            return ()
        out.append(cmd)
    return tuple(out) if 0 < len(out) <= 3 else ()


# --------------------------------------------------------------------------- Markdown

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+\-.]*)")
_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)(?:>\s*)*([-*+]|\d+[.)])\s+(?:\[[ xX]\]\s*)?")
_HR = re.compile(r"^\s{0,3}(?:[=\-*_]\s*){3,}$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_IMAGE_LINE = re.compile(r"^(?:\[?!\[[^\]]*\]\([^)]*\)\]?(?:\([^)]*\))?\s*)+$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$")
_ALERT = re.compile(r"^\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*", re.IGNORECASE)
_ADMONITION = re.compile(r"^(?:!!!|\?\?\?\+?)\s*\w+")


def _clean_heading(text: str) -> str:
    text = re.sub(r"\s*\{#[\w\-]+\}\s*$", "", text)  # {#anchor}
    return " ".join(text.strip("#* ").split())


class _Builder:
    """Collects blocks and knows the heading path, the open list and the block a code
    block would attach to."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.headings: list[tuple[int, str]] = []
        self.group = 0
        self.target: int | None = None  # index of the block a following code block joins

    @property
    def section(self) -> tuple[str, ...]:
        return tuple(t for _, t in self.headings)

    def heading(self, level: int, title: str) -> None:
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        self.headings.append((level, _clean_heading(title)))
        self.target = None

    def add(self, text: str, kind: str, line: int, *, lead_in: str = "", depth: int = 0,
            group: int | None = None) -> None:
        text = " ".join(text.split())
        if not text:
            return
        if group is None:
            self.group += 1
            group = self.group
        self.blocks.append(Block(text, kind, self.section, lead_in, (), line, group, depth))
        self.target = len(self.blocks) - 1 if kind in ("para", "item") else None

    def code(self, lines: Sequence[str], lang: str) -> None:
        cmds = command_lines(lines, lang)
        if self.target is not None and cmds:
            b = self.blocks[self.target]
            self.blocks[self.target] = attrs.evolve(b, code=b.code + cmds)
        self.target = None


def read_markdown(text: str) -> list[Block]:
    """The blocks of Markdown ``text`` in document order (ATX and setext headings,
    nested lists, fenced and indented code, tables, badges, GitHub alerts, ``!!!``
    admonitions). Hard-wrapped lines are joined; HTML and comments are dropped."""
    b = _Builder()
    cur: list[str] = []
    cur_kind = "para"
    cur_line = 0
    cur_depth = 0
    cur_lead = ""
    cur_group: int | None = None
    items: list[tuple[int, str]] = []  # open list items: (marker indent, text)
    lead_in = ""  # the ':' sentence introducing the next list
    list_group: int | None = None
    fence: tuple[str, str, list[str]] | None = None
    comment = False
    blank = True
    code_buf: list[str] = []
    lines = text.splitlines()
    table_rows: set[int] = set()  # 1-based lines of pipe tables without a leading pipe
    for k, ln in enumerate(lines):
        if _TABLE_RULE.match(ln) and k > 0 and "|" in lines[k - 1]:
            table_rows.add(k)
            j = k + 1
            table_rows.add(j)
            while j <= len(lines) and "|" in lines[j - 1]:
                table_rows.add(j)
                j += 1

    def flush() -> None:
        nonlocal cur, cur_kind, cur_lead, lead_in, cur_group, cur_depth
        if not cur:
            return
        joined = " ".join(cur)
        b.add(joined, cur_kind, cur_line, lead_in=cur_lead, depth=cur_depth, group=cur_group)
        if cur_kind == "item" and items:
            items[-1] = (items[-1][0], " ".join(joined.split()))
        if cur_kind == "para":
            last = _last_sentence(joined)
            lead_in = last if last.endswith(":") else ""
        cur, cur_kind, cur_lead, cur_group = [], "para", "", None
        cur_depth = 0

    def flush_code() -> None:
        nonlocal code_buf
        if code_buf:
            b.code(code_buf, "")
            code_buf = []

    for n, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if fence is not None:
            if stripped.startswith(fence[0]) and not stripped.strip(fence[0][0]):
                b.code(fence[2], fence[1])
                fence = None
            else:
                fence[2].append(raw)
            continue
        if comment:
            comment = "-->" not in stripped
            continue
        if code_buf and (raw.startswith(("    ", "\t")) or not stripped):
            code_buf.append(raw)
            continue
        flush_code()
        m = _FENCE.match(raw)
        if m:
            flush()
            fence = (m.group(2), m.group(3), [])
            lead_in = ""  # a lead-in introduces what follows it directly
            continue
        if not stripped:
            flush()
            blank = True
            continue
        if stripped.startswith("<!--"):
            flush()
            comment = "-->" not in stripped
            continue
        if cur and cur_kind == "para" and len(cur) == 1 and _SETEXT.match(raw) and not items:
            title = cur[0]
            cur = []
            b.heading(1 if stripped.startswith("=") else 2, title)
            lead_in, items, list_group = "", [], None
            continue
        h = _ATX.match(raw)
        if h:
            flush()
            b.heading(len(h.group(1)), h.group(2))
            lead_in, items, list_group = "", [], None
            blank = True
            continue
        if _HR.match(raw):
            flush()
            blank = True
            continue
        if stripped.startswith("|") or n in table_rows:
            flush()
            lead_in = ""
            if not _TABLE_RULE.match(stripped):
                b.add(stripped, "table", n)
            blank = False
            continue
        if stripped.startswith("<"):
            flush()
            blank = False
            continue
        if _IMAGE_LINE.match(stripped):
            flush()
            b.add(stripped, "image", n)
            blank = False
            continue
        im = _ITEM.match(raw)
        if im:
            flush()
            indent = len(im.group(1).expandtabs(4))
            while items and items[-1][0] >= indent:
                items.pop()
            if not items and (list_group is None or (blank and lead_in)):
                b.group += 1
                list_group = b.group
            parent = items[-1][1] if items else lead_in
            items.append((indent, ""))
            cur, cur_kind, cur_line = [_ITEM.sub("", raw, count=1).strip()], "item", n
            cur_depth, cur_lead, cur_group = len(items) - 1, parent, list_group
            blank = False
            continue
        if blank and not cur and not items and raw.startswith(("    ", "\t")):
            code_buf = [raw]  # indented code
            continue
        if _ADMONITION.match(stripped):
            flush()
            blank = True
            continue
        line = _ALERT.sub("", re.sub(r"^(?:>\s*)+", "", stripped))
        if not line:
            continue
        if cur_kind == "item" and cur:
            finished = cur[-1].endswith((".", "!", "?", ":"))
            if blank or (not raw[:1].isspace() and finished):
                if raw[:1].isspace() and items:
                    flush()  # a paragraph inside the item
                    cur, cur_kind, cur_line = [line], "para", n
                    cur_depth, cur_lead = len(items), items[-1][1]
                    blank = False
                    continue
                flush()
                items, list_group = [], None
        elif not cur and blank and not raw[:1].isspace():
            items, list_group = [], None
        if not cur:
            cur_line = n
            if items and raw[:1].isspace():
                cur_depth, cur_lead = len(items), items[-1][1]
        cur.append(line)
        blank = False
    flush()
    flush_code()
    return b.blocks


def _last_sentence(text: str) -> str:
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z`\[*_(])", " ".join(text.split()))
    return parts[-1] if parts else ""


# --------------------------------------------------------------------------- reStructuredText

_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.<>_])\1{2,}\s*$")
_RST_ITEM = re.compile(r"^(\s*)([-*+\u2022]|#\.|\d+\.|\(?\d+\)|[a-zA-Z]\.)\s+")
_RST_DIRECTIVE = re.compile(r"^\s*\.\.\s+(?:\|[^|]+\|\s+)?([\w\-:]+)::\s*(.*)$")
_ADMONITIONS = frozenset({"note", "warning", "important", "tip", "attention", "caution",
                          "danger", "hint", "admonition", "seealso", "error"})
_CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "prompt"})


def rst_inline(text: str) -> str:
    """reStructuredText inline markup in the Markdown form the rule reader uses."""
    text = re.sub(r":(?:pep|PEP):`(\d+)`", r"PEP \1", text)
    text = re.sub(r":[\w\-:]+:`([^`<]*?)\s*<[^`>]*>`", r"`\1`", text)
    text = re.sub(r":[\w\-:]+:`([^`]+)`", r"`\1`", text)
    text = re.sub(r"`([^`<]+?)\s*<([^`>]+)>`__?", r"[\1](\2)", text)
    text = re.sub(r"``(.+?)``", r"`\1`", text)
    text = re.sub(r"(?<![`\w])`([^`]+)`_{1,2}(?!\w)", r"\1", text)
    text = re.sub(r"(?<=\S)::$", ":", text.rstrip())
    return re.sub(r"\s+::$", "", text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" ")) if line.strip() else 10**6


def _dedent(lines: Sequence[str]) -> list[str]:
    width = min((_indent(ln) for ln in lines if ln.strip()), default=0)
    return [ln[width:] if ln.strip() else "" for ln in lines]


def _indented_block(lines: Sequence[str], start: int, min_indent: int) -> int:
    """The index after the block of lines from ``start`` indented more than
    ``min_indent`` (blank lines inside it included, trailing ones excluded)."""
    end = start
    i = start
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        if _indent(lines[i]) <= min_indent:
            break
        i += 1
        end = i
    return end


def read_rst(text: str) -> list[Block]:
    """The blocks of reStructuredText ``text``: section titles (underlined or over-
    and underlined), paragraphs, bullet and enumerated lists (nested), literal blocks
    after ``::`` and ``.. code-block::`` (attached as commands to the paragraph before
    them), admonitions (their content is read); other directives, comments, tables and
    block quotes are skipped."""
    b = _Builder()
    styles: list[tuple[str, bool]] = []
    _rst_body(text.splitlines(), 0, b, styles, depth=0, parent="")
    return b.blocks


def _rst_title_level(styles: list[tuple[str, bool]], style: tuple[str, bool]) -> int:
    if style not in styles:
        styles.append(style)
    return styles.index(style) + 1


def _rst_body(lines: list[str], offset: int, b: _Builder, styles: list[tuple[str, bool]],
              *, depth: int, parent: str, literal_first: bool = False) -> None:
    """Read a body of reStructuredText (dedented to column 0) into ``b``.
    ``literal_first``: the body's first indented block is a literal block (its owner
    ended in ``::``)."""
    i = 0
    list_group: int | None = None
    lead_in = parent
    literal_next = literal_first
    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if not s:
            i += 1
            continue
        ind = _indent(line)
        if ind > 0:  # an indented block: a literal block after '::', else a block quote
            end = _indented_block(lines, i, ind - 1)
            if literal_next:
                b.code(_dedent(lines[i:end]), "")
            i, literal_next = end, False
            continue
        literal_next = False
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if _RST_UNDERLINE.match(s) and i + 2 < len(lines) and lines[i + 2].strip() == s \
                and lines[i + 1].strip():  # an over- and underlined title
            b.heading(_rst_title_level(styles, (s[0], True)), rst_inline(lines[i + 1].strip()))
            list_group, lead_in, i = None, parent, i + 3
            continue
        if nxt.strip() and _RST_UNDERLINE.match(nxt.strip()) and len(nxt.strip()) >= len(s) \
                and not _RST_UNDERLINE.match(s) and _indent(nxt) == 0:
            b.heading(_rst_title_level(styles, (nxt.strip()[0], False)), rst_inline(s))
            list_group, lead_in, i = None, parent, i + 2
            continue
        d = _RST_DIRECTIVE.match(line)
        if d or s.startswith(".."):
            end = _indented_block(lines, i + 1, 0)
            name = d.group(1).lower() if d else ""
            body = _dedent(lines[i + 1:end])
            if d and name in _ADMONITIONS:
                first = [d.group(2)] if d.group(2).strip() else []
                _rst_body([*first, "", *body], offset + i + 1, b, styles, depth=depth,
                          parent=parent)
            elif d and name in _CODE_DIRECTIVES:
                while body and (body[0].startswith(":") or not body[0].strip()):
                    body = body[1:]  # directive options
                b.code(body, d.group(2).strip())
            i = end
            continue
        if s.startswith(("+-", "+=")) or (_RST_UNDERLINE.match(s.replace(" ", "")) and " " in s):
            while i < len(lines) and lines[i].strip():
                i += 1  # a table
            continue
        m = _RST_ITEM.match(line)
        if m:
            col = len(m.group(0))
            end = _indented_block(lines, i + 1, col - 1)
            if list_group is None:
                b.group += 1
                list_group = b.group
            body = [line[col:], *_dedent_to(lines[i + 1:end], col)]
            first, rest = _split_first_paragraph(body)
            item = rst_inline(" ".join(x.strip() for x in first))
            b.add(item, "item", offset + i + 1, lead_in=lead_in, depth=depth, group=list_group)
            literal = bool(first) and first[-1].rstrip().endswith("::")
            _rst_body(rest, offset + i + 1 + len(first), b, styles, depth=depth + 1,
                      parent=item, literal_first=literal)
            i = end
            continue
        end = i  # a paragraph
        while end < len(lines) and lines[end].strip() and _indent(lines[end]) == 0 \
                and not (end > i and _RST_ITEM.match(lines[end])):
            end += 1
        para = " ".join(x.strip() for x in lines[i:end])
        literal_next = para.rstrip().endswith("::")
        text = rst_inline(para)
        if text:
            b.add(text, "para", offset + i + 1, depth=depth, lead_in=parent if depth else "")
            last = _last_sentence(text)
            lead_in = last if last.endswith(":") else parent
            list_group = None
        i = end


def _dedent_to(lines: Sequence[str], col: int) -> list[str]:
    return [ln[col:] if ln.strip() and _indent(ln) >= col else ln.strip() for ln in lines]


def _split_first_paragraph(body: list[str]) -> tuple[list[str], list[str]]:
    for k, ln in enumerate(body):
        if not ln.strip():
            return body[:k], body[k:]
    return body, []


# --------------------------------------------------------------------------- dispatch


def read_document(path: str, text: str) -> list[Block]:
    """The blocks of a document by its file name: ``.rst``/``.rest``/``.txt`` are
    reStructuredText, anything else Markdown."""
    low = path.lower()
    if low.endswith((".rst", ".rest")):
        return read_rst(text)
    return read_markdown(text)
