"""``powercontext setup claude-code|codex`` (``powercontext doctor`` is in
:mod:`powercontext.adapters.cli.doctor`).

``setup`` writes the hook and MCP configuration a coding agent needs, instead of the
user pasting it (docs/hooks.md keeps the JSON/TOML for reference):

- Claude Code: ``UserPromptSubmit`` and ``Stop`` hooks running ``powercontext hook
  claude-code`` in ``.claude/settings.json`` (``--scope project``, the default: the Git
  top-level of ``--project``) or ``~/.claude/settings.json`` (``--scope user``), and the
  ``powercontext`` stdio MCP server in ``.mcp.json`` (project) or ``~/.claude.json``
  (user), the files ``claude mcp add`` writes.
- Codex: top-level ``notify = [..., "hook", "codex"]`` and ``[mcp_servers.powercontext]``
  in ``$CODEX_HOME/config.toml`` (default ``~/.codex/config.toml``; ``--scope project``:
  ``.codex/config.toml`` of the project). TOML is edited with tomlkit, so comments and
  layout survive.

Every write is idempotent (a second run changes nothing and writes nothing), keeps
every other setting, backs the previous file up as ``FILE.bak`` and with ``--dry-run``
only prints the unified diff. A file that does not parse is refused (InvalidInputError
naming it) and left as it is; so is a Codex ``notify`` naming another program, unless
``--force``. The commands written carry ``--db`` when one was given; ``--allow-writes``
configures the MCP server with its write tools.

Project-scoped files are committed by a team, so nothing machine-specific goes into
them: with ``--scope project`` the commands name the bare ``powercontext`` when the one
on PATH is this installation; when it is not on PATH (or another program answers to
the name), or a ``--db`` or an absolute ``--command`` is given, the configuration goes
to the user scope instead (``~/.claude/settings.json``, ``~/.claude.json``; Codex's
``~/.codex/config.toml``), and setup says which and why. It also says when the extra a
configured tool needs is not installed (``mcp`` for the MCP server).
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from powercontext.adapters.cli.context import Ctx, pass_ctx
from powercontext.adapters.cli.hook_daemon import setup_hint

__all__ = ["ConfigFile", "Placement", "place", "setup"]

HOOK_TIMEOUTS = {"UserPromptSubmit": 10, "Stop": 60}
SERVER_NAME = "powercontext"


class ConfigFile:
    """One configuration file: its current text and the text a setup wants."""

    def __init__(self, path: Path, before: str | None, after: str) -> None:
        self.path = path
        self.before = before
        self.after = after

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            (self.before or "").splitlines(keepends=True), self.after.splitlines(keepends=True),
            fromfile=f"{self.path} (now)" if self.before is not None else "/dev/null",
            tofile=f"{self.path} (after setup)"))

    def write(self) -> Path | None:
        """Write the new text (atomically) after backing the old one up; the backup's
        path, or None when there was no file. Nothing happens when nothing changed."""
        if not self.changed:
            return None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        backup = None
        if self.before is not None:
            backup = self.path.with_name(self.path.name + ".bak")
            shutil.copy2(self.path, backup)
        tmp = self.path.with_name(f".{self.path.name}.powercontext-tmp")
        tmp.write_text(self.after, "utf-8")
        if self.path.exists():
            shutil.copymode(self.path, tmp)
        os.replace(tmp, self.path)
        return backup


# --------------------------------------------------------------------------- commands


def _read(path: Path) -> str | None:
    from powercontext.core.errors import InvalidInputError

    try:
        return path.read_text("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(str(path), f"cannot read it: {exc}") from exc


def _load_json(path: Path, text: str | None) -> dict[str, Any]:
    from powercontext.core.errors import InvalidInputError

    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidInputError(str(path), f"is not valid JSON ({exc}); fix or move it "
                                           "first, nothing was changed") from exc
    if not isinstance(data, dict):
        raise InvalidInputError(str(path), "must hold a JSON object; nothing was changed")
    return data


def _dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _installation() -> Path | None:
    """This installation's ``powercontext`` script, or None."""
    beside = Path(sys.executable).parent / "powercontext"
    return beside if beside.exists() else None


def _program(command: str | None) -> str:
    """The executable agents run: ``--command``, else the ``powercontext`` script of
    this installation (absolute, so an agent's PATH need not hold the venv)."""
    if command:
        return command
    mine = _installation()
    return str(mine) if mine is not None else "powercontext"


def on_path() -> bool:
    """True when ``powercontext`` on PATH is this installation (the same file), so a
    bare ``powercontext`` runs it."""
    found = shutil.which("powercontext")
    mine = _installation()
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


