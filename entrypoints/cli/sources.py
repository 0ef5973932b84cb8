"""``powercontext source add``: write Sources into one Scope's journal (Topic Memory RFC,
"Source, Window, Cursor, and Pending"; TOPIC-MEMORY.md, "Scopes are new").

``source add --scope S [--kind K] [--uri U] FILE...`` stores each FILE (UTF-8 text) as
one Source; ``-`` or no FILE reads one Source from stdin. ``--jsonl`` reads JSON lines
instead (from the FILEs or stdin), one Source per line: ``{"kind", "content", "uri"?,
"metadata"?}`` (chat turns, notes). Every Source goes through the SourceStore port's
``put_scoped_sources`` in one transaction with its Scope-journal row and the Pending
raise, so Topic processing of the Scope sees it.

Every add is a new Source ("Every Source add creates a new Source with a stable
SourceRef"): each gets a fresh id (``src_<32 hex of a random UUID>``) and its own
journal position, so three lines ``user: ok, ship it`` / ``assistant: deploying now`` /
``user: ok, ship it`` are positions 1, 2 and 3, in the order said, and the same file
can be added to a second Scope (it is a new Source there). The content hash stays a
field of each Source (citations carry it). A secret anywhere (content, uri, metadata)
refuses the whole call before anything is stored (exit 2), as every write does.
``--json`` prints ``{"scope_id", "sources": [{"source_id", "position", "kind", "uri",
"name"}]}``.

Registered under the ``source`` group by :mod:`powercontext.entrypoints.cli.main`.
"""

from __future__ import annotations

import json
import sys
import unicodedata
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx

__all__ = ["MAX_INPUT_BYTES", "build_source", "journal_sources", "new_source_id", "read_jsonl",
           "scope_copy", "source_add"]

#: One FILE (or stdin) may hold at most this many bytes (the Source complexity ceiling
#: is 4,194,304 characters; a little headroom for multi-byte text).
MAX_INPUT_BYTES = 16 * 1024 * 1024
_JSONL_KEYS = frozenset({"kind", "content", "uri", "metadata"})


def new_source_id() -> str:
    """A fresh Source id, ``src_<32 lowercase hex of a random UUIDv4>``: every add of a
    Source to a Scope is a new Source with its own stable SourceRef."""
    return f"src_{uuid.uuid4().hex}"


def build_source(kind: str, content: str, uri: str | None = None,
                 metadata: dict[str, str] | None = None, *, field: str = "source",
                 source_id: str | None = None) -> Any:
    """A new Source of ``(kind, content, uri, metadata)`` (content NFC), with
    ``source_id`` or a fresh id (:func:`new_source_id`). InvalidInputError naming
    ``field`` for a bad kind, content, uri or metadata."""
    from powercontext.core import canonical
    from powercontext.core.errors import InvalidInputError

    try:
        content = unicodedata.normalize("NFC", canonical.check_str("content", content))
        return canonical.make_source(source_id or new_source_id(), kind, content, uri,
                                     metadata or {})
    except InvalidInputError as exc:
        sub = exc.field.removeprefix("source.").removeprefix("source")
        raise InvalidInputError(f"{field}.{sub}" if sub else field,
                                str(exc).partition(": ")[2] or str(exc)) from exc


def scope_copy(source: Any, scope_id: str) -> Any:
    """``source`` as a new Source of the Scope ``scope_id``: the same kind, content, uri
    and metadata (so the same content hash) under the id ``src_<40 hex of SHA-256(
    scope_id, source_id)>``, the same for every add of that Source to that Scope (a
    redelivered event adds nothing)."""
    import hashlib

    from powercontext.core import canonical

    digest = hashlib.sha256(f"powercontext:scope-copy:v1\0{scope_id}\0{source.source_id}"
                            .encode("utf-8", "surrogatepass")).hexdigest()
    return canonical.make_source(f"src_{digest[:40]}", source.kind, source.content,
                                 source.uri, source.metadata)


