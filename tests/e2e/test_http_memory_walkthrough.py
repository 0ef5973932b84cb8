"""docs/serving.md's walk-through against a live ``powercontext serve`` (a real process,
a bearer token, SQLite): remember two entries under a repository key citing a file
with metadata, show with its ETag, search with each hit's receipt, a conditional
revise, the same revise again refused with 409 and nothing written, and the
interactive page ``/docs`` with its local assets."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from support.serve_process import ServeProcess, clean_env

pytestmark = pytest.mark.subprocess

TOKEN = "walkthrough-token-0123456789"
KEY = "repo:/src/app"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    tmp = tmp_path_factory.mktemp("walkthrough")
    proc = ServeProcess(tmp / "memory.db", [],
                        clean_env(tmp / "home", POWERCONTEXT_API_TOKEN=TOKEN),
                        tmp / "stderr")
    try:
        yield proc
    finally:
        assert proc.stop() == 0, proc.stderr()
        assert "Traceback" not in proc.stderr()


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def request(server: ServeProcess, method: str, path: str, body: Any = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    data = None if body is None else json.dumps(body).encode("utf-8")
    req = urllib.request.Request(server.url + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {TOKEN}")
    req.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            raw = resp.read()
            return resp.status, _lower(resp.headers), json.loads(raw) if raw[:1] in b"{[" \
                else raw.decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, _lower(exc.headers), json.loads(exc.read())


def test_the_walkthrough_of_serving_md(server: ServeProcess) -> None:
    status, _h, wrote = request(server, "POST", "/v1/memory/remember", {
        "key": KEY,
        "entries": [{"text": "Run make test before review", "kind": "preference"},
                    {"text": "Releases are tagged on main"}],
        "sources": [{"kind": "file", "content": "test:\n\tpytest -q\n",
                     "uri": "file:///src/app/Makefile", "metadata": {"path": "Makefile"}}]})
    assert status == 200 and wrote["changed"] is True
    assert [c["op"] for c in wrote["changes"]] == ["add", "add"]

    query = urllib.parse.urlencode({"memory": f"key:{KEY}"})
    status, headers, shown = request(server, "GET", f"/v1/memory/show?{query}")
    art = wrote["memory_ref"]["artifact_id"]
    assert status == 200 and headers["etag"] == f'"{art}@1"'
    assert shown["keys"] == [KEY] and shown["active_entries"] == 2
    pref = next(e for e in shown["entries"] if e["kind"] == "preference")
    status, _h, source = request(server, "GET", "/v1/sources/show?" + urllib.parse.urlencode(
        {"source_id": pref["source_refs"][0]["source_id"]}))
    assert status == 200 and source["metadata"] == {"path": "Makefile"}

    status, _h, found = request(server, "POST", "/v1/memory/search", {
        "query": "make test", "memories": [f"key:{KEY}"], "mode": "auto"})
    assert status == 200 and found["untrusted"] is True
    assert found["mode"] == "fts" and found["fallback_reason"]
    (hit,) = found["hits"]
    assert hit["text"] == "Run make test before review"
    assert (hit["rank"], hit["matched_by"], hit["matched_terms"]) == (1, ["fts"],
                                                                      ["make", "test"])

    revise = {"memory": f"key:{KEY}", "entry_id": pref["entry_id"],
              "text": "Run make check before review", "reason": "the target was renamed"}
    status, headers, revised = request(server, "POST", "/v1/memory/revise", revise,
                                       {"If-Match": f'"{art}@1"'})
    assert status == 200 and headers["etag"] == f'"{art}@2"'
    assert revised["changes"][0]["op"] == "revise"
    status, _h, again = request(server, "POST", "/v1/memory/revise", revise,
                                {"If-Match": f'"{art}@1"'})
    assert status == 409 and again["error"]["code"] == "conflict"
    status, headers, _shown = request(server, "GET", f"/v1/memory/show?{query}")
    assert headers["etag"] == f'"{art}@2"'


def test_docs_page_and_its_assets_are_served_without_a_token(server: ServeProcess) -> None:
    for path, kind in (("/docs", "text/html"),
                       ("/docs/assets/swagger-ui-bundle.js", "javascript"),
                       ("/docs/assets/swagger-ui.css", "text/css")):
        with urllib.request.urlopen(server.url + path, timeout=120) as resp:
            assert resp.status == 200 and kind in resp.headers["Content-Type"], path
