"""The MCP server in process: the SDK's own Client against MCPServer, a real SQLite
file written through MemoryService."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP server needs the extra powercontext[mcp]")

from mcp import Client

from powercontext.core import canonical
from powercontext.core.models import MemoryEntryInput
from powercontext.entrypoints.mcp.server import UNTRUSTED_NOTICE, build_server
from powercontext.runtime import open_service
from powercontext.runtime_manifest import RuntimeManifest

TOOLS = {"search_memory", "expand_memory", "memory_changes", "validate_citation",
         "list_memories"}


def seed_memory(db: Path) -> dict[str, Any]:
    """Revision 1: a preference (with a Makefile Source) and a constraint; Revision 2
    revises the preference. Mapped to key repo:demo."""

    async def body() -> dict[str, Any]:
        svc = open_service(db)
        try:
            src = canonical.make_source("src_makefile", "file", "test:\n\tpytest -q\n",
                                        "file:///demo/Makefile")
            r1 = await svc.remember(None, sources=(src,), mode="append", entries=(
                MemoryEntryInput("preference", "Run make test before review", sources=(src,)),
                MemoryEntryInput("constraint", "Never edit generated files under build/"),
            ))
            v1 = await svc.entries(r1)
            pref = next(v for v in v1.values() if v.kind == "preference")
            con = next(v for v in v1.values() if v.kind == "constraint")
            r2 = await svc.remember(r1, mode="append", entries=(MemoryEntryInput(
                "preference", "Run make test and make lint before review", entry=pref,
                sources=(src,), reason="user_correction"),))
            pref2 = (await svc.entries(r2, [pref.entry_id]))[pref.entry_id]
            return {"memory": r1.artifact_id, "pref": pref, "pref2": pref2, "con": con,
                    "source": src}
        finally:
            await svc.close()

    out = asyncio.run(body())
    RuntimeManifest.for_db(str(db)).set("repo:demo", out["memory"])
    return out


@pytest.fixture
def seeded(tmp_path):
    db = tmp_path / "memory.db"
    return db, seed_memory(db)


def call(db: Path, steps):
    """Run ``steps(client)`` against a fresh in-process server on ``db``."""

    async def body():
        server = build_server(lambda: open_service(db))
        async with Client(server) as client:
            return await steps(client)

    return asyncio.run(body())


def error_text(result) -> str:
    assert result.is_error is True
    return result.content[0].text


def test_tools_are_listed_read_only(seeded):
    db, _ = seeded

    async def steps(client):
        return (await client.list_tools()).tools

    tools = call(db, steps)
    assert {t.name for t in tools} == TOOLS
    for t in tools:
        assert t.annotations.read_only_hint is True and t.annotations.destructive_hint is False
    search = next(t for t in tools if t.name == "search_memory")
    assert search.input_schema["required"] == ["query", "memory"]
    assert "untrusted" in search.description


def test_search_expand_changes_and_citation_answer_a_real_client(seeded):
    db, s = seeded
    mem = s["memory"]

    async def steps(client):
        out = {}
        out["search"] = await client.call_tool(
            "search_memory", {"query": "make test review", "memory": ["key:repo:demo"],
                              "limit": 5, "mode": "fts"})
        out["auto"] = await client.call_tool(
            "search_memory", {"query": "make test review", "memory": ["key:repo:demo"]})
        hit = out["search"].structured_content["hits"][0]
        anchor = {k: hit[k] for k in ("memory_ref", "entry_id", "entry_version_id")}
        out["expand"] = await client.call_tool("expand_memory", {"anchors": [anchor]})
        out["expand_ids"] = await client.call_tool(
            "expand_memory", {"memory": f"{mem}@1", "entry_ids": [s["pref"].entry_id]})
        out["changes"] = await client.call_tool("memory_changes",
                                                {"memory": mem, "since_revision": 0})
        out["head_changes"] = await client.call_tool("memory_changes", {"memory": mem})
        old = {"memory_ref": {"artifact_id": mem, "revision": 1},
               "entry_id": s["pref"].entry_id, "entry_version_id": s["pref"].entry_version_id}
        out["valid_old"] = await client.call_tool("validate_citation", {"citation": old})
        wrong = dict(old, memory_ref={"artifact_id": mem, "revision": 2})
        out["invalid"] = await client.call_tool("validate_citation", {"citation": wrong})
        out["list"] = await client.call_tool("list_memories", {})
        return out

    out = call(db, steps)
    search = out["search"]
    assert search.is_error is False
    body = search.structured_content
    assert body["untrusted"] is True and body["notice"] == UNTRUSTED_NOTICE
    assert body["mode"] == "fts" and body["fallback_reason"] is None
    assert [(h["kind"], h["text"]) for h in body["hits"]] == [
        ("preference", "Run make test and make lint before review")]
    auto = out["auto"].structured_content  # auto says why it ran full text only
    assert auto["mode"] == "fts" and "no embedding model" in auto["fallback_reason"]
    assert auto["hits"] == body["hits"]
    hit = body["hits"][0]
    assert hit["memory_ref"] == {"artifact_id": mem, "revision": 2}
    assert hit["entry_version_id"] == s["pref2"].entry_version_id
    assert hit["matched_by"] == ["fts"]
    assert json.loads(search.content[0].text) == body  # the text block carries the same JSON

    (entry,) = out["expand"].structured_content["entries"]
    assert out["expand"].structured_content["untrusted"] is True
    assert entry["text"] == "Run make test and make lint before review"
    assert entry["version"] == 2 and entry["previous_version_id"] == s["pref"].entry_version_id
    assert entry["source_refs"] == [{"source_id": "src_makefile",
                                     "content_hash": s["source"].content_hash}]
    (old_entry,) = out["expand_ids"].structured_content["entries"]
    assert old_entry["text"] == "Run make test before review" and old_entry["version"] == 1

    revisions = out["changes"].structured_content["revisions"]
    assert [r["memory_ref"]["revision"] for r in revisions] == [1, 2]
    assert [c["op"] for c in revisions[0]["changes"]] == ["add", "add"]
    (rev2,) = revisions[1]["changes"]
    assert rev2 == {"op": "revise", "entry_id": s["pref"].entry_id,
                    "from_entry_version_id": s["pref"].entry_version_id,
                    "to_entry_version_id": s["pref2"].entry_version_id,
                    "reason": "user_correction"}
    assert [r["memory_ref"]["revision"] for r in
            out["head_changes"].structured_content["revisions"]] == [2]

    valid = out["valid_old"].structured_content
    assert valid["valid"] is True and valid["entry"]["text"] == "Run make test before review"
    invalid = out["invalid"].structured_content
    assert invalid["valid"] is False and invalid["error"] == "InvalidCitationError"

    assert out["list"].structured_content == {"memories": [
        {"key": "repo:demo", "name": "key:repo:demo", "artifact_id": mem, "head_revision": 2}]}


def test_typed_errors_are_tool_errors(seeded):
    db, s = seeded
    mem = s["memory"]

    async def steps(client):
        return [
            await client.call_tool("search_memory", {"query": "x", "memory": ["key:nope"]}),
            await client.call_tool("search_memory", {"query": "x", "memory": [f"{mem}@1"]}),
            await client.call_tool("search_memory",
                                   {"query": "x", "memory": [mem], "mode": "vector"}),
            await client.call_tool("search_memory", {"query": "x", "memory": [mem],
                                                     "limit": 0}),
            await client.call_tool("expand_memory", {"anchors": [
                {"memory_ref": {"artifact_id": mem, "revision": 2},
                 "entry_id": s["pref"].entry_id,
                 "entry_version_id": s["pref"].entry_version_id}]}),
            await client.call_tool("expand_memory", {}),
            await client.call_tool("memory_changes", {"memory": "mem_art_missing"}),
        ]

    texts = [error_text(r) for r in call(db, steps)]
    assert "ArtifactNotFoundError: no Memory is mapped to key 'nope'" in texts[0]
    assert "CapabilityNotSupportedError" in texts[1]  # a non-head Revision
    assert "CapabilityNotSupportedError" in texts[2] and "no embedding model" in texts[2]
    assert "InvalidInputError: limit" in texts[3]
    assert "InvalidCitationError" in texts[4]  # version 1 is not what Revision 2 holds
    assert "InvalidInputError: anchors" in texts[5]
    assert "ArtifactNotFoundError" in texts[6]


WRITE_TOOLS = {"remember_memory", "forget_memory", "reactivate_memory"}


def call_writable(db: Path, steps):
    async def body():
        server = build_server(lambda: open_service(db),
                              allow_writes=True)
        async with Client(server) as client:
            return await steps(client)

    return asyncio.run(body())


def test_write_tools_are_listed_only_when_writes_are_allowed(seeded):
    db, _ = seeded

    async def steps(client):
        return (await client.list_tools()).tools

    assert {t.name for t in call(db, steps)} == TOOLS
    tools = {t.name: t for t in call_writable(db, steps)}
    assert set(tools) == TOOLS | WRITE_TOOLS
    for name in WRITE_TOOLS:
        assert tools[name].annotations.read_only_hint is False
    assert tools["forget_memory"].annotations.destructive_hint is True
    assert tools["remember_memory"].annotations.destructive_hint is False
    assert tools["reactivate_memory"].annotations.destructive_hint is False
    assert tools["remember_memory"].input_schema["required"] == ["entries"]


def test_an_agent_remembers_forgets_and_reactivates_through_mcp(seeded):
    db, s = seeded
    mem = s["memory"]

    async def steps(client):
        out = {}
        out["add"] = await client.call_tool("remember_memory", {
            "memory": "key:repo:demo",
            "entries": [{"kind": "decision", "text": "Ship releases on Fridays"}],
            "sources": [{"content": "user: remember that we ship on Fridays"}]})
        out["revise"] = await client.call_tool("remember_memory", {
            "key": "repo:demo", "entries": [{
                "text": "Run make test, make lint and make docs before review",
                "kind": "preference", "revise": s["pref"].entry_id,
                "reason": "user_correction"}]})
        out["new"] = await client.call_tool("remember_memory", {
            "key": "repo:other", "entries": [{"text": "Other repo uses poetry"}]})
        out["forget"] = await client.call_tool("forget_memory", {
            "memory": mem, "entry_ids": [s["con"].entry_id], "reason": "user_requested"})
        out["forget_again"] = await client.call_tool("forget_memory", {
            "memory": mem, "entry_ids": [s["con"].entry_id]})
        out["search"] = await client.call_tool("search_memory", {
            "query": "generated files build", "memory": [mem], "mode": "fts"})
        out["reactivate"] = await client.call_tool("reactivate_memory", {
            "memory": "key:repo:demo", "entry_ids": [s["con"].entry_id]})
        out["list"] = await client.call_tool("list_memories", {})
        return out

    out = call_writable(db, steps)
    add = out["add"].structured_content
    assert add["changed"] is True and add["memory_ref"] == {"artifact_id": mem, "revision": 3}
    assert [c["op"] for c in add["changes"]] == ["add"]
    rev = out["revise"].structured_content
    assert rev["memory_ref"]["revision"] == 4
    assert rev["changes"][0]["op"] == "revise"
    assert rev["changes"][0]["entry_id"] == s["pref"].entry_id
    new = out["new"].structured_content["memory_ref"]
    assert new["artifact_id"] != mem and new["revision"] == 1
    assert out["forget"].structured_content["changes"][0]["op"] == "deactivate"
    assert out["forget_again"].structured_content["changed"] is False
    assert out["search"].structured_content["hits"] == []
    assert out["reactivate"].structured_content["changes"][0]["op"] == "reactivate"
    keys = {m["key"]: m for m in out["list"].structured_content["memories"]}
    assert keys["repo:other"]["artifact_id"] == new["artifact_id"]
    assert keys["repo:demo"]["head_revision"] == 6

    async def read():
        svc = open_service(db)
        try:
            head = await svc.head(mem)
            versions = await svc.entries(head)
            return head, versions
        finally:
            await svc.close()

    _head, versions = asyncio.run(read())
    decision = next(v for v in versions.values() if v.kind == "decision")
    assert decision.text == "Ship releases on Fridays" and decision.sources[0].source_id


def test_write_tools_refuse_what_the_cli_refuses(seeded):
    db, s = seeded
    mem = s["memory"]

    async def steps(client):
        return [
            await client.call_tool("remember_memory", {"memory": mem, "entries": [
                {"text": "deploy key: AKIAIOSFODNN7EXAMPLE and "
                         "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}]}),
            await client.call_tool("remember_memory", {"memory": mem, "entries": [
                {"text": "   "}]}),
            await client.call_tool("remember_memory", {"memory": mem, "entries": [
                {"text": "x", "revise": "mem_ent_nope"}]}),
            await client.call_tool("remember_memory", {"memory": f"{mem}@1", "entries": [
                {"text": "a stale writer"}]}),
            await client.call_tool("remember_memory", {"entries": []}),
            await client.call_tool("remember_memory", {"entries": [{"text": "x",
                                                                    "revise": "mem_ent_x"}]}),
            await client.call_tool("forget_memory", {"memory": "key:nope", "entry_ids": ["a"]}),
            await client.call_tool("forget_memory", {"memory": mem, "entry_ids": []}),
            await client.call_tool("search_memory", {"query": " ", "memory": [mem]}),
        ]

    texts = [error_text(r) for r in call_writable(db, steps)]
    # InvalidInputError or a subclass of it (e.g. a SecretDetectedError)
    assert "Error: entries[0].text" in texts[0] and "secret" in texts[0].lower()
    assert "InvalidInputError" in texts[1]
    assert "ArtifactNotFoundError" in texts[2] and "mem_ent_nope" in texts[2]
    assert "RevisionConflictError" in texts[3]
    assert "InvalidInputError: entries" in texts[4]
    assert "InvalidInputError: revise" in texts[5]
    assert "ArtifactNotFoundError" in texts[6]
    assert "InvalidInputError: entry_ids" in texts[7]
    assert "InvalidInputError: query" in texts[8]

    async def head():
        svc = open_service(db)
        try:
            return await svc.head(mem)
        finally:
            await svc.close()

    assert asyncio.run(head()).revision == 2  # nothing was written


def test_remember_memory_refuses_a_memory_name_as_a_key(seeded):
    """list_memories prints names as key:repo:...; passing one back as key would have
    made a second Memory under key:key:repo:... It is refused with the spelling."""
    db, s = seeded

    async def steps(client):
        listed = await client.call_tool("list_memories", {})
        name = listed.structured_content["memories"][0]["name"]
        refused = await client.call_tool("remember_memory", {
            "key": name, "entries": [{"text": "Use uv for the virtualenv"}]})
        by_name = await client.call_tool("remember_memory", {
            "memory": name, "entries": [{"text": "Use uv for the virtualenv"}]})
        after = await client.call_tool("list_memories", {})
        return name, refused, by_name, after

    name, refused, by_name, after = call_writable(db, steps)
    assert name == "key:repo:demo"
    text = error_text(refused)
    assert "InvalidInputError: key" in text and "the key it names is 'repo:demo'" in text
    assert by_name.is_error is False
    assert by_name.structured_content["memory_ref"] == {"artifact_id": s["memory"],
                                                         "revision": 3}
    assert [m["name"] for m in after.structured_content["memories"]] == ["key:repo:demo"]
