"""Every method of every port says what it implements (STYLE.md: public docstrings give
shapes, units, errors and the spec section).

Each method and property of each Protocol in :mod:`powercontext.ports` (and its
:mod:`~powercontext.ports.extraction`) has its own
docstring that cites a section of the Memory RFC by its title (or, for business keys,
ARCHITECTURE.md's decision) and names its errors (an ``...Error``) or says that it never
raises. The titles are the spec's section headings as written.
"""

from __future__ import annotations

import inspect
import re
from typing import Protocol

import pytest

from powercontext import ports
from powercontext.ports import extraction

#: Section headings of the Memory RFC (spec/memory-rfc.txt) a port may cite.
MEMORY_RFC_SECTIONS = frozenset({
    "Code structure and abstraction boundaries",
    "Memory identity",
    "Task events and extraction boundaries",
    "Memory admission rules",
    "Candidate generation and model-free fallback",
    "Source changes and incremental evidence",
    "Core invariants",
    "Data model",
    "Writes and lifecycle",
    "Revision and entry lineage",
    "Concurrency and transactions",
    "Search and reads",
    "Backend capabilities",
    "changes()",
    "expand()",
    "Handoff citation",
    "Storage abstraction and physical model",
    "Vector integrity and offline rebuilds",
    "Normalization, hashing, and the search analyzer",
})


def _protocols() -> list[type]:
    return [getattr(module, name) for module in (ports, extraction) for name in module.__all__
            if Protocol in getattr(getattr(module, name), "__mro__", ())]


def _methods() -> list[tuple[str, object]]:
    out = []
    for proto in _protocols():
        for name, member in vars(proto).items():
            if name.startswith("_"):
                continue
            fn = member.fget if isinstance(member, property) else member
            if callable(fn):
                out.append((f"{proto.__name__}.{name}", fn))
    return out


def cited_sections(doc: str) -> set[str]:
    """The Memory RFC section titles ``doc`` cites: ``Memory RFC, "Title"`` and the
    further titles of the same citation (``"A", "B"`` or ``"A" and "B"``)."""
    text = " ".join(doc.split())
    found = set()
    for m in re.finditer(r'(?<!Topic )Memory RFC, ((?:"[^"]+"(?:, | and |; )?)+)', text):
        found |= set(re.findall(r'"([^"]+)"', m.group(1)))
    return found


def test_every_protocol_is_covered():
    names = {p.__name__ for p in _protocols()}
    assert names == {"CandidatePipeline", "CandidateProvider", "EmbeddingModel", "EntryKinds",
                     "GenerationModel", "MemoryBackend",
                     "MemoryInventory",
                     "MemoryRebuild", "MemoryUnitOfWork", "SecretScanner", "SourceCitations",
                     "SourceStore"}
    assert len(_methods()) >= 25


@pytest.mark.parametrize(("name", "fn"), _methods(), ids=[n for n, _ in _methods()])
def test_every_port_method_cites_its_section_and_its_errors(name, fn):
    doc = inspect.getdoc(fn)
    assert doc, f"{name} has no docstring"
    cited = cited_sections(doc)
    keys = 'ARCHITECTURE.md, Decisions: "Keys live in the database"' in " ".join(doc.split())
    topic = "Topic Memory RFC, \"" in " ".join(doc.split())
    assert cited or keys or topic, f"{name} cites no Memory RFC section"
    assert cited <= MEMORY_RFC_SECTIONS, f"{name} cites {cited - MEMORY_RFC_SECTIONS}"
    flat = " ".join(doc.split())
    assert re.search(r"[A-Z]\w*Error\b|[Nn]ever raises|[Aa]ny exception", flat), (
        f"{name} names no error")


def test_the_citation_reader():
    assert cited_sections('x (Memory RFC, "changes()") y') == {"changes()"}
    assert cited_sections('Memory RFC, "A", "B" and "C"; x "D"') == {"A", "B", "C"}
    assert cited_sections('Memory RFC,\n  "Split title"') == {"Split title"}
    assert cited_sections("no citation") == set()
