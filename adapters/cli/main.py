"""The ``powercontext`` command line (click).

Every command takes ``--db`` (a path or URL; default ``$POWERCONTEXT_DB`` or the
per-user data directory) and ``--json`` (machine output for agents). Exit codes:
0 success, 1 unexpected error, 2 bad input (usage errors included; also an embedding
profile or analyzer mismatch: the database was built with another one; `memory rebuild`
migrates), 3 revision conflict, 4 not found, 5 capability not supported, 6 invalid
citation, 7 integrity error, 130 interrupted; each failure is one line on stderr, or one
JSON object with ``--json`` (:mod:`powercontext.adapters.cli.context`).

A Memory is named by ``ID`` (its current head), ``ID@REV`` (an exact Revision; a write
needs the head), ``key:NAME`` (a business key stored in the database) or
``key:NAME@REV`` (an exact Revision of the Memory a key names). Commands live in
modules by group: this one (``memory``), ``overview`` (``memory list``, ``source``,
``info``), ``setup`` (``setup``, ``doctor``), ``repo``, ``hook`` and ``mcp_cmd``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import click

from powercontext.adapters.cli.context import (
    EXIT_BAD_INPUT,
    EXIT_CAPABILITY,
    EXIT_CONFLICT,
    EXIT_INTEGRITY,
    EXIT_INTERRUPTED,
    EXIT_INVALID_CITATION,
    EXIT_NOT_FOUND,
    EXIT_UNEXPECTED,
    Ctx,
    fail_with,
    pass_ctx,
)
from powercontext.adapters.cli.context import ref_json as _ref_json

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_CAPABILITY",
    "EXIT_CONFLICT",
    "EXIT_INTEGRITY",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID_CITATION",
    "EXIT_NOT_FOUND",
    "EXIT_UNEXPECTED",
    "Ctx",
    "cli",
    "main",
]

@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="POWERCONTEXT_DB",
    metavar="PATH|URL",
    help="Database: a SQLite file path, sqlite:///PATH or "
    "oceanbase://USER:PASS@HOST:PORT/DB. Default: the per-user data directory.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for agents.")
@click.option(
    "--embedding",
    envvar="POWERCONTEXT_EMBEDDING",
    metavar="NAME",
    help="Embedding model for vector/hybrid search: deterministic, local or openai.",
)
@click.option(
    "--analyzer",
    envvar="POWERCONTEXT_ANALYZER",
    metavar="NAME",
    help="Search analyzer of a new database: v1 or v1-porter (default). An existing "
    "database keeps its own; `memory rebuild --analyzer NAME` switches.",
)
@click.version_option(package_name="powercontext")
@click.pass_context
def cli(
    ctx: click.Context, db: str | None, as_json: bool, embedding: str | None,
    analyzer: str | None,
) -> None:
    """powercontext: versioned, citable, searchable memory for coding agents.

    Every memory is versioned, never overwritten and exactly citable. Start with
    `powercontext memory remember --help`.
    """
    ctx.obj = Ctx(db, as_json, embedding, analyzer)


@cli.group()
def memory() -> None:
    """Remember, forget, search and cite entries of a Memory."""


def _register_subcommands() -> None:
    from powercontext.adapters.cli.hook import hook
    from powercontext.adapters.cli.mcp_cmd import mcp
    from powercontext.adapters.cli.overview import info, memory_list, source
    from powercontext.adapters.cli.repo import repo
    from powercontext.adapters.cli.setup import doctor, setup

    memory.add_command(memory_list, "list")
    cli.add_command(repo)
    cli.add_command(hook)
    cli.add_command(mcp)
    cli.add_command(source)
    cli.add_command(info)
    cli.add_command(setup)
    cli.add_command(doctor)


# --------------------------------------------------------------------------- helpers


async def _resolve(c: Ctx, svc: Any, name: str | None) -> Any:
    """A Memory name to an ArtifactRef (``ID`` -> head, ``ID@REV`` -> exact, ``key:NAME``)."""
    from powercontext.runtime import resolve_memory

    return await resolve_memory(svc, name)


def _source_from_file(path: str) -> Any:
    from powercontext.core import canonical

    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}", param_hint="--source") from exc
    uri = p.resolve().as_uri()
    digest = canonical.source_content_hash("file", text, uri, ())
    return canonical.make_source(f"src_{digest[:40]}", "file", text, uri)


def _version_json(v: Any) -> dict[str, Any]:
    return {
        "memory_artifact_id": v.memory_artifact_id,
        "entry_id": v.entry_id,
        "entry_version_id": v.entry_version_id,
        "version": v.version,
        "previous_version_id": v.previous_version_id,
        "kind": v.kind,
        "text": v.text,
        "source_refs": [
            {"source_id": s.source_id, "content_hash": s.content_hash} for s in v.sources
        ],
        "artifact_refs": [_ref_json(a) for a in v.artifacts],
        "entry_content_hash": v.entry_content_hash,
        "created_in_revision": v.created_in_revision,
    }


def _change_json(c: Any) -> dict[str, Any]:
    return {
        "op": c.op,
        "entry_id": c.entry_id,
        "from_entry_version_id": c.from_entry_version_id,
        "to_entry_version_id": c.to_entry_version_id,
        "reason": c.reason,
    }


def _citation_json(cite: Any) -> dict[str, Any]:
    return {
        "memory_ref": _ref_json(cite.memory_ref),
        "entry_id": cite.entry_id,
        "entry_version_id": cite.entry_version_id,
    }


def _parse_citation(text: str) -> Any:
    from powercontext.core.errors import InvalidCitationError, InvalidInputError
    from powercontext.core.models import ArtifactRef, HandoffCitation

    if text == "-":
        text = sys.stdin.read()
    elif not text.lstrip().startswith("{"):
        path = Path(text)
        if not path.is_file():
            raise InvalidInputError("citation", f"{text!r} is neither citation JSON nor a file")
        text = path.read_text("utf-8")
    try:
        d = json.loads(text)
        ref = d["memory_ref"]
        artifact_id, revision = ref["artifact_id"], ref["revision"]
        entry_id, version_id = d["entry_id"], d["entry_version_id"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidCitationError(f"not a citation JSON object: {exc}") from exc
    # exact JSON types: a citation is never coerced (1.0, true or "1" are not Revision 1)
    if isinstance(revision, bool) or not isinstance(revision, int):
        raise InvalidCitationError("memory_ref.revision must be a JSON integer")
    if not all(isinstance(x, str) for x in (artifact_id, entry_id, version_id)):
        raise InvalidCitationError("artifact_id, entry_id and entry_version_id must be strings")
    return HandoffCitation(ArtifactRef(artifact_id, revision), entry_id, version_id)


def _report_write(c: Ctx, before: Any, after: Any, what: str,
                  changes: tuple[Any, ...] = ()) -> None:
    changed = after is not None and after != before
    data = {"memory_ref": _ref_json(after), "changed": changed,
            "changes": [_change_json(ch) for ch in changes]}

    def human() -> None:
        if after is None:
            click.echo("Nothing worth saving: no Memory was created.")
        elif not changed:
            click.echo(f"No change: {after.artifact_id} stays at Revision {after.revision}.")
        else:
            click.echo(f"{what}: {after.artifact_id} is now at Revision {after.revision}.")
            for ch in changes:
                click.echo(f"  {ch.op:<10} {ch.entry_id}" + (f"  ({ch.reason})" if ch.reason
                                                              else ""))

    c.emit(data, human)


async def _settled(svc: Any, write: Callable[[], Awaitable[Any]]) -> Any:
    """Run a write; when its COMMIT outcome is unknown, reread before anyone retries.

    Landed (the planned Revision exists with the planned content hash): a note on stderr
    and the planned ArtifactRef is returned, as if COMMIT had answered, so the caller maps
    ``--key`` and reports it. Not landed: RevisionConflictError (exit 3) saying nothing was
    written and the same command may be run again. The database still unreadable:
    CommitOutcomeUnknownError (exit 1) naming the planned Revision and how to check it."""
    from powercontext.core.errors import (
        CommitOutcomeUnknownError,
        PowerContextError,
        RevisionConflictError,
    )

    try:
        return await write()
    except CommitOutcomeUnknownError as exc:
        planned = exc.planned
        if planned is None:
            raise
        name = f"{planned.artifact_id}@{planned.revision}"
        try:
            landed = await svc.commit_landed(exc)
        except PowerContextError as again:
            raise CommitOutcomeUnknownError(
                f"{exc}; rereading failed too ({again}). Do not rerun this command yet: "
                f"once the database answers, run `powercontext memory changes {name}`: "
                "exit 4 means it was not written and rerunning is safe; otherwise compare "
                "its changes with this command's before doing anything",
                planned=planned, content_hash=exc.content_hash,
            ) from exc
        if not landed:
            raise RevisionConflictError(
                f"the connection was lost during COMMIT and Revision {name} was not "
                "written: nothing changed; run the same command again"
            ) from exc
        click.echo(f"powercontext: the connection was lost during COMMIT; rereading shows "
                   f"Revision {name} landed", err=True)
        return planned


async def _changes_of(svc: Any, before: Any, after: Any) -> tuple[Any, ...]:
    if after is None or after == before:
        return ()
    (rc,) = await svc.changes(after)
    return tuple(rc.changes)


# --------------------------------------------------------------------------- commands


@memory.command()
@click.option(
    "--memory",
    "-m",
    "name",
    metavar="MEMORY",
    help="Memory to write (ID, ID@REV or key:NAME); omit to create a new one.",
)
@click.option("--key", help="Business key of the Memory to write (e.g. repo:$PWD, the Git top "
                            "level); a new Memory is created and stored under it when none is.")
@click.option(
    "--kind",
    default="fact",
    show_default=True,
    help="fact, preference, decision, constraint, working_note (any string).",
)
@click.option("--text", "-t", help="The entry text (1..8192 UTF-8 bytes after trimming).")
@click.option("--reason", help="Why (at most 512 code points).")
@click.option(
    "--revise",
    "revise_id",
    metavar="ENTRY_ID",
    help="Revise this entry (its current version) instead of adding a new one.",
)
@click.option(
    "--source",
    "-s",
    "source_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A file persisted as a Source and cited as evidence.",
)
@click.option(
    "--entries",
    "entries_file",
    type=click.File("r"),
    help='JSON list of {"kind","text","reason","revise"} (use - for stdin).',
)
@pass_ctx
def remember(
    c: Ctx,
    name: str | None,
    key: str | None,
    kind: str,
    text: str | None,
    reason: str | None,
    revise_id: str | None,
    source_files: tuple[str, ...],
    entries_file: Any,
) -> None:
    """Add or revise entries (Memory RFC, remember(mode="append")).

    \b
    powercontext memory remember --key repo:$PWD --kind preference \\
        --text "Run make test before review" --source Makefile
    """
    specs: list[dict[str, Any]] = []
    if entries_file is not None:
        specs = _entry_specs(entries_file)
    if text is not None:
        specs.append({"kind": kind, "text": text, "reason": reason, "revise": revise_id})
    elif revise_id is not None or reason is not None:
        raise click.UsageError("--revise and --reason go with --text (or inside --entries)")
    if not specs:
        raise click.UsageError("give --text or --entries")
    if name is None and any(s.get("revise") for s in specs) and key is None:
        raise click.UsageError("revising an entry needs the Memory it is in: --memory")
    srcs = tuple(_source_from_file(f) for f in source_files)

    async def body(svc: Any) -> None:
        import functools

        from powercontext.core.errors import SecretDetectedError
        from powercontext.core.secrets import source_findings
        from powercontext.runtime import remember_entries

        for f, src in zip(source_files, srcs, strict=True):
            # refused before anything is stored, naming the file and line (exit 2)
            for where, found in source_findings(src, svc.secret_scanner.scan)[:1]:
                field = f"--source {f}" + ("" if where == "content" else f" ({where})")
                raise SecretDetectedError(field, found.rule, found.description, found.line)
        base, after = await remember_entries(
            svc, memory=name, key=key, entries=specs, sources=srcs,
            settle=functools.partial(_settled, svc))
        _report_write(c, base, after, "Remembered", await _changes_of(svc, base, after))

    c.run(body)


_SPEC_FIELDS: dict[str, type | tuple[type, ...]] = {
    "kind": str, "text": str, "reason": (str, type(None)), "revise": (str, type(None))}


def _entry_specs(entries_file: Any) -> list[dict[str, Any]]:
    """The ``--entries`` JSON: a list of objects with a string ``text`` and optional
    string ``kind`` (default fact), ``reason`` and ``revise``; InvalidInputError naming
    ``entries[i].field`` otherwise, before anything is read or written."""
    from powercontext.core.errors import InvalidInputError

    try:
        data = json.loads(entries_file.read())
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError("entries", f"not JSON: {exc}") from exc
    if not isinstance(data, list):
        raise InvalidInputError("entries", "must be a JSON list of entry objects")
    specs: list[dict[str, Any]] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise InvalidInputError(
                f"entries[{i}]", f'must be an object like {{"kind": "fact", "text": "..."}}, '
                f"not {type(item).__name__}")
        unknown = sorted(set(item) - set(_SPEC_FIELDS))
        if unknown:
            raise InvalidInputError(f"entries[{i}].{unknown[0]}",
                                    "unknown field (kind, text, reason, revise)")
        if "text" not in item:
            raise InvalidInputError(f"entries[{i}].text", "is missing")
        spec = {"kind": "fact", **item}
        for field, types in _SPEC_FIELDS.items():
            if field in spec and not isinstance(spec[field], types):
                raise InvalidInputError(f"entries[{i}].{field}", "must be a string")
        specs.append(spec)
    return specs


def _state_command(op: str) -> Callable[..., None]:
    @click.argument("memory_name", metavar="MEMORY")
    @click.argument("entry_ids", nargs=-1, required=True)
    @click.option("--reason", help="Why (at most 512 code points).")
    @pass_ctx
    def command(c: Ctx, memory_name: str, entry_ids: tuple[str, ...], reason: str | None) -> None:
        async def body(svc: Any) -> None:
            base = await _resolve(c, svc, memory_name)
            fn = svc.forget if op == "forget" else svc.reactivate
            after = await _settled(svc, lambda: fn(base, list(entry_ids), reason=reason))
            _report_write(c, base, after, "Forgot" if op == "forget" else "Reactivated",
                          await _changes_of(svc, base, after))

        c.run(body)

    return command


memory.command("forget", help="Mark entries inactive in a new Revision (history is kept).")(
    _state_command("forget")
)
memory.command("reactivate", help="Make inactive entries active again (same versions).")(
    _state_command("reactivate")
)


@memory.command()
@click.argument("memory_name", metavar="MEMORY")
@click.option(
    "--step",
    "steps",
    multiple=True,
    type=click.Choice(["dedupe", "normalize", "default"]),
    help="Which steps run (default: dedupe then normalize).",
)
@pass_ctx
def organize(c: Ctx, memory_name: str, steps: tuple[str, ...]) -> None:
    """Exact dedupe and reference normalization (Memory RFC, organize())."""

    async def body(svc: Any) -> None:
        base = await _resolve(c, svc, memory_name)
        after = await _settled(svc, lambda: svc.organize(base, steps or ("default",)))
        _report_write(c, base, after, "Organized", await _changes_of(svc, base, after))

    c.run(body)


@memory.command()
@click.argument("memory_name", metavar="MEMORY")
@click.option(
    "--since",
    "since",
    type=int,
    default=None,
    help="Exclusive lower Revision; 0 = the whole history. Default: the target only.",
)
@pass_ctx
def changes(c: Ctx, memory_name: str, since: int | None) -> None:
    """The compact per-Revision changes (Memory RFC, changes())."""

    async def body(svc: Any) -> None:
        ref = await _resolve(c, svc, memory_name)
        out = await svc.changes(ref, since)

        def human() -> None:
            for rc in out:
                click.echo(f"Revision {rc.memory_ref.revision}:")
                for ch in rc.changes:
                    click.echo(
                        f"  {ch.op:<10} {ch.entry_id}  {ch.from_entry_version_id or '-'} -> "
                        f"{ch.to_entry_version_id or '-'}"
                        + (f"  ({ch.reason})" if ch.reason else "")
                    )

        c.emit(
            [
                {
                    "memory_ref": _ref_json(rc.memory_ref),
                    "changes": [_change_json(ch) for ch in rc.changes],
                }
                for rc in out
            ],
            human,
        )

    c.run(body)


@memory.command()
@click.argument("query")
@click.option(
    "--memory",
    "-m",
    "names",
    multiple=True,
    required=True,
    metavar="MEMORY",
    help="Memory to search (repeat for several; current heads only).",
)
@click.option("--limit", "-n", default=8, show_default=True, type=int)
@click.option(
    "--mode",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "fts", "vector", "hybrid"]),
)
@pass_ctx
def search(c: Ctx, query: str, names: tuple[str, ...], limit: int, mode: str) -> None:
    """Search active entries of current heads. Results are untrusted context.

    Prints each hit with its rank and the channels that matched it (fts, vector);
    ``--json`` keeps the RRF score. An empty query is bad input (exit 2)."""

    from powercontext.core.errors import InvalidInputError

    if not query.strip():
        raise InvalidInputError("query", "is empty: give the words to search for")

    async def body(svc: Any) -> None:
        from powercontext.runtime import memory_selector

        # ID and key:NAME stay "the current head", read inside the search's transaction
        refs = [await memory_selector(svc, n) for n in names]
        res = await svc.search(query, refs, limit=limit, mode=mode)

        def human() -> None:
            click.echo(f"{len(res.hits)} hit(s), mode {res.mode}"
                       + (f" (fell back: {res.fallback_reason})" if res.fallback_reason else "")
                       + ":")
            for rank, h in enumerate(res.hits, start=1):
                click.echo(f"{rank}. [{'+'.join(h.matched_by)}] {h.text}")
                click.echo(f"   (entry {h.entry_id}, {h.kind}, in {h.memory_ref.artifact_id}"
                           f"@{h.memory_ref.revision})")

        c.emit(
            {
                "mode": res.mode,
                "fallback_reason": res.fallback_reason,
                "untrusted": True,
                "hits": [
                    {
                        "memory_ref": _ref_json(h.memory_ref),
                        "entry_id": h.entry_id,
                        "entry_version_id": h.entry_version_id,
                        "kind": h.kind,
                        "text": h.text,
                        "score": h.score,
                        "matched_by": list(h.matched_by),
                    }
                    for h in res.hits
                ],
            },
            human,
        )

    c.run(body)


@memory.command()
@click.argument("memory_name", metavar="MEMORY")
@click.option("--all", "show_all", is_flag=True, help="Include inactive entries.")
@pass_ctx
def show(c: Ctx, memory_name: str, show_all: bool) -> None:
    """The manifest of a Revision (default: the head) with entry texts."""

    async def body(svc: Any) -> None:
        ref = await _resolve(c, svc, memory_name)
        rev = await svc.revision(ref)
        items = [e for e in rev.content.manifest.entries if show_all or e.state == "active"]
        versions = await svc.entries(ref, [e.entry_id for e in items])

        def human() -> None:
            total = len(rev.content.manifest.entries)
            active = sum(1 for e in rev.content.manifest.entries if e.state == "active")
            click.echo(
                f"{ref.artifact_id} Revision {ref.revision}: {active} active of {total} "
                f"entries; content hash {rev.content_hash}"
            )
            for e in items:
                v = versions[e.entry_id]
                click.echo(f"  {e.entry_id} v{v.version} {e.state:<8} {v.kind:<12} {v.text}")

        c.emit(
            {
                "memory_ref": _ref_json(ref),
                "content_hash": rev.content_hash,
                "entries": [
                    dict(_version_json(versions[e.entry_id]), state=e.state) for e in items
                ],
            },
            human,
        )

    c.run(body)


@memory.command()
@click.argument("memory_name", metavar="MEMORY")
@click.argument("entry_ids", nargs=-1, required=True)
@pass_ctx
def expand(c: Ctx, memory_name: str, entry_ids: tuple[str, ...]) -> None:
    """Exact entry versions (content and evidence) at a Revision."""

    async def body(svc: Any) -> None:
        from powercontext.core.models import HandoffCitation

        ref = await _resolve(c, svc, memory_name)
        current = await svc.entries(ref, list(entry_ids))
        views = await svc.expand(
            [HandoffCitation(ref, i, current[i].entry_version_id) for i in entry_ids]
        )

        def human() -> None:
            for v in views:
                click.echo(f"{v.entry_id} v{v.version} ({v.kind}) {v.entry_version_id}")
                click.echo(f"  {v.text}")
                for s in v.sources:
                    click.echo(f"  evidence: {s.source_id}")

        c.emit([_version_json(v) for v in views], human)

    c.run(body)


@memory.command()
@click.argument("memory_name", metavar="MEMORY")
@click.argument("entry_id")
@pass_ctx
def cite(c: Ctx, memory_name: str, entry_id: str) -> None:
    """A Handoff citation (ArtifactRef + entry_id + entry_version_id) as JSON."""

    async def body(svc: Any) -> None:
        ref = await _resolve(c, svc, memory_name)
        version = (await svc.entries(ref, [entry_id]))[entry_id]
        click.echo(json.dumps(_citation_json(svc.cite(version, ref)), sort_keys=True))

    c.run(body)


@memory.command("validate-citation")
@click.argument("citation", metavar="JSON|FILE|-")
@pass_ctx
def validate_citation(c: Ctx, citation: str) -> None:
    """Check a citation against its exact Revision (exit 6 when invalid)."""

    async def body(svc: Any) -> None:
        v = await svc.validate_citation(_parse_citation(citation))
        c.emit(
            {"valid": True, "entry": _version_json(v)},
            lambda: click.echo(f"valid: {v.entry_id} v{v.version}: {v.text}"),
        )

    c.run(body)


@memory.command()
@click.option(
    "--migrate",
    is_flag=True,
    help="Switch the database to the --embedding model's profile (drops and "
    "rebuilds every vector) and make that model the one later commands use.",
)
@click.option(
    "--resume",
    "resume_only",
    is_flag=True,
    help="Only clear a write pause left by a crashed rebuild.",
)
@click.option(
    "--rehash",
    is_flag=True,
    help="First upgrade a database written with the pre-spec Artifact content hash: "
    "verify every Revision against the old formula and rewrite only its stored hash "
    "(one transaction, writers paused).",
)
@click.option(
    "--analyzer",
    "target_analyzer",
    metavar="NAME",
    help="Migrate the full-text projection to this search analyzer (v1, v1-porter): "
    "every head row is re-analyzed and the FTS index rebuilt.",
)
@pass_ctx
def rebuild(
    c: Ctx, migrate: bool, resume_only: bool, rehash: bool, target_analyzer: str | None
) -> None:
    """Offline rebuild of heads, FTS and vectors from the authoritative tables.

    Pauses every writer, re-validates each Memory's manifest and hashes, rebuilds its
    projections, shows progress on stderr, then resumes writers. Vectors come from the
    model every command uses (--embedding, $POWERCONTEXT_EMBEDDING*, else the one this
    database remembers). A vector that cannot be refilled (no model, the model down, a
    refused vector) is kept as stored; each entry left without one is listed. Use it
    after the embedding model was down, after a crash, with --migrate to move to a new
    embedding profile, with --analyzer NAME to move to another search analyzer (also the
    fix for an "analyzer mismatch" error), or with --rehash once on a database written
    before the hashes followed the spec (see README, "Hashes, and upgrading an older
    database").
    """
    from rich.console import Console
    from rich.progress import Progress

    from powercontext.plugins.registry import Registry
    from powercontext.ports import MemoryRebuild
    from powercontext.runtime import check_sqlite_path, remember_embedding, resolve_embedding

    check_sqlite_path(c.db_url)
    registry = Registry()
    backend = registry.backend_for_url(c.db_url, profile=None)
    if not isinstance(backend, MemoryRebuild):
        raise click.UsageError(f"the backend for {c.db_url} has no offline rebuild")

    async def body(_: Any) -> None:
        rehashed = None
        nonlocal backend
        if c.analyzer is not None:  # the analyzer a new database records (typed errors here)
            backend = registry.backend_for_url(c.db_url, profile=None, analyzer=c.analyzer)
        if not isinstance(backend, MemoryRebuild):
            raise click.UsageError(f"the backend for {c.db_url} has no offline rebuild")
        backend.allow_analyzer_migration()  # the rebuild is what migrates a mismatch
        try:
            if resume_only:
                await backend.resume_writes()
                c.emit({"resumed": True}, lambda: click.echo("Writes resumed."))
                return
            name, options, model = resolve_embedding(
                c.db_url, c.embedding, registry=registry, remember=False
            )
            if migrate and model is None:
                raise click.UsageError("--migrate needs the new model: --embedding NAME")
            if rehash:
                rehashed = await backend.rehash()
            caps = await backend.capabilities()
            stored = caps.embedding_profile
            new_profile = None
            if model is not None and stored != model.profile:
                if not migrate:
                    raise click.UsageError(
                        f"the database's embedding profile is {stored}; the model's is "
                        f"{model.profile}. Pass --migrate to switch (all vectors are rebuilt)."
                    )
                new_profile = model.profile
            with Progress(transient=True, console=Console(stderr=True), disable=c.as_json) as bar:
                task = bar.add_task("rebuilding", total=None)

                def tick(done: int, total: int, artifact_id: str) -> None:
                    bar.update(task, total=total, completed=done, description=artifact_id)

                report = await backend.rebuild(
                    model, new_profile=new_profile, analyzer=target_analyzer, progress=tick
                )
            if migrate and name is not None:
                remember_embedding(c.db_url, name, options)
        finally:
            await backend.close()

        def human() -> None:
            click.echo(
                ("" if rehashed is None else
                 "Hashes already follow the spec. " if rehashed.already else
                 f"Rewrote the stored hash of {rehashed.rewritten} Revisions. ")
                + f"Rebuilt {report.memories} Memories: {report.entries} active "
                f"entries, {report.vectors} vectors"
                + (f" ({report.kept} kept as stored)" if report.kept else "")
                + f", analyzer {report.analyzer}"
                + (
                    f"; still incomplete: {', '.join(report.incomplete)}"
                    if report.incomplete
                    else "."
                )
            )
            for artifact_id, entry_id, reason in report.missing:
                click.echo(f"  no vector for {entry_id} in {artifact_id}: {reason}")

        c.emit(
            {
                "memories": report.memories,
                "entries": report.entries,
                "vectors": report.vectors,
                "kept": report.kept,
                "embedding": name,
                "incomplete": report.incomplete,
                "missing": [
                    {"artifact_id": a, "entry_id": e, "reason": r}
                    for a, e, r in report.missing
                ],
                "corrupt": [{"artifact_id": a, "error": e} for a, e in report.corrupt],
                "analyzer": report.analyzer,
                **({} if rehashed is None else {"rehash": {
                    "rewritten": rehashed.rewritten,
                    "already_current": rehashed.already,
                    "corrupt": [{"artifact_id": a, "revision": r, "error": e}
                                for a, r, e in rehashed.corrupt],
                }}),
            },
            human,
        )
        if rehashed is not None and rehashed.corrupt:
            for artifact_id, revision, error in rehashed.corrupt:
                click.echo(f"powercontext: integrity error in {artifact_id}@{revision}: {error} "
                           "(its stored hash was left as it was)", err=True)
        if report.corrupt or (rehashed is not None and rehashed.corrupt):
            for artifact_id, error in report.corrupt:
                click.echo(f"powercontext: integrity error in {artifact_id}: {error} "
                           "(its projection was left as it was)", err=True)
            sys.exit(EXIT_INTEGRITY)

    class _NoService:
        async def close(self) -> None:
            pass

    c._service = _NoService()
    c.run(body)


_register_subcommands()


def _wants_json(args: Sequence[str]) -> bool:
    """Whether the global ``--json`` was given (parsed by the group itself, so an option
    value that happens to read ``--json`` does not count)."""
    try:
        ctx = cli.make_context("powercontext", list(args), resilient_parsing=True)
    except Exception:
        return "--json" in args
    return bool(ctx.params.get("as_json"))


def main(argv: Sequence[str] | None = None) -> None:
    """The ``powercontext`` entry point: runs the command and turns every error,
    usage errors and Ctrl-C included, into one line (or one JSON object with ``--json``)
    and its exit code (see :mod:`powercontext.adapters.cli.context`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        rv = cli.main(args=args, prog_name="powercontext", standalone_mode=False)
    except SystemExit:
        raise
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BaseException as exc:
        fail_with(exc, _wants_json(args))
    sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else 0)


if __name__ == "__main__":
    main()
