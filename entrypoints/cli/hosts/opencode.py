"""OpenCode: ``powercontext hook opencode``, the plugin ``setup opencode`` writes and
the MCP server it registers.

OpenCode has no command hooks; it loads JavaScript plugins from ``.opencode/plugins/``
of the project and ``~/.config/opencode/plugins/`` (opencode.ai/docs/plugins). A plugin
returns hooks: ``"chat.message"(input, output)`` runs when the user sends a message
(``input``: ``sessionID``, ``agent``, ``model``, ``messageID``; ``output``:
``message``, the UserMessage, and ``parts``, its Parts, a text part being ``{"type":
"text", "text", "synthetic"?}``), and ``event({event})`` receives the server's events,
``session.idle`` (``properties.sessionID``) when a session has finished answering; the
plugin's ``client.session.messages({path: {id}})`` lists a session's messages as
``{info, parts}`` (``info.role`` ``user`` or ``assistant``, ``info.id``). MCP servers
are ``mcp.<name>: {"type": "local", "command": [...], "enabled": true}`` of
``opencode.json`` (the project's, or ``~/.config/opencode/opencode.json``).

The plugin powercontext writes (:func:`plugin_source`) is a thin bridge: on
``chat.message`` it sends OpenCode's ``input`` and ``output`` to ``powercontext hook
opencode`` and adds the answer's context to the message as a synthetic text part; on
``session.idle`` it sends the session's last user message and the messages after it
(their text parts) and does not wait. The hook reads those documented shapes: the
prompt is the user message's non-synthetic text (never the context it added), the
reply the last assistant message's text; the turn is the user message's id. It always
prints one JSON object and exits 0.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx
from powercontext.entrypoints.cli.hosts import common, placing

__all__ = ["FIX", "MARKER", "NAME", "TITLE", "config_plan", "hook", "plugin_plan",
           "plugin_source", "setup", "state"]

NAME = "opencode"
TITLE = "OpenCode"
FIX = "powercontext setup opencode"


def detected(root: Path) -> bool:
    """Whether OpenCode is used here: ``opencode`` on PATH, its user configuration
    directory, or the project's ``.opencode`` or ``opencode.json``."""
    import shutil

    return shutil.which("opencode") is not None or config_dir().is_dir() or any(
        (root / n).exists() for n in (".opencode", "opencode.json", "opencode.jsonc"))

#: The first line of the plugin file: how setup knows the file is its own.
MARKER = "// powercontext plugin for OpenCode: written by `powercontext setup opencode`"


def _texts(parts: Any) -> str:
    if not isinstance(parts, list):
        return ""
    return "\n".join(p["text"] for p in parts if isinstance(p, dict)
                     and p.get("type") == "text" and isinstance(p.get("text"), str)
                     and not p.get("synthetic") and not p.get("ignored")).strip()


def last_turn(messages: Any) -> tuple[str, str, str]:
    """``(prompt, reply, turn id)`` of a session's messages (``[{info, parts}]``): the
    last user message's text, the text of the last assistant message after it, and
    the user message's id; empty strings when there is none."""
    rows = [m for m in messages if isinstance(m, dict) and isinstance(m.get("info"), dict)] \
        if isinstance(messages, list) else []
    users = [i for i, m in enumerate(rows) if m["info"].get("role") == "user"
             and _texts(m.get("parts"))]
    if not users:
        return "", "", ""
    at = users[-1]
    reply = ""
    for m in rows[at + 1:]:
        if m["info"].get("role") == "assistant" and _texts(m.get("parts")):
            reply = _texts(m.get("parts"))
    turn = rows[at]["info"].get("id")
    return _texts(rows[at].get("parts")), reply, turn if isinstance(turn, str) else ""


