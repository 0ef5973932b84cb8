"""Git-change memory candidates: a rule line replaced in a Git patch revises the entry
holding the old line when the link is certain (Memory RFC, "Source changes and
incremental evidence"; "remember()": revisions only when the link is certain)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from powercontext.core.extraction.results import ExtractionResult
from powercontext.core.extraction.rules import clean_rule
from powercontext.core.extraction.sources import RULE_FILES, evidence_uris, file_uri, root_files
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source

__all__ = ["git_change_candidates"]


def _patch_hunks(patch: str) -> list[tuple[str, list[str], list[str]]]:
    """(path, removed lines, added lines) per hunk of a unified diff."""
    hunks: list[tuple[str, list[str], list[str]]] = []
    path = ""
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            path = ""
        elif line.startswith("+++ "):
            target = line[4:].strip()
            path = target[2:] if target.startswith("b/") else ""
        elif line.startswith("@@"):
            hunks.append((path, [], []))
        elif hunks and hunks[-1][0] == path and path:
            if line.startswith("-") and not line.startswith("---"):
                hunks[-1][1].append(line[1:])
            elif line.startswith("+") and not line.startswith("+++"):
                hunks[-1][2].append(line[1:])
    return [h for h in hunks if h[0]]


def git_change_candidates(
    sources: Sequence[Source],
    current: Sequence[MemoryEntryVersion] = (),
    evidence: Mapping[str, Source] | None = None,
) -> ExtractionResult:
    """Revisions from ``git_change`` Sources (metadata ``repo``, ``base``, ``head``,
    ``paths``; content the patch). In a hunk of a rule file (AGENTS.md, CLAUDE.md, a
    contributing guide) that removes exactly one rule line and adds exactly one (a
    line :func:`~powercontext.core.extraction.rule_kinds.judge` keeps), the active entry whose
    text is the removed rule and whose evidence is that file (same ``file:`` uri) is
    revised to the added rule, citing the change (and the file's new snapshot when it
    is among ``sources``). Anything less certain proposes nothing here: the rule
    provider proposes the added rules as new entries."""
    if not any(s.kind == "git_change" for s in sources):
        return ExtractionResult()
    from powercontext.core.extraction.rule_kinds import judge

    evidence = evidence or {}
    files = root_files(sources)
    out: list[MemoryEntryInput] = []
    for g in sources:
        if g.kind != "git_change":
            continue
        repo = dict(g.metadata).get("repo")
        if not repo:
            continue
        for path, removed, added in _patch_hunks(g.content):
            if path not in RULE_FILES:
                continue
            old = [r for r in (clean_rule(x) for x in removed) if judge(r).kind]
            new = [r for r in (clean_rule(x) for x in added) if judge(r).kind]
            if len(old) != 1 or len(new) != 1 or old[0] == new[0]:
                continue
            uri = PurePosixPath(repo, path).as_uri()
            matches = [e for e in current
                       if e.text == old[0] and uri in evidence_uris(e, evidence)]
            if len(matches) != 1:
                continue
            snap = files.get(path)
            cite = (g, snap) if snap is not None and file_uri(snap) == uri else (g,)
            out.append(MemoryEntryInput(judge(new[0]).kind or matches[0].kind, new[0],
                                        entry=matches[0], sources=cite))
    return ExtractionResult(tuple(out))