async def journal_sources(svc: Any, scope_id: str, sources: Sequence[Any]) -> list[str]:
    """Store ``sources`` (already checked for secrets) in the Scope ``scope_id`` through
    the backend's ``put_scoped_sources`` (one transaction with the journal rows and the
    Pending raise): what the hooks and ``repo`` commands do with ``repo:<path>``
    (TOPIC-MEMORY.md, "Scopes are new"). The same Source given again keeps its
    position. A Source already journaled in another Scope is stored as it is (the
    Memory cites it) and journaled here as a new Source of this Scope
    (:func:`scope_copy`: same content, its own id). Their Memory behaviour must not
    change, so a Scope this release cannot journal into never fails the Memory write: a
    Scope id over 256 characters stores the Sources unscoped (as before) and returns a
    note saying so; so does a backend without ``put_scoped_sources`` (one written
    against the Memory family alone). Returns the notes (none on the normal path)."""
    from powercontext.core.errors import InvalidInputError
    from powercontext.core.topic.content import check_scope_id

    if not sources:
        return []
    if not callable(getattr(svc.backend, "put_scoped_sources", None)):
        await svc.backend.put_sources(sources)  # a backend without Scopes (third party)
        return [f"Sources not journaled for Topic Memory: {type(svc.backend).__name__} "
                "has no Scope journal"]
    try:
        scope = check_scope_id(scope_id)
    except InvalidInputError as exc:
        await svc.backend.put_sources(sources)
        return [f"Sources not journaled for Topic Memory: {exc}"]
    try:
        await svc.backend.put_scoped_sources(scope, sources)
        return []
    except InvalidInputError as exc:
        if exc.field != "scope_id":
            raise
    for s in sources:  # one at a time: a Source of another Scope gets a copy here
        try:
            await svc.backend.put_scoped_sources(scope, (s,))
        except InvalidInputError as exc:
            if exc.field != "scope_id":
                raise
            await svc.backend.put_sources((s,))  # what the Memory cites, as before
            await svc.backend.put_scoped_sources(scope, (scope_copy(s, scope),))
    return []


