"""The Memories pages of the dashboard (issue 17; Memory RFC, "Search and reads",
"changes()", "expand()", "Handoff citation"). Every page has its JSON twin
(``?format=json``: the ``data`` dict each route builds, documented per route).

- ``GET /ui/`` -> 303 ``/ui/memories``.
- ``GET /ui/memories[?page=]``: every Memory (keys, id, head Revision, active entries,
  the last change), 50 per page.
- ``GET /ui/memories/{artifact_id}[?state=active|inactive|all&page=&q=&mode=&limit=]``:
  the head's entries grouped by kind, newest first, 50 per page (only the shown
  versions are read); with ``q`` a search of the head (``mode`` fts, vector, hybrid or
  auto; the mode that ran is shown); plots of the Memory size and Revisions over time.
- ``GET /ui/memories/{artifact_id}/entries/{entry_id}[?revision=]``: the version chain
  (text, reason, evidence, Handoff citation with copy and validate).
- ``POST /ui/citations/validate`` (same-origin): form field ``citation`` (the JSON of a
  Handoff citation) or a JSON body that is one.
- ``GET /ui/memories/{artifact_id}/revisions[?page=]``: the Revision timeline.
- ``GET /ui/memories/{artifact_id}/diff?from=R1&to=R2[&page=]``: a diff of two Revisions.

Errors: an unknown Memory, entry or Revision is 404, a bad parameter 422 (HTML error
page; the JSON twin gets the API's error body).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Literal
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse, Response

from powercontext.core import canonical
from powercontext.core.errors import (
    CapabilityNotSupportedError,
    InvalidCitationError,
    InvalidInputError,
)
from powercontext.core.models import ArtifactRef, CurrentHead, MemoryRevisionChanges
from powercontext.core.recall import kind_rank
from powercontext.core.shapes import citation_from_json, to_json
from powercontext.entrypoints.http.dashboard import memory_data as md
from powercontext.entrypoints.http.dashboard.web import page, same_origin, viewer, wants_json
from powercontext.entrypoints.http.deps import services
from powercontext.entrypoints.http.errors import ApiError
from powercontext.ports import EntryKinds

__all__ = ["router"]

router = APIRouter(include_in_schema=False, dependencies=[Depends(viewer)])

#: Hits a dashboard search shows at most (the service allows 1..1024).
MAX_HITS = 200
_PAGE = Query(1, ge=1, le=10**9)


def _memory(request: Request) -> Any:
    svc = services(request).memory
    if svc is None:
        raise ApiError(503, "backend_unavailable", "this server has no Memory service")
    return svc


def _id(value: str, field: str) -> str:
    try:
        return canonical.check_id(value, field)
    except InvalidInputError as exc:
        raise ApiError(422, "invalid_input", str(exc), field=field) from exc


@router.get("/ui")
@router.get("/ui/")
async def home() -> RedirectResponse:
    """303 to ``/ui/memories``."""
    return RedirectResponse("/ui/memories", status_code=303)


@router.get("/ui/memories")
async def memory_list(request: Request, page_no: int = Query(1, ge=1, alias="page")
                      ) -> Response:
    """Every Memory, by artifact id: ``{"memories": [{"artifact_id", "keys",
    "memory_ref", "active_entries", "entries", "last_change": {"memory_ref",
    "revision", "at", "ops", "changes_total"}}], "page", "sources",
    "analyzer_version", "writes_paused"}``."""
    svc = _memory(request)
    inv = await svc.inventory()
    heads = inv["heads"]
    pg = md.paginate(len(heads), page_no, md.PER_PAGE)
    keys = await svc.keys_by_memory()
    rows = []
    for head in heads[pg["start"]:pg["stop"]]:
        rev = await svc.revision(head)
        items = rev.content.manifest.entries
        rows.append({
            "artifact_id": head.artifact_id, "keys": keys.get(head.artifact_id, []),
            "memory_ref": to_json(head),
            "active_entries": sum(1 for e in items if e.state == "active"),
            "entries": len(items),
            "last_change": md.revision_summary(
                MemoryRevisionChanges(head, rev.content.changes))})
    data = {"memories": rows, "page": pg, "sources": inv["sources"],
            "analyzer_version": inv.get("analyzer_version"),
            "writes_paused": bool(inv.get("writes_paused"))}
    return page(request, "memories.html", data, title="Memories")


async def _search(svc: Any, artifact_id: str, q: str, mode: str,
                  limit: int) -> dict[str, Any]:
    """``{"query", "requested_mode", "mode", "fallback_reason", "hits" (MemoryHit
    shapes with ``rank``, in rank order), "error"}``: the search of the head, or why it
    could not run (``error``: the API's error body, with ``status``, of an unavailable
    mode or a query over the bounds)."""
    out: dict[str, Any] = {"query": q, "requested_mode": mode, "mode": None,
                           "fallback_reason": None, "hits": [], "error": None}
    try:
        result = await svc.search(q, [CurrentHead(artifact_id)], limit=limit,
                                  mode=mode)  # type: ignore[arg-type]
    except (CapabilityNotSupportedError, InvalidInputError) as exc:
        from powercontext.entrypoints.http.errors import error_body, status_for

        status, code, message, field = status_for(exc)
        out["error"] = dict(error_body(code, message, field)["error"], status=status)
        return out
    shaped = to_json(result)
    for rank, hit in enumerate(shaped["hits"], 1):
        hit["rank"] = rank
    out.update(mode=shaped["mode"], fallback_reason=shaped["fallback_reason"],
               hits=shaped["hits"])
    return out


@router.get("/ui/memories/{artifact_id}")
async def memory_page(
    request: Request, artifact_id: str, page_no: int = Query(1, ge=1, alias="page"),
    state: Literal["active", "inactive", "all"] = "active",
    kind: str | None = Query(None, min_length=1, max_length=64),
    entry: str | None = Query(None, max_length=64),
    q: str | None = Query(None, max_length=8192),
    mode: Literal["auto", "fts", "vector", "hybrid"] = "auto",
    limit: int = Query(50, ge=1, le=MAX_HITS),
) -> Response:
    """One Memory at its head, as a master/detail view: ``{"memory_ref", "keys",
    "counts": {"active", "inactive", "entries"}, "state", "kind", "kinds": [{"kind",
    "count"}], "page", "groups": [{"kind", "entries": [entry version shape + "state",
    "created_at"]}], "selected": null | (the entry page's data), "search": null | (see
    _search), "capabilities": {"fts", "vector", "hybrid", "reasons"}, "plots":
    {"window", "size", "revisions_per_day"}, "last_change"}``.

    ``state`` and ``kind`` filter the list (``kinds`` counts the entries of each kind
    in ``state``, in list order); ``entry`` selects one entry of the head, shown
    beside the list with its version chain and evidence (404 for an entry not in the
    head). Entries are listed rules first (constraints, preferences, decisions), then
    facts, then working notes (:func:`powercontext.core.recall.kind_rank`, from the
    backend's :class:`~powercontext.ports.EntryKinds` when it has it), newest first
    within each (entry ids are time-ordered); only the shown page's versions are read
    (a backend without EntryKinds reads every version of ``state`` for ``kind``)."""
    svc = _memory(request)
    artifact_id = _id(artifact_id, "artifact_id")
    head = await svc.head(artifact_id)
    rev = await svc.revision(head)
    items = rev.content.manifest.entries
    active = sum(1 for e in items if e.state == "active")
    chosen = [e for e in reversed(items) if state == "all" or e.state == state]
    kinds = await _kinds_of(svc, head, chosen, need_all=kind is not None)
    tally: list[dict[str, Any]] = []
    if kinds is not None:  # rules before facts before notes, on every page
        keyed = [(kinds.get(e.entry_version_id), e) for e in chosen]
        counts = Counter(k for k, _ in keyed)
        rank = {k: kind_rank(k) for k in counts}
        keyed.sort(key=lambda pair: rank[pair[0]])  # stable: newest first within
        tally = md.count_kinds(counts)
        chosen = [e for k, e in keyed if kind is None or k == kind]
    pg = md.paginate(len(chosen), page_no, md.PER_PAGE)
    shown = chosen[pg["start"]:pg["stop"]]
    versions = await svc.entries(head, [e.entry_id for e in shown]) if shown else {}
    rows = [md.entry_row(versions[e.entry_id], e.state) for e in shown]
    selected = None
    if entry is not None:
        selected = await md.version_chain(svc, head, _id(entry, "entry"))
        selected["head"] = to_json(head)
    caps = await svc.capabilities()
    search = None
    if q is not None and q.strip():
        search = await _search(svc, artifact_id, q, mode, limit)
    keys = await svc.keys_by_memory()
    data = {
        "memory_ref": to_json(head), "keys": keys.get(artifact_id, []),
        "counts": {"active": active, "inactive": len(items) - active,
                   "entries": len(items)},
        "state": state, "kind": kind, "kinds": tally, "page": pg,
        "groups": md.group_by_kind(rows), "selected": selected, "search": search,
        "capabilities": {"fts": caps.fts, "vector": caps.vector, "hybrid": caps.hybrid,
                         "reasons": list(caps.reasons)},
        "plots": await md.plots(svc, head, active),
        "last_change": md.revision_summary(
            MemoryRevisionChanges(head, rev.content.changes)),
    }
    return page(request, "memory.html", data, title=_title(data["keys"], artifact_id))


async def _kinds_of(svc: Any, head: ArtifactRef, chosen: list[Any],
                    need_all: bool) -> dict[str, str] | None:
    """The kind of each version of the Memory (``entry_version_id -> kind``): one read
    of the backend's :class:`~powercontext.ports.EntryKinds`; without it, the versions
    of ``chosen`` read whole when ``need_all`` (a kind filter), else None."""
    if isinstance(svc.backend, EntryKinds):
        found: dict[str, str] = await svc.backend.entry_kinds(head.artifact_id)
        return found
    if not need_all or not chosen:
        return None
    versions = await svc.entries(head, [e.entry_id for e in chosen])
    return {v.entry_version_id: v.kind for v in versions.values()}


def _title(keys: list[str], artifact_id: str) -> str:
    return keys[0] if keys else artifact_id


@router.get("/ui/memories/{artifact_id}/entries/{entry_id}")
async def entry_page(request: Request, artifact_id: str, entry_id: str,
                     revision: int | None = Query(None, ge=1)) -> Response:
    """One entry's version chain up to Revision ``revision`` (default the head):
    ``{"entry_id", "state", "memory_ref", "head", "versions": [entry version shape +
    "created_at", "op", "reason", "citation"]}``, newest first."""
    svc = _memory(request)
    artifact_id = _id(artifact_id, "artifact_id")
    entry_id = _id(entry_id, "entry_id")
    head = await svc.head(artifact_id)
    ref = head if revision is None else ArtifactRef(artifact_id, revision)
    data = await md.version_chain(svc, ref, entry_id)
    data["head"] = to_json(head)
    return page(request, "entry.html", data, title=f"Entry {entry_id}")


async def _citation_input(request: Request) -> tuple[str, Any]:
    """(the citation text as posted, its decoded JSON). InvalidCitationError for text
    that is not JSON."""
    body = await request.body()
    if len(body) > 64 * 1024:
        raise ApiError(413, "invalid_input", "the citation is too large")
    text = body.decode("utf-8", "replace")
    if "application/json" not in request.headers.get("content-type", ""):
        fields = parse_qs(text, keep_blank_values=True, max_num_fields=4)
        text = (fields.get("citation") or [""])[0]
    try:
        return text, json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidCitationError(f"the citation is not JSON: {exc.msg}") from exc
    except RecursionError as exc:
        raise InvalidCitationError("the citation is nested too deeply") from exc


@router.post("/ui/citations/validate", dependencies=[Depends(same_origin)])
async def validate_citation(request: Request) -> Response:
    """Re-check a Handoff citation (Memory RFC, "Handoff citation"): 200 ``{"valid":
    true, "citation", "entry_version"}`` for the exact version it names, or 422
    ``{"valid": false, "citation_text", "error": {"code", "message", "field"}}``; in
    JSON for a JSON request body (unless ``Accept`` names text/html) or the twin."""
    svc = _memory(request)
    # a JSON body is answered in JSON unless HTML is asked for
    as_json = wants_json(request) or (
        "application/json" in request.headers.get("content-type", "")
        and "format" not in request.query_params
        and "text/html" not in request.headers.get("accept", ""))
    text = ""
    try:
        text, raw = await _citation_input(request)
        citation = citation_from_json(raw)
        version = await svc.validate_citation(citation)
    except InvalidCitationError as exc:
        data: dict[str, Any] = {"valid": False, "citation_text": text, "error": {
            "code": "invalid_input", "message": str(exc), "field": "citation"}}
        return page(request, "citation.html", data, title="Citation not valid", status=422,
                    as_json=as_json)
    data = {"valid": True, "citation": to_json(citation),
            "entry_version": md.entry_row(version, "cited")}
    return page(request, "citation.html", data, title="Citation valid", as_json=as_json)


@router.get("/ui/memories/{artifact_id}/revisions")
async def revisions_page(request: Request, artifact_id: str,
                         page_no: int = Query(1, ge=1, alias="page")) -> Response:
    """The Revision timeline, newest first, 20 per page: ``{"memory_ref", "keys",
    "page", "revisions": [{"memory_ref", "revision", "at", "ops", "changes_total",
    "changes", "content_hash", "entries", "lineage": {"sources", "artifacts"}}]}``."""
    svc = _memory(request)
    artifact_id = _id(artifact_id, "artifact_id")
    head = await svc.head(artifact_id)
    data = await md.timeline(svc, head, page_no)
    keys = (await svc.keys_by_memory()).get(artifact_id, [])
    data.update(memory_ref=to_json(head), keys=keys,
                max_changes=md.MAX_CHANGES_SHOWN)
    return page(request, "revisions.html", data,
                title=f"Revisions of {_title(keys, artifact_id)}")


@router.get("/ui/memories/{artifact_id}/diff")
async def diff_page(request: Request, artifact_id: str,
                    older: int | None = Query(None, alias="from", ge=0),
                    newer: int | None = Query(None, alias="to", ge=1),
                    page_no: int = Query(1, ge=1, alias="page")) -> Response:
    """The diff of Revisions ``from`` (default the one before ``to``; 0 the empty
    Memory) and ``to`` (default the head): ``{"memory_ref", "keys", "from", "to",
    "counts", "page", "rows": [{"entry_id", "status", "from", "to", "before",
    "after"}]}``. 422 when ``from`` is not before ``to``; 404 for a Revision after the
    head."""
    svc = _memory(request)
    artifact_id = _id(artifact_id, "artifact_id")
    head = await svc.head(artifact_id)
    newer = head.revision if newer is None else newer
    older = max(0, newer - 1) if older is None else older
    if older >= newer:
        raise ApiError(422, "invalid_input", "from must be a Revision before to",
                       field="from")
    data = await md.diff(svc, artifact_id, older, newer, page_no)
    keys = (await svc.keys_by_memory()).get(artifact_id, [])
    data.update(memory_ref=to_json(head), keys=keys)
    return page(request, "diff.html", data,
                title=f"Diff {older}..{newer} of {_title(keys, artifact_id)}")
