"""What every ``powercontext setup HOST`` shares: where it writes and what its commands
name (:func:`place`), the words of the commands (:func:`hook_argv`, :func:`mcp_args`),
the report of the files written (:func:`apply`), the extras a configured tool needs,
and the options every host's setup takes.

Project-scoped files are committed by a team, so nothing machine-specific goes into
them: with ``--scope project`` the commands name the bare ``powercontext`` when the one
on PATH is this installation; when it is not on PATH (or another program answers to
the name), or a ``--db`` or an absolute ``--command`` is given, the configuration goes
to the user scope instead, and setup says which and why.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx

__all__ = ["Placement", "apply", "guarded", "hook_argv", "mcp_args", "missing_extras",
           "on_path", "place", "project_root"]

SERVER_NAME = "powercontext"


def installation() -> Path | None:
    """This installation's ``powercontext`` script, or None."""
    beside = Path(sys.executable).parent / "powercontext"
    return beside if beside.exists() else None


def program(command: str | None) -> str:
    """The executable agents run: ``--command``, else the ``powercontext`` script of
    this installation (absolute, so an agent's PATH need not hold the venv)."""
    if command:
        return command
    mine = installation()
    return str(mine) if mine is not None else "powercontext"


def on_path() -> bool:
    """True when ``powercontext`` on PATH is this installation (the same file), so a
    bare ``powercontext`` runs it."""
    found = shutil.which("powercontext")
    mine = installation()
    if found is None:
        return False
    if mine is None:
        return True
    try:
        return Path(found).resolve() == mine.resolve()
    except OSError:
        return False


class Placement:
    """Where a setup writes and what its commands name: ``scope`` (``project`` or
    ``user``), ``program`` (the executable), ``db`` (the ``--db`` words) and ``why``
    (one sentence for the report when the scope differs from the one asked for, or how
    the program was chosen)."""

    def __init__(self, scope: str, program: str, db: list[str], why: str) -> None:
        self.scope = scope
        self.program = program
        self.db = db
        self.why = why


def db_args(c: Ctx) -> list[str]:
    if not c.db:
        return []
    from powercontext.database_path import sqlite_path

    path = sqlite_path(c.db)
    return ["--db", str(path.resolve()) if path is not None and "://" not in c.db else c.db]


def place(c: Ctx, scope: str, command: str | None, *, explicit_files: bool) -> Placement:
    """The :class:`Placement` of a setup asked for ``scope``. A project-scoped file is
    committed by a team, so it gets no machine-specific path: the bare
    ``powercontext`` when the one on PATH is this installation; otherwise (not on
    PATH, another program on PATH under that name, a ``--db``, an absolute
    ``--command``) the user scope, and ``why`` says so. Files named explicitly
    (``--settings``, ``--mcp-config``, ``--config``) are written as asked."""
    db = db_args(c)
    if scope == "user" or explicit_files:
        return Placement(scope, program(command), db, "")
    if command is not None and not os.path.isabs(command) and not db:
        return Placement("project", command, db, f"the project files run `{command}`")
    reasons = []
    if command is not None and os.path.isabs(command):
        reasons.append(f"--command {command} is a path on this machine")
    elif command is None and not on_path():
        mine = installation()
        reasons.append("`powercontext` is not on PATH" if shutil.which("powercontext") is None
                       else f"`powercontext` on PATH ({shutil.which('powercontext')}) is not "
                            "this installation")
        if mine is not None:
            reasons[-1] += f" (this installation is {mine})"
    if db:
        reasons.append(f"--db {db[-1]} is a database on this machine")
    if not reasons:
        return Placement("project", command or "powercontext", db,
                         "the project files run the bare `powercontext` (on PATH), so they "
                         "can be committed")
    fix = (f"; to configure the project instead, put {Path(program(None)).parent} on PATH"
           if command is None and installation() is not None else "")
    return Placement("user", program(command), db,
                     f"wrote the user scope, not the project's files a team commits: "
                     f"{' and '.join(reasons)}{fix}")


def hook_argv(where: Placement, host: str) -> list[str]:
    """The words of ``powercontext [--db DB] hook HOST`` for ``where``."""
    return [where.program, *where.db, "hook", host]