def _decode(data: bytes, name: str) -> str:
    from powercontext.core.errors import InvalidInputError

    if len(data) > MAX_INPUT_BYTES:
        raise InvalidInputError(name, f"holds {len(data)} bytes, over {MAX_INPUT_BYTES}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(name, f"is not UTF-8 text (byte {exc.start})") from None


def read_jsonl(text: str, name: str) -> list[Any]:
    """One Source per non-blank line of ``text``: ``{"kind", "content", "uri"?,
    "metadata"?}`` (metadata a flat object of strings). InvalidInputError naming
    ``<name>:<line>`` (and the key) for malformed JSON, a duplicate, unknown or missing
    key, or a value of the wrong type."""
    from powercontext.core.errors import InvalidInputError

    def no_dupes(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):  # one pass: the first key seen twice is named
            seen: set[str] = set()
            for k, _ in pairs:
                if k in seen:
                    raise ValueError(f"duplicate key {k!r}")
                seen.add(k)
        return out

    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{name}:{n}"
        try:
            row = json.loads(line, object_pairs_hook=no_dupes)
        except ValueError as exc:
            raise InvalidInputError(where, f"is not one JSON object: {exc}") from None
        if not isinstance(row, dict):
            raise InvalidInputError(where, "must be a JSON object {kind, content, uri?, "
                                           "metadata?}")
        unknown = sorted(set(row) - _JSONL_KEYS)
        if unknown:
            raise InvalidInputError(where, f"has unknown keys {', '.join(unknown)} (allowed: "
                                           "kind, content, uri, metadata)")
        for key in ("kind", "content"):
            if not isinstance(row.get(key), str):
                raise InvalidInputError(f"{where}.{key}", "must be a string")
        uri = row.get("uri")
        if uri is not None and not isinstance(uri, str):
            raise InvalidInputError(f"{where}.uri", "must be a string or absent")
        meta = row.get("metadata", {})  # absent is none; null, "", 0, [] are not objects
        if not isinstance(meta, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
            raise InvalidInputError(f"{where}.metadata", "must be an object of strings")
        out.append((where, build_source(row["kind"], row["content"], uri, meta, field=where)))
    return out


def _inputs(files: Sequence[str], *, kind: str | None, uri: str | None,
            jsonl: bool) -> list[tuple[str, Any]]:
    """``(name, Source)`` for every input, in order."""
    from powercontext.core.errors import InvalidInputError

    names = list(files) or ["-"]
    if names.count("-") > 1:
        raise InvalidInputError("FILE", "stdin (-) can be read only once")
    if uri is not None and (jsonl or len(names) > 1):
        raise InvalidInputError("uri", "--uri names one Source: give one FILE (or stdin) "
                                       "without --jsonl; JSON lines carry their own uri")
    if jsonl and kind is not None:
        raise InvalidInputError("kind", "JSON lines carry their own kind")
    out: list[tuple[str, Any]] = []
    for name in names:
        if name == "-":
            label, data, file_uri = "stdin", sys.stdin.buffer.read(MAX_INPUT_BYTES + 1), None
        else:
            path = Path(name)
            if path.is_dir():
                raise InvalidInputError(name, "is a directory; name its files")
            with open(path, "rb") as fh:  # OSError: a file the user named (exit 2)
                data = fh.read(MAX_INPUT_BYTES + 1)
            label, file_uri = name, path.resolve().as_uri()
        text = _decode(data, label)
        if jsonl:
            out.extend(read_jsonl(text, label))
        else:
            chosen = kind if kind is not None else ("file" if file_uri else "text")
            out.append((label, build_source(chosen, text,
                                            uri if uri is not None else file_uri,
                                            field=label)))
    if not out:
        raise InvalidInputError("FILE", "no Source to add (the JSON lines were empty)")
    return out


def _over_ceiling(source: Any) -> str | None:
    """Why Topic processing will stop at ``source`` (Topic Memory RFC, "Cumulative work
    and evidence ceilings"; the same check as Window selection), or None. The Source is
    stored either way: the ceiling is a processing limit, not a capture limit."""
    from powercontext.core.topic.window import projected_evidence

    return projected_evidence(source)[0]


@click.command("add")
@click.argument("files", nargs=-1, metavar="[FILE]...")
@click.option("--scope", "-s", "scope_id", required=True, metavar="SCOPE",
              help="The Scope the Sources belong to, e.g. project:x or repo:/abs/path "
                   "(1-256 characters). One Scope per Source.")
@click.option("--kind", "-k", metavar="KIND",
              help="The Source kind (default: file for a FILE, text for stdin).")
@click.option("--uri", metavar="URI",
              help="The Source uri (one FILE or stdin only; default file:///abs/path).")
@click.option("--jsonl", is_flag=True,
              help='Read JSON lines {"kind", "content", "uri"?, "metadata"?}, one Source '
                   "each (e.g. chat turns).")
@pass_ctx
def source_add(c: Ctx, files: tuple[str, ...], scope_id: str, kind: str | None,
               uri: str | None, jsonl: bool) -> None:
    """Add Sources to a Scope's journal for Topic processing.

    Each FILE (UTF-8 text) becomes one new Source; `-` or no FILE reads stdin. With
    --jsonl every line is one new Source, in order (a line said twice is two Sources).
    Every add is a new Source with its own position: adding a file again adds it again.
    A secret anywhere refuses the whole call (nothing stored).

    \b
    powercontext source add --scope project:x docs/*.md
    printf '%s\\n' '{"kind":"chat_turn","content":"user: ..."}' \\
        | powercontext source add --scope project:x --jsonl
    Then: powercontext topic flush --scope project:x; powercontext topic process ...
    """
    from powercontext.core.topic.content import check_scope_id

    try:
        scope = check_scope_id(scope_id)
        items = _inputs(files, kind=kind, uri=uri, jsonl=jsonl)
    except Exception as exc:
        from powercontext.entrypoints.cli.context import fail_with

        fail_with(exc, c.as_json)

    async def body(svc: Any) -> None:
        from powercontext.core.errors import SecretDetectedError

        sources = [s for _, s in items]
        try:  # the store scans for secrets before anything is stored (all or nothing)
            positions = await svc.backend.put_scoped_sources(scope, sources)
        except SecretDetectedError as exc:  # name the input, never the secret
            where, _, rest = exc.field.partition(".")
            index = where.partition("[")[2].rstrip("]")
            if not index.isdigit() or int(index) >= len(items):
                raise
            raise SecretDetectedError(f"{items[int(index)][0]}.{rest}", exc.rule,
                                      exc.description, exc.line) from None
        rows = [{"source_id": s.source_id, "position": p, "kind": s.kind, "uri": s.uri,
                 "name": name, "over_topic_ceiling": _over_ceiling(s)}
                for (name, s), p in zip(items, positions, strict=True)]

        def human() -> None:
            for r in rows:
                click.echo(f"{r['source_id']}  {scope}#{r['position']}  {r['name']}")
                if r["over_topic_ceiling"]:
                    click.echo(f"warning: {r['name']} is stored, but it is over a Topic "
                               f"processing ceiling ({r['over_topic_ceiling']}): processing "
                               f"of {scope} will stop at position {r['position']} "
                               "(source_complexity_limit) and go no further", err=True)
            click.echo(f"{len(rows)} Source(s) in {scope}; next: powercontext topic flush "
                       f"--scope {scope}", err=True)

        c.emit({"scope_id": scope, "sources": rows}, human)

    c.run(body)
