"""The seed of the dashboard's Evidence, Topics and Processing page tests
(tests/unit/test_dashboard_evidence_topics.py on SQLite,
tests/adapters/test_dashboard_more_oceanbase.py on seekdb): one Memory whose entry
cites a Source holding a ``<script>``, a Topic of two Revisions (the second citing a
second Source) whose Markdown carries a script, a ``javascript:`` link and an
``onerror=`` image, and a Scope stuck at a terminal budget frontier."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from powercontext import MemoryService
from powercontext.core import canonical
from powercontext.core.models import MemoryEntryInput, SourceRef
from powercontext.topic_service import TopicMemoryService

__all__ = ["DETAIL", "ORIGIN", "QSCOPE", "SCOPE", "TERMINAL", "TOKEN", "XSS", "seed"]

SCOPE = "repo:/work/x y"
QSCOPE = quote(SCOPE, safe="")
TERMINAL = "project:stuck"
TOKEN = "dash-token"
XSS = "<script>alert('pwned')</script>"
DETAIL = ("## Steps\n\nTag the commit.\n\n" + XSS + "\n\n[click](javascript:alert(1)) "
          "[ok](https://example.org/x)\n\n<img src=x onerror=alert(1)>\n")
ORIGIN = {"Origin": "http://testserver"}


async def seed(memory_backend: Any, topic_backend: Any) -> dict[str, Any]:
    """Write the seed through the services; returns the Memory ref and both Topic
    Revisions (``memory``, ``r1``, ``r2``). Closes both backends."""
    memory = MemoryService(memory_backend)
    topic = TopicMemoryService(topic_backend)
    s1 = canonical.make_source("src_dash_1", "user_note", "evidence " + XSS,
                               metadata={"path": "<b>a.py</b>"})
    s2 = canonical.make_source("src_dash_2", "user_note", "second source")
    s3 = canonical.make_source("src_dash_3", "user_note", "terminal scope source")
    await topic.add_sources(SCOPE, [s1, s2])
    await topic.add_sources(TERMINAL, [s3])
    ref = await memory.remember(None, sources=[s1], entries=[
        MemoryEntryInput("fact", "entry text " + XSS, sources=(s1,))], mode="append")
    (r1,) = await topic.publish(SCOPE, creates=[(
        {"title": "Release " + XSS, "summary": "How we release", "detail": DETAIL},
        [SourceRef(s1.source_id, s1.content_hash)])])
    (r2,) = await topic.publish(SCOPE, updates=[(r1.ref, {
        "title": "Release process", "summary": "How we release now",
        "detail": DETAIL + "\nThen push.\n"},
        [SourceRef(s1.source_id, s1.content_hash), SourceRef(s2.source_id, s2.content_hash)])])
    grant = await topic.backend.begin_attempt(TERMINAL, 0)
    await topic.backend.record_failure(grant, "source_complexity_limit")
    await memory.close()
    await topic.close()
    return {"memory": ref, "r1": r1, "r2": r2}