def place(c: Ctx, scope: str, command: str | None, *, explicit_files: bool) -> Placement:
    """The :class:`Placement` of a setup asked for ``scope``. A project-scoped file is
    committed by a team, so it gets no machine-specific path: the bare
    ``powercontext`` when the one on PATH is this installation; otherwise (not on
    PATH, another program on PATH under that name, a ``--db``, an absolute
    ``--command``) the user scope, and ``why`` says so. Files named explicitly
    (``--settings``, ``--mcp-config``, ``--config``) are written as asked."""
    db = _db_args(c)
    if scope == "user" or explicit_files:
        return Placement(scope, _program(command), db, "")
    if command is not None and not os.path.isabs(command) and not db:
        return Placement("project", command, db, f"the project files run `{command}`")
    reasons = []
    if command is not None and os.path.isabs(command):
        reasons.append(f"--command {command} is a path on this machine")
    elif command is None and not on_path():
        mine = _installation()
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
    fix = (f"; to configure the project instead, put {Path(_program(None)).parent} on PATH"
           if command is None and _installation() is not None else "")
    return Placement("user", _program(command), db,
                     f"wrote the user scope, not the project's files a team commits: "
                     f"{' and '.join(reasons)}{fix}")


def _db_args(c: Ctx) -> list[str]:
    if not c.db:
        return []
    from powercontext.runtime import sqlite_path

    path = sqlite_path(c.db)
    return ["--db", str(path.resolve()) if path is not None and "://" not in c.db else c.db]


def _is_ours(hook: Any, words: str) -> bool:
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) \
        and words in hook["command"] and "powercontext" in hook["command"]


def claude_settings_plan(path: Path, command: str) -> ConfigFile:
    """``path`` (a Claude Code settings.json) with the powercontext UserPromptSubmit and
    Stop hooks set to ``command``; other hooks and settings are kept."""
    from powercontext.core.errors import InvalidInputError

    before = _read(path)
    data = _load_json(path, before)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInputError(f"{path}: hooks", "must be an object; nothing was changed")
    for event, timeout in HOOK_TIMEOUTS.items():
        wanted = {"type": "command", "command": command, "timeout": timeout}
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InvalidInputError(f"{path}: hooks.{event}", "must be a list")
        found = False
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                continue
            for i, h in enumerate(entries):
                if _is_ours(h, "hook claude-code"):
                    if not found:
                        entries[i] = {**h, **wanted}
                    found = True
        if not found:
            groups.append({"hooks": [wanted]})
    return ConfigFile(path, before, _dump_json(data))


def claude_mcp_plan(path: Path, program: str, args: list[str]) -> ConfigFile:
    """``path`` (``.mcp.json`` or ``~/.claude.json``) with ``mcpServers.powercontext``
    running ``program args``; other servers and keys are kept."""
    from powercontext.core.errors import InvalidInputError

    before = _read(path)
    data = _load_json(path, before)
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise InvalidInputError(f"{path}: mcpServers", "must be an object")
    current = servers.get(SERVER_NAME)
    wanted = {"type": "stdio", "command": program, "args": args}
    if isinstance(current, dict):
        wanted = {**current, **wanted}
    servers[SERVER_NAME] = wanted
    return ConfigFile(path, before, _dump_json(data))


def codex_plan(path: Path, program: str, db_args: list[str], force: bool, *,
               allow_writes: bool = False) -> ConfigFile:
    """``path`` (a Codex config.toml) with top-level ``notify`` running the Codex hook
    and ``[mcp_servers.powercontext]``; comments, layout and other settings are kept.
    InvalidInputError when ``notify`` names another program and ``force`` is false."""
    import tomlkit

    from powercontext.core.errors import InvalidInputError

    before = _read(path)
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
    args = _mcp_args(db_args, allow_writes)
    server = servers.get(SERVER_NAME)
    if server is None:
        server = tomlkit.table()
        server["command"] = program
        server["args"] = args
        servers[SERVER_NAME] = server
    else:
        if server.get("command") != program:
            server["command"] = program
        if list(server.get("args") or ()) != args:
            server["args"] = args
    return ConfigFile(path, before, tomlkit.dumps(doc))


def _mcp_args(db_args: list[str], allow_writes: bool) -> list[str]:
    return [*db_args, "mcp", *(["--allow-writes"] if allow_writes else [])]


def _project_root(project: str | None) -> Path:
    from powercontext.adapters.cli.hook import repo_root

    return repo_root(project or os.getcwd())


def claude_paths(scope: str, project: str | None) -> tuple[Path, Path]:
    """(settings.json, MCP file) of Claude Code for ``scope``."""
    if scope == "user":
        home = Path.home()
        return home / ".claude" / "settings.json", home / ".claude.json"
    root = _project_root(project)
    return root / ".claude" / "settings.json", root / ".mcp.json"


