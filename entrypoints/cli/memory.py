"""Writing commands of ``powercontext memory``: ``remember``, ``forget``,
``reactivate`` and ``organize`` (Memory RFC, "remember()", "forget()", "reactivate()",
"organize()"). Each writes at most one new Revision of a Memory named ``ID``, ``ID@REV``
(must be the head) or ``key:NAME``, settles an unknown COMMIT outcome and reports the
write (:mod:`powercontext.entrypoints.cli.writes`). Registered by
:mod:`powercontext.entrypoints.cli.main`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx, resolve
from powercontext.entrypoints.cli.writes import changes_of, report_write, settled

__all__ = ["entry_specs", "forget", "organize", "reactivate", "remember", "retire"]


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


@click.command()
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
        specs = entry_specs(entries_file)
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
        from powercontext.memory_names import remember_entries

        for f, src in zip(source_files, srcs, strict=True):
            # refused before anything is stored, naming the file and line (exit 2)
            for where, found in source_findings(src, svc.secret_scanner.scan)[:1]:
                field = f"--source {f}" + ("" if where == "content" else f" ({where})")
                raise SecretDetectedError(field, found.rule, found.description, found.line)
        base, after = await remember_entries(
            svc, memory=name, key=key, entries=specs, sources=srcs,
            settle=functools.partial(settled, svc))
        report_write(c, base, after, "Remembered", await changes_of(svc, base, after))

    c.run(body)


_SPEC_FIELDS: dict[str, type | tuple[type, ...]] = {
    "kind": str, "text": str, "reason": (str, type(None)), "revise": (str, type(None))}


def entry_specs(entries_file: Any) -> list[dict[str, Any]]:
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
            base = await resolve(svc, memory_name)
            fn = svc.forget if op == "forget" else svc.reactivate
            after = await settled(svc, lambda: fn(base, list(entry_ids), reason=reason))
            report_write(c, base, after, "Forgot" if op == "forget" else "Reactivated",
                         await changes_of(svc, base, after))

        c.run(body)

    return command


forget = click.command(
    "forget", help="Mark entries inactive in a new Revision (history is kept).")(
    _state_command("forget"))
reactivate = click.command(
    "reactivate", help="Make inactive entries active again (same versions).")(
    _state_command("reactivate"))


@click.command()
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
        base = await resolve(svc, memory_name)
        after = await settled(svc, lambda: svc.organize(base, steps or ("default",)))
        report_write(c, base, after, "Organized", await changes_of(svc, base, after))

    c.run(body)



@click.command()
@click.argument("memory_name", metavar="MEMORY")
@click.option("--reason", help="Why (at most 512 code points; default: retired).")
@pass_ctx
def retire(c: Ctx, memory_name: str, reason: str | None) -> None:
    """Retire a Memory created by mistake: mark every active entry inactive in one new
    Revision (history and citations stay valid) and remove the keys that name it, so
    `key:NAME` names nothing and the key can name another Memory.

    \b
    powercontext memory list
    powercontext memory retire key:key:repo:/home/me/project
    """

    async def body(svc: Any) -> None:
        from powercontext.core.shapes import to_json
        from powercontext.memory_names import retire_memory

        done = await retire_memory(svc, memory_name, reason=reason,
                                   settle=lambda write: settled(svc, write))
        data = {"artifact_id": done.artifact_id, "before": to_json(done.before),
                "memory_ref": to_json(done.after), "forgotten": list(done.forgotten),
                "keys_removed": list(done.keys)}

        def human() -> None:
            if done.forgotten:
                click.echo(f"Retired {done.artifact_id}: {len(done.forgotten)} entr"
                           f"{'y' if len(done.forgotten) == 1 else 'ies'} marked inactive in "
                           f"Revision {done.after.revision} (history kept: "
                           f"{done.artifact_id}@{done.before.revision} still reads them).")
            else:
                click.echo(f"Retired {done.artifact_id}: no active entries; Revision "
                           f"{done.after.revision} unchanged.")
            for key in done.keys:
                click.echo(f"  key removed: {key} (key:{key} names no Memory now)")
            if not done.keys:
                click.echo("  no key named it")

        c.emit(data, human)

    c.run(body)
