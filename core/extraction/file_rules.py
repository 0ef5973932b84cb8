"""Rules of a repository's prose contract documents (``AGENTS.md``, ``CLAUDE.md``, the
contributing guides in Markdown or reStructuredText, and the development sections of a
README): each document is read into blocks (:mod:`powercontext.core.doc_blocks`), the
blocks into sentences, and each sentence judged by its kind
(:func:`powercontext.core.extraction.rule_kinds.judge`). What is kept becomes a
constraint, preference or fact citing the file it came from; what is dropped is
returned with its reason, so a report can say what was left out and why (Memory RFC,
"Candidate generation and model-free fallback").

How sentences are formed before they are judged:

- a hard-wrapped paragraph or list item is one block; a list item of at most
  :data:`MAX_ITEM` characters is one piece, longer blocks give their sentences;
- a sentence that refers back ("This will ...", "... these files by hand", "Do not
  prefix either value ...") joins the sentence before it; the first sentence of a block
  that refers back is a fragment (its referent is in another block) and is dropped,
  except a paragraph inside a list item, which joins the item;
- a list item that continues its lead-in ("All changes need to:" / "be fully
  type-safe") is read as one sentence with it, and an item without an instruction of
  its own under an instructing lead-in ("Please avoid:") takes the lead-in along;
- a list whose items are short commands ("Build with:" / "Unix: `make`") is one entry,
  headed by its lead-in or section title;
- a sentence that introduces a shell code block ("Build the docs with:") carries that
  block's commands (at most three);
- sections about contributor process (reviews, community, releases, triage, ...) keep
  only sentences that name a command or a path.

No first-N cut: every sentence that passes is kept (in document order); they are
ranked by :attr:`~powercontext.core.extraction.rule_kinds.Verdict.score` (what an
agent needs: constraint over preference over fact, a command or path, agent topics,
an agent instruction file) only so that beyond :data:`MAX_RULES_PER_FILE` (a flood
guard, far above what a contract file holds) the lowest-ranked are the ones dropped,
with reason ``budget``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import attrs

from powercontext.core import doc_blocks, repo_docs
from powercontext.core.doc_blocks import Block
from powercontext.core.extraction.results import Dropped
from powercontext.core.extraction.rule_kinds import judge
from powercontext.core.extraction.sentence_features import (
    VERBS,
    is_dependent,
    modality,
    plain_text,
)
from powercontext.core.extraction.sources import MAX_RULES_PER_FILE

__all__ = ["AGENT_FILES", "MAX_ITEM", "MAX_RULES_PER_FILE", "RuleLine", "document_rules",
           "is_contract_heading", "is_process_heading"]

MAX_ITEM = 400
"""A list item up to this many characters is one rule; longer blocks give sentences."""
MAX_PIECE = 600
"""A sentence (or joined sentences) longer than this is not one rule."""
MAX_GROUP = 1000
"""A list that is one entry (commands, a reference list) may be this long."""
AGENT_FILES = ("AGENTS.md", "CLAUDE.md")
"""Files written for coding agents: their rules rank one step higher."""

_CONTRACT_HEADING = re.compile(
    r"contribut|develop(?:ment|ing|er)\b|hacking|build(?:ing)? from source|"
    r"running (?:the )?tests|\btesting\b|test suite|code style|coding (?:style|standards|"
    r"conventions|guidelines)|style guide|minimum supported|\bMSRV\b", re.IGNORECASE)
_PROCESS_HEADING = re.compile(
    r"communit|\bsupport\b|sponsor|funding|donat|thanks|credits|acknowledg|licen[cs]|"
    r"conduct|feedback|report(?:ing)? (?:a )?bugs?|bug reports?|feature requests?|\bissues?\b|"
    r"triag|review|champion|priorit|backport|releas|\bmerg|squash|maintainer|\bteam\b|"
    r"governance|security|getting help|questions|roadmap|propos|design guideline|"
    r"how (?:can i|to) contribute|ways to contribute|how we work|what to expect|plugins?\b|"
    r"stale|closing|\bFAQ\b|frequently asked|gone quiet|\bjoin|"
    r"\bafter (?:opening|submitting|you open|you submit)", re.IGNORECASE)


def is_contract_heading(title: str) -> bool:
    """True for a README heading of development material (contributing, development,
    building from source, running tests, code style, MSRV): the README sections rules
    are read from. A question ("What's the relationship between ...?") is not one."""
    return bool(_CONTRACT_HEADING.search(title)) and not title.rstrip().endswith("?")


def is_process_heading(title: str) -> bool:
    """True for a heading of contributor process (reviews, community, releases, issues,
    triage, sponsorship, licensing, the team): its sentences need a command or a path."""
    return bool(_PROCESS_HEADING.search(title))


@attrs.frozen
class RuleLine:
    """A kept sentence: the text to store, its kind, score and 1-based line."""

    text: str
    kind: str
    score: int
    line: int


_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")


def _clean(text: str) -> str:
    parts = re.split(r"(`[^`]*`)", text)
    text = "".join(p if p.startswith("`") else _BOLD.sub(lambda m: m.group(1) or m.group(2), p)
                   for p in parts)
    return " ".join(text.split())


def _with_code(text: str, code: Sequence[str]) -> str:
    """``text`` carrying the commands of the code block it introduces: a sentence that
    ends in ``:`` or an instruction without a full stop ("Install all dependencies");
    a caption ("Running example") or a finished sentence does not carry them."""
    if not code:
        return text
    if not text.rstrip().endswith(":") and (
            text.rstrip().endswith((".", "!", "?", ")")) or modality(text) == "description"):
        return text
    cmds = "; ".join(f"`{c}`" for c in code)
    return f"{text.rstrip(':').rstrip()}: {cmds}"


def _is_command_item(raw: str) -> bool:
    """A list item that is a command: it starts with code, or is a short label and code
    ("Windows: `go run build.go`"), or little besides its code."""
    text = plain_text(raw)
    if not re.search(r"`[^`]+`", text) or len(text) > 160:
        return False
    words = re.sub(r"`[^`]*`", " ", text).split()
    return text.startswith("`") or len(words) <= 3 or bool(
        re.match(r"^[\w \-/+.]{1,40}:\s*`", text))


def _label_lead(lead: str) -> bool:
    return lead.endswith(":") and len(lead.split()) <= 4


def _grouped(blocks: Sequence[Block]) -> dict[int, list[Block]]:
    """Lists that are one entry: items that are mostly short commands ("Build with:" /
    "Unix: `make`"), a reference list whose every item starts with code ("`pkg` in
    `dir/`: ..."), or short labels under a short label lead-in ("Prerequisites:" /
    "Go 1.22+")."""
    by_group: dict[int, list[Block]] = {}
    for b in blocks:
        if b.kind == "item" and b.depth == 0:
            by_group.setdefault(b.group, []).append(b)
    out: dict[int, list[Block]] = {}
    for g, items in by_group.items():
        lead = items[0].lead_in
        commands = sum(_is_command_item(b.text) for b in items)
        labels = _label_lead(lead) and all(
            len(plain_text(b.text)) <= 60 and not (
                b.text.split(" ", 1)[0].lower() in VERBS and len(b.text.split()) >= 3)
            for b in items)
        reference = len(items) >= 2 and all(plain_text(b.text).startswith("`") for b in items)
        if (len(items) >= 2 and commands * 2 >= len(items) + 1
                and all(_is_command_item(b.text) or len(plain_text(b.text)) <= 40
                        for b in items)) or labels or reference:
            out[g] = items
    return out


def _item_text(b: Block) -> str:
    """A list item read with its lead-in when it continues it or has no instruction of
    its own under an instructing lead-in."""
    lead = b.lead_in
    if not lead or b.kind != "item":
        return b.text
    if lead.endswith(":") and b.text[:1].islower() and len(lead) <= 100:
        return f"{lead[:-1].rstrip()} {b.text}"
    if lead.endswith(":") and modality(b.text) == "description" \
            and modality(lead) in ("constraint", "preference") and len(lead) <= 60:
        return f"{lead} {b.text}"
    return b.text


def _join(first: str, then: str) -> str:
    end = "" if first.rstrip().endswith((".", "!", "?", ":", ";")) else "."
    return f"{first.rstrip()}{end} {then}"


def _pieces(text: str, is_item: bool) -> list[str]:
    if is_item and len(text) <= MAX_ITEM:
        return [text]
    return repo_docs.sentences(text)




def document_rules(path: str, text: str, *, contract_sections_only: bool = False,
                   project: frozenset[str] = frozenset(),
                   ) -> tuple[list[RuleLine], list[Dropped]]:
    """The rules of one document (``path`` picks Markdown or reStructuredText) and the
    sentences dropped with their reasons. ``contract_sections_only``: read only the
    sections under a development heading (:func:`is_contract_heading`), as for a
    README; ``project``: the project's own names, lowercased (they name no tool). Kept
    rules are in document order; when more than :data:`MAX_RULES_PER_FILE` pass, the
    lowest-ranked (score, then position) are dropped with reason ``budget``."""
    blocks = doc_blocks.read_document(path, text)
    if contract_sections_only:
        blocks = [b for b in blocks if any(is_contract_heading(t) for t in b.section)]
    weight = 1 if path.rpartition("/")[2] in AGENT_FILES else 0
    grouped = _grouped(blocks)
    pending: list[list[Any]] = []  # [text, block] in document order, joined in place
    dropped: list[Dropped] = []
    parent: int | None = None  # index in pending of the last piece of the last item
    done_groups: set[int] = set()
    for b in blocks:
        if b.kind == "item" and b.group in grouped:
            if b.group not in done_groups:
                done_groups.add(b.group)
                items = grouped[b.group]
                head = items[0].lead_in.rstrip(":").rstrip() or (
                    b.section[-1] if b.section else "")
                body = "; ".join(_with_code(i.text.rstrip("."), i.code) for i in items)
                pending.append([f"{head}: {body}." if head else f"{body}.", b])
            parent = None
            continue
        if b.kind in ("table", "image"):
            dropped.append(Dropped(path, b.line, b.text, "navigation"))
            continue
        child = b.kind == "para" and b.depth > 0 and parent is not None
        pieces: list[str] = []
        for sentence in _pieces(_item_text(b), b.kind == "item"):
            if not is_dependent(sentence):
                pieces.append(sentence)
            elif pieces:
                pieces[-1] = _join(pieces[-1], sentence)
            elif child and parent is not None:
                pending[parent][0] = _join(pending[parent][0], sentence)
            else:
                dropped.append(Dropped(path, b.line, _clean(sentence), "fragment"))
        if b.code and pieces:
            pieces[-1] = _with_code(pieces[-1], b.code)
        pending.extend([p, b] for p in pieces)
        if b.kind == "item" or child:
            parent = len(pending) - 1 if pieces else parent
        elif b.depth == 0:
            parent = None
    kept: list[tuple[RuleLine, int]] = []
    for order, (raw, block) in enumerate(pending):
        piece = _clean(raw)
        if not 12 <= len(piece) <= (MAX_GROUP if block.group in grouped else MAX_PIECE):
            dropped.append(Dropped(path, block.line, piece, "not a rule"))
            continue
        if piece.count("`") % 2:
            dropped.append(Dropped(path, block.line, piece, "fragment"))
            continue
        process = any(is_process_heading(t) for t in block.section)
        v = judge(piece, kind=block.kind, weight=weight, project=project, process=process)
        if v.kind is None:
            dropped.append(Dropped(path, block.line, piece, v.reason or "not a rule"))
            continue
        kept.append((RuleLine(piece, v.kind, v.score, block.line), order))
    ranked = sorted(kept, key=lambda ro: (-ro[0].score, ro[1]))
    within = {order for _, order in ranked[:MAX_RULES_PER_FILE]}
    out = [r for r, order in kept if order in within]
    for r, _ in ranked[MAX_RULES_PER_FILE:]:
        dropped.append(Dropped(path, r.line, r.text, "budget"))
    dropped.sort(key=lambda d: d.line)
    return out, dropped
