"""``powercontext mcp``: serve the memory tools over MCP (stdio or streamable HTTP):
read-only by default, the write tools too with ``--allow-writes``. The ``mcp`` SDK is
imported only when the command runs (extra ``powercontext[mcp]``).

Over HTTP the rules of ``powercontext serve`` hold (:mod:`powercontext.entrypoints.mcp.
http`): with ``server.api_token`` or ``$POWERCONTEXT_API_TOKEN`` (the configuration of
``--config``, ``$POWERCONTEXT_CONFIG`` or the data directory) every request needs the
bearer token; without one only a loopback host is bound (any other exits 2); a request
whose ``Host`` is not a loopback name, the bound address or an ``--allow-host`` /
``server.allowed_hosts`` name gets 421.
"""

from __future__ import annotations

import os
from typing import Any

import click

__all__ = ["mcp"]


@click.command("mcp")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio",
              show_default=True, help="stdio for an agent that spawns the server; http for "
                                      "streamable HTTP at http://HOST:PORT/mcp.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="HTTP bind address; another than loopback needs the API token.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="HTTP port.")
@click.option("--log-level", default="WARNING", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]),
              help="Server log level (logs go to stderr).")
@click.option("--allow-writes", is_flag=True,
              help="Also serve remember_memory, forget_memory and reactivate_memory.")
@click.option("--config", "config_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="HTTP: the configuration with server.api_token and "
                   "server.allowed_hosts (default $POWERCONTEXT_CONFIG, else <data "
                   "dir>/config.toml).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="HTTP: also answer requests whose Host is NAME (repeatable).")
@click.pass_obj
def mcp(obj: Any, transport: str, host: str, port: int, log_level: Any,
        allow_writes: bool, config_file: str | None, allow_hosts: tuple[str, ...]) -> None:
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

    \b
    HTTP (--transport http, at http://HOST:PORT/mcp): with server.api_token or
    $POWERCONTEXT_API_TOKEN set every request needs "Authorization: Bearer TOKEN";
    without a token only a loopback --host starts (exit 2 otherwise). A Host header
    other than localhost, a loopback address, the bound address or an --allow-host
    name gets 421.
    """
    http = _http_settings(obj, transport, host, config_file, allow_hosts)
    try:
        from powercontext.entrypoints.mcp.server import build_server
    except ImportError as exc:
        from powercontext.entrypoints.cli.failures import missing_extra

        if missing_extra(exc) is not None:
            raise  # not installed: the one line naming the extra, exit 5
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
    if http is None:
        server.run("stdio")  # stdout carries the protocol: nothing else may print there
    else:
        from powercontext.entrypoints.mcp.http import serve_http

        policy, token = http
        serve_http(server, host=host, port=port, policy=policy, token=token,
                   log_level=log_level)


def _http_settings(obj: Any, transport: str, host: str, config_file: str | None,
                   allow_hosts: tuple[str, ...]) -> tuple[Any, str | None] | None:
    """``(Host policy, token)`` for the HTTP transport (None for stdio); a refused
    configuration or host exits as ``serve`` does (exit 2)."""
    if transport == "stdio":
        return None
    import logging

    from powercontext import configuration
    from powercontext.entrypoints.cli.context import fail_with
    from powercontext.entrypoints.cli.serve import ENV_API_TOKEN, check_token, host_policy

    logger = logging.getLogger("powercontext.mcp")
    if not logger.handlers:
        logger.addHandler(logging.StreamHandler())
    try:
        config = configuration.load_config(config_file, env=os.environ)
        token = config.server.api_token or os.environ.get(ENV_API_TOKEN) or None
        check_token(token, host, logger)
        return host_policy(host, (*config.server.allowed_hosts, *allow_hosts)), token
    except Exception as exc:
        fail_with(exc, getattr(obj, "as_json", False))
