"""A Memory as a Markdown file a person edits and a team reviews (``memory export`` and
``memory apply``): :func:`export_text` renders one Revision
(:func:`powercontext.core.memory_markdown.render`), :func:`plan_file` reads an edited
export back against the Revision it names and :func:`apply_file` commits it as one
Revision through :meth:`MemoryService.edit` (Memory RFC, "remember()", "forget()").

The edit's evidence is the edited file itself, persisted as a ``user_edit`` Source
(metadata: the Memory, the Revision and the file's name): every entry the edit adds or
revises cites it (a revision keeps its predecessor's evidence too), so the Memory
records what the person wrote, and ``source show`` prints it.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

import attrs

from powercontext.core import canonical, memory_markdown
from powercontext.core.errors import InvalidInputError, RevisionConflictError
from powercontext.core.models import ArtifactRef, MemoryEntryInput, Source
from powercontext.service import MemoryService

__all__ = ["FilePlan", "apply_file", "edit_source", "export_text", "plan_file"]

#: The reason every change of an applied file records.
EDIT_REASON = "user_edit"


async def export_text(service: MemoryService, ref: ArtifactRef) -> tuple[str, int]:
    """``(Markdown, number of active entries)`` of Revision ``ref``; the same Revision
    always gives the same text. ArtifactNotFoundError for an unknown Memory or
    Revision."""
    rev = await service.revision(ref)
    active = [e.entry_id for e in rev.content.manifest.entries if e.state == "active"]
    versions = await service.entries(ref, active) if active else {}
    ids = sorted({s.source_id for v in versions.values() for s in v.sources})
    sources = await service.backend.get_sources(ids) if ids else ()
    labels = {s.source_id: memory_markdown.source_label(s) for s in sources}
    text = memory_markdown.render(ref.artifact_id, ref.revision, rev.content_hash,
                                  list(versions.values()), labels)
    return text, len(versions)


@attrs.frozen
class FilePlan:
    """An edited export read against its Revision: ``base`` (the Revision the file
    names, the current head), the :class:`~powercontext.core.memory_markdown.EditPlan`
    and the ``user_edit`` ``source`` its changes cite."""

    base: ArtifactRef
    plan: memory_markdown.EditPlan
    source: Source


def edit_source(text: str, base: ArtifactRef, where: str) -> Source:
    """The ``user_edit`` Source holding the edited file ``text`` (metadata: ``memory``,
    ``revision`` and ``file``, the file's name without its directory); its id is its
    content hash, so the same edit is one Source."""
    meta = {"memory": base.artifact_id, "revision": str(base.revision),
            "file": PurePath(where).name or "-"}
    digest = canonical.source_content_hash("user_edit", text, None,
                                           tuple(sorted(meta.items())))
    return canonical.make_source(f"src_{digest[:40]}", "user_edit", text, None, meta)


async def plan_file(service: MemoryService, text: str, where: str) -> FilePlan:
    """Read the edited export ``text`` (``where`` names it in errors) against the
    Revision its header names. RevisionConflictError when the Memory's head is not that
    Revision (the file is older: export again and redo the edit; nothing is merged);
    ArtifactNotFoundError for an unknown Memory; InvalidInputError naming ``where`` (and
    the line) for a file that is not an export, names entries the Revision does not
    hold, or names a Revision whose content hash differs (another database); a
    SecretDetectedError naming ``where`` and the line when the file holds a secret."""
    from powercontext.core.secrets import source_findings

    parsed = memory_markdown.parse(text, where)
    canonical.check_id(parsed.memory_id, f"{where}: the export line's Memory")
    head = await service.head(parsed.memory_id)
    base = ArtifactRef(parsed.memory_id, parsed.revision)
    if head.revision != parsed.revision:
        newer = head.revision - parsed.revision
        raise RevisionConflictError(
            f"{where} was exported from {base.artifact_id}@{base.revision}, and the Memory "
            f"is now at Revision {head.revision}"
            + (f" ({newer} newer Revision{'s' if newer != 1 else ''})" if newer > 0 else "")
            + ": nothing was applied. Export the Memory again and redo the edit on the new "
            "file (`powercontext memory changes "
            f"{base.artifact_id} --since {base.revision}` lists what changed)")
    rev = await service.revision(base)
    if rev.content_hash != parsed.content_hash:
        raise InvalidInputError(where, f"names {base.artifact_id}@{base.revision} with "
                                "another content hash than this database holds: it was "
                                "exported from another database")
    active = [e.entry_id for e in rev.content.manifest.entries if e.state == "active"]
    versions = await service.entries(base, active) if active else {}
    plan = memory_markdown.plan_edits(parsed, versions, where)
    source = edit_source(text, base, where)
    for field, found in source_findings(source, service.secret_scanner.scan)[:1]:
        from powercontext.core.errors import SecretDetectedError

        raise SecretDetectedError(where + ("" if field == "content" else f" ({field})"),
                                  found.rule, found.description, found.line)
    return FilePlan(base, plan, source)


async def apply_file(service: MemoryService, planned: FilePlan) -> ArtifactRef:
    """Commit a :func:`plan_file` result as one Revision (every change with reason
    ``user_edit``, the edit's Source as evidence of the entries it adds and revises);
    the head itself when the file changes nothing. RevisionConflictError when another
    writer moved the head since the file was read."""
    plan = planned.plan
    if plan.empty:
        return planned.base
    inputs: list[Any] = [
        MemoryEntryInput(kind=kind, text=text, entry=current, sources=(planned.source,))
        for current, kind, text in plan.revise]
    inputs += [MemoryEntryInput(kind=kind, text=text, sources=(planned.source,))
               for kind, text in plan.add]
    return await service.edit(planned.base, inputs, plan.forget, reason=EDIT_REASON,
                              sources=(planned.source,) if inputs else ())
