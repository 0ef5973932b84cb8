"""The data of the Memories pages (issue 17), as JSON-ready dicts: pagination, grouping
by kind, the Revision timeline (Memory RFC, "changes()"), the diff of two Revisions,
an entry's version chain and the plots. Helpers of :mod:`.memories`.

Cost rule: a page never reads every entry text of a Memory. The manifest of a Revision
(ids, version ids, hashes, states: cached by the backend, Revisions are immutable) is
paged, and only the entry versions shown are read (``MemoryService.entries(ref,
ids)``). Changes are read for the Revisions shown only.

Times: a Memory Revision stores no clock. Entry and entry version ids are time-ordered
(:func:`powercontext.core.canonical.make_id`: 48 bits of milliseconds first), so a
Revision's time is the time in the newest entry version id it created (None for a
Revision that only forgot or reactivated entries), shown in UTC.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
from powercontext.core.models import (
    ArtifactRef,
    MemoryChange,
    MemoryEntryVersion,
    MemoryManifestEntry,
    MemoryRevisionChanges,
)
from powercontext.core.recall import kind_rank
from powercontext.core.shapes import to_json

__all__ = [
    "PER_PAGE",
    "PLOT_WINDOW",
    "REVISIONS_PER_PAGE",
    "count_kinds",
    "diff",
    "entry_row",
    "group_by_kind",
    "id_time_ms",
    "iso",
    "paginate",
    "plots",
    "timeline",
    "version_chain",
]

#: Entries per page of the Memory page and the diff.
PER_PAGE = 50
#: Revisions per page of the timeline.
REVISIONS_PER_PAGE = 20
#: The Memory page's plots cover at most the last this many Revisions.
PLOT_WINDOW = 30
#: A Revision's changes shown on the timeline at most (the diff shows all, paged).
MAX_CHANGES_SHOWN = 25

_CROCKFORD = {c: i for i, c in enumerate("0123456789abcdefghjkmnpqrstvwxyz")}


def id_time_ms(identifier: str | None) -> int | None:
    """The milliseconds since the epoch in a time-ordered id (``prefix`` + 26 Crockford
    base32 characters), or None when ``identifier`` is not of that form."""
    if not identifier or len(identifier) < 26:
        return None
    number = 0
    for ch in identifier[-26:]:
        digit = _CROCKFORD.get(ch)
        if digit is None:
            return None
        number = number * 32 + digit
    ms = number >> 80
    return ms if 0 < ms < 2**48 else None


def iso(ms: int | None, *, day: bool = False) -> str | None:
    """``ms`` as UTC ``YYYY-MM-DDTHH:MM:SSZ`` (``YYYY-MM-DD`` with ``day``), or None."""
    if ms is None:
        return None
    moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return moment.strftime("%Y-%m-%d" if day else "%Y-%m-%dT%H:%M:%SZ")


def paginate(total: int, page: int, per_page: int) -> dict[str, int]:
    """``{"number", "per_page", "total", "pages", "start", "stop"}`` (``start:stop``
    slices the page). InvalidInputError (field ``page``) for a page outside
    1..pages (page 1 of an empty list is valid)."""
    pages = max(1, -(-total // per_page))
    if not 1 <= page <= pages:
        raise InvalidInputError("page", f"must be in 1..{pages}")
    start = (page - 1) * per_page
    return {"number": page, "per_page": per_page, "total": total, "pages": pages,
            "start": start, "stop": min(total, start + per_page)}


_RULES_FIRST = ("constraint", "preference", "decision", "fact")


def _kind_order(kind: str) -> tuple[int, int, str]:
    known = _RULES_FIRST.index(kind) if kind in _RULES_FIRST else len(_RULES_FIRST)
    return (kind_rank(kind), known, kind)


def group_by_kind(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``[{"kind", "entries": rows of that kind}]``: the rules (constraint, preference,
    decision), then facts, then the other kinds by name, then working notes
    (:func:`powercontext.core.recall.kind_rank`); rows keep their order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["kind"], []).append(row)
    return [{"kind": k, "entries": groups[k]} for k in sorted(groups, key=_kind_order)]


def count_kinds(counts: Mapping[str | None, int]) -> list[dict[str, Any]]:
    """``[{"kind", "count"}]`` of ``counts`` (entries by kind; None, a version of
    unknown kind, is left out), in :func:`group_by_kind`'s order: the Memory page's
    kind filter."""
    known = [k for k in counts if k is not None]
    return [{"kind": k, "count": counts[k]} for k in sorted(known, key=_kind_order)]


def entry_row(version: MemoryEntryVersion, state: str) -> dict[str, Any]:
    """An entry version's shape (:func:`to_json`) with ``state`` and ``created_at``."""
    row: dict[str, Any] = to_json(version)
    row["state"] = state
    row["created_at"] = iso(id_time_ms(version.entry_version_id))
    return row


