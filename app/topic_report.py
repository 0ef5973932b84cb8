"""What Topic processing reports: each published Window (:class:`WindowOutcome`), each
run over a Scope (:class:`ProcessReport`), and what a Window's new Revisions leave out
of its Sources (TOPIC-MEMORY.md, "Size limits": never truncated silently): the
processing report's ``left_out`` and the Sources ``topic status --scope`` names.

A Source is left out when no CREATE or UPDATE of its Window cites it (``uncited``: a
NOOP, a text the provider judged already known or not worth keeping, or one that did
not fit), or when it was cited only through temporary Topics and reductions, which
shorten what they read (``condensed``: Topic Memory RFC, "Oversized Work Items and
temporary Topics"). Uncited Sources can be found again later from the lineage
(:func:`uncited_sources`); condensed ones only in the report of their Window.
"""

from __future__ import annotations

from powercontext.core.topic import content as topic_content
from powercontext.core.topic.models import TopicRef
from powercontext.core.topic.report import LeftOut, ProcessReport, WindowOutcome
from powercontext.core.topic.stages import Evolution
from powercontext.core.topic.window import Window
from powercontext.ports.topic_publisher import TopicPublisher

__all__ = ["LeftOut", "ProcessReport", "WindowOutcome", "left_out", "uncited_sources"]


def left_out(window: Window, evolution: Evolution,
             condensed: set[str]) -> tuple[LeftOut, ...]:
    """The Window's Sources no CREATE or UPDATE cites, and those cited only through
    temporary Topics, in journal order."""
    cited = {ref for c in evolution.creates for ref in c.sources}
    cited.update(ref for u in evolution.updates for ref in u.sources)
    out = []
    for s in window.sources:
        if s.ref not in cited:
            out.append(LeftOut(s.entry.position, s.ref.source_id, "uncited"))
        elif s.evidence_id in condensed:
            out.append(LeftOut(s.entry.position, s.ref.source_id, "condensed"))
    return tuple(out)


async def uncited_sources(service: TopicPublisher, scope_id: str
                          ) -> tuple[LeftOut, ...]:
    """The Sources of a Scope, up to its Cursor, that no Revision of any of its Topics
    cites (``how`` ``uncited``), in journal order: what `topic status --scope` names
    as left out. Lineage-only Sources are not counted. Reads only: the journal in pages
    and every Revision of every Topic (from each head back through ``based_on``), so
    its cost grows with the Scope. InvalidInputError naming ``scope_id`` for a bad
    id."""
    scope = topic_content.check_scope_id(scope_id)
    backend = service.backend
    (status,) = await backend.processing_status(scope)
    cited: set[str] = set()
    for head in await backend.heads(scope):
        ref: TopicRef | None = head
        while ref is not None:
            rev = await backend.get(scope, ref)
            cited.update(s.source_id for s in rev.sources)
            ref = rev.based_on
    out: list[LeftOut] = []
    after = 0
    while after < status.cursor:
        rows = await backend.scope_journal(scope, after, 1000)
        if not rows:
            break
        for row in rows:
            if row.position > status.cursor:
                break
            if not row.lineage_only and row.source.source_id not in cited:
                out.append(LeftOut(row.position, row.source.source_id, "uncited"))
        after = rows[-1].position
    return tuple(out)
