"""``powercontext setup HOST``: the hook and MCP configuration a coding agent needs,
written for the user instead of pasted (``powercontext doctor`` checks it: see
:mod:`powercontext.entrypoints.cli.doctor`). One module per host, behind the registry
:data:`powercontext.entrypoints.cli.hosts.HOSTS`:

- Claude Code (:mod:`~powercontext.entrypoints.cli.hosts.claude_code`):
  ``UserPromptSubmit``/``Stop`` hooks in ``.claude/settings.json``, the MCP server in
  ``.mcp.json`` (user scope: ``~/.claude/settings.json``, ``~/.claude.json``).
- Codex (:mod:`~powercontext.entrypoints.cli.hosts.codex`): ``notify`` and
  ``[mcp_servers.powercontext]`` in ``$CODEX_HOME/config.toml``.
- Gemini CLI (:mod:`~powercontext.entrypoints.cli.hosts.gemini`): ``BeforeAgent``/
  ``AfterAgent`` hooks and ``mcpServers`` in ``.gemini/settings.json``.
- Cursor (:mod:`~powercontext.entrypoints.cli.hosts.cursor`): ``beforeSubmitPrompt``/
  ``afterAgentResponse``/``stop`` hooks in ``.cursor/hooks.json``, the MCP server in
  ``.cursor/mcp.json``.
- OpenCode (:mod:`~powercontext.entrypoints.cli.hosts.opencode`): the plugin
  ``.opencode/plugins/powercontext.js`` and ``mcp.powercontext`` in ``opencode.json``.

Every write is idempotent (a second run changes nothing and writes nothing), keeps
every other setting, backs the previous file up as ``FILE.bak`` and with ``--dry-run``
only prints the unified diff. A file that does not parse is refused (InvalidInputError
naming it) and left as it is. Project-scoped files get no machine-specific path
(:func:`powercontext.entrypoints.cli.hosts.placing.place`).
"""

from __future__ import annotations

import click

from powercontext.entrypoints.cli.context import LazyGroup
from powercontext.entrypoints.cli.hosts import HOSTS

__all__ = ["setup"]


@click.group(cls=LazyGroup, lazy={name: f"hosts.{module}:setup"
                                  for name, module in HOSTS.items()})
def setup() -> None:
    """Configure a coding agent's hooks and MCP server (idempotent, with a backup).

    \b
    powercontext setup claude-code    # .claude/settings.json + .mcp.json
    powercontext setup codex          # ~/.codex/config.toml
    powercontext setup gemini         # .gemini/settings.json
    powercontext setup cursor         # .cursor/hooks.json + .cursor/mcp.json
    powercontext setup opencode       # .opencode/plugins/powercontext.js + opencode.json
    """