def _revision_ms(changes: Sequence[MemoryChange]) -> int | None:
    times = [id_time_ms(c.to_entry_version_id) for c in changes
             if c.op in ("add", "revise")]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _ops(changes: Sequence[MemoryChange]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in changes:
        out[c.op] = out.get(c.op, 0) + 1
    return out


def revision_summary(rc: MemoryRevisionChanges) -> dict[str, Any]:
    """``{"memory_ref", "revision", "at", "ops": {op: count}, "changes_total"}``."""
    return {"memory_ref": to_json(rc.memory_ref), "revision": rc.memory_ref.revision,
            "at": iso(_revision_ms(rc.changes)), "ops": _ops(rc.changes),
            "changes_total": len(rc.changes)}


async def timeline(svc: Any, head: ArtifactRef, page: int) -> dict[str, Any]:
    """The Revisions of one timeline page, newest first: each Revision's summary, its
    changes (the first :data:`MAX_CHANGES_SHOWN`), content hash and the Sources of its
    lineage (the operation evidence). ``{"page", "revisions": [...]}``."""
    pg = paginate(head.revision, page, REVISIONS_PER_PAGE)
    upto = head.revision - pg["start"]
    after = head.revision - pg["stop"]
    found = await svc.changes(ArtifactRef(head.artifact_id, upto), after)
    rows = []
    for rc in reversed(found):
        rev = await svc.revision(rc.memory_ref)
        row = revision_summary(rc)
        row.update(
            changes=[to_json(c) for c in rc.changes[:MAX_CHANGES_SHOWN]],
            content_hash=rev.content_hash,
            entries=len(rev.content.manifest.entries),
            lineage=to_json(rev.lineage))
        rows.append(row)
    return {"page": pg, "revisions": rows}


async def plots(svc: Any, head: ArtifactRef, active_now: int) -> dict[str, Any]:
    """The Memory page's plots over the last :data:`PLOT_WINDOW` Revisions: ``size``
    (``[revision, active entries after it]``, exact: walked back from the head's count
    through each Revision's changes) and ``revisions_per_day`` (``[UTC day, Revisions]``
    by :func:`id_time_ms` of the versions each created; one that created none counts on
    the day of the Revision before it). ``window``: ``{"from", "to"}`` Revisions."""
    after = max(0, head.revision - PLOT_WINDOW)
    found = await svc.changes(head, after)
    size: list[list[int]] = []
    active = active_now
    for rc in reversed(found):
        size.append([rc.memory_ref.revision, active])
        for c in rc.changes:
            active -= {"add": 1, "reactivate": 1, "deactivate": -1}.get(c.op, 0)
    size.reverse()
    per_day: dict[str, int] = {}
    last_day: str | None = None
    for rc in found:
        day = iso(_revision_ms(rc.changes), day=True) or last_day
        last_day = day
        if day is not None:
            per_day[day] = per_day.get(day, 0) + 1
    return {"window": {"from": after + 1, "to": head.revision},
            "size": [[str(r), n] for r, n in size],
            "revisions_per_day": [[d, n] for d, n in sorted(per_day.items())]}


def _item(item: MemoryManifestEntry | None) -> dict[str, Any] | None:
    if item is None:
        return None
    return {"entry_version_id": item.entry_version_id, "state": item.state,
            "entry_content_hash": item.entry_content_hash}


async def diff(svc: Any, artifact_id: str, older: int, newer: int,
               page: int) -> dict[str, Any]:
    """What differs between the manifests of Revisions ``older`` (0: the empty Memory)
    and ``newer``: one row per entry whose version or state differs (``status``: added,
    revised, deactivated, reactivated, or revised+state), in entry_id order, paged;
    the texts of the shown rows only (``before``/``after`` entry versions). Counts per
    status over the whole diff. ArtifactNotFoundError for a Revision outside 1..head;
    InvalidInputError (field ``from``) for ``older`` < 0."""
    if older < 0:
        raise InvalidInputError("from", "must be 0 or a Revision")
    new_rev = await svc.revision(ArtifactRef(artifact_id, newer))
    old_items: dict[str, MemoryManifestEntry] = {}
    if older > 0:
        old_rev = await svc.revision(ArtifactRef(artifact_id, older))
        old_items = {e.entry_id: e for e in old_rev.content.manifest.entries}
    rows: list[tuple[str, MemoryManifestEntry | None, MemoryManifestEntry]] = []
    counts: dict[str, int] = {}
    for e in new_rev.content.manifest.entries:
        before = old_items.get(e.entry_id)
        if before is not None and before.entry_version_id == e.entry_version_id \
                and before.state == e.state:
            continue
        if before is None:
            status = "added" if e.state == "active" else "added (inactive)"
        elif before.entry_version_id != e.entry_version_id:
            status = "revised" if before.state == e.state else f"revised, {e.state}"
        else:
            status = "deactivated" if e.state == "inactive" else "reactivated"
        counts[status] = counts.get(status, 0) + 1
        rows.append((status, before, e))
    pg = paginate(len(rows), page, PER_PAGE)
    shown = rows[pg["start"]:pg["stop"]]
    after_v = await svc.entries(new_rev.ref, [e.entry_id for _, _, e in shown])
    revised = [b.entry_id for _, b, e in shown
               if b is not None and b.entry_version_id != e.entry_version_id]
    before_v = await svc.entries(ArtifactRef(artifact_id, older), revised) if revised else {}
    out_rows = []
    for status, b, e in shown:
        out_rows.append({
            "entry_id": e.entry_id, "status": status, "from": _item(b), "to": _item(e),
            "after": to_json(after_v[e.entry_id]),
            "before": to_json(before_v[e.entry_id]) if e.entry_id in before_v else None})
    return {"from": older, "to": newer, "counts": counts, "page": pg, "rows": out_rows}


async def version_chain(svc: Any, ref: ArtifactRef, entry_id: str) -> dict[str, Any]:
    """Every version of entry ``entry_id`` up to Revision ``ref``, newest first: each
    version's shape with ``reason`` and ``op`` (from the change of the Revision that
    created it), ``citation`` (the Handoff citation at the latest Revision up to
    ``ref`` that still holds it) and ``created_at``; plus the entry's ``state`` at
    ``ref`` (forget and reactivate change the state, not the version). The chain is
    followed through ``previous_version_id``: version v was created in Revision
    ``created_in_revision``, so Revision ``created_in_revision - 1`` holds its
    predecessor. ArtifactNotFoundError for an entry not in the manifest of ``ref``."""
    rev = await svc.revision(ref)
    item = next((e for e in rev.content.manifest.entries if e.entry_id == entry_id), None)
    if item is None:
        raise ArtifactNotFoundError(
            f"no entry {entry_id!r} in Revision {ref.revision} of {ref.artifact_id!r}")
    chain = []
    at = ref
    version = (await svc.entries(ref, [entry_id]))[entry_id]
    while True:
        (rc,) = await svc.changes(ArtifactRef(ref.artifact_id, version.created_in_revision),
                                  None)
        change = next((c for c in rc.changes if c.entry_id == entry_id
                       and c.to_entry_version_id == version.entry_version_id), None)
        row: dict[str, Any] = to_json(version)
        row.update(created_at=iso(id_time_ms(version.entry_version_id)),
                   op=None if change is None else change.op,
                   reason=None if change is None else change.reason,
                   citation=to_json(svc.cite(version, at)))
        chain.append(row)
        if version.previous_version_id is None or version.created_in_revision <= 1:
            break
        at = ArtifactRef(ref.artifact_id, version.created_in_revision - 1)
        prev = (await svc.entries(at, [entry_id]))[entry_id]
        if prev.entry_version_id != version.previous_version_id:
            break  # not a chain the manifests confirm: stop rather than guess
        version = prev
    return {"entry_id": entry_id, "state": item.state, "memory_ref": to_json(ref),
            "versions": chain}
