"""The agent hosts ``powercontext setup``, ``doctor`` and ``hook`` know, one module per
host behind the small registry :data:`HOSTS` (host name -> module under this package).

Each host module has ``NAME`` (the name in ``setup NAME``), ``TITLE`` (how reports
name it), ``FIX`` (the setup command ``doctor`` proposes), ``setup`` (its click
command: what it writes, idempotently, with a backup) and ``state(root)`` (per scope,
``project`` and ``user``: ``{"hooks": bool, "mcp": bool, ...the files}``, what
``doctor`` reports). Claude Code's and Codex's hooks live in
:mod:`powercontext.entrypoints.cli.hook`; the other hosts' ``hook`` command is in their
module. Nothing is imported until a command needs it, so a hook loads only its own
host's module.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["HOSTS", "host"]

#: host name (as in ``powercontext setup NAME``) -> its module in this package
HOSTS: dict[str, str] = {
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini": "gemini",
    "cursor": "cursor",
    "opencode": "opencode",
}


def host(name: str) -> ModuleType:
    """The module of host ``name`` (KeyError for an unknown one)."""
    return importlib.import_module(f"{__name__}.{HOSTS[name]}")
