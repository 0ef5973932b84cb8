"""Small Window and history values for the Topic stage tests (built by hand, no
backend): a Window of Markdown contents with evidence ids s1, s2, ... and a
TopicRevision standing for a selected history Topic."""

from __future__ import annotations

from powercontext.core import canonical
from powercontext.core.models import Source
from powercontext.core.topic import stages
from powercontext.core.topic.content import make_content
from powercontext.core.topic.models import TopicRef, TopicRevision
from powercontext.core.topic.processing import JournalEntry
from powercontext.core.topic.window import Window, WindowSource

SCOPE = "project:x"


def evidence(s: Source) -> str:
    return canonical.canonical_dumps(
        {"kind": s.kind, "content": s.content, "uri": s.uri,
         "metadata": dict(s.metadata)}).decode()


def window_of(*contents: str, after: int = 0, scope: str = SCOPE) -> Window:
    items = []
    for i, c in enumerate(contents, start=1):
        src = canonical.make_source(f"src_{after + i:03d}", "file", c,
                                    uri=f"file:///d/{i}.md")
        text = evidence(src)
        items.append(WindowSource(JournalEntry(scope, after + i, src), f"s{i}", text,
                                  stages.estimate_tokens(text)))
    return Window(scope, after, after + len(contents), tuple(items))


def revision(aid: str, title: str, summary: str = "S.", detail: str = "D.",
             scope: str = SCOPE) -> TopicRevision:
    return TopicRevision(scope, TopicRef(aid, 3), make_content(title, summary, detail),
                         "0" * 64, (), None, "2026-12-01T00:00:00.000000Z")
