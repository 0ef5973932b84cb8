"""Read-only overviews: ``memory list``, ``source show`` and ``info``.

``memory list`` names every Memory in the database (its business keys, id, head
Revision and active entries); ``source show ID`` prints a cited Source (Memory RFC,
"Source") with its metadata; ``info`` says which database, backend, Analyzer version,
embedding profile and remembered model are in use, with counts. All honour ``--json``.
"""

from __future__ import annotations

from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, LazyGroup, pass_ctx, term_line, term_safe

__all__ = ["info", "memory_list", "source"]


async def _memories(c: Ctx, svc: Any, heads: tuple[Any, ...]) -> list[dict[str, Any]]:
    from powercontext.core.shapes import to_json

    keys = await svc.keys_by_memory()
    out = []
    for head in heads:
        entries = (await svc.revision(head)).content.manifest.entries
        out.append({
            "artifact_id": head.artifact_id,
            "keys": keys.get(head.artifact_id, []),
            "memory_ref": to_json(head),
            "active_entries": sum(1 for e in entries if e.state == "active"),
            "entries": len(entries),
        })
    return out


@click.command("list")
@pass_ctx
def memory_list(c: Ctx) -> None:
    """Every Memory: its keys (stored in the database), id, head Revision and active entries.

    Name one in other commands as key:NAME, ID or ID@REV."""

    async def body(svc: Any) -> None:
        inv = await svc.inventory()
        rows = await _memories(c, svc, inv["heads"])

        def human() -> None:
            if not rows:
                click.echo("No Memory yet: powercontext memory remember --key NAME --text ...")
            for r in rows:
                ref = r["memory_ref"]
                names = ", ".join(f"key:{term_line(k)}" for k in r["keys"]) or "(no key)"
                click.echo(f"{names}  {ref['artifact_id']}  Revision {ref['revision']}  "
                           f"{r['active_entries']} active of {r['entries']} entries")

        c.emit({"memories": rows}, human)

    c.run(body)


@click.group(cls=LazyGroup, lazy={"add": "sources:source_add"})
def source() -> None:
    """Sources: the evidence entries and Topics cite (`add` writes them into a Scope)."""


@source.command("show")
@click.argument("source_id")
@pass_ctx
def source_show(c: Ctx, source_id: str) -> None:
    """A stored Source's content and metadata (kind, uri, content hash).

    Source ids appear in `memory expand` as evidence. Content is untrusted data."""
    from powercontext.core import canonical

    canonical.check_id(source_id, "source_id")

    async def body(svc: Any) -> None:
        from powercontext.core.shapes import to_json

        (src,) = await svc.backend.get_sources([source_id])
        data = dict(to_json(src), untrusted=True)

        def human() -> None:
            click.echo(f"Source {src.source_id} ({term_line(src.kind)})")
            if src.uri:
                click.echo(f"  uri:          {term_line(src.uri)}")
            click.echo(f"  content hash: {src.content_hash}")
            for k, v in src.metadata:
                click.echo(f"  {term_line(k)}: {term_line(v)}")
            click.echo("")
            click.echo(term_safe(src.content))

        c.emit(data, human)

    c.run(body)


def _profile_json(profile: Any) -> dict[str, Any] | None:
    from powercontext.core.shapes import to_json

    return to_json(profile)  # type: ignore[no-any-return]


def _remembered_model(c: Ctx) -> dict[str, Any] | None:
    state = c.manifest().get_state("embedding")
    if not isinstance(state, dict) or not state.get("name"):
        return None
    options = {k: ("***" if "key" in k.lower() else v)
               for k, v in (state.get("options") or {}).items()}
    return {"name": state["name"], "options": options}


@click.command()
@pass_ctx
def info(c: Ctx) -> None:
    """The database in use: its URL, backend, Analyzer version, embedding profile, the
    model plain commands use, and how many Memories, entries and Sources it holds.

    A SQLite file that does not exist yet is reported, not created. A database that
    needs an upgrade (an earlier release wrote it) or another analyzer is reported with
    the one command that fixes it, and info still exits 0."""
    from powercontext.core import analyzer
    from powercontext.database_path import sqlite_path

    path = sqlite_path(c.db_url)
    base = {"database": c.db_url, "analyzer_default": analyzer.DEFAULT_VERSION,
            "analyzer_versions": sorted(analyzer.ANALYZERS),
            "remembered_model": _remembered_model(c),
            "runtime_manifest": str(c.manifest().path)}
    if path is not None and not path.exists():
        data = dict(base, exists=False, backend=None, analyzer_version=None,
                    embedding_profile=None, memories=0, active_entries=0, entries=0,
                    sources=0, writes_paused=False, upgrade=None)
        c.emit(data, lambda: _print_info(data))
        return

    async def body(svc: Any) -> None:
        from powercontext.core.errors import ProfileMismatchError, UpgradeRequiredError

        try:
            inv = await svc.inventory()
            caps = await svc.backend.capabilities()
            rows = await _memories(c, svc, inv["heads"])
        except (UpgradeRequiredError, ProfileMismatchError) as exc:
            # info always answers: what the database needs, and the one command
            data = dict(base, exists=True, backend=type(svc.backend).__name__,
                        analyzer_version=getattr(exc, "stored", None), embedding_profile=None,
                        memories=None, active_entries=None, entries=None, sources=None,
                        writes_paused=None, upgrade={
                            "error": type(exc).__name__, "message": str(exc),
                            "command": getattr(exc, "command", None)})
            c.emit(data, lambda: _print_info(data))
            return
        data = dict(
            base, exists=True, backend=type(svc.backend).__name__,
            analyzer_version=inv["analyzer_version"],
            embedding_profile=_profile_json(caps.embedding_profile),
            memories=len(rows), active_entries=sum(r["active_entries"] for r in rows),
            entries=sum(r["entries"] for r in rows), sources=inv["sources"],
            writes_paused=inv["writes_paused"], fts=caps.fts, vector=caps.vector,
            upgrade=None)
        c.emit(data, lambda: _print_info(data))

    c.run(body)


def _print_info(d: dict[str, Any]) -> None:
    click.echo(f"database:         {d['database']}"
               + ("" if d["exists"] else "  (does not exist yet)"))
    click.echo(f"backend:          {d['backend'] or '-'}")
    upgrade = d.get("upgrade")
    if upgrade:
        click.echo(f"needs upgrade:    {upgrade['message']}")
        if upgrade["command"]:
            click.echo(f"upgrade with:     {upgrade['command']}")
        click.echo(f"runtime manifest: {d['runtime_manifest']}")
        return
    recorded = d["analyzer_version"]
    click.echo(f"analyzer version: {recorded or 'not recorded'} "
               f"(this code knows {', '.join(d['analyzer_versions'])}; a new database gets "
               f"{d['analyzer_default']} unless --analyzer says otherwise)")
    p = d["embedding_profile"]
    click.echo("embedding profile: " + (", ".join(f"{k}={v}" for k, v in p.items()) if p
                                       else "none (full-text search only)"))
    m = d["remembered_model"]
    click.echo("remembered model: " + (m["name"] if m else "none"))
    click.echo(f"memories:         {d['memories']} ({d['active_entries']} active of "
               f"{d['entries']} entries)")
    click.echo(f"sources:          {d['sources']}")
    if d.get("writes_paused"):
        click.echo("writes:           PAUSED (powercontext memory rebuild --resume)")
    click.echo(f"runtime manifest: {d['runtime_manifest']}")
