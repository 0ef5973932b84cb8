"""Search through the CLI, the prompt hook and the MCP server (issue 9, items 3 and 8).

* A query over the bounds (8,192 characters, 64 distinct terms) is bad input: CLI exit
  2, an MCP tool error naming ``query``; the hook clips the prompt to the bounds.
* "The current head" (a plain id, ``key:NAME``) is read inside the search's own read
  transaction: a write landing between naming a Memory and searching it never surfaces
  as "not supported" (it did: ``memory search kiwi -m ID`` exited 5 in 2-10 % of runs
  while another process kept writing). An explicit ``ID@REV`` that is not the head is
  still refused (Memory RFC, "Search and reads").
"""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli_argv

from powercontext import runtime
from powercontext.core.errors import CapabilityNotSupportedError
from powercontext.core.models import MemoryEntryInput
from powercontext.core.query import MAX_QUERY_TERMS
from powercontext.entrypoints.cli import hook as hook_mod
from powercontext.memory_names import memory_selector
from powercontext.runtime import open_service
from powercontext.runtime_manifest import RuntimeManifest

LONG_QUERY = " ".join(f"w{i}" for i in range(10_000))  # 58,889 characters
TOO_MANY_TERMS = " ".join(f"kiwi{i}" for i in range(MAX_QUERY_TERMS + 1))


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("POWERCONTEXT_DB", raising=False)
    monkeypatch.delenv("POWERCONTEXT_EMBEDDING", raising=False)
    import os

    return dict(os.environ)


FILLER = [f"filler{i}" for i in range(400)]


def seed(db: Path, key: str = "repo:demo") -> str:
    async def body() -> str:
        svc = open_service(db)
        try:
            ref = await svc.remember(None, mode="append", entries=(
                MemoryEntryInput("fact", "kiwi orchards need frost protection"),
                MemoryEntryInput("fact", "the kiwi harvest starts in May"),
                MemoryEntryInput("fact", " ".join(FILLER[:20])),
            ))
            assert ref is not None
            return ref.artifact_id
        finally:
            await svc.close()

    artifact_id = asyncio.run(body())
    RuntimeManifest.for_db(str(db)).set(key, artifact_id)
    return artifact_id


async def _append(db: Path, artifact_id: str, text: str) -> None:
    """One write by another service on the same database (as another process would)."""
    svc = open_service(db)
    try:
        head = await svc.head(artifact_id)
        await svc.remember(head, mode="append", entries=(MemoryEntryInput("fact", text),))
    finally:
        await svc.close()


def _racing_open_service(db: Path, artifact_id: str) -> Any:
    """``open_service`` whose backend lets a write land right after every head lookup:
    the window in which naming a Memory and searching it used to race."""
    real = runtime.open_service
    counter = iter(range(10**6))

    def open_(*args: Any, **kwargs: Any) -> Any:
        svc = real(*args, **kwargs)
        head = svc.backend.head

        async def head_then_write(aid: str) -> Any:
            ref = await head(aid)
            await _append(db, artifact_id, f"kiwi note {next(counter)} from another writer")
            return ref

        svc.backend.head = head_then_write
        return svc

    return open_


def _cli(db: Path, *args: str, stdin: str | None = None) -> Any:
    from click.testing import CliRunner

    from powercontext.entrypoints.cli.main import cli

    group = copy.copy(cli)
    group.commands = dict(cli.commands, hook=hook_mod.hook)
    return CliRunner().invoke(group, ["--db", str(db), *args], input=stdin)


# ----------------------------------------------------------------------------- item 3


