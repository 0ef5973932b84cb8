"""MCP that agents use without tripping, through the SDK's own Client against the
server on a real SQLite file: one argument name for a Memory across every tool
(``memory``; search takes one name or a list), every ref form the CLI prints (a Topic
``ID@REV`` for get_topic_memory), the package's version in the initialize answer,
instructions naming every tool that is served, argument errors as one readable line
naming the argument (no pydantic text, no URL), and a Source's metadata kept (or an
unknown field refused), never dropped in silence."""

from __future__ import annotations

import asyncio
import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP server needs the extra powercontext[mcp]")

from mcp import Client

from powercontext.core import canonical
from powercontext.core.models import MemoryEntryInput, SourceRef
from powercontext.entrypoints.mcp.server import TOPIC_TOOLS, WRITE_TOOLS, build_server
from powercontext.runtime import open_service, open_topic_service

SCOPE = "repo:/work/agents"
KEY = "repo:agents"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"

    async def seed() -> None:
        svc = open_service(path)
        topics = open_topic_service(path)
        try:
            await svc.remember(None, key=KEY, mode="append", entries=(
                MemoryEntryInput("preference", "Run make test before review"),))
            src = canonical.make_source("src_release", "user_note", "We tag main to release.")
            await topics.add_sources(SCOPE, [src])
            await topics.publish(SCOPE, creates=[(
                {"title": "Release process", "summary": "How releases are cut.",
                 "detail": "We cut a release by tagging main."},
                [SourceRef(src.source_id, src.content_hash)])])
        finally:
            await topics.close()
            await svc.close()

    asyncio.run(seed())
    return path


def run(db: Path, steps: Any, *, writes: bool = True, topics: bool = True) -> Any:
    async def body() -> Any:
        server = build_server(lambda: open_service(db), allow_writes=writes,
                              open_topic_service=(lambda: open_topic_service(db))
                              if topics else None)
        async with Client(server) as client:
            return await steps(client)

    return asyncio.run(body())


def error_text(result: Any) -> str:
    assert result.is_error is True, result
    (content,) = result.content
    return str(content.text)


def test_every_tool_names_a_memory_by_the_one_argument_memory(db: Path) -> None:
    async def steps(client: Any) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t.input_schema["properties"] for t in run(db, steps)}
    for name, props in tools.items():
        assert "memories" not in props, name
    named = {n for n, props in tools.items() if "memory" in props}
    assert {"search_memory", "expand_memory", "memory_changes", "remember_memory",
            "forget_memory", "reactivate_memory"} <= named


def test_search_takes_one_name_or_a_list_and_refuses_the_old_argument(db: Path) -> None:
    async def steps(client: Any) -> Any:
        one = await client.call_tool("search_memory", {"query": "make test",
                                                       "memory": f"key:{KEY}"})
        many = await client.call_tool("search_memory", {"query": "make test",
                                                        "memory": [f"key:{KEY}"]})
        old = await client.call_tool("search_memory", {"query": "make test",
                                                       "memories": [f"key:{KEY}"]})
        return one, many, old

    one, many, old = run(db, steps)
    assert one.structured_content["hits"][0]["text"] == "Run make test before review"
    assert many.structured_content["hits"] == one.structured_content["hits"]
    text = error_text(old)
    assert "InvalidInputError: memories: is not an argument of search_memory" in text
    assert "memory" in text.split("its arguments:")[1]


def test_get_topic_memory_takes_the_ref_the_cli_prints(db: Path) -> None:
    async def steps(client: Any) -> Any:
        hits = await client.call_tool("search_topic_memory", {"scope_id": SCOPE,
                                                               "query": "release"})
        ref = hits.structured_content["hits"][0]["artifact"]
        printed = f"{ref['artifact_id']}@{ref['revision']}"
        by_text = await client.call_tool("get_topic_memory", {"scope_id": SCOPE,
                                                              "artifact": printed})
        by_object = await client.call_tool("get_topic_memory", {"scope_id": SCOPE,
                                                                "artifact": ref})
        bad = await client.call_tool("get_topic_memory", {"scope_id": SCOPE,
                                                          "artifact": "topic_art_x"})
        return by_text, by_object, bad

    by_text, by_object, bad = run(db, steps)
    assert by_text.structured_content == by_object.structured_content
    assert by_text.structured_content["title"] == "Release process"
    assert error_text(bad).endswith("ID@REV as the CLI prints it, e.g. topic_art_01k...@3")


def test_the_server_reports_its_version_and_instructions_name_every_served_tool(
        db: Path) -> None:
    async def steps(client: Any) -> Any:
        return client.server_info, client.instructions

    info, text = run(db, steps)
    assert info.name == "powercontext" and info.version == version("powercontext")
    for tool in ("search_memory", "expand_memory", "memory_changes", "validate_citation",
                 "list_memories", *TOPIC_TOOLS, *WRITE_TOOLS):
        assert tool in text, tool
    _info, read_only = run(db, steps, writes=False, topics=False)
    assert not any(t in read_only for t in (*TOPIC_TOOLS, *WRITE_TOOLS))
    assert "untrusted" in read_only.lower()


@pytest.mark.parametrize("tool,arguments,field", [
    ("search_memory", {"query": "x"}, "memory"),
    ("search_memory", {"query": "x", "memory": f"key:{KEY}", "limit": "many"}, "limit"),
    ("memory_changes", {"memory": 5}, "memory"),
    ("forget_memory", {"memory": f"key:{KEY}"}, "entry_ids"),
    ("remember_memory", {"entries": [{"txt": "x"}]}, "entries.0.text"),
    ("get_topic_memory", {"scope_id": SCOPE, "artifact": {"artifact_id": "a",
                                                          "revision": "two"}}, "artifact"),
])
def test_argument_errors_are_one_readable_line(db: Path, tool: str,
                                               arguments: dict[str, Any],
                                               field: str) -> None:
    async def steps(client: Any) -> Any:
        return await client.call_tool(tool, arguments)

    text = error_text(run(db, steps))
    assert "\n" not in text and "http" not in text and "pydantic" not in text, text
    assert re.search(rf"InvalidInputError: {re.escape(field)}[.\w]*: ", text), text
    assert f"arguments of {tool}" in text


def test_source_metadata_is_kept_and_an_unknown_field_refused(db: Path) -> None:
    source = {"content": "test:\n\tpytest -q\n", "kind": "file",
              "uri": "file:///work/agents/Makefile",
              "metadata": {"path": "Makefile", "commit": "abc123"}}

    async def steps(client: Any) -> Any:
        wrote = await client.call_tool("remember_memory", {
            "memory": f"key:{KEY}", "sources": [source],
            "entries": [{"text": "The Makefile has a test target"}]})
        expanded = await client.call_tool("expand_memory", {
            "memory": f"key:{KEY}",
            "entry_ids": [wrote.structured_content["changes"][0]["entry_id"]]})
        refused = await client.call_tool("remember_memory", {
            "memory": f"key:{KEY}", "entries": [{"text": "another"}],
            "sources": [dict(source, tags=["x"])]})
        return expanded, refused

    expanded, refused = run(db, steps)
    (ref,) = expanded.structured_content["entries"][0]["source_refs"]

    async def stored() -> Any:
        svc = open_service(db)
        try:
            return (await svc.backend.get_sources([ref["source_id"]]))[0]
        finally:
            await svc.close()

    src = asyncio.run(stored())
    assert dict(src.metadata) == {"commit": "abc123", "path": "Makefile"}
    assert "InvalidInputError: sources.0.tags: is not a field here" in error_text(refused)
