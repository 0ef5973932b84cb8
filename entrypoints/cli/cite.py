"""``powercontext memory cite`` and ``memory validate-citation`` (Memory RFC, "Handoff
citation"): a citation is ArtifactRef + entry_id + entry_version_id, printed and read
in the HandoffCitation shape of :func:`powercontext.core.shapes.to_json`. Registered by
:mod:`powercontext.entrypoints.cli.main`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx, resolve

__all__ = ["cite", "parse_citation", "validate_citation"]


def parse_citation(text: str) -> Any:
    from powercontext.core.errors import InvalidCitationError, InvalidInputError
    from powercontext.core.shapes import citation_from_json

    if text == "-":
        text = sys.stdin.read()
    elif not text.lstrip().startswith("{"):
        path = Path(text)
        if not path.is_file():
            raise InvalidInputError("citation", f"{text!r} is neither citation JSON nor a file")
        text = path.read_text("utf-8")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidCitationError(f"not a citation JSON object: {exc}") from exc
    return citation_from_json(data)


@click.command()
@click.argument("memory_name", metavar="MEMORY")
@click.argument("entry_id")
@pass_ctx
def cite(c: Ctx, memory_name: str, entry_id: str) -> None:
    """A Handoff citation (ArtifactRef + entry_id + entry_version_id) as JSON."""

    async def body(svc: Any) -> None:
        from powercontext.core.shapes import to_json

        ref = await resolve(svc, memory_name)
        version = (await svc.entries(ref, [entry_id]))[entry_id]
        click.echo(json.dumps(to_json(svc.cite(version, ref)), sort_keys=True))

    c.run(body)


@click.command("validate-citation")
@click.argument("citation", metavar="JSON|FILE|-")
@pass_ctx
def validate_citation(c: Ctx, citation: str) -> None:
    """Check a citation against its exact Revision (exit 6 when invalid)."""

    async def body(svc: Any) -> None:
        from powercontext.core.shapes import to_json

        v = await svc.validate_citation(parse_citation(citation))
        c.emit(
            {"valid": True, "entry": to_json(v)},
            lambda: click.echo(f"valid: {v.entry_id} v{v.version}: {v.text}"),
        )

    c.run(body)

