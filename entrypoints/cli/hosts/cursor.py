"""Cursor: ``powercontext hook cursor`` and what ``setup cursor`` writes.

Cursor runs the commands of ``hooks.json`` (``.cursor/hooks.json`` of the project,
``~/.cursor/hooks.json`` of the user: ``{"version": 1, "hooks": {"<event>":
[{"command": ...}]}}``) with the event's JSON on stdin and reads a JSON answer on stdout
(cursor.com/docs/agent/hooks). Every event carries ``conversation_id``,
``generation_id``, ``hook_event_name`` and ``workspace_roots`` (newer releases also
``model``, ``cursor_version``, ``user_email``, ``transcript_path``);
``beforeSubmitPrompt`` adds ``prompt`` and ``attachments`` and answers ``{"continue":
true}`` (it cannot add context to the prompt), ``afterAgentResponse`` adds ``text`` (the
agent's message), ``stop`` adds ``status`` (``completed``, ``aborted``, ``error``) and
``loop_count``. MCP servers are ``mcpServers.<name>: {"command", "args"}`` of
``.cursor/mcp.json`` (or ``~/.cursor/mcp.json``).

Cursor has no hook that adds context to a prompt, so the Memory reaches the agent
through the MCP server. The turn is recorded in three steps: ``beforeSubmitPrompt``
keeps the prompt (secrets redacted) in a small file of the data directory
(``hooks/cursor/<hash of the conversation>.json``, mode 0600), each
``afterAgentResponse`` keeps the latest reply there, and ``stop`` stores the turn (the
reply as a ``task_outcome`` Source, the turn as a ``conversation`` Source of the
repository's Scope, its id the ``generation_id``; a session note unless trivial) and
removes the file. The hook always answers one JSON object and exits 0.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx
from powercontext.entrypoints.cli.hosts import common, placing

__all__ = ["EVENTS", "FIX", "NAME", "TITLE", "hook", "hooks_plan", "hooks_state",
           "mcp_plan", "setup", "state"]

NAME = "cursor"
TITLE = "Cursor"
FIX = "powercontext setup cursor"


def detected(root: Path) -> bool:
    """Whether Cursor is used here: ``cursor`` or ``cursor-agent`` on PATH or a
    ``.cursor`` directory in the home or the project."""
    import shutil

    return any(shutil.which(x) for x in ("cursor", "cursor-agent")) or any(
        (base / ".cursor").is_dir() for base in (Path.home(), root))

EVENTS = ("beforeSubmitPrompt", "afterAgentResponse", "stop")
HOOK_WORDS = "hook cursor"
#: prompt and reply kept between the events, at most (characters)
MAX_KEPT_CHARS = 64_000
#: a kept turn whose stop never came (Cursor closed, the hook timed out) is removed
#: by the next prompt of any conversation once it is this old (seconds)
STALE_SECONDS = 7 * 24 * 3600


def _stash_path(conversation: str) -> Path:
    import hashlib

    from powercontext.paths import data_dir

    digest = hashlib.sha256(conversation.encode("utf-8", "replace")).hexdigest()[:32]
    return data_dir() / "hooks" / "cursor" / f"{digest}.json"


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _keep(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False)
    os.replace(tmp, path)


def _sweep(folder: Path, keep: Path) -> None:
    """Remove the kept turns (and temporary files) of ``folder`` not touched for
    :data:`STALE_SECONDS`, except ``keep``; a file that vanishes meanwhile is fine."""
    import time

    cutoff = time.time() - STALE_SECONDS
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        try:
            if entry != keep and entry.is_file() and entry.stat().st_mtime < cutoff:
                entry.unlink()
        except OSError:
            continue


def _redacted(text: Any) -> str:
    from powercontext.adapters.secret_scanner import redact_all

    if not isinstance(text, str) or not text.strip():
        return ""
    return redact_all(text.strip()[:MAX_KEPT_CHARS])


@click.command("cursor")
@common.turn_options
@click.pass_obj
def hook(obj: Any, **options: Any) -> None:
    """Handle one Cursor hook event (JSON on stdin).

    beforeSubmitPrompt keeps the prompt and answers {"continue": true};
    afterAgentResponse keeps the latest reply; stop stores the turn's outcome and the
    turn. Always one JSON object on stdout, exit 0.
    """
    from powercontext.entrypoints.cli.hook import _emit, _guard
    from powercontext.entrypoints.cli.hook_payload import load_object, read_stdin, sanitize

    answer: dict[str, Any] = {}
    seen: dict[str, str] = {}

    def body() -> None:
        c = common.ctx(obj)
        payload = sanitize(load_object(read_stdin(), "hook input"))
        event = payload.get("hook_event_name")
        seen["event"] = str(event)
        conversation = str(payload.get("conversation_id") or "")
        generation = str(payload.get("generation_id") or "")
        roots = payload.get("workspace_roots")
        cwd = common.cwd_of(*(roots if isinstance(roots, list) else ()),
                            os.environ.get("CURSOR_PROJECT_DIR"))
        path = _stash_path(conversation)
        if event == "beforeSubmitPrompt":
            answer["continue"] = True
            _keep(path, {"generation_id": generation, "prompt": _redacted(
                payload.get("prompt")), "reply": "", "cwd": cwd})
            _sweep(path.parent, path)
        elif event == "afterAgentResponse":
            kept = _load(path)
            if kept:
                reply = _redacted(payload.get("text"))
                if reply:
                    _keep(path, {**kept, "reply": reply})
        elif event == "stop":
            kept = _load(path)
            if kept.get("prompt") or kept.get("reply"):
                report = common.record(
                    c, "cursor", cwd=str(kept.get("cwd") or cwd),
                    prompt=str(kept.get("prompt") or ""), reply=str(kept.get("reply") or ""),
                    session=conversation,
                    turn=str(kept.get("generation_id") or generation),
                    ids={"event": "stop", "conversation_id": conversation,
                         "generation_id": str(kept.get("generation_id") or generation),
                         "status": str(payload.get("status") or "")},
                    options=options)
                if getattr(c, "as_json", False):
                    answer.update(report)
            path.unlink(missing_ok=True)
        _emit(answer)

    # a failure never blocks a prompt: the neutral answer of the event (unknown: both)
    _guard("cursor", body, fallback=lambda: json.dumps(
        {} if seen.get("event") in ("afterAgentResponse", "stop") else {"continue": True}))


# --------------------------------------------------------------------------- set-up


def paths(scope: str, root: Path) -> tuple[Path, Path]:
    """(hooks.json, mcp.json) of Cursor for ``scope``."""
    base = (Path.home() if scope == "user" else root) / ".cursor"
    return base / "hooks.json", base / "mcp.json"


def _ours(h: Any) -> bool:
    return isinstance(h, dict) and isinstance(h.get("command"), str) \
        and HOOK_WORDS in h["command"] and "powercontext" in h["command"]


def hooks_plan(path: Path, command: str) -> Any:
    """``path`` (a Cursor hooks.json) with ``command`` on beforeSubmitPrompt,
    afterAgentResponse and stop; other hooks kept, ``version`` 1 written when missing.
    InvalidInputError for a file of another shape or version (nothing is changed)."""
    from powercontext.core.errors import InvalidInputError
    from powercontext.entrypoints.cli.hosts.files import (
        ConfigFile,
        dump_json,
        load_json,
        read,
        section,
    )

    before = read(path)
    data = load_json(path, before)
    version = data.setdefault("version", 1)
    if version != 1:
        raise InvalidInputError(f"{path}: version", f"is {version!r}; powercontext knows "
                                "version 1 of Cursor's hooks.json, nothing was changed")
    hooks = section(path, data, "hooks", dict)
    for event in EVENTS:
        entries = section(path, hooks, event, list, where="hooks.")
        mine = [i for i, h in enumerate(entries) if _ours(h)]
        if mine:
            entries[mine[0]] = {**entries[mine[0]], "command": command}
        else:
            entries.append({"command": command})
    return ConfigFile(path, before, dump_json(data))


def mcp_plan(path: Path, program: str, args: list[str]) -> Any:
    """``path`` (a Cursor mcp.json) with ``mcpServers.powercontext`` running ``program
    args``; other servers and keys kept."""
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
    current = servers.get("powercontext")
    wanted = {"command": program, "args": args}
    servers["powercontext"] = {**current, **wanted} if isinstance(current, dict) else wanted
    return ConfigFile(path, before, dump_json(data))


def hooks_state(hooks_file: Path, mcp_file: Path) -> dict[str, Any]:
    """``{"hooks", "mcp"}``: every event runs our hook; the MCP server is named."""
    from powercontext.entrypoints.cli.hosts.files import json_file

    data = json_file(hooks_file)
    hooks = data.get("hooks") if isinstance(data, dict) else None
    on = isinstance(hooks, dict) and all(
        isinstance(hooks.get(e), list) and any(_ours(h) for h in hooks[e]) for e in EVENTS)
    mcp = json_file(mcp_file)
    servers = mcp.get("mcpServers") if isinstance(mcp, dict) else None
    return {"hooks": on, "mcp": isinstance(servers, dict) and "powercontext" in servers}


def state(root: Path) -> dict[str, dict[str, Any]]:
    """Per scope: ``{"hooks", "mcp", "hooks_file", "mcp_file"}``."""
    out = {}
    for scope in ("project", "user"):
        hooks_file, mcp_file = paths(scope, root)
        out[scope] = {**hooks_state(hooks_file, mcp_file), "hooks_file": str(hooks_file),
                      "mcp_file": str(mcp_file)}
    return out


@click.command(NAME)
@placing.SCOPE
@placing.PROJECT
@placing.NO_MCP
@placing.WRITES
@placing.DRY
@placing.COMMAND
@pass_ctx
def setup(c: Ctx, scope: str, project: str | None, no_mcp: bool, allow_writes: bool,
          dry_run: bool, command: str | None) -> None:
    """Cursor: beforeSubmitPrompt, afterAgentResponse and stop hooks (.cursor/hooks.json)
    and the MCP server (.cursor/mcp.json; with --scope user the files in ~/.cursor).
    Cursor's hooks cannot add context to a prompt: the agent reads the Memory through
    the MCP server, and the hooks record each finished turn."""

    def body() -> None:
        where = placing.place(c, scope, command, explicit_files=False)
        hooks_file, mcp_file = paths(where.scope, placing.project_root(project))
        files = [hooks_plan(hooks_file, placing.hook_command(where, NAME))]
        warnings = []
        if not no_mcp:
            files.append(mcp_plan(mcp_file, where.program,
                                  placing.mcp_args(where.db, allow_writes)))
            warnings += placing.missing_extras(("mcp",))
        placing.apply(c, TITLE, files, dry_run,
                      "Cursor has no hook that adds context to a prompt: its agent reads "
                      "the Memory through the powercontext MCP server (restart Cursor or "
                      "enable the server in its MCP settings).", where=where,
                      warnings=warnings)

    placing.guarded(c, body)
