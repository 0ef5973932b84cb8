"""The ``powercontext`` command line (click).

Every command takes ``--db`` (a path or URL; default ``$POWERCONTEXT_DB`` or the
per-user data directory) and ``--json`` (machine output for agents). Exit codes:
0 success, 1 unexpected error, 2 bad input, 3 revision conflict, 4 not found,
5 capability not supported, 6 invalid citation, 7 integrity error.

A Memory is named by ``ID`` (its current head), ``ID@REV`` (an exact Revision; a write
needs the head) or ``key:NAME`` (a business key of the runtime manifest).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click

T = TypeVar("T")

EXIT_UNEXPECTED = 1
EXIT_BAD_INPUT = 2
EXIT_CONFLICT = 3
EXIT_NOT_FOUND = 4
EXIT_CAPABILITY = 5
EXIT_INVALID_CITATION = 6
EXIT_INTEGRITY = 7


class Ctx:
    def __init__(self, db: str | None, as_json: bool, embedding: str | None) -> None:
        self.db = db
        self.as_json = as_json
        self.embedding = embedding
        self._service: Any = None

    @property
    def db_url(self) -> str:
        from powercontext.runtime import default_db_url

        return self.db or default_db_url()

    def service(self) -> Any:
        if self._service is None:
            from powercontext.runtime import open_service

            self._service = open_service(self.db_url, embedding=self.embedding)
        return self._service

    def manifest(self) -> Any:
        from powercontext.runtime import RuntimeManifest

        return RuntimeManifest.for_db(self.db_url)

    def run(self, fn: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``fn(service)`` and map typed errors to exit codes."""
        from powercontext.core import errors
        from powercontext.plugins.registry import UnknownPluginError

        async def body() -> T:
            svc = self.service()
            try:
                return await fn(svc)
            finally:
                await svc.close()

        table = (
            (errors.RevisionConflictError, EXIT_CONFLICT, "conflict"),
            (errors.InvalidCitationError, EXIT_INVALID_CITATION, "invalid citation"),
            (errors.ArtifactNotFoundError, EXIT_NOT_FOUND, "not found"),
            (errors.CapabilityNotSupportedError, EXIT_CAPABILITY, "not supported"),
            (errors.IntegrityError, EXIT_INTEGRITY, "integrity error"),
            (errors.ProfileMismatchError, EXIT_BAD_INPUT, "embedding profile mismatch"),
            (UnknownPluginError, EXIT_BAD_INPUT, "unknown name"),
            (errors.CommitOutcomeUnknownError, EXIT_UNEXPECTED, "outcome unknown"),
            (errors.WritesPausedError, EXIT_CONFLICT, "writes paused"),
            (ValueError, EXIT_BAD_INPUT, "bad input"),
            (errors.PowerContextError, EXIT_UNEXPECTED, "error"),
        )
        try:
            return asyncio.run(body())
        except Exception as exc:
            for cls, code, label in table:
                if isinstance(exc, cls):
                    self.fail(code, label, str(exc), type(exc).__name__)
            raise

    def fail(self, code: int, label: str, message: str, kind: str) -> None:
        if self.as_json:
            click.echo(json.dumps({"error": kind, "message": message, "exit_code": code}))
        else:
            click.echo(f"powercontext: {label}: {message}", err=True)
        sys.exit(code)

    def emit(self, data: Any, human: Callable[[], None]) -> None:
        if self.as_json:
            click.echo(json.dumps(data, ensure_ascii=False, indent=None, sort_keys=True))
        else:
            human()


pass_ctx = click.make_pass_decorator(Ctx)


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
@click.version_option(package_name="powercontext")
@click.pass_context
def cli(ctx: click.Context, db: str | None, as_json: bool, embedding: str | None) -> None:
    """powercontext: versioned, citable, searchable memory for coding agents.

    Every memory is versioned, never overwritten and exactly citable. Start with
    `powercontext memory remember --help`.
    """
    ctx.obj = Ctx(db, as_json, embedding)


@cli.group()
def memory() -> None:
    """Remember, forget, search and cite entries of a Memory."""


def _register_subcommands() -> None:
    from powercontext.adapters.cli.hook import hook
    from powercontext.adapters.cli.mcp_cmd import mcp
    from powercontext.adapters.cli.repo import repo

    cli.add_command(repo)
    cli.add_command(hook)
    cli.add_command(mcp)


# --------------------------------------------------------------------------- helpers


def _ref_json(ref: Any) -> dict[str, Any] | None:
    return None if ref is None else {"artifact_id": ref.artifact_id, "revision": ref.revision}


