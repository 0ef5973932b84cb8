"""Gemini CLI: ``powercontext hook gemini`` and what ``setup gemini`` writes.

Gemini CLI runs command hooks named in ``settings.json`` (``.gemini/settings.json`` of
the project, ``~/.gemini/settings.json`` of the user) with the event's JSON on stdin and
parses stdout as JSON (geminicli.com/docs/hooks/reference): every event carries
``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` and ``timestamp``;
``BeforeAgent`` (after the user submits a prompt, before planning) adds ``prompt`` and
takes ``hookSpecificOutput.additionalContext``, appended to the prompt for this turn;
``AfterAgent`` (once per turn, after the final response) adds ``prompt``,
``prompt_response`` and ``stop_hook_active``. A hook is ``{"name", "type": "command",
"command", "timeout"}`` (milliseconds) inside a group ``{"matcher", "hooks": [...]}``
under ``hooks.<Event>``; MCP servers are ``mcpServers.<name>: {"command", "args"}`` of
the same file. Hooks run unless ``hooksConfig.enabled`` is false; a project's settings
are read only in a folder the user trusts.

The hook: on ``BeforeAgent`` it prints the repository Memory's matching entries (and
Topics) as ``additionalContext``, fenced and marked untrusted as for Claude Code; on
``AfterAgent`` it stores the turn (the reply as a ``task_outcome`` Source, the turn as a
``conversation`` Source of the repository's Scope, one per turn: the event names no
turn, so the turn's own text does) and may write the session's note. It always prints
one JSON object (``{}`` when it has nothing to add, and after a failure) and exits 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx
from powercontext.entrypoints.cli.hosts import common, placing

__all__ = ["EVENTS", "FIX", "NAME", "TITLE", "hook", "settings_plan", "settings_state",
           "setup", "state"]

#: event -> (the hook's name in Gemini's /hooks panel, timeout in milliseconds)
EVENTS = {"BeforeAgent": ("powercontext-recall", 10_000),
          "AfterAgent": ("powercontext-record", 60_000)}
HOOK_WORDS = "hook gemini"


@click.command("gemini")
@common.event_options
@common.turn_options
@click.pass_obj
def hook(obj: Any, **options: Any) -> None:
    """Handle one Gemini CLI hook event (JSON on stdin).

    BeforeAgent prints the matching memory (and Topics of the repository's Scope) as
    untrusted additionalContext; AfterAgent stores the turn's outcome and the turn;
    other events answer {}. Always one JSON object on stdout, exit 0.
    """
    from powercontext.entrypoints.cli.hook import _emit, _guard
    from powercontext.entrypoints.cli.hook_payload import load_object, read_stdin, sanitize

    def body() -> None:
        import os

        c = common.ctx(obj)
        payload = sanitize(load_object(read_stdin(), "hook input"))
        event = payload.get("hook_event_name")
        cwd = common.cwd_of(payload.get("cwd"), os.environ.get("GEMINI_PROJECT_DIR"))
        out: Any = {}
        if event == "BeforeAgent":
            out = common.recall(c, "gemini", payload.get("prompt"), cwd, options,
                                "BeforeAgent") or {}
        elif event == "AfterAgent":
            prompt, reply = payload.get("prompt"), payload.get("prompt_response")
            session = str(payload.get("session_id") or "")
            report = common.record(
                c, "gemini", cwd=cwd, prompt=prompt if isinstance(prompt, str) else "",
                reply=reply if isinstance(reply, str) else "", session=session, turn="",
                ids={"event": "AfterAgent", "session_id": session}, options=options)
            out = report if getattr(c, "as_json", False) else {}
        _emit(out)

    _guard("gemini", body, fallback="{}")


# --------------------------------------------------------------------------- set-up


def settings_path(scope: str, root: Path) -> Path:
    """``.gemini/settings.json`` of the project, or ``~/.gemini/settings.json``."""
    return (Path.home() if scope == "user" else root) / ".gemini" / "settings.json"


def _ours(h: Any) -> bool:
    return isinstance(h, dict) and isinstance(h.get("command"), str) \
        and HOOK_WORDS in h["command"] and "powercontext" in h["command"]


def settings_plan(path: Path, command: str, program: str, mcp_args: list[str] | None
                  ) -> Any:
    """``path`` (a Gemini CLI settings.json) with the powercontext ``BeforeAgent`` and
    ``AfterAgent`` hooks running ``command`` and, unless ``mcp_args`` is None, the
    ``powercontext`` MCP server running ``program mcp_args``; other hooks, servers and
    settings kept. InvalidInputError for a file that is not a JSON object or whose
    ``hooks``/``mcpServers`` have another shape (nothing is changed)."""
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
    for event, (name, timeout) in EVENTS.items():
        wanted = {"name": name, "type": "command", "command": command, "timeout": timeout}
        groups = section(path, hooks, event, list, where="hooks.")
        found = False
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            for i, h in enumerate(entries if isinstance(entries, list) else ()):
                if _ours(h):
                    if not found:
                        entries[i] = {**h, **wanted}  # type: ignore[index]
                    found = True
        if not found:
            groups.append({"hooks": [wanted]})
    if mcp_args is not None:
        servers = section(path, data, "mcpServers", dict)
        current = servers.get("powercontext")
        wanted_server = {"command": program, "args": mcp_args}
        servers["powercontext"] = ({**current, **wanted_server} if isinstance(current, dict)
                                   else wanted_server)
    return ConfigFile(path, before, dump_json(data))


def settings_state(path: Path) -> dict[str, Any]:
    """``{"hooks", "mcp", "hooks_off"}`` of a settings.json: both events run our hook,
    the MCP server is named, and whether ``hooksConfig.enabled`` is false."""
    from powercontext.entrypoints.cli.hosts.files import json_file

    raw = json_file(path)
    data: dict[str, Any] = raw if isinstance(raw, dict) else {}
    hooks = data["hooks"] if isinstance(data.get("hooks"), dict) else {}
    on = all(any(_ours(h) for g in (hooks.get(e) or ()) if isinstance(g, dict)
                 for h in (g.get("hooks") or ())) for e in EVENTS)
    servers = data.get("mcpServers")
    config = data.get("hooksConfig")
    return {"hooks": on, "mcp": isinstance(servers, dict) and "powercontext" in servers,
            "hooks_off": isinstance(config, dict) and config.get("enabled") is False}


NAME = "gemini"
TITLE = "Gemini CLI"
FIX = "powercontext setup gemini"


def detected(root: Path) -> bool:
    """Whether Gemini CLI is used here: ``gemini`` on PATH or a ``.gemini`` directory
    in the home or the project."""
    import shutil

    return shutil.which("gemini") is not None or any(
        (base / ".gemini").is_dir() for base in (Path.home(), root))


def state(root: Path) -> dict[str, dict[str, Any]]:
    """Per scope: ``{"hooks", "mcp", "hooks_off", "settings"}``."""
    return {scope: {**settings_state(settings_path(scope, root)),
                    "settings": str(settings_path(scope, root))}
            for scope in ("project", "user")}


@click.command(NAME)
@placing.SCOPE
@placing.PROJECT
@click.option("--settings", "settings_file", type=click.Path(dir_okay=False),
              help="Edit this settings.json instead.")
@placing.NO_MCP
@placing.WRITES
@placing.DRY
@placing.COMMAND
@pass_ctx
def setup(c: Ctx, scope: str, project: str | None, settings_file: str | None,
          no_mcp: bool, allow_writes: bool, dry_run: bool, command: str | None) -> None:
    """Gemini CLI: BeforeAgent and AfterAgent hooks and the MCP server in
    .gemini/settings.json (with --scope user ~/.gemini/settings.json). Project files get
    no machine-specific path: when the bare `powercontext` is not on PATH, or with
    --db, the user scope is written instead, and setup says so."""

    def body() -> None:
        where = placing.place(c, scope, command, explicit_files=bool(settings_file))
        root = placing.project_root(project)
        path = Path(settings_file) if settings_file else settings_path(where.scope, root)
        files = [settings_plan(path, placing.hook_command(where, NAME), where.program,
                               None if no_mcp else placing.mcp_args(where.db, allow_writes))]
        warnings = [] if no_mcp else placing.missing_extras(("mcp",))
        for p in sorted({path, settings_path("user", root)}):
            if settings_state(p)["hooks_off"]:
                warnings.append(f"Gemini CLI's hooks are turned off in {p} "
                                "(hooksConfig.enabled is false): set it to true")
        hint = ("Gemini CLI reads a project's .gemini/settings.json only in a folder you "
                "trust (it asks; or /permissions)." if where.scope == "project"
                and not settings_file else "")
        placing.apply(c, TITLE, files, dry_run, hint, where=where, warnings=warnings)

    placing.guarded(c, body)
