"""`powercontext mcp` as a real process: the SDK's client over stdio and over
streamable HTTP, against a SQLite file written through MemoryService."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the MCP server needs the extra powercontext[mcp]")

from mcp import Client, StdioServerParameters
from support.cli import cli_argv

from powercontext.core import canonical
from powercontext.core.models import MemoryEntryInput
from powercontext.runtime import open_service
from powercontext.runtime_manifest import RuntimeManifest

pytestmark = pytest.mark.subprocess


@pytest.fixture
def seeded(tmp_path):
    db = tmp_path / "memory.db"

    async def body():
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
    env = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    env.pop("POWERCONTEXT_DB", None)
    env.pop("POWERCONTEXT_EMBEDDING", None)
    return db, ref, env


async def _exercise(client: Client, memory: str):
    hits = await client.call_tool("search_memory", {"query": "uv dependencies",
                                                    "memory": ["key:repo:demo"]})
    missing = await client.call_tool("memory_changes", {"memory": "mem_art_nothing"})
    changes = await client.call_tool("memory_changes", {"memory": memory})
    return hits, missing, changes


def _check(db: Path, ref, results) -> None:
    hits, missing, changes = results
    body = hits.structured_content
    assert hits.is_error is False and body["untrusted"] is True
    assert body["mode"] == "fts"  # auto without an embedding model
    assert [h["text"] for h in body["hits"]] == ["Dependencies are managed with uv"]
    assert body["hits"][0]["memory_ref"] == {"artifact_id": ref.artifact_id, "revision": 1}
    assert missing.is_error is True and "ArtifactNotFoundError" in missing.content[0].text
    assert [c["op"] for c in changes.structured_content["revisions"][0]["changes"]] == ["add"]


def test_stdio_server_answers_the_sdk_client(seeded):
    db, ref, env = seeded
    argv = cli_argv()
    params = StdioServerParameters(command=argv[0], args=[*argv[1:], "--db", str(db), "mcp"],
                                   env=env)

    async def body():
        async with Client(params, read_timeout_seconds=30) as client:
            return await _exercise(client, ref.artifact_id)

    _check(db, ref, asyncio.run(body()))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streamable_http_server_answers_the_sdk_client(seeded, tmp_path):
    db, ref, env = seeded
    port = _free_port()
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 (closed in finally)
    proc = subprocess.Popen([*cli_argv(), "--db", str(db), "mcp", "--transport", "http",
                             "--port", str(port)], env=env, stdout=log, stderr=log)
    try:
        for _ in range(300):  # until it listens (or exits): a bound, not a timed assertion
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / "server.log").read_text()
                time.sleep(0.1)
        else:
            pytest.fail("the HTTP server did not start listening")

        async def body():
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=30) as c:
                return await _exercise(c, ref.artifact_id)

        _check(db, ref, asyncio.run(body()))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@pytest.mark.parametrize("allow_writes", [False, True], ids=["read-only", "allow-writes"])
def test_stdio_server_serves_write_tools_only_with_allow_writes(seeded, allow_writes):
    db, ref, env = seeded
    argv = cli_argv()
    extra = ["--allow-writes"] if allow_writes else []
    params = StdioServerParameters(command=argv[0],
                                   args=[*argv[1:], "--db", str(db), "mcp", *extra], env=env)

    async def body():
        async with Client(params, read_timeout_seconds=30) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            wrote = None
            if allow_writes:
                wrote = await client.call_tool("remember_memory", {
                    "key": "repo:demo", "entries": [{"text": "CI runs on every push"}]})
            return names, wrote

    names, wrote = asyncio.run(body())
    writes = {"remember_memory", "forget_memory", "reactivate_memory"}
    assert (writes <= names) is allow_writes and not (writes & names and not allow_writes)
    if allow_writes:
        assert wrote.is_error is False
        assert wrote.structured_content["memory_ref"] == {"artifact_id": ref.artifact_id,
                                                          "revision": 2}
