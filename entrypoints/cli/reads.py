"""Reading commands of ``powercontext memory``: ``changes``, ``show`` and ``expand``
(Memory RFC, "changes()", "expand()", "Search and reads"). Each reads one Revision of a
Memory named ``ID`` (its head), ``ID@REV`` or ``key:NAME``; ``--json`` prints the
shapes of :func:`powercontext.core.shapes.to_json` (MemoryRevisionChanges, entry
versions). Registered by :mod:`powercontext.entrypoints.cli.main`.
"""

from __future__ import annotations

from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx, resolve, term_line, term_text

__all__ = ["changes", "expand", "show"]


@click.command()
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
        from powercontext.core.shapes import to_json

        ref = await resolve(svc, memory_name)
        out = await svc.changes(ref, since)

        def human() -> None:
            for rc in out:
                click.echo(f"Revision {rc.memory_ref.revision}:")
                for ch in rc.changes:
                    click.echo(
                        f"  {ch.op:<10} {ch.entry_id}  {ch.from_entry_version_id or '-'} -> "
                        f"{ch.to_entry_version_id or '-'}"
                        + (f"  ({term_line(ch.reason)})" if ch.reason else "")
                    )

        c.emit(to_json(out), human)

    c.run(body)


@click.command()
@click.argument("memory_name", metavar="MEMORY")
@click.option("--all", "show_all", is_flag=True, help="Include inactive entries.")
@pass_ctx
def show(c: Ctx, memory_name: str, show_all: bool) -> None:
    """The manifest of a Revision (default: the head) with entry texts: rules
    (constraints, preferences, decisions) first, then facts, then working notes."""

    async def body(svc: Any) -> None:
        from powercontext.core.recall import kind_rank
        from powercontext.core.shapes import to_json

        ref = await resolve(svc, memory_name)
        rev = await svc.revision(ref)
        items = [e for e in rev.content.manifest.entries if show_all or e.state == "active"]
        versions = await svc.entries(ref, [e.entry_id for e in items])
        # rules (constraints, preferences, decisions), then facts, then working notes
        items.sort(key=lambda e: kind_rank(versions[e.entry_id].kind))

        def human() -> None:
            total = len(rev.content.manifest.entries)
            active = sum(1 for e in rev.content.manifest.entries if e.state == "active")
            click.echo(
                f"{ref.artifact_id} Revision {ref.revision}: {active} active of {total} "
                f"entries; content hash {rev.content_hash}"
            )
            for e in items:
                v = versions[e.entry_id]
                click.echo(f"  {e.entry_id} v{v.version} {e.state:<8} {term_line(v.kind):<12} "
                           f"{term_text(v.text, '    ')}")

        c.emit(
            {
                "memory_ref": to_json(ref),
                "content_hash": rev.content_hash,
                "entries": [
                    dict(to_json(versions[e.entry_id]), state=e.state) for e in items
                ],
            },
            human,
        )

    c.run(body)


@click.command()
@click.argument("memory_name", metavar="MEMORY")
@click.argument("entry_ids", nargs=-1, required=True)
@pass_ctx
def expand(c: Ctx, memory_name: str, entry_ids: tuple[str, ...]) -> None:
    """Exact entry versions (content and evidence) at a Revision."""

    async def body(svc: Any) -> None:
        from powercontext.core.models import HandoffCitation
        from powercontext.core.shapes import to_json

        ref = await resolve(svc, memory_name)
        current = await svc.entries(ref, list(entry_ids))
        views = await svc.expand(
            [HandoffCitation(ref, i, current[i].entry_version_id) for i in entry_ids]
        )

        def human() -> None:
            for v in views:
                click.echo(f"{v.entry_id} v{v.version} ({term_line(v.kind)}) {v.entry_version_id}")
                click.echo(f"  {term_text(v.text, '  ')}")
                for s in v.sources:
                    click.echo(f"  evidence: {s.source_id}")

        c.emit(to_json(views), human)

    c.run(body)

