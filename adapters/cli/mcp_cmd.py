"""``powercontext mcp``: serve the memory tools over MCP (stdio or streamable HTTP):
read-only by default, the write tools too with ``--allow-writes``. The ``mcp`` SDK is
imported only when the command runs (extra ``powercontext[mcp]``).
"""

from __future__ import annotations

from typing import Any

import click

__all__ = ["mcp"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@click.command("mcp")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio",
              show_default=True, help="stdio for an agent that spawns the server; http for "
                                      "streamable HTTP at http://HOST:PORT/mcp.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="HTTP bind address (no authentication: keep it on loopback).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="HTTP port.")
@click.option("--log-level", default="WARNING", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]),
              help="Server log level (logs go to stderr).")
@click.option("--allow-writes", is_flag=True,
              help="Also serve remember_memory, forget_memory and reactivate_memory.")
@click.pass_obj
def mcp(obj: Any, transport: str, host: str, port: int, log_level: Any,
        allow_writes: bool) -> None:
    """Serve search_memory, expand_memory, memory_changes, validate_citation,
    list_memories, search_topic_memory and get_topic_memory to an MCP client; results
    are marked untrusted. Read-only unless
    --allow-writes adds remember_memory, forget_memory and reactivate_memory (the same
    checks as `memory remember/forget/reactivate`, secrets refused).

    \b
    Configure an agent:  powercontext --db PATH setup claude-code   (or: setup codex)
    Claude Code by hand: claude mcp add powercontext -- powercontext --db PATH mcp
    Codex by hand:       [mcp_servers.powercontext]
                         command = "powercontext"
                         args = ["--db", "PATH", "mcp"]
    """
    try:
        from powercontext.adapters.mcp.server import build_server
    except ImportError as exc:
        raise click.ClickException(
            f"the MCP server needs the mcp SDK 2.x ({exc}): in the checkout, "
            "pip install -c constraints.txt -e '.[mcp]'"
        ) from exc
    from powercontext.runtime import open_service, open_topic_service

    db_url, embedding, analyzer = obj.db_url, obj.embedding, obj.analyzer
    server = build_server(
        lambda: open_service(db_url, embedding=embedding, analyzer=analyzer),
        log_level=log_level, allow_writes=allow_writes,
        open_topic_service=lambda: open_topic_service(db_url, embedding=embedding,
                                                      analyzer=analyzer))
    if transport == "stdio":
        server.run("stdio")  # stdout carries the protocol: nothing else may print there
    else:
        if host not in _LOOPBACK:
            click.echo(f"powercontext mcp: warning: serving without authentication on {host}",
                       err=True)
        server.run("streamable-http", host=host, port=port)
