"""A sequence of Memory writes for the manifest log and pack properties: ``(op, arg)``
pairs, op one of add (``arg`` entries), revise, forget, reactivate (of entry ``arg``
modulo the head's entries)."""

from __future__ import annotations

from powercontext.core.models import ArtifactRef, MemoryEntryInput, MemoryRevision
from powercontext.service import MemoryService


async def write_sequence(svc: MemoryService, sequence: list[tuple[str, int]],
                 head: ArtifactRef | None, tag: str) -> tuple[ArtifactRef | None,
                                                              list[MemoryRevision]]:
    revisions: list[MemoryRevision] = []
    for n, (op, arg) in enumerate(sequence):
        if head is None or op == "add":
            head = await svc.remember(head, entries=[
                MemoryEntryInput("fact", f"{tag} note {n}.{j}") for j in range(max(1, arg))],
                mode="append")
        else:
            rev = await svc.revision(head)
            entries = list(rev.content.manifest.entries)
            e = entries[arg % len(entries)]
            if op == "revise" and e.state == "active":
                (v,) = (await svc.backend.load_entry_versions(head, [e.entry_id])).values()
                head = await svc.remember(head, entries=[
                    MemoryEntryInput("fact", f"{tag} revised {n}", entry=v)], mode="append")
            elif op == "forget":
                head = await svc.forget(head, [e.entry_id])
            elif op == "reactivate":
                head = await svc.reactivate(head, [e.entry_id])
        assert head is not None
        revisions.append(await svc.revision(head))
    return head, revisions
