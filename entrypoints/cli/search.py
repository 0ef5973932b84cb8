"""``powercontext memory search`` (Memory RFC, "Search and reads"): active entries of
current heads by full text, vector or both (RRF). ``--json`` prints the
MemorySearchResult shape of :func:`powercontext.core.shapes.to_json` with
``"untrusted": true``. Registered by :mod:`powercontext.entrypoints.cli.main`.
"""

from __future__ import annotations

from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx, term_line, term_text

__all__ = ["search"]


@click.command()
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
        from powercontext.core.shapes import to_json
        from powercontext.memory_names import memory_selector

        # ID and key:NAME stay "the current head", read inside the search's transaction
        refs = [await memory_selector(svc, n) for n in names]
        res = await svc.search(query, refs, limit=limit, mode=mode)

        def human() -> None:
            click.echo(f"{len(res.hits)} hit(s), mode {res.mode}"
                       + (f" (fell back: {res.fallback_reason})" if res.fallback_reason else "")
                       + ":")
            for rank, h in enumerate(res.hits, start=1):
                click.echo(f"{rank}. [{'+'.join(h.matched_by)}] {term_text(h.text)}")
                click.echo(f"   (entry {h.entry_id}, {term_line(h.kind)}, in "
                           f"{h.memory_ref.artifact_id}@{h.memory_ref.revision})")

        c.emit(dict(to_json(res), untrusted=True), human)

    c.run(body)