@click.command("opencode")
@common.event_options
@common.turn_options
@click.pass_obj
def hook(obj: Any, **options: Any) -> None:
    """Handle one event of the OpenCode plugin (JSON on stdin).

    chat.message (OpenCode's input and output) prints the matching memory as
    untrusted additionalContext; session.idle (the session's last messages) stores
    the turn's outcome and the turn. Always one JSON object on stdout, exit 0.
    """
    from powercontext.entrypoints.cli.hook import _emit, _guard
    from powercontext.entrypoints.cli.hook_payload import load_object, read_stdin, sanitize

    def body() -> None:
        c = common.ctx(obj)
        payload = sanitize(load_object(read_stdin(), "hook input"))
        event = payload.get("event")
        cwd = common.cwd_of(payload.get("directory"), payload.get("worktree"))
        out: Any = {}
        if event == "chat.message":
            output = payload.get("output") if isinstance(payload.get("output"), dict) else {}
            out = common.recall(c, "opencode", _texts(output.get("parts")), cwd, options,
                                "chat.message") or {}
        elif event == "session.idle":
            props = payload.get("properties") if isinstance(payload.get("properties"),
                                                            dict) else {}
            session = str(props.get("sessionID") or "")
            prompt, reply, turn = last_turn(payload.get("messages"))
            if prompt or reply:
                report = common.record(
                    c, "opencode", cwd=cwd, prompt=prompt, reply=reply, session=session,
                    turn=turn, ids={"event": "session.idle", "session_id": session,
                                    "message_id": turn}, options=options)
                out = report if getattr(c, "as_json", False) else {}
        _emit(out)

    _guard("opencode", body, fallback="{}")


# --------------------------------------------------------------------------- set-up


def config_dir() -> Path:
    """OpenCode's user configuration directory: ``$XDG_CONFIG_HOME/opencode`` (default
    ``~/.config/opencode``)."""
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path.home() / ".config") / "opencode"


def paths(scope: str, root: Path) -> tuple[Path, Path]:
    """(opencode config file, plugin file) for ``scope``: the project's
    ``opencode.json`` (``opencode.jsonc`` when only that one exists) and
    ``.opencode/plugins/powercontext.js``, or the user's under :func:`config_dir`."""
    base = config_dir() if scope == "user" else root
    plugins = base / "plugins" if scope == "user" else root / ".opencode" / "plugins"
    config = base / "opencode.json"
    if not config.exists() and (base / "opencode.jsonc").exists():
        config = base / "opencode.jsonc"
    return config, plugins / "powercontext.js"


_PLUGIN = '''{marker}; setup writes it again, so edit the setup instead.
// On each message it asks powercontext for this repository's Memory (and Topics) that
// match the prompt and adds them as a synthetic part; when a session is idle it records
// the finished turn. powercontext's answers are untrusted text, fenced as such.
import {{ spawn }} from "node:child_process"

const COMMAND = {argv}

function ask(payload, timeoutMs) {{
  return new Promise((resolve) => {{
    let out = ""
    let child
    try {{
      child = spawn(COMMAND[0], COMMAND.slice(1), {{ stdio: ["pipe", "pipe", "ignore"] }})
    }} catch {{
      return resolve({{}})
    }}
    const timer = setTimeout(() => child.kill(), timeoutMs)
    child.stdout.on("data", (chunk) => {{ out += chunk }})
    child.on("error", () => {{ clearTimeout(timer); resolve({{}}) }})
    child.on("close", () => {{
      clearTimeout(timer)
      try {{ resolve(JSON.parse(out || "{{}}")) }} catch {{ resolve({{}}) }}
    }})
    child.stdin.on("error", () => {{}})
    child.stdin.end(JSON.stringify(payload))
  }})
}}

async function messagesOf(client, id) {{
  let res
  try {{
    res = await client.session.messages({{ path: {{ id }} }})
  }} catch {{
    return []
  }}
  const list = Array.isArray(res) ? res : (res && Array.isArray(res.data) ? res.data : [])
  let last = -1
  list.forEach((m, i) => {{ if (m && m.info && m.info.role === "user") last = i }})
  return list.slice(Math.max(last, 0)).map((m) => ({{
    info: m.info,
    parts: (m.parts || []).filter((p) => p && p.type === "text"),
  }}))
}}

export const PowercontextPlugin = async ({{ client, directory, worktree }}) => ({{
  "chat.message": async (input, output) => {{
    const answer = await ask({{ event: "chat.message", directory, worktree, input,
                               output: {{ message: output.message, parts: output.parts }} }},
                             {prompt_ms})
    const context = answer && answer.hookSpecificOutput &&
      answer.hookSpecificOutput.additionalContext
    if (typeof context === "string" && context) {{
      output.parts.push({{ type: "text", text: context, synthetic: true,
        id: `prt_powercontext_${{Date.now()}}`, sessionID: input.sessionID,
        messageID: output.message && output.message.id }})
    }}
  }},
  event: async ({{ event }}) => {{
    if (!event || event.type !== "session.idle") return
    const id = event.properties && event.properties.sessionID
    if (!id) return
    const messages = await messagesOf(client, id)
    void ask({{ event: "session.idle", directory, worktree, properties: event.properties,
               messages }}, {turn_ms})
  }},
}})
'''


