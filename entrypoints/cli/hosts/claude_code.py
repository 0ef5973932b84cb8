"""Claude Code: what ``powercontext setup claude-code`` writes and ``doctor`` checks (the
hook itself, ``powercontext hook claude-code``, is in :mod:`powercontext.entrypoints.cli.
hook`, with the hook daemon that answers its prompts).

``UserPromptSubmit`` and ``Stop`` hooks running ``powercontext hook claude-code`` go to
``.claude/settings.json`` (``--scope project``, the default: the Git top level of
``--project``) or ``~/.claude/settings.json`` (``--scope user``); the ``powercontext``
stdio MCP server to ``.mcp.json`` (project) or ``~/.claude.json`` (user), the files
``claude mcp add`` writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx
from powercontext.entrypoints.cli.hosts import placing

__all__ = ["FIX", "HOOK_TIMEOUTS", "NAME", "TITLE", "mcp_plan", "paths", "settings_plan",
           "setup", "state"]

NAME = "claude-code"
TITLE = "Claude Code"
FIX = "powercontext setup claude-code"
#: event -> timeout in seconds
HOOK_TIMEOUTS = {"UserPromptSubmit": 10, "Stop": 60}
HOOK_WORDS = "hook claude-code"


def detected(root: Path) -> bool:
    """Claude Code's gaps are always reported."""
    return True


def _ours(hook: Any) -> bool:
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) \
        and HOOK_WORDS in hook["command"] and "powercontext" in hook["command"]


def paths(scope: str, root: Path) -> tuple[Path, Path]:
    """(settings.json, MCP file) of Claude Code for ``scope``."""
    if scope == "user":
        home = Path.home()
        return home / ".claude" / "settings.json", home / ".claude.json"
    return root / ".claude" / "settings.json", root / ".mcp.json"


def settings_plan(path: Path, command: str) -> Any:
    """``path`` (a Claude Code settings.json) with the powercontext UserPromptSubmit and
    Stop hooks set to ``command``; other hooks and settings are kept."""
    from powercontext.entrypoints.cli.hosts.files import (
        ConfigFile,
        dump_json,
        load_json,
        read,
        section,
    )

    before = read(path)
    data = load_json(path, before)
    hooks = section(path, data, "hooks", dict)
    for event, timeout in HOOK_TIMEOUTS.items():
        wanted = {"type": "command", "command": command, "timeout": timeout}
        groups = section(path, hooks, event, list, where="hooks.")
        found = False
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                continue
            for i, h in enumerate(entries):
                if _ours(h):
                    if not found:
                        entries[i] = {**h, **wanted}
                    found = True
        if not found:
            groups.append({"hooks": [wanted]})
    return ConfigFile(path, before, dump_json(data))


def mcp_plan(path: Path, program: str, args: list[str]) -> Any:
    """``path`` (``.mcp.json`` or ``~/.claude.json``) with ``mcpServers.powercontext``
    running ``program args``; other servers and keys are kept."""
    from powercontext.entrypoints.cli.hosts.files import (
        ConfigFile,
        dump_json,
        load_json,
        read,
        section,
    )

    before = read(path)
    data = load_json(path, before)
    servers = section(path, data, "mcpServers", dict)
    current = servers.get(placing.SERVER_NAME)
    wanted = {"type": "stdio", "command": program, "args": args}
    if isinstance(current, dict):
        wanted = {**current, **wanted}
    servers[placing.SERVER_NAME] = wanted
    return ConfigFile(path, before, dump_json(data))


def state(root: Path) -> dict[str, dict[str, Any]]:
    """Per scope: ``{"hooks", "mcp", "settings", "mcp_file"}``."""
    from powercontext.entrypoints.cli.hosts.files import json_file

    out = {}
    for scope in ("project", "user"):
        settings, mcp_file = paths(scope, root)
        data = json_file(settings)
        hooks = data.get("hooks") if isinstance(data, dict) else None
        on = all(any(_ours(h) for g in (groups if isinstance(groups, list) else ())
                     if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                     for h in g["hooks"])
                 for groups in ((hooks.get(e) if isinstance(hooks, dict) else None)
                                for e in HOOK_TIMEOUTS))
        mcp = json_file(mcp_file)
        servers = mcp.get("mcpServers") if isinstance(mcp, dict) else None
        out[scope] = {"hooks": on, "mcp": isinstance(servers, dict)
                      and placing.SERVER_NAME in servers,
                      "settings": str(settings), "mcp_file": str(mcp_file)}
    return out


@click.command(NAME)
@placing.SCOPE
@placing.PROJECT
@click.option("--settings", "settings_path", type=click.Path(dir_okay=False),
              help="Write the hooks to this settings.json instead.")
@click.option("--mcp-config", "mcp_path", type=click.Path(dir_okay=False),
              help="Write the MCP server to this file instead (an .mcp.json).")
@placing.NO_MCP
@placing.WRITES
@placing.DRY
@placing.COMMAND
@pass_ctx
def setup(c: Ctx, scope: str, project: str | None, settings_path: str | None,
          mcp_path: str | None, no_mcp: bool, allow_writes: bool, dry_run: bool,
          command: str | None) -> None:
    """Claude Code: UserPromptSubmit and Stop hooks (.claude/settings.json) and the MCP
    server (.mcp.json; with --scope user ~/.claude/settings.json and ~/.claude.json).
    Project files get no machine-specific path: when the bare `powercontext` is not on
    PATH, or with --db, the user scope is written instead, and setup says so."""

    def body() -> None:
        from powercontext.entrypoints.cli.hook_daemon import setup_hint

        where = placing.place(c, scope, command,
                              explicit_files=bool(settings_path or (mcp_path and not no_mcp)))
        settings, mcp_file = paths(where.scope, placing.project_root(project))
        files = [settings_plan(Path(settings_path) if settings_path else settings,
                               placing.hook_command(where, NAME))]
        warnings = []
        if not no_mcp:
            files.append(mcp_plan(Path(mcp_path) if mcp_path else mcp_file, where.program,
                                  placing.mcp_args(where.db, allow_writes)))
            warnings += placing.missing_extras(("mcp",))
        placing.apply(c, TITLE, files, dry_run, setup_hint(where.db), where=where,
                      warnings=warnings)

    placing.guarded(c, body)