def codex_path(scope: str, project: str | None) -> Path:
    if scope == "user":
        home = os.environ.get("CODEX_HOME")
        return (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml"
    return _project_root(project) / ".codex" / "config.toml"


_EXTRA_NEEDS = {"mcp": ("mcp.server.mcpserver", "the MCP server (powercontext mcp)")}
"""extra -> (the module the configured tool imports, what needs it)."""


def _missing_extras(names: tuple[str, ...]) -> list[str]:
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


def _apply(c: Ctx, agent: str, files: list[ConfigFile], dry_run: bool, hint: str = "", *,
           where: Placement | None = None, warnings: list[str] | None = None) -> None:
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


_SCOPE = click.option("--scope", type=click.Choice(["project", "user"]), default="project",
                      show_default=True, help="project: files in the project (Git top-level "
                      "of --project); user: the files in your home directory.")
_PROJECT = click.option("--project", type=click.Path(exists=True, file_okay=False),
                        help="Project directory for --scope project. Default: the current one.")
_DRY = click.option("--dry-run", is_flag=True, help="Print the diff; write nothing.")
_WRITES = click.option("--allow-writes", is_flag=True,
                       help="Configure the MCP server with --allow-writes (remember, forget, "
                            "reactivate tools).")
_COMMAND = click.option("--command", "command", metavar="PROGRAM",
                        help="The powercontext executable agents run. Default: the bare "
                             "`powercontext` for project files when it is on PATH, else "
                             "this installation's by absolute path (user scope).")


@click.group()
def setup() -> None:
    """Configure a coding agent's hooks and MCP server (idempotent, with a backup)."""


@setup.command("claude-code")
@_SCOPE
@_PROJECT
@click.option("--settings", "settings_path", type=click.Path(dir_okay=False),
              help="Write the hooks to this settings.json instead.")
@click.option("--mcp-config", "mcp_path", type=click.Path(dir_okay=False),
              help="Write the MCP server to this file instead (an .mcp.json).")
@click.option("--no-mcp", is_flag=True, help="Only the hooks.")
@_WRITES
@_DRY
@_COMMAND
@pass_ctx
def setup_claude_code(c: Ctx, scope: str, project: str | None, settings_path: str | None,
                      mcp_path: str | None, no_mcp: bool, allow_writes: bool, dry_run: bool,
                      command: str | None) -> None:
    """Claude Code: UserPromptSubmit and Stop hooks (.claude/settings.json) and the MCP
    server (.mcp.json; with --scope user ~/.claude/settings.json and ~/.claude.json).
    Project files get no machine-specific path: when the bare `powercontext` is not on
    PATH, or with --db, the user scope is written instead, and setup says so."""

    def body() -> None:
        where = place(c, scope, command,
                      explicit_files=bool(settings_path or (mcp_path and not no_mcp)))
        settings, mcp_file = claude_paths(where.scope, project)
        hook_cmd = " ".join(shlex.quote(x) for x in [where.program, *where.db, "hook",
                                                      "claude-code"])
        files = [claude_settings_plan(Path(settings_path) if settings_path else settings,
                                      hook_cmd)]
        warnings = []
        if not no_mcp:
            files.append(claude_mcp_plan(Path(mcp_path) if mcp_path else mcp_file,
                                         where.program, _mcp_args(where.db, allow_writes)))
            warnings += _missing_extras(("mcp",))
        _apply(c, "Claude Code", files, dry_run, setup_hint(where.db), where=where,
               warnings=warnings)

    _guarded(c, body)


@setup.command("codex")
@click.option("--scope", type=click.Choice(["project", "user"]), default="user",
              show_default=True, help="user: $CODEX_HOME/config.toml (~/.codex), where Codex "
              "reads notify; project: .codex/config.toml of the project.")
@_PROJECT
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Edit this config.toml instead.")
@click.option("--force", is_flag=True, help="Replace a notify program that is not ours.")
@_WRITES
@_DRY
@_COMMAND
@pass_ctx
def setup_codex(c: Ctx, scope: str, project: str | None, config_path: str | None,
                force: bool, allow_writes: bool, dry_run: bool, command: str | None) -> None:
    """Codex: notify and [mcp_servers.powercontext] in ~/.codex/config.toml (default
    scope user: Codex reads its notify program from there)."""

    def body() -> None:
        where = place(c, scope, command, explicit_files=bool(config_path))
        path = Path(config_path) if config_path else codex_path(where.scope, project)
        _apply(c, "Codex", [codex_plan(path, where.program, where.db, force,
                                       allow_writes=allow_writes)], dry_run, where=where,
               warnings=_missing_extras(("mcp",)))

    _guarded(c, body)


def _guarded(c: Ctx, body: Any) -> None:
    from powercontext.adapters.cli.context import fail_with

    try:
        body()
    except (SystemExit, click.exceptions.Exit, click.ClickException):
        raise
    except Exception as exc:
        fail_with(exc, c.as_json)
