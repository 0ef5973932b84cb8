"""Contract-topic memory candidates: ``pyproject.toml``/``setup.cfg`` (build backend,
dependency manager, Python requirement, pytest configuration), ``Makefile`` targets,
``justfile`` recipes, ``tox.ini`` environments, ``noxfile.py`` sessions,
``package.json`` scripts, ``Cargo.toml`` (edition, rust-version), ``go.mod`` (go
version, toolchain), ``.pre-commit-config.yaml`` and ``scripts/`` entry points become
a handful of topic entries (:mod:`.contract_topics`), not one per file (Memory RFC,
"Candidate generation and model-free fallback", "Source changes and incremental
evidence")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from powercontext.core.extraction.results import ExtractionResult
from powercontext.core.extraction.sources import (
    CONTRACT_FILES,
    changed_uris,
    evidence_uris,
    file_uri,
    root_files,
    unique_sources,
)
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source

__all__ = ["TOPIC_LABELS", "contract_candidates", "topic_label"]

TOPIC_LABELS = ("Build and dependencies", "Python requirement", "Node requirement",
                "Rust requirement", "Go requirement", "Test command", "Verification commands")
"""The topic prefixes of the contract entries; an entry's label names its topic
(:mod:`.contract_topics` builds them, imported when a contract file is read)."""


def topic_label(text: str) -> str | None:
    """The topic label a contract entry's text starts with, or None."""
    head, sep, _ = text.partition(":")
    return head if sep and head in TOPIC_LABELS else None


def _generated_from_evidence(entry: MemoryEntryVersion, label: str,
                             evidence: Mapping[str, Source]) -> bool:
    """True when ``entry`` still holds exactly the text this provider derives from its
    cited Sources: it was not corrected by hand, so replacing it loses nothing."""
    cited = [evidence[r.source_id] for r in entry.sources if r.source_id in evidence]
    files = root_files(cited)
    if not any(n in files for n in CONTRACT_FILES):
        return False
    from powercontext.core.extraction.contract_topics import contract_topics

    return any(t.label == label and t.text == entry.text for t in contract_topics(files, []))


def contract_candidates(
    sources: Sequence[Source],
    current: Sequence[MemoryEntryVersion] = (),
    evidence: Mapping[str, Source] | None = None,
) -> ExtractionResult:
    """Topic entries from the contract files among ``sources`` (root-level file Sources
    named in :data:`CONTRACT_FILES`, with agent instruction files and README.md as
    supporting mentions). ``current`` are the active entries; ``evidence`` maps their
    source ids to the stored Sources. A topic whose text equals an active entry is not
    proposed. It revises the one active entry with the same topic label only when the
    link is certain: that entry's evidence is a file among the candidate's Sources (same
    ``file:`` uri) or a path a Git change in ``sources`` names, and its text is still
    what this provider derives from its cited Sources (a hand-corrected entry is never
    overwritten). Otherwise it is a new entry."""
    files = root_files(sources)
    notes: list[str] = []
    if not any(n in files for n in CONTRACT_FILES):
        return ExtractionResult()
    from powercontext.core.extraction.contract_topics import contract_topics

    topics = contract_topics(files, notes)
    evidence = evidence or {}
    texts = {e.text for e in current}
    changed = changed_uris(sources)
    git_sources = [s for s in sources if s.kind == "git_change"]
    out: list[MemoryEntryInput] = []
    for topic in topics:
        if topic.text in texts:
            continue
        same_label = [e for e in current if topic_label(e.text) == topic.label]
        cand_uris = {u for u in (file_uri(s) for s in topic.sources) if u}
        linked = [e for e in same_label if evidence_uris(e, evidence) & (cand_uris | changed)
                  and _generated_from_evidence(e, topic.label, evidence)]
        if len(linked) == 1 and len(same_label) == 1:
            touching = [g for g in git_sources
                        if evidence_uris(linked[0], evidence) & changed_uris([g])]
            out.append(MemoryEntryInput(topic.kind, topic.text, entry=linked[0],
                                        sources=unique_sources((*topic.sources, *touching))))
        else:
            out.append(MemoryEntryInput(topic.kind, topic.text, sources=topic.sources))
    return ExtractionResult(tuple(out), (), tuple(notes))

