"""The exact base a Memory write starts from and the plan its changes build (Memory RFC,
"Writes and lifecycle"): the checks every planner of :mod:`powercontext.core.planning`
makes on the base, the evidence and the entries it names, and the one function that
turns their manifest items, changes, versions and projection rows into a
:class:`~powercontext.core.plan.MemoryPlan` (or :data:`~powercontext.core.plan.NO_CHANGE`).
Pure: no I/O, no clock.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import attrs

from powercontext.core import analyzer as analyzers
from powercontext.core import canonical
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import InvalidInputError
from powercontext.core.manifest import ManifestView, splice
from powercontext.core.manifest import view as manifest_view
from powercontext.core.models import (
    Artifact,
    ArtifactRef,
    MemoryChange,
    MemoryContent,
    MemoryEntryVersion,
    MemoryManifestEntry,
    RevisionLineage,
    Source,
    SourceRef,
)
from powercontext.core.plan import NO_CHANGE, MemoryPlan, NoChange, ProjectionRow

__all__ = [
    "MemoryBase",
    "build_plan",
    "check_current",
    "check_evidence",
    "projection_row",
    "utf8_key",
]


@attrs.frozen(eq=False)
class MemoryBase:
    """The exact current head a write starts from.

    ``versions`` maps entry_id to the version its manifest item points to; it must hold
    every entry the operation names (remember: revised entries; reactivate: the
    reactivated ones; organize: every active entry).
    """

    ref: ArtifactRef
    content: MemoryContent
    versions: Mapping[str, MemoryEntryVersion] = attrs.field(factory=dict)

    @functools.cached_property
    def view(self) -> ManifestView:
        """The manifest's view (held by this base while it lives)."""
        return manifest_view(self.content.manifest)

    @property
    def manifest(self) -> Mapping[str, MemoryManifestEntry]:
        """entry_id -> manifest item (a read-only mapping, memoized per manifest)."""
        return self.view.as_dict


def utf8_key(entry_id: str) -> bytes:
    return entry_id.encode("utf-8")


def check_evidence(
    sources: Sequence[Source], artifacts: Sequence[Artifact], field: str
) -> tuple[tuple[SourceRef, ...], tuple[ArtifactRef, ...]]:
    for i, s in enumerate(sources):
        if not isinstance(s, Source):
            raise InvalidInputError(f"{field}sources[{i}]", "must be a persisted Source")
        canonical.check_id(s.source_id, f"{field}sources[{i}].source_id")
        if canonical.source_content_hash(s.kind, s.content, s.uri, s.metadata) != s.content_hash:
            raise InvalidInputError(
                f"{field}sources[{i}].content_hash", "does not match the Source content"
            )
    for i, a in enumerate(artifacts):
        if not isinstance(a, Artifact):
            raise InvalidInputError(f"{field}artifacts[{i}]", "must be an Artifact")
        canonical.check_id(a.ref.artifact_id, f"{field}artifacts[{i}].artifact_id")
        # 1..2**53-1: the revision is written into canonical JSON (I-JSON integers)
        canonical.check_json_int(a.ref.revision, f"{field}artifacts[{i}].revision", 1)
    return (
        canonical.sort_source_refs(s.ref for s in sources),
        canonical.sort_artifact_refs(a.ref for a in artifacts),
    )


def check_current(
    base: MemoryBase, entry: MemoryEntryVersion, field: str, want_state: str | None
) -> MemoryManifestEntry:
    """The manifest item for ``entry``; ValueError when the object is stale, unrelated,
    altered, or (with ``want_state``) in another state."""
    if not isinstance(entry, MemoryEntryVersion):
        raise InvalidInputError(field, "must be a MemoryEntryVersion")
    item = base.view.get(entry.entry_id)
    if entry.memory_artifact_id != base.ref.artifact_id or item is None:
        raise InvalidInputError(field, f"entry {entry.entry_id!r} is not in this Memory")
    if item.entry_version_id != entry.entry_version_id:
        raise InvalidInputError(
            field, f"entry {entry.entry_id!r} is stale: the head holds {item.entry_version_id!r}"
        )
    if item.entry_content_hash != entry.entry_content_hash or not canonical.version_hash_ok(entry):
        raise InvalidInputError(
            field, f"entry {entry.entry_id!r} does not match its stored content"
        )
    stored = base.versions.get(entry.entry_id)
    if stored is not None and stored != entry:
        raise InvalidInputError(field, f"entry {entry.entry_id!r} differs from the stored version")
    if want_state is not None and item.state != want_state:
        raise InvalidInputError(field, f"entry {entry.entry_id!r} is {item.state}")
    return item


def projection_row(v: MemoryEntryVersion, analyzer: Analyzer | None) -> ProjectionRow:
    return ProjectionRow(
        v.entry_id,
        v.entry_version_id,
        v.entry_content_hash,
        (analyzer or analyzers.get()).searchable_text(v.text),
        v.text,
    )


def build_plan(
    base: MemoryBase | None,
    artifact_id: str,
    items: dict[str, MemoryManifestEntry],
    changes: list[MemoryChange],
    new_versions: list[MemoryEntryVersion],
    upserts: list[ProjectionRow],
    lineage: RevisionLineage,
    evidence_artifacts: tuple[Artifact, ...] = (),
) -> MemoryPlan | NoChange:
    if not changes:
        return NO_CHANGE
    new_view = splice(base.view if base is not None else None, items)
    content = MemoryContent(
        manifest=new_view.manifest,
        changes=tuple(sorted(changes, key=lambda c: utf8_key(c.entry_id))),
    )
    return MemoryPlan.hashed(
        artifact_id=artifact_id,
        base=base.ref if base is not None else None,
        revision=base.ref.revision + 1 if base is not None else 1,
        content=content,
        lineage=lineage,
        new_versions=tuple(sorted(new_versions, key=lambda v: utf8_key(v.entry_id))),
        upserts=tuple(sorted(upserts, key=lambda r: utf8_key(r.entry_id))),
        deletes=tuple(sorted((c.entry_id for c in changes if c.op == "deactivate"), key=utf8_key)),
        evidence_artifacts=evidence_artifacts,
    )
