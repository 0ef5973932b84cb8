"""The Memory writes over HTTP, under ``/v1/memory/`` (Memory RFC, "remember()",
"forget()", "reactivate()", "organize()"): the same operations as ``powercontext memory
remember|forget|reactivate|organize|retire`` (and ``remember --revise``), through the same
service calls (:func:`powercontext.memory_names.remember_entries`, ``MemoryService.forget``
...), so the same limits, secret refusals and typed errors apply.

* ``POST /remember`` ``{"entries": [{"text", "kind"?, "reason"?, "revise"?}], "memory"?
  | "key"?, "sources"?: [{"content", "kind"?, "uri"?, "metadata"?}]}``;
* ``POST /revise`` ``{"memory", "entry_id", "text", "kind"?, "reason"?, "sources"?}``
  (the entry's kind is kept unless given);
* ``POST /forget`` and ``POST /reactivate`` ``{"memory", "entry_ids", "reason"?}``;
* ``POST /organize`` ``{"memory", "steps"?}``;
* ``POST /retire`` ``{"memory", "reason"?}`` -> ``{"artifact_id", "before",
  "memory_ref", "forgotten", "keys_removed"}`` (a Memory created by mistake: its active
  entries forgotten in one Revision, its keys removed; history stays readable).

Each other write answers 200 ``{"memory_ref", "changed", "changes"}`` with ``ETag: "ID@REV"`` of the
head after the write (``memory_ref`` null and no ETag when nothing was worth a new
Memory).

Conditional writes: ``If-Match: "ID@REV"`` (the ETag of ``show`` or of an earlier
write) writes only when that Revision is still the head of the named Memory, else 409
``conflict`` and nothing is written; the check and the write are one compare-and-set
(the Revision is the write's base, which the commit checks under its lock). ``*``
matches any existing head. Naming ``ID@REV`` as ``memory`` has the same effect. A
malformed ``If-Match`` is 400.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header
from fastapi.responses import JSONResponse

from powercontext.core.errors import RevisionConflictError
from powercontext.core.models import ArtifactRef, Source
from powercontext.entrypoints.http.deps import Services, require_token, services
from powercontext.entrypoints.http.errors import ERROR_RESPONSES, ApiError
from powercontext.entrypoints.http.memory import PREFIX, etag
from powercontext.entrypoints.http.memory_models import (
    ForgetRequest,
    OrganizeRequest,
    RememberRequest,
    RetireOut,
    RetireRequest,
    ReviseRequest,
    SourceIn,
    WriteOut,
)

__all__ = ["WRITE_RESPONSES", "parse_if_match", "router"]

router = APIRouter(prefix=PREFIX, tags=["memory"], dependencies=[Depends(require_token)])
ServicesDep = Annotated[Services, Depends(services)]
IfMatch = Annotated[str | None, Header(
    alias="If-Match", max_length=4096,
    description='Write only on top of this head: the ETag "ID@REV" of show or of an '
                "earlier write, or * (any head). A stale one is 409, nothing written.")]

#: The documented statuses of a write: those of every route plus 400 (a bad If-Match).
WRITE_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    400: {**ERROR_RESPONSES[422], "description": "A malformed If-Match header "
                                                 "(`invalid_input`, field `If-Match`)"},
}


def parse_if_match(header: str | None) -> tuple[str, ...] | None:
    """The entity tags of an ``If-Match`` header: None without one, ``("*",)`` for
    ``*``, else each tag's value (``"ID@REV"`` unquoted; a bare ``ID@REV`` is taken too;
    a weak ``W/`` tag never matches, as RFC 9110 says for If-Match). ApiError 400
    (field ``If-Match``) for an empty or malformed list."""
    if header is None:
        return None
    text = header.strip()
    if text == "*":
        return ("*",)
    tags = []
    for part in text.split(","):
        tag = part.strip()
        if tag.startswith("W/"):
            continue
        if len(tag) >= 2 and tag[0] == tag[-1] == '"':
            tag = tag[1:-1]
        name, _, rev = tag.rpartition("@")
        if not name or not rev.isdigit() or '"' in tag or not tag.isprintable():
            raise ApiError(400, "invalid_input", 'If-Match must be "ID@REV" (the ETag of '
                           "show or of a write) or *", field="If-Match")
        tags.append(tag)
    return tuple(tags)


async def _base(svc: Services, name: str, if_match: str | None) -> ArtifactRef:
    """The Revision a write goes on top of: the named Memory's head (or the exact
    ``ID@REV`` named), checked against ``If-Match``; the service then refuses it when
    it is not the head at commit."""
    from powercontext.memory_names import resolve_memory

    tags = parse_if_match(if_match)
    ref = await resolve_memory(svc.memory, name)
    if tags is None or tags == ("*",):
        return ref
    if f"{ref.artifact_id}@{ref.revision}" not in tags:
        raise RevisionConflictError(
            f"If-Match names {', '.join(tags)}, but {name!r} is "
            f"{ref.artifact_id}@{ref.revision}: nothing was written; reread it (show) "
            "and retry")
    return ref  # still the head at commit, or the commit's own check answers 409


def _sources(items: list[SourceIn]) -> tuple[Source, ...]:
    from powercontext.core.errors import InvalidInputError
    from powercontext.memory_views import evidence_source

    out = []
    for i, s in enumerate(items):
        try:
            out.append(evidence_source(s.kind, s.content, s.uri, s.metadata))
        except InvalidInputError as exc:
            sub = exc.field.removeprefix("source.").removeprefix("source")
            raise InvalidInputError(f"sources[{i}]" + (f".{sub}" if sub else ""),
                                    str(exc).partition(": ")[2] or str(exc)) from exc
    return tuple(out)


async def _answer(svc: Services, before: ArtifactRef | None,
                  after: ArtifactRef | None) -> JSONResponse:
    from powercontext.memory_views import write_view

    headers = {"ETag": etag(after)} if after is not None else None
    return JSONResponse(await write_view(svc.memory, before, after), headers=headers)


@router.post("/remember", response_model=WriteOut, responses=WRITE_RESPONSES,
             summary="Add or revise explicit entries, with their evidence")
async def remember(body: RememberRequest, svc: ServicesDep,
                   if_match: IfMatch = None) -> JSONResponse:
    """``remember(mode="append")``: each entry is added, or revises the current version
    of its ``revise`` entry; a correction ("use X instead of Y") revises the one active
    rule stating Y. ``memory`` names the Memory (a write needs its head), or ``key`` a
    business key (its Memory, created with the key when none is); neither creates a new
    Memory. Every entry cites every Source of ``sources`` (stored first; their metadata
    kept). A text, reason or Source holding a secret is refused (422 naming the field)
    and nothing is stored."""
    from powercontext.core.errors import InvalidInputError
    from powercontext.memory_names import memory_key, remember_entries

    if body.memory is not None and body.key is not None:
        raise InvalidInputError("key", "name the Memory by memory or by key, not both")
    sources = _sources(body.sources)
    memory, key = body.memory, body.key
    if if_match is not None:
        parse_if_match(if_match)  # 400 before anything is read
        if memory is None and key is None:
            raise RevisionConflictError("If-Match names a head, but this write creates a "
                                        "new Memory: name the Memory")
        if memory is None:
            assert key is not None
            memory, key = f"key:{memory_key(key)}", None
        assert memory is not None
        base = await _base(svc, memory, if_match)
        memory = f"{base.artifact_id}@{base.revision}"
    before, after = await remember_entries(
        svc.memory, memory=memory, key=key,
        entries=[e.model_dump() for e in body.entries], sources=sources)
    return await _answer(svc, before, after)


@router.post("/revise", response_model=WriteOut, responses=WRITE_RESPONSES,
             summary="A new version of one entry")
async def revise(body: ReviseRequest, svc: ServicesDep,
                 if_match: IfMatch = None) -> JSONResponse:
    """The entry's current version is revised to ``text`` (its kind kept unless
    ``kind`` is given), citing ``sources``; history keeps the old version (``changes``
    shows the revise with its reason). 404 for an entry the Memory does not hold."""
    from powercontext.memory_names import remember_entries

    sources = _sources(body.sources)
    base = await _base(svc, body.memory, if_match)
    kind = body.kind
    if kind is None:
        current = (await svc.memory.entries(base, [body.entry_id])).get(body.entry_id)
        kind = current.kind if current is not None else None
    entry = {"text": body.text, "kind": kind, "reason": body.reason,
             "revise": body.entry_id}
    before, after = await remember_entries(
        svc.memory, memory=f"{base.artifact_id}@{base.revision}", key=None,
        entries=[entry], sources=sources)
    return await _answer(svc, before, after)


async def _set_state(op: str, body: ForgetRequest, svc: Services,
                     if_match: str | None) -> JSONResponse:
    base = await _base(svc, body.memory, if_match)
    fn = svc.memory.forget if op == "forget" else svc.memory.reactivate
    after = await fn(base, list(body.entry_ids), reason=body.reason)
    return await _answer(svc, base, after)


@router.post("/forget", response_model=WriteOut, responses=WRITE_RESPONSES,
             summary="Mark entries inactive in a new Revision")
async def forget(body: ForgetRequest, svc: ServicesDep,
                 if_match: IfMatch = None) -> JSONResponse:
    """The entries leave search; history and old citations stay valid, and reactivate
    brings them back. Forgetting only inactive entries changes nothing (``changed``
    false)."""
    return await _set_state("forget", body, svc, if_match)


@router.post("/reactivate", response_model=WriteOut, responses=WRITE_RESPONSES,
             summary="Make inactive entries active again")
async def reactivate(body: ForgetRequest, svc: ServicesDep,
                     if_match: IfMatch = None) -> JSONResponse:
    """The same versions become active again in a new Revision."""
    return await _set_state("reactivate", body, svc, if_match)


@router.post("/organize", response_model=WriteOut, responses=WRITE_RESPONSES,
             summary="Exact dedupe and reference normalization")
async def organize(body: OrganizeRequest, svc: ServicesDep,
                   if_match: IfMatch = None) -> JSONResponse:
    """``organize()``: ``dedupe`` (exact duplicates deactivated), ``normalize``
    (evidence references sorted and unique) or ``default`` (both); unchanged when there
    is nothing to do."""
    base = await _base(svc, body.memory, if_match)
    steps: Any = tuple(body.steps)
    after = await svc.memory.organize(base, steps)
    return await _answer(svc, base, after)


@router.post("/retire", response_model=RetireOut, responses=WRITE_RESPONSES,
             summary="Retire a Memory created by mistake")
async def retire(body: RetireRequest, svc: ServicesDep,
                 if_match: IfMatch = None) -> JSONResponse:
    """``memory retire``: every active entry of the head is marked inactive in one new
    Revision (history and old citations stay valid: ``ID@REV`` still reads them), then
    every business key naming the Memory is removed, so ``key:NAME`` names nothing and
    the key can name another Memory. Run again, it finishes an interrupted retire. A
    Revision that is not the head (by ``ID@REV`` or ``If-Match``) is 409, nothing
    written. ``ETag``: the head after."""
    from powercontext.core.shapes import to_json
    from powercontext.memory_names import retire_memory

    base = await _base(svc, body.memory, if_match)
    head = await svc.memory.head(base.artifact_id)
    if head != base:
        raise RevisionConflictError(
            f"{body.memory!r} names {base.artifact_id}@{base.revision}, but the head is "
            f"Revision {head.revision}: nothing was written; reread it (show) and retry")
    done = await retire_memory(svc.memory, f"{base.artifact_id}@{base.revision}",
                               reason=body.reason)
    return JSONResponse({"artifact_id": done.artifact_id, "before": to_json(done.before),
                         "memory_ref": to_json(done.after),
                         "forgotten": list(done.forgotten),
                         "keys_removed": list(done.keys)},
                        headers={"ETag": etag(done.after)})
