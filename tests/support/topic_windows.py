"""Small Window and history values for the Topic stage tests (built by hand, no
backend): a Window of Markdown contents with evidence ids s1, s2, ... and a
TopicRevision standing for a selected history Topic."""

from __future__ import annotations

from typing import Any

from powercontext.core import canonical
from powercontext.core.topic.content import make_content
from powercontext.core.topic.models import TopicRef, TopicRevision
from powercontext.core.topic.processing import JournalEntry, ProcessingSettings
from powercontext.core.topic.window import Window, select_window

SCOPE = "project:x"


def window_of(*contents: str, after: int = 0, scope: str = SCOPE,
              settings: ProcessingSettings | None = None) -> Window:
    """The Window :func:`select_window` makes of Sources with these contents at
    positions ``after + 1, ...`` (ids ``src_001``, ...)."""
    entries = [JournalEntry(scope, after + i,
                            canonical.make_source(f"src_{after + i:03d}", "file", c,
                                                  uri=f"file:///d/{i}.md"))
               for i, c in enumerate(contents, start=1)]
    window = select_window(entries, after, settings or ProcessingSettings())
    assert isinstance(window, Window)
    return window


def revision(aid: str, title: str, summary: str = "S.", detail: str = "D.",
             scope: str = SCOPE) -> TopicRevision:
    return TopicRevision(scope, TopicRef(aid, 3), make_content(title, summary, detail),
                         "0" * 64, (), None, "2026-12-01T00:00:00.000000Z")


def schema_objects(schema: Any) -> list[dict[str, Any]]:
    """Every JSON Schema object node (``"type": "object"``) inside ``schema``, depth
    first: the stage-schema tests check each is strict."""
    out = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            out.append(schema)
        for v in schema.values():
            out.extend(schema_objects(v))
    elif isinstance(schema, list):
        for v in schema:
            out.extend(schema_objects(v))
    return out