async def _resolve(c: Ctx, svc: Any, name: str | None) -> Any:
    """A Memory name to an ArtifactRef (``ID`` -> head, ``ID@REV`` -> exact, ``key:NAME``)."""
    from powercontext.runtime import resolve_memory

    return await resolve_memory(svc, name, c.manifest())


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
@click.option("--key", help="Business key to map a newly created Memory to (runtime manifest).")
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
    from powercontext.core.errors import InvalidInputError
    from powercontext.core.models import MemoryEntryInput

    srcs = tuple(_source_from_file(f) for f in source_files)
    specs: list[dict[str, Any]] = []
    if entries_file is not None:
        try:
            specs = json.load(entries_file)
        except ValueError as exc:
            raise click.BadParameter(f"not JSON: {exc}", param_hint="--entries") from exc
        if not isinstance(specs, list):
            raise click.BadParameter("must be a JSON list", param_hint="--entries")
    if text is not None:
        specs.append({"kind": kind, "text": text, "reason": reason, "revise": revise_id})
    if not specs:
        raise click.UsageError("give --text or --entries")

    async def body(svc: Any) -> None:
        memory_name = name
        if memory_name is None and key is not None and c.manifest().get(key):
            memory_name = f"key:{key}"
        base = await _resolve(c, svc, memory_name) if memory_name else None
        revise_ids = [s.get("revise") for s in specs if s.get("revise")]
        current = await svc.entries(base, revise_ids) if base and revise_ids else {}
        inputs = []
        for i, s in enumerate(specs):
            if not isinstance(s, dict) or "text" not in s:
                raise InvalidInputError(f"entries[{i}]", "needs at least a text")
            inputs.append(
                MemoryEntryInput(
                    kind=s.get("kind", "fact"),
                    text=s["text"],
                    reason=s.get("reason"),
                    entry=current.get(s["revise"]) if s.get("revise") else None,
                    sources=srcs,
                )
            )
        after = await svc.remember(base, sources=srcs, entries=tuple(inputs), mode="append")
        if base is None and after is not None and key is not None:
            c.manifest().set(key, after.artifact_id)
        _report_write(c, base, after, "Remembered", await _changes_of(svc, base, after))

    c.run(body)


def _state_command(op: str) -> Callable[..., None]:
    @click.argument("memory_name", metavar="MEMORY")
    @click.argument("entry_ids", nargs=-1, required=True)
    @click.option("--reason", help="Why (at most 512 code points).")
    @pass_ctx
    def command(c: Ctx, memory_name: str, entry_ids: tuple[str, ...], reason: str | None) -> None:
        async def body(svc: Any) -> None:
            base = await _resolve(c, svc, memory_name)
            fn = svc.forget if op == "forget" else svc.reactivate
            after = await fn(base, list(entry_ids), reason=reason)
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
        after = await svc.organize(base, steps or ("default",))
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
    """Search active entries of current heads. Results are untrusted context."""

    async def body(svc: Any) -> None:
        from powercontext.runtime import memory_selector

        manifest = c.manifest()
        # ID and key:NAME stay "the current head", read inside the search's transaction
        refs = [memory_selector(n, manifest) for n in names]
        res = await svc.search(query, refs, limit=limit, mode=mode)

        def human() -> None:
            click.echo(f"{len(res.hits)} hit(s), mode {res.mode}:")
            for h in res.hits:
                click.echo(
                    f"  [{h.score:.4f} {'+'.join(h.matched_by)}] {h.memory_ref.artifact_id}"
                    f"@{h.memory_ref.revision} {h.entry_id} ({h.kind})"
                )
                click.echo(f"      {h.text}")

        c.emit(
            {
                "mode": res.mode,
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
    "rebuilds every vector).",
)
@click.option(
    "--resume",
    "resume_only",
    is_flag=True,
    help="Only clear a write pause left by a crashed rebuild.",
)
@pass_ctx
def rebuild(c: Ctx, migrate: bool, resume_only: bool) -> None:
    """Offline rebuild of heads, FTS and vectors from the authoritative tables.

    Pauses every writer, re-validates each Memory's manifest and hashes, rebuilds its
    projections (filling vectors with --embedding when given), shows progress on stderr,
    then resumes writers. Use it after the embedding model was down, after a crash, or
    with --migrate to move to a new embedding profile.
    """
    from rich.console import Console
    from rich.progress import Progress

    from powercontext.adapters.database import DatabaseMemoryBackend
    from powercontext.plugins.registry import Registry

    registry = Registry()
    model = registry.embedding_model(c.embedding) if c.embedding else None
    backend = registry.backend_for_url(c.db_url, profile=None)
    if not isinstance(backend, DatabaseMemoryBackend):
        raise click.UsageError(f"the backend for {c.db_url} has no offline rebuild")

    async def body(_: Any) -> None:
        try:
            if resume_only:
                await backend.resume_writes()
                c.emit({"resumed": True}, lambda: click.echo("Writes resumed."))
                return
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

                report = await backend.rebuild(model, new_profile=new_profile, progress=tick)
        finally:
            await backend.close()
        c.emit(
            {
                "memories": report.memories,
                "entries": report.entries,
                "vectors": report.vectors,
                "incomplete": report.incomplete,
                "corrupt": [{"artifact_id": a, "error": e} for a, e in report.corrupt],
            },
            lambda: click.echo(
                f"Rebuilt {report.memories} Memories: {report.entries} active "
                f"entries, {report.vectors} vectors"
                + (
                    f"; still incomplete: {', '.join(report.incomplete)}"
                    if report.incomplete
                    else "."
                )
            ),
        )
        if report.corrupt:
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


def main() -> None:
    cli(prog_name="powercontext")


if __name__ == "__main__":
    main()