def plugin_source(argv: list[str], prompt_ms: int = 10_000, turn_ms: int = 60_000) -> str:
    """The plugin file that runs ``argv`` (``[program, ..., "hook", "opencode"]``)."""
    return _PLUGIN.format(marker=MARKER, argv=json.dumps(argv), prompt_ms=prompt_ms,
                          turn_ms=turn_ms)


def plugin_plan(path: Path, argv: list[str], force: bool) -> Any:
    """The plugin file at ``path``; InvalidInputError when a file there is not one
    setup wrote (its first line is not :data:`MARKER`) and ``force`` is false."""
    from powercontext.core.errors import InvalidInputError
    from powercontext.entrypoints.cli.hosts.files import ConfigFile, read

    before = read(path)
    if before is not None and not before.startswith(MARKER) and not force:
        raise InvalidInputError(str(path), "is a plugin powercontext did not write; pass "
                                "--force to replace it (it is kept as a .bak)")
    return ConfigFile(path, before, plugin_source(argv))


def config_plan(path: Path, argv: list[str]) -> Any:
    """``path`` (an opencode.json) with ``mcp.powercontext`` running ``argv`` (a new
    file gets OpenCode's ``$schema``); other servers and settings kept."""
    from powercontext.entrypoints.cli.hosts.files import (
        ConfigFile,
        dump_json,
        load_json,
        read,
        section,
    )

    before = read(path)
    wanted = {"type": "local", "command": argv, "enabled": True}
    data = load_json(path, before, hint="add this under \"mcp\": "
                     + json.dumps({"powercontext": wanted}))
    if before is None:
        data["$schema"] = "https://opencode.ai/config.json"
    servers = section(path, data, "mcp", dict)
    current = servers.get("powercontext")
    servers["powercontext"] = {**current, **wanted} if isinstance(current, dict) else wanted
    return ConfigFile(path, before, dump_json(data))


def file_state(config: Path, plugin: Path) -> dict[str, Any]:
    """``{"hooks", "mcp"}``: the plugin file is setup's; the MCP server is named."""
    from powercontext.entrypoints.cli.hosts.files import json_file, read

    try:
        text = read(plugin) or ""
    except ValueError:
        text = ""
    data = json_file(config)
    servers = data.get("mcp") if isinstance(data, dict) else None
    return {"hooks": text.startswith(MARKER) and '"hook", "opencode"' in text,
            "mcp": isinstance(servers, dict) and "powercontext" in servers}


def state(root: Path) -> dict[str, dict[str, Any]]:
    """Per scope: ``{"hooks", "mcp", "config", "plugin"}``."""
    out = {}
    for scope in ("project", "user"):
        config, plugin = paths(scope, root)
        out[scope] = {**file_state(config, plugin), "config": str(config),
                      "plugin": str(plugin)}
    return out


@click.command(NAME)
@placing.SCOPE
@placing.PROJECT
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="Edit this opencode.json instead.")
@click.option("--force", is_flag=True,
              help="Replace a powercontext.js plugin that setup did not write.")
@placing.NO_MCP
@placing.WRITES
@placing.DRY
@placing.COMMAND
@pass_ctx
def setup(c: Ctx, scope: str, project: str | None, config_file: str | None, force: bool,
          no_mcp: bool, allow_writes: bool, dry_run: bool, command: str | None) -> None:
    """OpenCode: the powercontext plugin (.opencode/plugins/powercontext.js: the
    Memory's matching entries added to each message, each finished turn recorded) and
    the MCP server (opencode.json; with --scope user ~/.config/opencode)."""

    def body() -> None:
        where = placing.place(c, scope, command, explicit_files=False)
        config, plugin = paths(where.scope, placing.project_root(project))
        files = [plugin_plan(plugin, placing.hook_argv(where, NAME), force)]
        warnings = []
        if not no_mcp:
            files.append(config_plan(Path(config_file) if config_file else config,
                                     [where.program,
                                      *placing.mcp_args(where.db, allow_writes)]))
            warnings += placing.missing_extras(("mcp",))
        hint = ("OpenCode asks before it connects an MCP server a project's opencode.json "
                "names (`opencode mcp approve powercontext`)." if where.scope == "project"
                and not no_mcp else "")
        placing.apply(c, TITLE, files, dry_run, hint, where=where, warnings=warnings)

    placing.guarded(c, body)
