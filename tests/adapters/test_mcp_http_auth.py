"""``powercontext mcp --transport http`` as a real process, called by the official MCP
client: it keeps ``serve``'s rules. With a token every request needs it (the SDK client
without it cannot even initialise; with it the tools answer, also on a non-loopback
bind); without a token a non-loopback host refuses to start (exit 2); a foreign Host
gets 421 and a foreign page's Origin 403 before any tool runs."""

from __future__ import annotations

import asyncio
import http.client
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP server needs the extra powercontext[mcp]")

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from support.cli import cli_argv

from powercontext.core import canonical
from powercontext.core.models import MemoryEntryInput
from powercontext.runtime import open_service
from powercontext.runtime_manifest import RuntimeManifest

pytestmark = [pytest.mark.subprocess, pytest.mark.server]

TOKEN = "mcp-http-token-0123456789"
#: How long start-up may take on a loaded 2-core machine (a wait bound).
START_WAIT = 60.0


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, Any, dict[str, str]]:
    db = tmp_path / "memory.db"

    async def body() -> Any:
        svc = open_service(db)
        try:
            src = canonical.make_source("src_readme", "file", "Use uv for dependencies.",
                                        "file:///demo/README.md")
            return await svc.remember(None, sources=(src,), mode="append", entries=(
                MemoryEntryInput("decision", "Dependencies are managed with uv",
                                 sources=(src,)),))
        finally:
            await svc.close()

    ref = asyncio.run(body())
    RuntimeManifest.for_db(str(db)).set("repo:demo", ref.artifact_id)
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["POWERCONTEXT_HOME"] = str(tmp_path / "home")
    return db, ref, env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class McpProcess:
    def __init__(self, db: Path, env: dict[str, str], log: Path, *args: str) -> None:
        self.port = _free_port()
        self.log = log
        self._out = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([*cli_argv(), "--db", str(db), "mcp", "--transport",
                                      "http", "--port", str(self.port), *args],
                                     env=env, stdout=self._out, stderr=self._out)
        give_up = time.monotonic() + START_WAIT
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > give_up:
                    self.stop()
                    raise RuntimeError(f"mcp did not listen: {log.read_text()}") from None
                time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self._out.close()


def _search(url: str, headers: dict[str, str] | None,
            statuses: list[int] | None = None) -> Any:
    """The SDK client's ``search_memory`` call; ``statuses`` gets every HTTP status the
    client saw."""
    seen = statuses if statuses is not None else []

    async def record(response: Any) -> None:
        seen.append(response.status_code)

    async def body() -> Any:
        async with httpx2.AsyncClient(headers=headers or {}, timeout=30,
                                      event_hooks={"response": [record]}) as http, \
                Client(streamable_http_client(url, http_client=http),
                       read_timeout_seconds=30) as client:
            return await client.call_tool("search_memory", {
                "query": "uv dependencies", "memory": ["key:repo:demo"]})

    return asyncio.run(body())


def _status(port: int, host: str, origin: str | None = None,
            token: str | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest("POST", "/mcp", skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host)
        for name, value in (("Origin", origin), ("Authorization",
                                                  token and f"Bearer {token}")):
            if value:
                conn.putheader(name, value)
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Accept", "application/json, text/event-stream")
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


@pytest.mark.parametrize("bind", ["127.0.0.1", "0.0.0.0"])
def test_with_a_token_every_request_needs_it(seeded, tmp_path: Path, bind: str) -> None:
    db, _ref, env = seeded
    server = McpProcess(db, dict(env, POWERCONTEXT_API_TOKEN=TOKEN), tmp_path / "log",
                        "--host", bind, "--allow-writes")
    try:
        for headers in (None, {"Authorization": "Bearer wrong-token-0123456789"},
                        {"Authorization": TOKEN}):
            statuses: list[int] = []
            with pytest.raises(BaseException):  # noqa: B017 - the SDK's refusal
                _search(server.url, headers, statuses)
            assert statuses and set(statuses) == {401}, statuses  # every request refused
        hits = _search(server.url, {"Authorization": f"Bearer {TOKEN}"})
        assert hits.is_error is False
        assert [h["text"] for h in hits.structured_content["hits"]] == [
            "Dependencies are managed with uv"]
        assert _status(server.port, f"127.0.0.1:{server.port}") == 401
    finally:
        server.stop()
    assert TOKEN not in (tmp_path / "log").read_text()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "example.com"])
def test_without_a_token_a_non_loopback_host_refuses_to_start(seeded, host: str) -> None:
    db, _ref, env = seeded
    out = subprocess.run([*cli_argv(), "--db", str(db), "mcp", "--transport", "http",
                          "--host", host, "--port", str(_free_port()), "--allow-writes"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "no API token is set" in out.stderr


def test_a_token_in_the_configuration_file_is_required_too(seeded, tmp_path: Path) -> None:
    db, _ref, env = seeded
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\napi_token = "{TOKEN}"\n', encoding="utf-8")
    server = McpProcess(db, env, tmp_path / "log", "--config", str(config))
    try:
        assert _status(server.port, f"127.0.0.1:{server.port}") == 401
        assert _search(server.url, {"Authorization": f"Bearer {TOKEN}"}).is_error is False
    finally:
        server.stop()


def test_a_foreign_host_gets_421_and_a_foreign_origin_403(seeded, tmp_path: Path) -> None:
    db, _ref, env = seeded
    server = McpProcess(db, env, tmp_path / "log", "--allow-host", "mcp.example.com")
    try:
        port = server.port
        assert _status(port, f"rebound.example:{port}") == 421
        assert _status(port, f"rebound.example:{port}",
                       origin=f"http://rebound.example:{port}") == 421
        assert _status(port, f"127.0.0.1:{port}", origin="http://evil.example") == 403
        assert _status(port, f"127.0.0.1:{port}", origin="null") == 403
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "mcp.example.com"):
            assert _status(port, host, origin=f"http://{host}") not in (403, 421), host
        assert _search(server.url, None).is_error is False  # loopback, no token: as before
    finally:
        server.stop()
