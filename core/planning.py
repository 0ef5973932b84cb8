"""Pure planners of the Memory write operations (Memory RFC, "Writes and lifecycle").

Each planner takes the exact base (its Revision, content and the entry versions it
needs), the caller's input and an id factory, and returns a :class:`MemoryPlan` or
:data:`NO_CHANGE`. No I/O, no clock: ``new_id(prefix)`` supplies fresh ids. Every
rule of the spec that can be decided from these values is decided here; the unit of
work re-validates the plan against the database inside the transaction. The base they
start from (:class:`MemoryBase`, kept here by name), its checks and the builder of the
plan are :mod:`powercontext.core.plan_base`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple

import attrs

from powercontext.core import canonical
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import (
    Artifact,
    MemoryChange,
    MemoryEntryInput,
    MemoryEntryVersion,
    MemoryManifestEntry,
    RevisionLineage,
    Source,
)
from powercontext.core.plan import MemoryPlan, NoChange, ProjectionRow
from powercontext.core.plan_base import (
    MemoryBase,
    build_plan,
    check_current,
    check_evidence,
    projection_row,
    utf8_key,
)

__all__ = [
    "ARTIFACT_PREFIX",
    "ENTRY_PREFIX",
    "VERSION_PREFIX",
    "MemoryBase",
    "NewId",
    "OrganizeStep",
    "plan_edit",
    "plan_forget",
    "plan_organize",
    "plan_reactivate",
    "plan_remember",
]

ARTIFACT_PREFIX = "mem_art_"
ENTRY_PREFIX = "mem_ent_"
VERSION_PREFIX = "mem_ver_"
NewId = Callable[[str], str]
OrganizeStep = Literal["dedupe", "normalize", "default"]


def plan_remember(
    base: MemoryBase | None,
    entries: Sequence[MemoryEntryInput],
    *,
    sources: Sequence[Source] = (),
    artifacts: Sequence[Artifact] = (),
    new_id: NewId,
    analyzer: Analyzer | None = None,
) -> MemoryPlan | NoChange:
    """Plan ``remember(mode="append")`` (Memory RFC, "remember()", "MemoryEntryInput").

    ``base=None`` creates a new Memory (an id from ``new_id("mem_art_")``). Rules: text
    NFC-trimmed to 1..8192 UTF-8 bytes; reason <= 512 code points; a new entry cites a
    subset of the operation evidence; a revision cites within the operation evidence plus
    its predecessor's and keeps the predecessor's; ``entry`` must be the exact current
    active version; one entry at most once per batch; identical new entries after the
    first, and entries identical to an active entry, are dropped; identical revised
    content is a no-op; a text holding a secret (API key, token, private key) is refused.
    Returns NO_CHANGE when nothing changes. ``analyzer`` is the database's (its
    searchable_text goes into the projection rows; None: the default analyzer).
    Raises InvalidInputError (a ValueError) naming the field.
    """
    if not entries:
        raise InvalidInputError("entries", "append needs at least one entry")
    return build_plan(base, *_remember_changes(base, entries, sources, artifacts, new_id,
                                           analyzer))


class _Changes(NamedTuple):
    artifact_id: str
    items: dict[str, MemoryManifestEntry]
    changes: list[MemoryChange]
    versions: list[MemoryEntryVersion]
    upserts: list[ProjectionRow]
    lineage: RevisionLineage
    evidence_artifacts: tuple[Artifact, ...]


def _remember_changes(
    base: MemoryBase | None,
    entries: Sequence[MemoryEntryInput],
    sources: Sequence[Source],
    artifacts: Sequence[Artifact],
    new_id: NewId,
    analyzer: Analyzer | None,
) -> _Changes:
    """The manifest items, changes, new versions and projection rows of
    :func:`plan_remember` (its rules), before the Revision is built."""
    from powercontext.core.secrets import stored_text_secret  # writes only

    op_sources, op_artifacts = check_evidence(sources, artifacts, "")
    op_s, op_a = set(op_sources), set(op_artifacts)
    artifact_id = (
        base.ref.artifact_id
        if base is not None
        else canonical.check_id(new_id(ARTIFACT_PREFIX), "memory_artifact_id")
    )
    revision = base.ref.revision + 1 if base is not None else 1
    active_hashes = base.view.active_hashes if base is not None else frozenset()
    seen_new: set[str] = set()
    touched: set[str] = set()
    items: dict[str, MemoryManifestEntry] = {}
    changes: list[MemoryChange] = []
    versions: list[MemoryEntryVersion] = []
    upserts: list[ProjectionRow] = []
    for i, candidate in enumerate(entries):
        field = f"entries[{i}]"
        if not isinstance(candidate, MemoryEntryInput):
            raise InvalidInputError(field, "must be a MemoryEntryInput")
        kind = canonical.normalize_kind(candidate.kind, f"{field}.kind")
        text = canonical.normalize_text(candidate.text, f"{field}.text")
        secret = stored_text_secret(text)
        if secret is not None:
            raise InvalidInputError(
                f"{field}.text", f"looks like a secret ({secret}); secrets are never saved"
            )
        reason = canonical.normalize_reason(candidate.reason, f"{field}.reason")
        c_sources, c_artifacts = check_evidence(candidate.sources, candidate.artifacts, f"{field}.")
        prev = candidate.entry
        if prev is None:
            if not set(c_sources) <= op_s or not set(c_artifacts) <= op_a:
                raise InvalidInputError(
                    f"{field}.sources", "a new entry may cite only the operation evidence"
                )
            digest = canonical.entry_content_hash(kind, text, c_sources, c_artifacts)
            if digest in seen_new or digest in active_hashes:
                continue
            seen_new.add(digest)
            entry_id = canonical.check_id(new_id(ENTRY_PREFIX), "entry_id")
            version = MemoryEntryVersion(
                artifact_id,
                entry_id,
                canonical.check_id(new_id(VERSION_PREFIX), "entry_version_id"),
                1,
                None,
                kind,
                text,
                c_sources,
                c_artifacts,
                digest,
                revision,
            )
            change = MemoryChange("add", entry_id, None, version.entry_version_id, reason)
        else:
            if base is None:
                raise InvalidInputError(f"{field}.entry", "a new Memory has no entry to revise")
            check_current(base, prev, f"{field}.entry", "active")
            if prev.entry_id in touched:
                raise InvalidInputError(
                    f"{field}.entry", f"entry {prev.entry_id!r} appears twice in one batch"
                )
            allowed_s = op_s | set(prev.sources)
            allowed_a = op_a | set(prev.artifacts)
            if not set(c_sources) <= allowed_s or not set(c_artifacts) <= allowed_a:
                raise InvalidInputError(
                    f"{field}.sources",
                    "a revision may cite only the operation evidence and its predecessor's",
                )
            new_sources = canonical.sort_source_refs((*prev.sources, *c_sources))
            new_artifacts = canonical.sort_artifact_refs((*prev.artifacts, *c_artifacts))
            digest = canonical.entry_content_hash(kind, text, new_sources, new_artifacts)
            touched.add(prev.entry_id)
            if digest == prev.entry_content_hash:
                continue
            version = MemoryEntryVersion(
                artifact_id,
                prev.entry_id,
                canonical.check_id(new_id(VERSION_PREFIX), "entry_version_id"),
                prev.version + 1,
                prev.entry_version_id,
                kind,
                text,
                new_sources,
                new_artifacts,
                digest,
                revision,
            )
            change = MemoryChange(
                "revise", prev.entry_id, prev.entry_version_id, version.entry_version_id, reason
            )
        if version.entry_id in items:
            raise InvalidInputError(field, f"id factory repeated entry id {version.entry_id!r}")
        touched.add(version.entry_id)
        items[version.entry_id] = MemoryManifestEntry(
            version.entry_id, version.entry_version_id, version.entry_content_hash, "active"
        )
        changes.append(change)
        versions.append(version)
        upserts.append(projection_row(version, analyzer))
    unique = {a.ref: a for a in artifacts}
    return _Changes(artifact_id, items, changes, versions, upserts,
                    RevisionLineage(op_sources, op_artifacts),
                    tuple(unique[r] for r in canonical.sort_artifact_refs(unique)))


def _plan_state(
    base: MemoryBase,
    entries: Sequence[MemoryEntryVersion],
    reason: str | None,
    to_state: Literal["active", "inactive"],
    analyzer: Analyzer | None,
) -> MemoryPlan | NoChange:
    if not entries:
        raise InvalidInputError("entries", "name at least one entry")
    why = canonical.normalize_reason(reason)
    seen: set[str] = set()
    items: dict[str, MemoryManifestEntry] = {}
    changes: list[MemoryChange] = []
    upserts: list[ProjectionRow] = []
    for i, entry in enumerate(entries):
        item = check_current(base, entry, f"entries[{i}]", None)
        if entry.entry_id in seen:
            raise InvalidInputError(f"entries[{i}]", f"entry {entry.entry_id!r} appears twice")
        seen.add(entry.entry_id)
        if item.state == to_state:
            continue  # idempotent
        items[item.entry_id] = attrs.evolve(item, state=to_state)
        if to_state == "inactive":
            changes.append(
                MemoryChange("deactivate", item.entry_id, item.entry_version_id, None, why)
            )
        else:
            changes.append(
                MemoryChange("reactivate", item.entry_id, None, item.entry_version_id, why)
            )
            upserts.append(projection_row(entry, analyzer))
    return build_plan(base, base.ref.artifact_id, items, changes, [], upserts, RevisionLineage())


def plan_forget(
    base: MemoryBase,
    entries: Sequence[MemoryEntryVersion],
    reason: str | None = None,
    *,
    analyzer: Analyzer | None = None,
) -> MemoryPlan | NoChange:
    """Plan ``forget()`` (Memory RFC, "forget()"): mark current entries inactive with
    ``op="deactivate"``. Already inactive entries are skipped; all inactive -> NO_CHANGE.
    A stale or unrelated entry object raises InvalidInputError."""
    return _plan_state(base, entries, reason, "inactive", analyzer)


def plan_reactivate(
    base: MemoryBase,
    entries: Sequence[MemoryEntryVersion],
    reason: str | None = None,
    *,
    analyzer: Analyzer | None = None,
) -> MemoryPlan | NoChange:
    """Plan ``reactivate()`` (Memory RFC, "reactivate()"): the same version becomes active
    again with ``op="reactivate"`` and its projection is restored; active entries are
    skipped (``analyzer``: the database's, for the restored projection). A stale or
    unrelated entry object raises InvalidInputError."""
    return _plan_state(base, entries, reason, "active", analyzer)


def plan_edit(
    base: MemoryBase,
    entries: Sequence[MemoryEntryInput],
    forget: Sequence[MemoryEntryVersion],
    *,
    reason: str | None,
    sources: Sequence[Source] = (),
    new_id: NewId,
    analyzer: Analyzer | None = None,
) -> MemoryPlan | NoChange:
    """One Revision that applies a person's edit of a Memory (an edited export): the
    ``entries`` as :func:`plan_remember` plans them (adds and revisions, its rules), and
    ``forget`` deactivated as :func:`plan_forget` does (each must be the exact current
    active version), every change with ``reason`` (Memory RFC, "remember()",
    "forget()": the same changes, committed together so that an edit lands whole or
    not at all). An entry may be revised or forgotten, not both: InvalidInputError
    naming ``forget[i]``. NO_CHANGE when nothing changes."""
    why = canonical.normalize_reason(reason)
    entries = tuple(attrs.evolve(e, reason=why) if isinstance(e, MemoryEntryInput) else e
                    for e in entries)
    parts = _remember_changes(base, entries, sources, (), new_id, analyzer)
    revised = {e.entry.entry_id for e in entries
               if isinstance(e, MemoryEntryInput) and e.entry is not None}
    seen: set[str] = set()
    for i, entry in enumerate(forget):
        item = check_current(base, entry, f"forget[{i}]", "active")
        if entry.entry_id in revised or entry.entry_id in seen:
            raise InvalidInputError(f"forget[{i}]",
                                    f"entry {entry.entry_id!r} is named twice in one edit")
        seen.add(entry.entry_id)
        parts.items[item.entry_id] = attrs.evolve(item, state="inactive")
        parts.changes.append(
            MemoryChange("deactivate", item.entry_id, item.entry_version_id, None, why))
    return build_plan(base, *parts)


def plan_organize(
    base: MemoryBase,
    *,
    steps: Sequence[OrganizeStep] = ("default",),
    new_id: NewId,
    analyzer: Analyzer | None = None,
) -> MemoryPlan | NoChange:
    """Plan ``organize()`` v1 (Memory RFC, "organize()"): exact deduplication of active
    entries, then normalization of references.

    Dedupe: active entries are exact duplicates when kind, text AND evidence (the sets of
    Source and Artifact references, compared after sorting and deduplication) are all
    equal, i.e. when their normalized content hashes are equal, the same identity the
    spec's "identical content" of remember() uses. Among duplicates the smallest UTF-8
    entry_id is kept and the others are deactivated (op "deactivate", reason "dedupe").
    Because a deactivated duplicate cites exactly the evidence of the entry kept, organize
    never loses evidence from the active head. Entries with equal kind and text but
    different evidence both stay active: merging them would revise the kept entry to
    cite evidence outside its predecessor's and the operation's, which the spec's
    revision rule forbids (organize brings no operation evidence), and would present a
    merge the spec's v1 does not do.
    Normalize: a new version (op "revise", reason "normalize") only where the sorted,
    deduplicated references differ from the stored ones.
    ``base.versions`` must hold every active entry; ``analyzer`` is the database's.
    NO_CHANGE when nothing changes."""
    wanted = set(steps) or {"default"}
    unknown = wanted - {"dedupe", "normalize", "default"}
    if unknown:
        raise InvalidInputError("steps", f"unknown organize step {sorted(unknown)[0]!r}")
    do_dedupe = bool(wanted & {"dedupe", "default"})
    do_normalize = bool(wanted & {"normalize", "default"})
    manifest = base.manifest
    active = sorted(
        (e for e in manifest.values() if e.state == "active"), key=lambda e: utf8_key(e.entry_id)
    )
    for e in active:
        v = base.versions.get(e.entry_id)
        if v is None or v.entry_version_id != e.entry_version_id:
            raise InvalidInputError("base.versions", f"missing current version of {e.entry_id!r}")
    items: dict[str, MemoryManifestEntry] = {}
    changes: list[MemoryChange] = []
    versions: list[MemoryEntryVersion] = []
    upserts: list[ProjectionRow] = []
    dropped: set[str] = set()
    if do_dedupe:
        keep: dict[tuple[object, ...], str] = {}
        for e in active:
            v = base.versions[e.entry_id]
            key = (v.kind, v.text, canonical.sort_source_refs(v.sources),
                   canonical.sort_artifact_refs(v.artifacts))
            if key in keep:
                dropped.add(e.entry_id)
                items[e.entry_id] = attrs.evolve(e, state="inactive")
                changes.append(
                    MemoryChange("deactivate", e.entry_id, e.entry_version_id, None, "dedupe")
                )
            else:
                keep[key] = e.entry_id
    if do_normalize:
        revision = base.ref.revision + 1
        for e in active:
            if e.entry_id in dropped:
                continue
            v = base.versions[e.entry_id]
            srcs = canonical.sort_source_refs(v.sources)
            arts = canonical.sort_artifact_refs(v.artifacts)
            if srcs == v.sources and arts == v.artifacts:
                continue
            digest = canonical.entry_content_hash(v.kind, v.text, srcs, arts)
            nv = MemoryEntryVersion(
                v.memory_artifact_id,
                v.entry_id,
                canonical.check_id(new_id(VERSION_PREFIX), "entry_version_id"),
                v.version + 1,
                v.entry_version_id,
                v.kind,
                v.text,
                srcs,
                arts,
                digest,
                revision,
            )
            items[e.entry_id] = MemoryManifestEntry(
                e.entry_id, nv.entry_version_id, digest, "active"
            )
            changes.append(
                MemoryChange(
                    "revise", e.entry_id, v.entry_version_id, nv.entry_version_id, "normalize"
                )
            )
            versions.append(nv)
            upserts.append(projection_row(nv, analyzer))
    return build_plan(base, base.ref.artifact_id, items, changes, versions, upserts,
                      RevisionLineage())
