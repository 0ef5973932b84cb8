"""What every writing command shares: settling a COMMIT whose outcome is unknown
(:func:`settled`) and reporting the Revision a write made (:func:`report_write`,
``{"memory_ref", "changed", "changes"}`` with ``--json``; the shapes are
:func:`powercontext.core.shapes.to_json`'s). Used by ``memory remember``/``forget``/
``reactivate``/``organize``, ``repo`` and the Stop hook.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx

__all__ = ["changes_of", "report_write", "settled"]


def report_write(c: Ctx, before: Any, after: Any, what: str,
                 changes: tuple[Any, ...] = ()) -> None:
    """Print the outcome of a write from Revision ``before`` (an ArtifactRef or None) to
    ``after`` (the new head, the unchanged head, or None: nothing was created) with its
    MemoryChanges; ``--json``: ``{"memory_ref", "changed", "changes"}``."""
    from powercontext.core.shapes import to_json

    changed = after is not None and after != before
    data = {"memory_ref": to_json(after), "changed": changed, "changes": to_json(changes)}

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


async def settled(svc: Any, write: Callable[[], Awaitable[Any]]) -> Any:
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


async def changes_of(svc: Any, before: Any, after: Any) -> tuple[Any, ...]:
    """The MemoryChanges of Revision ``after`` when a write made it, else ``()``."""
    if after is None or after == before:
        return ()
    (rc,) = await svc.changes(after)
    return tuple(rc.changes)
