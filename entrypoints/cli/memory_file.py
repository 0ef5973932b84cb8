"""``powercontext memory export`` and ``powercontext memory apply``: a Memory as a
Markdown file a person edits and a team reviews in a pull request, and the edit turned
back into one Revision (:mod:`powercontext.memory_file`; the format is
:mod:`powercontext.core.memory_markdown`'s). Registered by
:mod:`powercontext.entrypoints.cli.main`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx, resolve, term_safe
from powercontext.entrypoints.cli.writes import changes_of, settled

__all__ = ["apply", "export"]


def _default_name() -> str:
    from powercontext.memory_names import repo_key

    return "key:" + repo_key(os.getcwd())


@click.command()
@click.argument("memory_name", metavar="[MEMORY]", required=False)
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False),
              help="Write the Markdown to this file (default: standard output).")
@pass_ctx
def export(c: Ctx, memory_name: str | None, output: str | None) -> None:
    """Write a Memory as Markdown a person edits and a team reviews.

    MEMORY is ID (its head), ID@REV or key:NAME; default: the Memory of the repository
    around the current directory (key:repo:<its Git top level>). Entries are grouped
    by kind, each with its entry id, version and evidence; the header names the exact
    Revision. An unchanged Memory exports to the same bytes. Edit the file, then run
    `powercontext memory apply FILE`.

    \b
    powercontext memory export -o MEMORY.md
    """

    async def body(svc: Any) -> None:
        from powercontext.core.shapes import to_json
        from powercontext.memory_file import export_text

        ref = await resolve(svc, memory_name or _default_name())
        text, count = await export_text(svc, ref)
        data = text.encode("utf-8")
        if output is not None:
            path = Path(output)
            tmp = path.with_name(f".{path.name}.powercontext-tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        report = {"memory_ref": to_json(ref), "entries": count, "path": output,
                  "bytes": len(data)}
        if c.as_json:
            if output is None:
                report["markdown"] = text
            click.echo(json.dumps(report, ensure_ascii=False, sort_keys=True))
        elif output is None:
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            click.echo(f"Exported {ref.artifact_id}@{ref.revision} ({count} active "
                       f"entr{'y' if count == 1 else 'ies'}) to {output}.")

    c.run(body)


def _plan_json(plan: Any) -> dict[str, Any]:
    return {
        "revise": [{"entry_id": v.entry_id, "from_entry_version_id": v.entry_version_id,
                    "kind": kind, "text": text} for v, kind, text in plan.revise],
        "add": [{"kind": kind, "text": text} for kind, text in plan.add],
        "forget": [{"entry_id": v.entry_id, "from_entry_version_id": v.entry_version_id}
                   for v in plan.forget],
        "unchanged": plan.unchanged,
    }


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    return term_safe(line if len(line) <= 100 else line[:99] + "…")


@click.command()
@click.argument("path", metavar="FILE", type=click.Path(exists=True, dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@pass_ctx
def apply(c: Ctx, path: str, dry_run: bool) -> None:
    """Apply an edited `memory export` file to its Memory, as one new Revision.

    A bullet whose text (or `## kind` section) changed revises that entry, a deleted
    bullet forgets its entry, a new bullet adds an entry; every change has the reason
    user_edit, and the edited file is stored as the Source the changed entries cite.
    The file must come from the Memory's current head: a file exported from an older
    Revision is refused (exit 3) and nothing is merged; export again. An unedited file
    changes nothing.
    """

    async def body(svc: Any) -> None:
        from powercontext.core.errors import InvalidInputError
        from powercontext.core.shapes import to_json
        from powercontext.memory_file import apply_file, plan_file

        try:
            text = Path(path).read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(path, f"is not UTF-8 text: {exc}") from None
        planned = await plan_file(svc, text, path)
        plan = planned.plan
        after = planned.base
        if not dry_run and not plan.empty:
            after = await settled(svc, lambda: apply_file(svc, planned))
        changes = () if dry_run else await changes_of(svc, planned.base, after)
        data = {"file": path, "dry_run": dry_run, "base": to_json(planned.base),
                "memory_ref": to_json(after), "changed": after != planned.base,
                "plan": _plan_json(plan), "changes": to_json(changes),
                "source_id": planned.source.source_id if (plan.revise or plan.add) else None}

        def human() -> None:
            base = f"{planned.base.artifact_id}@{planned.base.revision}"
            if plan.empty:
                n = plan.unchanged
                click.echo(f"{path}: no change to {base} ({n} "
                           f"{'entry' if n == 1 else 'entries'} as they are).")
                return
            click.echo(("Plan for " if dry_run else "Applied to ") + f"{base}:")
            for v, kind, new_text in plan.revise:
                moved = f" ({v.kind} -> {kind})" if kind != v.kind else ""
                click.echo(f"  revise  {v.entry_id}{moved}: {_first_line(new_text)}")
            for kind, new_text in plan.add:
                click.echo(f"  add     [{term_safe(kind)}] {_first_line(new_text)}")
            for v in plan.forget:
                click.echo(f"  forget  {v.entry_id}: {_first_line(v.text)}")
            n = plan.unchanged
            click.echo(f"  ({n} {'entry' if n == 1 else 'entries'} unchanged)")
            if dry_run:
                click.echo("Nothing was changed (--dry-run).")
            else:
                click.echo(f"{after.artifact_id} is now at Revision {after.revision}; "
                           f"export again to keep editing.")

        c.emit(data, human)

    c.run(body)
