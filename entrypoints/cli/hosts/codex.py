"""Codex: what ``powercontext setup codex`` writes and ``doctor`` checks (the hook
itself, ``powercontext hook codex``, is in :mod:`powercontext.entrypoints.cli.hook`).

Top-level ``notify = [..., "hook", "codex"]`` and ``[mcp_servers.powercontext]`` in
``$CODEX_HOME/config.toml`` (default ``~/.codex/config.toml``, the default scope: Codex
reads its notify program there; ``--scope project``: ``.codex/config.toml`` of the
project). TOML is edited with tomlkit, so comments and layout survive. Codex has one
``notify`` program: another one is replaced only with ``--force``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx
from powercontext.entrypoints.cli.hosts import placing

__all__ = ["FIX", "NAME", "TITLE", "config_path", "plan", "setup", "state"]

NAME = "codex"
TITLE = "Codex"
FIX = "powercontext setup codex --scope user"


def detected(root: Path) -> bool:
    """Codex's gaps are always reported."""
    return True


def config_path(scope: str, root: Path) -> Path:
    """``$CODEX_HOME/config.toml`` (default ``~/.codex``) for the user scope, else the
    project's ``.codex/config.toml``."""
    if scope == "user":
        home = os.environ.get("CODEX_HOME")
        return (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml"
    return root / ".codex" / "config.toml"


def plan(path: Path, program: str, db_args: list[str], force: bool, *,
         allow_writes: bool = False) -> Any:
    """``path`` (a Codex config.toml) with top-level ``notify`` running the Codex hook
    and ``[mcp_servers.powercontext]``; comments, layout and other settings are kept.
    InvalidInputError when ``notify`` names another program and ``force`` is false."""
    import tomlkit

    from powercontext.core.errors import InvalidInputError
    from powercontext.entrypoints.cli.hosts.files import ConfigFile, read

    before = read(path)
    try:
        doc = tomlkit.parse(before or "")
    except Exception as exc:  # tomlkit's ParseError and friends
        raise InvalidInputError(str(path), f"is not valid TOML ({exc}); nothing was "
                                           "changed") from exc
    notify = [program, *db_args, "hook", "codex"]
    current = doc.get("notify")
    if current is not None and list(current) != notify:
        text = " ".join(str(x) for x in current)
        if "powercontext" not in text and not force:
            raise InvalidInputError(
                f"{path}: notify", f"already runs {text!r}; Codex has one notify program. "
                "Pass --force to replace it (the old file is kept as a .bak)")
    if current is None or list(current) != notify:
        doc["notify"] = notify
    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    elif not isinstance(servers, dict):
        raise InvalidInputError(f"{path}: mcp_servers", "must be a table")
    args = placing.mcp_args(db_args, allow_writes)
    server = servers.get(placing.SERVER_NAME)
    if server is None:
        server = tomlkit.table()
        server["command"] = program
        server["args"] = args
        servers[placing.SERVER_NAME] = server
    else:
        if server.get("command") != program:
            server["command"] = program
        if list(server.get("args") or ()) != args:
            server["args"] = args
    return ConfigFile(path, before, tomlkit.dumps(doc))


def state(root: Path) -> dict[str, dict[str, Any]]:
    """Per scope: ``{"hooks", "mcp", "config"}``."""
    import tomllib

    out = {}
    for scope in ("project", "user"):
        path = config_path(scope, root)
        try:
            data = tomllib.loads(path.read_text("utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            data = {}
        notify = data.get("notify")
        servers = data.get("mcp_servers")
        out[scope] = {"hooks": isinstance(notify, list) and "codex" in notify
                      and any("powercontext" in str(x) for x in notify),
                      "mcp": isinstance(servers, dict) and placing.SERVER_NAME in servers,
                      "config": str(path)}
    return out


@click.command(NAME)
@click.option("--scope", type=click.Choice(["project", "user"]), default="user",
              show_default=True, help="user: $CODEX_HOME/config.toml (~/.codex), where Codex "
              "reads notify; project: .codex/config.toml of the project.")
@placing.PROJECT
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="Edit this config.toml instead.")
@click.option("--force", is_flag=True, help="Replace a notify program that is not ours.")
@placing.WRITES
@placing.DRY
@placing.COMMAND
@pass_ctx
def setup(c: Ctx, scope: str, project: str | None, config_file: str | None, force: bool,
          allow_writes: bool, dry_run: bool, command: str | None) -> None:
    """Codex: notify and [mcp_servers.powercontext] in ~/.codex/config.toml (default
    scope user: Codex reads its notify program from there)."""

    def body() -> None:
        where = placing.place(c, scope, command, explicit_files=bool(config_file))
        path = (Path(config_file) if config_file
                else config_path(where.scope, placing.project_root(project)))
        placing.apply(c, TITLE, [plan(path, where.program, where.db, force,
                                      allow_writes=allow_writes)], dry_run, where=where,
                      warnings=placing.missing_extras(("mcp",)))

    placing.guarded(c, body)
