"""The JSON every surface prints for Topic values and prepared context, byte for byte:
``topic search/get/status --json`` (the CLI as a subprocess), ``POST
/v1/topic-memory/search``, ``/get`` and ``/v1/context/prepare`` (the ASGI app), and the
MCP tools ``search_topic_memory`` / ``get_topic_memory`` (the SDK's Client), over one
small SQLite fixture. Ids and times that are drawn fresh per run are replaced by
placeholders in order of appearance (``<topic_art_1>``, ``<published_1>`` ...); every
other byte is compared with the files in ``golden/topic_json/``.

Set ``POWERCONTEXT_RECORD_GOLDEN=1`` to rewrite the files (then read the diff)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP tools need the extra powercontext[mcp]")

from mcp import Client

from powercontext.core import canonical
from powercontext.core.models import MemoryEntryInput
from powercontext.core.topic.models import TopicMemoryContent
from powercontext.entrypoints.http.app import create_app
from powercontext.entrypoints.http.deps import Services
from powercontext.entrypoints.mcp.server import build_server
from powercontext.runtime import open_service, open_topic_service
from tests.adapters.test_http_context import call
from tests.support.cli import cli_argv

GOLDEN = Path(__file__).parent / "golden" / "topic_json"
RECORD = os.environ.get("POWERCONTEXT_RECORD_GOLDEN") == "1"
TOKEN = "t0ken-for-tests"
V1 = TopicMemoryContent("Release process", "How we cut a release.",
                        "Tag the commit.\n\nThen run make release to build the wheel.")
V2 = TopicMemoryContent("Release process", "How we cut and announce a release.",
                        "Tag the commit.\n\nThen run make release to build the wheel.\n\n"
                        "Announce it in the changelog: caf\u00e9 \u2014 <b>bold</b>.")
V3 = TopicMemoryContent("Deploy checklist", "What a deploy needs: release notes.",
                        "Check the release notes.\n\nThen deploy.")
_VARIABLE = (
    ("topic_art", re.compile(r"topic_art_[0-9a-z]{26}")),
    ("mem_art", re.compile(r"mem_art_[0-9a-z]+")),
    ("mem_ent", re.compile(r"mem_ent_[0-9a-z]+")),
    ("mem_ver", re.compile(r"mem_ver_[0-9a-z]+")),
    ("published", re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")),
)


def normalized(text: str, repo: Path) -> str:
    """``text`` with the fixture's directory and every fresh id or time replaced by a
    placeholder numbered in order of first appearance."""
    text = text.replace(str(repo), "<repo>")
    for name, pattern in _VARIABLE:
        seen: dict[str, str] = {}

        def sub(m: re.Match[str], seen: dict[str, str] = seen, name: str = name) -> str:
            return seen.setdefault(m.group(0), f"<{name}_{len(seen) + 1}>")

        text = pattern.sub(sub, text)
    return text


@pytest.fixture(scope="module")
def fixture() -> Iterator[dict[str, Any]]:
    # The prepared context counts the bytes of its items, and an item holds the
    # Scope id, so the directory's length must not depend on pytest's numbered
    # base directory (pytest-99 and pytest-100, or an xdist worker's popen-gw1/):
    # a fresh directory whose name always has the same length, directly in /tmp.
    tmp = Path(tempfile.mkdtemp(prefix="pc-golden-", dir="/tmp"))
    repo = tmp / "project"
    (repo / ".git").mkdir(parents=True)
    scope = f"repo:{repo.resolve()}"
    db = tmp / "memory.db"
    env = dict(os.environ, POWERCONTEXT_HOME=str(tmp / "home"))
    for k in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING"):
        env.pop(k, None)
    old_home = os.environ.get("POWERCONTEXT_HOME")
    os.environ["POWERCONTEXT_HOME"] = env["POWERCONTEXT_HOME"]
    memory = open_service(db, embedding="none")
    topic = open_topic_service(db, embedding="none")

    async def seed() -> dict[str, Any]:
        await memory.remember(None, mode="append", key=scope, entries=(
            MemoryEntryInput("fact", "make release builds the wheel"),
            MemoryEntryInput("decision", "A release needs release notes")))
        src = canonical.make_source("src_makefile", "file", "release:\n\tbuild\n")
        (r1,) = await topic.publish(scope, creates=[(V1, [src])])
        (r2,) = await topic.publish(scope, updates=[(r1.ref, V2, [src])])
        (r3,) = await topic.publish(scope, creates=[(V3, [src])])
        await topic.add_sources(scope, [
            canonical.make_source("src_turn_1", "conversation", "We cut a release today."),
            canonical.make_source("src_turn_2", "conversation", "Then we deployed it.")])
        return {"r1": r1, "r2": r2, "r3": r3}

    seeded = asyncio.run(seed())
    app = create_app(Services(memory=memory, topic=topic), api_token=TOKEN)
    yield {"app": app, "db": db, "env": env, "repo": repo, "scope": scope, **seeded}
    asyncio.run(memory.close())
    asyncio.run(topic.close())
    if old_home is None:
        os.environ.pop("POWERCONTEXT_HOME", None)
    else:
        os.environ["POWERCONTEXT_HOME"] = old_home
    shutil.rmtree(tmp, ignore_errors=True)


def check(name: str, text: str, fx: dict[str, Any]) -> None:
    got = normalized(text, fx["repo"])
    path = GOLDEN / f"{name}.json"
    if RECORD:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8"), name


def cli(fx: dict[str, Any], *args: str) -> str:
    done = subprocess.run([*cli_argv(), "--db", str(fx["db"]), "--json", *args],
                          env=fx["env"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def http(fx: dict[str, Any], path: str, body: dict[str, Any]) -> str:
    status, _, raw = asyncio.run(call(fx["app"], path, body))
    assert status == 200, raw
    return raw.decode("utf-8")


def ref_text(rev: Any) -> str:
    return f"{rev.ref.artifact_id}@{rev.ref.revision}"


@pytest.mark.subprocess
def test_cli_topic_json_is_unchanged(fixture: dict[str, Any]) -> None:
    fx = fixture
    check("cli_search", cli(fx, "topic", "search", "release", "--scope", fx["scope"]), fx)
    check("cli_get", cli(fx, "topic", "get", ref_text(fx["r2"]), "--scope", fx["scope"]), fx)
    check("cli_get_first", cli(fx, "topic", "get", ref_text(fx["r1"]), "--scope",
                               fx["scope"]), fx)
    check("cli_status", cli(fx, "topic", "status"), fx)


def test_http_topic_json_is_unchanged(fixture: dict[str, Any]) -> None:
    fx = fixture
    scope = fx["scope"]
    check("http_search", http(fx, "/v1/topic-memory/search",
                              {"scope_id": scope, "query": "release"}), fx)
    for name, rev in (("http_get", fx["r2"]), ("http_get_first", fx["r1"])):
        artifact = {"family": "topic-memory", "artifact_id": rev.ref.artifact_id,
                    "revision": rev.ref.revision}
        check(name, http(fx, "/v1/topic-memory/get",
                         {"scope_id": scope, "artifact": artifact}), fx)
    check("http_prepare", http(fx, "/v1/context/prepare",
                               {"scope_id": scope, "query": "release"}), fx)
    check("http_prepare_small", http(fx, "/v1/context/prepare",
                                     {"scope_id": scope, "query": "release",
                                      "max_bytes": 700}), fx)


def test_mcp_topic_json_is_unchanged(fixture: dict[str, Any]) -> None:
    fx = fixture
    db = fx["db"]

    async def body() -> list[str]:
        server = build_server(lambda: open_service(db, embedding="none"),
                              open_topic_service=lambda: open_topic_service(
                                  db, embedding="none"))
        async with Client(server) as client:
            found = await client.call_tool("search_topic_memory",
                                           {"scope_id": fx["scope"], "query": "release"})
            got = await client.call_tool("get_topic_memory",
                                         {"scope_id": fx["scope"],
                                          "artifact": ref_text(fx["r2"])})
            return [found.content[0].text, got.content[0].text,
                    json.dumps(found.structured_content), json.dumps(got.structured_content)]

    search, get, search_s, get_s = asyncio.run(body())
    check("mcp_search", search, fx)
    check("mcp_get", get, fx)
    check("mcp_search_structured", search_s, fx)
    check("mcp_get_structured", get_s, fx)
