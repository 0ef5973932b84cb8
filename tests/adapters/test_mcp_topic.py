"""The Topic Memory MCP tools in process: the SDK's own Client against MCPServer, a
real SQLite file whose Topics were published through the service's internal
``publish`` (Topic Memory RFC, "MCP": only search_topic_memory and get_topic_memory,
read only; no flush_topic_memory)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP server needs the extra powercontext[mcp]")

from mcp import Client

from powercontext.core import canonical
from powercontext.core.topic.models import TopicMemoryContent
from powercontext.entrypoints.mcp.server import TOPIC_TOOLS, UNTRUSTED_NOTICE, build_server
from powercontext.runtime import open_service, open_topic_service

SCOPE = "repo:/work/demo"
V1 = TopicMemoryContent("Release process", "How we cut a release.",
                        "Tag the commit.\n\nThen run make release to build the wheel.")
V2 = TopicMemoryContent("Release process", "How we cut and announce a release.",
                        "Tag the commit.\n\nThen run make release to build the wheel.\n\n"
                        "Announce it in the changelog.")


@pytest.fixture
def seeded(tmp_path, monkeypatch) -> tuple[Path, dict[str, Any]]:
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    for k in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING"):
        monkeypatch.delenv(k, raising=False)
    db = tmp_path / "memory.db"

    async def body() -> dict[str, Any]:
        async with open_topic_service(db) as svc:
            src = canonical.make_source("src_makefile", "file", "release:\n\tbuild\n")
            (r1,) = await svc.publish(SCOPE, creates=[(V1, [src])])
            (r2,) = await svc.publish(SCOPE, updates=[(r1.ref, V2, [src])])
            (other,) = await svc.publish("repo:/elsewhere", creates=[(V1, [src])])
            return {"r1": r1, "r2": r2, "other": other, "source": src}

    return db, asyncio.run(body())


def call(db: Path, steps, *, topics: bool = True):
    async def body():
        server = build_server(lambda: open_service(db),
                              open_topic_service=(lambda: open_topic_service(db))
                              if topics else None)
        async with Client(server) as client:
            return await steps(client)

    return asyncio.run(body())


def error_text(result) -> str:
    assert result.is_error is True
    return result.content[0].text


def test_the_two_topic_tools_are_read_only_with_bounded_schemas(seeded):
    db, _ = seeded

    async def steps(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in call(db, steps)}
    assert set(TOPIC_TOOLS) == {"search_topic_memory", "get_topic_memory"} <= set(tools)
    assert not {n for n in tools if "flush" in n or "topic" in n} - set(TOPIC_TOOLS)
    for name in TOPIC_TOOLS:
        ann = tools[name].annotations
        assert ann.read_only_hint is True and ann.destructive_hint is False
    search = tools["search_topic_memory"].input_schema
    assert search["required"] == ["scope_id", "query"]
    assert (search["properties"]["limit"]["minimum"],
            search["properties"]["limit"]["maximum"]) == (1, 20)
    get = tools["get_topic_memory"]
    assert get.input_schema["required"] == ["scope_id", "artifact"]
    for tool in (tools["search_topic_memory"], get):
        assert "exactly the artifact" in " ".join(tool.description.split())
        assert "untrusted" in tool.description


def test_without_a_topic_factory_the_server_has_no_topic_tools(seeded):
    db, _ = seeded

    async def steps(client):
        return {t.name for t in (await client.list_tools()).tools}

    assert not set(TOPIC_TOOLS) & call(db, steps, topics=False)


def test_search_then_get_the_exact_ref_through_a_real_client(seeded):
    db, s = seeded

    async def steps(client):
        out = {"search": await client.call_tool(
            "search_topic_memory", {"scope_id": SCOPE, "query": "make release", "limit": 5})}
        ref = out["search"].structured_content["hits"][0]["artifact"]
        out["get"] = await client.call_tool("get_topic_memory",
                                            {"scope_id": SCOPE, "artifact": ref})
        out["old"] = await client.call_tool("get_topic_memory", {"scope_id": SCOPE, "artifact": {
            "family": "topic-memory", "artifact_id": ref["artifact_id"], "revision": 1}})
        return out

    out = call(db, steps)
    body = out["search"].structured_content
    assert body["untrusted"] is True and body["notice"] == UNTRUSTED_NOTICE
    (hit,) = body["hits"]
    assert hit["artifact"] == {"family": "topic-memory", "artifact_id": s["r2"].ref.artifact_id,
                          "revision": 2}
    assert set(hit) == {"artifact", "title", "summary", "snippet", "score", "matched_by"}
    assert json.loads(out["search"].content[0].text) == body
    got = out["get"].structured_content
    assert got["detail"] == V2.detail and got["published_at"] == s["r2"].published_at
    assert got["based_on"] == {"family": "topic-memory",
                               "artifact_id": s["r1"].ref.artifact_id, "revision": 1}
    assert got["sources"] == [{"source_id": "src_makefile",
                               "content_hash": s["source"].content_hash}]
    old = out["old"].structured_content
    assert old["detail"] == V1.detail and old["published_at"] == s["r1"].published_at


def test_bad_input_and_foreign_refs_are_tool_errors_with_the_typed_message(seeded):
    db, s = seeded
    art = s["r2"].ref.artifact_id

    def ref(**kw: Any) -> dict[str, Any]:
        return {"family": "topic-memory", "artifact_id": art, "revision": 2, **kw}

    async def steps(client):
        search, get = "search_topic_memory", "get_topic_memory"
        return [await client.call_tool(name, args) for name, args in [
            (search, {"scope_id": SCOPE, "query": "x", "limit": 0}),
            (search, {"scope_id": SCOPE, "query": "x", "limit": 21}),
            (search, {"scope_id": SCOPE, "query": "x", "limit": "10"}),
            (search, {"scope_id": SCOPE, "query": "x", "limit": True}),
            (search, {"query": "x"}),
            (search, {"scope_id": "", "query": "release"}),
            (search, {"scope_id": "s" * 257, "query": "release"}),
            (search, {"scope_id": SCOPE, "query": "y" * 8193}),
            (get, {"scope_id": SCOPE, "artifact": ref(family="memory")}),
            (get, {"scope_id": SCOPE, "artifact": ref(revision=0)}),
            (get, {"scope_id": SCOPE, "artifact": ref(revision=-1)}),
            (get, {"scope_id": SCOPE, "artifact": {"family": "topic-memory",
                                                   "artifact_id": art}}),
            (get, {"scope_id": SCOPE, "artifact": ref(artifact_id=s["other"].ref.artifact_id,
                                                      revision=1)}),
            (get, {"scope_id": SCOPE, "artifact": ref(revision=3)}),
        ]]

    texts = [error_text(r) for r in call(db, steps)]
    for text in texts[:4]:
        assert "limit" in text
    assert "scope_id" in texts[4]
    assert "InvalidInputError: scope_id" in texts[5]
    assert "InvalidInputError: scope_id" in texts[6]
    assert "InvalidInputError: query" in texts[7]
    assert "InvalidInputError: artifact.family" in texts[8]
    for text in texts[9:12]:
        assert "revision" in text
    assert "ArtifactNotFoundError" in texts[12] and "elsewhere" not in texts[12]
    assert "ArtifactNotFoundError" in texts[13]