@pytest.mark.subprocess
@pytest.mark.parametrize("query", [LONG_QUERY, TOO_MANY_TERMS])
def test_cli_refuses_a_query_over_the_bounds_with_exit_2(env, tmp_path, query):
    db = tmp_path / "memory.db"
    mem = seed(db)
    proc = subprocess.run([*cli_argv(), "--db", str(db), "memory", "search", query, "-m", mem],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "query" in proc.stderr


def test_mcp_search_refuses_a_query_over_the_bounds(env, tmp_path):
    pytest.importorskip("mcp", reason="the MCP server needs the extra powercontext[mcp]")
    from mcp import Client

    from powercontext.entrypoints.mcp.server import build_server

    db = tmp_path / "memory.db"
    seed(db)

    async def body() -> Any:
        server = build_server(lambda: open_service(db))
        async with Client(server) as client:
            return [await client.call_tool("search_memory", {
                "query": q, "memory": ["key:repo:demo"], "mode": "fts"})
                for q in (LONG_QUERY, TOO_MANY_TERMS)]

    for result in asyncio.run(body()):
        assert result.is_error is True
        assert "InvalidInputError: query:" in result.content[0].text


def test_the_prompt_hook_clips_a_long_prompt_to_the_bounds(env, tmp_path):
    root = (tmp_path / "project").resolve()
    (root / ".git").mkdir(parents=True)
    db = tmp_path / "memory.db"
    seed(db, f"repo:{root}")
    # 400 distinct terms: the first 64 are searched, and 20 of them (a quarter) match
    payload = {"hook_event_name": "UserPromptSubmit", "cwd": str(root),
               "prompt": " ".join(FILLER)}
    result = _cli(db, "hook", "claude-code", "--mode", "fts", stdin=json.dumps(payload))
    assert result.exit_code == 0, (result.stdout, result.stderr)
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "filler19" in context


# ----------------------------------------------------------------------------- item 8


@pytest.mark.parametrize("name", ["id", "key:repo:demo"])
def test_cli_search_of_the_current_head_never_races_a_write(env, tmp_path, monkeypatch, name):
    db = tmp_path / "memory.db"
    mem = seed(db)
    monkeypatch.setattr(runtime, "open_service", _racing_open_service(db, mem))
    result = _cli(db, "--json", "memory", "search", "kiwi", "-m",
                  mem if name == "id" else name, "--mode", "fts")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    hits = json.loads(result.stdout)["hits"]
    assert hits and all(h["memory_ref"]["artifact_id"] == mem for h in hits)


def test_cli_search_of_an_old_revision_is_still_refused(env, tmp_path):
    db = tmp_path / "memory.db"
    mem = seed(db)
    asyncio.run(_append(db, mem, "kiwi vines climb"))
    result = _cli(db, "memory", "search", "kiwi", "-m", f"{mem}@1", "--mode", "fts")
    assert result.exit_code == 5, (result.stdout, result.stderr)
    assert _cli(db, "memory", "search", "kiwi", "-m", f"{mem}@2").exit_code == 0


def test_mcp_search_of_the_current_head_never_races_a_write(env, tmp_path):
    pytest.importorskip("mcp", reason="the MCP server needs the extra powercontext[mcp]")
    from mcp import Client

    from powercontext.entrypoints.mcp.server import build_server

    db = tmp_path / "memory.db"
    mem = seed(db)
    racing = _racing_open_service(db, mem)

    async def body() -> Any:
        server = build_server(lambda: racing(db))
        async with Client(server) as client:
            return [await client.call_tool("search_memory", {
                "query": "kiwi", "memory": [name], "mode": "fts"})
                for name in (mem, "key:repo:demo")]

    for result in asyncio.run(body()):
        assert result.is_error is False, result.content[0].text
        assert result.structured_content["hits"]


def test_the_prompt_hook_never_races_a_write(env, tmp_path, monkeypatch):
    root = (tmp_path / "project").resolve()
    (root / ".git").mkdir(parents=True)
    db = tmp_path / "memory.db"
    mem = seed(db, f"repo:{root}")
    monkeypatch.setattr(runtime, "open_service", _racing_open_service(db, mem))
    payload = {"hook_event_name": "UserPromptSubmit", "cwd": str(root),
               "prompt": "when does the kiwi harvest start?"}
    result = _cli(db, "hook", "claude-code", "--mode", "fts", stdin=json.dumps(payload))
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "harvest" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def test_searches_by_plain_id_never_raise_while_another_writer_commits(env, tmp_path):
    """A real second writer (its own backend and connection, on a thread) commits
    continuously while searches name the Memory by plain id and by key."""
    db = tmp_path / "memory.db"
    mem = seed(db)
    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        async def go() -> None:
            svc = open_service(db)
            try:
                i = 0
                while not stop.is_set():
                    head = await svc.head(mem)
                    await svc.remember(head, mode="append",
                                       entries=(MemoryEntryInput("fact", f"kiwi batch {i}"),))
                    written.append(i)
                    i += 1
            finally:
                await svc.close()

        asyncio.run(go())

    thread = threading.Thread(target=writer)
    thread.start()
    errors: list[BaseException] = []

    async def searches() -> int:
        svc = open_service(db)
        try:
            revisions = set()
            for i in range(150):
                name = mem if i % 2 else "key:repo:demo"
                try:
                    res = await svc.search("kiwi", [await memory_selector(svc, name)],
                                           limit=3, mode="fts")
                except CapabilityNotSupportedError as exc:  # the race, if it is back
                    errors.append(exc)
                    continue
                revisions.update(h.memory_ref.revision for h in res.hits)
            return len(revisions)
        finally:
            await svc.close()

    try:
        seen = asyncio.run(searches())
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[:3]
    assert written and seen >= 1
