"""Every Topic ref a surface prints is taken by every surface that takes one, as printed:
the refs of ``topic search/get --json`` and of the human ``topic search`` (``ref:
ID@REV``), of ``POST /v1/topic-memory/search``, ``/get`` and ``/v1/context/prepare``,
and of the MCP tools, each passed to HTTP get (the object), MCP ``get_topic_memory``
(the object or the text) and ``topic get`` (JSON text or ``ID@REV``), which all return
that exact Revision. Same small SQLite fixture as the golden tests."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP tools need the extra powercontext[mcp]")

from mcp import Client

from powercontext.entrypoints.mcp.server import build_server
from powercontext.runtime import open_service, open_topic_service
from tests.adapters.test_http_context import call
from tests.adapters.test_topic_json_golden import fixture  # noqa: F401  (the fixture)
from tests.support.cli import cli_argv


def _cli(fx: dict[str, Any], *args: str) -> str:
    done = subprocess.run([*cli_argv(), "--db", str(fx["db"]), *args], env=fx["env"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _http(fx: dict[str, Any], path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, _, raw = asyncio.run(call(fx["app"], path, body))
    assert status == 200, raw
    out: dict[str, Any] = json.loads(raw)
    return out


def _mcp(fx: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    db = fx["db"]

    async def body() -> list[Any]:
        server = build_server(lambda: open_service(db, embedding="none"),
                              open_topic_service=lambda: open_topic_service(
                                  db, embedding="none"))
        async with Client(server) as client:
            out = []
            for name, args in calls:
                result = await client.call_tool(name, args)
                assert result.is_error is False, result.content
                out.append(result.structured_content)
            return out

    return asyncio.run(body())


def _revision_refs(rev: dict[str, Any]) -> list[dict[str, Any]]:
    return [rev["artifact"]] + ([rev["based_on"]] if rev["based_on"] else [])


def _text(ref: dict[str, Any]) -> str:
    return f"{ref['artifact_id']}@{ref['revision']}"


@pytest.mark.subprocess
def test_every_printed_ref_is_taken_by_every_surface(fixture: dict[str, Any]) -> None:  # noqa: F811
    fx = fixture
    scope = fx["scope"]
    search = {"scope_id": scope, "query": "release"}
    printed: list[dict[str, Any]] = []
    texts: list[str] = []
    # CLI: --json and the human lines
    cli_hits = json.loads(_cli(fx, "--json", "topic", "search", "release", "--scope", scope))
    printed += [h["artifact"] for h in cli_hits["hits"]]
    cli_rev = json.loads(_cli(fx, "--json", "topic", "get", _text(printed[0]), "--scope",
                              scope))
    printed += _revision_refs(cli_rev)
    texts += re.findall(r"ref: (\S+@\d+)",
                        _cli(fx, "topic", "search", "release", "--scope", scope))
    # HTTP
    http_hits = _http(fx, "/v1/topic-memory/search", search)["hits"]
    printed += [h["artifact"] for h in http_hits]
    printed += _revision_refs(_http(fx, "/v1/topic-memory/get",
                                    {"scope_id": scope, "artifact": http_hits[0]["artifact"]}))
    prepared = _http(fx, "/v1/context/prepare", search)["items"]
    printed += [i["artifact"] for i in prepared if i["family"] == "topic-memory"]
    # MCP
    found, got = _mcp(fx, [("search_topic_memory", search),
                           ("get_topic_memory", {"scope_id": scope,
                                                 "artifact": printed[0]})])
    printed += [h["artifact"] for h in found["hits"]] + _revision_refs(got)

    refs = {json.dumps(r, sort_keys=True): r for r in printed}
    texts = sorted(set(texts) | {_text(r) for r in refs.values()})
    assert len(refs) == 3 and len(texts) == 3  # Revisions 1 and 2 of one Topic, and another
    for ref in refs.values():
        want = _text(ref)
        got_http = _http(fx, "/v1/topic-memory/get", {"scope_id": scope, "artifact": ref})
        assert _text(got_http["artifact"]) == want
        got_cli = json.loads(_cli(fx, "--json", "topic", "get", json.dumps(ref), "--scope",
                                  scope))
        assert _text(got_cli["artifact"]) == want
    for text in texts:
        got_cli = json.loads(_cli(fx, "--json", "topic", "get", text, "--scope", scope))
        assert _text(got_cli["artifact"]) == text
    answers = _mcp(fx, [("get_topic_memory", {"scope_id": scope, "artifact": a})
                        for a in [*refs.values(), *texts]])
    assert [_text(a["artifact"]) for a in answers] == [*(_text(r) for r in refs.values()),
                                                        *texts]