def hook_command(where: Placement, host: str) -> str:
    """:func:`hook_argv` as one shell command line (each word quoted as needed)."""
    import shlex

    return " ".join(shlex.quote(x) for x in hook_argv(where, host))


def mcp_args(db: list[str], allow_writes: bool) -> list[str]:
    """The MCP server's arguments after the program: ``[--db DB] mcp [--allow-writes]``."""
    return [*db, "mcp", *(["--allow-writes"] if allow_writes else [])]


def project_root(project: str | None) -> Path:
    from powercontext.entrypoints.cli.hook_payload import repo_root

    return repo_root(project or os.getcwd())


_EXTRA_NEEDS = {"mcp": ("mcp.server.mcpserver", "the MCP server (powercontext mcp)")}
"""extra -> (the module the configured tool imports, what needs it)."""


def missing_extras(names: tuple[str, ...]) -> list[str]:
    """One sentence per extra a configured tool needs that this installation lacks."""
    out = []
    for name in names:
        module, what = _EXTRA_NEEDS[name]
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(f"{what} needs the `{name}` extra, which is not installed: "
                       f"pip install -c constraints.txt -e '.[{name}]' (in the checkout); "
                       "the configuration is written, and the agent reports the server as "
                       "failed until then (or run setup again with --no-mcp)")
    return out


def apply(c: Ctx, agent: str, files: list[Any], dry_run: bool, hint: str = "", *,
          where: Placement | None = None, warnings: list[str] | None = None) -> None:
    """Write ``files`` (:class:`~powercontext.entrypoints.cli.hosts.files.ConfigFile`;
    with ``dry_run`` only their diffs) and report them: ``{"agent", "dry_run", "files":
    [{"path", "changed", "backup", "diff"}], "scope", "command", "placement",
    "warnings"}`` with ``--json``."""
    out = []
    for f in files:
        backup = None if dry_run else f.write()
        out.append({"path": str(f.path), "changed": f.changed,
                    "backup": None if backup is None else str(backup),
                    "diff": f.diff() if dry_run else None})
    warnings = warnings or []

    def human() -> None:
        if where is not None and where.why:
            click.echo(f"{agent}: {where.why}.")
        for f, row in zip(files, out, strict=True):
            if dry_run:
                click.echo(f.diff() if f.changed else f"{f.path}: already set up")
            elif not f.changed:
                click.echo(f"{f.path}: already set up, unchanged")
            else:
                click.echo(f"{f.path}: written"
                           + (f" (previous file kept as {row['backup']})" if row["backup"]
                              else " (new file)"))
        for w in warnings:
            click.echo(f"warning: {w}")
        if not dry_run:
            click.echo(f"{agent} is set up; `powercontext doctor` checks it. Run "
                       "`powercontext repo bootstrap .` so the repository has a Memory."
                       + (f"\n{hint}" if hint else ""))

    c.emit({"agent": agent, "dry_run": dry_run, "files": out,
            "scope": where.scope if where else None,
            "command": where.program if where else None,
            "placement": where.why if where else "", "warnings": warnings}, human)


def guarded(c: Ctx, body: Callable[[], None]) -> None:
    """Run ``body``; any error is one line (or JSON object) and its exit code."""
    from powercontext.entrypoints.cli.context import fail_with

    try:
        body()
    except (SystemExit, click.exceptions.Exit, click.ClickException):
        raise
    except Exception as exc:
        fail_with(exc, c.as_json)


SCOPE = click.option("--scope", type=click.Choice(["project", "user"]), default="project",
                     show_default=True, help="project: files in the project (Git top-level "
                     "of --project); user: the files in your home directory.")
PROJECT = click.option("--project", type=click.Path(exists=True, file_okay=False),
                       help="Project directory for --scope project. Default: the current one.")
DRY = click.option("--dry-run", is_flag=True, help="Print the diff; write nothing.")
WRITES = click.option("--allow-writes", is_flag=True,
                      help="Configure the MCP server with --allow-writes (remember, forget, "
                           "reactivate tools).")
COMMAND = click.option("--command", "command", metavar="PROGRAM",
                       help="The powercontext executable agents run. Default: the bare "
                            "`powercontext` for project files when it is on PATH, else "
                            "this installation's by absolute path (user scope).")
NO_MCP = click.option("--no-mcp", is_flag=True, help="Only the hooks.")
